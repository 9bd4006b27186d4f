/*
 * row.h - rows addressed by column name, from name/value pairs (a JSON
 * object's members, the gRPC map<string, Value>), validated against a schema.
 *
 * Error messages name the column and leave the row to the caller, who
 * prefixes "row 3: " or "changes[2].key: " with st_err_prefix().
 */
#ifndef STRIKE_EXPR_ROW_H
#define STRIKE_EXPR_ROW_H

#include <stddef.h>

#include "common/err.h"
#include "common/types.h"
#include "expr/literal.h"

enum row_mode {
    ROW_FULL, /* every column: a missing nullable column is null, a missing required one an error */
    ROW_KEY,  /* exactly the primary-key columns; any other column is refused */
};

/*
 * Decode n pairs (names[k], lits[k]) against cols[0..ncols): the members of
 * a JSON object (HTTP: the names are a jdoc document's keys, the literals
 * from lit_from_jdoc) or a gRPC map<string, Value>. Names are
 * NUL-terminated. ROW_FULL fills out[0..ncols) in table order; ROW_KEY
 * fills out[0..npk) in key order (out[j] is column pk[j]) and refuses a
 * table with no key. Strings point into the literals. Messages: `column
 * "amount": expected double, got string`, `unknown column "x"`, `column
 * "id" is required` (missing, or null in a required column), `column
 * "amount" is not part of the primary key`, `duplicate column "x"` (a name
 * given twice). Returns 0 or ST_EINVAL; `out` is unspecified on failure.
 */
int row_from_literals(const char *const *names, const struct st_literal *lits, size_t n,
                      const struct st_column *cols, int ncols, const int *pk, int npk,
                      enum row_mode mode, struct st_value *out, struct st_err *err);

/*
 * Columns indexed by name once, for decoding many rows of one table (a
 * request's changes): row_from_literals indexes them again on every call,
 * which on a wide table costs more than the row. cols must outlive it.
 */
struct row_names;
struct row_names *row_names_new(const struct st_column *cols, int ncols);
void row_names_free(struct row_names *rn);
/* row_from_literals with the columns of `rn`. */
int row_from_literals_idx(const struct row_names *rn, const char *const *names,
                          const struct st_literal *lits, size_t n, const int *pk, int npk,
                          enum row_mode mode, struct st_value *out, struct st_err *err);

#endif
