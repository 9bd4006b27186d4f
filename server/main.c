/*
 * main.c - striked: start-up, signal handling and orderly shutdown.
 *
 * Order: settings; signals blocked before any thread exists (gRPC starts
 * threads of its own); the catalog (embedded or --catalog); the front ends.
 * SIGHUP: the tokens file and the TLS pair are read again (auth.h), on this thread (sigwait).
 * SIGTERM/SIGINT: stop accepting, drain requests in flight (bounded), stop
 * the embedded PostgreSQL, exit 0.
 */
#include "app.h"
#include "auth.h"
#include "tls.h"
#include "config.h"
#include "grpc.h"
#include "http.h"
#include "pgembed.h"

#include "blob/blob.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "engine/catalog.h"
#include "engine/engine.h"
#include "workers.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DRAIN_GRACE_MS 8000

static enum st_log_level parse_level(const char *s)
{
    if (strcmp(s, "debug") == 0)
        return ST_LOG_DEBUG;
    if (strcmp(s, "warn") == 0)
        return ST_LOG_WARN;
    if (strcmp(s, "error") == 0)
        return ST_LOG_ERROR;
    return ST_LOG_INFO;
}

int main(int argc, char **argv)
{
    struct config cfg;
    char msg[512];
    switch (config_load(&cfg, argc, argv, msg, sizeof msg, stdout)) {
    case CONFIG_EXIT_OK:
        config_free(&cfg);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "striked: %s\n", msg);
        config_free(&cfg);
        return 2;
    case CONFIG_OK:
        break;
    }
    st_log_set_level(parse_level(cfg.log_level));
    /* glibc gives each thread that allocates its own arena and keeps it at its
       peak, and it raises its mmap threshold each time a large block is freed,
       so that later row-group and page buffers (megabytes) come from the
       arenas and stay resident there once per thread. A few arenas and a fixed
       1 MiB threshold keep memory bounded by what is in use: make bench
       measured the peak RSS of a 10M-row scan at 57 MiB with 4 arenas alone
       (43 MiB for a 1M-row scan) and 44 MiB with these settings. */
    mallopt(M_ARENA_MAX, 4);
    mallopt(M_MMAP_THRESHOLD, 1 << 20);

    if (cfg.list_routes) {
        http_list_routes(stdout);
        grpcs_list_methods(stdout);
        config_free(&cfg);
        return 0;
    }
    struct auth *auth = NULL;
    struct st_err aerr = {0};
    if (auth_open(cfg.tokens_file, &auth, &aerr) != ST_OK) {
        fprintf(stderr, "striked: --tokens: %s\n", aerr.msg);
        config_free(&cfg);
        return 2;
    }
    if (auth_enabled(auth) && auth_count(auth) == 0)
        log_warn("--tokens %s holds no token: every /v1 request and RPC gets 401", cfg.tokens_file);
    struct tls *tls = NULL;
    if (tls_open(cfg.tls_cert, cfg.tls_key, &tls, &aerr) != ST_OK) {
        fprintf(stderr, "striked: %s\n", aerr.msg);
        auth_close(auth);
        config_free(&cfg);
        return 2;
    }
    if (!auth_enabled(auth) && !cfg.insecure && (!cfg.http.loopback || !cfg.grpc.loopback)) {
        fprintf(stderr, "striked: refusing to listen on a non-loopback address without "
                        "authentication (give --tokens FILE, or pass --insecure on a trusted "
                        "network)\n");
        tls_close(tls);
        auth_close(auth);
        config_free(&cfg);
        return 2;
    }

    /* Block the stop signals in every thread; main waits for them with sigwait. */
    sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGTERM);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop_set, NULL);
    signal(SIGPIPE, SIG_IGN);

    int status = 1;
    struct st_err err = {0};
    struct pgembed *pg = NULL;
    char *conninfo = NULL;
    struct app app = {.cfg = &cfg, .auth = auth, .tls = tls};
    admit_init(&app.admit, cfg.max_inflight);
    struct http_server *http = NULL;
    struct grpcs *grpc = NULL;

    bool on_s3 = strncmp(cfg.data_dir, "s3://", 5) == 0;
    if (!on_s3 && st_mkdirs(cfg.data_dir, 0755, &err) != ST_OK)
        goto out;
    if (cfg.catalog == NULL) {
        if (pgembed_start(cfg.data_dir, &pg, &conninfo, &err) != ST_OK)
            goto out;
    } else {
        conninfo = xstrdup(cfg.catalog);
    }
    struct blob_s3_opts s3o = {.endpoint = cfg.s3_endpoint,
                               .region = cfg.s3_region,
                               .path_style = cfg.s3_path_style || cfg.s3_endpoint != NULL};
    struct engine_opts eo = {
        .conninfo = conninfo,
        .data_dir = cfg.data_dir,
        .s3 = &s3o,
        .pool_size = 64,
        .gc_grace_s = cfg.gc_grace_s,
        .gc_interval_s = cfg.gc_interval_s,
        .maint_interval_s = cfg.compact_interval_s,
        .maint_workers = cfg.maintenance_workers,
        .retain_s = cfg.retain_s,
        .dv_inline_max = cfg.dv_inline_max == 0 ? -1 : (int64_t)cfg.dv_inline_max,
        .iceberg_interval_s = cfg.iceberg_interval_s,
        .iceberg_history = cfg.iceberg_history,
    };
    if (engine_open(&eo, &app.engine, &err) != ST_OK)
        goto out_pg;
    log_info("catalog ready (schema version %d)", cat_schema_version());
    int nworkers = cfg.workers > 0 ? cfg.workers : 32;
    app.workers = workers_start(nworkers, 4096);

    /* gRPC first: once /healthz answers, both front ends are listening. */
    int grpc_port = 0;
    if (grpcs_start(&app, &grpc, &grpc_port, &err) != ST_OK)
        goto out_catalog;
    log_info("listening: grpc %s:%d", cfg.grpc.host, grpc_port);
    int http_port = 0;
    if (http_start(&app, &http, &http_port, &err) != ST_OK) {
        grpcs_quiesce(grpc);
        grpcs_stop(grpc, 0);
        goto out_catalog;
    }
    log_info("listening: http %s:%d, data %s", cfg.http.host, http_port, cfg.data_dir);

    for (;;) {
        int sig = 0;
        if (sigwait(&stop_set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            /* sigwait: no signal handler runs; the reload happens here, on main's thread. */
            struct st_err rerr = {0};
            if (tls_enabled(app.tls) && tls_reload(app.tls, &rerr) != ST_OK)
                log_error("SIGHUP: the TLS certificate was not reloaded, the one in force stays: "
                          "%s",
                          rerr.msg);
            else if (tls_enabled(app.tls))
                log_info("SIGHUP: TLS certificate reloaded (new connections use it)");
            memset(&rerr, 0, sizeof rerr);
            if (!auth_enabled(app.auth))
                log_info("SIGHUP: no tokens file to reload");
            else if (auth_reload(app.auth, &rerr) != ST_OK)
                log_error("SIGHUP: the tokens file was not reloaded, the tokens in force stay: %s",
                          rerr.msg);
            else
                log_info("SIGHUP: tokens file reloaded (%zu tokens)%s", auth_count(app.auth),
                         auth_count(app.auth) == 0 ? ": none, so every /v1 request gets 401" : "");
            continue;
        }
        log_info("%s: draining requests in flight", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        break;
    }
    /* From here every new HTTP request is answered 503 with Connection: close (http_server.c)
       and gRPC accepts no new call. The HTTP listener stays open until http_stop:
       libmicrohttpd 0.9.75's MHD_quiesce_daemon races its own epoll loop over the listen
       socket and can abort the process (MHD_PANIC "Failed to remove listen FD from epoll
       set"), so it is not called. */
    atomic_store(&app.stopping, true);
    grpcs_quiesce(grpc);
    /* One drain deadline for both front ends. */
    uint64_t drain_start = st_mono_ns();
    http_stop(http, DRAIN_GRACE_MS);
    int spent_ms = (int)((st_mono_ns() - drain_start) / 1000000);
    grpcs_stop(grpc, spent_ms < DRAIN_GRACE_MS ? DRAIN_GRACE_MS - spent_ms : 0);
    status = 0;
out_catalog:
    workers_stop(app.workers);
    engine_close(app.engine);
out_pg:
    pgembed_stop(pg);
out:
    if (status != 0)
        fprintf(stderr, "striked: %s\n", err.msg[0] ? err.msg : "start-up failed");
    else
        log_info("stopped");
    free(conninfo);
    auth_close(auth);
    tls_close(tls);
    config_free(&cfg);
    return status;
}
