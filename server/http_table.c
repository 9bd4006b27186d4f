/*
 * http_table.c - the HTTP route table: every route strike answers, declared
 * once. A row is one method on one path pattern, with everything the server
 * needs to know before it runs anything: the scope a token needs and where
 * the table it applies to comes from (auth.h), the query names it accepts,
 * whether its body is read (and as what) and what a byte of it is charged
 * against the in-flight budget (admit.h), whether it takes an
 * Idempotency-Key, the job that answers it on a worker, and a fast answer
 * tried first on the event thread. The router (http__route_find), the
 * Allow header, the access log's and the metrics' route names, the audit
 * lines' operation names and `striked --list-routes` all come from here.
 *
 * Adding a route: write its job (a `void f(struct hreq *r)` that parses what
 * it needs, calls the service and leaves its answer in r->reply), declare it
 * in http_int.h, and add its row below. Nothing else names routes.
 */
#include "http_int.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

const char *const HTTP_ANY_QUERY[] = {"*", NULL};

static const char *const q_dv[] = {"snapshot", "format", NULL};
static const char *const q_page[] = {"limit", "after", NULL};
static const char *const q_cdc[] = {"table", NULL};
static const char *const q_ice_config[] = {"warehouse", NULL};
static const char *const q_ice_ns[] = {"parent", "pageToken", "pageSize", NULL};
static const char *const q_ice_page[] = {"pageToken", "pageSize", NULL};
static const char *const q_ice_load[] = {"snapshots", NULL};

#define OPEN AUTH_OPEN, AUTH_TABLE_NONE
#define ON_PATH(scope) scope, AUTH_TABLE_PATH
#define ANY_TABLE(scope) scope, AUTH_TABLE_NONE

