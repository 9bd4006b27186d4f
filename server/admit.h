/*
 * admit.h - admission control by bytes in flight, shared by the HTTP and
 * gRPC front ends (README "Memory and admission control").
 *
 * A request body (or gRPC message) of n bytes expands, on its worker, into
 * its parsed form (JSON tree or protobuf structs), the wire changes, the
 * typed values, the key state and the commit's arrays. How much depends on
 * the route and on the body's shape, and the shape is the client's to
 * choose: a route's charge is therefore its worst shape's peak RSS growth
 * per body byte, measured (tests/bench/body_rss.py, every shape; docs/
 * OPERATIONS.md has the numbers) and rounded up. Each HTTP route and each
 * gRPC method declares its factor (http_table.c, grpc_rpc.c); a request is
 * charged n * factor bytes against one process-wide budget (--max-inflight)
 * from before its body is read until its work is finished: HTTP gives the
 * charge back when the worker's job ends, before the reply is sent
 * (run_job), gRPC when the call finishes, before its status is sent
 * (finish); a request that never got that far (an error, a disconnect)
 * gives it back when it is freed. A request that would pass the budget is
 * refused (HTTP 503 with Retry-After, gRPC UNAVAILABLE), except when
 * nothing else is in flight: a request larger than the budget alone is
 * admitted, so that a max-body request can always run.
 *
 * Lock-free (one atomic counter); any thread.
 */
#ifndef STRIKE_ADMIT_H
#define STRIKE_ADMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * The factors: peak RSS growth per body byte of the worst shape each route
 * can be sent (tests/bench/body_rss.py, Release build, bodies of 16 MiB),
 * rounded up by a fifth or so. Every JSON body is parsed whole first (jdoc:
 * 16 bytes a value, and as much again on the parser's stack while its array
 * is open), so no JSON route is below what {"x":[0,0,...]} costs; every gRPC
 * message is unpacked whole (protobuf-c: a struct a submessage, bounded by
 * GCONV_UNPACK_MAX_X, 24x) and held twice (the core's buffer, its copy).
 */
/* JSON routes: {"changes":[0,0,...]} 17.0x; a filter of in-lists 4.4x */
#define ADMIT_X_JSON 20u
/* .../changes: the JSON floor 17.0x; tiny upserts 16.9x; deletes on 1,000 columns 16.3x;
   rows of five columns 8.9x */
#define ADMIT_X_CHANGES 20u
/* .../erasures: 100,000 keys named 28.0x */
#define ADMIT_X_ERASE 34u
/* /v1/cdc/debezium: 100,000 tiny NDJSON events 21.0x (deletes on 1,000 columns 20.0x); the
   JSON floor 17.0x */
#define ADMIT_X_CDC 26u
/* gRPC: unpacking at most 24x and two copies; unknown fields 18.1x, empty Change messages
   26.1x (both refused while unpacked) */
#define ADMIT_X_GRPC 30u
/* ApplyChanges: tiny upserts 34.7x, deletes on 1,000 columns 33.4x */
#define ADMIT_X_GRPC_CHANGES 42u
/* ApplyDebezium: the CDC endpoint's and the message's copies */
#define ADMIT_X_GRPC_CDC 30u
/* Erase: 100,000 keys named 41.1x */
#define ADMIT_X_GRPC_ERASE 48u
/* No route declares more (http_table.c, grpc.c check it). */
#define ADMIT_X_MAX 64u

struct admit {
    uint64_t limit;               /* the budget, in charged bytes */
    atomic_uint_fast64_t used;    /* charged bytes admitted and not yet released */
    atomic_uint_fast64_t refused; /* requests refused, since start (/metrics) */
};

void admit_init(struct admit *a, uint64_t limit);
/* What a body of `body_bytes` is charged on a route of factor `x` (1..ADMIT_X_MAX; saturating). */
uint64_t admit_charge(uint64_t body_bytes, uint32_t x);
/*
 * Take `add` more charged bytes for a request that holds `held` already
 * (0 for a new one). False, with nothing taken, when the budget would be
 * passed while other requests hold some of it.
 */
bool admit_take(struct admit *a, uint64_t held, uint64_t add);
/* Give back what a request held (0: nothing). */
void admit_release(struct admit *a, uint64_t n);
/* Charged bytes in flight now. */
uint64_t admit_used(struct admit *a);

#endif
