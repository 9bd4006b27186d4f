/*
 * fuzz_filter.c - JSON text -> filter_parse against a schema with every
 * type; a parsed filter is then evaluated on a small batch with nulls, NaN,
 * -0.0 and edge values, and checked for internal consistency:
 *   - evaluating the whole batch equals evaluating each row alone;
 *   - constant filters match all / no candidates;
 *   - pruning is sound on the batch's true statistics.
 * Any inconsistency aborts, so libFuzzer reports it.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/types.h"
#include "expr/filter.h"

enum { NCOLS = 8, NROWS = 10 };
static const struct st_column COLS[NCOLS] = {
    {"b", ST_T_BOOLEAN, false}, {"i", ST_T_INT, false},      {"l", ST_T_LONG, false},
    {"d", ST_T_DOUBLE, false},  {"s", ST_T_STRING, false},   {"t", ST_T_TIMESTAMP, false},
    {"id", ST_T_LONG, true},    {"name", ST_T_STRING, true},
};

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

static void setup(void)
{
    vecs[0] = (struct st_colvec){.type = ST_T_BOOLEAN, .n = NROWS, .nulls = nulls_a, .v.b = b_v};
    vecs[1] = (struct st_colvec){.type = ST_T_INT, .n = NROWS, .nulls = nulls_b, .v.i = i_v};
    vecs[2] = (struct st_colvec){.type = ST_T_LONG, .n = NROWS, .nulls = nulls_a, .v.l = l_v};
    vecs[3] = (struct st_colvec){.type = ST_T_DOUBLE, .n = NROWS, .nulls = nulls_b, .v.d = d_v};
    vecs[4] = (struct st_colvec){.type = ST_T_STRING,
                                 .n = NROWS,
                                 .nulls = nulls_a,
                                 .offs = s_offs,
                                 .sdata = (uint8_t *)SDATA};
    vecs[5] = (struct st_colvec){.type = ST_T_TIMESTAMP, .n = NROWS, .nulls = nulls_b, .v.l = t_v};
    vecs[6] = (struct st_colvec){.type = ST_T_LONG, .n = NROWS, .v.l = id_v};
    vecs[7] = (struct st_colvec){
        .type = ST_T_STRING, .n = NROWS, .offs = s_offs, .sdata = (uint8_t *)SDATA};
    for (int c = 0; c < NCOLS; c++)
        vp[c] = &vecs[c];
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
    static bool ready;
    if (!ready) {
        setup();
        ready = true;
    }
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
