/*
 * fuzz_filter.c - JSON text -> filter_parse against a schema drawn from the
 * input; a parsed filter is then evaluated on a small batch with nulls, NaN,
 * -0.0 and edge values, and checked for internal consistency.
 *
 * The input: an 8-byte schema header, then the JSON text. Header byte c
 * describes column c (named by position, NAMES[c]): type 1 + (b & 15) % 6
 * (enum st_type), required when b & 0x10 (then no nulls), nulls (b >> 5) & 3
 * (0 or 3: none, 1 and 2: two different patterns), and for a long column
 * b & 0x80 picks the distinct ids 1..10 instead of the edge values.
 * Checked:
 *   - evaluating the whole batch equals evaluating each row alone;
 *   - constant filters match all / no candidates;
 *   - pruning is sound on the batch's true statistics.
 * Any inconsistency aborts, so libFuzzer reports it.
 */
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/types.h"
#include "expr/filter.h"

enum { NCOLS = 8, NROWS = 10, HEADER = NCOLS };
static const char *const NAMES[NCOLS] = {"b", "i", "l", "d", "s", "t", "id", "name"};
static struct st_column COLS[NCOLS];

static uint8_t b_v[NROWS] = {1, 0, 1, 0, 1, 1, 0, 0, 1, 0};
static int32_t i_v[NROWS] = {0, 1, -1, INT32_MAX, INT32_MIN, 7, 7, 100, -100, 3};
static int64_t l_v[NROWS] = {0, 1, -1, INT64_MAX, INT64_MIN, 7, 7, 100, -100, 3};
static double d_v[NROWS] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1.5, 1e300, -2.5, 5e-324, 7};
static int64_t t_v[NROWS] = {
    0, 1000000, -1, 1796046045123456, -62167219200000000, 253402300799999999, 7, 86400000000, 3, 2};
static int64_t id_v[NROWS] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const char SDATA[] = "applebananaapricotab\xc3\xa9zzzAPPLE";
static uint32_t s_offs[NROWS + 1] = {0, 5, 11, 18, 19, 20, 22, 22, 25, 30, 30};
static uint8_t nulls_a[NROWS] = {0, 0, 0, 1, 0, 0, 1, 0, 0, 0};
static uint8_t nulls_b[NROWS] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 1};

static struct st_colvec vecs[NCOLS];
static const struct st_colvec *vp[NCOLS];

/* The schema and batch of one input (the header above). */
static void setup(const uint8_t *h)
{
    for (int c = 0; c < NCOLS; c++) {
        struct st_colvec *v = &vecs[c];
        memset(&COLS[c], 0, sizeof COLS[c]);
        snprintf(COLS[c].name, sizeof COLS[c].name, "%s", NAMES[c]);
        COLS[c].type = (enum st_type)(1 + (h[c] & 15) % 6);
        COLS[c].required = (h[c] & 0x10) != 0;
        int nk = (h[c] >> 5) & 3;
        *v = (struct st_colvec){.type = COLS[c].type, .n = NROWS};
        if (!COLS[c].required)
            v->nulls = nk == 1 ? nulls_a : nk == 2 ? nulls_b : NULL;
        switch (v->type) {
        case ST_T_BOOLEAN:
            v->v.b = b_v;
            break;
        case ST_T_INT:
            v->v.i = i_v;
            break;
        case ST_T_LONG:
            v->v.l = (h[c] & 0x80) != 0 ? id_v : l_v;
            break;
        case ST_T_DOUBLE:
            v->v.d = d_v;
            break;
        case ST_T_STRING:
            v->offs = s_offs;
            v->sdata = (uint8_t *)SDATA;
            break;
        case ST_T_TIMESTAMP:
            v->v.l = t_v;
            break;
        }
        vp[c] = v;
    }
}

/* True statistics of rows where keep[r]: min/max leave NaN out, as Iceberg does. */
static void stats_of(const uint8_t *keep, struct col_range *rg, uint64_t *nrows)
{
    *nrows = 0;
    for (int r = 0; r < NROWS; r++)
        *nrows += keep[r];
    for (int c = 0; c < NCOLS; c++) {
        struct col_range *s = &rg[c];
        memset(s, 0, sizeof *s);
        s->has_null_count = true;
        bool first = true;
        for (int r = 0; r < NROWS; r++) {
            if (!keep[r])
                continue;
            struct st_value v;
            st_colvec_get(&vecs[c], (size_t)r, &v);
            if (v.null) {
                s->null_count++;
                continue;
            }
            if (vecs[c].type == ST_T_DOUBLE && isnan(v.v.d))
                continue;
            if (first || st_value_cmp(vecs[c].type, &v, &s->min) < 0)
                s->min = v;
            if (first || st_value_cmp(vecs[c].type, &v, &s->max) > 0)
                s->max = v;
            first = false;
        }
        s->has_minmax = !first;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEADER)
        return 0;
    setup(data);
    data += HEADER;
    size -= HEADER;
    struct filter *f = NULL;
    struct st_err err = {0};
    if (filter_parse((const char *)data, size, COLS, NCOLS, &f, &err) != ST_OK) {
        if (f != NULL || err.code == ST_OK || strncmp(err.msg, "filter: ", 8) != 0)
            abort();
        return 0;
    }
    bool used[NCOLS] = {0};
    filter_columns(f, used);

    /* The whole batch, with a candidate mask drawn from the input. */
    uint8_t cand[NROWS], sel[NROWS];
    for (int r = 0; r < NROWS; r++)
        cand[r] = size > 0 ? (data[(size_t)r % size] >> (r % 8)) & 1 : 1;
    cand[0] = 1;
    memcpy(sel, cand, sizeof sel);
    filter_eval(f, vp, NROWS, sel);
    for (int r = 0; r < NROWS; r++) {
        if (sel[r] > 1 || (sel[r] && !cand[r]))
            abort();
        if (filter_is_true(f) && sel[r] != cand[r])
            abort();
        if (filter_is_false(f) && sel[r])
            abort();
        /* Row by row gives the same answer. */
        uint8_t one[NROWS] = {0};
        one[r] = cand[r];
        filter_eval(f, vp, NROWS, one);
        if (one[r] != sel[r])
            abort();
    }
    /* Pruning: whenever a row matches, the batch's stats must not rule it out. */
    bool any = false;
    for (int r = 0; r < NROWS; r++)
        any = any || sel[r];
    struct col_range rg[NCOLS];
    const struct col_range *sp[NCOLS];
    uint64_t nrows;
    stats_of(cand, rg, &nrows);
    for (int c = 0; c < NCOLS; c++)
        sp[c] = &rg[c];
    if (any && (!filter_may_match(f, sp, nrows) || !filter_may_match(f, NULL, nrows)))
        abort();
    /* Each row alone, with its own exact statistics. */
    for (int r = 0; r < NROWS; r++) {
        if (!sel[r])
            continue;
        uint8_t keep[NROWS] = {0};
        keep[r] = 1;
        stats_of(keep, rg, &nrows);
        if (!filter_may_match(f, sp, nrows))
            abort();
    }
    filter_free(f);
    return 0;
}
