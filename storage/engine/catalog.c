/* catalog.c - connection pool, migrations and liveness for the catalog. */
#include "catalog.h"
#include "catalog_int.h"

#include "common/log.h"
#include "common/xalloc.h"

#include <assert.h>
#include <errno.h>
#include <libpq-events.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* Key of the advisory lock that serialises migrations (ASCII "strikeMG"). */
#define MIGRATION_LOCK_KEY 0x737472696b654d47LL

struct cat_pool {
    char *conninfo;
    cat_conn_hook hook;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    PGconn **idle;
    int nidle;
    int open; /* connections in use or idle */
    int max;
    /* liveness probes (catalog.h), under mu: the last one's start and result */
    bool probing;
    bool probed;
    bool probe_failed;
    int64_t probe_began_ms;
};

/* What the pool knows of each connection it made (libpq instance data). */
struct conn_info {
    struct cat_pool *pool;
    bool stalled; /* a call gave up on it: the catalog stopped answering */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* libpq event procedure: only to hang a conn_info on each connection, and free it. */
static int conn_event(PGEventId id, void *evt, void *pass)
{
    (void)pass;
    if (id == PGEVT_CONNDESTROY) {
        PGEventConnDestroy *d = evt;
        free(PQinstanceData(d->conn, conn_event));
    }
    return 1;
}

static struct conn_info *conn_info(const PGconn *c)
{
    return c ? PQinstanceData(c, conn_event) : NULL;
}

int cat_schema_version(void)
{
    return cat__migrations[cat__nmigrations - 1].version;
}

bool cat_conn_failed(PGconn *c, const PGresult *r)
{
    if (PQstatus(c) != CONNECTION_OK)
        return true;
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    /* Class 08: connection exception; 57P01..57P03: shutdown, cannot connect now. */
    return state == NULL ? r == NULL
                         : strncmp(state, "08", 2) == 0 || strncmp(state, "57P0", 4) == 0;
}

int cat_fail(PGconn *c, const PGresult *r, const char *what, struct st_err *err)
{
    const struct conn_info *ci = conn_info(c);
    if (ci != NULL && ci->stalled)
        return st_errf(err, ST_EUNAVAIL,
                       "catalog unreachable during %s: no answer for %d ms, and none to a new "
                       "connection within %d s",
                       what, CAT_STALL_PROBE_AFTER_MS, CAT_PROBE_TIMEOUT_S);
    const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(c);
    char clean[300];
    snprintf(clean, sizeof clean, "%s", msg ? msg : "");
    size_t n = strlen(clean);
    while (n > 0 && (clean[n - 1] == '\n' || clean[n - 1] == ' '))
        clean[--n] = '\0';
    if (cat_conn_failed(c, r))
        return st_errf(err, ST_EUNAVAIL, "catalog unreachable during %s: %s", what, clean);
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (state != NULL && strcmp(state, "57014") == 0) /* statement_timeout, or a cancel */
        return st_errf(err, ST_EUNAVAIL, "catalog too slow during %s: %s", what, clean);
    if (state != NULL && strcmp(state, "55P03") == 0) /* lock_timeout: another holds the lock */
        return st_errf(err, ST_EBUSY, "catalog lock not granted during %s: %s", what, clean);
    return st_errf(err, ST_EIO, "catalog error during %s: %s", what, clean);
}

/* Server notices ("relation already exists, skipping") go to the debug log, not stderr. */
static void on_notice(void *arg, const char *message)
{
    (void)arg;
    log_debug("catalog notice: %s", message);
}

/*
 * Is the catalog alive? A PQping on a fresh connection: any answer, even a
 * refusal, says yes; none within CAT_PROBE_TIMEOUT_S (connect_timeout, set
 * after the conninfo so that ours wins) says no.
 */
static bool probe(const struct cat_pool *p)
{
    char t[16];
    snprintf(t, sizeof t, "%d", CAT_PROBE_TIMEOUT_S);
    const char *const keys[] = {"dbname", "connect_timeout", NULL};
    const char *const vals[] = {p->conninfo, t, NULL};
    return PQpingParams(keys, vals, 1) != PQPING_NO_RESPONSE;
}

/*
 * Asked by a call that has seen no progress since `quiet_since` (ms,
 * monotonic): false once a probe begun at or after quiet_since failed. After
 * CAT_STALL_PROBE_AFTER_MS without progress (at once when the last probe
 * failed), it runs a probe itself when none runs and the last one failed or
 * began CAT_PROBE_PERIOD_MS ago; else the call keeps waiting.
 */
static bool catalog_alive(struct cat_pool *p, int64_t quiet_since)
{
    bool alive = true;
    pthread_mutex_lock(&p->mu);
    bool suspect = p->probed && p->probe_failed;
    if (!suspect && now_ms() - quiet_since < CAT_STALL_PROBE_AFTER_MS) {
        /* keep waiting */
    } else if (suspect && p->probe_began_ms >= quiet_since) {
        alive = false;
    } else if (!p->probing && (!p->probed || p->probe_failed ||
                               now_ms() - p->probe_began_ms >= CAT_PROBE_PERIOD_MS)) {
        p->probing = true;
        int64_t began = now_ms();
        pthread_mutex_unlock(&p->mu);
        bool ok = probe(p);
        pthread_mutex_lock(&p->mu);
        p->probing = false;
        p->probed = true;
        p->probe_failed = !ok;
        p->probe_began_ms = began;
        alive = ok;
        if (!ok)
            log_warn("catalog: no answer to a new connection within %d s: the calls waiting "
                     "for an answer give up",
                     CAT_PROBE_TIMEOUT_S);
    }
    pthread_mutex_unlock(&p->mu);
    return alive;
}

/*
 * Wait until PQgetResult will not block: flush what is queued, read what
 * comes. False when the catalog stalled: the connection is then broken (its
 * socket shut down, libpq read EOF) and marked so for cat_fail.
 */
/*
 * Wait on c's socket until it is ready (POLLIN, and POLLOUT when `out`) or the
 * catalog looks stalled: false after it broke the connection.
 */
static bool wait_ready(PGconn *c, struct conn_info *ci, bool out, int64_t *quiet_since)
{
    struct pollfd pfd = {.fd = PQsocket(c), .events = POLLIN | (out ? POLLOUT : 0)};
    int n = poll(&pfd, 1, CAT_STALL_POLL_MS);
    if (n > 0) {
        if ((pfd.revents & (POLLIN | POLLERR | POLLHUP)) && PQconsumeInput(c) == 0)
            return true; /* the failure is PQstatus's now */
        *quiet_since = now_ms();
        return true;
    }
    if (ci == NULL || ci->pool == NULL || catalog_alive(ci->pool, *quiet_since))
        return true;
    ci->stalled = true;
    shutdown(PQsocket(c), SHUT_RDWR);
    /* reads what was buffered, then EOF: CONNECTION_BAD (bounded, to be safe) */
    for (int i = 0; i < 1000 && PQconsumeInput(c) != 0; i++)
        ;
    return false;
}

static bool wait_result(PGconn *c)
{
    struct conn_info *ci = conn_info(c);
    int64_t quiet_since = now_ms();
    for (;;) {
        int f = PQflush(c);
        if (PQsocket(c) < 0 || (f <= 0 && !PQisBusy(c)))
            return true; /* a result, or a failure PQgetResult reports at once */
        if (PQstatus(c) != CONNECTION_OK)
            return true;
        if (!wait_ready(c, ci, f > 0, &quiet_since))
            return false;
    }
}

bool cat_pq_flush(PGconn *c)
{
    struct conn_info *ci = conn_info(c);
    int64_t quiet_since = now_ms();
    for (;;) {
        int f = PQflush(c);
        if (f <= 0 || PQsocket(c) < 0 || PQstatus(c) != CONNECTION_OK)
            return f == 0 && PQstatus(c) == CONNECTION_OK;
        /* results are read as they come (PQconsumeInput), so that neither side blocks */
        if (!wait_ready(c, ci, true, &quiet_since))
            return false;
    }
}

/* Collect a sent query's results as PQexec does: the last one, or the first error. */
static PGresult *exec_results(PGconn *c, int sent)
{
    if (sent != 1)
        return NULL;
    PGresult *keep = NULL;
    for (;;) {
        if (!wait_result(c)) {
            PQclear(keep);
            return NULL;
        }
        PGresult *r = PQgetResult(c);
        if (r == NULL)
            return keep;
        if (keep != NULL && PQresultStatus(keep) == PGRES_FATAL_ERROR) {
            PQclear(r);
        } else {
            PQclear(keep);
            keep = r;
        }
    }
}

PGresult *cat_pq_exec(PGconn *c, const char *sql)
{
    return exec_results(c, PQsendQuery(c, sql));
}

PGresult *cat_pq_exec_params(PGconn *c, const char *sql, int nparams, const Oid *types,
                             const char *const *values, const int *lengths, const int *formats,
                             int result_format)
{
    return exec_results(
        c, PQsendQueryParams(c, sql, nparams, types, values, lengths, formats, result_format));
}

PGresult *cat_pq_prepare(PGconn *c, const char *name, const char *sql, int nparams,
                         const Oid *types)
{
    return exec_results(c, PQsendPrepare(c, name, sql, nparams, types));
}

PGresult *cat_pq_get_result(PGconn *c)
{
    return wait_result(c) ? PQgetResult(c) : NULL;
}

static PGconn *connect_one(struct cat_pool *p, struct st_err *err)
{
    /* connect_timeout first: one in the conninfo (expanded after it) wins */
    char t[16];
    snprintf(t, sizeof t, "%d", CAT_CONNECT_TIMEOUT_S);
    const char *const keys[] = {"connect_timeout", "dbname", NULL};
    const char *const vals[] = {t, p->conninfo, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (c == NULL) {
        st_errf(err, ST_EUNAVAIL, "cannot connect to the catalog: out of memory");
        return NULL;
    }
    PQsetNoticeProcessor(c, on_notice, NULL);
    if (PQstatus(c) != CONNECTION_OK) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
        size_t n = strlen(msg);
        while (n > 0 && msg[n - 1] == '\n')
            msg[--n] = '\0';
        st_errf(err, ST_EUNAVAIL, "cannot connect to the catalog: %s", msg);
        PQfinish(c);
        return NULL;
    }
    struct conn_info *ci = xcalloc(1, sizeof *ci);
    ci->pool = p;
    if (PQregisterEventProc(c, conn_event, "strike catalog", NULL) != 1 ||
        PQsetInstanceData(c, conn_event, ci) != 1 || PQsetnonblocking(c, 1) != 0) {
        free(ci);
        st_errf(err, ST_EUNAVAIL, "cannot set up a catalog connection: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    char setup[320], check[64] = "";
    if (PQserverVersion(c) >= 140000) /* catalog.h CAT_CLIENT_CHECK_MS */
        snprintf(check, sizeof check, "; SET client_connection_check_interval = %d",
                 CAT_CLIENT_CHECK_MS);
    snprintf(setup, sizeof setup,
             "SET application_name = 'striked'; SET search_path = strike, pg_catalog; SET "
             "lock_timeout = %d; SET statement_timeout = %d; SET "
             "idle_in_transaction_session_timeout = %d%s",
             CAT_LOCK_TIMEOUT_MS, CAT_STATEMENT_TIMEOUT_MS, CAT_IDLE_IN_TX_TIMEOUT_MS, check);
    PGresult *r = cat_pq_exec(c, setup);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        cat_fail(c, r, "session setup", err);
        PQclear(r);
        PQfinish(c);
        return NULL;
    }
    PQclear(r);
    return c;
}

int cat_exec(PGconn *c, const char *sql, const char *what, struct st_err *err)
{
    PGresult *r = cat_pq_exec(c, sql);
    ExecStatusType s = PQresultStatus(r);
    int rc = ST_OK;
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
        rc = cat_fail(c, r, what, err);
    PQclear(r);
    return rc;
}

int cat_migrate(PGconn *c, struct st_err *err)
{
    return cat_migrate_to(c, cat_schema_version(), err);
}

int cat_migrate_to(PGconn *c, int upto, struct st_err *err)
{
    assert(upto >= 1 && upto <= cat_schema_version());
    /* a migration may build an index on a large catalog: no statement limit */
    int rc = cat_exec(c, "BEGIN; SET LOCAL statement_timeout = 0", "migration", err);
    if (rc != ST_OK)
        return rc;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%lld)", (long long)MIGRATION_LOCK_KEY);
    if ((rc = cat_exec(c, sql, "migration lock", err)) != ST_OK)
        goto rollback;
    rc = cat_exec(c,
                  "CREATE SCHEMA IF NOT EXISTS strike;"
                  "CREATE TABLE IF NOT EXISTS strike.schema_version ("
                  "  version int PRIMARY KEY,"
                  "  description text NOT NULL,"
                  "  applied_at timestamptz NOT NULL DEFAULT now())",
                  "migration bootstrap", err);
    if (rc != ST_OK)
        goto rollback;
    PGresult *r = cat_pq_exec(c, "SELECT coalesce(max(version), 0) FROM strike.schema_version");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "reading the schema version", err);
        PQclear(r);
        goto rollback;
    }
    int have = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (have > cat_schema_version()) {
        rc = st_errf(err, ST_EIO,
                     "catalog schema version %d is newer than this striked knows (%d): upgrade "
                     "striked",
                     have, cat_schema_version());
        goto rollback;
    }
    for (int i = 0; i < cat__nmigrations; i++) {
        const struct migration *m = &cat__migrations[i];
        if (m->version <= have || m->version > upto)
            continue;
        if ((rc = cat_exec(c, m->sql, m->description, err)) != ST_OK)
            goto rollback;
        const char *params[2];
        char v[16];
        snprintf(v, sizeof v, "%d", m->version);
        params[0] = v;
        params[1] = m->description;
        r = cat_pq_exec_params(c,
                               "INSERT INTO strike.schema_version (version, description) "
                               "VALUES ($1, $2)",
                               2, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            rc = cat_fail(c, r, "recording the schema version", err);
            PQclear(r);
            goto rollback;
        }
        PQclear(r);
        log_info("catalog: applied migration %d (%s)", m->version, m->description);
    }
    return cat_exec(c, "COMMIT", "migration commit", err);
