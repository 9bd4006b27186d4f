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

struct svc_column {
    const char *name; /* NULL or "": missing */
    const char *type; /* NULL or "": missing; a name of st_type_parse */
    bool required;
};

struct svc_create_req {
    const char *name; /* NULL or "": missing */
    const struct svc_column *cols;
    size_t ncols;
    const char *const *pk;
    size_t npk;
    const char *version_column; /* NULL or "": none */
    const struct st_idem *idem;
};

struct svc_table_res {
    struct table *table;
    bool has_stats; /* get_table only */
    struct table_stats stats;
    bool replayed; /* create only */
};
void svc_table_res_clear(struct svc_table_res *r);

int svc_create_table(struct engine *e, const struct svc_create_req *q, struct svc_table_res *out,
                     struct st_err *err);
/* The current definition (fresh seq) and its stats at the current snapshot. */
int svc_get_table(struct engine *e, const char *name, struct svc_table_res *out,
                  struct st_err *err);

struct svc_table_list {
    struct table **tables;
    size_t n;
};
int svc_list_tables(struct engine *e, struct svc_table_list *out, struct st_err *err);
void svc_table_list_clear(struct svc_table_list *l);

int svc_drop_table(struct engine *e, const char *name, const struct st_idem *idem, bool *replayed,
                   struct st_err *err);

/* ---- changes and deletes ------------------------------------------------------- */

struct svc_changes_req {
    const char *table;
    const struct wire_change *changes;
    size_t nchanges;
    const char *producer; /* NULL: none */
    struct svc_count offset;
    struct svc_count expected_seq;
    const struct st_idem *idem;
};
int svc_apply_changes(struct engine *e, const struct svc_changes_req *q, struct change_res *out,
                      struct st_err *err);

struct svc_delete_req {
    const char *table;
    struct svc_filter filter; /* required */
    struct svc_count expected_seq;
    const struct st_idem *idem;
};
int svc_delete_where(struct engine *e, const struct svc_delete_req *q, struct delete_res *out,
                     struct st_err *err);

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
    struct table *table;
    struct filter *filter;
    struct scan *scan;
    int *columns;
};
int svc_scan_open(struct engine *e, const struct svc_scan_req *q, struct svc_scan *out,
                  struct st_err *err);
void svc_scan_close(struct svc_scan *s);

struct svc_plan_req {
    const char *table;
    struct svc_count snapshot;
    struct svc_filter filter;
};
struct svc_plan_res {
    struct table *table;
    int64_t seq;
    struct plan_file *files;
    size_t nfiles;
};
int svc_plan(struct engine *e, const struct svc_plan_req *q, struct svc_plan_res *out,
             struct st_err *err);
void svc_plan_res_clear(struct svc_plan_res *r);

struct svc_snapshots_res {
    struct snapshot_info *snapshots;
    size_t n;
};
int svc_list_snapshots(struct engine *e, const char *table, struct svc_snapshots_res *out,
                       struct st_err *err);
void svc_snapshots_res_clear(struct svc_snapshots_res *r);

/* ---- shared rules ----------------------------------------------------------------- */

/* The names of the column types, as error messages list them. */
extern const char svc_type_names[];

#endif
