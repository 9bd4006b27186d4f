/*
 * grpc.c - the gRPC transport on the C core: the server, one completion
 * queue per thread, and the state machine of every call.
 *
 * Threads. N completion-queue (CQ) threads, each looping on its own queue,
 * each queue registered with the server; every queue has requests posted
 * for every method (PREPOST each), for grpc.health.v1 Check, and one
 * unregistered request that answers UNIMPLEMENTED for unknown methods.
 * CQ threads never block: calls that need the catalog or the blob store
 * are handed to app->workers, and the worker starts the reply batch itself
 * (its completion comes back to the call's CQ thread).
 *
 * A call that goes to a worker is first charged to the budget of bytes in
 * flight (admit.h: its message, times the expansion), refused UNAVAILABLE
 * beyond it, and gives the charge back when it is freed.
 *
 * A call (struct rpc), from the request it was posted for to its free:
 *
 *   POSTED    --t_new ok-->  ACTIVE   answered inline (unknown method, health,
 *                                     UNIMPLEMENTED, a cache hit: RECV_CLOSE then
 *                                     goes with the final batch), or
 *                                     RECV_CLOSE_ON_SERVER started (t_close) and
 *                                     the call queued to a worker
 *   ACTIVE    --reply---->  FINAL      one batch: initial metadata, message,
 *                                      status with x-request-id (t_send)
 *   ACTIVE    --stream--->  PRODUCING  a worker builds one message
 *   PRODUCING --send----->  SENDING    {initial metadata,} that message (t_send)
 *   PRODUCING --last----->  FINAL      last message + status, or status alone
 *   SENDING   --t_send ok-> PRODUCING  the next message is built only now, on a
 *                                      worker: that is the flow control
 *   SENDING   --t_send !ok, or cancelled, or deadline--> FINAL
 *                                      (CANCELLED / DEADLINE_EXCEEDED)
 *   FINAL     --t_send-->   the driver's reference is dropped
 *   any       --t_close-->  `cancelled` recorded; its reference dropped
 *
 * move() asserts these transitions, and on entering a state what the state
 * promises (check_state(), debug builds): a stream that produces has no
 * message in flight, one that sends has exactly one, a final call has its
 * trailing metadata and has given back its admission charge.
 *
 * References: the driver (whoever may start the next send batch: the CQ
 * thread, then a worker, then the CQ thread again...) and the t_close tag.
 * Every tag completes exactly once, ok or not, and each completion drops
 * what it holds; the last one frees the call. The driver role passes
 * through the worker queue or a completion, so at most one thread starts
 * batches on a call at any time and at most one send batch is in flight
 * (the core allows one SEND_MESSAGE at a time): no lock per call.
 */
#include "grpc.h"
#include "grpc_conv.h"
#include "grpc_int.h"
#include "tls.h"
#include "workers.h"

#include "common/debug.h"
#include "common/log.h"
#include "common/types.h"
#include "common/timeutil.h"
#include "common/uuid.h"
#include "common/xalloc.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PREPOST 16                    /* requests posted per method per completion queue */
#define RID_MAX 128                   /* bytes kept of a client's x-request-id */
#define INIT_MD_MAX 4                 /* initial metadata entries a stream may add */
#define GRPC_MAX_STREAMS 256          /* concurrent calls per connection */
#define GRPC_MAX_METADATA (16 * 1024) /* bytes of request metadata */
#define HEALTH_PATH "/grpc.health.v1.Health/Check"
#define HEALTH_SERVICE "strike.v1.Strike"

#define container_of(p, T, m) ((T *)(void *)((char *)(p)-offsetof(T, m)))

/*
 * A completion-queue tag. gRPC hands it from the thread that starts an
 * operation to the queue's thread under locks of its own, in code not built
 * with ThreadSanitizer: the release store of hand_off() before every start and
 * the acquire load in cq_main state that order in C11 terms, so what was
 * written before the start is visible to fn, also to TSan.
 */
struct tag {
    void (*fn)(struct tag *t, bool ok);
    atomic_bool handed;
};

enum rpc_state { RPC_POSTED, RPC_ACTIVE, RPC_SENDING, RPC_PRODUCING, RPC_FINAL, RPC_NSTATES };

enum { TARGET_HEALTH = -1, TARGET_UNKNOWN = -2 };

struct target {
    char *path; /* "/strike.v1.Strike/Scan" */
    const struct rpc_method *m;
    void *reg;         /* grpc_server_register_method handle */
    uint32_t tfield;   /* the request's field number that names the table; 0: none */
    const char *input; /* the request message's full name */
};

struct cqt {
    struct grpcs *g;
    grpc_completion_queue *cq;
    pthread_t th;
    bool running;
};

struct grpcs {
    struct app *app;
    grpc_server *srv;
    struct target *targets;
    size_t ntargets;
    void *health_reg;
    struct cqt *cqs;
    int ncq;
    grpc_completion_queue *shutdown_cq;
    struct tag shutdown_tag;
    atomic_bool quiescing;
    atomic_int live;     /* struct rpc alive, posted ones included */
    atomic_ullong calls; /* calls accepted, for request ids */
    char rid_prefix[9];  /* 8 random hex digits */
    size_t max_send;
    atomic_uint_fast64_t tls_gen; /* the certificate generation gRPC has (fetch_cert) */
};

struct rpc {
    struct tag t_new, t_close, t_send;
    struct grpcs *g;
    struct cqt *cqt;
    int target;
    const struct rpc_method *m;
    enum rpc_state state;
    atomic_int refs;
    atomic_bool cancelled; /* RECV_CLOSE said so */
    int close_cancelled;   /* written by the core */
    bool close_in_final;   /* RECV_CLOSE goes with the final batch (answered inline) */
    uint64_t t0_ns;

