/*
 * test_engine_faults.c - the commit protocol under injected faults:
 *   - every commit's first CAS attempt loses: results are still right, the
 *     Parquet file is reused, the Puffin of the lost attempt is removed;
 *   - a crash between blob write and COMMIT: no visible change, the blobs
 *     are orphans that fsck lists and gc deletes;
 *   - the connection dies right after COMMIT is sent: the outcome is decided
 *     by the commit id, never committed twice;
 *   - ... and the catalog stays unreachable for the resolver's patience, or
 *     the old backend cannot be ended (a partition: it cannot tell its client
 *     is gone): ST_EUNKNOWN naming the commit, its
 *     blobs kept, the data intact once the commit lands, and a retry with
 *     the same Idempotency-Key applies it once;
 *   - a commit whose blobs are older than ENGINE_COMMIT_MAX_AGE_S gives up
 *     before COMMIT (checked before sending, and on the catalog's clock by
 *     the statement before COMMIT): nothing committed, its blobs deleted;
 *   - every catalog session bounds lock waits, statements and idle
 *     transactions, and checks for a vanished client while a statement runs;
 *   - a catalog that stops answering (a proxy that freezes, as a SIGSTOPped
 *     PostgreSQL does) fails every call within a few seconds, a statement,
 *     a big send, a pipeline, a connection, readiness, while a live
 *     catalog's long statement is not cut short;
 *   - a lock wait that times out (another server's long commit holds the
 *     table's row) is contention: retried, then 409, never a 500;
 *   - the planner holds generic plans made on an empty, never-analyzed key
 *     index: every per-key statement is still one index probe per key
 *     (never a scan of the table's keys per key of the batch).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/timeutil.h"
#include "engine/catalog.h"
#include "engine/pgutil.h"
#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"
#include "expr/filter.h"

#include <libpq-fe.h>

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_faults", 1024);
    /* every commit's DV in a Puffin file: these tests follow the blobs a commit writes
       through crashes, unknown outcomes and age limits (an inline DV has no blob) */
    T.dv_inline_max = -1;
    et_reopen(&T);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

static int upsert(struct engine_table *t, int64_t id, int64_t v, struct engine_change_res *res,
                  struct st_err *err)
{
    struct st_value vals[2] = {{0}};
    vals[0].v.l = id;
    vals[1].v.l = v;
    struct engine_change ch = {ENGINE_CHANGE_UPSERT, vals};
    struct engine_change_req req = {.table = t, .changes = &ch, .nchanges = 1};
    return engine_apply_changes(T.e, &req, res, err);
}

struct findings {
    int orphans, missing, corrupt;
};

static void on_finding(void *ctx, const char *kind, const char *path, const char *detail)
{
    struct findings *f = ctx;
    fprintf(stderr, "fsck: %s %s (%s)\n", kind, path, detail);
    if (strcmp(kind, "orphan") == 0)
        f->orphans++;
    else if (strcmp(kind, "missing") == 0)
        f->missing++;
    else
        f->corrupt++;
}

static struct findings fsck(void)
{
    struct findings f = {0};
    struct engine_gc_report rep;
    struct st_err err = {0};
    assert_int_equal(engine_fsck(T.e, on_finding, &f, &rep, &err), ST_OK);
    return f;
}

/* Set the modification time of every blob back by `seconds`. */
static void age_blobs(int seconds)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "find '%s/tables' -type f -exec touch -d '@%lld' {} +", T.data_dir,
             (long long)time(NULL) - seconds);
    assert_int_equal(system(cmd), 0);
}

struct gc_race {
    char insert[512];
    int calls;
};

/* What a commit racing the collector does: reference a blob the collector listed as an orphan. */
static void commit_during_gc(void *ctx)
{
    struct gc_race *g = ctx;
    et_sql(&T, g->insert);
    g->calls++;
}

/*
 * The collector refuses a grace shorter than a commit may take, and looks at
 * the catalog once more before it unlinks: a blob committed after it listed
 * the orphans is kept.
 */
static void test_gc_floor_and_last_look(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "gcrace", cols, 2, pk, 1, NULL);
    struct engine_change_res res;
    struct st_err err = {0};
    assert_int_equal(upsert(t, 1, 10, &res, &err), ST_OK);
    struct engine_gc_report rep;
    for (int64_t g = 0; g < ENGINE_GC_GRACE_MIN_S; g += 100) {
        st_err_clear(&err);
        assert_int_equal(engine_gc(T.e, g, false, &rep, &err), ST_EINVAL);
        assert_non_null(strstr(err.msg, "grace: at least 300s"));
    }
    /* two old orphans: one a racing commit takes, one nobody does */
    char taken[512], lost[512], rel_taken[160];
    snprintf(rel_taken, sizeof rel_taken, "tables/%s/data/zz-taken.parquet", t->uuid);
    snprintf(taken, sizeof taken, "%s/%s", T.data_dir, rel_taken);
    snprintf(lost, sizeof lost, "%s/tables/%s/data/zz-lost.parquet", T.data_dir, t->uuid);
    FILE *f = fopen(taken, "w");
    assert_non_null(f);
    fclose(f);
    f = fopen(lost, "w");
    assert_non_null(f);
    fclose(f);
    age_blobs(2 * ENGINE_GC_GRACE_MIN_S);
    struct gc_race race = {.calls = 0};
    snprintf(race.insert, sizeof race.insert,
             "INSERT INTO strike.data_files (table_id, path, record_count, file_size, data_seq, "
             "removed_seq) VALUES (%lld, '%s', 0, 0, 1, 1)",
             (long long)t->id, rel_taken);
    engine_test_gc_hook(T.e, commit_during_gc, &race);
    st_err_clear(&err);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    engine_test_gc_hook(T.e, NULL, NULL);
    assert_int_equal(race.calls, 1);
    assert_int_equal(access(taken, F_OK), 0); /* committed while the collector ran: kept */
    assert_int_equal(access(lost, F_OK), -1); /* nobody's: deleted */
    assert_int_equal(rep.deleted, 1);
    assert_int_equal(rep.orphans, 1);
    /* the referenced blobs of the table are untouched and it still reads */
    int count;
    assert_int_equal(et_value_of(&T, t, 1, &count), 10);
    char del[512];
    snprintf(del, sizeof del, "DELETE FROM strike.data_files WHERE path = '%s'", rel_taken);
    et_sql(&T, del);
    unlink(taken);
    engine_table_unref(t);
}

