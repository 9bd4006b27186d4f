/*
 * http_files.c - GET /v1/tables/{t}/files/{id} (the Parquet bytes, with
 * Range) and GET /v1/tables/{t}/files/{id}/dv (deletion vectors).
 *
 * DV fetch is the hot read path of remote engines. With an explicit
 * snapshot its answer never changes, so an event thread answers it without
 * I/O and without any lock shared with other threads, from two small
 * per-thread caches:
 *
 *   definitions  table name -> definition, trusted for FRESH_NS after this
 *                thread last saw it in the engine's cache (engine_peek_table);
 *                past that it is checked again, and when the engine's own
 *                cache has expired (it keeps definitions about 1 s), a
 *                definition confirmed within STALE_OK_NS is still used while
 *                one job per REFRESH_EVERY_NS reloads it on a worker, so that
 *                requests never wait on that catalog round trip. A table
 *                dropped through this process is never served again (drop_gen);
 *                one dropped elsewhere, for at most STALE_OK_NS.
 *   DVs          (table id, file, snapshot, format) -> the engine's cached
 *                bytes (engine_peek_dv), for DVs up to DCACHE_MAX_LEN; the
 *                response body points at them (no copy) and holds a reference
 *
 * Anything else (a miss, or the current snapshot, which needs the catalog)
 * goes to a worker (engine_get_dv), which fills the engine's caches.
 *
 * Range (RFC 9110 section 14): one range of bytes, "a-b", "a-" or "-n".
 * Unsatisfiable: 416 with "Content-Range: bytes * /size" (no space). A
 * malformed header, another unit, or several ranges: ignored (200 with the
 * whole file), as the RFC allows.
 */
#include "http_int.h"

#include "blob/blob.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "workers.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- deletion vectors ----------------------------------------------------------- */

/* Does an If-None-Match list name `etag` (weak comparison, as RFC 9110 asks)? */
static bool etag_match(const char *inm, const char *etag)
{
    size_t el = strlen(etag);
    const char *p = inm;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            return false;
        if (*p == '*')
            return true;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        const char *s = p;
        if (*p == '"') {
            const char *q = strchr(p + 1, '"');
            if (q == NULL)
                return false;
            p = q + 1;
        } else {
            while (*p != '\0' && *p != ',')
                p++;
        }
        if ((size_t)(p - s) == el && memcmp(s, etag, el) == 0)
            return true;
    }
}

/* A dv_bytes reference shared by the per-thread cache and the responses using its bytes. */
struct hdv {
    atomic_int refs;
    struct engine_dv_bytes *b; /* the engine's reference, released with the last of ours */
};

static void hdv_unref(void *cls)
{
    struct hdv *h = cls;
    if (atomic_fetch_sub(&h->refs, 1) == 1) {
        engine_dv_bytes_unref(h->b);
        free(h);
    }
}

static void dv_bytes_unref_cb(void *cls)
{
    engine_dv_bytes_unref(cls);
}

/*
 * Answer with the DV `b` (whose bytes stay alive until free_fn(cls), which
 * this takes over), or 304 when the client has them.
 */
static void dv_reply(struct hreq *r, const struct engine_dv_bytes *b, void (*free_fn)(void *),
                     void *cls, int64_t snapshot, bool explicit_snap)
{
    http__reply_reset(&r->reply);
    if (r->if_none_match != NULL && etag_match(r->if_none_match, b->etag)) {
        r->reply.status = 304;
    } else {
        r->reply.status = 200;
        r->reply.ctype = "application/octet-stream";
        http__reply_header_i64(r, "Strike-Cardinality", b->cardinality);
    }
    http__reply_header_str(r, "ETag", b->etag);
    http__reply_header_i64(r, "Strike-Snapshot", snapshot);
    http__reply_header_str(r, "Cache-Control",
                           explicit_snap ? "public, max-age=31536000, immutable" : "no-cache");
    if (r->reply.status == 200) {
        r->reply.ext = b->data;
        r->reply.extlen = b->len;
        r->reply.ext_free = free_fn;
        r->reply.ext_cls = cls;
    } else {
        free_fn(cls);
    }
}

