/* row.c - rows addressed by column name, validated against a schema. */
#include "expr/row.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "expr/expr_int.h"

_Static_assert(LOOKUP_SLOTS >= 2 * ST_COLUMNS_MAX && (LOOKUP_SLOTS & (LOOKUP_SLOTS - 1)) == 0,
               "the name table stays at most half full, and masks with LOOKUP_SLOTS - 1");
_Static_assert(ST_COLUMNS_MAX < INT16_MAX, "a slot holds a column index + 1 in an int16_t");

static uint32_t name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

void expr__lookup_init(struct col_lookup *lk, const struct st_column *cols, int ncols)
{
    lk->cols = cols;
    lk->ncols = ncols;
    lk->hashed = ncols > LOOKUP_LINEAR_MAX && ncols <= ST_COLUMNS_MAX;
    if (!lk->hashed)
        return;
    memset(lk->slot, 0, sizeof lk->slot);
    for (int k = 0; k < ncols; k++) {
        uint32_t h = name_hash(cols[k].name, strlen(cols[k].name)) & (LOOKUP_SLOTS - 1);
        assert(strlen(cols[k].name) <= ST_NAME_MAX); /* a st_column's name fits its array */
        while (lk->slot[h] != 0)
            h = (h + 1) & (LOOKUP_SLOTS - 1);
        lk->slot[h] = (int16_t)(k + 1);
    }
}

/* Index of the column named `name`, or -1. */
int expr__lookup_find(const struct col_lookup *lk, const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > ST_NAME_MAX)
        return -1;
    if (!lk->hashed) {
        for (int k = 0; k < lk->ncols; k++) {
            if (lk->cols[k].name[0] == name[0] && strcmp(lk->cols[k].name, name) == 0)
                return k;
        }
        return -1;
    }
    uint32_t h = name_hash(name, n) & (LOOKUP_SLOTS - 1);
    while (lk->slot[h] != 0) {
        int k = lk->slot[h] - 1;
        if (strcmp(lk->cols[k].name, name) == 0)
            return k;
        h = (h + 1) & (LOOKUP_SLOTS - 1);
    }
    return -1;
}

