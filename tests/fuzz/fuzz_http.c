/*
 * fuzz_http.c - what our code parses from an HTTP request by itself
 * (server/http_parse.h), plus the checks http_server.c makes on the values
 * libmicrohttpd hands over: Idempotency-Key, ?table= of the CDC route, the
 * DV query's format, the CDC media types. The input is a request line's
 * target followed by header-like lines; every line is tried as each kind of
 * value. Checked against definitions written independently here:
 *   - a path is %-decoded as MHD's unescape callback does (never into '/' or
 *     NUL), then routed; a route's captures lie in the path, and the route's
 *     pattern (http__route_pattern) filled with them routes back to the same
 *     route and captures;
 *   - integers: exactly ^-?[0-9]{1,18}$, with strtoll's value;
 *   - a satisfiable Range lies inside the file;
 *   - accepted X-Request-Id and Idempotency-Key values have their length and
 *     alphabet; accepted JSON media types start with application/json.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdc.h"
#include "engine/engine.h"
#include "http_int.h"

static size_t count_char(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

/* The pattern of rt with {t} and {id} filled in. */
static void render(enum http_route rt, const char *table, const char *id, char *out, size_t cap)
{
    const char *p = http__route_pattern(rt);
    size_t w = 0;
    while (*p && w + 1 < cap) {
        const char *fill = NULL;
        if (strncmp(p, "{t}", 3) == 0)
            fill = table, p += 3;
        else if (strncmp(p, "{id}", 4) == 0)
            fill = id, p += 4;
        if (fill == NULL) {
            out[w++] = *p++;
            continue;
        }
        size_t n = strlen(fill);
        if (n > cap - 1 - w)
            n = cap - 1 - w;
        memcpy(out + w, fill, n);
        w += n;
    }
    out[w] = '\0';
}

static void check_path(char *s)
{
    size_t before = strlen(s), slashes = count_char(s, '/');
    bool escapes = strchr(s, '%') != NULL;
    char *orig = escapes ? NULL : strdup(s);
    size_t n = http_unescape(s);
    if (n != strlen(s) || n > before || count_char(s, '/') != slashes)
        abort();
    if (orig != NULL && strcmp(orig, s) != 0) /* nothing to decode: unchanged */
        abort();
    free(orig);

    char *q = strchr(s, '?'); /* MHD hands the path without its query */
    if (q != NULL)
        *q = '\0';
    struct http_target t;
    http_parse_target(s, &t);
    if (t.route >= RT__COUNT)
        abort();
    bool has_table = t.route != RT_OTHER && t.route != RT_TABLES && t.route != RT_HEALTHZ &&
                     t.route != RT_READYZ && t.route != RT_METRICS && t.route != RT_CDC &&
                     t.route != RT_UI;
    if (!has_table && (t.table[0] != '\0' || t.file_id != 0 || t.id != NULL))
        abort();
    if (!has_table)
        return;
    /* {t} is the segment after /v1/tables/ */
    const char *seg = s + strlen("/v1/tables/");
    size_t seglen = strcspn(seg, "/");
    if (strncmp(s, "/v1/tables/", 11) != 0 || seglen == 0)
        abort();
    if (t.table[0] != '\0' && (strlen(t.table) != seglen || memcmp(t.table, seg, seglen) != 0))
        abort();
    if (t.table[0] == '\0' && seglen <= ST_NAME_MAX)
        abort();
    char id[32] = "";
    if (t.route == RT_FILE || t.route == RT_DV) {
        if (t.file_id == 0 || t.file_id < -1)
            abort();
        if (t.file_id > 0)
            snprintf(id, sizeof id, "%lld", (long long)t.file_id);
    } else if (t.file_id != 0) {
        abort();
    }
    if (t.route == RT_ERASURE) {
        if (t.id == NULL || t.id < s || t.id + t.id_len > s + strlen(s) || t.id_len == 0 ||
            memchr(t.id, '/', t.id_len) != NULL)
            abort();
        snprintf(id, sizeof id, "%.*s", (int)(t.id_len < 31 ? t.id_len : 31), t.id);
    } else if (t.id != NULL) {
        abort();
    }
    /* the pattern filled with the captures routes back to them */
    if (t.table[0] == '\0' || ((t.route == RT_FILE || t.route == RT_DV) && t.file_id < 0) ||
        (t.route == RT_ERASURE && t.id_len > 31))
        return;
    char again[512];
    render(t.route, t.table, id, again, sizeof again);
    struct http_target t2;
    http_parse_target(again, &t2);
    if (t2.route != t.route || strcmp(t2.table, t.table) != 0 || t2.file_id != t.file_id ||
        t2.id_len != (t.route == RT_ERASURE ? t.id_len : 0))
        abort();
}

/* ^-?[0-9]{1,18}$ */
static bool is_int(const char *s)
{
    const char *p = s + (*s == '-');
    size_t n = strlen(p);
    return n >= 1 && n <= 18 && strspn(p, "0123456789") == n;
}

static void check_value(const char *v, uint64_t size)
{
    int64_t x = 0;
    bool ok = http_parse_int(v, &x);
    if (ok != is_int(v) || (ok && x != strtoll(v, NULL, 10)))
        abort();

    uint64_t off = 0, len = 0;
    enum http_range k = http_parse_range(v, size, &off, &len);
    if (k == HTTP_RANGE_OK && (len == 0 || off >= size || len > size - off))
        abort();
    if (k != HTTP_RANGE_NONE && strncasecmp(v + strspn(v, " \t"), "bytes=", 6) != 0)
        abort();

    if (http_json_media_type(v) && strncasecmp(v + strspn(v, " \t"), "application/json", 16) != 0)
        abort();
    (void)cdc_media_ok(v);
    (void)cdc_media_ndjson(v);

    size_t n = strlen(v);
    if (http_rid_valid(v)) {
        if (n == 0 || n > 63)
            abort();
        for (size_t i = 0; i < n; i++)
            if (!isalnum((unsigned char)v[i]) && strchr("-_.:/+=@", v[i]) == NULL)
                abort();
    }
    if (engine_idem_key_valid(v)) {
        if (n == 0 || n > ENGINE_IDEM_KEY_MAX)
            abort();
        for (size_t i = 0; i < n; i++)
            if (v[i] < 0x21 || v[i] > 0x7e)
                abort();
    }
    /* ?table= of the CDC route, ?format= of the DV route */
    if (n <= ST_NAME_MAX && st_name_valid(v) && !isalpha((unsigned char)v[0]) && v[0] != '_')
        abort();
    struct st_err err = {0};
    enum dv_format f;
    if (engine_dv_format(v, &f, &err) != ST_OK && err.msg[0] == '\0')
        abort();

    enum http_method m = http_parse_method(v);
    if (m != HM_OTHER && strcmp(http__method_name(m), v) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t sizes[] = {0, 1, 2, 1000, 1ull << 62};
    char *line = malloc(size + 1);
    const uint8_t *p = data, *end = data + size;
    size_t k = 0;
    while (p <= end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        memcpy(line, p, n);
        line[n] = '\0'; /* a NUL inside ends the value, as in a C string from MHD */
        check_value(line, sizes[k++ % (sizeof sizes / sizeof sizes[0])]);
        check_path(line);
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    free(line);
    return 0;
}