static void test_conflict_on_every_first_attempt(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "conflicts", cols, 2, pk, 1, NULL);
    engine_test_fault(T.e, FAULT_CONFLICT_FIRST_ATTEMPT, 1);
    struct engine_metrics before, after;
    engine_metrics(T.e, &before);
    struct engine_change_res res;
    struct st_err err = {0};
    for (int i = 0; i < 20; i++) {
        assert_int_equal(upsert(t, i % 5, i, &res, &err), ST_OK);
        assert_int_equal(res.seq, i + 1);
    }
    struct filter *f = NULL;
    const char *js = "{\"type\":\"lt\",\"term\":\"id\",\"value\":2}";
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err), ST_OK);
    struct engine_delete_res dr;
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, NULL, &dr, &err), ST_OK);
    assert_int_equal(dr.deleted, 2);
    assert_int_equal(dr.seq, 21);
    filter_free(f);
    engine_test_fault(T.e, FAULT_CONFLICT_FIRST_ATTEMPT, 0);
    engine_metrics(T.e, &after);
    assert_true(after.conflicts - before.conflicts >= 21);
    assert_true(after.retries - before.retries >= 21);
    int count;
    for (int id = 0; id < 5; id++) {
        int64_t v = et_value_of(&T, t, id, &count);
        if (id < 2) {
            assert_int_equal(count, 0);
        } else {
            assert_int_equal(count, 1);
            assert_int_equal(v, 15 + id);
        }
    }
    /* the lost attempts left nothing behind: their Puffin files were removed and
       their Parquet files reused */
    struct findings fi = fsck();
    assert_int_equal(fi.orphans, 0);
    assert_int_equal(fi.missing + fi.corrupt, 0);
    engine_table_unref(t);
}

static void test_crash_between_blobs_and_commit(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "crashy", cols, 2, pk, 1, NULL);
    struct engine_change_res res;
    struct st_err err = {0};
    /* two rows in one file, so that updating one writes a DV (not a whole-file removal) */
    struct st_value two[2][2] = {{{0}}};
    two[0][0].v.l = 1;
    two[0][1].v.l = 10;
    two[1][0].v.l = 2;
    two[1][1].v.l = 20;
    struct engine_change seed[2] = {{ENGINE_CHANGE_UPSERT, two[0]}, {ENGINE_CHANGE_UPSERT, two[1]}};
    struct engine_change_req sreq = {.table = t, .changes = seed, .nchanges = 2};
    assert_int_equal(engine_apply_changes(T.e, &sreq, &res, &err), ST_OK);
    assert_int_equal(res.seq, 1);

    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct engine *e;
        struct engine_opts o = {.conninfo = T.conninfo,
                                .data_dir = T.data_dir,
                                .pool_size = 2,
                                .dv_inline_max = T.dv_inline_max};
        struct st_err e2 = {0};
        if (engine_open(&o, &e, &e2) != ST_OK)
            _exit(3);
        struct engine_table *ct;
        if (engine_get_table(e, "crashy", &ct, &e2) != ST_OK)
            _exit(4);
        engine_test_fault(e, FAULT_CRASH_BEFORE_COMMIT, 1);
        struct st_value vals[2] = {{0}};
        vals[0].v.l = 1;
        vals[1].v.l = 99;
        struct engine_change ch = {ENGINE_CHANGE_UPSERT, vals};
        struct engine_change_req req = {.table = ct, .changes = &ch, .nchanges = 1};
        engine_apply_changes(e, &req, &res, &e2);
        _exit(5); /* not reached: the fault exits with 77 */
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 77);

    /* nothing visible changed */
    struct engine_table *now;
    assert_int_equal(engine_get_table(T.e, "crashy", &now, &err), ST_OK);
    assert_int_equal(now->seq, 1);
    engine_table_unref(now);
    int count;
    assert_int_equal(et_value_of(&T, t, 1, &count), 10);
    assert_int_equal(count, 1);
    /* its blobs are orphans: listed by fsck, kept by gc within the grace, then collected */
    struct findings fi = fsck();
    assert_true(fi.orphans >= 2); /* the Parquet file and the Puffin file */
    assert_int_equal(fi.missing + fi.corrupt, 0);
    struct engine_gc_report rep;
    assert_int_equal(engine_gc(T.e, 3600, false, &rep, &err), ST_OK);
    assert_int_equal(rep.deleted, 0);
    assert_true(rep.orphans >= 2);
    age_blobs(2 * ENGINE_GC_GRACE_MIN_S);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    assert_int_equal(rep.deleted, rep.orphans);
    fi = fsck();
    assert_int_equal(fi.orphans, 0);
    /* and the table still works */
    assert_int_equal(upsert(t, 1, 11, &res, &err), ST_OK);
    assert_int_equal(res.seq, 2);
    assert_int_equal(et_value_of(&T, t, 1, &count), 11);
    engine_table_unref(t);
}

static void test_connection_lost_at_commit(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "dropped", cols, 2, pk, 1, NULL);
    struct engine_change_res res;
    struct st_err err = {0};
    int64_t seq = 0;
    for (int i = 0; i < 12; i++) {
        engine_test_fault(T.e, FAULT_DROP_AT_COMMIT, 1);
        st_err_clear(&err);
        int rc = upsert(t, i % 3, 100 + i, &res, &err);
        if (rc != ST_OK)
            fail_msg("attempt %d: %s", i, err.msg);
        assert_int_equal(res.seq, seq + 1); /* committed exactly once */
        seq = res.seq;
        assert_int_equal(res.inserted + res.updated, 1);
        int count;
        assert_int_equal(et_value_of(&T, t, i % 3, &count), 100 + i);
        assert_int_equal(count, 1);
    }
    struct engine_snapshot_info *snaps;
    size_t ns;
    bool more;
    assert_int_equal(engine_list_snapshots(T.e, t, -1, SIZE_MAX, &snaps, &ns, &more, &err), ST_OK);
    assert_false(more);
    assert_int_equal(ns, 13); /* create + 12 commits, no duplicates */
    engine_snapshots_free(snaps, ns);
    struct findings fi = fsck();
    assert_int_equal(fi.missing + fi.corrupt, 0);
    engine_table_unref(t);
}

