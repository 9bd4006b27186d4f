/*
 * commit_queue.c - group commit (docs/DESIGN.md "Group commit"): one queue per
 * table with work pending, and the engine's two writing entry points.
 *
 * Requests for one table queue up; whoever finds no commit in flight
 * becomes the leader, takes the queue (in arrival order) and commits it as
 * one batch (eng__process_batch); each request gets its own counts and the
 * shared seq. A request with expected_seq, and a delete-by-filter, always
 * starts a batch of its own, so its check is against the batch's base seq.
 * A request whose Idempotency-Key is already in the batch (a client's retry
 * while its first attempt is still queued) ends the batch: it leads the
 * next one, which finds the first attempt's stored result and replays it
 * (or refuses a different request, 422). In one batch the two would store
 * the same key twice in one transaction, a unique violation that no retry
 * of that batch can get past.
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/xalloc.h"
#include "expr/literal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH_MAX_REQUESTS 256
#define BATCH_MAX_CHANGES 400000

struct gcq {
    int64_t table_id;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool busy;
    bool gathering; /* its leader waits for requests (engine_test_gather) */
    struct item *head, *tail;
    int users;
    struct gcq *next;
};

static struct gcq *gcq_get(struct engine *e, int64_t table_id)
{
    pthread_mutex_lock(&e->gcq_mu);
    struct gcq *q = e->queues;
    while (q != NULL && q->table_id != table_id)
        q = q->next;
    if (q == NULL) {
        q = xcalloc(1, sizeof *q);
        q->table_id = table_id;
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
        q->next = e->queues;
        e->queues = q;
    }
    q->users++;
    pthread_mutex_unlock(&e->gcq_mu);
    return q;
}

static void gcq_put(struct engine *e, struct gcq *q)
{
    pthread_mutex_lock(&e->gcq_mu);
    if (--q->users == 0) {
        struct gcq **pp = &e->queues;
        while (*pp != q)
            pp = &(*pp)->next;
        *pp = q->next;
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
        free(q);
    }
    pthread_mutex_unlock(&e->gcq_mu);
}

static size_t item_changes(const struct item *it)
{
    return it->kind == ITEM_CHANGES ? it->req->nchanges : 0;
}

/* Is `it`'s Idempotency-Key among `keys` (the batch's so far)? Adds it when not. */
static bool idem_key_taken(struct hmap *keys, const struct item *it)
{
    if (it->req->idem == NULL)
        return false;
    bool created;
    hmap_put(keys, it->req->idem->key, strlen(it->req->idem->key), &created);
    return !created;
}

/*
 * Detach the next batch from the queue (called with q->mu held): requests
 * in arrival order, up to the first that must not join it.
 */
static struct item *take_batch(struct gcq *q, size_t *count)
{
    struct item *first = q->head;
    struct item *last = first;
    size_t n = 1, changes = item_changes(first);
    if (first->kind == ITEM_CHANGES) {
        struct hmap keys; /* the batch's Idempotency-Keys (the scope is the table: one queue) */
        hmap_init(&keys);
        idem_key_taken(&keys, first);
        while (last->next != NULL && n < BATCH_MAX_REQUESTS) {
            struct item *nx = last->next;
            if (nx->kind != ITEM_CHANGES || nx->req->has_expected_seq ||
                changes + item_changes(nx) > BATCH_MAX_CHANGES || idem_key_taken(&keys, nx))
                break;
            changes += item_changes(nx);
            last = nx;
            n++;
        }
        hmap_free(&keys);
    }
    q->head = last->next;
    if (q->head == NULL)
        q->tail = NULL;
    last->next = NULL;
    *count = n;
    return first;
}

/* Test hook (engine_test_gather): a new leader waits until that many requests are queued. */
static void test_gather(struct engine *e, struct gcq *q)
{
    int want = atomic_exchange(&e->fault_gather, 0);
    if (want <= 0)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    q->gathering = true;
    for (;;) {
        int queued = 0;
        for (struct item *i = q->head; i != NULL; i = i->next)
            queued++;
        if (queued >= want || pthread_cond_timedwait(&q->cv, &q->mu, &until) == ETIMEDOUT)
            break;
    }
    q->gathering = false;
}

void engine_test_gather(struct engine *e, int n)
{
    atomic_store(&e->fault_gather, n);
}

int eng__submit(struct engine *e, int64_t table_id, struct item *it)
{
    struct gcq *q = gcq_get(e, table_id);
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    if (q->gathering)
        pthread_cond_broadcast(&q->cv); /* the leader counts the queue (tests) */
    while (!it->done) {
        if (!q->busy) {
            q->busy = true;
            test_gather(e, q);
            size_t n;
            struct item *batch = take_batch(q, &n);
            pthread_mutex_unlock(&q->mu);
            struct item **items = xcalloc(n, sizeof *items);
            size_t i = 0;
            for (struct item *b = batch; b != NULL; b = b->next)
                items[i++] = b;
            eng__process_batch(e, items, n);
            pthread_mutex_lock(&q->mu);
            for (i = 0; i < n; i++)
                items[i]->done = true;
            free(items);
            q->busy = false;
            pthread_cond_broadcast(&q->cv);
        } else {
            pthread_cond_wait(&q->cv, &q->mu);
        }
    }
    pthread_mutex_unlock(&q->mu);
    gcq_put(e, q);
    return it->rc;
}

