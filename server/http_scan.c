/*
 * http_scan.c - POST /v1/tables/{t}/scan: rows as an NDJSON stream.
 *
 * A producer on a worker formats rows (ndjson_append_row) into a ring of
 * NSLOT chunks of about CHUNK bytes; MHD's content reader, on the event
 * thread, copies them out. Memory per scan: the engine's current row group
 * plus the ring, whatever the table size.
 *
 *   ring empty, scan not done   the reader suspends the connection and sets
 *                               reader_waiting; the producer resumes it after
 *                               publishing the next chunk
 *   ring full                   the producer parks (returns its worker); the
 *                               reader resubmits it when it frees a slot
 *   client gone                 the completion callback sets r->cancelled; the
 *                               producer stops at its next chunk, and the scan
 *                               is closed with the last reference
 *
 * Errors before the first row are ordinary problem responses; an error
 * after the 200 was sent cuts the stream (no terminating chunk), which
 * the client sees as a truncated response.
 */
#include "http_int.h"

#include "common/log.h"
#include "common/xalloc.h"
#include "expr/filter.h"
#include "expr/ndjson.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NSLOT 4
#define CHUNK (256 * 1024)

struct hscan {
    struct hstate state; /* first: freed with the request (scan_state_free) */
    struct http_metrics *m;
    const atomic_bool *cancelled; /* the request's: the client is gone */
    struct svc_scan sv;           /* sv.scan is NULL once the producer is finished */
    const int *out;               /* output columns (table indexes) */
    int nout;
    struct engine_scan_batch b; /* the current batch, rows [bi, b.nrows) still to write */
    size_t bi;
    bool eof;
    /* The producer alone touches slot[wr] (count < NSLOT while it runs); the
       rest is guarded by the request's mutex. */
    struct buf slot[NSLOT];
    size_t off; /* bytes of slot[head] already sent */
    int head, count, wr;
    bool parked, done, failed, reader_waiting;
    uint64_t rows, bytes;
};

static void scan_free(struct hscan *hs)
{
    if (hs == NULL)
        return;
    if (hs->m != NULL)
        http__metrics_scan(hs->m, hs->rows, hs->bytes);
    svc_scan_close(&hs->sv);
    for (int i = 0; i < NSLOT; i++)
        buf_free(&hs->slot[i]);
    free(hs);
}

/*
 * Format rows into b until it holds CHUNK bytes (it may pass that by one
 * row) or the scan ends. Stops early, without error, when the client is gone.
 */
static int fill(struct hscan *hs, struct buf *b, struct st_err *err)
{
    const struct st_column *cols = hs->sv.table->cols;
    while (b->len < CHUNK) {
        if (hs->bi >= hs->b.nrows) {
            if (hs->eof || atomic_load(hs->cancelled))
                return ST_OK;
            bool done = false;
            int rc = engine_scan_next(hs->sv.scan, &hs->b, &done, err);
            if (rc != ST_OK)
                return rc;
            hs->bi = 0;
            if (done) {
                hs->eof = true;
                hs->b.nrows = 0;
                return ST_OK;
            }
            continue;
        }
        size_t end = hs->b.nrows, i = hs->bi;
        while (i < end && b->len < CHUNK)
            ndjson_append_row(b, cols, hs->out, hs->nout, hs->b.vecs, hs->b.rows[i++]);
        hs->rows += i - hs->bi;
        hs->bi = i;
    }
    return ST_OK;
}

static void scan_state_free(struct hstate *s)
{
    scan_free((struct hscan *)(void *)s);
}

/* The producer: fill chunks until the scan ends, the ring is full, or the client is gone. */
static void produce(struct hreq *r)
{
    struct hscan *hs = (struct hscan *)r->scan;
    for (;;) {
        struct st_err err = {0};
        int rc = ST_OK;
        bool gone = atomic_load(&r->cancelled);
        struct buf *b = &hs->slot[hs->wr];
        if (!gone)
            rc = fill(hs, b, &err);
        bool end = gone || rc != ST_OK || hs->eof;
        if (rc != ST_OK)
            log_warn("scan of table %s cut after %" PRIu64 " rows: %s", hs->sv.table->name,
                     hs->rows, err.msg);
        if (end) {
            engine_scan_close(hs->sv.scan);
            hs->sv.scan = NULL;
        }
        pthread_mutex_lock(&r->mu);
        if (b->len > 0 && !gone) {
            hs->count++;
            hs->wr = (hs->wr + 1) % NSLOT;
        }
        if (end) {
            hs->done = true;
            hs->failed = rc != ST_OK || gone;
        }
        if (hs->reader_waiting) {
            hs->reader_waiting = false;
            http__resume_locked(r);
        }
        bool park = !end && hs->count == NSLOT;
        hs->parked = park;
        pthread_mutex_unlock(&r->mu);
        if (end || park)
            return;
    }
}

