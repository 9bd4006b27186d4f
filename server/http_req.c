/*
 * http_req.c - a request of the HTTP front end, below the routes' jobs: its
 * references and its hand-off to a worker (suspend, publish, resume), its
 * reply (status, headers, problem+json or the Iceberg REST error model),
 * and the helpers every job reads its request with (the JSON body, query
 * arguments, path captures). Nothing here knows a route: http_table.c declares them, http_server.c
 * runs them.
 */
#include "http_int.h"

#include "status.h"

#include "common/log.h"
#include "common/xalloc.h"
#include "expr/literal.h"
#include "workers.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- references, workers, suspension ------------------------------------------ */

void http__req_ref(struct hreq *r)
{
    atomic_fetch_add(&r->refs, 1);
}

void http__req_unref(struct hreq *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    admit_release(&r->srv->app->admit, r->admitted);
    if (r->scan != NULL)
        r->scan->free(r->scan);
    http__reply_reset(&r->reply);
    buf_free(&r->body);
    free(r->path);
    free(r->idem_key);
    free(r->if_none_match);
    free(r->range);
    for (size_t i = 0; i < HTTP_MAX_ARGS; i++)
        free(r->args[i].value);
    free(r->problem);
    free(r->early_detail);
    auth_end(&r->auth);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

bool http__suspend_locked(struct hreq *r)
{
    if (atomic_load(&r->srv->cutting))
        return false;
    if (!r->suspended) {
        MHD_suspend_connection(r->c);
        r->suspended = true;
    }
    return true;
}

void http__resume_locked(struct hreq *r)
{
    if (r->suspended) {
        r->suspended = false;
        MHD_resume_connection(r->c);
    }
}

void http__publish(struct hreq *r)
{
    pthread_mutex_lock(&r->mu);
    atomic_store(&r->ready, true);
    http__resume_locked(r);
    pthread_mutex_unlock(&r->mu);
}

struct job {
    struct hreq *r;
    void (*fn)(struct hreq *r);
};

static void run_job(void *arg)
{
    struct job *j = arg;
    struct hreq *r = j->r;
    void (*fn)(struct hreq *) = j->fn;
    free(j);
    struct http_server *srv = r->srv;
    st_log_set_rid(r->rid);
    if (!atomic_load(&r->cancelled))
        fn(r);
    else if (!atomic_load(&r->ready))
        http__reply_problem(r, 503, "the request was cancelled");
    /* The work that expands the body is done: its charge goes back before
       the client can see the answer (and send its next request). */
    admit_release(&srv->app->admit, r->admitted);
    r->admitted = 0;
    if (!atomic_load(&r->ready))
        http__publish(r);
    st_log_set_rid(NULL);
    http__req_unref(r);
    atomic_fetch_sub(&srv->jobs, 1);
}

bool http__submit(struct hreq *r, void (*fn)(struct hreq *r))
{
    struct http_server *srv = r->srv;
    struct job *j = xmalloc(sizeof *j);
    j->r = r;
    j->fn = fn;
    http__req_ref(r);
    atomic_fetch_add(&srv->jobs, 1);
    if (workers_submit(srv->app->workers, run_job, j))
        return true;
    atomic_fetch_sub(&srv->jobs, 1);
    free(j);
    http__req_unref(r);
    http__metrics_busy(srv->m);
    return false;
}

/* ---- replies ------------------------------------------------------------------ */

unsigned http__status_of(int code)
{
    return status_http(code);
}

static const char *status_title(unsigned status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 416:
        return "Range Not Satisfiable";
    case 422:
        return "Unprocessable Content";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 507:
        return "Insufficient Storage";
    default:
        return "Error";
    }
}

void http__reply_reset(struct hreply *p)
{
    for (int i = 0; i < p->nhdr; i++)
        if (p->owned & (1u << i))
            free((char *)p->hdr[i].value);
    free(p->body);
    if (p->ext_free != NULL)
        p->ext_free(p->ext_cls);
    if (p->fd >= 0)
        close(p->fd);
    memset(p, 0, sizeof *p);
    p->fd = -1;
}

void http__reply_body(struct hreq *r, unsigned status, const char *ctype, char *body, size_t len)
{
    http__reply_reset(&r->reply);
    r->reply.status = status;
    r->reply.ctype = ctype;
    r->reply.body = body;
    r->reply.len = body ? len : 0;
}

void http__reply_json(struct hreq *r, unsigned status, char *body)
{
    http__reply_body(r, status, "application/json", body, body ? strlen(body) : 0);
}

