/* config.c - striked's options, environment variables and defaults. */
#include "config.h"

#include "engine/engine.h"

#include "common/timeutil.h"
#include "common/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* K_SIZE0: a size that may be 0 */
enum kind {
    K_LISTEN,
    K_STRING,
    K_PATH,
    K_FLAG,
    K_SIZE,
    K_SIZE0,
    K_INT,
    K_DURATION,
    K_LEVEL,
    K_ROUTE,
    K_CDC_SCHEMA
};

struct option_def {
    const char *name; /* without the leading "--" */
    const char *env;  /* NULL: no environment variable */
    enum kind kind;
    const char *deflt; /* NULL: unset */
    size_t offset;     /* into struct config */
    const char *help;
    int64_t min; /* K_DURATION: the least value accepted (seconds) */
};

#define OFF(f) offsetof(struct config, f)

static const struct option_def options[] = {
    {"http", "STRIKE_HTTP", K_LISTEN, "127.0.0.1:8080", OFF(http), "HTTP listen address", 0},
    {"grpc", "STRIKE_GRPC", K_LISTEN, "127.0.0.1:50051", OFF(grpc), "gRPC listen address", 0},
    {"data", "STRIKE_DATA", K_PATH, "./strike-data", OFF(data_dir),
     "blob store: a directory, or s3://BUCKET/PREFIX (credentials from AWS_ACCESS_KEY_ID, "
     "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)",
     0},
    {"s3-endpoint", "STRIKE_S3_ENDPOINT", K_STRING, NULL, OFF(s3_endpoint),
     "S3-compatible endpoint URL (default: https://s3.REGION.amazonaws.com)", 0},
    {"s3-region", "STRIKE_S3_REGION", K_STRING, NULL, OFF(s3_region),
     "S3 region for signing (default: us-east-1)", 0},
    {"s3-path-style", "STRIKE_S3_PATH_STYLE", K_FLAG, NULL, OFF(s3_path_style),
     "S3 path-style addressing (ENDPOINT/BUCKET/KEY) rather than BUCKET.ENDPOINT/KEY (always "
     "with --s3-endpoint)",
     0},
    {"catalog", "STRIKE_CATALOG", K_STRING, NULL, OFF(catalog),
     "PostgreSQL URL (default: an embedded cluster in DATA/catalog)", 0},
    {"tokens", "STRIKE_TOKENS", K_PATH, NULL, OFF(tokens_file),
     "bearer tokens file: SHA256HEX SCOPE TABLE_GLOB per line, re-read on SIGHUP", 0},
    {"tls-cert", "STRIKE_TLS_CERT", K_PATH, NULL, OFF(tls_cert),
     "TLS certificate chain (PEM) for both listeners, re-read on SIGHUP", 0},
    {"tls-key", "STRIKE_TLS_KEY", K_PATH, NULL, OFF(tls_key), "TLS private key (PEM)", 0},
    {"insecure", NULL, K_FLAG, NULL, OFF(insecure),
     "allow a non-loopback listener without authentication", 0},
    {"list-routes", NULL, K_FLAG, NULL, OFF(list_routes),
     "print every HTTP route and RPC with its scope, then exit", 0},
    {"max-body", "STRIKE_MAX_BODY", K_SIZE, "64M", OFF(max_body),
     "largest request body or gRPC message (K, M, G suffixes)", 0},
    {"max-inflight", "STRIKE_MAX_INFLIGHT", K_SIZE, "1G", OFF(max_inflight),
     "memory budget of the requests in flight: each body or gRPC message counts its route's "
     "factor (20x to 48x) its size, beyond it 503 / UNAVAILABLE",
     0},
    {"http-threads", "STRIKE_HTTP_THREADS", K_INT, "0", OFF(http_threads),
     "HTTP event threads (0: number of cores)", 0},
    {"header-timeout", "STRIKE_HEADER_TIMEOUT", K_DURATION, "60s", OFF(header_timeout_s),
     "HTTP: a request's line and headers must arrive within this, counted from the connection's "
     "start or the previous response (an idle keep-alive connection too), else the connection "
     "is closed (1s to 1d)",
     1},
    {"max-conns-per-ip", "STRIKE_MAX_CONNS_PER_IP", K_INT, "256", OFF(max_conns_per_ip),
     "HTTP connections at once from one client address; more are closed at once (0: no cap; "
     "behind a proxy, raise it or 0)",
     0},
    {"grpc-threads", "STRIKE_GRPC_THREADS", K_INT, "0", OFF(grpc_threads),
     "gRPC completion-queue threads (0: number of cores)", 0},
    {"workers", "STRIKE_WORKERS", K_INT, "0", OFF(workers),
     "threads for blocking work (catalog, commits; 0: automatic)", 0},
    {"gc-grace", "STRIKE_GC_GRACE", K_DURATION, "1h", OFF(gc_grace_s),
     "age before an unreferenced blob may be deleted (at least 5m); the files of expired "
     "snapshots stay as long, at least 1h, and while a presigned URL of their table is valid",
     ENGINE_GC_GRACE_MIN_S},
    {"gc-interval", "STRIKE_GC_INTERVAL", K_DURATION, "10m", OFF(gc_interval_s),
     "period of the orphan collector, which also deletes expired snapshots' files past their "
     "grace (0: off)",
     0},
    {"compact-interval", "STRIKE_COMPACT_INTERVAL", K_DURATION, "1m", OFF(compact_interval_s),
     "period of the background maintenance task, one server at a time per table: inline DVs "
     "flushed to Puffin files, compaction by the default policy (deleted fraction >= 0.3, or 8+ "
     "small files), the key index caught up with the compactions, snapshots older than --retain "
     "expired (0: off)",
     0},
    {"maintenance-workers", "STRIKE_MAINTENANCE_WORKERS", K_INT, "0", OFF(maintenance_workers),
     "threads of a maintenance pass, each maintaining one table at a time (0: 2; at most 16)", 0},
    {"retain", "STRIKE_RETAIN", K_DURATION, "7d", OFF(retain_s),
     "snapshots older than this are expired by the maintenance task (the current one stays)", 0},
    {"dv-inline-max", "STRIKE_DV_INLINE_MAX", K_SIZE0, "8192", OFF(dv_inline_max),
     "largest DV blob a commit keeps inline in the catalog row instead of a Puffin file (0: "
     "never; at most 1M)",
     0},
    {"iceberg-interval", "STRIKE_ICEBERG_INTERVAL", K_DURATION, "5s", OFF(iceberg_interval_s),
     "period of the Iceberg export: each table's new snapshots as metadata files in its location "
     "(0: only when the REST catalog asks)",
     0},
    {"iceberg-history", "STRIKE_ICEBERG_HISTORY", K_INT, "500", OFF(iceberg_history),
     "the newest retained snapshots the Iceberg metadata lists (at least 1)", 1},
    {"log-level", "STRIKE_LOG_LEVEL", K_LEVEL, "info", OFF(log_level), "debug, info, warn or error",
     0},
    {"cdc-route", NULL, K_ROUTE, NULL, OFF(cdc_routes),
     "SOURCE=TABLE: POST /v1/cdc/debezium writes Debezium source table SOURCE (db.table or "
     "schema.table) into TABLE; repeatable",
     0},
    {"cdc-schema", "STRIKE_CDC_SCHEMA", K_CDC_SCHEMA, "evolve", OFF(cdc_schema),
     "what POST /v1/cdc/debezium does when the source's columns change: evolve (add new columns "
     "and widen int to long before the rows that carry them; a dropped column is kept), refuse "
     "(400 naming the event and the column) or ignore-new (drop unknown columns' values)",
     0},
};

