/*
 * filter_int.h - the compiled form of a filter, shared by filter.c (parsing
 * and binding) and filter_eval.c (evaluation and pruning).
 */
#ifndef STRIKE_EXPR_FILTER_INT_H
#define STRIKE_EXPR_FILTER_INT_H

#include <string.h>

#include "common/buf.h"
#include "expr/filter.h"

enum fop {
    OP_TRUE,
    OP_FALSE,
    OP_AND, /* n-ary: chains of one operator are flattened */
    OP_OR,
    OP_NOT,
    OP_LT, /* column OP literal */
    OP_LE,
    OP_GT,
    OP_GE,
    OP_EQ,
    OP_NE,
    OP_SW, /* starts-with */
    OP_NSW,
    OP_IN, /* column in set */
    OP_NIN,
    OP_ISNULL,
    OP_NOTNULL,
    OP_ISNAN,
    OP_NOTNAN,
};

/*
 * A literal in the column's comparison domain: booleans (0/1), ints, longs
 * and timestamps as int64; doubles as double (never NaN); strings as bytes.
 */
struct flit {
    int64_t i;
    double d;
    const char *s;
    uint32_t slen;
};

/* The values of an in/not-in list, sorted ascending and without duplicates. */
struct fset {
    size_t n;
    int64_t *i; /* boolean, int, long, timestamp */
    double *d;
    struct flit *s; /* strings, pointing into `bytes` */
    char *bytes;
};

struct fnode {
    enum fop op;
    int col;           /* leaves: the table column */
    enum st_type type; /* leaves: its type */
    struct flit lit;   /* comparisons and starts-with; lit.s is owned */
    struct fset set;   /* in, not-in */
    struct fnode **kids;
    size_t nkids;
};

struct filter {
    struct fnode *root;
    int depth; /* and/or/not nodes on the longest path: scratch levels for filter_eval */
};

/* Three-valued results, ordered so that AND is min, OR is max and NOT is 2 - x. */
enum { TV_FALSE = 0, TV_UNKNOWN = 1, TV_TRUE = 2 };

/* Index of the first element >= x in a sorted array (n if none). */
size_t filter__lower_i64(const int64_t *a, size_t n, int64_t x);
size_t filter__lower_dbl(const double *a, size_t n, double x);
size_t filter__lower_str(const struct flit *a, size_t n, const char *s, uint32_t len);

#endif
