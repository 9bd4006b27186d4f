/*
 * app.h - what every striked front end (HTTP, gRPC) shares: the settings,
 * the catalog pool, and the shutdown flag.
 */
#ifndef STRIKE_APP_H
#define STRIKE_APP_H

#include <stdatomic.h>
#include <stdbool.h>

#include "config.h"

struct cat_pool;

struct app {
    const struct config *cfg;
    struct cat_pool *catalog;
    atomic_bool stopping; /* set on SIGTERM/SIGINT: new requests get 503 */
};

#endif
