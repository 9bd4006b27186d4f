/*
 * fuzz_row.c - JSON text -> row_from_json (full rows and keys) against a
 * schema with every type, checked three ways:
 *   - row_from_literals on the same name/value pairs agrees (status and values);
 *   - a decoded row written with ndjson_append_row is valid JSON that decodes
 *     back to the very same values (doubles bit for bit);
 *   - errors always carry a message.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/types.h"
#include "expr/literal.h"
#include "expr/ndjson.h"
#include "expr/row.h"

enum { NCOLS = 7, MAXPAIRS = 64 };
static const struct st_column COLS[NCOLS] = {
    {"id", ST_T_LONG, true},        {"flag", ST_T_BOOLEAN, false},  {"qty", ST_T_INT, false},
    {"amount", ST_T_DOUBLE, false}, {"status", ST_T_STRING, false}, {"at", ST_T_TIMESTAMP, false},
    {"region", ST_T_STRING, true},
};
static const int PK[2] = {6, 0};

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

/* The same object through row_from_literals must agree with row_from_json. */
static void check_literals(const json_t *obj, enum row_mode mode, int rc,
                           const struct st_value *out)
{
    const char *names[MAXPAIRS];
    struct st_literal lits[MAXPAIRS];
    size_t n = 0;
    const char *key;
    json_t *v;
    bool convertible = true;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (n == MAXPAIRS || lit_from_json(v, &lits[n], NULL) != ST_OK) {
            convertible = false; /* objects/arrays as values: the gRPC side cannot send them */
            break;
        }
        names[n++] = key;
    }
    if (!convertible)
        return;
    struct st_value out2[NCOLS];
    struct st_err err = {0};
    int rc2 = row_from_literals(names, lits, n, COLS, NCOLS, PK, 2, mode, out2, &err);
    if ((rc == ST_OK) != (rc2 == ST_OK))
        abort();
    if (rc2 != ST_OK && err.msg[0] == '\0')
        abort();
    int want = mode == ROW_KEY ? 2 : NCOLS;
    for (int j = 0; rc == ST_OK && j < want; j++) {
        if (!same_value(COLS[mode == ROW_KEY ? PK[j] : j].type, &out[j], &out2[j]))
            abort();
    }
}

/* Write the row as NDJSON, read it back, and compare. */
static void check_roundtrip(const struct st_value *row)
{
    struct st_colvec vecs[NCOLS];
    const struct st_colvec *vp[NCOLS];
    int idx[NCOLS];
    uint8_t nulls[NCOLS], b;
    int32_t i;
    int64_t l[NCOLS];
    double d;
    uint32_t offs[NCOLS][2];
    for (int c = 0; c < NCOLS; c++) {
        struct st_colvec *v = &vecs[c];
        memset(v, 0, sizeof *v);
        v->type = COLS[c].type;
        v->n = 1;
        nulls[c] = row[c].null;
        v->nulls = &nulls[c];
        switch (v->type) {
        case ST_T_BOOLEAN:
            b = row[c].v.b;
            v->v.b = &b;
            break;
        case ST_T_INT:
            i = row[c].v.i;
            v->v.i = &i;
            break;
        case ST_T_LONG:
        case ST_T_TIMESTAMP:
            l[c] = row[c].v.l;
            v->v.l = &l[c];
            break;
        case ST_T_DOUBLE:
            d = row[c].v.d;
            v->v.d = &d;
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
    json_error_t je;
    json_t *back = json_loadb((const char *)out.data, out.len - 1, JSON_REJECT_DUPLICATES, &je);
    if (back == NULL)
        abort();
    struct st_value row2[NCOLS];
    struct st_err err = {0};
    if (row_from_json(back, COLS, NCOLS, PK, 2, ROW_FULL, row2, &err) != ST_OK)
        abort();
    for (int c = 0; c < NCOLS; c++) {
        if (!same_value(COLS[c].type, &row[c], &row2[c]))
            abort();
    }
    json_decref(back);
    buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    /* Front ends may allow \u0000 so that the row decoder can name the column. */
    json_t *obj = json_loadb((const char *)data, size, JSON_ALLOW_NUL, &je);
    if (obj == NULL)
        return 0;
    struct st_value out[NCOLS];
    for (int m = 0; m < 2; m++) {
        enum row_mode mode = m ? ROW_KEY : ROW_FULL;
        struct st_err err = {0};
        int rc = row_from_json(obj, COLS, NCOLS, PK, 2, mode, out, &err);
        if (rc != ST_OK && (err.code != rc || err.msg[0] == '\0'))
            abort();
        if (json_is_object(obj))
            check_literals(obj, mode, rc, out);
        if (rc == ST_OK && mode == ROW_FULL)
            check_roundtrip(out);
    }
    json_decref(obj);
    return 0;
}
