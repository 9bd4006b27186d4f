/* catalog.c - connection pool, migrations and liveness for the catalog. */
#include "catalog.h"
#include "catalog_int.h"

#include "common/log.h"
#include "common/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
};

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
    return st_errf(err, ST_EIO, "catalog error during %s: %s", what, clean);
}

/* Server notices ("relation already exists, skipping") go to the debug log, not stderr. */
static void on_notice(void *arg, const char *message)
{
    (void)arg;
    log_debug("catalog notice: %s", message);
}

static PGconn *connect_one(const char *conninfo, struct st_err *err)
{
    PGconn *c = PQconnectdb(conninfo);
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
    char setup[256];
    snprintf(setup, sizeof setup,
             "SET application_name = 'striked'; SET search_path = strike, pg_catalog; SET "
             "lock_timeout = %d; SET statement_timeout = %d; SET "
             "idle_in_transaction_session_timeout = %d",
             CAT_LOCK_TIMEOUT_MS, CAT_STATEMENT_TIMEOUT_MS, CAT_IDLE_IN_TX_TIMEOUT_MS);
    PGresult *r = PQexec(c, setup);
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
    PGresult *r = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(r);
    int rc = ST_OK;
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
        rc = cat_fail(c, r, what, err);
    PQclear(r);
    return rc;
}

int cat_migrate(PGconn *c, struct st_err *err)
{
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
    PGresult *r = PQexec(c, "SELECT coalesce(max(version), 0) FROM strike.schema_version");
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
        if (m->version <= have)
            continue;
        if ((rc = cat_exec(c, m->sql, m->description, err)) != ST_OK)
            goto rollback;
        const char *params[2];
        char v[16];
        snprintf(v, sizeof v, "%d", m->version);
        params[0] = v;
        params[1] = m->description;
        r = PQexecParams(c,
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
    PQclear(PQexec(c, "ROLLBACK"));
    return rc;
}

int cat_pool_open(const char *conninfo, int max_conns, struct cat_pool **out, struct st_err *err)
{
    *out = NULL;
    PGconn *c = connect_one(conninfo, err);
    if (c == NULL)
        return err ? err->code : ST_EUNAVAIL;
    int rc = cat_migrate(c, err);
    if (rc != ST_OK) {
        PQfinish(c);
        return rc;
    }
    struct cat_pool *p = xcalloc(1, sizeof *p);
    p->conninfo = xstrdup(conninfo);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->max = max_conns > 0 ? max_conns : 16;
    p->idle = xcalloc((size_t)p->max, sizeof *p->idle);
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
        c = connect_one(p->conninfo, err);
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
        PQclear(PQexec(c, "ROLLBACK"));
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
    PGresult *r = PQexec(c, "SELECT 1");
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
