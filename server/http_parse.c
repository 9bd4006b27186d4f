/*
 * http_parse.c - the request parsing of our own (http_parse.h): pure
 * functions over the strings libmicrohttpd hands us.
 */
#include "http_parse.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "common/hex.h"

/* Next path segment after *p (which points at a '/'); false at the end. */
static bool segment(const char **p, const char **s, size_t *n)
{
    if (**p != '/')
        return false;
    *s = *p + 1;
    const char *e = strchr(*s, '/');
    *n = e ? (size_t)(e - *s) : strlen(*s);
    *p = *s + *n;
    return true;
}

static bool seg_is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* The route of /v1/tables/{t}/... from its k segments after "/v1/tables". */
static enum http_route tables_route(int k, const char *const *s, const size_t *n)
{
    static const struct {
        const char *name;
        enum http_route rt;
    } subs[] = {{"changes", RT_CHANGES}, {"delete", RT_DELETE},       {"scan", RT_SCAN},
                {"plan", RT_PLAN},       {"snapshots", RT_SNAPSHOTS}, {"compact", RT_COMPACT},
                {"expire", RT_EXPIRE},   {"erasures", RT_ERASURES},   {"health", RT_TABLE_HEALTH}};
    if (k == 0)
        return RT_TABLES;
    if (k == 1)
        return RT_TABLE;
    if (k == 2) {
        for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
            if (seg_is(s[1], n[1], subs[i].name))
                return subs[i].rt;
        return RT_OTHER;
    }
    if (k == 3 && seg_is(s[1], n[1], "files"))
        return RT_FILE;
    if (k == 3 && seg_is(s[1], n[1], "erasures"))
        return RT_ERASURE;
    if (k == 4 && seg_is(s[1], n[1], "files") && seg_is(s[3], n[3], "dv"))
        return RT_DV;
    return RT_OTHER;
}

void http_parse_target(const char *url, struct http_target *t)
{
    memset(t, 0, sizeof *t);
    t->route = RT_OTHER;
    if (strcmp(url, "/healthz") == 0) {
        t->route = RT_HEALTHZ;
    } else if (strcmp(url, "/readyz") == 0) {
        t->route = RT_READYZ;
    } else if (strcmp(url, "/metrics") == 0) {
        t->route = RT_METRICS;
    } else if (strcmp(url, "/v1/cdc/debezium") == 0) {
        t->route = RT_CDC;
    } else if (strncmp(url, "/ui", 3) == 0 && (url[3] == '\0' || url[3] == '/')) {
        t->route = RT_UI;
    } else if (strncmp(url, "/v1/tables", 10) == 0 && (url[10] == '\0' || url[10] == '/')) {
        const char *p = url + 10, *s[4] = {0};
        size_t n[4] = {0};
        int k = 0;
        while (k < 4 && segment(&p, &s[k], &n[k]))
            k++;
        bool empty = false;
        for (int i = 0; i < k; i++)
            empty |= n[i] == 0;
        if (*p != '\0' || empty)
            return;
        t->route = tables_route(k, s, n);
        if (t->route == RT_OTHER || t->route == RT_TABLES)
            return;
        if (n[0] <= ST_NAME_MAX) {
            memcpy(t->table, s[0], n[0]);
            t->table[n[0]] = '\0';
        }
        if (t->route == RT_FILE || t->route == RT_DV) {
            int64_t id = 0;
            bool ok = n[2] > 0 && n[2] <= 18;
            for (size_t i = 0; ok && i < n[2]; i++) {
                ok = s[2][i] >= '0' && s[2][i] <= '9';
                id = id * 10 + (s[2][i] - '0');
            }
            t->file_id = ok && id > 0 ? id : -1;
        }
        if (t->route == RT_ERASURE) {
            t->id = s[2];
            t->id_len = n[2];
        }
    }
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
