/*
 * filter_eval.c - vectorised three-valued evaluation of a compiled filter
 * over column batches, and pruning against column statistics.
 *
 * Evaluation works on chunks of EVAL_CHUNK rows. A node receives a selection
 * (the offsets, within the chunk, of the rows it must decide) and writes
 * TV_FALSE / TV_UNKNOWN / TV_TRUE for exactly those rows, in one tight loop
 * per predicate. AND narrows the selection its later operands see to the
 * rows not yet FALSE (OR: not yet TRUE), so the cheap-first order of a
 * conjunction pays off as it would in a row-at-a-time evaluator, without a
 * per-row tree walk. The scratch area (one selection and one result array
 * per and/or level) is allocated once per call.
 */
#include "expr/filter_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

#define EVAL_CHUNK 2048
#define SMALL_SET 8 /* below this a linear scan beats binary search */

size_t filter__lower_i64(const int64_t *a, size_t n, int64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t filter__lower_dbl(const double *a, size_t n, double x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t filter__lower_str(const struct flit *a, size_t n, const char *s, uint32_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st_bytes_cmp(a[mid].s, a[mid].slen, s, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline bool set_has_i64(const struct fset *s, int64_t x)
{
    if (s->n < SMALL_SET) {
        for (size_t k = 0; k < s->n; k++) {
            if (s->i[k] == x)
                return true;
        }
        return false;
    }
    size_t k = filter__lower_i64(s->i, s->n, x);
    return k < s->n && s->i[k] == x;
}

static inline bool set_has_dbl(const struct fset *s, double x)
{
    if (s->n < SMALL_SET) {
        for (size_t k = 0; k < s->n; k++) {
            if (s->d[k] == x)
                return true;
        }
        return false;
    }
    size_t k = filter__lower_dbl(s->d, s->n, x); /* NaN: lands anywhere, never equal */
    return k < s->n && s->d[k] == x;
}

static inline bool set_has_str(const struct fset *s, const char *p, uint32_t len)
{
    size_t k = filter__lower_str(s->s, s->n, p, len);
    return k < s->n && st_bytes_cmp(s->s[k].s, s->s[k].slen, p, len) == 0;
}

/* ---- evaluation ---------------------------------------------------------- */

struct scratch {
    uint32_t *sel; /* [levels][EVAL_CHUNK] */
    uint8_t *res;  /* [levels][EVAL_CHUNK] */
    size_t levels; /* how many levels sel and res hold */
};

struct batch {
    const struct st_colvec *const *vecs;
    size_t base; /* first row of the chunk */
};

/* One loop per comparison operator; VAL(r) is row r's value, LIT the literal. */
#define COMPARE_LOOPS(VAL, LIT)                                                                    \
    do {                                                                                           \
        switch (nd->op) {                                                                          \
        case OP_LT:                                                                                \
            for (size_t j = 0; j < m; j++)                                                         \
                out[sel[j]] = (VAL(sel[j]) < (LIT)) ? TV_TRUE : TV_FALSE;                          \
            break;                                                                                 \
        case OP_LE:                                                                                \
            for (size_t j = 0; j < m; j++)                                                         \
                out[sel[j]] = (VAL(sel[j]) <= (LIT)) ? TV_TRUE : TV_FALSE;                         \
            break;                                                                                 \
        case OP_GT:                                                                                \
            for (size_t j = 0; j < m; j++)                                                         \
                out[sel[j]] = (VAL(sel[j]) > (LIT)) ? TV_TRUE : TV_FALSE;                          \
            break;                                                                                 \
        case OP_GE:                                                                                \
            for (size_t j = 0; j < m; j++)                                                         \
                out[sel[j]] = (VAL(sel[j]) >= (LIT)) ? TV_TRUE : TV_FALSE;                         \
            break;                                                                                 \
        case OP_EQ:                                                                                \
            for (size_t j = 0; j < m; j++)                                                         \
                out[sel[j]] = (VAL(sel[j]) == (LIT)) ? TV_TRUE : TV_FALSE;                         \
            break;                                                                                 \
        case OP_NE:                                                                                \
            for (size_t j = 0; j < m; j++)                                                         \
                out[sel[j]] = (VAL(sel[j]) == (LIT)) ? TV_FALSE : TV_TRUE;                         \
            break;                                                                                 \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

/* The same for set membership; HAS(r) tells whether row r's value is in the set. */
#define SET_LOOP(HAS)                                                                              \
    do {                                                                                           \
        uint8_t yes = nd->op == OP_IN ? TV_TRUE : TV_FALSE;                                        \
        uint8_t no = (uint8_t)(TV_TRUE - yes);                                                     \
        for (size_t j = 0; j < m; j++)                                                             \
            out[sel[j]] = HAS(sel[j]) ? yes : no;                                                  \
    } while (0)

/* Result of (string cmp literal) by operator, indexed [op - OP_LT][sign + 1]. */
static const uint8_t STRING_CMP[6][3] = {
    {TV_TRUE, TV_FALSE, TV_FALSE}, /* lt */
    {TV_TRUE, TV_TRUE, TV_FALSE},  /* lt-eq */
    {TV_FALSE, TV_FALSE, TV_TRUE}, /* gt */
    {TV_FALSE, TV_TRUE, TV_TRUE},  /* gt-eq */
    {TV_FALSE, TV_TRUE, TV_FALSE}, /* eq */
    {TV_TRUE, TV_FALSE, TV_TRUE},  /* not-eq */
};

static void eval_string(const struct fnode *nd, const struct st_colvec *v, size_t base,
                        const uint32_t *sel, size_t m, uint8_t *out)
{
    const uint8_t *nulls = v->nulls != NULL ? v->nulls + base : NULL;
    const uint32_t *offs = v->offs + base;
    const char *data = v->sdata != NULL ? (const char *)v->sdata : ""; /* all-empty vectors */
    const char *lp = nd->lit.s;
    uint32_t ln = nd->lit.slen;
    assert(v->offs != NULL);
    for (size_t j = 0; j < m; j++) {
        uint32_t r = sel[j];
        if (nulls != NULL && nulls[r]) {
            out[r] = TV_UNKNOWN;
            continue;
        }
        const char *p = data + offs[r];
        uint32_t len = offs[r + 1] - offs[r];
        switch (nd->op) {
        case OP_EQ:
        case OP_NE: {
            /* Lengths first: most values differ there and need no memcmp. */
            bool eq = len == ln && (ln == 0 || memcmp(p, lp, ln) == 0);
            out[r] = eq == (nd->op == OP_EQ) ? TV_TRUE : TV_FALSE;
            break;
        }
        case OP_SW:
        case OP_NSW: {
            bool has = len >= ln && (ln == 0 || memcmp(p, lp, ln) == 0);
            out[r] = has == (nd->op == OP_SW) ? TV_TRUE : TV_FALSE;
            break;
        }
        case OP_IN:
        case OP_NIN: {
            bool has = set_has_str(&nd->set, p, len);
            out[r] = has == (nd->op == OP_IN) ? TV_TRUE : TV_FALSE;
            break;
        }
        default: {
            assert(nd->op >= OP_LT && nd->op <= OP_NE); /* the rows of STRING_CMP */
            int c = st_bytes_cmp(p, len, lp, ln);
            out[r] = STRING_CMP[nd->op - OP_LT][(c > 0) - (c < 0) + 1];
            break;
        }
        }
    }
}

static void eval_leaf(const struct fnode *nd, const struct batch *b, const uint32_t *sel, size_t m,
                      uint8_t *out)
{
    const struct st_colvec *v = b->vecs[nd->col];
    /* the caller passes a vector of the column's type for every column the filter reads */
    assert(v != NULL && v->type == nd->type && v->n >= b->base + (m > 0 ? sel[m - 1] + 1 : 0));
    const uint8_t *nulls = v->nulls != NULL ? v->nulls + b->base : NULL;
    if (nd->op == OP_ISNULL || nd->op == OP_NOTNULL) {
        uint8_t yes = nd->op == OP_ISNULL ? TV_TRUE : TV_FALSE;
        uint8_t no = (uint8_t)(TV_TRUE - yes);
        for (size_t j = 0; j < m; j++)
            out[sel[j]] = nulls != NULL && nulls[sel[j]] ? yes : no;
        return;
    }
    if (nd->type == ST_T_STRING) {
        eval_string(nd, v, b->base, sel, m, out);
        return;
    }
    bool in = nd->op == OP_IN || nd->op == OP_NIN;
    const struct fset *s = &nd->set;
    switch (nd->type) {
    case ST_T_BOOLEAN: {
        const uint8_t *a = v->v.b + b->base;
#define BOOL_VAL(r) ((int64_t)(a[r] != 0))
#define BOOL_HAS(r) set_has_i64(s, BOOL_VAL(r))
        if (in)
            SET_LOOP(BOOL_HAS);
        else
            COMPARE_LOOPS(BOOL_VAL, nd->lit.i);
        break;
    }
    case ST_T_INT: {
        const int32_t *a = v->v.i + b->base;
#define INT_VAL(r) ((int64_t)a[r])
#define INT_HAS(r) set_has_i64(s, INT_VAL(r))
        if (in)
            SET_LOOP(INT_HAS);
        else
            COMPARE_LOOPS(INT_VAL, nd->lit.i);
        break;
    }
    case ST_T_LONG:
    case ST_T_TIMESTAMP: {
        const int64_t *a = v->v.l + b->base;
#define LONG_VAL(r) (a[r])
#define LONG_HAS(r) set_has_i64(s, LONG_VAL(r))
        if (in)
            SET_LOOP(LONG_HAS);
        else
            COMPARE_LOOPS(LONG_VAL, nd->lit.i);
        break;
    }
    case ST_T_DOUBLE: {
        const double *a = v->v.d + b->base;
#define DBL_VAL(r) (a[r])
#define DBL_HAS(r) set_has_dbl(s, DBL_VAL(r))
        if (nd->op == OP_ISNAN || nd->op == OP_NOTNAN) {
            uint8_t yes = nd->op == OP_ISNAN ? TV_TRUE : TV_FALSE;
            uint8_t no = (uint8_t)(TV_TRUE - yes);
            for (size_t j = 0; j < m; j++)
                out[sel[j]] = isnan(a[sel[j]]) ? yes : no;
        } else if (in) {
            SET_LOOP(DBL_HAS);
        } else {
            COMPARE_LOOPS(DBL_VAL, nd->lit.d); /* IEEE: every comparison with NaN is false */
        }
        break;
    }
    case ST_T_STRING:
        break;
    }
    /* Null rows were compared on whatever their slot holds; they are unknown. */
    if (nulls != NULL) {
        for (size_t j = 0; j < m; j++) {
            if (nulls[sel[j]])
                out[sel[j]] = TV_UNKNOWN;
        }
    }
}

static void eval_node(const struct fnode *nd, const struct batch *b, const uint32_t *sel, size_t m,
                      uint8_t *out, const struct scratch *sc, int level)
{
    assert(m <= EVAL_CHUNK && level >= 0);
    switch (nd->op) {
    case OP_TRUE:
    case OP_FALSE: {
        uint8_t tv = nd->op == OP_TRUE ? TV_TRUE : TV_FALSE;
        for (size_t j = 0; j < m; j++)
            out[sel[j]] = tv;
        return;
    }
    case OP_NOT:
        assert(nd->nkids == 1);
        eval_node(nd->kids[0], b, sel, m, out, sc, level + 1);
        for (size_t j = 0; j < m; j++)
            out[sel[j]] = (uint8_t)(TV_TRUE - out[sel[j]]);
        return;
    case OP_AND:
    case OP_OR: {
        /* Rows reaching `decided` (FALSE for and, TRUE for or) leave the selection. */
        bool is_and = nd->op == OP_AND;
        uint8_t decided = is_and ? TV_FALSE : TV_TRUE;
        /* filter->depth counted the and/or/not levels: this one has scratch of its own */
        assert((size_t)level < sc->levels && nd->nkids >= 2);
        uint32_t *live = sc->sel + (size_t)level * EVAL_CHUNK;
        uint8_t *tmp = sc->res + (size_t)level * EVAL_CHUNK;
        eval_node(nd->kids[0], b, sel, m, out, sc, level + 1);
        size_t k = 0;
        for (size_t j = 0; j < m; j++) {
            live[k] = sel[j];
            k += out[sel[j]] != decided;
        }
        for (size_t c = 1; c < nd->nkids && k > 0; c++) {
            eval_node(nd->kids[c], b, live, k, tmp, sc, level + 1);
            size_t k2 = 0;
            for (size_t j = 0; j < k; j++) {
                uint32_t r = live[j];
                uint8_t x = out[r], y = tmp[r];
                uint8_t z = is_and ? (x < y ? x : y) : (x > y ? x : y);
                out[r] = z;
                live[k2] = r;
                k2 += z != decided;
            }
            k = k2;
        }
        return;
    }
    default:
        eval_leaf(nd, b, sel, m, out);
        return;
    }
}

void filter_eval(const struct filter *f, const struct st_colvec *const *vecs, size_t n,
                 uint8_t *sel)
{
    const struct fnode *root = f->root;
    if (root->op == OP_TRUE) {
        for (size_t i = 0; i < n; i++)
            sel[i] = sel[i] != 0;
        return;
    }
    if (root->op == OP_FALSE) {
        memset(sel, 0, n);
        return;
    }
    /* Level 0 is the chunk's candidates; and/or at level L use level L + 1. */
    size_t levels = (size_t)f->depth + 2;
    struct scratch sc = {.levels = levels};
    sc.sel = xmalloc(levels * EVAL_CHUNK * sizeof *sc.sel);
    sc.res = xmalloc(levels * EVAL_CHUNK);
    struct scratch inner = {sc.sel + EVAL_CHUNK, sc.res + EVAL_CHUNK, levels - 1};
    uint32_t *cand = sc.sel;
    uint8_t *res = sc.res;
    for (size_t base = 0; base < n; base += EVAL_CHUNK) {
        size_t len = n - base < EVAL_CHUNK ? n - base : EVAL_CHUNK;
        size_t m = 0;
        for (size_t r = 0; r < len; r++) {
            cand[m] = (uint32_t)r;
            m += sel[base + r] != 0;
        }
        if (m == 0)
            continue;
        struct batch b = {vecs, base};
        eval_node(root, &b, cand, m, res, &inner, 0);
        for (size_t j = 0; j < m; j++)
            sel[base + cand[j]] = res[cand[j]] == TV_TRUE;
    }
    free(sc.sel);
    free(sc.res);
}

/* ---- pruning ------------------------------------------------------------- */

/* A column's bounds in the comparison domain of its literals. */
struct bounds {
    struct flit min, max;
};

static int cmp_flit(enum st_type t, const struct flit *a, const struct flit *b)
{
    switch (t) {
    case ST_T_DOUBLE:
        return (a->d > b->d) - (a->d < b->d);
    case ST_T_STRING:
        return st_bytes_cmp(a->s, a->slen, b->s, b->slen);
    default:
        return (a->i > b->i) - (a->i < b->i);
    }
}

static void to_flit(enum st_type t, const struct st_value *v, struct flit *out)
{
    memset(out, 0, sizeof *out);
    switch (t) {
    case ST_T_BOOLEAN:
        out->i = v->v.b;
        break;
    case ST_T_INT:
        out->i = v->v.i;
        break;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        out->i = v->v.l;
        break;
    case ST_T_DOUBLE:
        out->d = v->v.d;
        break;
    case ST_T_STRING:
        out->s = v->v.s.p;
        out->slen = v->v.s.len;
        break;
    }
}

/* Does s start with prefix p? */
static bool has_prefix(const struct flit *s, const struct flit *p)
{
    return s->slen >= p->slen && (p->slen == 0 || memcmp(s->s, p->s, p->slen) == 0);
}

/* May some string in [min, max] start with p? Those strings form the interval [p, p\xff\xff...). */
static bool range_may_start_with(const struct bounds *bd, const struct flit *p)
{
    if (st_bytes_cmp(bd->max.s, bd->max.slen, p->s, p->slen) < 0)
        return false;
    uint32_t n = bd->min.slen < p->slen ? bd->min.slen : p->slen;
    return st_bytes_cmp(bd->min.s, n, p->s, p->slen) <= 0;
}

/* May a value in [min, max] be in the set? */
static bool range_may_hit_set(enum st_type t, const struct bounds *bd, const struct fset *s)
{
    size_t k;
    switch (t) {
    case ST_T_DOUBLE:
        k = filter__lower_dbl(s->d, s->n, bd->min.d);
        return k < s->n && s->d[k] <= bd->max.d;
    case ST_T_STRING:
        k = filter__lower_str(s->s, s->n, bd->min.s, bd->min.slen);
        return k < s->n && cmp_flit(t, &s->s[k], &bd->max) <= 0;
    default:
        k = filter__lower_i64(s->i, s->n, bd->min.i);
        return k < s->n && s->i[k] <= bd->max.i;
    }
}

/* Is every value in [min, max] in the set (min == max, in the set)? */
static bool range_inside_set(enum st_type t, const struct bounds *bd, const struct fset *s)
{
    if (cmp_flit(t, &bd->min, &bd->max) != 0)
        return false;
    switch (t) {
    case ST_T_DOUBLE:
        return set_has_dbl(s, bd->min.d);
    case ST_T_STRING:
        return set_has_str(s, bd->min.s, bd->min.slen);
    default:
        return set_has_i64(s, bd->min.i);
    }
}

/*
 * May some non-null value in [min, max] make the predicate `want` (TRUE or
 * FALSE)? NaN is handled by the caller.
 */
static bool range_may(const struct fnode *nd, const struct bounds *bd, bool want)
{
    enum st_type t = nd->type;
    const struct flit *lit = &nd->lit;
    int lo = cmp_flit(t, &bd->min, lit), hi = cmp_flit(t, &bd->max, lit);
    switch (nd->op) {
    case OP_LT:
        return want ? lo < 0 : hi >= 0;
    case OP_LE:
        return want ? lo <= 0 : hi > 0;
    case OP_GT:
        return want ? hi > 0 : lo <= 0;
    case OP_GE:
        return want ? hi >= 0 : lo < 0;
    case OP_EQ:
        return want ? lo <= 0 && hi >= 0 : !(lo == 0 && hi == 0);
    case OP_NE:
        return want ? !(lo == 0 && hi == 0) : lo <= 0 && hi >= 0;
    case OP_IN:
        return want ? range_may_hit_set(t, bd, &nd->set) : !range_inside_set(t, bd, &nd->set);
    case OP_NIN:
        return want ? !range_inside_set(t, bd, &nd->set) : range_may_hit_set(t, bd, &nd->set);
    case OP_SW:
    case OP_NSW: {
        bool all = has_prefix(&bd->min, lit) && has_prefix(&bd->max, lit);
        bool some = range_may_start_with(bd, lit);
        return want == (nd->op == OP_SW) ? some : !all;
    }
    default:
        return true;
    }
}

static bool leaf_may(const struct fnode *nd, const struct col_range *const *stats, uint64_t nrows,
                     bool want)
{
    const struct col_range *st = stats != NULL ? stats[nd->col] : NULL;
    bool known_nulls = st != NULL && st->has_null_count;
    bool some_null = !known_nulls || st->null_count > 0;
    bool some_value = !known_nulls || st->null_count < nrows;
    if (nd->op == OP_ISNULL)
        return want ? some_null : some_value;
    if (nd->op == OP_NOTNULL)
        return want ? some_value : some_null;
    /* Everything else is unknown on null: it needs a value. */
    if (!some_value)
        return false;
    if (st == NULL || !st->has_minmax || nd->op == OP_ISNAN || nd->op == OP_NOTNAN)
        return true;
    struct bounds bd;
    to_flit(nd->type, &st->min, &bd.min);
    to_flit(nd->type, &st->max, &bd.max);
    if (nd->type == ST_T_DOUBLE) {
        /*
         * Bounds may leave NaN out (Iceberg and Parquet do) or hold it; a
         * NaN row is FALSE for lt..eq and in, TRUE for not-eq and not-in.
         */
        if (isnan(bd.min.d) || isnan(bd.max.d) || isnan(nd->lit.d))
            return true;
        bool nan_gives = nd->op == OP_NE || nd->op == OP_NIN;
        if (want == nan_gives)
            return true;
    }
    return range_may(nd, &bd, want);
}

/* May some row make nd TRUE (want) or FALSE (!want)? Unknown never helps. */
static bool node_may(const struct fnode *nd, const struct col_range *const *stats, uint64_t nrows,
                     bool want)
{
    switch (nd->op) {
    case OP_TRUE:
        return want;
    case OP_FALSE:
        return !want;
    case OP_NOT:
        assert(nd->nkids == 1);
        return node_may(nd->kids[0], stats, nrows, !want);
    case OP_AND:
    case OP_OR: {
        /* and is TRUE only if all kids may be; FALSE if any may be (or: dually). */
        bool all = (nd->op == OP_AND) == want;
        for (size_t k = 0; k < nd->nkids; k++) {
            bool m = node_may(nd->kids[k], stats, nrows, want);
            if (all && !m)
                return false;
            if (!all && m)
                return true;
        }
        return all;
    }
    default:
        return leaf_may(nd, stats, nrows, want);
    }
}

bool filter_may_match(const struct filter *f, const struct col_range *const *stats, uint64_t nrows)
{
    if (nrows == 0)
        return false;
    return node_may(f->root, stats, nrows, true);
}
