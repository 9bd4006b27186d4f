/*
 * app.h - what every striked front end (HTTP, gRPC) shares: the settings,
 * the engine, the worker pool for blocking calls, and the shutdown flag.
 */
#ifndef STRIKE_APP_H
#define STRIKE_APP_H

#include <stdatomic.h>
#include <stdbool.h>

#include "admit.h"
#include "config.h"

struct auth;
struct tls;
struct engine;
struct workers;

struct app {
    const struct config *cfg;
    struct engine *engine;
    struct workers *workers;
    atomic_bool stopping; /* set on SIGTERM/SIGINT: new requests get 503 */
    struct admit admit;   /* request bytes in flight, HTTP and gRPC (--max-inflight) */
    struct auth *auth;    /* bearer tokens (--tokens; auth.h), re-read on SIGHUP */
    struct tls *tls;      /* certificate and key (--tls-cert/--tls-key; tls.h), re-read on SIGHUP */
};

#endif
