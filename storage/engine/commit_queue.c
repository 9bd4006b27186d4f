/*
 * commit_queue.c - group commit (docs/DESIGN.md "Group commit"): one queue per
 * table with work pending.
 *
 * Requests for one table queue up; whoever finds no commit in flight
 * becomes the leader, takes the queue (in arrival order) and has it
 * committed as one batch by the items' kind (struct eng__commit_kind: a
 * change batch, a delete by filter, a rewrite); each request gets its own
 * counts and the shared seq. Only a kind that batches takes more than one
 * item: a request with expected_seq (starts_batch) starts a batch of its
 * own, so its check is against the batch's base seq, and deletes by filter
 * and rewrites are always alone. A request whose Idempotency-Key is already
 * in the batch (a client's retry while its first attempt is still queued)
 * ends the batch: it leads the next one, which finds the first attempt's
 * stored result and replays it (or refuses a different request,
 * ST_EIDEMPOTENCY). In
 * one batch the two would store the same key twice in one transaction, a
 * unique violation that no retry of that batch can get past.
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/xalloc.h"

#include <assert.h>
#include <errno.h>
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
    assert(q->users > 0);
    if (--q->users == 0) {
        assert(q->head == NULL && !q->busy); /* the last user's item was done */
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

/* Is `it`'s Idempotency-Key among `keys` (the batch's so far)? Adds it when not. */
static bool idem_key_taken(struct hmap *keys, const struct item *it)
{
    if (it->idem_key == NULL)
        return false;
    bool created;
    hmap_put(keys, it->idem_key, strlen(it->idem_key), &created);
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
    size_t n = 1, changes = first->nchanges;
    if (first->kind->batches) {
        struct hmap keys; /* the batch's Idempotency-Keys (the scope is the table: one queue) */
        hmap_init(&keys);
        idem_key_taken(&keys, first);
        while (last->next != NULL && n < BATCH_MAX_REQUESTS) {
            struct item *nx = last->next;
            if (nx->kind != first->kind || nx->starts_batch ||
                changes + nx->nchanges > BATCH_MAX_CHANGES || nx->schema_id != first->schema_id ||
                idem_key_taken(&keys, nx))
                break;
            changes += nx->nchanges;
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

void eng__finish_item(struct item *it, int rc)
{
    assert(!it->finished && !it->done); /* decided once, while its batch runs */
    it->rc = rc;
    it->finished = true;
}

int eng__submit(struct engine *e, int64_t table_id, struct item *it)
{
    assert(it->kind != NULL && it->kind->process != NULL);
    assert(!it->finished && !it->done && it->next == NULL);
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
            /* the leader: no commit of this table is in flight, and its own item is queued */
            assert(q->head != NULL);
            q->busy = true;
            test_gather(e, q);
            size_t n;
            struct item *batch = take_batch(q, &n);
            pthread_mutex_unlock(&q->mu);
            assert(n == 1 || batch->kind->batches);
            struct item **items = xcalloc(n, sizeof *items);
            size_t i = 0;
            for (struct item *b = batch; b != NULL; b = b->next)
                items[i++] = b;
            assert(i == n);
            batch->kind->process(e, items, n);
            pthread_mutex_lock(&q->mu);
            for (i = 0; i < n; i++) {
                assert(items[i]->finished); /* every item of a batch ends up decided */
                items[i]->done = true;
            }
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
