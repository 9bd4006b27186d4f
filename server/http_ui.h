/*
 * http_ui.h - the deletion vector health page (GET /ui): static files of
 * server/ui compiled into striked as C arrays (ui_assets.c, generated at
 * build time by server/ui/embed.cmake).
 */
#ifndef STRIKE_HTTP_UI_H
#define STRIKE_HTTP_UI_H

#include <stdbool.h>
#include <stddef.h>

struct ui_asset {
    const char *name; /* "index.html", "ui.js", ... */
    const unsigned char *data;
    size_t len;
};

/* The generated table, ended by a NULL name. */
extern const struct ui_asset ui_assets[];

/*
 * The asset for a path after "/ui" ("" and "/" are index.html, "/ui.js" is
 * ui.js): true with its bytes (static, never freed) and Content-Type.
 */
bool http__ui_find(const char *rest, const unsigned char **data, size_t *len, const char **ctype);

#endif