#define NOPTIONS (sizeof options / sizeof options[0])

bool config_parse_listen(const char *s, struct listen_addr *out)
{
    memset(out, 0, sizeof *out);
    const char *colon;
    size_t hostlen;
    const char *host;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':')
            return false;
        host = s + 1;
        hostlen = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL)
            return false;
        host = s;
        hostlen = (size_t)(colon - s);
        if (memchr(host, ':', hostlen) != NULL)
            return false; /* an IPv6 address needs brackets */
    }
    if (hostlen == 0 || hostlen >= sizeof out->host)
        return false;
    memcpy(out->host, host, hostlen);
    out->host[hostlen] = '\0';
    const char *p = colon + 1;
    if (*p == '\0' || strlen(p) > 5)
        return false;
    int port = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        port = port * 10 + (*p - '0');
    }
    if (port > 65535)
        return false;
    out->port = port;
    unsigned char a[16];
    if (strcmp(out->host, "localhost") == 0) {
        out->loopback = true;
    } else if (inet_pton(AF_INET, out->host, a) == 1) {
        out->loopback = a[0] == 127;
    } else if (inet_pton(AF_INET6, out->host, a) == 1) {
        static const unsigned char lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        out->loopback = memcmp(a, lo6, 16) == 0;
    } else {
        return false; /* only literal addresses and "localhost" */
    }
    return true;
}

