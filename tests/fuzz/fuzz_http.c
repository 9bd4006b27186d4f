/*
 * fuzz_http.c - what our code parses from an HTTP request by itself
 * (server/http_parse.h) and the router over the route table
 * (server/http_table.c), plus the checks the server makes on the values
 * libmicrohttpd hands over: Idempotency-Key, ?table= of the CDC route, the
 * DV query's format, the CDC media types. The input is a request line's
 * target followed by header-like lines; every line is tried as each kind of
 * value. Checked against definitions written independently here:
 *   - a path is %-decoded as MHD's unescape callback does (never into '/' or
 *     NUL), then routed for every method; the route found is the first row
 *     of the table whose pattern matches (a segment-by-segment matcher of
 *     this file), HEAD falls back on a GET row, a method no row of the
 *     pattern has finds none (405) and its Allow names the pattern's
 *     methods; the captures lie in the path, and the pattern filled with
 *     them is the path again, byte for byte;
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

/* Segment by segment: literals equal, {x} any non-empty segment, a last {*} the rest. */
static bool seg_match(const char *pattern, const char *path)
{
    if (pattern[0] != '/' || path[0] != '/')
        return false;
    const char *p = pattern + 1, *s = path + 1;
    for (;;) {
        size_t pn = strcspn(p, "/"), sn = strcspn(s, "/");
        if (pn == 3 && memcmp(p, "{*}", 3) == 0)
            return true; /* the rest, empty or not */
        bool var = pn >= 2 && p[0] == '{' && p[pn - 1] == '}';
        if (var ? sn == 0 : (pn != sn || memcmp(p, s, pn) != 0))
            return false;
        p += pn;
        s += sn;
        if (*p == '\0' || *s == '\0')
            return *p == '\0' && *s == '\0';
        p++, s++; /* both at a '/' */
    }
}

/* The route table's patterns, once. */
static const char *const *patterns(int *n)
{
    static bool init;
    if (!init) {
        struct st_err err = {0};
        if (http__routes_check(&err) != ST_OK)
            abort();
        init = true;
    }
    return http__pattern_names(n);
}

static void check_route(const char *s)
{
    int n;
    const char *const *names = patterns(&n);
    int first = 0;
    for (int i = 1; i < n && first == 0; i++)
        if (seg_match(names[i], s))
            first = i;
    for (int m = 0; m < HM__COUNT; m++) {
        struct http_caps caps = {0};
        int pat = -1;
        const struct http_route *rt = http__route_find(s, (enum http_method)m, &pat, &caps);
        if (pat != first || (first == 0 && rt != NULL))
            abort();
        if (first == 0)
            continue;
        const char *allow = http__pattern_allow(pat);
        const char *mname = http__method_name((enum http_method)m);
        /* the method is allowed iff Allow names it ("GET, HEAD, POST") */
        size_t ml = strlen(mname);
        bool named = false;
        for (const char *a = allow; *a;) {
            size_t al = strcspn(a, ",");
            named |= al == ml && memcmp(a, mname, ml) == 0;
            a += al;
            a += strspn(a, ", ");
        }
        if (named != (rt != NULL) || (m == HM_OTHER && rt != NULL))
            abort();
        if (rt == NULL)
            continue;
        if (strcmp(rt->pattern, names[pat]) != 0 ||
            !((int)rt->method == m || (m == HM_HEAD && rt->method == HM_GET)))
            abort();
        /* the pattern filled with the captures is the path again */
        char again[4096];
        size_t w = 0, k = 0;
        for (const char *p = rt->pattern; *p;) {
            if (*p != '{') {
                again[w++] = *p++;
                continue;
            }
            const char *close = strchr(p, '}');
            if (close == NULL || (int)k >= caps.n)
                abort();
            const struct http_cap *c = &caps.c[k++];
            if (c->name != p + 1 || c->name_len != (size_t)(close - p - 1) || c->s < s ||
                c->s + c->len > s + strlen(s) || w + c->len >= sizeof again)
                abort();
            bool rest = c->name_len == 1 && c->name[0] == '*';
            if (!rest && (c->len == 0 || memchr(c->s, '/', c->len) != NULL))
                abort();
            memcpy(again + w, c->s, c->len);
            w += c->len;
            p = close + 1;
        }
        again[w] = '\0';
        if ((int)k != caps.n || strcmp(again, s) != 0)
            abort();
    }
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
    if (strlen(s) < 3000)
        check_route(s);
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
