/*
 * bench_grpc_dv.c - a load generator for GetDeletionVector on the gRPC C core.
 *
 *   bench_grpc_dv --target 127.0.0.1:50051 --table T --file-id N [--snapshot S]
 *                 [--format roaring64] [--concurrency 64] [--channels 4]
 *                 [--threads 1] [--seconds 5] [--warmup 1]
 *
 * Keeps `concurrency` calls in flight, spread over `channels` connections
 * (GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, so each channel is its own TCP
 * connection) and `threads` completion-queue threads; every completion
 * starts the next call. Prints one line:
 *
 *   grpc GetDeletionVector: calls=N errors=E calls/s=X p50_us=.. p99_us=.. p999_us=.. bytes=B
 * card=C
 *
 * A call counts as an error unless it ends OK with a DeletionVector whose
 * data has the length of the first reply. No timing assertions: it prints.
 */
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strike/v1/strike.pb-c.h"

struct opts {
    const char *target, *table, *format;
    int64_t file_id, snapshot;
    bool has_snapshot;
    int concurrency, channels, threads;
    double seconds, warmup;
};

struct slot {
    struct worker *w;
    grpc_channel *ch;
    grpc_call *call;
    grpc_metadata_array init_md, trail_md;
    grpc_byte_buffer *req, *reply;
    grpc_status_code status;
    grpc_slice details;
    uint64_t t0;
};

