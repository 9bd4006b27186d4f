/*
 * http.h - the HTTP front end on libmicrohttpd (API.md "HTTP endpoints").
 *
 * An internal thread pool on epoll runs the handlers; they never block on
 * anything slower than a cache. Errors are RFC 9457 problem+json.
 */
#ifndef STRIKE_HTTP_H
#define STRIKE_HTTP_H

#include "app.h"
#include "common/err.h"

struct http_server;

/* Bind and start serving. `*port` receives the bound port (useful with port 0). */
int http_start(struct app *app, struct http_server **out, int *port, struct st_err *err);
/* Stop accepting connections; requests in flight continue. */
void http_quiesce(struct http_server *h);
/* Wait up to `grace_ms` for requests in flight, then stop and free. */
void http_stop(struct http_server *h, int grace_ms);

#endif
