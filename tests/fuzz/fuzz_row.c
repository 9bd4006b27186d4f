/*
 * fuzz_row.c - JSON text -> a row (full rows and keys) against a schema
 * drawn from the input, decoded as POST .../changes decodes one: jdoc, the
 * object's members through lit_from_jdoc, row_from_literals.
 *
 * The input: a 12-byte schema header, then the JSON text. Header byte 0:
 * the column count, 1 + b % 8; bytes 1-8, one per column (named by position,
 * NAMES[c]): type 1 + (b & 15) % 6 (enum st_type), required when b & 0x10;
 * byte 9: the key's column count, b % 3 (0: a table without a key, which
 * ROW_KEY refuses); bytes 10-11: the key's columns (% ncols; a repeated one
 * ends the key), made required as the engine requires. Checked three ways:
 *   - row_from_literals_idx (the name index built once per request) agrees
 *     (status, message and values);
 *   - a decoded row written with ndjson_append_row is valid JSON that decodes
 *     back to the very same values (doubles bit for bit);
 *   - errors always carry a message.
 */
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/jdoc.h"
#include "common/types.h"
#include "expr/literal.h"
#include "expr/ndjson.h"
#include "expr/row.h"

enum { MAXCOLS = 8, HEADER = 12 };
static const char *const NAMES[MAXCOLS] = {"id",     "flag", "qty",    "amount",
                                           "status", "at",   "region", "c7"};

/* The schema of one input (the header above). */
static int NCOLS, NPK;
static struct st_column COLS[MAXCOLS];
static int PK[2];

static void schema_of(const uint8_t *h)
{
    NCOLS = 1 + h[0] % MAXCOLS;
    for (int c = 0; c < NCOLS; c++) {
        memset(&COLS[c], 0, sizeof COLS[c]);
        snprintf(COLS[c].name, sizeof COLS[c].name, "%s", NAMES[c]);
        COLS[c].type = (enum st_type)(1 + (h[1 + c] & 15) % 6);
        COLS[c].required = (h[1 + c] & 0x10) != 0;
    }
    NPK = 0;
    for (int j = 0; j < h[9] % 3; j++) {
        int c = h[10 + j] % NCOLS;
        if (NPK == 1 && PK[0] == c)
            break;
        PK[NPK++] = c;
        COLS[c].required = true;
    }
}

static bool same_value(enum st_type t, const struct st_value *a, const struct st_value *b)
{
    if (a->null || b->null)
        return a->null == b->null;
    switch (t) {
    case ST_T_BOOLEAN:
        return a->v.b == b->v.b;
    case ST_T_INT:
        return a->v.i == b->v.i;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        return a->v.l == b->v.l;
    case ST_T_DOUBLE:
        return memcmp(&a->v.d, &b->v.d, sizeof a->v.d) == 0;
    case ST_T_STRING:
        return a->v.s.len == b->v.s.len &&
               (a->v.s.len == 0 || memcmp(a->v.s.p, b->v.s.p, a->v.s.len) == 0);
    }
    return false;
}

/* The members of the object `o` as name/literal pairs; false (with a message) for a non-scalar. */
static bool pairs_of(const struct jdoc_val *o, const char **names, struct st_literal *lits,
                     size_t *n)
{
    struct st_err err = {0};
    *n = jdoc_size(o);
    for (size_t k = 0; k < *n; k++) {
        const struct jdoc_member *m = jdoc_member(o, k);
        names[k] = m->key.u.s;
        if (lit_from_jdoc(&m->val, &lits[k], &err) != ST_OK) {
            if (err.code != ST_EINVAL || err.msg[0] == '\0')
                abort();
            return false;
        }
    }
    return true;
}

