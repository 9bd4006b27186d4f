/*
 * http_parse.h - what the HTTP front end parses from a request by itself:
 * the path (route and captures), the method, integer query arguments, the
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

enum http_route {
    RT_OTHER = 0,
    RT_HEALTHZ,
    RT_READYZ,
    RT_METRICS,
    RT_TABLES,
    RT_TABLE,
    RT_CHANGES,
    RT_DELETE,
    RT_SCAN,
    RT_PLAN,
    RT_SNAPSHOTS,
    RT_FILE,
    RT_DV,
    RT_COMPACT,
    RT_EXPIRE,
    RT_ERASURES,
    RT_ERASURE,
    RT_TABLE_HEALTH,
    RT_CDC,
    RT_UI, /* the health page: /ui and /ui/<asset> (http_ui.c) */
    RT__COUNT
};

enum http_method { HM_GET, HM_HEAD, HM_POST, HM_DELETE, HM_OTHER, HM__COUNT };

/* A path matched to a route, with its captures. */
struct http_target {
    enum http_route route;
    char table[ST_NAME_MAX + 1]; /* {t}; "" when absent or longer than ST_NAME_MAX */
    int64_t file_id;             /* {id} of RT_FILE and RT_DV: > 0, or -1 when not one */
    const char *id;              /* {id} of RT_ERASURE, into the path (not terminated) */
    size_t id_len;
};

/* Match the path (no query) to a route; RT_OTHER when none matches. */
void http_parse_target(const char *path, struct http_target *t);

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