/* The blobs (regular files) of a table. */
static int count_blobs(const struct engine_table *t)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "find '%s/tables/%s' -type f | wc -l", T.data_dir, t->uuid);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    int n = -1;
    assert_int_equal(fscanf(f, "%d", &n), 1);
    pclose(f);
    return n;
}

static int64_t table_seq(const struct engine_table *t)
{
    char q[128];
    snprintf(q, sizeof q, "SELECT seq FROM strike.tables WHERE id = %lld", (long long)t->id);
    return et_sql_i64(&T, q);
}

/*
 * An ST_EUNKNOWN message names the commit (the client's only handle on it)
 * and says how to resolve it; the named commit is the one of snapshot `seq`.
 */
static void assert_names_commit(const struct st_err *err, const struct engine_table *t, int64_t seq)
{
    fprintf(stderr, "unknown outcome: %s\n", err->msg);
    const char *at = strstr(err->msg, "the outcome of commit ");
    assert_non_null(at);
    char id[37];
    snprintf(id, sizeof id, "%s", at + strlen("the outcome of commit "));
    assert_int_equal(strlen(id), 36);
    assert_non_null(strstr(err->msg, "retry with the same Idempotency-Key"));
    char q[256];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM strike.snapshots WHERE table_id = %lld AND seq = %lld AND "
             "commit_id = '%s'",
             (long long)t->id, (long long)seq, id);
    assert_int_equal(et_sql_i64(&T, q), 1);
}

/*
 * Rows 1, 2, 3 (v = 10 id) in one file: updating or deleting one of them
 * writes a DV (a Puffin file), and an update also a new Parquet file.
 */
static struct engine_table *seeded_table(const char *name, struct engine_change_res *res)
{
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, name, cols, 2, pk, 1, NULL);
    struct st_value rows[3][2] = {{{0}}};
    struct engine_change seed[3];
    for (int i = 0; i < 3; i++) {
        rows[i][0].v.l = i + 1;
        rows[i][1].v.l = 10 * (i + 1);
        seed[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, rows[i]};
    }
    struct engine_change_req sreq = {.table = t, .changes = seed, .nchanges = 3};
    struct st_err err = {0};
    assert_int_equal(engine_apply_changes(T.e, &sreq, res, &err), ST_OK);
    assert_int_equal(res->seq, 1);
    return t;
}

/*
 * The connection dies at COMMIT and the catalog stays unreachable for every
 * try of the resolver: the outcome is unknown. The request fails with
 * ST_EUNKNOWN naming the commit, the blobs stay (the COMMIT did land here:
 * deleting them would leave the table pointing at missing files), and a
 * retry with the same Idempotency-Key replays the commit instead of
 * applying it again. The same for a delete by filter.
 */
static void test_unknown_outcome_keeps_blobs(void **state)
{
    (void)state;
    struct engine_change_res res;
    struct engine_table *t = seeded_table("unknown", &res);
    int blobs = count_blobs(t);
    struct st_value vals[2] = {{0}};
    vals[0].v.l = 1;
    vals[1].v.l = 99;
    struct engine_change ch = {ENGINE_CHANGE_UPSERT, vals};
    struct engine_idem idem = {.key = "unknown-1"};
    memset(idem.hash, 3, 32);
    struct engine_change_req req = {.table = t, .changes = &ch, .nchanges = 1, .idem = &idem};
    engine_test_fault(T.e, FAULT_DROP_AT_COMMIT, 1);
    engine_test_fault(T.e, FAULT_RESOLVER_UNREACHABLE, CAT_RESOLVE_ATTEMPTS);
    struct st_err err = {0};
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_EUNKNOWN);
    engine_test_fault(T.e, FAULT_RESOLVER_UNREACHABLE, 0);
    assert_int_equal(table_seq(t), 2); /* it landed */
    assert_names_commit(&err, t, 2);
    assert_int_equal(count_blobs(t), blobs + 2); /* its Parquet and Puffin files are kept */
    int count;
    assert_int_equal(et_value_of(&T, t, 1, &count), 99);
    assert_int_equal(count, 1);
    struct findings fi = fsck();
    assert_int_equal(fi.missing + fi.corrupt + fi.orphans, 0);
    /* the client's way out: the same request with the same key, applied once */
    st_err_clear(&err);
    memset(&res, 0, sizeof res);
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_true(res.replayed);
    assert_int_equal(res.seq, 2);
    assert_int_equal(res.updated, 1);
    assert_int_equal(table_seq(t), 2);

    /* a delete by filter: its Puffin file is kept the same way */
    blobs = count_blobs(t);
    struct filter *f = NULL;
    const char *js = "{\"type\":\"eq\",\"term\":\"id\",\"value\":2}";
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err), ST_OK);
    struct engine_idem didem = {.key = "unknown-2"};
    memset(didem.hash, 4, 32);
    struct engine_delete_res dr;
    engine_test_fault(T.e, FAULT_DROP_AT_COMMIT, 1);
    engine_test_fault(T.e, FAULT_RESOLVER_UNREACHABLE, CAT_RESOLVE_ATTEMPTS);
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, &didem, &dr, &err), ST_EUNKNOWN);
    engine_test_fault(T.e, FAULT_RESOLVER_UNREACHABLE, 0);
    assert_int_equal(table_seq(t), 3);
    assert_names_commit(&err, t, 3);
    assert_int_equal(count_blobs(t), blobs + 1);
    assert_int_equal(et_value_of(&T, t, 2, &count), -1);
    assert_int_equal(count, 0);
    fi = fsck();
    assert_int_equal(fi.missing + fi.corrupt + fi.orphans, 0);
    st_err_clear(&err);
    memset(&dr, 0, sizeof dr);
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, &didem, &dr, &err), ST_OK);
    assert_true(dr.replayed);
    assert_int_equal(dr.seq, 3);
    assert_int_equal(dr.deleted, 1);
    filter_free(f);

    /* a catalog back within the resolver's patience decides the outcome */
    engine_test_fault(T.e, FAULT_DROP_AT_COMMIT, 1);
    engine_test_fault(T.e, FAULT_RESOLVER_UNREACHABLE, 3);
    vals[1].v.l = 100;
    req.idem = NULL;
    st_err_clear(&err);
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_int_equal(res.seq, 4);
    assert_int_equal(et_value_of(&T, t, 1, &count), 100);
    engine_table_unref(t);
}