/* ---- entry points ------------------------------------------------------------- */

int engine_check_producer(const char *producer, bool has_offset, int64_t offset, struct st_err *err)
{
    if (has_offset && offset < 0)
        return st_errf(err, ST_EINVAL, "offset: must be >= 0, got %" PRId64, offset);
    if (has_offset != (producer != NULL))
        return st_errf(err, ST_EINVAL, "%s",
                       producer != NULL ? "offset: required with \"producer\""
                                        : "producer: required with \"offset\"");
    if (producer == NULL)
        return ST_OK;
    size_t len = strlen(producer);
    if (len == 0 || len > ENGINE_PRODUCER_MAX)
        return st_errf(err, ST_EINVAL, "producer: 1 to %d characters", ENGINE_PRODUCER_MAX);
    size_t bad = lit_utf8_check(producer, len); /* a text parameter: PostgreSQL would refuse it */
    if (bad != len)
        return st_errf(err, ST_EINVAL, "producer: invalid UTF-8 at byte %zu", bad);
    return ST_OK;
}

static int check_changes(const struct engine_change_req *q, struct st_err *err)
{
    const struct engine_table *t = q->table;
    int rc = engine_check_producer(q->producer, q->has_offset, q->offset, err);
    if (rc == ST_OK && q->mark_producer != NULL)
        rc = engine_check_producer(q->mark_producer, true, q->mark_offset, err);
    if (rc != ST_OK)
        return rc;
    if (q->has_expected_seq && q->expected_seq < 0)
        return st_errf(err, ST_EINVAL, "expected_seq: must be >= 0");
    for (size_t i = 0; i < q->nchanges; i++) {
        const struct engine_change *c = &q->changes[i];
        if (c->op == ENGINE_CHANGE_DELETE) {
            if (t->npk == 0)
                return st_errf(err, ST_EINVAL,
                               "changes[%zu]: table \"%s\" has no primary key, so rows cannot be "
                               "deleted by key (use delete by filter)",
                               i, t->name);
            for (int k = 0; k < t->npk; k++)
                if (c->vals[k].null)
                    return st_errf(err, ST_EINVAL, "changes[%zu]: key column \"%s\" is null", i,
                                   t->cols[t->pk[k]].name);
        } else if (c->op == ENGINE_CHANGE_UPSERT) {
            for (int k = 0; k < t->ncols; k++) {
                const struct st_value *v = &c->vals[k];
                if (v->null && t->cols[k].required)
                    return st_errf(err, ST_EINVAL, "changes[%zu]: column \"%s\" is required", i,
                                   t->cols[k].name);
                if (!v->null && t->cols[k].type == ST_T_STRING &&
                    (v->v.s.len > ST_STRING_MAX || memchr(v->v.s.p, 0, v->v.s.len) != NULL))
                    return st_errf(err, ST_EINVAL,
                                   "changes[%zu]: column \"%s\": string longer than 1 MiB or "
                                   "containing U+0000",
                                   i, t->cols[k].name);
            }
        } else {
            return st_errf(err, ST_EINVAL, "changes[%zu]: unknown op", i);
        }
        size_t klen = t->npk > 0 ? key_encoded_len(t, c->vals, c->op == ENGINE_CHANGE_UPSERT) : 0;
        if (klen > KEY_ENCODED_MAX)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: key: longer than %d bytes encoded (%zu bytes)", i,
                           KEY_ENCODED_MAX, klen);
    }
    return ST_OK;
}

int engine_apply_changes(struct engine *e, const struct engine_change_req *req,
                         struct engine_change_res *res, struct st_err *err)
{
    memset(res, 0, sizeof *res);
    int rc = check_changes(req, err);
    if (rc != ST_OK)
        return rc;
    struct item it;
    memset(&it, 0, sizeof it);
    it.kind = ITEM_CHANGES;
    it.req = req;
    it.res = res;
    it.err = err;
    return eng__submit(e, req->table->id, &it);
}

int engine_delete_where(struct engine *e, struct engine_table *t, const struct filter *f,
                        bool has_expected_seq, int64_t expected_seq, const struct engine_idem *idem,
                        struct engine_delete_res *res, struct st_err *err)
{
    memset(res, 0, sizeof *res);
    if (has_expected_seq && expected_seq < 0)
        return st_errf(err, ST_EINVAL, "expected_seq: must be >= 0");
    if (atomic_fetch_add(&e->filter_deletes, 1) >= ENGINE_FILTER_DELETES_MAX) {
        atomic_fetch_sub(&e->filter_deletes, 1);
        return st_errf(err, ST_EBUSY,
                       "%d deletes by filter are running, the most at once; retry later",
                       ENGINE_FILTER_DELETES_MAX);
    }
    struct item it;
    memset(&it, 0, sizeof it);
    it.kind = ITEM_DELETE_WHERE;
    it.t = t;
    it.filter = f;
    it.has_expected_seq = has_expected_seq;
    it.expected_seq = expected_seq;
    it.idem = idem;
    it.dres = res;
    it.err = err;
    /* the scan runs here, outside the table's queue; only the commit queues */
    int rc = eng__delete_scan(e, &it) ? eng__submit(e, t->id, &it) : it.rc;
    eng__delete_end(e, &it);
    atomic_fetch_sub(&e->filter_deletes, 1);
    return rc;
}
