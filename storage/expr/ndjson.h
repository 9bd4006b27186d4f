/*
 * ndjson.h - fast JSON text for scan output (one object per row), written
 * straight into a `struct buf` without building a jansson tree.
 *
 * Value forms (docs/API.md "Scan"): int and long as exact integers; double in the
 * shortest form that reads back to the same double (non-finite values,
 * which JSON cannot hold, are written as null); timestamp as RFC 3339 with
 * microseconds and 'Z' ("2026-11-29T13:40:45.123456Z"); boolean as
 * true/false; null as null; strings escaped per RFC 8259.
 */
#ifndef STRIKE_EXPR_NDJSON_H
#define STRIKE_EXPR_NDJSON_H

#include <stddef.h>

#include "common/buf.h"
#include "common/types.h"

/* Longest text ndjson_format_double() writes, NUL included. */
#define NDJSON_DOUBLE_MAX 32

/*
 * Append one JSON object and '\n' to `out`: for j in [0, n), the key
 * cols[idx[j]].name and the value of row `i` of vecs[j] (vecs are in output
 * order, and vecs[j]->type must equal cols[idx[j]].type).
 */
void ndjson_append_row(struct buf *out, const struct st_column *cols, const int *idx, int n,
                       const struct st_colvec *const *vecs, size_t i);

/*
 * Write the shortest decimal that reads back (strtod, round to nearest) to
 * exactly `d`, NUL-terminated; return its length. Among shortest candidates
 * the one nearest `d` is chosen. Plain notation for |d| in [1e-5, 1e16)
 * ("0.1", "123.0", "-0.0": always a '.' so that it reads back as a double),
 * else an exponent ("1e16", "1.5e-7", "4.9e-324"). Always valid JSON;
 * non-finite values give "null".
 */
size_t ndjson_format_double(double d, char out[NDJSON_DOUBLE_MAX]);

/*
 * Append s[0..n) as a JSON string literal, quotes included: '"', '\\' and
 * control characters (below U+0020) escaped (\" \\ \u00XX); valid UTF-8
 * kept as is; each byte of an ill-formed UTF-8 sequence written as \ufffd
 * so that the output is always valid JSON.
 */
void ndjson_append_string(struct buf *out, const char *s, size_t n);

#endif