/*
 * A unix-socket proxy to the fixture that can freeze: it then neither
 * accepts nor forwards a byte, as a SIGSTOPped PostgreSQL (the kernel
 * still queues connections and takes writes until the buffers fill).
 * Partitioned, it keeps the server's side of a connection whose client
 * went away open and silent, as a network partition would: the backend
 * cannot tell that its client is gone (until the proxy stops).
 */
#define PROXY_PAIRS 32
struct stall_proxy {
    char dir[64];
    char upstream[100]; /* fits a sockaddr_un's sun_path */
    int lfd;
    atomic_bool frozen, partitioned, stop;
    pthread_t th;
};

static int unix_connect(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void *proxy_main(void *arg)
{
    struct stall_proxy *x = arg;
    int fds[2 * PROXY_PAIRS]; /* pairs: client, upstream */
    int n = 0;
    int held[PROXY_PAIRS]; /* upstreams of clients gone while partitioned */
    int nheld = 0;
    static char buf[1 << 16];
    while (!atomic_load(&x->stop)) {
        if (atomic_load(&x->frozen)) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        struct pollfd pf[1 + 2 * PROXY_PAIRS];
        pf[0] = (struct pollfd){.fd = x->lfd, .events = POLLIN};
        for (int i = 0; i < 2 * n; i++)
            pf[1 + i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
        if (poll(pf, (nfds_t)(1 + 2 * n), 10) <= 0)
            continue;
        for (int i = 2 * n - 1; i >= 0; i--) {
            if (!(pf[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int pair = i / 2, from = fds[i], to = fds[i ^ 1];
            ssize_t got = read(from, buf, sizeof buf);
            bool ok = got > 0;
            for (ssize_t off = 0; ok && off < got;) {
                ssize_t w = send(to, buf + off, (size_t)(got - off), MSG_NOSIGNAL);
                ok = w > 0;
                off += ok ? w : 0;
            }
            if (!ok && 2 * pair < 2 * n) {
                /* the client's end went away: partitioned, the server is not told */
                bool hold = got <= 0 && from == fds[2 * pair] && atomic_load(&x->partitioned) &&
                            nheld < PROXY_PAIRS;
                close(fds[2 * pair]);
                if (hold)
                    held[nheld++] = fds[2 * pair + 1];
                else
                    close(fds[2 * pair + 1]);
                n--;
                fds[2 * pair] = fds[2 * n];
                fds[2 * pair + 1] = fds[2 * n + 1];
                i = 2 * pair; /* its partner, below, is gone too: skip it */
            }
        }
        if ((pf[0].revents & POLLIN) && n < PROXY_PAIRS) {
            int a = accept(x->lfd, NULL, NULL);
            int u = a >= 0 ? unix_connect(x->upstream) : -1;
            if (u >= 0) {
                fds[2 * n] = a;
                fds[2 * n + 1] = u;
                n++;
            } else if (a >= 0) {
                close(a);
            }
        }
    }
    for (int i = 0; i < 2 * n; i++)
        close(fds[i]);
    for (int i = 0; i < nheld; i++)
        close(held[i]);
    return NULL;
}

static void proxy_start(struct stall_proxy *x)
{
    memset(x, 0, sizeof *x);
    snprintf(x->dir, sizeof x->dir, "/tmp/strike-stall-XXXXXX");
    assert_non_null(mkdtemp(x->dir));
    int len = snprintf(x->upstream, sizeof x->upstream, "%s/.s.PGSQL.5432",
                       getenv("STRIKE_TEST_PG_HOST"));
    assert_true(len > 0 && (size_t)len < sizeof x->upstream);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s/.s.PGSQL.5432", x->dir);
    x->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(x->lfd >= 0);
    assert_int_equal(bind(x->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(x->lfd, 64), 0);
    atomic_init(&x->frozen, false);
    atomic_init(&x->partitioned, false);
    atomic_init(&x->stop, false);
    assert_int_equal(pthread_create(&x->th, NULL, proxy_main, x), 0);
}

static void proxy_stop(struct stall_proxy *x)
{
    atomic_store(&x->stop, true);
    pthread_join(x->th, NULL);
    close(x->lfd);
    char path[128];
    snprintf(path, sizeof path, "%s/.s.PGSQL.5432", x->dir);
    unlink(path);
    rmdir(x->dir);
}

/*
 * A session that holds what the commit of snapshot `seq` will write (its
 * snapshot row, inserted and not committed), so that a commit pipeline
 * waits inside its transaction, after its base read and its blobs, until
 * the holder rolls back. (A change batch takes the table's row lock before
 * it reads; holding that row would stop it before it writes anything.)
 */
static PGconn *hold_snapshot_row(const struct engine_table *t, int64_t seq)
{
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    char q[256];
    snprintf(q, sizeof q,
             "INSERT INTO strike.snapshots (table_id, seq, operation, commit_id) VALUES (%lld, "
             "%lld, 'holder', gen_random_uuid())",
             (long long)t->id, (long long)seq);
    et_exec(c, "BEGIN");
    et_exec(c, q);
    return c;
}

/*
 * A partition right after COMMIT was sent, while the commit waits for a row
 * lock another session holds: the client gives up on its connection, but the
 * backend cannot tell (the proxy keeps the server's side open and silent, so
 * client_connection_check_interval sees nothing), and the resolver cannot
 * end it (its pg_terminate_backend refused). The commit id is absent, but
 * the backend may still COMMIT: the outcome is unknown, not "did not
 * commit". Once the lock is free the old backend does commit, and its blobs
 * are there. (A client whose socket closes is another case: its backend ends
 * its statement within CAT_CLIENT_CHECK_MS and the outcome is definite.)
 */
static void test_unknown_outcome_when_backend_stays(void **state)
{
    (void)state;
    /* the engine's catalog sessions through the proxy */
    struct stall_proxy x;
    proxy_start(&x);
    char *direct = T.conninfo;
    char ci[256];
    snprintf(ci, sizeof ci, "host=%s port=5432 user=postgres dbname=strike_test_faults", x.dir);
    T.conninfo = ci;
    et_reopen(&T);
    T.conninfo = direct; /* the test's own sessions (the holder, its checks) go direct */
    struct engine_change_res res;
    struct engine_table *t = seeded_table("stays", &res);
    int blobs = count_blobs(t);
    PGconn *holder = hold_snapshot_row(t, 2);
    struct st_value vals[2] = {{0}};
    vals[0].v.l = 1;
    vals[1].v.l = 77;
    struct engine_change ch = {ENGINE_CHANGE_UPSERT, vals};
    struct engine_change_req req = {.table = t, .changes = &ch, .nchanges = 1};
    engine_test_fault(T.e, FAULT_DROP_AT_COMMIT, 1);
    engine_test_fault(T.e, FAULT_TERMINATE_REFUSED, 1);
    /* the old backend waits for the holder as long as it takes: with the
       sessions' lock_timeout (10 s) it would give up while a slow resolver
       (TSan) still polls for it, and the outcome would be definite */
    engine_test_fault(T.e, FAULT_LOCK_TIMEOUT_MS, 600000);
    atomic_store(&x.partitioned, true);
    struct st_err err = {0};
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_EUNKNOWN);
    atomic_store(&x.partitioned, false);
    engine_test_fault(T.e, FAULT_LOCK_TIMEOUT_MS, 0);
    engine_test_fault(T.e, FAULT_TERMINATE_REFUSED, 0);
    assert_non_null(strstr(err.msg, "could not be ended"));
    assert_int_equal(table_seq(t), 1);           /* not yet: it waits for the row */
    assert_int_equal(count_blobs(t), blobs + 2); /* kept: the commit may still land */
    et_exec(holder, "ROLLBACK");
    PQfinish(holder);
    /* the old backend goes on to COMMIT */
    for (int i = 0; i < 1000 && table_seq(t) == 1; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(table_seq(t), 2);
    assert_names_commit(&err, t, 2);
    int count;
    assert_int_equal(et_value_of(&T, t, 1, &count), 77);
    assert_int_equal(count, 1);
    struct findings fi = fsck();
    assert_int_equal(fi.missing + fi.corrupt + fi.orphans, 0);
    engine_table_unref(t);
    /* the engine on the fixture again; the held backends go with the proxy */
    et_reopen(&T);
    proxy_stop(&x);
}

/* An upsert on a thread of its own (the test holds a lock meanwhile). */
struct bg_upsert {
    struct engine_table *t;
    int64_t id, v;
    int rc;
    struct engine_change_res res;
    struct st_err err;
};

static void *bg_upsert_run(void *arg)
{
    struct bg_upsert *b = arg;
    b->rc = upsert(b->t, b->id, b->v, &b->res, &b->err);
    return NULL;
}

/* Wait (bounded) until a session waits for a lock the holder has. */
static void wait_for_waiter(PGconn *holder)
{
    for (int i = 0; i < 2000; i++) {
        PGresult *r = PQexec(holder, "SELECT count(*) FROM pg_locks WHERE NOT granted");
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        bool waiting = atoi(PQgetvalue(r, 0, 0)) > 0;
        PQclear(r);
        if (waiting)
            return;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("no commit came to wait for the table's row");
}

/*
 * Another server's long commit holds the table's row: a commit's lock wait
 * ends in lock_timeout (SQLSTATE 55P03). That is contention, not a failure:
 * the commit is retried like a lost CAS (it was a 500 before), and after
 * CAT_LOCK_RETRIES retries the request gets 409 with nothing committed and
 * nothing left behind; released in time, the retry commits.
 */
static void test_lock_timeout_is_contention(void **state)
{
    (void)state;
    struct engine_change_res res;
    struct engine_table *t = seeded_table("locked", &res);
    int blobs = count_blobs(t);
    struct st_err err = {0};
    engine_test_fault(T.e, FAULT_LOCK_TIMEOUT_MS, 200);
    PGconn *holder = et_hold_table_row(&T, t->id);
    struct engine_metrics before, after;
    engine_metrics(T.e, &before);
    assert_int_equal(upsert(t, 1, 50, &res, &err), ST_ECONFLICT);
    fprintf(stderr, "locked: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "waited 3 times for a lock"));
    engine_metrics(T.e, &after);
    assert_int_equal(after.retries - before.retries, CAT_LOCK_RETRIES);
    struct filter *f = NULL;
    const char *js = "{\"type\":\"eq\",\"term\":\"id\",\"value\":2}";
    st_err_clear(&err);
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err), ST_OK);
    struct engine_delete_res dr;
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, NULL, &dr, &err), ST_ECONFLICT);
    assert_non_null(strstr(err.msg, "for a lock"));
    assert_int_equal(table_seq(t), 1);
    assert_int_equal(count_blobs(t), blobs);

    /* the row is released while the commit retries: it commits */
    engine_test_fault(T.e, FAULT_LOCK_TIMEOUT_MS, 1000);
    engine_metrics(T.e, &before);
    struct bg_upsert b = {.t = t, .id = 1, .v = 51};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, bg_upsert_run, &b), 0);
    for (int i = 0; i < 2000; i++) {
        engine_metrics(T.e, &after);
        if (after.retries > before.retries)
            break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_true(after.retries > before.retries); /* a lock wait timed out: retrying */
    et_exec(holder, "COMMIT");
    PQfinish(holder);
    assert_int_equal(pthread_join(th, NULL), 0);
    engine_test_fault(T.e, FAULT_LOCK_TIMEOUT_MS, 0);
    if (b.rc != ST_OK)
        fail_msg("after the lock: %s", b.err.msg);
    assert_int_equal(b.res.seq, 2);
    st_err_clear(&err);
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, NULL, &dr, &err), ST_OK);
    assert_int_equal(dr.seq, 3);
    int count;
    assert_int_equal(et_value_of(&T, t, 1, &count), 51);
    assert_int_equal(et_value_of(&T, t, 2, &count), -1);
    struct findings fi = fsck();
    assert_int_equal(fi.missing + fi.corrupt + fi.orphans, 0);
    filter_free(f);
    engine_table_unref(t);
}

/* One setting of a session, as SHOW prints it. */
static void assert_setting(PGconn *c, const char *name, const char *want)
{
    char q[96];
    snprintf(q, sizeof q, "SHOW %s", name);
    PGresult *r = PQexec(c, q);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    fprintf(stderr, "%s = %s\n", name, PQgetvalue(r, 0, 0));
    assert_string_equal(PQgetvalue(r, 0, 0), want);
    PQclear(r);
}

/*
 * Every catalog session bounds a lock wait, a statement and an idle
 * transaction: a hung statement or a stalled client cannot keep a
 * transaction, and the table row it locked, open for ever.
 */
static void test_catalog_session_limits(void **state)
{
    (void)state;
    struct cat_pool *pool;
    struct st_err err = {0};
    assert_int_equal(cat_pool_open(T.conninfo, 2, &pool, &err), ST_OK);
    PGconn *c;
    assert_int_equal(cat_acquire(pool, &c, CAT_WAIT_ACQUIRE_MS, &err), ST_OK);
    assert_setting(c, "lock_timeout", "10s");
    assert_setting(c, "statement_timeout", "1min");
    assert_setting(c, "idle_in_transaction_session_timeout", "1min");
    /* a vanished client's backend ends its statement (and frees its locks) within a second */
    assert_setting(c, "client_connection_check_interval", "1s");
    /* and a statement over the limit fails as "retry later", not as an internal error */
    et_exec(c, "SET statement_timeout = 50");
    assert_int_equal(cat_exec(c, "SELECT pg_sleep(1)", "sleeping", &err), ST_EUNAVAIL);
    fprintf(stderr, "%s\n", err.msg);
    cat_release(pool, c, true);
    cat_pool_close(pool);
}

/*
 * gc may delete an unreferenced blob once it is ENGINE_GC_GRACE_MIN_S old,
 * so a commit must not reference blobs older than ENGINE_COMMIT_MAX_AGE_S.
 * Blobs that look old before the pipeline is sent: the attempt gives up
 * (ST_EUNAVAIL), commits nothing and deletes them. Blobs that grow old while
 * the transaction waits for the table's row: the statement before COMMIT
 * sees the deadline pass on the catalog's clock, and the COMMIT rolls back.
 */
static void test_commit_gives_up_when_blobs_are_old(void **state)
{
    (void)state;
    struct engine_change_res res;
    struct engine_table *t = seeded_table("old", &res);
    int blobs = count_blobs(t);
    struct st_err err = {0};
    engine_test_fault(T.e, FAULT_BLOB_AGE_S, ENGINE_COMMIT_MAX_AGE_S + 1);
    assert_int_equal(upsert(t, 1, 99, &res, &err), ST_EUNAVAIL);
    fprintf(stderr, "old blobs: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "gave up before COMMIT"));
    struct filter *f = NULL;
    const char *js = "{\"type\":\"eq\",\"term\":\"id\",\"value\":2}";
    st_err_clear(&err);
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err), ST_OK);
    struct engine_delete_res dr;
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, NULL, &dr, &err), ST_EUNAVAIL);
    assert_non_null(strstr(err.msg, "gave up before COMMIT"));
    engine_test_fault(T.e, FAULT_BLOB_AGE_S, 0);
    assert_int_equal(table_seq(t), 1);
    assert_int_equal(count_blobs(t), blobs); /* a definite abort: its blobs are gone */

    /* two seconds left when the pipeline is sent, then three in a lock wait */
    engine_test_fault(T.e, FAULT_BLOB_AGE_S, ENGINE_COMMIT_MAX_AGE_S - 2);
    PGconn *holder = hold_snapshot_row(t, 2);
    struct bg_upsert b = {.t = t, .id = 1, .v = 98};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, bg_upsert_run, &b), 0);
    wait_for_waiter(holder);
    struct timespec ts = {3, 0};
    nanosleep(&ts, NULL);
    et_exec(holder, "ROLLBACK");
    PQfinish(holder);
    assert_int_equal(pthread_join(th, NULL), 0);
    engine_test_fault(T.e, FAULT_BLOB_AGE_S, 0);
    fprintf(stderr, "old at COMMIT: %s\n", b.err.msg);
    assert_int_equal(b.rc, ST_EUNAVAIL);
    assert_non_null(strstr(b.err.msg, "gave up at COMMIT"));
    assert_int_equal(table_seq(t), 1);
    assert_int_equal(count_blobs(t), blobs);
    int count;
    assert_int_equal(et_value_of(&T, t, 1, &count), 10);
    struct findings fi = fsck();
    assert_int_equal(fi.missing + fi.corrupt + fi.orphans, 0);

    /* fresh blobs commit */
    st_err_clear(&err);
    assert_int_equal(upsert(t, 1, 97, &res, &err), ST_OK);
    assert_int_equal(res.seq, 2);
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, NULL, &dr, &err), ST_OK);
    assert_int_equal(dr.seq, 3);
    assert_int_equal(et_value_of(&T, t, 1, &count), 97);
    filter_free(f);
    engine_table_unref(t);
}