    /* the request */
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_call_details details; /* unknown methods only */
    grpc_byte_buffer *payload;
    grpc_slice req;
    bool req_read, req_ok;
    uint64_t admitted; /* bytes charged to app->admit, released by finish (or when freed) */
    char rid[RID_MAX + 1];
    char *idem;
    char *authz;                 /* the `authorization` metadata, or NULL */
    struct auth_ctx auth;        /* checked in on_new, before a handler or a cache sees the call */
    char table[ST_NAME_MAX + 1]; /* the table the call names (for the audit line) */
    char receipt[64]; /* an erasure's receipt id for the audit line (rpc_audit_receipt) */

    /* the reply */
    grpc_metadata init_md[INIT_MD_MAX];
    size_t n_init_md;
    bool sent_initial;
    grpc_metadata trail_md[1];
    bool has_trail;
    grpc_slice status_details;
    bool has_status_details;
    grpc_byte_buffer *send_bb;

    /* a stream */
    void *st;
    rpc_produce_fn produce;
    void (*st_free)(void *st);
};

static const struct rpc_method not_served = {
    .name = "",
    .kind = RPC_UNIMPLEMENTED,
    .unimplemented = "this method of strike.v1.Strike is not served by this version",
    .scope = AUTH_ADMIN,
};

static void on_new(struct tag *t, bool ok);
static void on_close(struct tag *t, bool ok);
static void on_send(struct tag *t, bool ok);

/* ---- status codes ------------------------------------------------------------- */

/* docs/API.md "gRPC": the engine's codes as gRPC status codes (err.h's status table). */
static grpc_status_code status_of(int st)
{
    switch (st) {
#define ST_X_GRPC(c, value, name, http, grpc, detail)                                              \
    case c:                                                                                        \
        return GRPC_STATUS_##grpc;
        ST_STATUS_TABLE(ST_X_GRPC)
#undef ST_X_GRPC
    default:
        return GRPC_STATUS_INTERNAL;
    }
}

static const char *status_name(grpc_status_code c)
{
    static const char *const names[] = {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    };
    return (unsigned)c < sizeof names / sizeof names[0] ? names[c] : "?";
}

/* ---- the life of a call ------------------------------------------------------------ */

static const char *path_of(const struct rpc *r)
{
    if (r->target >= 0)
        return r->g->targets[r->target].path;
    return r->target == TARGET_HEALTH ? HEALTH_PATH : "(unknown method)";
}

#ifndef NDEBUG
static const char *const STATE_NAMES[RPC_NSTATES] = {
    [RPC_POSTED] = "POSTED",       [RPC_ACTIVE] = "ACTIVE", [RPC_SENDING] = "SENDING",
    [RPC_PRODUCING] = "PRODUCING", [RPC_FINAL] = "FINAL",
};

/* What a call in its state promises (see the top of the file), checked on entering it. */
static void check_state(const struct rpc *r)
{
    assert(r->state < RPC_NSTATES && atomic_load(&r->refs) > 0);
    bool stream = r->m != NULL && r->m->kind == RPC_SERVER_STREAM;
    switch (r->state) {
    case RPC_POSTED:
        break;
    case RPC_ACTIVE:
        assert(r->call != NULL && (r->target < 0 || r->m != NULL));
        break;
    case RPC_PRODUCING: /* a worker builds the next message: none is in flight */
        assert(stream && r->produce != NULL && r->send_bb == NULL);
        break;
    case RPC_SENDING: /* exactly one message in flight, after the initial metadata */
        assert(stream && r->send_bb != NULL && r->sent_initial);
        break;
    case RPC_FINAL: /* the last batch: the request id goes back, the charge went back */
        assert(r->has_trail && r->admitted == 0 && r->sent_initial);
        break;
    case RPC_NSTATES:
        assert(!"not a state");
    }
}
#endif

/*
 * The allowed transitions (see the top of the file). Only the driver moves
 * a call, so the state needs no lock.
 */
static void move(struct rpc *r, enum rpc_state to)
{
    static const unsigned allowed[RPC_NSTATES] = {
        [RPC_POSTED] = 1u << RPC_ACTIVE,
        [RPC_ACTIVE] = 1u << RPC_PRODUCING | 1u << RPC_FINAL,
        [RPC_PRODUCING] = 1u << RPC_SENDING | 1u << RPC_FINAL,
        [RPC_SENDING] = 1u << RPC_PRODUCING | 1u << RPC_FINAL,
        [RPC_FINAL] = 0,
    };
#ifndef NDEBUG
    if (!(allowed[r->state] & (1u << to))) /* say which, before the assert stops the process */
        log_error("grpc %s: %s -> %s is not a transition of a call", path_of(r),
                  STATE_NAMES[r->state], STATE_NAMES[to]);
#endif
    assert(to < RPC_NSTATES && (allowed[r->state] & (1u << to)));
    (void)allowed; /* NDEBUG */
    r->state = to;
    ST_DEBUG_CHECK(check_state(r));
}

static struct tag *hand_off(struct tag *t)
{
    atomic_store_explicit(&t->handed, true, memory_order_release);
    return t;
}

static void rpc_free(struct rpc *r)
{
    struct grpcs *g = r->g;
    /* the last reference; a stream's producer never outlives the call */
    assert(atomic_load(&r->refs) == 0 && r->state != RPC_PRODUCING);
    if (r->st_free != NULL && r->st != NULL)
        r->st_free(r->st);
    if (r->payload != NULL)
        grpc_byte_buffer_destroy(r->payload);
    if (r->send_bb != NULL)
        grpc_byte_buffer_destroy(r->send_bb);
    if (r->req_read && r->req_ok)
        grpc_slice_unref(r->req);
    for (size_t i = 0; i < r->n_init_md; i++) {
        grpc_slice_unref(r->init_md[i].key);
        grpc_slice_unref(r->init_md[i].value);
    }
    if (r->has_trail)
        grpc_slice_unref(r->trail_md[0].value);
    if (r->has_status_details)
        grpc_slice_unref(r->status_details);
    grpc_metadata_array_destroy(&r->md);
    if (r->target == TARGET_UNKNOWN)
        grpc_call_details_destroy(&r->details);
    if (r->call != NULL)
        grpc_call_unref(r->call);
    admit_release(&g->app->admit, r->admitted);
    auth_end(&r->auth);
    free(r->authz);
    free(r->idem);
    free(r);
    atomic_fetch_sub(&g->live, 1);
}