#define TCACHE_SLOTS 8
#define FRESH_NS (100ull * 1000 * 1000)
#define STALE_OK_NS (2ull * 1000 * 1000 * 1000)
#define REFRESH_EVERY_NS (200ull * 1000 * 1000)
#define DCACHE_SLOTS 64 /* a power of two */
#define DCACHE_MAX_LEN (64 * 1024)

struct tcache {
    struct tcache_ent {
        struct engine_table *t; /* a reference */
        uint64_t verified_ns, refresh_ns, gen;
    } e[TCACHE_SLOTS];
    unsigned next;
    struct dcache_ent {
        int64_t table_id, file_id, snapshot;
        enum dv_format fmt;
        struct hdv *h; /* NULL: empty slot */
    } d[DCACHE_SLOTS];
};

static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;

/* At thread exit (MHD stops its threads in MHD_stop_daemon). */
static void tc_free(void *p)
{
    struct tcache *c = p;
    for (int i = 0; i < TCACHE_SLOTS; i++)
        engine_table_unref(c->e[i].t);
    for (int i = 0; i < DCACHE_SLOTS; i++)
        if (c->d[i].h != NULL)
            hdv_unref(c->d[i].h);
    free(c);
}

static void tc_init(void)
{
    if (pthread_key_create(&tc_key, tc_free) != 0)
        abort();
}

static struct tcache *tc_get(void)
{
    pthread_once(&tc_once, tc_init);
    struct tcache *c = pthread_getspecific(tc_key);
    if (c == NULL) {
        c = xcalloc(1, sizeof *c);
        pthread_setspecific(tc_key, c);
    }
    return c;
}

static struct tcache_ent *tc_find(struct tcache *c, const char *name)
{
    for (int i = 0; i < TCACHE_SLOTS; i++)
        if (c->e[i].t != NULL && strcmp(c->e[i].t->name, name) == 0)
            return &c->e[i];
    return NULL;
}

static struct tcache_ent *tc_note(struct tcache *c, struct engine_table *t, uint64_t now,
                                  uint64_t gen)
{
    struct tcache_ent *e = tc_find(c, t->name);
    if (e == NULL) {
        e = &c->e[c->next++ % TCACHE_SLOTS];
        engine_table_unref(e->t);
        memset(e, 0, sizeof *e);
    }
    if (e->t != t) {
        engine_table_ref(t);
        engine_table_unref(e->t);
        e->t = t;
    }
    e->verified_ns = now;
    e->gen = gen;
    return e;
}

struct refresh {
    struct engine *e;
    char name[ST_NAME_MAX + 1];
};

/* Worker: read the definition from the catalog, which refreshes the engine's cache. */
static void refresh_table(void *arg)
{
    struct refresh *f = arg;
    struct engine_table *t = NULL;
    struct st_err err = {0};
    if (engine_get_table_cached(f->e, f->name, &t, &err) == ST_OK)
        engine_table_unref(t);
    free(f);
}

/* The definition to locate cached DVs with (borrowed from the thread's cache), or NULL. */
static const struct engine_table *fast_table(struct http_server *srv, struct tcache *c,
                                             const char *name, uint64_t now)
{
    uint64_t gen = atomic_load(&srv->drop_gen);
    struct tcache_ent *ent = tc_find(c, name);
    if (ent != NULL && ent->gen == gen && now - ent->verified_ns < FRESH_NS)
        return ent->t;
    struct engine_table *t;
    if (engine_peek_table(srv->app->engine, name, &t)) {
        ent = tc_note(c, t, now, gen);
        engine_table_unref(t); /* the thread's cache holds one */
        return ent->t;
    }
    if (ent == NULL || ent->gen != gen || now - ent->verified_ns > STALE_OK_NS)
        return NULL;
    if (now - ent->refresh_ns > REFRESH_EVERY_NS) {
        ent->refresh_ns = now;
        struct refresh *f = xmalloc(sizeof *f);
        f->e = srv->app->engine;
        memcpy(f->name, ent->t->name, sizeof f->name);
        if (!workers_submit(srv->app->workers, refresh_table, f))
            free(f);
    }
    return ent->t;
}