/*
 * A prepared statement runs on a generic plan from its sixth execution on,
 * planned with the statistics of that moment; a batch join planned while the
 * key index was empty used to become "materialize every key of the table,
 * compare with every key of the batch" (a 120k-row load took minutes). Here
 * every key statement is planned generically on a fresh, never-analyzed key
 * index under the engine's own settings, and each plan must reach the key
 * index only through its primary key with the key in the index condition.
 */
static void test_key_statements_plan_as_index_probes(void **state)
{
    (void)state;
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    et_exec(c, "BEGIN");
    et_exec(c, "SET LOCAL plan_cache_mode = force_generic_plan");
    et_exec(c, engine_test_key_plan_settings());
    int nstmt = 0;
    for (const char *sql; (sql = engine_test_key_sql(nstmt)) != NULL; nstmt++) {
        char name[32], explain[256];
        snprintf(name, sizeof name, "key_stmt_%d", nstmt);
        bool at_ctids = strstr(sql, "i.ctid = u.c") != NULL;
        /* the plain key INSERTs come after the ctid statements in a commit */
        bool plain_insert = strncmp(sql, "INSERT", 6) == 0 && strstr(sql, "LATERAL") == NULL;
        if (at_ctids || plain_insert) /* as the commit sends them */
            et_exec(c, engine_test_tid_plan_settings(true));
        PGresult *r = PQprepare(c, name, sql, 0, NULL);
        assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        r = PQdescribePrepared(c, name);
        assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
        /* a generic plan does not look at the values: scalars 1, arrays empty */
        int n = snprintf(explain, sizeof explain, "EXPLAIN EXECUTE %s(", name);
        for (int p = 0; p < PQnparams(r); p++) {
            Oid ty = PQparamtype(r, p);
            bool array =
                ty == 1016 /* int8[] */ || ty == 1001 /* bytea[] */ || ty == 1010 /* tid[] */;
            n += snprintf(explain + n, sizeof explain - (size_t)n, "%s%s", p ? "," : "",
                          array ? "'{}'" : "1");
        }
        snprintf(explain + n, sizeof explain - (size_t)n, ")");
        PQclear(r);
        r = PQexec(c, explain);
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        int probes = 0, tid_fetches = 0;
        bool in_key_scan = false, in_tid_scan = false;
        for (int row = 0; row < PQntuples(r); row++) {
            const char *line = PQgetvalue(r, row, 0);
            fprintf(stderr, "plan %d: %s\n", nstmt, line);
            assert_null(strstr(line, "Materialize"));
            assert_null(strstr(line, "Hash Join"));
            assert_null(strstr(line, "Merge Join"));
            if (strstr(line, "Tid Scan on key_index") != NULL) {
                in_tid_scan = true; /* a row at a ctid the base read returned */
            } else if (strstr(line, "Scan") != NULL && strstr(line, " on key_index") != NULL) {
                assert_non_null(strstr(line, "Index Scan using key_index"));
                in_key_scan = true;
            } else if (in_key_scan && strstr(line, "Index Cond:") != NULL) {
                assert_non_null(strstr(line, "key = "));
                probes++;
                in_key_scan = false;
            } else if (in_tid_scan && strstr(line, "TID Cond:") != NULL) {
                assert_non_null(strstr(line, "ctid = "));
                tid_fetches++;
                in_tid_scan = false;
            }
        }
        assert_false(in_key_scan); /* a key-index scan without an index condition */
        assert_false(in_tid_scan); /* a TID scan without a TID condition */
        /* a change batch's updates and deletes, and the catch-up's moves, reach the rows
           their reads probed at their ctids, never through the index a second time */
        if (at_ctids) {
            et_exec(c, engine_test_tid_plan_settings(false));
            assert_int_equal(tid_fetches, 1);
            assert_int_equal(probes, 0);
            PQclear(r);
            continue;
        }
        /* lookups and deletes probe; the other INSERTs reach the index through the
           speculative insertion of ON CONFLICT or a plain insert */
        if (plain_insert)
            et_exec(c, engine_test_tid_plan_settings(false));
        else
            assert_int_equal(probes, 1);
        PQclear(r);
    }
    assert_int_equal(nstmt, 10);
    et_exec(c, "ROLLBACK");
    PQfinish(c);
}