/* A name fit for a message: long names are cut, quotes escaped, control characters hidden. */
static void name_for_msg(const char *name, char out[80])
{
    size_t o = 0, i = 0;
    for (; name[i] != '\0' && o < 64; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7F) {
            out[o++] = '?';
        } else {
            out[o++] = (char)c;
        }
    }
    if (name[i] != '\0') {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

static int refuse_unknown(const struct col_lookup *lk, const char *name, enum row_mode mode,
                          struct st_err *err)
{
    char shown[80];
    name_for_msg(name, shown);
    if (mode == ROW_KEY && expr__lookup_find(lk, name) >= 0)
        return st_errf(err, ST_EINVAL, "column \"%s\" is not part of the primary key", shown);
    return st_errf(err, ST_EINVAL, "unknown column \"%s\"", shown);
}

/* Put `column "c": ` before the message in err (which may be NULL); return rc. */
static int name_error(struct st_err *err, int rc, const struct st_column *c)
{
    if (err != NULL)
        st_err_prefix(err, "column \"%s\"", c->name);
    return rc;
}

/* Coerce one present value into *out, naming the column on failure. */
static int coerce_column(const struct st_column *c, const struct st_literal *lit,
                         enum row_mode mode, struct st_value *out, struct st_err *err)
{
    int rc = lit_coerce(lit, c->type, out, err);
    if (rc != ST_OK)
        return name_error(err, rc, c);
    if (out->null && (c->required || mode == ROW_KEY))
        return st_errf(err, ST_EINVAL, "column \"%s\" is required", c->name);
    return ST_OK;
}

static int check_mode(const struct st_column *cols, int ncols, const int *pk, int npk,
                      enum row_mode mode, struct st_err *err)
{
    if (ncols < 0 || ncols > ST_COLUMNS_MAX)
        return st_errf(err, ST_EINTERNAL, "bad column count %d", ncols);
    if (mode == ROW_KEY) {
        if (npk <= 0)
            return st_errf(err, ST_EINVAL, "the table has no primary key");
        for (int j = 0; j < npk; j++) {
            if (pk[j] < 0 || pk[j] >= ncols)
                return st_errf(err, ST_EINTERNAL, "bad key column %d", pk[j]);
            for (int k = 0; k < j; k++) {
                if (pk[k] == pk[j])
                    return st_errf(err, ST_EINTERNAL, "key column %d listed twice", pk[j]);
            }
        }
    }
    (void)cols;
    return ST_OK;
}

struct row_names {
    struct col_lookup lk;
};

struct row_names *row_names_new(const struct st_column *cols, int ncols)
{
    struct row_names *rn = xmalloc(sizeof *rn);
    expr__lookup_init(&rn->lk, cols, ncols);
    return rn;
}

void row_names_free(struct row_names *rn)
{
    free(rn);
}

static int decode_literals(const struct col_lookup *lk, const char *const *names,
                           const struct st_literal *lits, size_t n, const int *pk, int npk,
                           enum row_mode mode, struct st_value *out, struct st_err *err)
{
    const struct st_column *cols = lk->cols;
    int ncols = lk->ncols;
    int rc;
    /* slot_of[k]: the position in out[] of column k, or -1 when not wanted. */
    int16_t slot_of[ST_COLUMNS_MAX];
    uint8_t seen[ST_COLUMNS_MAX];
    int want = mode == ROW_KEY ? npk : ncols;
    /* check_mode() ran: a schema of at most ST_COLUMNS_MAX columns, key columns inside it */
    assert(ncols >= 0 && ncols <= ST_COLUMNS_MAX && want >= 0 && want <= ncols);
    for (int k = 0; k < ncols; k++) {
        slot_of[k] = (int16_t)(mode == ROW_KEY ? -1 : k);
        seen[k] = 0;
    }
    if (mode == ROW_KEY) {
        for (int j = 0; j < npk; j++)
            slot_of[pk[j]] = (int16_t)j;
    }
    for (size_t m = 0; m < n; m++) {
        int k = expr__lookup_find(lk, names[m]);
        if (k < 0 || slot_of[k] < 0)
            return refuse_unknown(lk, names[m], mode, err);
        if (seen[k]) {
            char shown[80];
            name_for_msg(names[m], shown);
            return st_errf(err, ST_EINVAL, "duplicate column \"%s\"", shown);
        }
        seen[k] = 1;
        assert(slot_of[k] < want);
        rc = coerce_column(&cols[k], &lits[m], mode, &out[slot_of[k]], err);
        if (rc != ST_OK)
            return rc;
    }
    for (int j = 0; j < want; j++) {
        int k = mode == ROW_KEY ? pk[j] : j;
        if (seen[k])
            continue;
        if (cols[k].required || mode == ROW_KEY)
            return st_errf(err, ST_EINVAL, "column \"%s\" is required", cols[k].name);
        memset(&out[j], 0, sizeof out[j]);
        out[j].null = true;
    }
    return ST_OK;
}

int row_from_literals(const char *const *names, const struct st_literal *lits, size_t n,
                      const struct st_column *cols, int ncols, const int *pk, int npk,
                      enum row_mode mode, struct st_value *out, struct st_err *err)
{
    int rc = check_mode(cols, ncols, pk, npk, mode, err);
    if (rc != ST_OK)
        return rc;
    struct col_lookup lk;
    expr__lookup_init(&lk, cols, ncols);
    return decode_literals(&lk, names, lits, n, pk, npk, mode, out, err);
}

int row_from_literals_idx(const struct row_names *rn, const char *const *names,
                          const struct st_literal *lits, size_t n, const int *pk, int npk,
                          enum row_mode mode, struct st_value *out, struct st_err *err)
{
    int rc = check_mode(rn->lk.cols, rn->lk.ncols, pk, npk, mode, err);
    if (rc != ST_OK)
        return rc;
    return decode_literals(&rn->lk, names, lits, n, pk, npk, mode, out, err);
}
