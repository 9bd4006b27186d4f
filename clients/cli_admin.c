/*
 * cli_admin.c - `strike fsck` and `strike gc` (docs/API.md "CLI"): offline
 * maintenance against a catalog and a blob store, through the engine.
 *
 *   strike fsck --catalog URL --data DIR
 *       every blob the catalog references must exist and decode; orphans
 *       are listed. Exit 0 when consistent, 1 when something is missing or
 *       corrupt, 2 on usage errors.
 *   strike gc --catalog URL --data DIR [--grace 1h] [--dry-run]
 *       delete blobs no catalog row references, older than the grace period.
 */
#include "cli.h"

#include "blob/blob.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_fsck(int argc, char **argv);
int cli_gc(int argc, char **argv);

struct admin_args {
    const char *catalog;
    const char *data;
    int64_t grace_s;
    bool dry_run;
};

static int parse(int argc, char **argv, bool is_gc, struct admin_args *a)
{
    a->catalog = getenv("STRIKE_CATALOG");
    a->data = getenv("STRIKE_DATA");
    a->grace_s = 3600;
    a->dry_run = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            printf(is_gc ? "usage: strike gc --catalog URL --data DIR [--grace 1h] [--dry-run]\n"
                           "  delete blobs no catalog row references, older than the grace "
                           "period (at least 5m)\n"
                         : "usage: strike fsck --catalog URL --data DIR\n"
                           "  check that every blob the catalog references exists and "
                           "decodes; list orphans\n"
                           "  exit 0: consistent; 1: missing or corrupt blobs\n");
            return 1;
        }
        if (strcmp(arg, "--catalog") == 0 && val) {
            a->catalog = val;
            i++;
        } else if (strcmp(arg, "--data") == 0 && val) {
            a->data = val;
            i++;
        } else if (is_gc && strcmp(arg, "--grace") == 0 && val) {
            if (!st_parse_duration(val, &a->grace_s)) {
                fprintf(stderr, "strike gc: --grace: bad duration \"%s\" (e.g. 30m, 1h)\n", val);
                return -1;
            }
            if (a->grace_s < ENGINE_GC_GRACE_MIN_S) {
                fprintf(stderr,
                        "strike gc: --grace: at least %dm: a commit in flight may hold blobs "
                        "that long (got %s)\n",
                        ENGINE_GC_GRACE_MIN_S / 60, val);
                return -1;
            }
            i++;
        } else if (is_gc && strcmp(arg, "--dry-run") == 0) {
            a->dry_run = true;
        } else {
            fprintf(stderr, "strike %s: unknown or incomplete argument \"%s\" (see --help)\n",
                    is_gc ? "gc" : "fsck", arg);
            return -1;
        }
    }
    if (a->catalog == NULL || a->data == NULL) {
        fprintf(stderr, "strike %s: needs --catalog URL and --data DIR\n", is_gc ? "gc" : "fsck");
        return -1;
    }
    return 0;
}

static struct engine *open_engine(const struct admin_args *a, const char *cmd)
{
    st_log_set_level(ST_LOG_WARN);
    /* --data s3://...: the endpoint, region and addressing as striked takes them
       from its environment (STRIKE_S3_*); credentials from AWS_* */
    const char *ep = getenv("STRIKE_S3_ENDPOINT");
    struct blob_s3_opts s3 = {.endpoint = ep,
                              .region = getenv("STRIKE_S3_REGION"),
                              .path_style = getenv("STRIKE_S3_PATH_STYLE") != NULL || ep != NULL};
    struct engine_opts o = {.conninfo = a->catalog, .data_dir = a->data, .s3 = &s3, .pool_size = 2};
    struct engine *e = NULL;
    struct st_err err = {0};
    if (engine_open(&o, &e, &err) != ST_OK) {
        fprintf(stderr, "strike %s: %s\n", cmd, err.msg);
        return NULL;
    }
    return e;
}

static void print_finding(void *ctx, const char *kind, const char *path, const char *detail)
{
    (void)ctx;
    printf("%s %s: %s\n", kind, path, detail);
}

int cli_fsck(int argc, char **argv)
{
    struct admin_args a;
    int p = parse(argc, argv, false, &a);
    if (p != 0)
        return p > 0 ? 0 : 2;
    struct engine *e = open_engine(&a, "fsck");
    if (e == NULL)
        return 1;
    struct engine_gc_report rep;
    struct st_err err = {0};
    int rc = engine_fsck(e, print_finding, NULL, &rep, &err);
    engine_close(e);
    if (rc != ST_OK) {
        fprintf(stderr, "strike fsck: %s\n", err.msg);
        return 1;
    }
    /* the summary is a note (stderr); stdout holds only the findings, one per line */
    fprintf(stderr, "fsck: %lld referenced blobs, %lld missing, %lld corrupt, %lld orphans\n",
            (long long)rep.referenced, (long long)rep.missing, (long long)rep.corrupt,
            (long long)rep.orphans);
    return rep.missing + rep.corrupt > 0 ? 1 : 0;
}

int cli_gc(int argc, char **argv)
{
    struct admin_args a;
    int p = parse(argc, argv, true, &a);
    if (p != 0)
        return p > 0 ? 0 : 2;
    struct engine *e = open_engine(&a, "gc");
    if (e == NULL)
        return 1;
    struct engine_gc_report rep;
    struct st_err err = {0};
    int rc = engine_gc(e, a.grace_s, a.dry_run, &rep, &err);
    engine_close(e);
    if (rc != ST_OK) {
        fprintf(stderr, "strike gc: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "gc: %lld orphans, %lld %s (grace %llds)", (long long)rep.orphans,
            (long long)(a.dry_run ? 0 : rep.deleted), a.dry_run ? "deleted (dry run)" : "deleted",
            (long long)a.grace_s);
    if (rep.uploads > 0) /* S3: multipart uploads never completed */
        fprintf(stderr, "; %lld unfinished uploads, %lld aborted", (long long)rep.uploads,
                (long long)rep.uploads_aborted);
    fputc('\n', stderr);
    return 0;
}