/* ?format= and ?snapshot= of a DV request into r (fmt, has_snapshot, snapshot); false: a 400. */
static bool parse_dv_query(struct hreq *r)
{
    const char *snap = http__query(r, "snapshot");
    struct svc_count v = {0};
    if (!http__query_count(r, "snapshot", &v))
        return false;
    if (snap != NULL && snap[0] == '-') { /* here: the fast path answers without the service */
        http__reply_problem(r, 400, "snapshot: must be >= 0, got %.40s", snap);
        return false;
    }
    r->has_snapshot = v.has;
    r->snapshot = v.v;
    struct st_err err = {0};
    enum dv_format fmt;
    int rc = engine_dv_format(http__query(r, "format"), &fmt, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return false;
    }
    r->fmt = (uint8_t)fmt;
    return true;
}

bool http__fast_dv(struct hreq *r)
{
    if (!parse_dv_query(r))
        return true; /* answered: 400 */
    if (!r->has_snapshot)
        return false; /* the current snapshot needs the catalog */
    struct tcache *c = tc_get();
    const struct engine_table *t = fast_table(r->srv, c, r->table, st_mono_ns());
    if (t == NULL)
        return false;
    /* the cached bytes stay right, but the snapshot may have expired since */
    if (!engine_peek_snapshot_retained(r->srv->app->engine, t, r->snapshot))
        return false;
    uint64_t hash = ((uint64_t)t->id * 0x9E3779B97F4A7C15ull) ^
                    ((uint64_t)r->file_id * 0xBF58476D1CE4E5B9ull) ^
                    ((uint64_t)r->snapshot * 0x94D049BB133111EBull) ^ (uint64_t)r->fmt;
    struct dcache_ent *d = &c->d[(hash >> 17) & (DCACHE_SLOTS - 1)];
    if (d->h == NULL || d->table_id != t->id || d->file_id != r->file_id ||
        d->snapshot != r->snapshot || d->fmt != r->fmt) {
        struct engine_dv_bytes *b;
        if (!engine_peek_dv(r->srv->app->engine, t, r->file_id, r->snapshot, (enum dv_format)r->fmt,
                            &b))
            return false;
        if (b->len > DCACHE_MAX_LEN) { /* too big to keep here: use the engine's reference */
            dv_reply(r, b, dv_bytes_unref_cb, b, r->snapshot, true);
            http__metrics_dv(r->srv->m, true);
            return true;
        }
        if (d->h != NULL)
            hdv_unref(d->h);
        d->h = xmalloc(sizeof *d->h);
        atomic_init(&d->h->refs, 1);
        d->h->b = b;
        d->table_id = t->id;
        d->file_id = r->file_id;
        d->snapshot = r->snapshot;
        d->fmt = (enum dv_format)r->fmt;
    }
    atomic_fetch_add(&d->h->refs, 1); /* the response's */
    dv_reply(r, d->h->b, hdv_unref, d->h, r->snapshot, true);
    http__metrics_dv(r->srv->m, true);
    return true;
}

void http__job_dv(struct hreq *r)
{
    struct svc_dv_req q = {
        .table = r->table,
        .file_id = r->file_id,
        .snapshot = {r->has_snapshot, r->snapshot},
        .format = (enum dv_format)r->fmt,
    };
    struct svc_dv_res res;
    struct st_err err = {0};
    int rc = svc_get_dv(r->srv->app->engine, &q, &res, &err);
    http__metrics_dv(r->srv->m, false);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return;
    }
    dv_reply(r, res.bytes, dv_bytes_unref_cb, res.bytes, res.snapshot, r->has_snapshot);
}

/* ---- data files --------------------------------------------------------------------- */

/* Largest body the file endpoint reads from an object store into memory: a
   larger range (or a whole file without Range) is refused with 416. */