static void rpc_unref(struct rpc *r)
{
    int was = atomic_fetch_sub(&r->refs, 1);
    assert(was > 0); /* each tag and the driver drop what they hold once */
    if (was == 1)
        rpc_free(r);
}

/* Post one request for `target` on completion queue `c`. */
static void post(struct cqt *c, int target)
{
    struct grpcs *g = c->g;
    struct rpc *r = xcalloc(1, sizeof *r);
    r->g = g;
    r->cqt = c;
    r->target = target;
    r->m = target >= 0 ? g->targets[target].m : NULL;
    r->state = RPC_POSTED;
    r->t_new.fn = on_new;
    r->t_close.fn = on_close;
    r->t_send.fn = on_send;
    atomic_init(&r->refs, 1);
    atomic_init(&r->cancelled, false);
    grpc_metadata_array_init(&r->md);
    atomic_fetch_add(&g->live, 1);
    grpc_call_error e;
    if (target == TARGET_UNKNOWN) {
        grpc_call_details_init(&r->details);
        e = grpc_server_request_call(g->srv, &r->call, &r->details, &r->md, c->cq, c->cq,
                                     hand_off(&r->t_new));
    } else {
        void *reg = target == TARGET_HEALTH ? g->health_reg : g->targets[target].reg;
        e = grpc_server_request_registered_call(g->srv, reg, &r->call, &r->deadline, &r->md,
                                                &r->payload, c->cq, c->cq, hand_off(&r->t_new));
    }
    if (e != GRPC_CALL_OK) {
        log_error("grpc: cannot post a request for %s: %s", path_of(r),
                  grpc_call_error_to_string(e));
        rpc_free(r);
    }
}

static bool deadline_passed(const struct rpc *r)
{
    gpr_clock_type ct = r->deadline.clock_type;
    if (ct == GPR_TIMESPAN)
        return false;
    return gpr_time_cmp(gpr_now(ct), r->deadline) >= 0;
}

static void log_call(const struct rpc *r, grpc_status_code code, const char *detail)
{
    if (code == GRPC_STATUS_INTERNAL || code == GRPC_STATUS_UNKNOWN ||
        code == GRPC_STATUS_DATA_LOSS) {
        log_error("grpc %s: %s: %s", path_of(r), status_name(code), detail ? detail : "");
        return;
    }
    if (st_log_get_level() > ST_LOG_DEBUG)
        return;
    char ms[32];
    snprintf(ms, sizeof ms, "%.3f", (double)(st_mono_ns() - r->t0_ns) / 1e6);
    st_log_kv(ST_LOG_DEBUG, "rpc", "method", path_of(r), "status", status_name(code), "ms", ms,
              "detail", detail ? detail : "", NULL);
}

/* Start a send batch; on failure the call is cancelled and the driver's reference dropped. */
static void start_send(struct rpc *r, grpc_op *ops, size_t n)
{
    grpc_call_error e = grpc_call_start_batch(r->call, ops, n, hand_off(&r->t_send), NULL);
    if (e != GRPC_CALL_OK) {
        log_error("grpc %s: cannot start a batch: %s", path_of(r), grpc_call_error_to_string(e));
        grpc_call_cancel(r->call, NULL);
        rpc_unref(r);
    }
    /* Nothing past this point: the completion may already have freed r. */
}

static size_t add_initial_md(struct rpc *r, grpc_op *op)
{
    assert(r->n_init_md <= INIT_MD_MAX);
    if (r->sent_initial)
        return 0;
    r->sent_initial = true;
    op->op = GRPC_OP_SEND_INITIAL_METADATA;
    op->data.send_initial_metadata.count = r->n_init_md;
    op->data.send_initial_metadata.metadata = r->n_init_md ? r->init_md : NULL;
    return 1;
}

/* The last batch of a call: initial metadata if not sent yet, `bb` if any, and the status. */
static void finish(struct rpc *r, grpc_status_code code, const char *detail, grpc_byte_buffer *bb)
{
    /* The work that expanded the message is done: its charge goes back before
       the client can see the status (and send its next call). */
    admit_release(&r->g->app->admit, r->admitted);
    r->admitted = 0;
    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    size_t n = add_initial_md(r, &ops[0]);
    if (bb != NULL) {
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = bb;
        n++;
    }
    assert(r->send_bb == NULL && !r->has_trail); /* no send in flight; one final batch */
    r->send_bb = bb;
    r->trail_md[0].key = grpc_slice_from_static_string("x-request-id");
    r->trail_md[0].value = grpc_slice_from_copied_string(r->rid);
    r->has_trail = true;
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = code;
    ops[n].data.send_status_from_server.trailing_metadata_count = 1;
    ops[n].data.send_status_from_server.trailing_metadata = r->trail_md;
    if (detail != NULL && code != GRPC_STATUS_OK) {
        r->status_details = grpc_slice_from_copied_string(detail);
        r->has_status_details = true;
        ops[n].data.send_status_from_server.status_details = &r->status_details;
    }
    n++;
    assert(n <= 3);
    if (r->close_in_final) {
        ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        ops[n].data.recv_close_on_server.cancelled = &r->close_cancelled;
        n++;
    }
    move(r, RPC_FINAL);
    log_call(r, code, detail);
    /* The audit trail: every admin call that passed the token check, whatever its outcome
       (refusals are written by auth.c). */
    if (r->target >= 0 && r->m->scope == AUTH_ADMIN && code != GRPC_STATUS_UNAUTHENTICATED &&
        code != GRPC_STATUS_PERMISSION_DENIED)
        auth_audit(&r->auth, r->table, code == GRPC_STATUS_OK ? "ok" : status_name(code),
                   r->receipt[0] ? "receipt" : "status",
                   r->receipt[0] ? r->receipt : status_name(code));
    start_send(r, ops, n);
}