/* MHD's content reader of the NDJSON stream (cls: the request). */
static ssize_t scan_reader(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    struct hreq *r = cls;
    struct hscan *hs = (struct hscan *)r->scan;
    bool resubmit = false;
    pthread_mutex_lock(&r->mu);
    if (hs->count == 0) {
        ssize_t ret = 0;
        if (hs->done)
            ret = hs->failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
        else if (!http__suspend_locked(r))
            ret = MHD_CONTENT_READER_END_WITH_ERROR; /* shutting down */
        else
            hs->reader_waiting = true; /* the producer resumes us */
        pthread_mutex_unlock(&r->mu);
        return ret;
    }
    struct buf *b = &hs->slot[hs->head];
    size_t k = b->len - hs->off;
    if (k > max)
        k = max;
    memcpy(out, b->data + hs->off, k);
    hs->off += k;
    hs->bytes += k;
    if (hs->off == b->len) {
        buf_reset(b);
        hs->off = 0;
        hs->head = (hs->head + 1) % NSLOT;
        hs->count--;
        if (hs->parked) {
            hs->parked = false;
            resubmit = true;
        }
    }
    pthread_mutex_unlock(&r->mu);
    if (resubmit && !http__submit(r, produce)) {
        log_warn("scan of table %s cut: the worker queue is full", hs->sv.table->name);
        pthread_mutex_lock(&r->mu);
        hs->done = true;
        hs->failed = true;
        pthread_mutex_unlock(&r->mu);
    }
    return (ssize_t)k;
}

/* "columns" as names (NULL for an element that is not a string); the service checks them. */
static bool columns_of(struct hreq *r, struct jdoc *d, const struct jdoc_val *jc,
                       struct svc_scan_req *q)
{
    if (jc == NULL || jdoc_is(jc, JDOC_NULL))
        return true;
    if (!jdoc_is(jc, JDOC_ARRAY)) {
        http__reply_problem(r, 400, "columns: expected an array of column names");
        return false;
    }
    size_t m = jdoc_size(jc);
    const char **names = jdoc_alloc(d, (m ? m : 1) * sizeof *names);
    for (size_t i = 0; i < m; i++)
        names[i] = jdoc_str(jdoc_at(jc, i), NULL);
    q->has_columns = true;
    q->columns = names;
    q->ncolumns = m;
    return true;
}

void http__job_scan(struct hreq *r)
{
    struct jdoc *d = http__body_jdoc(r, true, FILTER_JSON_DEPTH);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    struct hscan *hs = xcalloc(1, sizeof *hs);
    hs->state.free = scan_state_free;
    hs->cancelled = &r->cancelled;
    static const char *const top[] = {"snapshot", "columns", "filter", "limit", NULL};
    struct svc_scan_req q = {.table = r->table, .filter.doc = http__opt_value(j, "filter")};
    struct st_err err = {0};
    int rc;
    if (!http__check_fields(r, j, top, NULL) ||
        !http__opt_int(r, j, "snapshot", &q.snapshot.has, &q.snapshot.v) ||
        !http__opt_int(r, j, "limit", &q.limit.has, &q.limit.v) ||
        !columns_of(r, d, jdoc_get(j, "columns"), &q))
        goto fail;
    if ((rc = svc_scan_open(r->srv->app->engine, &q, &hs->sv, &err)) != ST_OK) {
        http__reply_err(r, rc, &err);
        goto fail;
    }
    hs->out = engine_scan_columns(hs->sv.scan, &hs->nout);
    for (int i = 0; i < NSLOT; i++)
        buf_reserve(&hs->slot[i], CHUNK + 4096);
    /* The first chunk before the status line: an early failure is still a problem. */
    if ((rc = fill(hs, &hs->slot[0], &err)) != ST_OK) {
        http__reply_err(r, rc, &err);
        goto fail;
    }
    jdoc_free(d); /* the filter and the columns own what they took from it */
    d = NULL;
    int64_t snap = engine_scan_snapshot(hs->sv.scan);
    if (hs->slot[0].len > 0) {
        hs->count = 1;
        hs->wr = 1;
    }
    if (hs->eof) {
        engine_scan_close(hs->sv.scan);
        hs->sv.scan = NULL;
        hs->done = true;
    }
    hs->m = r->srv->m;
    r->scan = &hs->state;
    http__reply_reset(&r->reply);
    r->reply.status = 200;
    r->reply.ctype = "application/x-ndjson";
    r->reply.stream = scan_reader;
    http__reply_header(r, "Strike-Snapshot", "%" PRId64, snap);
    bool more = !hs->done;
    http__publish(r);
    if (more)
        produce(r);
    return;
fail:
    scan_free(hs);
    jdoc_free(d);
}