#define FILE_MEM_MAX (64u << 20)

/* The file endpoint on an object store: the range is read into memory. */
static void job_file_remote(struct hreq *r)
{
    struct blob_file *f = NULL;
    struct st_err err = {0};
    int rc = svc_file_open(r->srv->app->engine, r->table, r->file_id, &f, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return;
    }
    uint64_t size = blob_file_size(f), off = 0, len = size;
    enum http_range k = http_parse_range(r->range, size, &off, &len);
    if (k == HTTP_RANGE_UNSAT) {
        blob_file_close(f);
        http__reply_problem(r, 416, "the range \"%.100s\" is outside the file (%" PRIu64 " bytes)",
                            r->range, size);
        http__reply_header(r, "Content-Range", "bytes */%" PRIu64, size);
        return;
    }
    if (len > FILE_MEM_MAX) {
        blob_file_close(f);
        http__reply_problem(r, 416,
                            "Range: at most %u bytes per request from an object store (the "
                            "file has %" PRIu64 "; read it by ranges, or POST /plan with "
                            "\"presign\": true)",
                            FILE_MEM_MAX, size);
        http__reply_header(r, "Content-Range", "bytes */%" PRIu64, size);
        return;
    }
    char *body = xmalloc(len ? (size_t)len : 1);
    rc = blob_file_read(f, body, (size_t)len, off, &err);
    blob_file_close(f);
    if (rc != ST_OK) {
        free(body);
        log_warn("file %" PRId64 " of table %s: %s", r->file_id, r->table, err.msg);
        http__reply_err(r, rc == ST_ESTORE ? ST_ESTORE : ST_EIO, &err);
        return;
    }
    http__reply_reset(&r->reply);
    r->reply.status = k == HTTP_RANGE_OK ? 206 : 200;
    r->reply.ctype = "application/vnd.apache.parquet";
    r->reply.body = body;
    r->reply.len = (size_t)len;
    http__reply_header(r, "Accept-Ranges", "bytes");
    if (k == HTTP_RANGE_OK)
        http__reply_header(r, "Content-Range", "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off,
                           off + len - 1, size);
}

void http__job_file(struct hreq *r)
{
    char *path = NULL;
    struct st_err err = {0};
    int rc = svc_file_path(r->srv->app->engine, r->table, r->file_id, &path, &err);
    if (rc == ST_EUNSUPPORTED) {
        job_file_remote(r);
        return;
    }
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        log_warn("file %" PRId64 " of table %s: cannot open %s: %s", r->file_id, r->table, path,
                 strerror(e));
        if (e == ENOENT)
            http__reply_problem(r, 404, "file %" PRId64 " of table \"%s\" is no longer stored",
                                r->file_id, r->table);
        else
            http__reply_problem(r, 500, "file %" PRId64 " of table \"%s\" cannot be read",
                                r->file_id, r->table);
        free(path);
        return;
    }
    free(path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        http__reply_problem(r, 500, "file %" PRId64 " cannot be read", r->file_id);
        return;
    }
    uint64_t size = (uint64_t)st.st_size, off = 0, len = size;
    enum http_range k = http_parse_range(r->range, size, &off, &len);
    if (k == HTTP_RANGE_UNSAT) {
        close(fd);
        http__reply_problem(r, 416, "the range \"%.100s\" is outside the file (%" PRIu64 " bytes)",
                            r->range, size);
        http__reply_header(r, "Content-Range", "bytes */%" PRIu64, size);
        return;
    }
    http__reply_reset(&r->reply);
    r->reply.status = k == HTTP_RANGE_OK ? 206 : 200;
    r->reply.ctype = "application/vnd.apache.parquet";
    r->reply.fd = fd;
    r->reply.foff = off;
    r->reply.flen = len;
    http__reply_header(r, "Accept-Ranges", "bytes");
    if (k == HTTP_RANGE_OK)
        http__reply_header(r, "Content-Range", "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off,
                           off + len - 1, size);
}
