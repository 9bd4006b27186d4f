/*
 * pgembed.h - the embedded default catalog: a PostgreSQL cluster that
 * striked creates in DATA/catalog on first start, runs on a unix socket only
 * (listen_addresses=''), and stops when it exits.
 *
 * Running as root, initdb and postgres are started as the `postgres` user
 * through runuser(1). If that user cannot traverse the path to DATA, the
 * cluster lives in /var/lib/strike/clusters/<hash> and DATA/catalog is a
 * symlink to it. A postmaster.pid left by a crash never blocks a start: a
 * leftover server of this cluster is stopped, a stale pid file removed.
 */
#ifndef STRIKE_PGEMBED_H
#define STRIKE_PGEMBED_H

#include "common/err.h"

struct pgembed;

/*
 * Create (first time) and start the cluster for `data_dir`. On success
 * `*conninfo` is a libpq connection string (caller frees) and the cluster
 * runs until pgembed_stop(). Takes an exclusive lock on DATA so that two
 * striked processes cannot share one embedded cluster.
 */
int pgembed_start(const char *data_dir, struct pgembed **out, char **conninfo, struct st_err *err);

/* Stop the cluster (fast shutdown, waiting for it) and free; NULL is a no-op. */
void pgembed_stop(struct pgembed *pg);

/* Locate a PostgreSQL program (initdb, pg_ctl, postgres); caller frees; NULL if absent. */
char *pgembed_find_program(const char *name);

#endif
