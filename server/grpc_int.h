/*
 * grpc_int.h - between the gRPC transport (grpc.c: completion queues, calls,
 * batches) and the RPC handlers (grpc_rpc.c: requests -> engine calls ->
 * replies). No grpc_* type crosses this line.
 *
 * A handler runs on a worker thread (app->workers) and ends the call with
 * exactly one of rpc_reply(), rpc_fail() or rpc_stream_start(). After that
 * call it must not touch `r` again: the reply may complete, and the call be
 * freed, on a completion-queue thread before the function returns.
 */
#ifndef STRIKE_GRPC_INT_H
#define STRIKE_GRPC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "app.h"
#include "auth.h"

struct rpc;

enum rpc_kind {
    RPC_UNARY,
    RPC_SERVER_STREAM,
    RPC_UNIMPLEMENTED, /* answered UNIMPLEMENTED with `unimplemented` as the message */
};

struct rpc_method {
    const char *name; /* as in the service descriptor: "CreateTable" */
    enum rpc_kind kind;
    void (*run)(struct rpc *r); /* on a worker */
    /*
     * Optional, on the completion-queue thread, before any hand-off: answer
     * from caches without blocking (true: answered), or leave it to run().
     */
    bool (*fast)(struct rpc *r);
    const char *unimplemented;
    /* Authorization (auth.h): every method declares its scope (a method with
       none makes grpcs_start fail), and the request field that names its
       table (NULL: none; a string field of the request message). grpc.c
       checks both before the call reaches a handler or a cache. */
    enum auth_scope scope;
    const char *table_field;
    /* What a byte of its message is charged against the in-flight budget
       (admit.h ADMIT_X_*, 1 to ADMIT_X_MAX; grpcs_start refuses another). */
    uint32_t charge;
};

/* The handler table (grpc_rpc.c); looked up by the service descriptor's method names. */
const struct rpc_method *grpcs__method(const char *name);

/* ---- what handlers may ask ----------------------------------------------------- */

struct app *rpc_app(struct rpc *r);
/* The request message as received (decompressed). Valid for the call's life. */
const uint8_t *rpc_payload(struct rpc *r, size_t *len);
/* "/strike.v1.Strike/ApplyChanges" */
const char *rpc_path(struct rpc *r);
/* The call's token (auth.h), checked before the handler runs; for filtering lists. */
const struct auth_ctx *rpc_auth(struct rpc *r);
/* An erasure's receipt id, for the call's audit line (never a key value). */
void rpc_audit_receipt(struct rpc *r, const char *id);
/* The `idempotency-key` request metadata, or NULL. */
const char *rpc_idem_key(struct rpc *r);
/* The client cancelled, went away, or the deadline passed. */
bool rpc_cancelled(struct rpc *r);
/* Largest message the server may send. */
size_t rpc_max_send(struct rpc *r);

/* ---- ending a call -------------------------------------------------------------- */

/* OK with `msg` packed as the reply. */
void rpc_reply(struct rpc *r, const ProtobufCMessage *msg);
/*
 * OK with `msg` as the reply, whose field 1 is a bytes field left empty in
 * `msg` and sent as data[0..len) without a copy (the reply is the bytes of
 * field 1, then `msg` packed: the same bytes as rpc_reply() with the field
 * set). gRPC keeps `data` until the message has left; release(ud) then, on
 * any thread, also when the call ends without sending it.
 */
void rpc_reply_lead(struct rpc *r, const ProtobufCMessage *msg, const uint8_t *data, size_t len,
                    void (*release)(void *ud), void *ud);
/* An ST_E* code (mapped as docs/API.md says) with `detail` as the status message. */
void rpc_fail(struct rpc *r, int st_code, const char *detail);
/* CANCELLED or DEADLINE_EXCEEDED, whichever applies (rpc_cancelled() was true). */
void rpc_abort(struct rpc *r);

/* ---- server streaming ------------------------------------------------------------ */

/*
 * Produce one message and hand it over with rpc_stream_send() (or end the
 * call with rpc_fail()/rpc_abort()). Called on a worker, never twice at
 * once, and the next time only after the previous message left: that is
 * the flow control.
 */
typedef void (*rpc_produce_fn)(struct rpc *r, void *state);

/*
 * Become a stream: `state` (freed with free_state when the call ends, on any
 * thread) and its producer, which is called right away on this thread.
 */
void rpc_stream_start(struct rpc *r, void *state, rpc_produce_fn produce,
                      void (*free_state)(void *state));
/* Initial metadata sent with the first message (before it; key and value are copied). */
void rpc_stream_header(struct rpc *r, const char *key, const char *value);
/*
 * Send msg[0..len) (ownership moves: freed with free()). `last` also ends
 * the call with OK. msg == NULL with last: end with OK and no message.
 */
void rpc_stream_send(struct rpc *r, uint8_t *msg, size_t len, bool last);

#endif