void http__reply_header_str(struct hreq *r, const char *name, const char *v)
{
    struct hreply *p = &r->reply;
    if (p->nhdr >= HTTP_MAX_HEADERS)
        return;
    size_t len = strlen(v);
    struct hheader *h = &p->hdr[p->nhdr++];
    h->name = name;
    if (p->pool_used + len + 1 <= sizeof p->pool) {
        char *dst = p->pool + p->pool_used;
        memcpy(dst, v, len + 1);
        p->pool_used = (uint16_t)(p->pool_used + len + 1);
        h->value = dst;
    } else {
        h->value = xstrndup(v, len);
        p->owned = (uint8_t)(p->owned | 1u << (p->nhdr - 1));
    }
}

void http__reply_header(struct hreq *r, const char *name, const char *fmt, ...)
{
    char v[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    if (n >= 0)
        http__reply_header_str(r, name, v);
}

void http__reply_header_i64(struct hreq *r, const char *name, int64_t v)
{
    char buf[24], *e = buf + sizeof buf, *p = e;
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    *--p = '\0';
    do {
        *--p = (char)('0' + m % 10);
        m /= 10;
    } while (m != 0);
    if (v < 0)
        *--p = '-';
    http__reply_header_str(r, name, p);
}

/* The Iceberg REST error type a status stands for when the job named none. */
static const char *iceberg_type(unsigned status)
{
    switch (status) {
    case 400:
        return "BadRequestException";
    case 401:
        return "NotAuthorizedException";
    case 403:
        return "ForbiddenException";
    case 404:
        return "NotFoundException";
    case 405:
    case 501:
        return "UnsupportedOperationException";
    case 406:
        return "NotAcceptableException";
    case 409:
        return "CommitFailedException";
    case 413:
    case 415:
    case 416:
    case 422:
        return "BadRequestException";
    case 503:
        return "ServiceUnavailableException";
    default:
        return status >= 500 ? "ServerErrorException" : "RESTException";
    }
}

/* The headers an error of `status` carries whatever its model. */
static void error_headers(struct hreq *r, unsigned status)
{
    if (status == 405)
        http__reply_header(r, "Allow", "%s", http__pattern_allow(r->pattern));
    if (status == 401)
        http__reply_header_str(r, "WWW-Authenticate", "Bearer realm=\"strike\"");
    if (status == 503)
        http__reply_header(r, "Retry-After", "1");
}

/* {"error":{"message","type","code"}}: what Iceberg's REST clients parse (ErrorModel). */
static void reply_iceberg(struct hreq *r, unsigned status, const char *type, const char *detail)
{
    json_t *o = json_pack("{s:{s:s, s:s, s:i}}", "error", "message", detail, "type", type, "code",
                          (int)status);
    char *body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (body == NULL) /* the detail was not valid UTF-8 */
        body = xasprintf("{\"error\":{\"message\":\"(the detail could not be encoded)\","
                         "\"type\":\"%s\",\"code\":%u}}",
                         type, status);
    http__reply_json(r, status, body);
    error_headers(r, status);
}

void http__reply_iceberg(struct hreq *r, unsigned status, const char *type, const char *fmt, ...)
{
    char detail[ST_ERR_MSG_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    reply_iceberg(r, status, type, detail);
}

void http__reply_problem(struct hreq *r, unsigned status, const char *fmt, ...)
{
    char detail[ST_ERR_MSG_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    if (r->iceberg) {
        reply_iceberg(r, status, iceberg_type(status), detail);
        return;
    }
    json_t *o = json_pack("{s:s, s:s, s:i, s:s}", "type", "about:blank", "title",
                          status_title(status), "status", (int)status, "detail", detail);
    char *body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (body == NULL) /* the detail was not valid UTF-8 */
        body = xasprintf("{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%u,\"detail\":"
                         "\"(the detail could not be encoded)\"}",
                         status_title(status), status);
    http__reply_body(r, status, "application/problem+json", body, strlen(body));
    error_headers(r, status);
}

void http__reply_err(struct hreq *r, int code, const struct st_err *err)
{
    unsigned status = http__status_of(code);
    const char *msg = err != NULL && err->msg[0] ? err->msg : st_strerror(code);
    if (status_redacted(code)) {
        /* The catalog's and the system's own words (socket paths, SQL) stay in
           the log, under the request id the client also has. */
        log_warn("request %s: %s", r->rid, msg);
        http__reply_problem(r, status, "%s (request %s)", status_public(code, msg), r->rid);
        return;
    }
    if (code == ST_EGONE && strstr(msg, "expired") == NULL)
        http__reply_problem(r, status, "%s (expired)", msg);
    else
        http__reply_problem(r, status, "%s", msg);
}

void http__reply_replayed(struct hreq *r)
{
    http__reply_header_str(r, "Idempotent-Replayed", "true");
}

/* ---- the request's body, arguments and captures ------------------------------ */

/* The body was not JSON: where and why, in the words of both parsers. */
static void reply_bad_json(struct hreq *r, int line, int column, const char *text)
{
    http__reply_problem(r, 400, "invalid JSON at line %d column %d: %s", line, column, text);
}

struct jdoc *http__body_jdoc(struct hreq *r, bool empty_ok, unsigned max_depth)
{
    const void *text = r->body.data;
    size_t len = r->body.len;
    if (len == 0) {
        if (!empty_ok) {
            http__reply_problem(r, 400, "the request needs a JSON object as its body");
            return NULL;
        }
        text = "{}";
        len = 2;
    }
    /* jdoc refuses U+0000 in every string (docs/API.md "Types"), keys included. */
    struct jdoc_opts opts = {.max_depth = max_depth};
    struct jdoc_error je;
    struct jdoc *d = jdoc_parse(text, len, &opts, &je);
    if (d == NULL) {
        reply_bad_json(r, je.line, je.column, je.text);
        return NULL;
    }
    if (!jdoc_is(jdoc_root(d), JDOC_OBJECT)) {
        http__reply_problem(r, 400, "the body must be a JSON object, got %s",
                            lit_jdoc_kind(jdoc_root(d)));
        jdoc_free(d);
        return NULL;
    }
    return d;
}

static bool field_known(const char *const *allowed, const char *key)
{
    for (const char *const *a = allowed; *a != NULL; a++)
        if (strcmp(*a, key) == 0)
            return true;
    return false;
}

static void reply_unknown_field(struct hreq *r, const char *where, const char *key)
{
    http__reply_problem(r, 400, "%s%sunknown field \"%.100s\"", where ? where : "",
                        where ? ": " : "", key);
}

bool http__check_fields(struct hreq *r, const struct jdoc_val *o, const char *const *allowed,
                        const char *where)
{
    for (size_t i = 0; i < jdoc_size(o); i++) {
        const char *key = jdoc_member(o, i)->key.u.s;
        if (!field_known(allowed, key)) {
            reply_unknown_field(r, where, key);
            return false;
        }
    }
    return true;
}

bool http__opt_int(struct hreq *r, const struct jdoc_val *o, const char *name, bool *has,
                   int64_t *v)
{
    const struct jdoc_val *j = jdoc_get(o, name);
    *has = false;
    if (j == NULL || jdoc_is(j, JDOC_NULL))
        return true;
    if (!jdoc_is(j, JDOC_INT)) {
        http__reply_problem(r, 400, "%s: expected an integer >= 0, got %s", name, lit_jdoc_kind(j));
        return false;
    }
    *has = true;
    *v = j->u.i;
    return true;
}

const struct jdoc_val *http__opt_value(const struct jdoc_val *o, const char *name)
{
    const struct jdoc_val *j = jdoc_get(o, name);
    return j == NULL || jdoc_is(j, JDOC_NULL) ? NULL : j;
}

bool http__opt_string(struct hreq *r, const struct jdoc_val *o, const char *name, const char **out,
                      const char *where)
{
    const struct jdoc_val *j = jdoc_get(o, name);
    *out = NULL;
    if (j == NULL || jdoc_is(j, JDOC_NULL))
        return true;
    if (!jdoc_is(j, JDOC_STRING)) {
        http__reply_problem(r, 400, "%s%s%s: expected a string, got %s", where ? where : "",
                            where ? "." : "", name, lit_jdoc_kind(j));
        return false;
    }
    if (memchr(j->u.s, '\0', j->n) != NULL) { /* jdoc refuses U+0000; kept as the contract */
        http__reply_problem(r, 400, "%s%s%s: contains U+0000", where ? where : "", where ? "." : "",
                            name);
        return false;
    }
    *out = j->u.s;
    return true;
}

const char *http__query(const struct hreq *r, const char *name)
{
    for (size_t i = 0; i < HTTP_MAX_ARGS; i++) /* a capture's name goes on with '}' */
        if (r->args[i].name != NULL && strcmp(r->args[i].name, name) == 0)
            return r->args[i].value;
    return NULL;
}

bool http__query_count(struct hreq *r, const char *name, struct svc_count *out)
{
    const char *s = http__query(r, name);
    out->has = false;
    out->v = 0;
    if (s == NULL)
        return true;
    int64_t v;
    if (!http_parse_int(s, &v)) {
        http__reply_problem(r, 400, "%s: expected an integer >= 0, got \"%.40s\"", name, s);
        return false;
    }
    out->has = true;
    out->v = v;
    return true;
}

const char *http__capture(const struct hreq *r, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < HTTP_MAX_ARGS; i++) /* a query name ends there */
        if (r->args[i].name != NULL && strncmp(r->args[i].name, name, n) == 0 &&
            r->args[i].name[n] == '}')
            return r->args[i].value;
    return NULL;
}
