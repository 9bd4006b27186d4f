/*
 * http.h - the HTTP front end on libmicrohttpd (docs/API.md "HTTP endpoints").
 *
 * An internal thread pool on epoll runs the handlers; they never block on
 * anything slower than a cache: engine calls run on app->workers while the
 * connection is suspended. Errors are RFC 9457 problem+json.
 *
 * Files: http_table.c (the route table), http_server.c (daemon, routing,
 * bodies, shutdown), http_req.c (a request: replies, body, arguments),
 * http_routes.c (JSON endpoints), http_maint.c (expiry, health),
 * http_scan.c (NDJSON streaming), http_files.c (Parquet files with Range,
 * DVs), http_metrics.c (Prometheus), http_ui.c (the health page),
 * http_int.h (their shared internals; MHD types stay there).
 */
#ifndef STRIKE_HTTP_H
#define STRIKE_HTTP_H

#include "app.h"
#include "common/err.h"

struct http_server;

/*
 * Bind app->cfg->http and start serving. `*port` receives the bound port
 * (useful with port 0). On failure nothing is left running. The caller
 * keeps `app` (its engine and workers) alive until http_stop returns.
 */
int http_start(struct app *app, struct http_server **out, int *port, struct st_err *err);
/*
 * Wait up to `grace_ms` for requests in flight (streaming scans included),
 * then cut the rest, stop the daemon, wait for worker jobs that still hold
 * requests, and free. NULL ok.
 */
void http_stop(struct http_server *h, int grace_ms);

/*
 * An erasure's receipt as the HTTP API answers it (docs/API.md
 * "Maintenance"; {} for an erasure that has recorded nothing yet); caller
 * frees. http_render.c; also gRPC's EraseResponse.receipt_json, which is
 * the receipt as HTTP returns it.
 */
struct engine_erasure;
char *http__erasure_json(const struct engine_erasure *r);

/*
 * Print the route table, one line per route and method:
 * "http METHOD PATTERN SCOPE TABLE_FROM" (`striked --list-routes`).
 */
void http_list_routes(void *out /* FILE* */);

#endif
