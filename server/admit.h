/*
 * admit.h - admission control by bytes in flight, shared by the HTTP and
 * gRPC front ends (README "Memory and admission control").
 *
 * A request body (or gRPC message) of n bytes expands, on its worker, into
 * the parsed JSON, the wire rows, the typed values, the key state and the
 * commit's arrays: striked's resident memory grows by about 7.7 times the
 * body (tests/bench/body_rss.py). So a request is charged n * ADMIT_EXPANSION
 * bytes against one process-wide budget (--max-inflight) from before its body
 * is read until its work is finished: HTTP gives the charge back when the
 * worker's job ends, before the reply is sent (run_job), gRPC when the call
 * finishes, before its status is sent (finish); a request that never got that
 * far (an error, a disconnect) gives it back when it is freed. A request
 * that would pass the budget is refused (HTTP 503 with Retry-After, gRPC
 * UNAVAILABLE), except when nothing else is in flight: a request larger than
 * the budget alone is admitted, so that a max-body request can always run.
 *
 * Lock-free (one atomic counter); any thread.
 */
#ifndef STRIKE_ADMIT_H
#define STRIKE_ADMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Peak RSS growth per body byte, measured 7.7 for a maximal /changes body; rounded up. */
#define ADMIT_EXPANSION 8u

struct admit {
    uint64_t limit;               /* the budget, in charged bytes */
    atomic_uint_fast64_t used;    /* charged bytes admitted and not yet released */
    atomic_uint_fast64_t refused; /* requests refused, since start (/metrics) */
};

void admit_init(struct admit *a, uint64_t limit);
/* What a body of `body_bytes` is charged (saturating). */
uint64_t admit_charge(uint64_t body_bytes);
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
