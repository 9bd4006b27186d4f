/*
 * grpc_dv_peer.c - the peer of bench e7: the least a server on the same gRPC C
 * core does to answer strike.v1.Strike/GetDeletionVector with given bytes.
 *
 *   grpc_dv_peer --reply FILE [--threads N] [--prepost K] [--listen 127.0.0.1:0]
 *
 * FILE holds a packed strike.v1.DeletionVector (tests/bench/bench_grpc_dv.py
 * writes the bytes striked answered). The server has N completion-queue
 * threads (default: the online CPUs, as striked), one queue each, with K
 * requests posted per queue; every call is answered on the thread that
 * accepted it with one batch {initial metadata, the reply, status OK,
 * RECV_CLOSE} (a request that is not a GetDeletionVectorRequest gets
 * INVALID_ARGUMENT). The reply is one slice, read once and shared by every
 * call. No auth, no limits, no metadata: the core's own cost.
 *
 * Prints "port P" once listening; SIGINT or SIGTERM stops it cleanly.
 */
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strike/v1/strike.pb-c.h"

#define METHOD "/strike.v1.Strike/GetDeletionVector"

struct peer {
    grpc_server *srv;
    void *reg;
    grpc_slice reply; /* shared by every call, referenced per message */
};

struct queue {
    struct peer *p;
    grpc_completion_queue *cq;
    pthread_t th;
};

/* One call, from its posted request to the end of its one batch. */
struct call {
    struct queue *q;
    bool answered; /* the tag now means "the batch completed" */
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload, *out;
    grpc_slice details;
    int cancelled;
};

static void post(struct queue *q)
{
    struct call *c = calloc(1, sizeof *c);
    if (c == NULL)
        abort();
    c->q = q;
    grpc_metadata_array_init(&c->md);
    grpc_call_error e = grpc_server_request_registered_call(
        q->p->srv, q->p->reg, &c->call, &c->deadline, &c->md, &c->payload, q->cq, q->cq, c);
    if (e != GRPC_CALL_OK) {
        fprintf(stderr, "peer: request_registered_call: %s\n", grpc_call_error_to_string(e));
        abort();
    }
}

static void call_free(struct call *c)
{
    if (c->payload != NULL)
        grpc_byte_buffer_destroy(c->payload);
    if (c->out != NULL)
        grpc_byte_buffer_destroy(c->out);
    grpc_metadata_array_destroy(&c->md);
    if (c->call != NULL)
        grpc_call_unref(c->call);
    free(c);
}

/* A new call: decode the request, then one batch ends it. */
static void answer(struct call *c)
{
    post(c->q); /* keep K requests waiting */
    bool valid = false;
    grpc_byte_buffer_reader rd;
    if (c->payload != NULL && grpc_byte_buffer_reader_init(&rd, c->payload)) {
        grpc_slice s = grpc_byte_buffer_reader_readall(&rd);
        grpc_byte_buffer_reader_destroy(&rd);
        Strike__V1__GetDeletionVectorRequest *m = strike__v1__get_deletion_vector_request__unpack(
            NULL, GRPC_SLICE_LENGTH(s), GRPC_SLICE_START_PTR(s));
        grpc_slice_unref(s);
        valid = m != NULL;
        if (m != NULL)
            strike__v1__get_deletion_vector_request__free_unpacked(m, NULL);
    }
    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    size_t n = 0;
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (valid) {
        c->out = grpc_raw_byte_buffer_create(&c->q->p->reply, 1);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->out;
    }
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status =
        valid ? GRPC_STATUS_OK : GRPC_STATUS_INVALID_ARGUMENT;
    if (!valid) {
        c->details = grpc_slice_from_static_string("not a GetDeletionVectorRequest");
        ops[n].data.send_status_from_server.status_details = &c->details;
    }
    n++;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    c->answered = true;
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, c, NULL);
    if (e != GRPC_CALL_OK) {
        fprintf(stderr, "peer: start_batch: %s\n", grpc_call_error_to_string(e));
        abort();
    }
}

