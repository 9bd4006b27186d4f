/*
 * filter.c - parse Iceberg expression JSON, bind it to a table schema and
 * compile it into a tree of typed predicates (filter_int.h).
 *
 * Binding happens here, once: every column name is resolved, every literal
 * coerced to its column's type (lit_coerce, the same rules as rows), every
 * in-list sorted; evaluation (filter_eval.c) then never looks at JSON.
 * Chains of one operator (and(and(a, b), c)) become one n-ary node, so a
 * long generated OR of equalities costs one level, not one per operand;
 * constants are folded (and(x, false) is false, not(not(x)) is x).
 */
#include "expr/filter_int.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/debug.h"
#include "common/xalloc.h"
#include "expr/expr_int.h"
#include "expr/literal.h"

struct parser {
    const struct st_column *cols;
    int ncols;
    struct col_lookup names;
    size_t nodes; /* predicates and operators so far, against FILTER_MAX_NODES */
    struct st_err *err;
};

__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, int code, const char *fmt,
                                                      ...)
{
    char msg[ST_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_errf(p->err, code, "filter: %s", msg);
}

/* ---- the tree ------------------------------------------------------------ */

static void node_free(struct fnode *nd)
{
    if (nd == NULL)
        return;
    for (size_t k = 0; k < nd->nkids; k++)
        node_free(nd->kids[k]);
    free(nd->kids);
    free((char *)nd->lit.s);
    free(nd->set.i);
    free(nd->set.d);
    free(nd->set.s);
    free(nd->set.bytes);
    free(nd);
}

static struct fnode *node_new(enum fop op)
{
    struct fnode *nd = xcalloc(1, sizeof *nd);
    nd->op = op;
    nd->col = -1;
    return nd;
}

static int count_node(struct parser *p)
{
    if (++p->nodes > FILTER_MAX_NODES)
        return fail(p, ST_EINVAL, "more than %d expression nodes", FILTER_MAX_NODES);
    return ST_OK;
}

/* ---- names and operands -------------------------------------------------- */

struct opname {
    const char *name;
    enum fop op;
};

static const struct opname OPS[] = {
    {"true", OP_TRUE},
    {"false", OP_FALSE},
    {"and", OP_AND},
    {"or", OP_OR},
    {"not", OP_NOT},
    {"lt", OP_LT},
    {"lt-eq", OP_LE},
    {"gt", OP_GT},
    {"gt-eq", OP_GE},
    {"eq", OP_EQ},
    {"not-eq", OP_NE},
    {"starts-with", OP_SW},
    {"not-starts-with", OP_NSW},
    {"in", OP_IN},
    {"not-in", OP_NIN},
    {"is-null", OP_ISNULL},
    {"not-null", OP_NOTNULL},
    {"is-nan", OP_ISNAN},
    {"not-nan", OP_NOTNAN},
};

static const char *op_name(enum fop op)
{
    for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++) {
        if (OPS[k].op == op)
            return OPS[k].name;
    }
    return "?";
}