/* A catalog table's sequential and index scans, as the statistics system has them. */
struct scans {
    int64_t seq, idx;
};

static struct scans scans_of(const char *rel)
{
    char q[192];
    struct scans s;
    snprintf(q, sizeof q,
             "SELECT seq_scan FROM pg_stat_user_tables WHERE schemaname = 'strike' AND "
             "relname = '%s'",
             rel);
    s.seq = et_sql_i64(&T, q);
    snprintf(q, sizeof q,
             "SELECT coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE schemaname = "
             "'strike' AND relname = '%s'",
             rel);
    s.idx = et_sql_i64(&T, q);
    return s;
}

/*
 * Restart the test's engine and wait until its old sessions (application_name
 * striked) are gone: a backend flushes its statistics when it exits (an idle
 * one may keep them for 10 s), and nothing else writes to this database
 * meanwhile.
 */
static void restart_and_flush(void)
{
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PGresult *r = PQexec(c, "SELECT coalesce(string_agg(pid::text, ','), '0') FROM "
                            "pg_stat_activity WHERE datname = current_database() AND "
                            "application_name = 'striked'");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    char q[4096];
    snprintf(q, sizeof q, "SELECT count(*) FROM pg_stat_activity WHERE pid IN (%s)",
             PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    et_reopen(&T);
    bool gone = false;
    for (int i = 0; i < 300 && !gone; i++) { /* 30 s at most */
        gone = et_sql_i64(&T, q) == 0;
        usleep(100 * 1000);
    }
    assert_true(gone);
}

/* One change batch of n upserts of keys from..from+n-1 (v = key * mult). */
static void upsert_keys(struct engine_table *t, int64_t from, size_t n, int64_t mult)
{
    struct engine_change_res res;
    assert_int_equal(et_put_range(&T, t, from, n, mult, &res), ST_OK);
}

static void delete_key(struct engine_table *t, int64_t key)
{
    int64_t v = -1; /* et_put: a delete */
    struct engine_change_res res;
    assert_int_equal(et_put(&T, t, &key, &v, 1, &res), ST_OK);
    assert_int_equal(res.deleted, 1);
}

/*
 * The statements of a change batch's commit are planned once per connection
 * (generic plans, under the plan settings of the moment each is first run:
 * the base read's lock statement turns sequential scans off for the
 * transaction). Real commits of every shape (new rows, updates that grow a
 * DV, deletes, batches big enough to look up on two connections) must reach
 * the catalog's tables through their indexes only: no sequential scan of
 * deletion_vectors, data_files, snapshots or the key index while they run,
 * by the statistics of this database (nothing else runs on it meanwhile: no
 * gc, no maintenance). Without the lock statement's settings, data_files is
 * scanned 27 times here. (What this does not catch: the DV statements
 * planned while the TID settings turn index scans off, which gave them
 * sequential scans on the bench's catalog. With sequential and index scans
 * both disabled the planner goes by cost, and on this test's small tables
 * the index still wins.)
 */
static void test_commit_statements_scan_by_index(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "byindex", cols, 2, pk, 1, NULL);
    upsert_keys(t, 0, 3000, 1); /* a file of 3,000 rows, then the measured commits */
    static const char *const rels[] = {"deletion_vectors", "data_files", "snapshots",
                                       "key_index_i8"};
    enum { NREL = sizeof rels / sizeof rels[0] };
    struct scans before[NREL], after[NREL];
    restart_and_flush();
    for (int i = 0; i < NREL; i++)
        before[i] = scans_of(rels[i]);
    for (int round = 0; round < 3; round++) {
        upsert_keys(t, 100 * round, 50, 2 + round);    /* updates: the first file's DV grows */
        upsert_keys(t, 10000 + 2500 * round, 2500, 1); /* new keys: a big batch */
        upsert_keys(t, 200 * round, 2500, 7);          /* half updates, half new: parallel */
        delete_key(t, 2900 + round);                   /* a single-key delete */
    }
    restart_and_flush();
    for (int i = 0; i < NREL; i++) {
        after[i] = scans_of(rels[i]);
        fprintf(stderr, "%s: %lld sequential scans, %lld index scans during the commits\n", rels[i],
                (long long)(after[i].seq - before[i].seq),
                (long long)(after[i].idx - before[i].idx));
        assert_int_equal(after[i].seq, before[i].seq);
    }
    /* the statistics did see the commits */
    assert_true(after[0].idx - before[0].idx >= 12);
    assert_true(after[3].idx - before[3].idx >= 12);
    engine_table_unref(t);
}

