/* http_ui.c - the assets of GET /ui (http_ui.h) and the route that serves them. */
#include "http_ui.h"

#include "http_int.h"

#include <string.h>

static const char *ctype_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot != NULL && strcmp(dot, ".html") == 0)
        return "text/html; charset=utf-8";
    if (dot != NULL && strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    if (dot != NULL && strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    return "application/octet-stream";
}

bool http__ui_find(const char *rest, const unsigned char **data, size_t *len, const char **ctype)
{
    const char *name = rest[0] == '\0' || strcmp(rest, "/") == 0 ? "index.html" : rest + 1;
    if (rest[0] != '\0' && rest[0] != '/')
        return false;
    for (const struct ui_asset *a = ui_assets; a->name != NULL; a++) {
        if (strcmp(a->name, name) == 0) {
            *data = a->data;
            *len = a->len;
            *ctype = ctype_of(a->name);
            return true;
        }
    }
    return false;
}

/* GET /ui: the page's static files, compiled in. */
bool http__fast_ui(struct hreq *r)
{
    const char *url = r->path;
    const unsigned char *data;
    size_t len;
    const char *ctype;
    if (!http__ui_find(url + 3, &data, &len, &ctype)) {
        http__reply_problem(r, 404, "no such resource: %.300s", url);
        return true;
    }
    http__reply_reset(&r->reply);
    r->reply.status = 200;
    r->reply.ctype = ctype;
    r->reply.ext = data;
    r->reply.extlen = len;
    r->reply.ext_free = NULL; /* static */
    http__reply_header_str(r, "Cache-Control", "no-cache");
    http__reply_header_str(r, "X-Content-Type-Options", "nosniff");
    http__reply_header_str(r, "Content-Security-Policy",
                           "default-src 'none'; script-src 'self'; style-src 'self'; "
                           "connect-src 'self'; img-src 'self' data:; form-action 'none'; "
                           "frame-ancestors 'none'; base-uri 'none'");
    return true;
}
