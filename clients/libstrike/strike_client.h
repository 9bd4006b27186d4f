/*
 * strike_client.h - libstrike, a C client of the strike HTTP API
 * (docs/API.md). The one public header.
 *
 * HTTP is libcurl's, JSON is jansson's. A client handle holds only its
 * configuration and a libcurl share of connections and DNS entries behind a
 * mutex: any number of threads may call into one handle at once (each call
 * runs on its own CURL easy handle). strike_global_init() is called by
 * strike_client_new(); it runs curl_global_init once per process.
 *
 * Every operation returns 0 (STRIKE_OK) or a negative enum strike_code and,
 * when `err` is not NULL, fills it in: the HTTP status and the problem+json
 * `detail` of the server, or what went wrong on the way. Results are jansson
 * values the caller owns (json_decref), or buffers the caller frees.
 *
 * Retries: a 503, and a 409 that is a commit conflict (lost commit races, a
 * compaction or erasure running) rather than "already exists" or an
 * `expected_seq` mismatch, are retried up to `max_retries` times with
 * exponential backoff (100 ms doubling, at most 5 s, with jitter), waiting
 * at least the server's Retry-After. Transport errors (connection refused,
 * reset) are retried too. Every mutating call carries an Idempotency-Key
 * (generated per call, the same on its retries, unless the caller gives
 * one), so a retry of a commit whose answer was lost applies it once.
 */
#ifndef STRIKE_CLIENT_H
#define STRIKE_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum strike_code {
    STRIKE_OK = 0,
    STRIKE_EINVAL = -1,     /* a bad argument to the library (nothing sent) */
    STRIKE_EHTTP = -2,      /* the server answered an error not listed below */
    STRIKE_ENOTFOUND = -3,  /* 404 */
    STRIKE_ECONFLICT = -4,  /* 409 (also 422: an Idempotency-Key reused) */
    STRIKE_EUNAVAIL = -5,   /* 503 after the retries, or no connection */
    STRIKE_ETRANSPORT = -6, /* connection, TLS or timeout (libcurl's message) */
    STRIKE_EPROTO = -7,     /* an answer that is not what the API promises */
    STRIKE_EABORTED = -8,   /* a callback asked to stop */
    STRIKE_EAUTH = -9,      /* 401 or 403 */
};

struct strike_error {
    int code;          /* enum strike_code */
    long http_status;  /* 0 when no answer came */
    char title[64];    /* problem+json title, or empty */
    char detail[1024]; /* problem+json detail, or the local reason */
};

/* The name of a code ("not found", ...). */
const char *strike_strerror(int code);

struct strike_options {
    const char *base_url;    /* e.g. http://127.0.0.1:8080 (no trailing /v1) */
    const char *token;       /* bearer token, or NULL */
    const char *ca_file;     /* PEM CA bundle for https, or NULL: the system's */
    long connect_timeout_ms; /* 0: 10 s */
    long timeout_ms;         /* whole request, 0: none (scans may be long) */
    int max_retries;         /* -1: default 5; 0: no retry */
    const char *user_agent;  /* NULL: "libstrike/VERSION" */
};

struct strike_client;

/* curl_global_init once (thread-safe); 0 or STRIKE_ETRANSPORT. */
int strike_global_init(void);

/* A client (caller frees with strike_client_free), or NULL with `err` set. The
 * options' strings are copied. */
struct strike_client *strike_client_new(const struct strike_options *o, struct strike_error *err);
/* Free a client once no call on it is running. NULL is a no-op. */
void strike_client_free(struct strike_client *c);

/* Per-call options; every member may be zero. */
struct strike_call {
    const char *idempotency_key; /* NULL: a random one for mutating calls */
    bool no_retry;               /* one attempt only */
};

/* What a call saw of the answer besides its body (may be NULL). */
struct strike_meta {
    long http_status;
    bool replayed;       /* Idempotent-Replayed: true */
    int64_t snapshot;    /* Strike-Snapshot, -1 when absent */
    int64_t cardinality; /* Strike-Cardinality, -1 when absent */
    int attempts;        /* requests sent */
};

/*
 * The generic call: `method` on `path` (starting with '/'), with `body`
 * (len bytes of JSON; NULL for none). The answer's body is returned in
 * *out (malloc'd, NUL-terminated, caller frees; may be NULL to drop it)
 * with its length in *out_len (may be NULL). A status >= 400 is an error.
 */
int strike_request(struct strike_client *c, const char *method, const char *path, const void *body,
                   size_t len, const struct strike_call *call, char **out, size_t *out_len,
                   struct strike_meta *meta, struct strike_error *err);

