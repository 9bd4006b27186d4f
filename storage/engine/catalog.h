/*
 * catalog.h - the PostgreSQL catalog: a connection pool, versioned schema
 * migrations, and liveness.
 *
 * Every durable fact about a table lives in schema `strike` (docs/DESIGN.md "Data
 * model"). Migrations run in one transaction under an advisory lock, so any
 * number of striked processes may start against one catalog at once.
 */
#ifndef STRIKE_CATALOG_H
#define STRIKE_CATALOG_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "common/err.h"

struct cat_pool;

/*
 * Open a pool of at most `max_conns` connections to `conninfo` (a URL or
 * key=value string). Connects once to check the catalog, then runs the
 * migrations. Fails with ST_EUNAVAIL when the catalog cannot be reached.
 */
int cat_pool_open(const char *conninfo, int max_conns, struct cat_pool **out, struct st_err *err);

/*
 * Run `fn` on every connection the pool makes from now on, after migrations,
 * and on the connections it holds (e.g. to PQprepare statements). A failing
 * hook fails the connection.
 */
typedef int (*cat_conn_hook)(PGconn *c, struct st_err *err);
int cat_pool_set_hook(struct cat_pool *p, cat_conn_hook fn, struct st_err *err);
void cat_pool_close(struct cat_pool *p);

/*
 * Borrow a connection (reconnecting if needed). Waits up to
 * `wait_ms` for a free one. ST_EUNAVAIL when the catalog is down.
 */
int cat_acquire(struct cat_pool *p, PGconn **out, int wait_ms, struct st_err *err);
/* Return a connection; pass broken=true after a connection-level failure. */
void cat_release(struct cat_pool *p, PGconn *c, bool broken);

/* PQexec a statement that returns no parameters; ST_OK or the mapped error (cat_fail). */
int cat_exec(PGconn *c, const char *sql, const char *what, struct st_err *err);

/* SELECT 1 on a pooled connection. */
int cat_ping(struct cat_pool *p, struct st_err *err);

/* Apply missing migrations (called by cat_pool_open). */
int cat_migrate(PGconn *c, struct st_err *err);
/* The schema version this build knows. */
int cat_schema_version(void);

/* True when the result's SQLSTATE says the connection itself failed. */
bool cat_conn_failed(PGconn *c, const PGresult *r);

/*
 * Map a failed result to a status: connection loss -> ST_EUNAVAIL,
 * anything else -> ST_EIO, with `what` and the server's message.
 */
int cat_fail(PGconn *c, const PGresult *r, const char *what, struct st_err *err);

#endif
