/*
 * service.h - the operations of docs/API.md, once, for every front end.
 *
 * HTTP (http_*.c) and gRPC (grpc_*.c) are codecs: each parses its wire
 * format into one of the request structs below, calls the operation, and
 * renders the result struct (or the st_err, through err.h's status table).
 * Everything that is not a question of wire format lives here: which fields
 * are required, what a name, a type, a producer, an offset or a column list
 * may be, the lookup of the table, the compilation of the filter against it,
 * and the engine call. An idempotent replay comes back as the same result
 * struct with `replayed` set, so each front end renders it as it renders a
 * fresh result.
 *
 * Strings in requests are borrowed for the duration of the call. Every
 * call is blocking (the catalog): front ends run them on worker threads.
 * Errors: a negative ST_E* code and a message naming the field, as
 *   offset: must be >= 0, got -1
 */
#ifndef STRIKE_SERVICE_H
#define STRIKE_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "changeset.h"
#include "common/err.h"
#include "engine/engine.h"

struct auth_ctx;
struct jdoc_val;

/* A filter as received: a parsed JSON value (HTTP) or JSON text (gRPC); neither: none. */
struct svc_filter {
    const struct jdoc_val *doc;
    const char *text; /* "" is none */
};

/* An optional integer that must not be negative (scan limit, snapshot, offset, seq). */
struct svc_count {
    bool has;
    int64_t v;
};

/* ---- tables ------------------------------------------------------------------- */

/*
 * Absent strings are NULL. A codec whose wire cannot tell an empty string
 * from an absent one (proto3) passes NULL for "".
 */
struct svc_column {
    const char *name; /* NULL: missing */
    const char *type; /* NULL: missing; a name of st_type_parse */
    bool required;
};

struct svc_create_req {
    const char *name; /* NULL: missing */
    const struct svc_column *cols;
    size_t ncols;
    const char *const *pk;
    size_t npk;
    const char *version_column; /* NULL: none */
    const struct engine_idem *idem;
};

struct svc_table_res {
    struct engine_table *table;
    bool has_stats; /* get_table only */
    struct engine_table_stats stats;
    bool replayed; /* create only */
};
void svc_table_res_clear(struct svc_table_res *r);

int svc_create_table(struct engine *e, const struct svc_create_req *q, struct svc_table_res *out,
                     struct st_err *err);
/* The current definition (fresh seq) and its stats at the current snapshot. */
int svc_get_table(struct engine *e, const char *name, struct svc_table_res *out,
                  struct st_err *err);

struct svc_table_list {
    struct engine_table **tables;
    size_t n;
};
int svc_list_tables(struct engine *e, struct svc_table_list *out, struct st_err *err);
void svc_table_list_clear(struct svc_table_list *l);

int svc_drop_table(struct engine *e, const char *name, const struct engine_idem *idem,
                   bool *replayed, struct st_err *err);

/* ---- changes and deletes ------------------------------------------------------- */

struct svc_changes_req {
    const char *table;
    const struct wire_change *changes;
    size_t nchanges;
    const char *producer; /* NULL: none */
    struct svc_count offset;
    struct svc_count expected_seq;
    const struct engine_idem *idem;
};
int svc_apply_changes(struct engine *e, const struct svc_changes_req *q,
                      struct engine_change_res *out, struct st_err *err);

struct svc_delete_req {
    const char *table;
    struct svc_filter filter; /* required */
    struct svc_count expected_seq;
    const struct engine_idem *idem;
};
int svc_delete_where(struct engine *e, const struct svc_delete_req *q,
                     struct engine_delete_res *out, struct st_err *err);

/* ---- maintenance ----------------------------------------------------------------- */

struct svc_compact_req {
    const char *table;
    bool has_min_deleted_fraction;
    double min_deleted_fraction; /* 0..1 */
    struct svc_count target_file_rows;
};
int svc_compact(struct engine *e, const struct svc_compact_req *q, struct engine_compact_res *out,
                struct st_err *err);

/* Erase rows for good (docs/API.md "Maintenance"): keys (objects of the key columns) or a filter.
 */
struct svc_erase_req {
    const char *table;
    bool has_keys;
    const struct wire_obj *keys;
    size_t nkeys;
    struct svc_filter filter;
    const struct engine_idem *idem;
};
int svc_erase(struct engine *e, const struct svc_erase_req *q, struct engine_erasure *out,
              struct st_err *err);
int svc_get_erasure(struct engine *e, const char *table, const char *id, struct engine_erasure *out,
                    struct st_err *err);
/* Does receipt `id`'s digest cover exactly these keys (objects of the key columns)? An admin's
   check (engine_check_erasure); the answer is the match alone. */
struct svc_check_erasure_req {
    const char *table;
    const char *id;
    const struct wire_obj *keys;
    size_t nkeys;
};
int svc_check_erasure(struct engine *e, const struct svc_check_erasure_req *q, bool *match,
                      struct st_err *err);