static void finishf(struct rpc *r, grpc_status_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void finishf(struct rpc *r, grpc_status_code code, const char *fmt, ...)
{
    char msg[ST_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    finish(r, code, msg, NULL);
}

static void busy(struct rpc *r)
{
    if (atomic_load(&r->g->app->stopping))
        finish(r, GRPC_STATUS_UNAVAILABLE, "the server is shutting down", NULL);
    else
        finish(r, GRPC_STATUS_UNAVAILABLE, "the server is busy (worker queue full); retry later",
               NULL);
}

/* "<prefix>-g<n>", as "%s-g%llu" without printf's cost on every call. */
static void own_rid(char out[RID_MAX + 1], const char prefix[9], unsigned long long n)
{
    char digits[20];
    size_t nd = 0;
    do
        digits[nd++] = (char)('0' + n % 10);
    while ((n /= 10) != 0);
    size_t o = strlen(prefix);
    memcpy(out, prefix, o);
    out[o++] = '-';
    out[o++] = 'g';
    while (nd > 0)
        out[o++] = digits[--nd];
    out[o] = '\0';
}

/* x-request-id (printable ASCII, bounded) and idempotency-key from the request metadata. */
static void read_metadata(struct rpc *r)
{
    r->rid[0] = '\0';
    for (size_t i = 0; i < r->md.count; i++) {
        const grpc_metadata *m = &r->md.metadata[i];
        const char *v = (const char *)GRPC_SLICE_START_PTR(m->value);
        size_t n = GRPC_SLICE_LENGTH(m->value);
        if (grpc_slice_str_cmp(m->key, "x-request-id") == 0) {
            size_t o = 0;
            for (size_t k = 0; k < n && o < RID_MAX; k++)
                if (v[k] > 0x20 && v[k] < 0x7f)
                    r->rid[o++] = v[k];
            r->rid[o] = '\0';
        } else if (grpc_slice_str_cmp(m->key, "idempotency-key") == 0 && r->idem == NULL) {
            r->idem = xstrndup(v, n);
        } else if (grpc_slice_str_cmp(m->key, "authorization") == 0 && r->authz == NULL) {
            /* bounded: auth_bearer refuses anything longer than a token */
            r->authz = xstrndup(v, n < AUTH_TOKEN_MAX + 64 ? n : AUTH_TOKEN_MAX + 64);
        }
    }
    if (r->rid[0] == '\0') /* ours: the process's random prefix and a call counter */
        own_rid(r->rid, r->g->rid_prefix, atomic_fetch_add(&r->g->calls, 1) + 1);
}

static void health_check(struct rpc *r)
{
    size_t n;
    const uint8_t *p = rpc_payload(r, &n);
    const char *svc;
    size_t sl;
    if (p == NULL || !gconv_health_service(p, n, &svc, &sl)) {
        finish(r, GRPC_STATUS_INVALID_ARGUMENT,
               "the request is not a valid grpc.health.v1.HealthCheckRequest message", NULL);
        return;
    }
    if (sl != 0 && (sl != strlen(HEALTH_SERVICE) || memcmp(svc, HEALTH_SERVICE, sl) != 0)) {
        finishf(r, GRPC_STATUS_NOT_FOUND, "unknown service \"%.*s\"", (int)(sl > 200 ? 200 : sl),
                svc);
        return;
    }
    /* HealthCheckResponse { status = 1 }: SERVING (1), or NOT_SERVING (2) while stopping. */
    uint8_t reply[2] = {0x08, atomic_load(&r->g->app->stopping) ? 2 : 1};
    grpc_slice s = grpc_slice_from_copied_buffer((const char *)reply, sizeof reply);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    finish(r, GRPC_STATUS_OK, NULL, bb);
}

static void run_job(void *arg)
{
    struct rpc *r = arg;
    st_log_set_rid(r->rid);
    if (rpc_cancelled(r))
        rpc_abort(r);
    else
        r->m->run(r);
    st_log_set_rid(NULL);
}

static void produce_job(void *arg)
{
    struct rpc *r = arg;
    st_log_set_rid(r->rid);
    if (rpc_cancelled(r))
        rpc_abort(r);
    else
        r->produce(r, r->st);
    st_log_set_rid(NULL);
}

/*
 * RECV_CLOSE_ON_SERVER on its own tag, for calls that go to a worker: it
 * reports cancellation while the handler works. False when it could not be
 * started (the call is then cancelled and the driver's reference dropped).
 */
static bool start_close(struct rpc *r)
{
    assert(r->state == RPC_ACTIVE && !r->close_in_final); /* RECV_CLOSE is started once */
    atomic_fetch_add(&r->refs, 1);
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &r->close_cancelled;
    grpc_call_error e = grpc_call_start_batch(r->call, &op, 1, hand_off(&r->t_close), NULL);
    if (e == GRPC_CALL_OK)
        return true;
    log_error("grpc %s: cannot start RECV_CLOSE: %s", path_of(r), grpc_call_error_to_string(e));
    atomic_fetch_sub(&r->refs, 1);
    grpc_call_cancel(r->call, NULL);
    rpc_unref(r);
    return false;
}

/*
 * The token and the method's declared scope on the table the request names,
 * before a handler, a cache or the catalog sees the call. False: the call
 * was answered (UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT).
 */
static bool authorize(struct rpc *r)
{
    const struct target *tg = &r->g->targets[r->target];
    r->close_in_final = true; /* a refusal is answered inline: RECV_CLOSE goes with it */
    r->auth.op = tg->path;
    struct st_err err = {0};
    /* The table first (for the audit line of a refusal), the token then. */
    const char *t = "";
    size_t tl = 0;
    bool ok = true;
    if (tg->tfield != 0) {
        size_t n;
        const uint8_t *p = rpc_payload(r, &n);
        ok = p != NULL && gconv_string_field(p, n, tg->tfield, &t, &tl);
        if (!ok) {
            t = ""; /* without auth, the handler says what is wrong with the message */
            tl = 0;
        }
    }
    {
        /* Kept for the audit line (cut at ST_NAME_MAX). */
        size_t keep = tl < sizeof r->table - 1 ? tl : sizeof r->table - 1;
        memcpy(r->table, t, keep);
        r->table[keep] = '\0';
    }
    int rc = auth_begin(r->g->app->auth, r->authz, r->table, &r->auth, &err);
    const char *table = r->table;
    if (rc == ST_OK && !r->auth.off && !ok) {
        finishf(r, GRPC_STATUS_INVALID_ARGUMENT, "the request is not a valid %s message",
                tg->input);
        return false;
    }
    if (rc == ST_OK && !r->auth.off && tg->tfield != 0 &&
        (memchr(t, '\0', tl) != NULL || tl > ST_NAME_MAX)) {
        /* a NUL or an over-long name: no glob may match a part of it */
        rc = st_errf(&err, ST_EPERM, "%s: not a table name the token may use", r->m->table_field);
        auth_audit(&r->auth, "", "forbidden", "detail", err.msg);
    }
    if (rc == ST_OK)
        rc = auth_check_op(&r->auth, r->m->scope,
                           tg->tfield != 0 ? AUTH_TABLE_PATH : AUTH_TABLE_NONE, table, &err);
    if (rc == ST_OK)
        return true;
    finish(r, status_of(rc), err.msg, NULL);
    return false;
}

static void on_new(struct tag *t, bool ok)
{
    struct rpc *r = container_of(t, struct rpc, t_new);
    struct grpcs *g = r->g;
    if (!ok) { /* the server is shutting down: this request will never be a call */
        rpc_unref(r);
        return;
    }
    if (!atomic_load(&g->quiescing))
        post(r->cqt, r->target); /* keep PREPOST requests waiting */
    r->t0_ns = st_mono_ns();
    if (r->target == TARGET_UNKNOWN)
        r->deadline = r->details.deadline;
    read_metadata(r);
    st_log_set_rid(r->rid);

    move(r, RPC_ACTIVE);
    if (r->target == TARGET_UNKNOWN) {
        size_t n = GRPC_SLICE_LENGTH(r->details.method);
        r->close_in_final = true;
        finishf(r, GRPC_STATUS_UNIMPLEMENTED, "unknown method %.*s", (int)(n > 300 ? 300 : n),
                (const char *)GRPC_SLICE_START_PTR(r->details.method));
    } else if (r->target == TARGET_HEALTH) {
        r->close_in_final = true;
        health_check(r);
    } else if (!authorize(r)) {
        /* answered: UNAUTHENTICATED, PERMISSION_DENIED or INVALID_ARGUMENT */
    } else if (r->m->kind == RPC_UNIMPLEMENTED) {
        r->close_in_final = true;
        finish(r, GRPC_STATUS_UNIMPLEMENTED, r->m->unimplemented, NULL);
    } else {
        /* Answered inline, a call needs no separate RECV_CLOSE: one batch does it all. */
        r->close_in_final = r->m->fast != NULL;
        if (r->close_in_final && r->m->fast(r))
            goto out; /* answered from caches on this thread */
        /* The message counts against the budget of bytes in flight (admit.h) until the
           call is freed; over it, the call is refused before a worker sees it. */
        size_t n = r->payload != NULL ? grpc_byte_buffer_length(r->payload) : 0;
        if (!admit_take(&g->app->admit, 0, admit_charge(n))) {
            struct admit *a = &g->app->admit;
            r->close_in_final = true;
            finishf(r, GRPC_STATUS_UNAVAILABLE,
                    "the server is at its in-flight limit: a message of %zu bytes counts %llu "
                    "against --max-inflight %llu, of which %llu are taken; retry later",
                    n, (unsigned long long)admit_charge(n), (unsigned long long)a->limit,
                    (unsigned long long)admit_used(a));
            goto out;
        }
        r->admitted = admit_charge(n);
        r->close_in_final = false;
        if (!start_close(r))
            goto out;
        if (!workers_submit(g->app->workers, run_job, r))
            busy(r);
    }
out:
    st_log_set_rid(NULL);
}

static void on_close(struct tag *t, bool ok)
{
    (void)ok;
    struct rpc *r = container_of(t, struct rpc, t_close);
    atomic_store(&r->cancelled, r->close_cancelled != 0);
    rpc_unref(r);
}

static void on_send(struct tag *t, bool ok)
{
    struct rpc *r = container_of(t, struct rpc, t_send);
    /* a send batch is started only by finish() (FINAL) and rpc_stream_send() (SENDING) */
    assert(r->state == RPC_SENDING || r->state == RPC_FINAL);
    if (r->send_bb != NULL) {
        grpc_byte_buffer_destroy(r->send_bb);
        r->send_bb = NULL;
    }
    if (r->state == RPC_FINAL) {
        rpc_unref(r); /* the driver's reference */
        return;
    }
    /* A stream message left (or could not): produce the next one, or stop. */
    st_log_set_rid(r->rid);
    if (!ok || rpc_cancelled(r)) {
        rpc_abort(r);
    } else {
        move(r, RPC_PRODUCING);
        if (!workers_submit(r->g->app->workers, produce_job, r))
            busy(r);
    }
    st_log_set_rid(NULL);
}

/* ---- grpc_int.h: what handlers may do --------------------------------------------- */

struct app *rpc_app(struct rpc *r)
{
    return r->g->app;
}

const uint8_t *rpc_payload(struct rpc *r, size_t *len)
{
    static const uint8_t empty[1];
    if (!r->req_read) {
        r->req_read = true;
        grpc_byte_buffer_reader rd;
        if (r->payload != NULL && grpc_byte_buffer_reader_init(&rd, r->payload)) {
            r->req = grpc_byte_buffer_reader_readall(&rd);
            grpc_byte_buffer_reader_destroy(&rd);
            r->req_ok = true;
        }
    }
    if (!r->req_ok) {
        *len = 0;
        return NULL;
    }
    *len = GRPC_SLICE_LENGTH(r->req);
    return *len ? GRPC_SLICE_START_PTR(r->req) : empty;
}

const char *rpc_path(struct rpc *r)
{
    return path_of(r);
}

void rpc_audit_receipt(struct rpc *r, const char *id)
{
    snprintf(r->receipt, sizeof r->receipt, "%s", id);
}

const struct auth_ctx *rpc_auth(struct rpc *r)
{
    return &r->auth;
}

const char *rpc_idem_key(struct rpc *r)
{
    return r->idem;
}

bool rpc_cancelled(struct rpc *r)
{
    return atomic_load(&r->cancelled) || deadline_passed(r);
}

size_t rpc_max_send(struct rpc *r)
{
    return r->g->max_send;
}

void rpc_reply(struct rpc *r, const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    if (n > r->g->max_send) {
        finishf(r, GRPC_STATUS_RESOURCE_EXHAUSTED,
                "the reply (%zu bytes) is larger than the message limit (%zu bytes)", n,
                r->g->max_send);
        return;
    }
    grpc_slice s = grpc_slice_malloc(n);
    protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    finish(r, GRPC_STATUS_OK, NULL, bb);
}

void rpc_reply_lead(struct rpc *r, const ProtobufCMessage *msg, const uint8_t *data, size_t len,
                    void (*release)(void *ud), void *ud)
{
    /* field 1, wire type 2 (length-delimited), then the length as a varint */
    uint8_t head[1 + 10];
    size_t nh = 0;
    if (len > 0) {
        head[nh++] = 1 << 3 | 2;
        for (uint64_t v = len; nh < sizeof head; v >>= 7) {
            head[nh++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
            if (v < 0x80)
                break;
        }
    }
    size_t nt = protobuf_c_message_get_packed_size(msg);
    if (nh + len + nt > r->g->max_send || len > r->g->max_send) {
        release(ud);
        finishf(r, GRPC_STATUS_RESOURCE_EXHAUSTED,
                "the reply (%zu bytes) is larger than the message limit (%zu bytes)", nh + len + nt,
                r->g->max_send);
        return;
    }
    grpc_slice parts[3];
    size_t np = 0;
    if (len > 0) {
        parts[np++] =
            grpc_slice_from_copied_buffer((const char *)head, nh); /* inlined: no malloc */
        parts[np++] = grpc_slice_new_with_user_data((void *)data, len, release, ud);
    } else {
        release(ud);
    }
    if (nt > 0) {
        parts[np] = grpc_slice_malloc(nt);
        protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(parts[np]));
        np++;
    }
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(parts, np);
    for (size_t i = 0; i < np; i++)
        grpc_slice_unref(parts[i]);
    finish(r, GRPC_STATUS_OK, NULL, bb);
}

void rpc_fail(struct rpc *r, int st_code, const char *detail)
{
    if (st_status_redacted(st_code)) /* as HTTP's 5xx: the details stay in the log */
        log_warn("grpc %s: %s", path_of(r), detail ? detail : st_strerror(st_code));
    finish(r, status_of(st_code), st_status_public(st_code, detail), NULL);
}

void rpc_abort(struct rpc *r)
{
    if (deadline_passed(r))
        finish(r, GRPC_STATUS_DEADLINE_EXCEEDED, "deadline exceeded", NULL);
    else
        finish(r, GRPC_STATUS_CANCELLED, "the call was cancelled", NULL);
}

void rpc_stream_start(struct rpc *r, void *state, rpc_produce_fn produce,
                      void (*free_state)(void *state))
{
    assert(r->m->kind == RPC_SERVER_STREAM && r->st == NULL);
    r->st = state;
    r->produce = produce;
    r->st_free = free_state;
    move(r, RPC_PRODUCING);
    produce(r, state);
}

void rpc_stream_header(struct rpc *r, const char *key, const char *value)
{
    assert(!r->sent_initial && r->n_init_md < INIT_MD_MAX);
    if (r->sent_initial || r->n_init_md >= INIT_MD_MAX)
        return;
    r->init_md[r->n_init_md].key = grpc_slice_from_copied_string(key);
    r->init_md[r->n_init_md].value = grpc_slice_from_copied_string(value);
    r->n_init_md++;
}

void rpc_stream_send(struct rpc *r, uint8_t *msg, size_t len, bool last)
{
    grpc_byte_buffer *bb = NULL;
    if (msg != NULL) {
        grpc_slice s = grpc_slice_new(msg, len, free);
        bb = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
    }
    if (last) {
        finish(r, GRPC_STATUS_OK, NULL, bb);
        return;
    }
    assert(bb != NULL && r->send_bb == NULL); /* one message; the last one has left */
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    size_t n = add_initial_md(r, &ops[0]);
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n].data.send_message.send_message = bb;
    n++;
    r->send_bb = bb;
    move(r, RPC_SENDING);
    start_send(r, ops, n);
}

/* ---- threads, start and stop ----------------------------------------------------- */

static void *cq_main(void *arg)
{
    struct cqt *c = arg;
    for (;;) {
        grpc_event ev =
            grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type == GRPC_OP_COMPLETE) {
            struct tag *t = ev.tag;
            (void)atomic_load_explicit(&t->handed, memory_order_acquire);
            t->fn(t, ev.success != 0);
        }
    }
    return NULL;
}

