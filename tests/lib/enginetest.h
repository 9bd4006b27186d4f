/*
 * enginetest.h - helpers for tests that drive the engine directly: an
 * engine on a fresh fixture database and temp blob dir, and scans into
 * plain rows.
 */
#ifndef STRIKE_ENGINETEST_H
#define STRIKE_ENGINETEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

struct et {
    struct engine *e;
    char *conninfo;
    char data_dir[128]; /* a directory, or s3://bucket/prefix under the s3 fixture */
    const struct blob_s3_opts *s3;
    int64_t dv_inline_max;   /* engine_opts.dv_inline_max of et_reopen (et_open: the default) */
    uint32_t row_group_rows; /* et_open's, kept by et_reopen */
};

/* Open an engine on database `db` (dropped and created) and a new temp dir. */
void et_open(struct et *t, const char *db, uint32_t row_group_rows);
/* Reopen the engine on the same database and directory (a "restart"). */
void et_reopen(struct et *t);
void et_close(struct et *t, bool remove_dir);

/* Create a table from a JSON-free compact spec: "name:type[!]" columns, "!" = required. */
struct engine_table *et_create(struct et *t, const char *name, const char *const *cols, int ncols,
                               const char *const *pk, int npk, const char *version_col);

/* A scanned row: values of every column (strings copied). */
struct et_row {
    struct st_value *v;
    char **strs;
    int ncols;
};
struct et_rows {
    struct et_row *rows;
    size_t n;
    int64_t snapshot;
};
/* Scan the whole table (snapshot < 0: current); aborts the test on error. */
void et_scan(struct et *t, struct engine_table *tab, int64_t snapshot, struct et_rows *out);
/* The same, returning the engine status instead of aborting. */
int et_scan_rc(struct et *t, struct engine_table *tab, int64_t snapshot, struct et_rows *out,
               struct st_err *err);
void et_rows_free(struct et_rows *r);

/*
 * For tables of (id long, v long): the v of row `id` at the current
 * snapshot, -1 when absent; *count says how many rows have that id.
 */
int64_t et_value_of(struct et *t, struct engine_table *tab, int64_t id, int *count);

/*
 * For tables of (id long, v long): upsert (ids[i], vs[i]), or delete key ids[i]
 * when vs[i] < 0, in one request. The engine's status (its message printed).
 */
int et_put(struct et *t, struct engine_table *tab, const int64_t *ids, const int64_t *vs, size_t n,
           struct engine_change_res *res);
/* The same for the upserts of keys from .. from + n - 1, each with v = key * mult. */
int et_put_range(struct et *t, struct engine_table *tab, int64_t from, size_t n, int64_t mult,
                 struct engine_change_res *res);

/* SQL for a test's own checks; each aborts the test, naming the statement, on an error. */
struct pg_conn; /* libpq's PGconn */
/* Run a statement on c. */
void et_exec(struct pg_conn *c, const char *sql);
/* The first column of the only row of a query on c, as an integer. */
int64_t et_query_i64(struct pg_conn *c, const char *sql);
/* The same on a connection of their own to the test's catalog. */
void et_sql(struct et *t, const char *sql);
int64_t et_sql_i64(struct et *t, const char *sql);
/* A session of its own that holds table `table_id`'s row (FOR UPDATE, in an open transaction), as
   another server's long commit would: COMMIT on it and PQfinish to let go. */
struct pg_conn *et_hold_table_row(struct et *t, int64_t table_id);

#endif