/* The same for JSON answers: *out is the parsed answer (caller decrefs), or
 * NULL for an empty answer (204). */
int strike_request_json(struct strike_client *c, const char *method, const char *path,
                        const json_t *body, const struct strike_call *call, json_t **out,
                        struct strike_meta *meta, struct strike_error *err);

/* ---- tables ---- */
int strike_tables_list(struct strike_client *c, json_t **out, struct strike_error *err);
int strike_table_get(struct strike_client *c, const char *table, json_t **out,
                     struct strike_error *err);
/* `spec` is the create body of docs/API.md ({"name","columns","primary_key",...}). */
int strike_table_create(struct strike_client *c, const json_t *spec, json_t **out,
                        struct strike_error *err);
int strike_table_drop(struct strike_client *c, const char *table, struct strike_error *err);
/* POST /v1/tables/{table}/schema with `request` ({"changes":[...], "expected_schema_id"?},
 * docs/API.md "Schema changes"): *out the table after it, with its schema_id. */
int strike_table_alter(struct strike_client *c, const char *table, const json_t *request,
                       json_t **out, struct strike_error *err);

/* ---- writes ---- */
/* POST .../changes with a ready body ({"changes":[...]}); *out the counts. */
int strike_changes_raw(struct strike_client *c, const char *table, const void *body, size_t len,
                       const struct strike_call *call, json_t **out, struct strike_meta *meta,
                       struct strike_error *err);
int strike_changes(struct strike_client *c, const char *table, const json_t *body,
                   const struct strike_call *call, json_t **out, struct strike_error *err);
/* POST .../delete {"filter":filter, "expected_seq"?}; expected_seq < 0: none. */
int strike_delete_where(struct strike_client *c, const char *table, const json_t *filter,
                        int64_t expected_seq, const struct strike_call *call, json_t **out,
                        struct strike_error *err);

/* ---- reads ---- */
/* Called once per scanned row with the row's JSON text (len bytes, no newline,
 * NUL-terminated). Return 0 to go on, non-zero to stop (STRIKE_EABORTED). */
typedef int (*strike_row_fn)(const char *row, size_t len, void *ud);
/* POST .../scan with `request` ({"snapshot","columns","filter","limit"}, or
 * NULL for everything); rows are streamed to `fn` as they arrive. meta->snapshot
 * is the snapshot scanned. */
int strike_scan(struct strike_client *c, const char *table, const json_t *request, strike_row_fn fn,
                void *ud, struct strike_meta *meta, struct strike_error *err);
int strike_plan(struct strike_client *c, const char *table, const json_t *request, json_t **out,
                struct strike_error *err);
/* GET .../files/{id}/dv; snapshot < 0: current; format NULL: roaring64. The
 * bytes in *out (caller frees), meta->cardinality the positions. */
int strike_dv_get(struct strike_client *c, const char *table, int64_t file_id, int64_t snapshot,
                  const char *format, uint8_t **out, size_t *out_len, struct strike_meta *meta,
                  struct strike_error *err);
/* GET .../snapshots, every page; *out {"snapshots":[...]}. */
int strike_snapshots(struct strike_client *c, const char *table, json_t **out,
                     struct strike_error *err);

/* ---- maintenance ---- */
int strike_compact(struct strike_client *c, const char *table, const json_t *request, json_t **out,
                   struct strike_error *err);
int strike_expire(struct strike_client *c, const char *table, const json_t *request, json_t **out,
                  struct strike_error *err);
/* POST .../erasures ({"keys":[...]} or {"filter":E}): the receipt. */
int strike_erase(struct strike_client *c, const char *table, const json_t *request,
                 const struct strike_call *call, json_t **out, struct strike_error *err);
/* GET .../erasures/{id} (id non-NULL) or the whole list (id NULL). */
int strike_erasures(struct strike_client *c, const char *table, const char *id, json_t **out,
                    struct strike_error *err);
/* POST .../erasures/{id}/check ({"keys":[...]}, admin): *out {"match":bool}. */
int strike_erasure_check(struct strike_client *c, const char *table, const char *id,
                         const json_t *request, json_t **out, struct strike_error *err);
/* GET .../health, every page: *out the first page's totals with all files. */
int strike_health(struct strike_client *c, const char *table, json_t **out,
                  struct strike_error *err);

/* Fill key[37] with a fresh random UUID v4 (the default Idempotency-Key). */
void strike_new_key(char key[37]);

#endif