/* clang-format off */
static const struct http_route routes[] = {
    /* method     pattern                          scope, table from        query           flags                              charge           job                     fast */
    /* open: no table data (docs/API.md "Auth"; README "Security") */
    {HM_GET,    "/healthz",                        OPEN,                    HTTP_ANY_QUERY, HTTP_WHILE_STOPPING,               0,               NULL,                   http__fast_healthz},
    {HM_GET,    "/readyz",                         OPEN,                    HTTP_ANY_QUERY, 0,                                 0,               http__job_readyz,       NULL},
    {HM_GET,    "/metrics",                        OPEN,                    HTTP_ANY_QUERY, 0,                                 0,               NULL,                   http__fast_metrics},
    {HM_GET,    "/ui",                             OPEN,                    NULL,           0,                                 0,               NULL,                   http__fast_ui},
    {HM_GET,    "/ui/{*}",                         OPEN,                    NULL,           0,                                 0,               NULL,                   http__fast_ui},
    /* tables: the list shows only the tables the token may read; create checks the body's table */
    {HM_GET,    "/v1/tables",                      ANY_TABLE(AUTH_READ),    NULL,           0,                                 0,               http__job_list_tables,  NULL},
    {HM_POST,   "/v1/tables",                      AUTH_ADMIN, AUTH_TABLE_BODY, NULL,       HTTP_JSON_BODY | HTTP_MUTATES,     ADMIT_X_JSON,    http__job_create_table, NULL},
    {HM_GET,    "/v1/tables/{t}",                  ON_PATH(AUTH_READ),      NULL,           0,                                 0,               http__job_get_table,    NULL},
    {HM_DELETE, "/v1/tables/{t}",                  ON_PATH(AUTH_ADMIN),     NULL,           HTTP_MUTATES,                      0,               http__job_drop_table,   NULL},
    {HM_POST,   "/v1/tables/{t}/schema",           ON_PATH(AUTH_ADMIN),     NULL,           HTTP_JSON_BODY | HTTP_MUTATES,     ADMIT_X_JSON,    http__job_schema,       NULL},
    /* writes */
    {HM_POST,   "/v1/tables/{t}/changes",          ON_PATH(AUTH_WRITE),     NULL,           HTTP_JSON_BODY | HTTP_MUTATES,     ADMIT_X_CHANGES, http__job_changes,      NULL},
    {HM_POST,   "/v1/tables/{t}/delete",           ON_PATH(AUTH_WRITE),     NULL,           HTTP_JSON_BODY | HTTP_MUTATES,     ADMIT_X_JSON,    http__job_delete,       NULL},
    /* reads */
    {HM_POST,   "/v1/tables/{t}/scan",             ON_PATH(AUTH_READ),      NULL,           HTTP_JSON_BODY,                    ADMIT_X_JSON,    http__job_scan,         NULL},
    {HM_POST,   "/v1/tables/{t}/plan",             ON_PATH(AUTH_READ),      NULL,           HTTP_JSON_BODY,                    ADMIT_X_JSON,    http__job_plan,         NULL},
    {HM_GET,    "/v1/tables/{t}/snapshots",        ON_PATH(AUTH_READ),      q_page,         0,                                 0,               http__job_snapshots,    NULL},
    {HM_GET,    "/v1/tables/{t}/files/{id}",       ON_PATH(AUTH_READ),      NULL,           HTTP_FILE_ID,                      0,               http__job_file,         NULL},
    {HM_GET,    "/v1/tables/{t}/files/{id}/dv",    ON_PATH(AUTH_READ),      q_dv,           HTTP_FILE_ID,                      0,               http__job_dv,           http__fast_dv},
    /* maintenance */
    {HM_POST,   "/v1/tables/{t}/compact",          ON_PATH(AUTH_ADMIN),     NULL,           HTTP_JSON_BODY,                    ADMIT_X_JSON,    http__job_compact,      NULL},
    {HM_POST,   "/v1/tables/{t}/expire",           ON_PATH(AUTH_ADMIN),     NULL,           HTTP_JSON_BODY,                    ADMIT_X_JSON,    http__job_expire,       NULL},
    {HM_GET,    "/v1/tables/{t}/health",           ON_PATH(AUTH_READ),      q_page,         0,                                 0,               http__job_table_health, NULL},
    /* erasure: the receipts are read with read; an erasure, and a check of keys against a receipt, need admin */
    {HM_GET,    "/v1/tables/{t}/erasures",         ON_PATH(AUTH_READ),      q_page,         0,                                 0,               http__job_erasures,     NULL},
    {HM_POST,   "/v1/tables/{t}/erasures",         ON_PATH(AUTH_ADMIN),     NULL,           HTTP_JSON_BODY | HTTP_MUTATES,     ADMIT_X_ERASE,   http__job_erase,        NULL},
    {HM_GET,    "/v1/tables/{t}/erasures/{id}",    ON_PATH(AUTH_READ),      NULL,           0,                                 0,               http__job_erasure,      NULL},
    {HM_POST,   "/v1/tables/{t}/erasures/{id}/check", ON_PATH(AUTH_ADMIN),  NULL,           HTTP_JSON_BODY,                    ADMIT_X_ERASE,   http__job_erasure_check, NULL},
    /* CDC: the tables are in the body: write on each routed table (svc_cdc_apply) */
    {HM_POST,   "/v1/cdc/debezium",                AUTH_WRITE, AUTH_TABLE_PARSED, q_cdc,    HTTP_CDC_BODY,                     ADMIT_X_CDC,     http__job_cdc,          NULL},
    /* the Iceberg REST catalog (http_iceberg.c): read on the table (listings: those the token
       may read), errors in Iceberg's model; its writes answer 501 */
#define ICE "/iceberg/v1"
#define NS ICE "/namespaces/{ns}"
#define TB NS "/tables/{t}"
    {HM_GET,    ICE "/config",                     ANY_TABLE(AUTH_READ),    q_ice_config,   HTTP_OTHER_QUERY,                  0,               http__job_ice_config,   NULL},
    {HM_GET,    ICE "/namespaces",                 ANY_TABLE(AUTH_READ),    q_ice_ns,       HTTP_OTHER_QUERY,                  0,               http__job_ice_namespaces, NULL},
    {HM_POST,   ICE "/namespaces",                 ANY_TABLE(AUTH_READ),    NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_unsupported, NULL},
    {HM_GET,    NS,                                ANY_TABLE(AUTH_READ),    NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_namespace, NULL},
    {HM_DELETE, NS,                                ANY_TABLE(AUTH_READ),    NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_unsupported, NULL},
    {HM_POST,   NS "/properties",                  ANY_TABLE(AUTH_READ),    NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_unsupported, NULL},
    {HM_GET,    NS "/tables",                      ANY_TABLE(AUTH_READ),    q_ice_page,     HTTP_OTHER_QUERY,                  0,               http__job_ice_tables,   NULL},
    {HM_POST,   NS "/tables",                      ANY_TABLE(AUTH_READ),    NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_unsupported, NULL},
    {HM_POST,   NS "/register",                    ANY_TABLE(AUTH_READ),    NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_unsupported, NULL},
    {HM_GET,    TB,                                ON_PATH(AUTH_READ),      q_ice_load,     HTTP_OTHER_QUERY,                  0,               http__job_ice_load,     NULL},
    {HM_POST,   TB,                                ON_PATH(AUTH_READ),      NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_unsupported, NULL},
    {HM_DELETE, TB,                                ON_PATH(AUTH_READ),      NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_unsupported, NULL},
    {HM_POST,   TB "/plan",                        ON_PATH(AUTH_READ),      NULL,           HTTP_JSON_BODY | HTTP_OTHER_QUERY, ADMIT_X_JSON,    http__job_ice_plan,     NULL},
    {HM_GET,    TB "/plan/{plan}",                 ON_PATH(AUTH_READ),      NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_plan_get, NULL},
    {HM_DELETE, TB "/plan/{plan}",                 ON_PATH(AUTH_READ),      NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_plan_cancel, NULL},
    {HM_POST,   TB "/tasks",                       ON_PATH(AUTH_READ),      NULL,           HTTP_JSON_BODY | HTTP_OTHER_QUERY, ADMIT_X_JSON,    http__job_ice_tasks,    NULL},
    {HM_POST,   ICE "/tables/rename",              ANY_TABLE(AUTH_READ),    NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_unsupported, NULL},
    {HM_POST,   ICE "/transactions/commit",        ANY_TABLE(AUTH_READ),    NULL,           HTTP_OTHER_QUERY,                  0,               http__job_ice_unsupported, NULL},
#undef TB
#undef NS
#undef ICE
};
/* clang-format on */