static bool parse_u64(const char *s, const char **end, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *end = s;
    *out = v;
    return true;
}

bool config_parse_size(const char *s, uint64_t *out)
{
    const char *end;
    uint64_t v;
    if (!parse_u64(s, &end, &v))
        return false;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    else if (*end != '\0')
        return false;
    if (shift && end[1] != '\0' && !(end[1] == 'B' && end[2] == '\0') &&
        !(end[1] == 'i' && end[2] == 'B' && end[3] == '\0'))
        return false;
    if (v > (UINT64_MAX >> shift))
        return false;
    *out = v << shift;
    return *out > 0;
}

bool config_parse_duration(const char *s, int64_t *seconds)
{
    return st_parse_duration(s, seconds);
}

/* SOURCE=TABLE: SOURCE 1 to 255 bytes without '=', TABLE a valid table name, SOURCE once. */
static bool add_route(struct config *c, const char *v, char *err, size_t errlen, const char *source)
{
    const char *eq = strchr(v, '=');
    if (eq == NULL || eq == v || (size_t)(eq - v) > 255 || !st_name_valid(eq + 1)) {
        snprintf(err, errlen,
                 "%s: bad route \"%s\" (want SOURCE=TABLE, e.g. inventory.customers=customers, "
                 "TABLE a valid table name)",
                 source, v);
        return false;
    }
    size_t slen = (size_t)(eq - v);
    for (size_t i = 0; i < c->ncdc_routes; i++) {
        if (strlen(c->cdc_routes[i].source) == slen &&
            memcmp(c->cdc_routes[i].source, v, slen) == 0) {
            snprintf(err, errlen, "%s: source \"%.*s\" is routed twice", source, (int)slen, v);
            return false;
        }
    }
    c->cdc_routes = xreallocarray(c->cdc_routes, c->ncdc_routes + 1, sizeof *c->cdc_routes);
    c->cdc_routes[c->ncdc_routes].source = xstrndup(v, slen);
    c->cdc_routes[c->ncdc_routes].table = xstrdup(eq + 1);
    c->ncdc_routes++;
    return true;
}