rollback:
    PQclear(cat_pq_exec(c, "ROLLBACK"));
    return rc;
}

int cat_pool_open(const char *conninfo, int max_conns, struct cat_pool **out, struct st_err *err)
{
    *out = NULL;
    struct cat_pool *p = xcalloc(1, sizeof *p);
    p->conninfo = xstrdup(conninfo);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->max = max_conns > 0 ? max_conns : 16;
    p->idle = xcalloc((size_t)p->max, sizeof *p->idle);
    PGconn *c = connect_one(p, err);
    int rc = c == NULL ? (err ? err->code : ST_EUNAVAIL) : cat_migrate(c, err);
    if (rc != ST_OK) {
        PQfinish(c);
        cat_pool_close(p);
        return rc;
    }
    p->idle[p->nidle++] = c;
    p->open = 1;
    *out = p;
    return ST_OK;
}

int cat_pool_set_hook(struct cat_pool *p, cat_conn_hook fn, struct st_err *err)
{
    pthread_mutex_lock(&p->mu);
    p->hook = fn;
    int rc = ST_OK;
    for (int i = 0; i < p->nidle && rc == ST_OK; i++)
        rc = fn(p->idle[i], err);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void cat_pool_close(struct cat_pool *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->nidle; i++)
        PQfinish(p->idle[i]);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->idle);
    free(p->conninfo);
    free(p);
}

