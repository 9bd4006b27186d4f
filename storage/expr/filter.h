/*
 * filter.h - Iceberg expression JSON bound to a table schema, evaluated over
 * column batches and against column statistics.
 *
 * Accepted JSON (docs/API.md "Types"), released and newer forms, freely mixed:
 *
 *   true | false | {"type":"true"} | {"type":"false"}
 *   {"type":"and"|"or", "left":E, "right":E}      {"type":"not", "child":E}
 *   {"type":CMP, "term":T, "value":V}             released form
 *   {"type":CMP, "left":X, "right":X}             newer form (one reference, one literal)
 *   {"type":"in"|"not-in", "term":T | "child":R, "values":[V...] | LITS}
 *   {"type":"is-null"|"not-null"|"is-nan"|"not-nan", "term":T | "child":R}
 *
 *   CMP  lt lt-eq gt gt-eq eq not-eq starts-with not-starts-with
 *   T    "column" | R | {"type":"reference","term":"column"}
 *   R    {"type":"reference","name":"column"}
 *   X    R | V | {"type":"literal","value":V[,"data-type":..]}
 *   LITS {"type":"literals","values":[V...][,"data-type":..]}
 *
 * In the newer form a bare string is a literal, not a column. A literal on
 * the left and the column on the right is flipped (5 < c becomes c > 5);
 * starts-with cannot be flipped and needs the column on the left. Literals
 * are typed by their column with lit_coerce() ("data-type" is not consulted).
 * Refused: unknown columns, literals of the wrong type, null literals (use
 * is-null), starts-with on a non-string, is-nan on a non-double; and, as
 * unsupported (ST_EUNSUPPORTED): transforms, functions ("apply"),
 * references by field id, and comparisons of two columns.
 *
 * Semantics: SQL three-valued logic. Every predicate but is-null/not-null is
 * unknown on a null value (not-eq, not-in, not-starts-with, is-nan and
 * not-nan included); not(unknown) is unknown; and/or follow Kleene; a row
 * matches only when the filter is TRUE. Strings compare by UTF-8 bytes;
 * booleans as false < true. Doubles compare as IEEE 754: NaN is neither
 * equal to, less than nor greater than anything (so NaN not-eq 1 and NaN
 * not-in (..) are true), and -0.0 equals 0.0.
 *
 * Limits (ST_EINVAL, precise message): nesting deeper than FILTER_MAX_DEPTH
 * (a chain of one operator, and(and(a,b),c), is one level: it is
 * flattened), more than FILTER_MAX_NODES nodes (predicates and operators, as
 * written), more than
 * FILTER_MAX_VALUES values in one in/not-in list. Every message starts with
 * "filter: ".
 *
 * A parsed filter is immutable and owns its literals; any number of threads
 * may evaluate it at once.
 */
#ifndef STRIKE_EXPR_FILTER_H
#define STRIKE_EXPR_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/jdoc.h"
#include "common/types.h"

#define FILTER_MAX_DEPTH 64
#define FILTER_MAX_NODES 100000
#define FILTER_MAX_VALUES 100000
/*
 * JSON nesting allowed in a filter's text, and in a request body that holds
 * a filter: jansson's limit (JSON_PARSER_MAX_DEPTH), which read these texts
 * before jdoc did. Not jdoc's default of 64: a chain of one operator is one
 * level of FILTER_MAX_DEPTH however deep its JSON nests (and(and(a,b),c)),
 * and such chains of more than 64 operands were always accepted.
 */
#define FILTER_JSON_DEPTH 2048

struct filter;

/*
 * Bind the expression `expr` (a value of a jdoc document; NULL: absent) to
 * cols[0..ncols) and compile it. On success *out is a new filter the caller
 * frees with filter_free(); it keeps no reference to `expr` or `cols`.
 * Returns 0, ST_EINVAL or ST_EUNSUPPORTED.
 */
int filter_parse_jdoc(const struct jdoc_val *expr, const struct st_column *cols, int ncols,
                      struct filter **out, struct st_err *err);

/*
 * The same from JSON text text[0..len) (the gRPC string field), read with
 * jdoc (any value at the top, FILTER_JSON_DEPTH levels). Duplicate object
 * keys and U+0000 are refused; malformed JSON reads
 * "filter: invalid JSON at line L column C: ...".
 */
int filter_parse(const char *text, size_t len, const struct st_column *cols, int ncols,
                 struct filter **out, struct st_err *err);

/* Free a filter; NULL is a no-op. */
void filter_free(struct filter *f);

/* True when the filter is constant TRUE (e.g. {"filter":true}, or {"type":"not","child":false}). */
bool filter_is_true(const struct filter *f);
/* True when the filter is constant FALSE: it matches no row. */
bool filter_is_false(const struct filter *f);

/* Set used[k] = true for every column k the filter reads (used has ncols entries; others
 * untouched). */
void filter_columns(const struct filter *f, bool *used);

/*
 * Evaluate over a batch of n rows. vecs[k] is table column k's vector, of
 * length >= n (only columns the filter reads need be non-NULL). On entry
 * sel[i] != 0 marks candidate rows (0 = skip, e.g. deleted); on return
 * sel[i] == 1 iff row i was a candidate and the filter is TRUE for it, else
 * 0. Vectorised: one pass per predicate over the candidates, in chunks, with
 * and/or narrowing the rows their later operands look at. Allocates only a
 * scratch area per call.
 */
void filter_eval(const struct filter *f, const struct st_colvec *const *vecs, size_t n,
                 uint8_t *sel);

/* What is known about one column over a set of rows (a file or a row group). */
struct col_range {
    bool has_minmax; /* min/max bound every non-null value (strings point elsewhere) */
    struct st_value min, max;
    bool has_null_count;
    uint64_t null_count;
};

/*
 * Pruning: false only when no row among `nrows` can make the filter TRUE,
 * given stats[k] for table column k (NULL, or a NULL stats array, means
 * nothing is known). Conservative where stats cannot tell: double bounds are
 * not trusted to exclude NaN, and a NaN min or max is ignored. Truncated
 * string bounds are fine as long as they remain bounds.
 */
bool filter_may_match(const struct filter *f, const struct col_range *const *stats, uint64_t nrows);

#endif
