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
 * How long the engine waits on the catalog, in one place. A request that
 * cannot get a connection in time fails with ST_EUNAVAIL.
 */
#define CAT_WAIT_ACQUIRE_MS 5000         /* a connection for a read, a DDL call, gc */
#define CAT_WAIT_COMMIT_ACQUIRE_MS 10000 /* a connection for a commit (changes, delete) */
#define CAT_WAIT_PING_MS 2000            /* readiness: cat_ping */
/* Limits of every catalog session (catalog.c connect_one): a lock wait; one
   statement (a hung one cannot hold a transaction, and the table rows it
   locked, open for longer; migrations and table drops lift it for their own
   transaction); a transaction left idle by a stalled client. */
#define CAT_LOCK_TIMEOUT_MS 10000
#define CAT_STATEMENT_TIMEOUT_MS 60000
#define CAT_IDLE_IN_TX_TIMEOUT_MS 60000
/* client_connection_check_interval of every session (PostgreSQL 14+): while a
   statement runs, its backend looks this often whether the client's socket was
   closed, and if so ends the statement and the session. A striked killed in the
   middle of a long statement (a lock wait, a big commit) then holds no lock for
   more than about this long: its table's rewrite lock (409 to a retried
   compaction or erasure), its table's row. Without it the backend notices only
   when the statement ends, up to CAT_STATEMENT_TIMEOUT_MS later. One second: a
   retry after a crash waits about that long, and the check (a timer and a
   poll() per second) only ever runs in statements longer than that. It sees a
   closed socket, not a silent one: a partitioned client is noticed only by TCP
   keepalives (docs/OPERATIONS.md). */
#define CAT_CLIENT_CHECK_MS 1000
/* A commit whose transaction waited lock_timeout for a lock (SQLSTATE 55P03:
   another server's long commit holds the table's row) or was chosen as a
   deadlock's victim (40P01) lost to contention: it is retried like a lost
   CAS, but after CAT_LOCK_RETRIES such retries in one request it fails with
   ST_ECONFLICT, so that no request waits more than about
   (1 + CAT_LOCK_RETRIES) * CAT_LOCK_TIMEOUT_MS for a busy table. */
#define CAT_LOCK_RETRIES 2
/* After a connection loss around COMMIT (commit_sql.c resolve_unknown): up
   to 50 tries, each a connection then a 100 ms pause, none begun after
   CAT_RESOLVE_MAX_MS, before the outcome is reported unknown. Each try is
   bounded like any catalog call (below), so the resolver takes at most
   CAT_RESOLVE_MAX_MS plus one try: about 2 s when the catalog refuses at
   once, at most about 4.5 s when it hangs. */
#define CAT_RESOLVE_ATTEMPTS 50
#define CAT_RESOLVE_PAUSE_MS 100
#define CAT_RESOLVE_MAX_MS 2000
/* pg_terminate_backend of the lost connection's backend, then up to 200
   polls 10 ms apart (2 s) for it to go before the commit id is looked up. */