/* gRPC's own log lines, as ours. */
static void gpr_log_to_st(gpr_log_func_args *a)
{
    enum st_log_level lv = a->severity == GPR_LOG_SEVERITY_ERROR  ? ST_LOG_ERROR
                           : a->severity == GPR_LOG_SEVERITY_INFO ? ST_LOG_INFO
                                                                  : ST_LOG_DEBUG;
    st_log(lv, "grpc: %s (%s:%d)", a->message, a->file, a->line);
}

static void on_shutdown(struct tag *t, bool ok)
{
    (void)t;
    (void)ok;
}

/* Take every event until the queue reports its shutdown (already requested). */
static void drain_cq(grpc_completion_queue *cq)
{
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* After the server's shutdown: stop the threads, free everything, release gRPC. */
static void teardown(struct grpcs *g)
{
    for (int i = 0; i < g->ncq; i++)
        grpc_completion_queue_shutdown(g->cqs[i].cq);
    for (int i = 0; i < g->ncq; i++) {
        if (g->cqs[i].running)
            pthread_join(g->cqs[i].th, NULL);
        else
            drain_cq(g->cqs[i].cq);
        grpc_completion_queue_destroy(g->cqs[i].cq);
    }
    grpc_completion_queue_shutdown(g->shutdown_cq);
    drain_cq(g->shutdown_cq);
    grpc_completion_queue_destroy(g->shutdown_cq);
    grpc_server_destroy(g->srv);
    for (size_t i = 0; i < g->ntargets; i++)
        free(g->targets[i].path);
    free(g->targets);
    free(g->cqs);
    free(g);
    grpc_shutdown_blocking();
}

/* Shut the server down: wait for calls (grace_ms, < 0 forever), then cancel what is left. */
static void shut_server(struct grpcs *g, int grace_ms)
{
    grpcs_quiesce(g);
    gpr_timespec dl = grace_ms < 0 ? gpr_inf_future(GPR_CLOCK_MONOTONIC)
                                   : gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                                  gpr_time_from_millis(grace_ms, GPR_TIMESPAN));
    grpc_event ev = grpc_completion_queue_next(g->shutdown_cq, dl, NULL);
    bool done = ev.type == GRPC_OP_COMPLETE;
    if (!done) {
        log_warn("grpc: calls still running after %d ms; cancelling them", grace_ms);
        grpc_server_cancel_all_calls(g->srv);
    }
    /* Handlers still running on workers end their (cancelled) calls; wait for every one. */
    for (int waited = 0; atomic_load(&g->live) > 0; waited += 5) {
        if (waited > 0 && waited % 5000 == 0)
            log_warn("grpc: waiting for %d calls to end", atomic_load(&g->live));
        sleep_ms(5);
    }
    if (!done)
        grpc_completion_queue_next(g->shutdown_cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
}

/*
 * gRPC's certificate-config fetcher (called when the server starts and as
 * connections arrive): a new config when tls.c's generation moved (SIGHUP).
 */
static grpc_ssl_certificate_config_reload_status fetch_cert(void *ud,
                                                            grpc_ssl_server_certificate_config **c)
{
    struct grpcs *g = ud;
    char *cert, *key;
    uint64_t gen = tls_pem(g->app->tls, &cert, &key);
    grpc_ssl_certificate_config_reload_status st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
    if (atomic_exchange(&g->tls_gen, gen) != gen) {
        grpc_ssl_pem_key_cert_pair pair = {key, cert};
        /* gRPC 1.51 asserts that a fetched config has client roots, although
           with DONT_REQUEST_CLIENT_CERTIFICATE it never uses them: give it
           the server's own chain. */
        *c = grpc_ssl_server_certificate_config_create(cert, &pair, 1);
        st = *c != NULL ? GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW
                        : GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
    }
    free(cert);
    free(key);
    return st;
}

int grpcs_start(struct app *app, struct grpcs **out, int *port, struct st_err *err)
{
    *out = NULL;
    const struct config *cfg = app->cfg;
    gpr_set_log_function(gpr_log_to_st);
    grpc_init();

    struct grpcs *g = xcalloc(1, sizeof *g);
    g->app = app;
    atomic_init(&g->quiescing, false);
    atomic_init(&g->live, 0);
    atomic_init(&g->calls, 0);
    uint8_t rnd[4];
    st_random_bytes(rnd, sizeof rnd);
    snprintf(g->rid_prefix, sizeof g->rid_prefix, "%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
             rnd[3]);
    g->shutdown_tag.fn = on_shutdown;
    int limit = cfg->max_body == 0 || cfg->max_body > INT_MAX ? INT_MAX : (int)cfg->max_body;
    g->max_send = (size_t)limit;
    grpc_arg args[5];
    memset(args, 0, sizeof args);
    args[0].type = GRPC_ARG_INTEGER;
    args[0].key = (char *)GRPC_ARG_ALLOW_REUSEPORT;
    args[0].value.integer = 0; /* a second striked on the port must fail, not share it */
    args[1].type = GRPC_ARG_INTEGER;
    args[1].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[1].value.integer = limit; /* the HTTP body limit */
    args[2].type = GRPC_ARG_INTEGER;
    args[2].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
    args[2].value.integer = limit;
    args[3].type = GRPC_ARG_INTEGER; /* calls at once on one connection (README "Limits") */
    args[3].key = (char *)GRPC_ARG_MAX_CONCURRENT_STREAMS;
    args[3].value.integer = GRPC_MAX_STREAMS;
    args[4].type = GRPC_ARG_INTEGER; /* bytes of a call's metadata, as HTTP's headers */
    args[4].key = (char *)GRPC_ARG_MAX_METADATA_SIZE;
    args[4].value.integer = GRPC_MAX_METADATA;
    grpc_channel_args ca = {sizeof args / sizeof args[0], args};
    g->srv = grpc_server_create(&ca, NULL);

    /* Every method of the service, by the descriptor protoc-c generated. */
    bool start_err = false;
    const ProtobufCServiceDescriptor *sd = &strike__v1__strike__descriptor;
    g->ntargets = sd->n_methods;
    g->targets = xcalloc(g->ntargets ? g->ntargets : 1, sizeof *g->targets);
    for (size_t i = 0; i < g->ntargets; i++) {
        struct target *tg = &g->targets[i];
        tg->path = xasprintf("/%s/%s", sd->name, sd->methods[i].name);
        tg->m = grpcs__method(sd->methods[i].name);
        if (tg->m == NULL)
            tg->m = &not_served;
        if (tg->m->scope == AUTH_UNDECLARED || tg->m->scope == AUTH_OPEN) {
            st_errf(err, ST_EINTERNAL, "grpc: %s declares no scope", tg->path);
            start_err = true;
        }
        if (tg->m->table_field != NULL) {
            const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field_by_name(
                sd->methods[i].input, tg->m->table_field);
            if (fd == NULL || fd->type != PROTOBUF_C_TYPE_STRING ||
                fd->label == PROTOBUF_C_LABEL_REPEATED) {
                st_errf(err, ST_EINTERNAL, "grpc: %s: no string field \"%s\" names the table",
                        tg->path, tg->m->table_field);
                start_err = true;
            } else {
                tg->tfield = fd->id;
                tg->input = sd->methods[i].input->name;
            }
        }
        tg->reg = grpc_server_register_method(g->srv, tg->path, NULL,
                                              GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    }
    g->health_reg = grpc_server_register_method(g->srv, HEALTH_PATH, NULL,
                                                GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);

    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    g->ncq = cfg->grpc_threads > 0 ? cfg->grpc_threads : (int)(ncpu > 0 ? ncpu : 2);
    g->cqs = xcalloc((size_t)g->ncq, sizeof *g->cqs);
    for (int i = 0; i < g->ncq; i++) {
        g->cqs[i].g = g;
        g->cqs[i].cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(g->srv, g->cqs[i].cq, NULL);
    }
    g->shutdown_cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(g->srv, g->shutdown_cq, NULL);

    const struct listen_addr *la = &cfg->grpc;
    char addr[300];
    if (strchr(la->host, ':') != NULL)
        snprintf(addr, sizeof addr, "[%s]:%d", la->host, la->port);
    else
        snprintf(addr, sizeof addr, "%s:%d", la->host, la->port);
    grpc_server_credentials *creds;
    if (tls_enabled(app->tls)) /* gRPC's minimum is TLS 1.2 */
        creds = grpc_ssl_server_credentials_create_with_options(
            grpc_ssl_server_credentials_create_options_using_config_fetcher(
                GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, fetch_cert, g));
    else
        creds = grpc_insecure_server_credentials_create();
    int bound = grpc_server_add_http2_port(g->srv, addr, creds);
    grpc_server_credentials_release(creds);
    grpc_server_start(g->srv);
    if (start_err) {
        shut_server(g, -1);
        teardown(g);
        return err->code;
    }
    if (bound == 0) {
        shut_server(g, -1);
        teardown(g);
        return st_errf(err, ST_EIO, "grpc: cannot listen on %s (in use, or not permitted)", addr);
    }

    /* Threads first, then requests: a request must never wait on a queue nobody polls. */
    for (int i = 0; i < g->ncq; i++) {
        if (pthread_create(&g->cqs[i].th, NULL, cq_main, &g->cqs[i]) != 0) {
            shut_server(g, -1);
            teardown(g);
            return st_errf(err, ST_EIO, "grpc: cannot start completion-queue thread %d", i);
        }
        g->cqs[i].running = true;
        char name[16]; /* the kernel keeps 15 characters */
        snprintf(name, sizeof name, "grpc-cq-%u", (unsigned)i % 10000u);
        pthread_setname_np(g->cqs[i].th, name);
    }
    for (int i = 0; i < g->ncq; i++) {
        for (size_t m = 0; m < g->ntargets; m++)
            for (int k = 0; k < PREPOST; k++)
                post(&g->cqs[i], (int)m);
        for (int k = 0; k < PREPOST; k++)
            post(&g->cqs[i], TARGET_HEALTH);
        post(&g->cqs[i], TARGET_UNKNOWN);
    }
    *port = bound;
    *out = g;
    return ST_OK;
}

void grpcs_list_methods(void *outp)
{
    FILE *out = outp;
    const ProtobufCServiceDescriptor *sd = &strike__v1__strike__descriptor;
    for (size_t i = 0; i < sd->n_methods; i++) {
        const struct rpc_method *m = grpcs__method(sd->methods[i].name);
        if (m == NULL)
            m = &not_served;
        fprintf(out, "grpc /%s/%s %s %s\n", sd->name, sd->methods[i].name,
                auth_scope_name(m->scope), m->table_field ? m->table_field : "none");
    }
    fprintf(out, "grpc %s open none\n", HEALTH_PATH);
}

void grpcs_quiesce(struct grpcs *g)
{
    if (g == NULL || atomic_exchange(&g->quiescing, true))
        return;
    grpc_server_shutdown_and_notify(g->srv, g->shutdown_cq, &g->shutdown_tag);
}

void grpcs_stop(struct grpcs *g, int grace_ms)
{
    if (g == NULL)
        return;
    shut_server(g, grace_ms);
    teardown(g);
}
