/*
 * http_parse.c - the request parsing of our own (http_parse.h): pure
 * functions over the strings libmicrohttpd hands us.
 */
#include "http_parse.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "common/hex.h"

bool http_match(const char *pattern, const char *path, struct http_caps *caps)
{
    const char *p = pattern, *s = path;
    int n = 0;
    while (*p != '\0') {
        if (*p != '{') {
            if (*p != *s)
                return false;
            p++, s++;
            continue;
        }
        const char *close = strchr(p, '}');
        if (close == NULL || n == HTTP_MAX_CAPS)
            return false; /* a bad pattern matches nothing (http__routes_check refuses it) */
        bool rest = close == p + 2 && p[1] == '*';
        size_t len = rest ? strlen(s) : strcspn(s, "/");
        if (!rest && len == 0)
            return false;
        if (caps != NULL)
            caps->c[n] = (struct http_cap){p + 1, (size_t)(close - p - 1), s, len};
        n++;
        s += len;
        p = close + 1;
    }
    if (*s != '\0')
        return false;
    if (caps != NULL)
        caps->n = n;
    return true;
}

const struct http_cap *http_cap(const struct http_caps *caps, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < caps->n; i++)
        if (caps->c[i].name_len == len && memcmp(caps->c[i].name, name, len) == 0)
            return &caps->c[i];
    return NULL;
}

enum http_method http_parse_method(const char *m)
{
    if (strcmp(m, "GET") == 0)
        return HM_GET;
    if (strcmp(m, "HEAD") == 0)
        return HM_HEAD;
    if (strcmp(m, "POST") == 0)
        return HM_POST;
    if (strcmp(m, "DELETE") == 0)
        return HM_DELETE;
    return HM_OTHER;
}

bool http_parse_int(const char *s, int64_t *out)
{
    const char *p = s;
    bool neg = *p == '-';
    if (neg)
        p++;
    int64_t v = 0;
    bool ok = *p != '\0' && strlen(p) <= 18;
    for (; ok && *p; p++) {
        ok = *p >= '0' && *p <= '9';
        v = v * 10 + (*p - '0');
    }
    if (ok)
        *out = neg ? -v : v;
    return ok;
}

bool http_json_media_type(const char *ct)
{
    if (ct == NULL)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    static const char jt[] = "application/json";
    if (strncasecmp(ct, jt, sizeof jt - 1) != 0)
        return false;
    const char *p = ct + sizeof jt - 1;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0')
        return true;
    if (*p != ';')
        return false;
    const char *cs = strcasestr(p, "charset=");
    if (cs == NULL)
        return true;
    cs += 8;
    if (*cs == '"')
        cs++;
    return strncasecmp(cs, "utf-8", 5) == 0 || strncasecmp(cs, "utf8", 4) == 0;
}

bool http_rid_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        unsigned char ch = (unsigned char)s[n];
        if (!(isalnum(ch) || strchr("-_.:/+=@", ch) != NULL))
            return false;
    }
    return n > 0 && n < 64;
}

static bool digits(const char **p, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    while (**p >= '0' && **p <= '9') {
        if (*p - s >= 18)
            return false;
        x = x * 10 + (uint64_t)(**p - '0');
        (*p)++;
    }
    *v = x;
    return *p > s;
}

enum http_range http_parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (h == NULL)
        return HTTP_RANGE_NONE;
    while (*h == ' ' || *h == '\t')
        h++;
    if (strncasecmp(h, "bytes=", 6) != 0)
        return HTTP_RANGE_NONE;
    const char *p = h + 6;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strchr(p, ',') != NULL)
        return HTTP_RANGE_NONE; /* several ranges: served whole */
    uint64_t first = 0, last = 0;
    bool suffix = *p == '-', has_last = false;
    if (suffix) {
        p++;
        if (!digits(&p, &last))
            return HTTP_RANGE_NONE;
    } else {
        if (!digits(&p, &first) || *p != '-')
            return HTTP_RANGE_NONE;
        p++;
        has_last = digits(&p, &last);
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != '\0')
        return HTTP_RANGE_NONE;
    if (suffix) {
        if (last == 0 || size == 0)
            return HTTP_RANGE_UNSAT;
        *off = last >= size ? 0 : size - last;
        *len = size - *off;
        return HTTP_RANGE_OK;
    }
    if (has_last && last < first)
        return HTTP_RANGE_NONE; /* invalid, so ignored */
    if (first >= size)
        return HTTP_RANGE_UNSAT;
    uint64_t end = has_last && last < size - 1 ? last : size - 1;
    *off = first;
    *len = end - first + 1;
    return HTTP_RANGE_OK;
}

size_t http_unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r != '\0';) {
        if (r[0] == '%' && r[1] != '\0' && r[2] != '\0') {
            int hi = st_hex_value(r[1]), lo = st_hex_value(r[2]);
            int v = hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
            if (v > 0 && v != '/') {
                *w++ = (char)v;
                r += 3;
                continue;
            }
        }
        *w++ = *r++;
    }
    *w = '\0';
    return (size_t)(w - s);
}