struct worker {
    const struct opts *o;
    grpc_completion_queue *cq;
    grpc_channel **chans;
    int nchans;
    struct slot *slots;
    int nslots;
    grpc_slice payload;
    grpc_slice method;
    uint64_t measure_from, stop_at;
    uint64_t *lat;
    size_t nlat, caplat;
    uint64_t errors;
    size_t reply_len;
    int64_t card;
    pthread_t th;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void start_call(struct slot *s)
{
    struct worker *w = s->w;
    s->call = grpc_channel_create_call(s->ch, NULL, GRPC_PROPAGATE_DEFAULTS, w->cq, w->method, NULL,
                                       gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_metadata_array_init(&s->init_md);
    grpc_metadata_array_init(&s->trail_md);
    s->reply = NULL;
    s->req = grpc_raw_byte_buffer_create(&w->payload, 1); /* alive until the tag completes */
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = s->req;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &s->reply;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &s->trail_md;
    ops[5].data.recv_status_on_client.status = &s->status;
    ops[5].data.recv_status_on_client.status_details = &s->details;
    s->t0 = now_ns();
    grpc_call_error e = grpc_call_start_batch(s->call, ops, 6, s, NULL);
    if (e != GRPC_CALL_OK) {
        fprintf(stderr, "bench: start_batch: %s\n", grpc_call_error_to_string(e));
        exit(1);
    }
}

/* Check a reply; true when it is a DeletionVector like the first one. */
static bool check_reply(struct worker *w, struct slot *s)
{
    if (s->status != GRPC_STATUS_OK || s->reply == NULL) {
        if (w->errors == 0)
            fprintf(stderr, "bench: status %d: %.*s\n", (int)s->status,
                    (int)GRPC_SLICE_LENGTH(s->details),
                    (const char *)GRPC_SLICE_START_PTR(s->details));
        return false;
    }
    grpc_byte_buffer_reader rd;
    if (!grpc_byte_buffer_reader_init(&rd, s->reply))
        return false;
    grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
    grpc_byte_buffer_reader_destroy(&rd);
    Strike__V1__DeletionVector *dv = strike__v1__deletion_vector__unpack(
        NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
    grpc_slice_unref(all);
    bool ok = dv != NULL;
    if (ok && w->reply_len == 0) {
        w->reply_len = dv->data.len;
        w->card = dv->cardinality;
    }
    ok = ok && dv->data.len == w->reply_len && dv->data.len > 0;
    if (dv != NULL)
        strike__v1__deletion_vector__free_unpacked(dv, NULL);
    return ok;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    int active = w->nslots;
    for (int i = 0; i < w->nslots; i++)
        start_call(&w->slots[i]);
    while (active > 0) {
        grpc_event ev = grpc_completion_queue_next(w->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type != GRPC_OP_COMPLETE)
            break;
        struct slot *s = ev.tag;
        uint64_t t = now_ns();
        bool ok = ev.success && check_reply(w, s);
        if (s->t0 >= w->measure_from && t <= w->stop_at) {
            if (!ok) {
                w->errors++;
            } else {
                if (w->nlat == w->caplat) {
                    w->caplat = w->caplat ? w->caplat * 2 : 65536;
                    w->lat = realloc(w->lat, w->caplat * sizeof *w->lat);
                    if (w->lat == NULL)
                        abort();
                }
                w->lat[w->nlat++] = t - s->t0;
            }
        }
        grpc_byte_buffer_destroy(s->req);
        if (s->reply != NULL)
            grpc_byte_buffer_destroy(s->reply);
        grpc_metadata_array_destroy(&s->init_md);
        grpc_metadata_array_destroy(&s->trail_md);
        grpc_slice_unref(s->details);
        grpc_call_unref(s->call);
        s->call = NULL;
        if (t < w->stop_at)
            start_call(s);
        else
            active--;
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_grpc_dv --target HOST:PORT --table T --file-id N [--snapshot S]\n"
                    "       [--format F] [--concurrency 64] [--channels 4] [--threads 1]\n"
                    "       [--seconds 5] [--warmup 1]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct opts o = {
        .format = "", .concurrency = 64, .channels = 4, .threads = 1, .seconds = 5, .warmup = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--target") == 0)
            o.target = v;
        else if (strcmp(a, "--table") == 0)
            o.table = v;
        else if (strcmp(a, "--format") == 0)
            o.format = v;
        else if (strcmp(a, "--file-id") == 0)
            o.file_id = strtoll(v, NULL, 10);
        else if (strcmp(a, "--snapshot") == 0)
            o.snapshot = strtoll(v, NULL, 10), o.has_snapshot = true;
        else if (strcmp(a, "--concurrency") == 0)
            o.concurrency = atoi(v);
        else if (strcmp(a, "--channels") == 0)
            o.channels = atoi(v);
        else if (strcmp(a, "--threads") == 0)
            o.threads = atoi(v);
        else if (strcmp(a, "--seconds") == 0)
            o.seconds = atof(v);
        else if (strcmp(a, "--warmup") == 0)
            o.warmup = atof(v);
        else
            usage();
    }
    if (o.target == NULL || o.table == NULL || o.file_id <= 0 || o.concurrency <= 0 ||
        o.channels <= 0 || o.threads <= 0 || o.threads > o.concurrency)
        usage();

    grpc_init();
    Strike__V1__GetDeletionVectorRequest req = STRIKE__V1__GET_DELETION_VECTOR_REQUEST__INIT;
    req.table = (char *)o.table;
    req.file_id = o.file_id;
    req.format = (char *)o.format;
    if (o.has_snapshot) {
        req.snapshot_present_case =
            STRIKE__V1__GET_DELETION_VECTOR_REQUEST__SNAPSHOT_PRESENT_SNAPSHOT;
        req.snapshot = o.snapshot;
    }
    size_t n = strike__v1__get_deletion_vector_request__get_packed_size(&req);
    grpc_slice payload = grpc_slice_malloc(n);
    strike__v1__get_deletion_vector_request__pack(&req, GRPC_SLICE_START_PTR(payload));

    grpc_arg arg = {.type = GRPC_ARG_INTEGER,
                    .key = (char *)GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL,
                    .value.integer = 1};
    grpc_channel_args args = {1, &arg};
    uint64_t t_start = now_ns();
    uint64_t measure_from = t_start + (uint64_t)(o.warmup * 1e9);
    uint64_t stop_at = measure_from + (uint64_t)(o.seconds * 1e9);
    struct worker *ws = calloc((size_t)o.threads, sizeof *ws);
    int chans_per = (o.channels + o.threads - 1) / o.threads;
    for (int t = 0; t < o.threads; t++) {
        struct worker *w = &ws[t];
        w->o = &o;
        w->cq = grpc_completion_queue_create_for_next(NULL);
        w->payload = payload;
        w->method = grpc_slice_from_static_string("/strike.v1.Strike/GetDeletionVector");
        w->measure_from = measure_from;
        w->stop_at = stop_at;
        w->nchans = chans_per;
        w->chans = calloc((size_t)chans_per, sizeof *w->chans);
        for (int c = 0; c < chans_per; c++) {
            grpc_channel_credentials *cr = grpc_insecure_credentials_create();
            w->chans[c] = grpc_channel_create(o.target, cr, &args);
            grpc_channel_credentials_release(cr);
        }
        w->nslots = o.concurrency / o.threads + (t < o.concurrency % o.threads);
        w->slots = calloc((size_t)w->nslots, sizeof *w->slots);
        for (int i = 0; i < w->nslots; i++) {
            w->slots[i].w = w;
            w->slots[i].ch = w->chans[i % chans_per];
        }
    }
    for (int t = 0; t < o.threads; t++)
        pthread_create(&ws[t].th, NULL, run, &ws[t]);
    uint64_t errors = 0, total = 0;
    size_t reply_len = 0;
    int64_t card = 0;
    for (int t = 0; t < o.threads; t++) {
        pthread_join(ws[t].th, NULL);
        errors += ws[t].errors;
        total += ws[t].nlat;
        if (ws[t].reply_len)
            reply_len = ws[t].reply_len, card = ws[t].card;
    }
    uint64_t *all = malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    for (int t = 0; t < o.threads; t++) {
        if (ws[t].nlat > 0) /* a thread whose every call failed has no array */
            memcpy(all + k, ws[t].lat, ws[t].nlat * sizeof *all);
        k += ws[t].nlat;
    }
    qsort(all, total, sizeof *all, cmp_u64);
#define PCT(p) (total ? (double)all[(size_t)((double)(total - 1) * (p))] / 1000.0 : 0.0)
    printf("grpc GetDeletionVector: calls=%llu errors=%llu calls/s=%.0f p50_us=%.0f p99_us=%.0f "
           "p999_us=%.0f bytes=%zu card=%lld concurrency=%d channels=%d threads=%d\n",
           (unsigned long long)total, (unsigned long long)errors, (double)total / o.seconds,
           PCT(0.50), PCT(0.99), PCT(0.999), reply_len, (long long)card, o.concurrency, o.channels,
           o.threads);
    for (int t = 0; t < o.threads; t++) {
        for (int c = 0; c < ws[t].nchans; c++)
            grpc_channel_destroy(ws[t].chans[c]);
        grpc_completion_queue_shutdown(ws[t].cq);
        while (
            grpc_completion_queue_next(ws[t].cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
            GRPC_QUEUE_SHUTDOWN)
            ;
        grpc_completion_queue_destroy(ws[t].cq);
        free(ws[t].chans);
        free(ws[t].slots);
        free(ws[t].lat);
    }
    free(ws);
    free(all);
    grpc_slice_unref(payload);
    grpc_shutdown_blocking();
    return errors ? 1 : 0;
}
