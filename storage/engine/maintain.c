/*
 * maintain.c - the background maintenance task: every maint_interval_s
 * (--compact-interval), each table is maintained by one server at a time:
 * its inline DVs move to a Puffin file and its DV rows whose delta holds
 * ENGINE_DV_FOLD_AT positions or more are folded (dvflush.c), compaction runs where
 * the policy says so, the key index catches up with the table's rewrites
 * (remap.c: key rows that still point into replaced files move to where their
 * rows are), and its snapshots older than retain_s (--retain) expire.
 *
 * One server at a time per table: a session-level PostgreSQL advisory lock
 * keyed by the table id, taken with pg_try_advisory_lock on a catalog
 * connection held for that table's maintenance. A server that does not get
 * it skips the table this round (another server is at it); a server that
 * dies mid-maintenance loses its session and with it the lock. Session
 * rather than transaction scope: maintenance runs its own transactions on
 * other connections, and a transaction held open around them would meet
 * idle_in_transaction_session_timeout. No thundering herd when many servers
 * share a catalog: each server's first pass starts at a random point of its
 * first interval, and every later pass is jittered by up to a tenth of the
 * interval, so their passes spread out instead of meeting on each lock.
 *
 * Within a server, a pass runs on up to o.maint_workers threads
 * (--maintenance-workers, default 2), each taking the next table of the
 * list when it is done with one: one big table's compaction holds one
 * worker while the others keep the rest of the tables maintained.
 */
#include "engine_int.h"
#include "engine_test.h"

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Advisory lock keys: "stMT" in the high 32 bits, the table id in the low 32. */
#define MAINT_LOCK_BASE 0x73744D5400000000LL

static int64_t lock_key(int64_t table_id)
{
    return MAINT_LOCK_BASE | (table_id & 0xffffffffLL);
}

long long engine_test_maint_lock_key(long long table_id)
{
    return (long long)lock_key(table_id);
}

/* Try the table's maintenance lock on c (session scope). */
static int try_lock(PGconn *c, int64_t table_id, bool *got, struct st_err *err)
{
    struct pgu_num k;
    const char *v[1] = {pgu_i64(&k, lock_key(table_id))};
    PGresult *r =
        cat_pq_exec_params(c, "SELECT pg_try_advisory_lock($1::bigint)", 1, NULL, v, NULL, NULL, 0);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = cat_fail(c, r, "taking the maintenance lock", err);
    else
        *got = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return rc;
}

static int unlock(PGconn *c, int64_t table_id, struct st_err *err)
{
    struct pgu_num k;
    const char *v[1] = {pgu_i64(&k, lock_key(table_id))};
    PGresult *r =
        cat_pq_exec_params(c, "SELECT pg_advisory_unlock($1::bigint)", 1, NULL, v, NULL, NULL, 0);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = cat_fail(c, r, "releasing the maintenance lock", err);
    PQclear(r);
    return rc;
}

/*
 * Maintain one table whose lock this server holds: move its inline DVs to
 * a Puffin file (so that a plan finds them there), compact, then expire the
 * snapshots older than the retention.
 */
static int maintain_table(struct engine *e, struct engine_table *t, struct st_err *err)
{
    int64_t flushed = 0;
    int frc = engine_flush_dvs(e, t, &flushed, err);
    if (frc == ST_EUNAVAIL || frc == ST_ENOTFOUND)
        return frc;
    if (frc !=
        ST_OK) { /* e.g. a damaged inline blob (fsck names it): compaction and expiry go on */
        log_warn("maintenance of table %s: flushing its inline DVs: %s", t->name, err->msg);
        st_err_clear(err);
    }
    /* compaction by the default policy first (compact.c); a table that a
       manual compaction or an erasure is rewriting is left to it */
    struct engine_compact_opts o;
    engine_compact_opts_default(&o);
    struct engine_compact_res cr;
    int rc = engine_compact(e, t, &o, &cr, err);
    if (rc == ST_ECONFLICT) {
        st_err_clear(err);
        rc = ST_OK;
    }
    if (rc != ST_OK)
        return rc;
    struct engine_catch_up_res cu;
    if ((rc = engine_catch_up(e, t, &cu, err)) != ST_OK)
        return rc;
    struct engine_expire_req q = {.has_older_than = true, .older_than_us = e->o.retain_s * 1000000};
    struct engine_expire_res res;
    return engine_expire(e, t, &q, &res, err);
}

/* One pass: the tables in name order, taken one at a time by the pass's workers. */
struct maint_pass {
    struct engine *e;
    struct engine_table **ts;
    size_t n;
    atomic_size_t next; /* the next table to take */
    atomic_bool halt;   /* the catalog is in trouble: no worker takes another table */
};

/* A test's stall (FAULT_MAINT_STALL_TABLE): the table's maintenance waits while it is armed. */
static void stall_point(struct engine *e, const struct engine_table *t)
{
    struct timespec ts = {0, 10 * 1000000L};
    while (atomic_load(&e->fault_maint_stall_table) == t->id && !atomic_load(&e->maint_stop))
        nanosleep(&ts, NULL);
}