#define CAT_BACKEND_EXIT_POLLS 200
#define CAT_BACKEND_EXIT_POLL_MS 10
/*
 * No catalog call waits for a stalled catalog (a stopped or hung PostgreSQL,
 * a network that drops packets) for longer than a few seconds; no call on a
 * live catalog is cut short by the client, however long it legitimately
 * runs (a lock wait, a big commit, a migration, a table drop).
 *
 * - Connecting: libpq's connect_timeout, CAT_CONNECT_TIMEOUT_S, unless the
 *   conninfo names its own (connect_one).
 * - Every statement goes through cat_pq_* (PQexec, PQexecParams, PQprepare,
 *   PQgetResult alike), which sends asynchronously (connections are in
 *   non-blocking mode) and waits with poll() on the socket in slices of
 *   CAT_STALL_POLL_MS. Any byte read, or any write the socket took, is
 *   progress. After CAT_STALL_PROBE_AFTER_MS without progress (one slice
 *   when the last probe failed: the catalog is suspect) the waiting thread
 *   asks whether the catalog is alive: a probe, PQping on a fresh
 *   connection with connect_timeout CAT_PROBE_TIMEOUT_S (a stopped
 *   postmaster never answers the startup packet; a live one answers even
 *   when it refuses: alive). One probe runs at a time per pool and its
 *   result is shared: a thread starts one when none runs and the last began
 *   CAT_PROBE_PERIOD_MS ago or failed. A call gives up once a probe that
 *   began after its last progress failed: it shuts its own socket down (so
 *   the connection reads as broken and the pool discards it), and the call
 *   fails with ST_EUNAVAIL (a commit's caller then resolves the outcome:
 *   ST_EUNKNOWN when it cannot). While the catalog answers probes a call
 *   waits as long as it takes: the server's statement_timeout bounds it.
 * - Each thread decides for itself, on its own connection only; the pool's
 *   mutex guards the shared probe state.
 * So a call on a stalled catalog ends within about CAT_STALL_PROBE_AFTER_MS
 * + CAT_STALL_POLL_MS + CAT_PROBE_TIMEOUT_S (4.25 s) of its last progress,
 * once it is known stalled within CAT_STALL_POLL_MS + CAT_PROBE_TIMEOUT_S,
 * and a connection attempt within CAT_CONNECT_TIMEOUT_S (libpq counts whole
 * seconds: 1 to 2 s).
 */
#define CAT_CONNECT_TIMEOUT_S 2
#define CAT_STALL_POLL_MS 250
#define CAT_STALL_PROBE_AFTER_MS 2000
#define CAT_PROBE_TIMEOUT_S 2 /* libpq's minimum connect_timeout */
#define CAT_PROBE_PERIOD_MS 1000
/* Retry after a lost CAS: 0.5 ms plus a random part below 1 ms << min(attempt,
   CAT_BACKOFF_MAX_SHIFT) (2 ms .. 64 ms). */
#define CAT_BACKOFF_BASE_US 500
#define CAT_BACKOFF_MAX_SHIFT 6

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

/*
 * libpq's blocking calls, bounded as above: the same arguments and results.
 * On a stalled catalog they return NULL (cat_pq_get_result: as at the end of
 * a statement's results) with the connection broken (PQstatus is
 * CONNECTION_BAD; cat_fail says ST_EUNAVAIL). The connection must be one the
 * pool made (cat_acquire); on any other they wait without a bound.
 */
PGresult *cat_pq_exec(PGconn *c, const char *sql);
PGresult *cat_pq_exec_params(PGconn *c, const char *sql, int nparams, const Oid *types,
                             const char *const *values, const int *lengths, const int *formats,
                             int result_format);
PGresult *cat_pq_prepare(PGconn *c, const char *name, const char *sql, int nparams,
                         const Oid *types);
PGresult *cat_pq_get_result(PGconn *c);
/* Send everything libpq has queued (pipeline mode: no Sync needed); false when the connection
   broke or stalled (it is then CONNECTION_BAD). */
bool cat_pq_flush(PGconn *c);

/* cat_pq_exec a statement that returns no parameters; ST_OK or the mapped error (cat_fail). */
int cat_exec(PGconn *c, const char *sql, const char *what, struct st_err *err);

/* SELECT 1 on a pooled connection. */
int cat_ping(struct cat_pool *p, struct st_err *err);

/* Apply missing migrations (called by cat_pool_open). */
int cat_migrate(PGconn *c, struct st_err *err);
/* The same up to schema version `upto` only (1..cat_schema_version()): a catalog as an older
   striked left it, for the migration tests. */
int cat_migrate_to(PGconn *c, int upto, struct st_err *err);
/* The schema version this build knows. */
int cat_schema_version(void);

/* True when the result's SQLSTATE says the connection itself failed. */
bool cat_conn_failed(PGconn *c, const PGresult *r);

/*
 * Map a failed result to a status: connection loss or a statement cut
 * short (statement_timeout, SQLSTATE 57014) -> ST_EUNAVAIL, anything else
 * -> ST_EIO, with `what` and the server's message.
 */
int cat_fail(PGconn *c, const PGresult *r, const char *what, struct st_err *err);

#endif