static bool set_value(struct config *c, const struct option_def *o, const char *v, char *err,
                      size_t errlen, const char *source)
{
    char *field = (char *)c + o->offset;
    switch (o->kind) {
    case K_LISTEN:
        if (!config_parse_listen(v, (struct listen_addr *)(void *)field)) {
            snprintf(err, errlen, "%s: bad address \"%s\" (want ADDR:PORT, e.g. 127.0.0.1:8080)",
                     source, v);
            return false;
        }
        return true;
    case K_STRING:
    case K_PATH: {
        if (*v == '\0') {
            snprintf(err, errlen, "%s: empty value", source);
            return false;
        }
        if (o->kind == K_STRING && strcmp(o->name, "catalog") == 0 &&
            strncmp(v, "postgresql://", 13) != 0 && strncmp(v, "postgres://", 11) != 0) {
            snprintf(err, errlen, "%s: \"%s\" is not a postgresql:// URL", source, v);
            return false;
        }
        char **sp = (char **)(void *)field;
        free(*sp);
        *sp = xstrdup(v);
        return true;
    }
    case K_FLAG:
        *(bool *)(void *)field = true;
        return true;
    case K_SIZE0:
    case K_SIZE:
        if (o->kind == K_SIZE0 && strcmp(v, "0") == 0) {
            *(uint64_t *)(void *)field = 0;
            return true;
        }
        if (!config_parse_size(v, (uint64_t *)(void *)field)) {
            snprintf(err, errlen, "%s: bad size \"%s\" (want e.g. 65536, 64M, 1G)", source, v);
            return false;
        }
        return true;
    case K_INT: {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0' || n < 0 || n > 1024) {
            snprintf(err, errlen, "%s: bad number \"%s\" (want 0..1024)", source, v);
            return false;
        }
        *(int *)(void *)field = (int)n;
        return true;
    }
    case K_DURATION:
        if (!config_parse_duration(v, (int64_t *)(void *)field)) {
            snprintf(err, errlen, "%s: bad duration \"%s\" (want e.g. 30s, 10m, 1h)", source, v);
            return false;
        }
        if (*(int64_t *)(void *)field < o->min) {
            snprintf(err, errlen, "%s: \"%s\" is below the least value, %llds", source, v,
                     (long long)o->min);
            return false;
        }
        return true;
    case K_LEVEL:
        if (strcmp(v, "debug") != 0 && strcmp(v, "info") != 0 && strcmp(v, "warn") != 0 &&
            strcmp(v, "error") != 0) {
            snprintf(err, errlen, "%s: bad log level \"%s\" (want debug, info, warn or error)",
                     source, v);
            return false;
        }
        free(c->log_level);
        c->log_level = xstrdup(v);
        return true;
    case K_ROUTE:
        return add_route(c, v, err, errlen, source);
    case K_CDC_SCHEMA:
        if (strcmp(v, "evolve") != 0 && strcmp(v, "refuse") != 0 && strcmp(v, "ignore-new") != 0) {
            snprintf(err, errlen,
                     "%s: bad CDC schema policy \"%s\" (want evolve, refuse or ignore-new)", source,
                     v);
            return false;
        }
        free(c->cdc_schema);
        c->cdc_schema = xstrdup(v);
        return true;
    }
    return false;
}

static void print_help(FILE *out)
{
    fprintf(out, "usage: striked [options]\n\n"
                 "strike's server: HTTP and gRPC APIs over a PostgreSQL catalog.\n\n");
    for (size_t i = 0; i < NOPTIONS; i++) {
        const struct option_def *o = &options[i];
        char left[64];
        snprintf(left, sizeof left, "--%s%s", o->name, o->kind == K_FLAG ? "" : " VALUE");
        fprintf(out, "  %-22s %s", left, o->help);
        if (o->deflt)
            fprintf(out, " [%s]", o->deflt);
        if (o->env)
            fprintf(out, " (env %s)", o->env);
        fputc('\n', out);
    }
    fprintf(out, "  %-22s %s\n  %-22s %s\n", "--help", "print this help", "--version",
            "print the version");
}