/* A page of receipts, oldest first (limit: default and largest SVC_SNAPSHOTS_PAGE). */
struct svc_erasures_res {
    struct engine_erasure *receipts; /* n of them, oldest first (caller frees, free()) */
    size_t n;
    char next[40]; /* "" at the end */
};
int svc_list_erasures(struct engine *e, const char *table, struct svc_count limit,
                      const char *after, struct svc_erasures_res *out, struct st_err *err);

/* ---- CDC: Debezium events (docs/API.md "CDC endpoint", cdc.h, service_cdc.c) ---- */

struct svc_cdc_route {
    const char *source; /* "db.table" or "schema.table" as Debezium names the source table */
    const char *table;
};

/* --cdc-schema: what a change of the source's columns does (docs/API.md "CDC schema changes") */
enum svc_cdc_schema {
    SVC_CDC_EVOLVE = 0, /* new columns added, int widened to long, ahead of the rows */
    SVC_CDC_REFUSE,     /* a new or changed column is a 400 naming it */
    SVC_CDC_IGNORE_NEW, /* the values of unknown columns are dropped (counted) */
};
/* "evolve", "refuse", "ignore-new" (config.c checked it; NULL: evolve) into the policy. */
enum svc_cdc_schema svc_cdc_schema_of(const char *name);

struct svc_cdc_req {
    const void *body; /* borrowed */
    size_t len;
    const char *content_type; /* NULL: none */
    const char *table;        /* ?table=: every event goes there; NULL: route each */
    const struct svc_cdc_route *routes;
    size_t nroutes;
    const struct auth_ctx *auth; /* the caller's token: write scope on each routed table */
    enum svc_cdc_schema schema;  /* --cdc-schema */
};

struct svc_cdc_table {
    char name[ST_NAME_MAX + 1];
    int64_t seq;
    int64_t inserted, updated, deleted, duplicates;
    int64_t schema_changes; /* columns added, widened or made optional (evolve) */
    int64_t ignored;        /* values of unknown columns dropped (ignore-new) */
    int32_t schema_id;      /* the table's schema after the request */
};

struct svc_cdc_res {
    struct svc_cdc_table *tables; /* in the order the body first names them */
    size_t n;
    bool no_change; /* nothing but heartbeats, schema changes, messages, tombstones: 204 */
};

/*
 * Decode, route, check and convert every event before anything commits
 * (q->auth's write scope on each routed table is checked as the event is
 * routed, before the table is looked up: 403 whether it exists or not;
 * a refused body changes nothing), then commit per table, each run of
 * events of one producer as one change request whose offset is its highest
 * position, after dropping the events at or before the stored position
 * (counted as duplicates). Under SVC_CDC_EVOLVE a table whose source
 * gained or widened columns is altered first (engine_alter_table, its own
 * commit ahead of the table's rows; everything else was checked before
 * it). Returns after everything is durable.
 */
int svc_cdc_apply(struct engine *e, const struct svc_cdc_req *q, struct svc_cdc_res *out,
                  struct st_err *err);
void svc_cdc_res_clear(struct svc_cdc_res *r);

/* ---- reads -------------------------------------------------------------------- */

struct svc_scan_req {
    const char *table;
    struct svc_count snapshot;
    bool has_columns; /* false: all columns, in table order */
    const char *const *columns;
    size_t ncolumns;
    struct svc_filter filter;
    struct svc_count limit;
};

/* An open scan: the table and the filter it reads with, freed together. */
struct svc_scan {
    struct engine_table *table;
    struct filter *filter;
    struct engine_scan *scan;
    int *columns;
};
int svc_scan_open(struct engine *e, const struct svc_scan_req *q, struct svc_scan *out,
                  struct st_err *err);
void svc_scan_close(struct svc_scan *s);

struct svc_plan_req {
    const char *table;
    struct svc_count snapshot;
    struct svc_filter filter;
    bool presign;                /* presigned GET URLs (an object store only) */
    struct svc_count expires_in; /* seconds, 1..604800; default SVC_PRESIGN_DEFAULT_S */
};
#define SVC_PRESIGN_DEFAULT_S 3600
struct svc_plan_res {
    struct engine_table *table;
    int64_t seq;
    struct engine_plan_file *files;
    size_t nfiles;
    int64_t expires_at_s; /* presign: when the URLs expire (seconds since the epoch) */
};
int svc_plan(struct engine *e, const struct svc_plan_req *q, struct svc_plan_res *out,
             struct st_err *err);
void svc_plan_res_clear(struct svc_plan_res *r);

/* docs/API.md: default and largest page. */
#define SVC_SNAPSHOTS_PAGE 1000