#undef OPEN
#undef ON_PATH
#undef ANY_TABLE

#define NROUTES (sizeof routes / sizeof routes[0])
#define MAX_PATTERNS (NROUTES + 1)

/* Filled once by http__routes_check (http_start), read-only after. */
static struct {
    int npatterns;
    const char *names[MAX_PATTERNS]; /* [0] "other" */
    char allow[MAX_PATTERNS][48];    /* "GET, HEAD, POST" */
    int pattern_of[NROUTES];         /* the pattern index of each row */
    char op[NROUTES][2][96];         /* "POST /v1/tables/{t}/changes"; [1]: HEAD on a GET row */
} tab;

const char *http__method_name(enum http_method m)
{
    static const char *const names[HM__COUNT] = {"GET", "HEAD", "POST", "DELETE", "other"};
    return m < HM__COUNT ? names[m] : "other";
}

static bool answers(const struct http_route *rt, enum http_method m)
{
    return rt->method == m || (m == HM_HEAD && rt->method == HM_GET);
}

const struct http_route *http__route_find(const char *path, enum http_method m, int *pattern,
                                          struct http_caps *caps)
{
    *pattern = 0;
    const struct http_route *get = NULL;
    for (size_t i = 0; i < NROUTES; i++) {
        const struct http_route *rt = &routes[i];
        if (*pattern != 0 && tab.pattern_of[i] != *pattern)
            continue;
        if (*pattern == 0 && !http_match(rt->pattern, path, caps))
            continue;
        *pattern = tab.pattern_of[i];
        if (rt->method == m)
            return rt;
        if (get == NULL && answers(rt, m))
            get = rt; /* HEAD on a GET row, unless a HEAD row follows */
    }
    return get;
}

const char *http__pattern_allow(int i)
{
    return i > 0 && i < tab.npatterns ? tab.allow[i] : "";
}

const char *const *http__pattern_names(int *n)
{
    *n = tab.npatterns;
    return tab.names;
}

const char *http__route_op(const struct http_route *rt, enum http_method m)
{
    size_t i = (size_t)(rt - routes);
    assert(i < NROUTES);
    return tab.op[i][m == HM_HEAD && rt->method == HM_GET];
}

/* A pattern starts with '/', and each {name} is a whole segment ({*} only at the end). */
static bool pattern_ok(const char *p)
{
    if (p[0] != '/')
        return false;
    for (const char *s = p; *s; s++) {
        if (*s != '{')
            continue;
        const char *close = strchr(s, '}');
        if (close == NULL || close == s + 1 || s[-1] != '/' ||
            memchr(s + 1, '{', (size_t)(close - s - 1)))
            return false;
        bool rest = close == s + 2 && s[1] == '*';
        if (rest ? close[1] != '\0' : (close[1] != '\0' && close[1] != '/'))
            return false;
        s = close;
    }
    return true;
}