enum config_result config_load(struct config *c, int argc, char **argv, char *err, size_t errlen,
                               void *outp)
{
    FILE *out = outp ? outp : stdout;
    memset(c, 0, sizeof *c);
    char src[96];
    /* 1. defaults */
    for (size_t i = 0; i < NOPTIONS; i++) {
        if (options[i].deflt == NULL)
            continue;
        snprintf(src, sizeof src, "default of --%s", options[i].name);
        if (!set_value(c, &options[i], options[i].deflt, err, errlen, src))
            return CONFIG_ERROR; /* a bug in the table */
    }
    /* 2. environment */
    for (size_t i = 0; i < NOPTIONS; i++) {
        const char *v = options[i].env ? getenv(options[i].env) : NULL;
        if (v == NULL)
            continue;
        if (!set_value(c, &options[i], v, err, errlen, options[i].env))
            return CONFIG_ERROR;
    }
    /* 3. command line: --name VALUE or --name=VALUE */
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help(out);
            return CONFIG_EXIT_OK;
        }
        if (strcmp(arg, "--version") == 0) {
            fprintf(out, "striked %s\n", STRIKE_VERSION);
            return CONFIG_EXIT_OK;
        }
        if (strncmp(arg, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument \"%s\" (see --help)", arg);
            return CONFIG_ERROR;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct option_def *o = NULL;
        for (size_t i = 0; i < NOPTIONS; i++) {
            if (strlen(options[i].name) == nlen && strncmp(options[i].name, name, nlen) == 0)
                o = &options[i];
        }
        if (o == NULL) {
            snprintf(err, errlen, "unknown option --%.*s (see --help)", (int)nlen, name);
            return CONFIG_ERROR;
        }
        const char *v;
        if (o->kind == K_FLAG) {
            if (eq != NULL) {
                snprintf(err, errlen, "--%s takes no value", o->name);
                return CONFIG_ERROR;
            }
            v = "1";
        } else if (eq != NULL) {
            v = eq + 1;
        } else if (a + 1 < argc) {
            v = argv[++a];
        } else {
            snprintf(err, errlen, "--%s needs a value", o->name);
            return CONFIG_ERROR;
        }
        snprintf(src, sizeof src, "--%s", o->name);
        if (!set_value(c, o, v, err, errlen, src))
            return CONFIG_ERROR;
    }
    if (c->max_body > (1ull << 31)) {
        snprintf(err, errlen, "--max-body: at most 2G");
        return CONFIG_ERROR;
    }
    if (c->header_timeout_s > 86400) {
        snprintf(err, errlen, "--header-timeout: at most 1d");
        return CONFIG_ERROR;
    }
    if (c->dv_inline_max > ENGINE_DV_INLINE_LIMIT) {
        snprintf(err, errlen, "--dv-inline-max: at most 1M");
        return CONFIG_ERROR;
    }
    if (c->maintenance_workers > ENGINE_MAINT_WORKERS_MAX) {
        snprintf(err, errlen, "--maintenance-workers: at most %d, got %d", ENGINE_MAINT_WORKERS_MAX,
                 c->maintenance_workers);
        return CONFIG_ERROR;
    }
    bool s3 = strncmp(c->data_dir, "s3://", 5) == 0;
    if (s3 && c->catalog == NULL) {
        snprintf(err, errlen,
                 "--data s3://...: give --catalog (the embedded catalog needs a local directory)");
        return CONFIG_ERROR;
    }
    if (!s3 && (c->s3_endpoint != NULL || c->s3_region != NULL || c->s3_path_style)) {
        snprintf(err, errlen,
                 "--s3-endpoint, --s3-region, --s3-path-style: only with --data s3://");
        return CONFIG_ERROR;
    }
    if (c->s3_endpoint != NULL && strncmp(c->s3_endpoint, "http://", 7) != 0 &&
        strncmp(c->s3_endpoint, "https://", 8) != 0) {
        snprintf(err, errlen, "--s3-endpoint: \"%s\" is not an http:// or https:// URL",
                 c->s3_endpoint);
        return CONFIG_ERROR;
    }
    return CONFIG_OK;
}

void config_free(struct config *c)
{
    free(c->data_dir);
    free(c->s3_endpoint);
    free(c->s3_region);
    free(c->catalog);
    free(c->tokens_file);
    free(c->tls_cert);
    free(c->tls_key);
    free(c->log_level);
    free(c->cdc_schema);
    for (size_t i = 0; i < c->ncdc_routes; i++) {
        free(c->cdc_routes[i].source);
        free(c->cdc_routes[i].table);
    }
    free(c->cdc_routes);
    memset(c, 0, sizeof *c);
}