/* Decode the pairs both ways (a name index per call and one built once); they must agree. */
static int decode(const char *const *names, const struct st_literal *lits, size_t n,
                  const struct row_names *rn, enum row_mode mode, struct st_value *out)
{
    struct st_value out2[MAXCOLS];
    struct st_err err = {0}, err2 = {0};
    int rc = row_from_literals(names, lits, n, COLS, NCOLS, PK, NPK, mode, out, &err);
    int rc2 = row_from_literals_idx(rn, names, lits, n, PK, NPK, mode, out2, &err2);
    if (rc != rc2 || strcmp(err.msg, err2.msg) != 0)
        abort();
    if (rc != ST_OK && (err.code != rc || err.msg[0] == '\0'))
        abort();
    int want = mode == ROW_KEY ? NPK : NCOLS;
    for (int j = 0; rc == ST_OK && j < want; j++) {
        if (!same_value(COLS[mode == ROW_KEY ? PK[j] : j].type, &out[j], &out2[j]))
            abort();
    }
    return rc;
}

/* Write the row as NDJSON, read it back, and compare. */
static void check_roundtrip(const struct st_value *row, const struct row_names *rn)
{
    struct st_colvec vecs[MAXCOLS];
    const struct st_colvec *vp[MAXCOLS];
    int idx[MAXCOLS];
    uint8_t nulls[MAXCOLS], b[MAXCOLS];
    int32_t i[MAXCOLS];
    int64_t l[MAXCOLS];
    double d[MAXCOLS];
    uint32_t offs[MAXCOLS][2];
    for (int c = 0; c < NCOLS; c++) {
        struct st_colvec *v = &vecs[c];
        memset(v, 0, sizeof *v);
        v->type = COLS[c].type;
        v->n = 1;
        nulls[c] = row[c].null;
        v->nulls = &nulls[c];
        switch (v->type) {
        case ST_T_BOOLEAN:
            b[c] = row[c].v.b;
            v->v.b = &b[c];
            break;
        case ST_T_INT:
            i[c] = row[c].v.i;
            v->v.i = &i[c];
            break;
        case ST_T_LONG:
        case ST_T_TIMESTAMP:
            l[c] = row[c].v.l;
            v->v.l = &l[c];
            break;
        case ST_T_DOUBLE:
            d[c] = row[c].v.d;
            v->v.d = &d[c];
            break;
        case ST_T_STRING:
            offs[c][0] = 0;
            offs[c][1] = row[c].null ? 0 : row[c].v.s.len;
            v->offs = offs[c];
            v->sdata = (uint8_t *)(row[c].null ? "" : row[c].v.s.p);
            break;
        }
        vp[c] = v;
        idx[c] = c;
    }
    struct buf out = BUF_INIT;
    ndjson_append_row(&out, COLS, idx, NCOLS, vp, 0);
    if (out.len < 3 || out.data[out.len - 1] != '\n')
        abort();
    struct jdoc *back = jdoc_parse(out.data, out.len - 1, NULL, NULL);
    if (back == NULL || jdoc_size(jdoc_root(back)) != (size_t)NCOLS)
        abort();
    const char *names[MAXCOLS];
    struct st_literal lits[MAXCOLS];
    size_t n;
    struct st_value row2[MAXCOLS];
    if (!pairs_of(jdoc_root(back), names, lits, &n) ||
        decode(names, lits, n, rn, ROW_FULL, row2) != ST_OK)
        abort();
    for (int c = 0; c < NCOLS; c++) {
        if (!same_value(COLS[c].type, &row[c], &row2[c]))
            abort();
    }
    jdoc_free(back);
    buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEADER)
        return 0;
    schema_of(data);
    struct row_names *rn = row_names_new(COLS, NCOLS);
    struct jdoc *d = jdoc_parse(data + HEADER, size - HEADER, NULL, NULL);
    const struct jdoc_val *o = d != NULL ? jdoc_root(d) : NULL;
    size_t n = jdoc_size(o);
    const char **names = malloc((n ? n : 1) * sizeof *names);
    struct st_literal *lits = malloc((n ? n : 1) * sizeof *lits);
    if (jdoc_is(o, JDOC_OBJECT) && pairs_of(o, names, lits, &n)) {
        struct st_value out[MAXCOLS];
        for (int m = 0; m < 2; m++) {
            enum row_mode mode = m ? ROW_KEY : ROW_FULL;
            int rc = decode(names, lits, n, rn, mode, out);
            if (rc == ST_OK && mode == ROW_FULL)
                check_roundtrip(out, rn);
        }
    }
    free(names);
    free(lits);
    jdoc_free(d);
    row_names_free(rn);
    return 0;
}
