/*
 * http_parse.h - what the HTTP front end parses from a request by itself:
 * the path against a route pattern (captures), the method, integer query arguments, the
 * JSON media type, X-Request-Id, Range and the path's %-escapes. Pure
 * functions over strings (no MHD, no allocation): http_server.c and
 * http_files.c use them, and tests/fuzz/fuzz_http.c fuzzes them.
 */
#ifndef STRIKE_HTTP_PARSE_H
#define STRIKE_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/types.h"

enum http_method { HM_GET, HM_HEAD, HM_POST, HM_DELETE, HM_OTHER, HM__COUNT };

/*
 * A path against a route pattern (server/http_table.c): literal bytes, `{name}`
 * for one non-empty segment (no '/'), and a final `{*}` for the rest of the
 * path, possibly empty. Captures point into the path (not terminated).
 */
#define HTTP_MAX_CAPS 4
struct http_caps {
    int n;
    struct http_cap {
        const char *name; /* into the pattern, after '{' */
        size_t name_len;
        const char *s; /* into the path */
        size_t len;
    } c[HTTP_MAX_CAPS];
};

/* Does `path` (no query) match `pattern`? Fills *caps on a match (NULL: not wanted). */
bool http_match(const char *pattern, const char *path, struct http_caps *caps);

/* The capture named `name` of a match, or NULL. */
const struct http_cap *http_cap(const struct http_caps *caps, const char *name);

enum http_method http_parse_method(const char *m);

/* A decimal integer with an optional '-', at most 18 digits; false otherwise. */
bool http_parse_int(const char *s, int64_t *v);

/* application/json, any case, with optional parameters; a charset must be UTF-8. */
bool http_json_media_type(const char *ct);

/* An X-Request-Id we keep: 1 to 63 of [A-Za-z0-9-_.:/+=@]. */
bool http_rid_valid(const char *s);

/*
 * Range (RFC 9110 section 14) on a file of `size` bytes: one range of bytes,
 * "a-b", "a-" or "-n". RANGE_NONE: absent, malformed, another unit or several
 * ranges (the whole file is served); RANGE_UNSAT: 416.
 */
enum http_range { HTTP_RANGE_NONE, HTTP_RANGE_OK, HTTP_RANGE_UNSAT };
enum http_range http_parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len);

/*
 * Decode the %-escapes of a path segment or query argument in place, except
 * %2F and %00 (and malformed ones), which are kept as they are; the new length.
 */
size_t http_unescape(char *s);

#endif