int cat_acquire(struct cat_pool *p, PGconn **out, int wait_ms, struct st_err *err)
{
    *out = NULL;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += wait_ms / 1000;
    deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    while (p->nidle == 0 && p->open >= p->max) {
        if (pthread_cond_timedwait(&p->cv, &p->mu, &deadline) == ETIMEDOUT) {
            pthread_mutex_unlock(&p->mu);
            return st_errf(err, ST_EUNAVAIL, "all %d catalog connections are busy", p->max);
        }
    }
    PGconn *c = NULL;
    if (p->nidle > 0) {
        c = p->idle[--p->nidle];
    } else {
        p->open++;
    }
    pthread_mutex_unlock(&p->mu);
    /* An idle connection whose server went away reads EOF here (the socket is non-blocking). */
    if (c != NULL && (PQconsumeInput(c) == 0 || PQstatus(c) != CONNECTION_OK)) {
        PQfinish(c);
        c = NULL;
    }
    if (c == NULL) {
        c = connect_one(p, err);
        if (c != NULL && p->hook != NULL && p->hook(c, err) != ST_OK) {
            PQfinish(c);
            c = NULL;
        }
        if (c == NULL) {
            pthread_mutex_lock(&p->mu);
            p->open--;
            pthread_cond_signal(&p->cv);
            pthread_mutex_unlock(&p->mu);
            return err ? err->code : ST_EUNAVAIL;
        }
    }
    *out = c;
    return ST_OK;
}

void cat_release(struct cat_pool *p, PGconn *c, bool broken)
{
    if (c == NULL)
        return;
    if (!broken && PQtransactionStatus(c) != PQTRANS_IDLE) {
        /* A caller left a transaction open (an error path): do not hand it on. */
        PQclear(cat_pq_exec(c, "ROLLBACK"));
        broken = PQtransactionStatus(c) != PQTRANS_IDLE;
    }
    pthread_mutex_lock(&p->mu);
    if (broken || PQstatus(c) != CONNECTION_OK) {
        PQfinish(c);
        p->open--;
    } else {
        p->idle[p->nidle++] = c;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int cat_ping(struct cat_pool *p, struct st_err *err)
{
    PGconn *c;
    int rc = cat_acquire(p, &c, CAT_WAIT_PING_MS, err);
    if (rc != ST_OK)
        return rc;
    PGresult *r = cat_pq_exec(c, "SELECT 1");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "ping", err);
        PQclear(r);
        cat_release(p, c, true);
        return rc == ST_EIO ? ST_EUNAVAIL : rc;
    }
    PQclear(r);
    cat_release(p, c, false);
    return ST_OK;
}
