/*
 * config.h - striked's settings: one declarative table of options, each
 * with its environment variable, default and validator (docs/API.md "Running").
 *
 * Precedence: command line, then environment, then default. A bad value or
 * an unknown option is a one-line error and exit status 2.
 */
#ifndef STRIKE_CONFIG_H
#define STRIKE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct listen_addr {
    char host[256]; /* as given: "127.0.0.1", "::1", "0.0.0.0", "localhost" */
    int port;       /* 0..65535; 0 asks the kernel for a free port */
    bool loopback;  /* 127.0.0.0/8, ::1 or localhost */
};

/* --cdc-route SOURCE=TABLE: a Debezium source table ("db.table" or "schema.table") to a table. */
struct cdc_route {
    char *source;
    char *table;
};

struct config {
    struct listen_addr http;
    struct listen_addr grpc;
    char *data_dir;     /* blob store: a directory or s3://bucket/prefix */
    char *s3_endpoint;  /* NULL: AWS */
    char *s3_region;    /* NULL: us-east-1 */
    bool s3_path_style; /* also implied by s3_endpoint */
    char *catalog;      /* PostgreSQL URL; NULL = the embedded default */
    char *tokens_file;  /* NULL = no tokens */
    char *tls_cert;     /* PEM certificate chain; NULL = plain text */
    char *tls_key;      /* PEM private key of tls_cert */
    bool insecure;
    bool list_routes;         /* print the route and RPC tables with their scopes, exit */
    uint64_t max_body;        /* bytes of one request body or gRPC message */
    uint64_t max_inflight;    /* budget of request bytes in flight, charged x the route's factor */
    int http_threads;         /* 0 = automatic */
    int64_t header_timeout_s; /* HTTP: a request's line and headers complete within this */
    int max_conns_per_ip;     /* HTTP connections at once from one client address; 0: no cap */
    int grpc_threads;         /* 0 = automatic */
    int workers;              /* blocking-work threads; 0 = automatic */
    int64_t gc_grace_s;       /* orphan grace period, seconds */
    int64_t gc_interval_s;    /* orphan GC period, seconds; 0 = off */
    int64_t compact_interval_s; /* background maintenance period, seconds; 0 = off */
    int maintenance_workers;    /* threads of a maintenance pass; 0 = automatic */
    int64_t retain_s;           /* snapshots older than this are expired by maintenance */
    uint64_t dv_inline_max;     /* bytes; 0 = DVs always in Puffin files */
    int64_t iceberg_interval_s; /* the Iceberg export's period; 0 = on demand */
    int iceberg_history;        /* snapshots the Iceberg metadata lists */
    char *log_level;            /* debug|info|warn|error */
    char *cdc_schema;           /* evolve|refuse|ignore-new (docs/API.md "CDC endpoint") */

    /* --cdc-route, in the order given */
    struct cdc_route *cdc_routes;
    size_t ncdc_routes;
};

enum config_result { CONFIG_OK = 0, CONFIG_EXIT_OK = 1, CONFIG_ERROR = 2 };

/*
 * Fill `c` from argv and the environment. On CONFIG_ERROR, `err` holds a
 * one-line message. On CONFIG_EXIT_OK, --help or --version was printed to
 * `out`. The caller frees with config_free().
 */
enum config_result config_load(struct config *c, int argc, char **argv, char *err, size_t errlen,
                               void *out /* FILE* */);
void config_free(struct config *c);

/* Parse "ADDR:PORT" ("127.0.0.1:8080", "[::1]:8080", "localhost:0"). */
bool config_parse_listen(const char *s, struct listen_addr *out);
/* Parse a byte size: digits with an optional K, M or G (binary) suffix. */
bool config_parse_size(const char *s, uint64_t *out);
/* Parse a duration: digits with s, m, h or d ("90s", "1h"); bare digits are seconds. */
bool config_parse_duration(const char *s, int64_t *seconds);

#endif