/* A JSON string for a message: cut and with quotes/control characters tamed. */
static void shown(const char *s, char out[72])
{
    size_t o = 0, i = 0;
    for (; s[i] != '\0' && o < 60; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else {
            out[o++] = c < 0x20 || c == 0x7F ? '?' : (char)c;
        }
    }
    if (s[i] != '\0') {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

static int find_column(struct parser *p, const char *name, int *col)
{
    *col = expr__lookup_find(&p->names, name);
    if (*col >= 0)
        return ST_OK;
    char s[72];
    shown(name, s);
    return fail(p, ST_EINVAL, "unknown column \"%s\"", s);
}

/* The "type" of an expression object, or NULL. */
static const char *type_of(const struct jdoc_val *j)
{
    return jdoc_str(jdoc_get(j, "type"), NULL); /* NULL for a non-object */
}

/* {"type":"reference", "name":N} (newer), {"type":"reference","term":N} (older), "id" (refused). */
static int parse_reference(struct parser *p, const struct jdoc_val *j, int *col)
{
    const struct jdoc_val *name = jdoc_get(j, "name");
    if (name == NULL)
        name = jdoc_get(j, "term");
    if (jdoc_is(name, JDOC_STRING))
        return find_column(p, jdoc_str(name, NULL), col);
    if (jdoc_get(j, "id") != NULL)
        return fail(p, ST_EUNSUPPORTED,
                    "references by field id are not supported; use "
                    "{\"type\":\"reference\",\"name\":\"column\"}");
    return fail(p, ST_EINVAL, "a reference needs a \"name\" string");
}

/* Refuse the value-expression forms strike does not evaluate. */
static int refuse_term_type(struct parser *p, const char *type)
{
    if (strcmp(type, "transform") == 0)
        return fail(p, ST_EUNSUPPORTED, "transforms are not supported");
    if (strcmp(type, "apply") == 0)
        return fail(p, ST_EUNSUPPORTED, "functions are not supported");
    char s[72];
    shown(type, s);
    return fail(p, ST_EINVAL, "expected a column reference or a literal, got \"%s\"", s);
}

/* A released-form "term": a column name, a reference object, or a (refused) transform. */
static int parse_term(struct parser *p, const struct jdoc_val *j, int *col)
{
    if (jdoc_is(j, JDOC_STRING))
        return find_column(p, jdoc_str(j, NULL), col);
    const char *type = type_of(j);
    if (type != NULL && strcmp(type, "reference") == 0)
        return parse_reference(p, j, col);
    if (type != NULL && strcmp(type, "transform") == 0)
        return refuse_term_type(p, type);
    return fail(p, ST_EINVAL, "\"term\" must be a column name or a reference, got %s",
                lit_jdoc_kind(j));
}

/* A newer-form operand: a reference (col set) or a literal (*lit set). */
struct operand {
    int col;                    /* >= 0 for a reference */
    const struct jdoc_val *lit; /* the literal's JSON value otherwise */
};

/* LITERAL: a JSON scalar, or {"type":"literal","value":V[,"data-type":T]}. */
static int unwrap_literal(struct parser *p, const struct jdoc_val *j, const struct jdoc_val **out)
{
    const char *type = type_of(j);
    if (type != NULL && strcmp(type, "literal") == 0) {
        j = jdoc_get(j, "value");
        if (j == NULL)
            return fail(p, ST_EINVAL, "a literal needs a \"value\"");
    }
    *out = j;
    return ST_OK;
}

static int parse_operand(struct parser *p, const struct jdoc_val *j, struct operand *out)
{
    out->col = -1;
    out->lit = NULL;
    if (jdoc_is(j, JDOC_OBJECT)) {
        const char *type = type_of(j);
        if (type == NULL)
            return fail(p, ST_EINVAL, "an operand object needs a \"type\"");
        if (strcmp(type, "reference") == 0)
            return parse_reference(p, j, &out->col);
        if (strcmp(type, "literal") == 0)
            return unwrap_literal(p, j, &out->lit);
        return refuse_term_type(p, type);
    }
    if (jdoc_is(j, JDOC_ARRAY))
        return fail(p, ST_EINVAL, "expected a column reference or a literal, got array");
    out->lit = j;
    return ST_OK;
}

/* ---- literals ------------------------------------------------------------ */

/* Coerce the JSON literal j to column `col`'s type into *out (strings still borrowed). */
static int bind_literal(struct parser *p, int col, const struct jdoc_val *j, struct flit *out)
{
    const struct st_column *c = &p->cols[col];
    struct st_literal lit;
    struct st_value v;
    int rc = unwrap_literal(p, j, &j);
    if (rc != ST_OK)
        return rc;
    rc = lit_from_jdoc(j, &lit, p->err);
    if (rc == ST_OK)
        rc = lit_coerce(&lit, c->type, &v, p->err);
    if (rc != ST_OK) {
        if (p->err != NULL)
            st_err_prefix(p->err, "filter: column \"%s\"", c->name);
        return rc;
    }
    if (v.null)
        return fail(p, ST_EINVAL,
                    "column \"%s\": a null literal never matches; use is-null or "
                    "not-null",
                    c->name);
    memset(out, 0, sizeof *out);
    switch (c->type) {
    case ST_T_BOOLEAN:
        out->i = v.v.b;
        break;
    case ST_T_INT:
        out->i = v.v.i;
        break;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        out->i = v.v.l;
        break;
    case ST_T_DOUBLE:
        out->d = v.v.d;
        break;
    case ST_T_STRING:
        out->s = v.v.s.p;
        out->slen = v.v.s.len;
        break;
    }
    return ST_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y); /* never NaN; -0.0 and 0.0 are one value */
}

static int cmp_str(const void *a, const void *b)
{
    const struct flit *x = a, *y = b;
    return st_bytes_cmp(x->s, x->slen, y->s, y->slen);
}

/* The list of an in/not-in: [LITERAL...] or {"type":"literals","values":[...]}. */
static int bind_set(struct parser *p, struct fnode *nd, const struct jdoc_val *values)
{
    const char *name = op_name(nd->op);
    if (jdoc_is(values, JDOC_OBJECT)) {
        const char *type = type_of(values);
        if (type == NULL || strcmp(type, "literals") != 0)
            return fail(p, ST_EINVAL, "\"%s\" values must be a list", name);
        values = jdoc_get(values, "values");
    }
    if (!jdoc_is(values, JDOC_ARRAY))
        return fail(p, ST_EINVAL, "\"%s\" needs a \"values\" list", name);
    size_t n = jdoc_size(values);
    if (n > FILTER_MAX_VALUES)
        return fail(p, ST_EINVAL, "\"%s\" has %zu values; at most %d are allowed", name, n,
                    FILTER_MAX_VALUES);
    struct flit *lits = xcalloc(n ? n : 1, sizeof *lits);
    size_t bytes = 0;
    for (size_t k = 0; k < n; k++) {
        int rc = bind_literal(p, nd->col, jdoc_at(values, k), &lits[k]);
        if (rc != ST_OK) {
            free(lits);
            return rc;
        }
        bytes += lits[k].slen;
    }
    struct fset *s = &nd->set;
    switch (nd->type) {
    case ST_T_DOUBLE:
        s->d = xcalloc(n ? n : 1, sizeof *s->d);
        for (size_t k = 0; k < n; k++)
            s->d[k] = lits[k].d;
        qsort(s->d, n, sizeof *s->d, cmp_dbl);
        for (size_t k = 0; k < n; k++) {
            if (s->n == 0 || s->d[s->n - 1] != s->d[k])
                s->d[s->n++] = s->d[k];
        }
        free(lits);
        break;
    case ST_T_STRING: {
        /* Copy the bytes out of the JSON, then sort the views. */
        s->bytes = xmalloc(bytes ? bytes : 1);
        size_t off = 0;
        for (size_t k = 0; k < n; k++) {
            if (lits[k].slen > 0)
                memcpy(s->bytes + off, lits[k].s, lits[k].slen);
            lits[k].s = s->bytes + off;
            off += lits[k].slen;
        }
        qsort(lits, n, sizeof *lits, cmp_str);
        for (size_t k = 0; k < n; k++) {
            if (s->n == 0 || cmp_str(&lits[s->n - 1], &lits[k]) != 0)
                lits[s->n++] = lits[k];
        }
        s->s = lits;
        break;
    }
    default:
        s->i = xcalloc(n ? n : 1, sizeof *s->i);
        for (size_t k = 0; k < n; k++)
            s->i[k] = lits[k].i;
        qsort(s->i, n, sizeof *s->i, cmp_i64);
        for (size_t k = 0; k < n; k++) {
            if (s->n == 0 || s->i[s->n - 1] != s->i[k])
                s->i[s->n++] = s->i[k];
        }
        free(lits);
        break;
    }
    return ST_OK;
}

/* ---- predicates ---------------------------------------------------------- */

static bool is_cmp(enum fop op)
{
    return op >= OP_LT && op <= OP_NSW;
}

static bool is_set(enum fop op)
{
    return op == OP_IN || op == OP_NIN;
}

/* c OP lit  ==  lit FLIP(OP) c */
static enum fop flipped(enum fop op)
{
    switch (op) {
    case OP_LT:
        return OP_GT;
    case OP_LE:
        return OP_GE;
    case OP_GT:
        return OP_LT;
    case OP_GE:
        return OP_LE;
    default:
        return op;
    }
}

/* The column of a set or unary predicate: "term" (released) or "child" (newer). */
static int predicate_column(struct parser *p, const struct jdoc_val *j, enum fop op, int *col)
{
    const struct jdoc_val *term = jdoc_get(j, "term");
    const struct jdoc_val *child = jdoc_get(j, "child");
    if (term != NULL && child != NULL)
        return fail(p, ST_EINVAL, "\"%s\" has both \"term\" and \"child\"", op_name(op));
    if (term != NULL)
        return parse_term(p, term, col);
    if (child == NULL)
        return fail(p, ST_EINVAL, "\"%s\" needs \"term\" or \"child\"", op_name(op));
    struct operand o;
    int rc = parse_operand(p, child, &o);
    if (rc != ST_OK)
        return rc;
    if (o.col < 0)
        return fail(p, ST_EINVAL,
                    "\"%s\" needs a column reference in \"child\", like "
                    "{\"type\":\"reference\",\"name\":\"c\"}",
                    op_name(op));
    *col = o.col;
    return ST_OK;
}

/* lt .. not-starts-with: returns the column and the literal's JSON, op possibly flipped. */
static int comparison_operands(struct parser *p, const struct jdoc_val *j, enum fop *op, int *col,
                               const struct jdoc_val **lit)
{
    const char *name = op_name(*op);
    const struct jdoc_val *term = jdoc_get(j, "term");
    const struct jdoc_val *left = jdoc_get(j, "left"), *right = jdoc_get(j, "right");
    if (term != NULL) {
        if (left != NULL || right != NULL)
            return fail(p, ST_EINVAL, "\"%s\" has both \"term\" and \"left\"/\"right\"", name);
        *lit = jdoc_get(j, "value");
        if (*lit == NULL)
            return fail(p, ST_EINVAL, "\"%s\" with \"term\" needs a \"value\"", name);
        return parse_term(p, term, col);
    }
    if (left == NULL || right == NULL)
        return fail(p, ST_EINVAL, "\"%s\" needs \"term\" and \"value\", or \"left\" and \"right\"",
                    name);
    struct operand l, r;
    int rc = parse_operand(p, left, &l);
    if (rc == ST_OK)
        rc = parse_operand(p, right, &r);
    if (rc != ST_OK)
        return rc;
    if (l.col >= 0 && r.col >= 0)
        return fail(p, ST_EUNSUPPORTED, "comparing two columns is not supported");
    if (l.col < 0 && r.col < 0)
        return fail(p, ST_EINVAL, "\"%s\" needs a column reference on one side", name);
    if (l.col >= 0) {
        *col = l.col;
        *lit = r.lit;
        return ST_OK;
    }
    if (*op == OP_SW || *op == OP_NSW)
        return fail(p, ST_EUNSUPPORTED, "\"%s\" needs the column on the left", name);
    *op = flipped(*op);
    *col = r.col;
    *lit = l.lit;
    return ST_OK;
}

static int parse_predicate(struct parser *p, const struct jdoc_val *j, enum fop op,
                           struct fnode **out)
{
    int col = -1;
    const struct jdoc_val *lit = NULL;
    int rc;
    if (is_cmp(op))
        rc = comparison_operands(p, j, &op, &col, &lit);
    else
        rc = predicate_column(p, j, op, &col);
    if (rc != ST_OK)
        return rc;
    const struct st_column *c = &p->cols[col];
    if ((op == OP_SW || op == OP_NSW) && c->type != ST_T_STRING)
        return fail(p, ST_EINVAL, "%s needs a string column; column \"%s\" is %s", op_name(op),
                    c->name, st_type_name(c->type));
    if ((op == OP_ISNAN || op == OP_NOTNAN) && c->type != ST_T_DOUBLE)
        return fail(p, ST_EINVAL, "%s needs a double column; column \"%s\" is %s", op_name(op),
                    c->name, st_type_name(c->type));
    struct fnode *nd = node_new(op);
    nd->col = col;
    nd->type = c->type;
    if (is_cmp(op)) {
        rc = bind_literal(p, col, lit, &nd->lit);
        if (rc == ST_OK && c->type == ST_T_STRING) {
            /* Own the bytes: the filter outlives the JSON. */
            char *copy = xmalloc(nd->lit.slen ? nd->lit.slen : 1);
            if (nd->lit.slen > 0)
                memcpy(copy, nd->lit.s, nd->lit.slen);
            nd->lit.s = copy;
        } else {
            nd->lit.s = NULL;
        }
    } else if (is_set(op)) {
        rc = bind_set(p, nd, jdoc_get(j, "values"));
    }
    if (rc != ST_OK) {
        node_free(nd);
        return rc;
    }
    *out = nd;
    return ST_OK;
}

/* ---- logic --------------------------------------------------------------- */

static int parse_expr(struct parser *p, const struct jdoc_val *j, int depth, struct fnode **out);

static void add_kid(struct fnode *nd, struct fnode *kid, size_t *cap)
{
    if (nd->nkids == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        nd->kids = xreallocarray(nd->kids, *cap, sizeof *nd->kids);
    }
    nd->kids[nd->nkids++] = kid;
}

/*
 * and/or: collect the operands of the whole chain of this operator (any
 * shape) with an explicit stack, fold constants, and make one n-ary node.
 */
static int parse_chain(struct parser *p, const struct jdoc_val *j, enum fop op, int depth,
                       struct fnode **out)
{
    enum fop absorbing = op == OP_AND ? OP_FALSE : OP_TRUE; /* x and false = false */
    enum fop neutral = op == OP_AND ? OP_TRUE : OP_FALSE;   /* x and true = x */
    struct fnode *nd = node_new(op);
    size_t cap = 0, sp = 0, scap = 16;
    const struct jdoc_val **stack = xmalloc(scap * sizeof *stack);
    bool absorbed = false;
    int rc = ST_OK;
    stack[sp++] = j;
    while (sp > 0 && rc == ST_OK) {
        const struct jdoc_val *e = stack[--sp];
        const char *type = type_of(e);
        if (type != NULL && strcmp(type, op_name(op)) == 0) {
            const struct jdoc_val *l = jdoc_get(e, "left"), *r = jdoc_get(e, "right");
            if (l == NULL || r == NULL) {
                rc = fail(p, ST_EINVAL, "\"%s\" needs \"left\" and \"right\"", op_name(op));
                break;
            }
            rc = count_node(p);
            if (sp + 2 > scap) {
                scap *= 2;
                stack = xreallocarray(stack, scap, sizeof *stack);
            }
            stack[sp++] = r; /* left is popped first: operands stay in order */
            stack[sp++] = l;
            continue;
        }
        struct fnode *kid = NULL;
        rc = parse_expr(p, e, depth + 1, &kid);
        if (rc != ST_OK)
            break;
        if (kid->op == neutral || absorbed) {
            node_free(kid);
        } else if (kid->op == absorbing) {
            node_free(kid);
            absorbed = true; /* keep parsing: errors further on still count */
        } else {
            add_kid(nd, kid, &cap);
        }
    }
    free(stack);
    if (rc != ST_OK) {
        node_free(nd);
        return rc;
    }
    if (absorbed || nd->nkids == 0) {
        node_free(nd);
        *out = node_new(absorbed ? absorbing : neutral);
    } else if (nd->nkids == 1) {
        *out = nd->kids[0];
        nd->nkids = 0;
        node_free(nd);
    } else {
        *out = nd;
    }
    return ST_OK;
}

static int parse_not(struct parser *p, const struct jdoc_val *j, int depth, struct fnode **out)
{
    const struct jdoc_val *child = jdoc_get(j, "child");
    if (child == NULL)
        return fail(p, ST_EINVAL, "\"not\" needs a \"child\"");
    struct fnode *kid = NULL;
    int rc = parse_expr(p, child, depth + 1, &kid);
    if (rc != ST_OK)
        return rc;
    if (kid->op == OP_TRUE || kid->op == OP_FALSE) {
        kid->op = kid->op == OP_TRUE ? OP_FALSE : OP_TRUE;
        *out = kid;
    } else if (kid->op == OP_NOT) {
        /* not(not(x)) is x, unknown included */
        *out = kid->kids[0];
        kid->nkids = 0;
        node_free(kid);
    } else {
        struct fnode *nd = node_new(OP_NOT);
        size_t cap = 0;
        add_kid(nd, kid, &cap);
        *out = nd;
    }
    return ST_OK;
}

static int parse_expr(struct parser *p, const struct jdoc_val *j, int depth, struct fnode **out)
{
    if (depth > FILTER_MAX_DEPTH)
        return fail(p, ST_EINVAL, "expression nested deeper than %d levels", FILTER_MAX_DEPTH);
    int rc = count_node(p);
    if (rc != ST_OK)
        return rc;
    if (jdoc_is(j, JDOC_BOOL)) {
        *out = node_new(jdoc_true(j) ? OP_TRUE : OP_FALSE);
        return ST_OK;
    }
    if (!jdoc_is(j, JDOC_OBJECT))
        return fail(p, ST_EINVAL, "expected an expression object or true/false, got %s",
                    lit_jdoc_kind(j));
    const struct jdoc_val *type = jdoc_get(j, "type");
    if (!jdoc_is(type, JDOC_STRING))
        return fail(p, ST_EINVAL, "an expression needs a \"type\" string");
    const char *name = jdoc_str(type, NULL);
    enum fop op = OP_TRUE;
    bool known = false;
    for (size_t k = 0; k < sizeof OPS / sizeof OPS[0] && !known; k++) {
        if (strcmp(OPS[k].name, name) == 0) {
            op = OPS[k].op;
            known = true;
        }
    }
    if (!known) {
        if (strcmp(name, "transform") == 0 || strcmp(name, "apply") == 0 ||
            strcmp(name, "reference") == 0 || strcmp(name, "literal") == 0) {
            char s[72];
            shown(name, s);
            return fail(p, ST_EINVAL, "\"%s\" is not a predicate", s);
        }
        char s[72];
        shown(name, s);
        return fail(p, ST_EINVAL, "unknown expression type \"%s\"", s);
    }
    switch (op) {
    case OP_TRUE:
    case OP_FALSE:
        *out = node_new(op);
        return ST_OK;
    case OP_AND:
    case OP_OR:
        p->nodes--;
        return parse_chain(p, j, op, depth, out);
    case OP_NOT:
        return parse_not(p, j, depth, out);
    default:
        return parse_predicate(p, j, op, out);
    }
}

/* and/or/not levels on the longest path. */
static int tree_depth(const struct fnode *nd)
{
    int d = 0;
    for (size_t k = 0; k < nd->nkids; k++) {
        int kd = tree_depth(nd->kids[k]);
        d = kd > d ? kd : d;
    }
    return nd->nkids > 0 ? d + 1 : 0;
}

/* ---- invariants ---------------------------------------------------------- */

#ifndef NDEBUG
/*
 * What filter_int.h promises of a compiled tree and filter_eval.c relies on
 * unchecked (debug builds, once per parse: O(nodes + values), as the parse):
 * constants only at the root or under nothing; and/or have two kids or more
 * and no constant among them; not has one kid, neither a constant nor a
 * not; a leaf names a column of the schema with its type, a literal in the
 * column's domain (never NaN), and an in-list sorted without duplicates.
 */
static void check_node(const struct fnode *nd, const struct st_column *cols, int ncols, bool root)
{
    switch (nd->op) {
    case OP_TRUE:
    case OP_FALSE:
        assert(root && nd->nkids == 0 && nd->col == -1);
        return;
    case OP_AND:
    case OP_OR:
    case OP_NOT:
        assert(nd->col == -1 && (nd->op == OP_NOT ? nd->nkids == 1 : nd->nkids >= 2));
        for (size_t k = 0; k < nd->nkids; k++) {
            const struct fnode *kid = nd->kids[k];
            assert(kid->op != OP_TRUE && kid->op != OP_FALSE);
            assert(nd->op != OP_NOT || kid->op != OP_NOT);
            check_node(kid, cols, ncols, false);
        }
        return;
    default:
        break;
    }
    assert(nd->nkids == 0 && nd->col >= 0 && nd->col < ncols && nd->type == cols[nd->col].type);
    assert(nd->op <= OP_NOTNAN);
    if (nd->op == OP_SW || nd->op == OP_NSW)
        assert(nd->type == ST_T_STRING);
    if (nd->op == OP_ISNAN || nd->op == OP_NOTNAN)
        assert(nd->type == ST_T_DOUBLE);
    if (nd->op >= OP_LT && nd->op <= OP_NSW) {
        assert(nd->type != ST_T_DOUBLE || !isnan(nd->lit.d));
        assert(nd->type != ST_T_STRING || nd->lit.s != NULL); /* owned, even when empty */
    }
    if (nd->op != OP_IN && nd->op != OP_NIN)
        return;
    const struct fset *s = &nd->set;
    for (size_t k = 0; k < s->n; k++) {
        switch (nd->type) {
        case ST_T_DOUBLE:
            assert(!isnan(s->d[k]) && (k == 0 || s->d[k - 1] < s->d[k]));
            break;
        case ST_T_STRING:
            assert(k == 0 ||
                   st_bytes_cmp(s->s[k - 1].s, s->s[k - 1].slen, s->s[k].s, s->s[k].slen) < 0);
            break;
        default:
            assert(k == 0 || s->i[k - 1] < s->i[k]);
            break;
        }
    }
}

static void check_filter(const struct filter *f, const struct st_column *cols, int ncols)
{
    check_node(f->root, cols, ncols, true);
    assert(f->depth >= 0 && f->depth <= FILTER_MAX_DEPTH);
}
#endif

/* ---- the contract -------------------------------------------------------- */

int filter_parse_jdoc(const struct jdoc_val *expr, const struct st_column *cols, int ncols,
                      struct filter **out, struct st_err *err)
{
    *out = NULL;
    if (expr == NULL)
        return st_errf(err, ST_EINVAL, "filter: missing expression");
    if (ncols < 0 || ncols > ST_COLUMNS_MAX)
        return st_errf(err, ST_EINTERNAL, "filter: bad column count %d", ncols);
    struct parser p = {.cols = cols, .ncols = ncols, .nodes = 0, .err = err};
    expr__lookup_init(&p.names, cols, ncols);
    struct fnode *root = NULL;
    int rc = parse_expr(&p, expr, 1, &root);
    if (rc != ST_OK)
        return rc;
    struct filter *f = xcalloc(1, sizeof *f);
    f->root = root;
    f->depth = tree_depth(root);
    ST_DEBUG_CHECK(check_filter(f, cols, ncols));
    *out = f;
    return ST_OK;
}

int filter_parse(const char *text, size_t len, const struct st_column *cols, int ncols,
                 struct filter **out, struct st_err *err)
{
    *out = NULL;
    struct jdoc_opts opts = {.max_depth = FILTER_JSON_DEPTH, .flags = JDOC_ANY_ROOT};
    struct jdoc_error jerr;
    struct jdoc *d = jdoc_parse(text, len, &opts, &jerr);
    if (d == NULL)
        return st_errf(err, ST_EINVAL, "filter: invalid JSON at line %d column %d: %s", jerr.line,
                       jerr.column, jerr.text);
    int rc = filter_parse_jdoc(jdoc_root(d), cols, ncols, out, err);
    jdoc_free(d);
    return rc;
}

void filter_free(struct filter *f)
{
    if (f == NULL)
        return;
    node_free(f->root);
    free(f);
}

bool filter_is_true(const struct filter *f)
{
    return f->root->op == OP_TRUE;
}

bool filter_is_false(const struct filter *f)
{
    return f->root->op == OP_FALSE;
}

static void columns_of(const struct fnode *nd, bool *used)
{
    if (nd->col >= 0)
        used[nd->col] = true;
    for (size_t k = 0; k < nd->nkids; k++)
        columns_of(nd->kids[k], used);
}

void filter_columns(const struct filter *f, bool *used)
{
    columns_of(f->root, used);
}
