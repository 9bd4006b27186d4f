/*
 * literal.h - loosely typed values from a wire format (JSON or protobuf), and
 * their coercion to a column type.
 *
 * Both front ends turn what the client sent into a `struct st_literal` and
 * call lit_coerce(), so that HTTP and gRPC accept exactly the same values and
 * word their refusals the same way (docs/API.md "Types"):
 *
 *   boolean    true/false only
 *   int, long  integers only, in range; a number with a fraction or an
 *              exponent is refused even when it is integral (7.0, 7e0)
 *   double     an integer or a finite number (integers round to nearest)
 *   string     a string of valid UTF-8, at most 1 MiB, without U+0000
 *   timestamp  an integer of microseconds, or an RFC 3339 string; within
 *              years 0000 to 9999 (what RFC 3339, the output form, can write)
 *   null       any type; the caller decides whether the column allows it
 */
#ifndef STRIKE_EXPR_LITERAL_H
#define STRIKE_EXPR_LITERAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/jdoc.h"
#include "common/types.h"

/* Timestamps (microseconds) that RFC 3339 can express: 0000-01-01 to 9999-12-31T23:59:59.999999. */
#define LIT_TIMESTAMP_MIN (-62167219200000000LL)
#define LIT_TIMESTAMP_MAX 253402300799999999LL

enum lit_kind { LIT_NULL, LIT_BOOL, LIT_INT, LIT_DOUBLE, LIT_STRING };

/* One wire value. Only the field of `kind` is meaningful; `s` is borrowed. */
struct st_literal {
    enum lit_kind kind;
    bool b;
    int64_t i;
    double d;
    const char *s;
    size_t slen;
};

/* "null", "boolean", "integer", "number" or "string", for messages. */
const char *lit_kind_name(enum lit_kind k);
/* The JSON kind of a value of a jdoc document, for messages: "object", "array", "string",
   "integer", "number", "boolean", "null". */
const char *lit_jdoc_kind(const struct jdoc_val *v);

/*
 * Read a JSON scalar (a value of a jdoc document) into `out`. A string is
 * borrowed from the document's arena (valid until jdoc_free). Objects and
 * arrays are refused ("expected a value, got object"). jdoc refuses U+0000
 * and integers beyond int64 when it parses, so every JSON integer here
 * fits. Returns 0 or ST_EINVAL.
 */
int lit_from_jdoc(const struct jdoc_val *v, struct st_literal *out, struct st_err *err);

/*
 * Coerce `lit` to column type `t` (rules above). On success `out` holds the
 * value; a null literal sets out->null (the caller checks `required`).
 * Strings point into the literal's bytes (no copy). Failures return
 * ST_EINVAL with a message that does not name the column (the caller adds
 * it), e.g. "expected double, got string", "2147483648 is out of range for
 * int", "timestamp 9223372036854775807 is out of range (years 0000 to
 * 9999)", "not an RFC 3339 timestamp: \"...\"", "string longer than 1 MiB",
 * "string contains U+0000", "invalid UTF-8 at byte 3".
 */
int lit_coerce(const struct st_literal *lit, enum st_type t, struct st_value *out,
               struct st_err *err);

/*
 * Offset of the first byte of `s[0..n)` that does not start a well-formed
 * UTF-8 sequence (RFC 3629: no overlongs, no surrogates, nothing above
 * U+10FFFF), or n when all of it is valid.
 */
size_t lit_utf8_check(const char *s, size_t n);

#endif
