/* http.c - the HTTP front end: daemon, routing, problem+json. */
#include "http.h"

#include "common/log.h"
#include "common/xalloc.h"
#include "engine/catalog.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct http_server {
    struct app *app;
    struct MHD_Daemon *d;
    MHD_socket quiesced; /* listen socket handed back by MHD_quiesce_daemon */
    atomic_int inflight;
};

/* Per-request state, created on the first call for the request. */
struct request {
    struct http_server *srv;
};

static const char *status_title(unsigned status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 422: return "Unprocessable Content";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

static void json_escape_into(char *out, size_t cap, const char *s)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 7 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            out[o++] = '\\';
            out[o++] = (char)*p;
        } else if (*p < 0x20) {
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", *p);
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = '\0';
}

static enum MHD_Result send_body(struct MHD_Connection *c, unsigned status, const char *type,
                                 const char *body, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (allow != NULL)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (status == 503)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_problem(struct MHD_Connection *c, unsigned status, const char *detail,
                                    const char *allow)
{
    char esc[1200], body[1400];
    json_escape_into(esc, sizeof esc, detail);
    snprintf(body, sizeof body,
             "{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%u,\"detail\":\"%s\"}",
             status_title(status), status, esc);
    return send_body(c, status, "application/problem+json", body, allow);
}

static enum MHD_Result handle(struct http_server *srv, struct MHD_Connection *c, const char *url,
                              const char *method)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(url, "/healthz") == 0) {
        if (!get)
            return send_problem(c, 405, "use GET on /healthz", "GET, HEAD");
        return send_body(c, 200, "application/json", "{\"status\":\"ok\"}", NULL);
    }
    if (strcmp(url, "/readyz") == 0) {
        if (!get)
            return send_problem(c, 405, "use GET on /readyz", "GET, HEAD");
        if (atomic_load(&srv->app->stopping))
            return send_problem(c, 503, "the server is shutting down", NULL);
        struct st_err err = {0};
        if (cat_ping(srv->app->catalog, &err) != ST_OK)
            return send_problem(c, 503, err.msg, NULL);
        return send_body(c, 200, "application/json", "{\"status\":\"ready\"}", NULL);
    }
    char detail[600];
    snprintf(detail, sizeof detail, "no such resource: %.400s", url);
    return send_problem(c, 404, detail, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    (void)version;
    (void)upload_data;
    struct http_server *srv = cls;
    if (*req_cls == NULL) {
        /* First call: headers only. Answering now would close the connection. */
        struct request *r = xcalloc(1, sizeof *r);
        r->srv = srv;
        *req_cls = r;
        atomic_fetch_add(&srv->inflight, 1);
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0; /* bodies are ignored by these routes */
        return MHD_YES;
    }
    return handle(srv, c, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    (void)toe;
    struct http_server *srv = cls;
    struct request *r = *req_cls;
    if (r != NULL) {
        free(r);
        *req_cls = NULL;
        atomic_fetch_sub(&srv->inflight, 1);
    }
}

/* MHD's own messages; the format string is libmicrohttpd's, not ours. */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    log_warn("http: %s", msg);
}

int http_start(struct app *app, struct http_server **out, int *port, struct st_err *err)
{
    const struct listen_addr *la = &app->cfg->http;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC;
    const char *host = strcmp(la->host, "localhost") == 0 ? "127.0.0.1" : la->host;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)la->port);
    } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)la->port);
        flags |= MHD_USE_IPv6;
    } else {
        return st_errf(err, ST_EINVAL, "http: cannot use address %s", la->host);
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = app->cfg->http_threads > 0 ? (unsigned)app->cfg->http_threads
                                                  : (unsigned)(ncpu > 0 ? ncpu : 2);
    struct http_server *srv = xcalloc(1, sizeof *srv);
    srv->app = app;
    srv->quiesced = MHD_INVALID_SOCKET;
    srv->d = MHD_start_daemon(flags, (uint16_t)la->port, NULL, NULL, on_request, srv,
                              MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                              MHD_OPTION_THREAD_POOL_SIZE, threads,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                              MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                              MHD_OPTION_END);
    if (srv->d == NULL) {
        free(srv);
        return st_errf(err, ST_EIO, "http: cannot listen on %s:%d (in use, or not permitted)",
                       la->host, la->port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : la->port;
    *out = srv;
    return ST_OK;
}

void http_quiesce(struct http_server *h)
{
    if (h != NULL && h->d != NULL && h->quiesced == MHD_INVALID_SOCKET)
        h->quiesced = MHD_quiesce_daemon(h->d);
}

void http_stop(struct http_server *h, int grace_ms)
{
    if (h == NULL)
        return;
    for (int waited = 0; atomic_load(&h->inflight) > 0 && waited < grace_ms; waited += 10) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(h->d);
    if (h->quiesced != MHD_INVALID_SOCKET)
        close(h->quiesced); /* ours once the daemon no longer uses it */
    free(h);
}