/* Maintain table t if this server gets its lock; false: the pass should stop. */
static bool maintain_one(struct engine *e, struct engine_table *t)
{
    PGconn *c;
    struct st_err err = {0};
    if (cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, &err) != ST_OK) {
        log_warn("maintenance: %s", err.msg);
        return false;
    }
    bool got = false, unavailable = false;
    int rc = try_lock(c, t->id, &got, &err);
    if (rc == ST_OK && got) {
        stall_point(e, t);
        struct st_err e2 = {0};
        int mrc = maintain_table(e, t, &e2);
        if (mrc != ST_OK && mrc != ST_ENOTFOUND) /* not found: dropped meanwhile */
            log_warn("maintenance of table %s: %s", t->name, e2.msg);
        unavailable = mrc == ST_EUNAVAIL;
        atomic_fetch_add(&e->m_maintenance_runs, 1);
        rc = unlock(c, t->id, &err);
    } else if (rc == ST_OK) {
        log_debug("maintenance: table %s is being maintained by another server", t->name);
    }
    if (rc != ST_OK)
        log_warn("maintenance of table %s: %s", t->name, err.msg);
    /* on any failure the connection goes: closing the session drops its lock */
    cat_release(e->pool, c, rc != ST_OK);
    /* a catalog in trouble: the next pass tries again (each call on a
       stalled catalog takes seconds to give up, and close waits for it) */
    return rc == ST_OK && !unavailable;
}

static void *pass_worker(void *p)
{
    struct maint_pass *mp = p;
    while (!atomic_load(&mp->halt) && !atomic_load(&mp->e->maint_stop)) {
        size_t i = atomic_fetch_add(&mp->next, 1);
        if (i >= mp->n)
            break;
        if (!maintain_one(mp->e, mp->ts[i]))
            atomic_store(&mp->halt, true);
    }
    return NULL;
}

/*
 * One pass over every table, by up to o.maint_workers threads (this one and
 * helpers started for the pass), each taking the next table when it is
 * done with one: a long compaction holds one worker, the other tables go on.
 */
static void maintain_all(struct engine *e)
{
    struct maint_pass mp = {.e = e};
    struct st_err err = {0};
    if (engine_list_tables(e, &mp.ts, &mp.n, &err) != ST_OK) {
        log_warn("maintenance: cannot list tables: %s", err.msg);
        return;
    }
    atomic_init(&mp.next, 0);
    atomic_init(&mp.halt, false);
    pthread_t helpers[ENGINE_MAINT_WORKERS_MAX];
    size_t want = (size_t)e->o.maint_workers < mp.n ? (size_t)e->o.maint_workers : mp.n;
    size_t started = 0;
    while (started + 1 < want && pthread_create(&helpers[started], NULL, pass_worker, &mp) == 0)
        started++;
    pass_worker(&mp);
    for (size_t i = 0; i < started; i++)
        pthread_join(helpers[i], NULL);
    for (size_t i = 0; i < mp.n; i++)
        engine_table_unref(mp.ts[i]);
    free(mp.ts);
}

/* A random delay in [0, max_ms). */
static int64_t jitter_ms(unsigned *seed, int64_t max_ms)
{
    return max_ms > 0
               ? (int64_t)(rand_r(seed) % (unsigned)(max_ms > 0x7fffffff ? 0x7fffffff : max_ms))
               : 0;
}

static void *maint_main(void *p)
{
    struct engine *e = p;
    unsigned seed = (unsigned)st_mono_ns() ^ (unsigned)(uintptr_t)e;
    int64_t period_ms = e->o.maint_interval_s * 1000;
    int64_t wait_ms = jitter_ms(&seed, period_ms); /* the first pass: anywhere in the interval */
    pthread_mutex_lock(&e->maint_mu);
    while (!atomic_load(&e->maint_stop)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)(wait_ms / 1000);
        until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!atomic_load(&e->maint_stop) &&
               pthread_cond_timedwait(&e->maint_cv, &e->maint_mu, &until) == 0)
            ;
        if (atomic_load(&e->maint_stop))
            break;
        pthread_mutex_unlock(&e->maint_mu);
        maintain_all(e);
        pthread_mutex_lock(&e->maint_mu);
        wait_ms = period_ms + jitter_ms(&seed, period_ms / 10);
    }
    pthread_mutex_unlock(&e->maint_mu);
    return NULL;
}

int eng__maint_start(struct engine *e)
{
    pthread_mutex_init(&e->maint_mu, NULL);
    pthread_cond_init(&e->maint_cv, NULL);
    if (pthread_create(&e->maint_thread, NULL, maint_main, e) != 0) {
        pthread_mutex_destroy(&e->maint_mu);
        pthread_cond_destroy(&e->maint_cv);
        return ST_EIO;
    }
    e->maint_running = true;
    return ST_OK;
}

void eng__maint_stop(struct engine *e)
{
    if (!e->maint_running)
        return;
    pthread_mutex_lock(&e->maint_mu);
    atomic_store(&e->maint_stop, true);
    pthread_cond_broadcast(&e->maint_cv);
    pthread_mutex_unlock(&e->maint_mu);
    pthread_join(e->maint_thread, NULL);
    pthread_mutex_destroy(&e->maint_mu);
    pthread_cond_destroy(&e->maint_cv);
    e->maint_running = false;
}