static void *cq_main(void *arg)
{
    struct queue *q = arg;
    for (;;) {
        grpc_event ev =
            grpc_completion_queue_next(q->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        struct call *c = ev.tag;
        if (c->answered || !ev.success) /* done, or the server is shutting down */
            call_free(c);
        else
            answer(c);
    }
    return NULL;
}

static grpc_slice read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    char buf[1 << 16];
    size_t cap = 1 << 16, len = 0;
    char *all = malloc(cap);
    size_t k;
    while (all != NULL && (k = fread(buf, 1, sizeof buf, f)) > 0) {
        if (len + k > cap)
            all = realloc(all, cap = 2 * (len + k));
        if (all != NULL)
            memcpy(all + len, buf, k);
        len += k;
    }
    fclose(f);
    if (all == NULL)
        abort();
    grpc_slice s = grpc_slice_from_copied_buffer(all, len);
    free(all);
    return s;
}

static void usage(void)
{
    fprintf(stderr, "usage: grpc_dv_peer --reply FILE [--threads N] [--prepost K] "
                    "[--listen 127.0.0.1:0]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *reply = NULL, *listen = "127.0.0.1:0";
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nq = ncpu > 0 ? (int)ncpu : 2, prepost = 16;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--reply") == 0)
            reply = argv[i + 1];
        else if (strcmp(argv[i], "--threads") == 0)
            nq = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--prepost") == 0)
            prepost = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--listen") == 0)
            listen = argv[i + 1];
        else
            usage();
    }
    if (reply == NULL || nq <= 0 || prepost <= 0)
        usage();

    sigset_t sigs; /* before grpc_init: its threads inherit the mask */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    grpc_init();

    struct peer p = {0};
    p.reply = read_file(reply);
    grpc_arg arg = {
        .type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_ALLOW_REUSEPORT, .value.integer = 0};
    grpc_channel_args args = {1, &arg};
    p.srv = grpc_server_create(&args, NULL);
    p.reg = grpc_server_register_method(p.srv, METHOD, NULL,
                                        GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    struct queue *qs = calloc((size_t)nq, sizeof *qs);
    if (qs == NULL)
        abort();
    for (int i = 0; i < nq; i++) {
        qs[i].p = &p;
        qs[i].cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(p.srv, qs[i].cq, NULL);
    }
    grpc_completion_queue *shutdown_cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(p.srv, shutdown_cq, NULL);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(p.srv, listen, creds);
    grpc_server_credentials_release(creds);
    if (port == 0) {
        fprintf(stderr, "peer: cannot listen on %s\n", listen);
        return 1;
    }
    grpc_server_start(p.srv);
    for (int i = 0; i < nq; i++)
        pthread_create(&qs[i].th, NULL, cq_main, &qs[i]);
    for (int i = 0; i < nq; i++)
        for (int k = 0; k < prepost; k++)
            post(&qs[i]);
    printf("port %d\n", port);
    fflush(stdout);

    int sig;
    sigwait(&sigs, &sig);
    grpc_server_shutdown_and_notify(p.srv, shutdown_cq, &p);
    gpr_timespec grace =
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(2000, GPR_TIMESPAN));
    if (grpc_completion_queue_next(shutdown_cq, grace, NULL).type != GRPC_OP_COMPLETE) {
        grpc_server_cancel_all_calls(p.srv);
        grpc_completion_queue_next(shutdown_cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    }
    for (int i = 0; i < nq; i++)
        grpc_completion_queue_shutdown(qs[i].cq);
    for (int i = 0; i < nq; i++) {
        pthread_join(qs[i].th, NULL);
        grpc_completion_queue_destroy(qs[i].cq);
    }
    grpc_completion_queue_shutdown(shutdown_cq);
    while (
        grpc_completion_queue_next(shutdown_cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
        GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(shutdown_cq);
    grpc_server_destroy(p.srv);
    grpc_slice_unref(p.reply);
    free(qs);
    grpc_shutdown_blocking();
    return 0;
}