struct svc_snapshots_req {
    const char *table;
    struct svc_count limit; /* >= 1; above SVC_SNAPSHOTS_PAGE is taken as it */
    struct svc_count after; /* a seq */
};
struct svc_snapshots_res {
    struct engine_snapshot_info *snapshots;
    size_t n;
    bool has_next;
    int64_t next; /* the `after` of the next page */
};
int svc_list_snapshots(struct engine *e, const struct svc_snapshots_req *q,
                       struct svc_snapshots_res *out, struct st_err *err);
void svc_snapshots_res_clear(struct svc_snapshots_res *r);

/*
 * A file's deletion vector. The format is parsed by the codec with
 * engine_dv_format (HTTP does it on its event thread, to answer cached DVs
 * there without a worker: http_files.c, grpc_rpc.c f_get_dv).
 */
struct svc_dv_req {
    const char *table;
    int64_t file_id; /* > 0 */
    struct svc_count snapshot;
    enum dv_format format;
};
struct svc_dv_res {
    struct engine_dv_bytes *bytes;
    int64_t snapshot; /* the snapshot answered */
};
int svc_get_dv(struct engine *e, const struct svc_dv_req *q, struct svc_dv_res *out,
               struct st_err *err);
void svc_dv_res_clear(struct svc_dv_res *r);

/* A data file of the table: its absolute path in the local blob store (caller frees). */
int svc_file_path(struct engine *e, const char *table, int64_t file_id, char **abs_path,
                  struct st_err *err);
/* The same file opened for range reads on any blob store (an object store's). */
struct blob_file;
int svc_file_open(struct engine *e, const char *table, int64_t file_id, struct blob_file **out,
                  struct st_err *err);

/* ---- maintenance ------------------------------------------------------------------ */

/*
 * POST /v1/tables/{t}/expire and gRPC Expire. retain_last: >= 1 when given.
 * older_than: a duration ("7d", "12h", "30m", "90s"; bare digits are
 * seconds), NULL when absent. Neither given: older_than is the server's
 * --retain (default_retain_s). Idempotency-Key is not stored for expiry:
 * the call is idempotent by itself (a repeat expires nothing more, or what
 * aged past the bound since).
 */
struct svc_expire_req {
    const char *table;
    struct svc_count retain_last;
    const char *older_than;
    int64_t default_retain_s;
};
int svc_expire(struct engine *e, const struct svc_expire_req *q, struct engine_expire_res *out,
               struct st_err *err);

/* GET /v1/tables/{t}/health and gRPC TableHealth: limit as for snapshots. */
struct svc_health_req {
    const char *table;
    struct svc_count limit; /* >= 1; above SVC_SNAPSHOTS_PAGE is taken as it */
    struct svc_count after; /* a file id */
    int64_t retain_s;       /* the server's --retain, for the expiry advice */
};
int svc_table_health(struct engine *e, const struct svc_health_req *q, struct engine_health *out,
                     struct st_err *err);

/* ---- the validators, without the engine (the operations call them; so do fuzz targets) ---- */

/*
 * A create request as the engine's table_def: names checked, types parsed
 * into cols[0..q->ncols) (caller's array); the engine checks the rest
 * (duplicates, the key, the version column).
 */
int svc_table_def(const struct svc_create_req *q, struct st_column *cols,
                  struct engine_table_def *def, struct st_err *err);
/* A scan's columns as indexes of t (*out NULL: all; else caller frees): distinct, known. */
int svc_scan_columns(const struct engine_table *t, const struct svc_scan_req *q, int **out,
                     struct st_err *err);

/* ---- Idempotency-Key ---------------------------------------------------------------- */

/*
 * The Idempotency-Key record of a mutating request (engine_idem): `key` and
 * the hash of the request as decoded, the same on both wires. NULL when
 * `key` is NULL (no key); else `out`, filled. The hash is SHA-256 of a
 * canonical encoding of the request struct (service.c): the operation's
 * name and every field in a fixed order, the members of a change's objects
 * and of a filter's JSON objects sorted by name, so that the same request
 * hashes the same whatever the wire (HTTP or gRPC), JSON's key order or
 * whitespace, and protobuf's map order, and a different request differently.
 * q->idem is not part of it. `key` is borrowed (it must outlive the call the
 * result is passed to) and checked by the caller (engine_idem_key_valid).
 */
const struct engine_idem *svc_idem_create(const struct svc_create_req *q, const char *key,
                                          struct engine_idem *out);
const struct engine_idem *svc_idem_drop(const char *table, const char *key,
                                        struct engine_idem *out);
const struct engine_idem *svc_idem_changes(const struct svc_changes_req *q, const char *key,
                                           struct engine_idem *out);
const struct engine_idem *svc_idem_delete(const struct svc_delete_req *q, const char *key,
                                          struct engine_idem *out);
const struct engine_idem *svc_idem_erase(const struct svc_erase_req *q, const char *key,
                                         struct engine_idem *out);

/* ---- shared rules ----------------------------------------------------------------- */

/* The names of the column types, as error messages list them. */
extern const char svc_type_names[];

#endif