int http__routes_check(struct st_err *err)
{
    memset(&tab, 0, sizeof tab);
    tab.names[0] = "other";
    tab.npatterns = 1;
    for (size_t i = 0; i < NROUTES; i++) {
        const struct http_route *rt = &routes[i];
        const char *mname = http__method_name(rt->method);
        if (!pattern_ok(rt->pattern))
            return st_errf(err, ST_EINTERNAL, "http: route %s %s: bad pattern", mname, rt->pattern);
        if (rt->scope == AUTH_UNDECLARED)
            return st_errf(err, ST_EINTERNAL, "http: route %s %s declares no scope", mname,
                           rt->pattern);
        if (rt->job == NULL && rt->fast == NULL)
            return st_errf(err, ST_EINTERNAL, "http: route %s %s has no answer", mname,
                           rt->pattern);
        bool has_t = strstr(rt->pattern, "{t}") != NULL;
        if (has_t != (rt->table_from == AUTH_TABLE_PATH))
            return st_errf(err, ST_EINTERNAL,
                           "http: route %s %s: {t} and its table source disagree", mname,
                           rt->pattern);
        size_t nq = 0;
        for (const char *const *q = rt->query; q != NULL && q != HTTP_ANY_QUERY && *q; q++)
            nq++;
        size_t ncap = 0;
        for (const char *c = strchr(rt->pattern, '{'); c != NULL; c = strchr(c + 1, '{'))
            ncap += strncmp(c, "{t}", 3) != 0 && strncmp(c, "{*}", 3) != 0 &&
                    !(strncmp(c, "{id}", 4) == 0 && (rt->flags & HTTP_FILE_ID));
        if (ncap + nq > HTTP_MAX_ARGS)
            return st_errf(err, ST_EINTERNAL,
                           "http: route %s %s keeps more than %d captures and query arguments",
                           mname, rt->pattern, HTTP_MAX_ARGS);
        if (nq > HTTP_MAX_QUERY)
            return st_errf(err, ST_EINTERNAL, "http: route %s %s declares more than %d query names",
                           mname, rt->pattern, HTTP_MAX_QUERY);
        bool body = (rt->flags & (HTTP_JSON_BODY | HTTP_CDC_BODY)) != 0;
        if (body ? rt->charge < 1 || rt->charge > ADMIT_X_MAX : rt->charge != 0)
            return st_errf(err, ST_EINTERNAL,
                           "http: route %s %s: %s (1 to %u times its bytes, admit.h)", mname,
                           rt->pattern,
                           body ? "a route that reads a body declares its admission charge"
                                : "a route that reads no body charges nothing",
                           ADMIT_X_MAX);
        if ((rt->flags & HTTP_FILE_ID) && strstr(rt->pattern, "{id}") == NULL)
            return st_errf(err, ST_EINTERNAL, "http: route %s %s: a file id needs {id}", mname,
                           rt->pattern);
        int p = 0;
        for (int k = 1; k < tab.npatterns && p == 0; k++)
            if (strcmp(tab.names[k], rt->pattern) == 0)
                p = k;
        if (p == 0) {
            p = tab.npatterns++;
            tab.names[p] = rt->pattern;
        }
        for (size_t j = 0; j < i; j++)
            if (tab.pattern_of[j] == p && routes[j].method == rt->method)
                return st_errf(err, ST_EINTERNAL, "http: route %s %s is declared twice", mname,
                               rt->pattern);
        tab.pattern_of[i] = p;
        char *allow = tab.allow[p];
        size_t len = strlen(allow);
        snprintf(allow + len, sizeof tab.allow[p] - len, "%s%s%s", len ? ", " : "", mname,
                 rt->method == HM_GET ? ", HEAD" : "");
        snprintf(tab.op[i][0], sizeof tab.op[i][0], "%s %s", mname, rt->pattern);
        snprintf(tab.op[i][1], sizeof tab.op[i][1], "HEAD %s", rt->pattern);
    }
    return ST_OK;
}

static const char *table_from_name(enum auth_table_from f)
{
    switch (f) {
    case AUTH_TABLE_PATH:
        return "path";
    case AUTH_TABLE_BODY:
        return "body";
    case AUTH_TABLE_PARSED:
        return "parsed";
    default:
        return "none";
    }
}

void http_list_routes(void *outp)
{
    FILE *out = outp;
    for (size_t i = 0; i < NROUTES; i++) {
        const struct http_route *rt = &routes[i];
        const char *scope = auth_scope_name(rt->scope), *from = table_from_name(rt->table_from);
        fprintf(out, "http %s %s %s %s\n", http__method_name(rt->method), rt->pattern, scope, from);
        if (rt->method == HM_GET)
            fprintf(out, "http HEAD %s %s %s\n", rt->pattern, scope, from);
    }
}
