/* http_ui.c - the assets of GET /ui (http_ui.h). */
#include "http_ui.h"

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
