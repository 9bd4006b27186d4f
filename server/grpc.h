/*
 * grpc.h - the gRPC front end on the gRPC C core (docs/API.md "gRPC"): service
 * strike.v1.Strike, plus grpc.health.v1.Health/Check.
 *
 * Threads: cfg->grpc_threads completion-queue threads (default: one per
 * core), each with its own queue; they never block. Handlers that touch the
 * catalog or the blob store run on app->workers and start their reply batch
 * from there. See grpc.c for the call state machine.
 *
 * Shutdown, together with HTTP (main.c):
 *   grpcs_quiesce()  stop accepting calls; calls in flight continue;
 *   grpcs_stop()     wait for them up to a grace period, then cancel the
 *                    rest, wait for their handlers, and free everything.
 * grpcs_start() must run after the stop signals are blocked (gRPC starts
 * threads of its own).
 */
#ifndef STRIKE_GRPC_H
#define STRIKE_GRPC_H

#include "app.h"
#include "common/err.h"

struct grpcs;

/* Bind cfg->grpc and start serving; `*port` gets the bound port (useful with port 0). */
int grpcs_start(struct app *app, struct grpcs **out, int *port, struct st_err *err);
/* Stop accepting new calls. NULL ok; idempotent. */
void grpcs_quiesce(struct grpcs *g);
/* Drain (up to grace_ms), cancel what is left, stop the threads, free. NULL ok. */
void grpcs_stop(struct grpcs *g, int grace_ms);

/*
 * Print the RPC table, one line per method of strike.v1.Strike (and the
 * health check): "grpc PATH SCOPE TABLE_FIELD" (`striked --list-routes`).
 */
void grpcs_list_methods(void *out /* FILE* */);

#endif