static double secs_since(uint64_t t0)
{
    return (double)(st_mono_ns() - t0) / 1e9;
}

/*
 * A catalog that stops answering, as a SIGSTOPped PostgreSQL: every call
 * fails with ST_EUNAVAIL within a few seconds (catalog.h: CAT_STALL_*,
 * CAT_PROBE_*, CAT_CONNECT_TIMEOUT_S), and breaks its connection; while the
 * catalog answers, a statement longer than the stall threshold runs to its
 * end. Afterwards the pool works again.
 */
static void test_stalled_catalog_calls_are_bounded(void **state)
{
    (void)state;
    struct stall_proxy x;
    proxy_start(&x);
    char ci[256];
    snprintf(ci, sizeof ci, "host=%s port=5432 user=postgres dbname=strike_test_faults", x.dir);
    struct cat_pool *pool;
    struct st_err err = {0};
    assert_int_equal(cat_pool_open(ci, 4, &pool, &err), ST_OK);
    PGconn *c[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(cat_acquire(pool, &c[i], CAT_WAIT_ACQUIRE_MS, &err), ST_OK);

    /* live: quiet for longer than CAT_STALL_PROBE_AFTER_MS, probes answer, not cut */
    uint64_t t0 = st_mono_ns();
    assert_int_equal(cat_exec(c[0], "SELECT pg_sleep(3)", "sleeping", &err), ST_OK);
    assert_true(secs_since(t0) >= 3.0);

    atomic_store(&x.frozen, true);
    /* a statement: no answer for CAT_STALL_PROBE_AFTER_MS, then a probe gets none */
    t0 = st_mono_ns();
    assert_int_equal(cat_exec(c[0], "SELECT 1", "a stalled statement", &err), ST_EUNAVAIL);
    double took = secs_since(t0);
    fprintf(stderr, "stalled statement: %.2f s: %s\n", took, err.msg);
    assert_true(took >= CAT_STALL_PROBE_AFTER_MS / 1000.0 && took < 6.0);
    assert_non_null(strstr(err.msg, "unreachable"));
    assert_int_equal(PQstatus(c[0]), CONNECTION_BAD);
    cat_release(pool, c[0], false); /* broken: the pool discards it */

    /* a send larger than the socket buffers (non-blocking: it cannot hang in
       the send); the catalog is suspect now, so the probe comes at once */
    size_t big = 8u << 20;
    char *v = malloc(big + 1);
    memset(v, 'x', big);
    v[big] = '\0';
    const char *vals[1] = {v};
    t0 = st_mono_ns();
    PGresult *r = cat_pq_exec_params(c[1], "SELECT length($1)", 1, NULL, vals, NULL, NULL, 0);
    took = secs_since(t0);
    fprintf(stderr, "stalled 8 MiB send: %.2f s\n", took);
    assert_null(r);
    assert_true(took < 4.0);
    assert_int_equal(PQstatus(c[1]), CONNECTION_BAD);
    free(v);
    cat_release(pool, c[1], true);

    /* a pipeline */
    struct pgu_pipe pp;
    st_err_clear(&err);
    assert_int_equal(pgu_pipe_begin(&pp, c[2], &err), ST_OK);
    assert_int_equal(pgu_pipe_send(&pp, "SELECT 1", 0, NULL, NULL, NULL, 0, &err), ST_OK);
    t0 = st_mono_ns();
    assert_int_equal(pgu_pipe_run(&pp, &err), ST_EUNAVAIL);
    took = secs_since(t0);
    fprintf(stderr, "stalled pipeline: %.2f s: %s\n", took, err.msg);
    assert_true(took < 4.0);
    assert_non_null(strstr(err.msg, "unreachable during reading pipeline results"));
    pgu_pipe_clear(&pp);
    cat_release(pool, c[2], true);

    /* a new connection (no idle one is left), and readiness */
    st_err_clear(&err);
    t0 = st_mono_ns();
    assert_int_equal(cat_acquire(pool, &c[0], CAT_WAIT_ACQUIRE_MS, &err), ST_EUNAVAIL);
    took = secs_since(t0);
    fprintf(stderr, "connecting: %.2f s: %s\n", took, err.msg);
    assert_true(took < CAT_CONNECT_TIMEOUT_S + 1.0);
    assert_non_null(strstr(err.msg, "cannot connect"));
    st_err_clear(&err);
    t0 = st_mono_ns();
    assert_int_equal(cat_ping(pool, &err), ST_EUNAVAIL);
    assert_true(secs_since(t0) < CAT_CONNECT_TIMEOUT_S + 1.0);

    /* back */
    atomic_store(&x.frozen, false);
    st_err_clear(&err);
    assert_int_equal(cat_ping(pool, &err), ST_OK);
    assert_int_equal(cat_acquire(pool, &c[0], CAT_WAIT_ACQUIRE_MS, &err), ST_OK);
    assert_int_equal(cat_exec(c[0], "SELECT 1", "after", &err), ST_OK);
    cat_release(pool, c[0], false);
    cat_pool_close(pool);
    proxy_stop(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conflict_on_every_first_attempt),
        cmocka_unit_test(test_crash_between_blobs_and_commit),
        cmocka_unit_test(test_connection_lost_at_commit),
        cmocka_unit_test(test_unknown_outcome_keeps_blobs),
        cmocka_unit_test(test_unknown_outcome_when_backend_stays),
        cmocka_unit_test(test_commit_gives_up_when_blobs_are_old),
        cmocka_unit_test(test_catalog_session_limits),
        cmocka_unit_test(test_stalled_catalog_calls_are_bounded),
        cmocka_unit_test(test_lock_timeout_is_contention),
        cmocka_unit_test(test_key_statements_plan_as_index_probes),
        cmocka_unit_test(test_commit_statements_scan_by_index),
        cmocka_unit_test(test_gc_floor_and_last_look),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
