/*
 * workers.h - a fixed pool of threads for blocking work (catalog queries,
 * commits, file reads), shared by the HTTP and gRPC front ends.
 *
 * Event threads (libmicrohttpd's, gRPC's completion queues) never block on
 * the catalog: they submit a job here and are told when it is done. The
 * queue is bounded: a full queue is back-pressure (the caller answers 503).
 */
#ifndef STRIKE_WORKERS_H
#define STRIKE_WORKERS_H

#include <stdbool.h>
#include <stddef.h>

struct workers;

typedef void (*worker_fn)(void *arg);

/* Start `nthreads` threads with room for `queue_max` waiting jobs. */
struct workers *workers_start(int nthreads, size_t queue_max);
/* Queue fn(arg); false when the queue is full or the pool is stopping. */
bool workers_submit(struct workers *w, worker_fn fn, void *arg);
/* Jobs queued or running right now. */
size_t workers_pending(struct workers *w);
/* Run every queued job, then join the threads and free. NULL ok. */
void workers_stop(struct workers *w);

#endif
