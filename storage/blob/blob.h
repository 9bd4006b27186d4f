/*
 * blob.h - the blob store: where the engine keeps its Parquet and Puffin
 * files, behind one interface so that the engine never names a file system.
 *
 * Objects are named by keys relative to the store's root ("tables/<uuid>/
 * data/<uuid7>.parquet") and are immutable: blob_put_commit creates a new
 * object and refuses (ST_EEXIST) to replace one that exists. An object is
 * durable once blob_put_commit returned ST_OK.
 *
 * The local implementation (blob_local.c) is a directory: a put writes a
 * temporary file next to the final name, fsyncs it, links it to the final
 * name (link(2) fails when the name exists: no overwrite) and fsyncs the
 * directory.
 */
#ifndef STRIKE_BLOB_H
#define STRIKE_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

struct blob_store;
struct blob_put;
struct blob_file;

struct blob_info {
    uint64_t size;
    int64_t mtime_us; /* last modification (local) or creation (object stores) */
};

/* Open the local store rooted at `dir` (created if missing, made absolute). */
int blob_open_local(const char *dir, struct blob_store **out, struct st_err *err);
/* An S3-compatible bucket (blob_s3.c). Credentials come from the
   environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). */
struct blob_s3_opts {
    const char *endpoint; /* http(s)://host[:port]; NULL: https://s3.<region>.amazonaws.com */
    const char *region;   /* NULL: us-east-1 */
    bool path_style;      /* endpoint/bucket/key rather than bucket.endpoint/key */
    long timeout_ms;      /* per request; 0: 60000 */
};
/* `url` is s3://bucket[/prefix]. */
int blob_open_s3(const char *url, const struct blob_s3_opts *o, struct blob_store **out,
                 struct st_err *err);
/* s3://... opens blob_open_s3, anything else is a local directory. */
int blob_open(const char *where, const struct blob_s3_opts *o, struct blob_store **out,
              struct st_err *err);
/* NULL is a no-op. */
void blob_close(struct blob_store *s);

/* The absolute root directory of a local store; NULL for any other store. */
const char *blob_local_root(const struct blob_store *s);
/* A short description for logs ("/abs/dir"); never holds credentials. */
const char *blob_describe(const struct blob_store *s);
/*
 * The fully qualified URI of `key` (caller frees): file:///abs/dir/key for a
 * local store (the directory's path %-encoded where a URI needs it),
 * s3://bucket/prefix/key for S3. What table formats record as a file's
 * location (Iceberg manifests, Puffin's referenced-data-file).
 */
char *blob_uri(const struct blob_store *s, const char *key);
/* The root's URI, ending in '/' (borrowed). */
const char *blob_uri_root(const struct blob_store *s);

/* ---- creating an object ------------------------------------------------- */

/* Begin a new object at `key`; nothing is visible until blob_put_commit. */
int blob_put_begin(struct blob_store *s, const char *key, struct blob_put **out,
                   struct st_err *err);
int blob_put_write(struct blob_put *p, const void *d, size_t n, struct st_err *err);
/* Make the object visible and durable; ST_EEXIST when the key exists (the
   existing object is left as it was). Frees p, whatever the outcome. */
int blob_put_commit(struct blob_put *p, struct st_err *err);
/* Drop an object being written; frees p. NULL is a no-op. */
void blob_put_abort(struct blob_put *p);
/* blob_put_write as a pq_write_fn (ctx is the struct blob_put). */
int blob_put_write_fn(void *ctx, const void *d, size_t n, struct st_err *err);
/* Whole-object convenience: begin, write, commit. */
int blob_put_all(struct blob_store *s, const char *key, const void *d, size_t n,
                 struct st_err *err);

/* ---- reading ------------------------------------------------------------ */

/* ST_ENOTFOUND when there is no object at `key`. */
int blob_head(struct blob_store *s, const char *key, struct blob_info *out, struct st_err *err);
/* Read exactly n bytes at off; fewer is ST_ECORRUPT, no object ST_ENOTFOUND. */
int blob_read(struct blob_store *s, const char *key, uint64_t off, void *dst, size_t n,
              struct st_err *err);
/* A whole object, refusing objects larger than max (ST_ETOOBIG). */
int blob_read_all(struct blob_store *s, const char *key, size_t max, struct buf *out,
                  struct st_err *err);

/* An open object for several range reads (a Parquet file: footer first, then
   the column chunks a scan needs). */
int blob_file_open(struct blob_store *s, const char *key, struct blob_file **out,
                   struct st_err *err);
uint64_t blob_file_size(const struct blob_file *f);
int blob_file_read(struct blob_file *f, void *dst, size_t n, uint64_t off, struct st_err *err);
/* NULL is a no-op. */
void blob_file_close(struct blob_file *f);

/* ---- deleting, listing, age --------------------------------------------- */

/*
 * Delete the n objects at keys; a missing one is not an error. gone[i] (when
 * gone is not NULL) says whether key i was deleted by this call (S3 says
 * so of a key that was not there too: DeleteObjects cannot tell). Returns
 * the first error; the other keys are still tried. Deletions are durable on
 * return.
 */
int blob_delete(struct blob_store *s, const char *const *keys, size_t n, bool *gone,
                struct st_err *err);

/* Called for each object under a prefix; a non-zero return stops the listing
   and is returned by blob_list. */
typedef int (*blob_list_fn)(void *ctx, const char *key, const struct blob_info *info);
/* Every object whose key starts with `prefix` (a "directory" ending in '/'),
   in no particular order. A missing prefix lists nothing. */
int blob_list(struct blob_store *s, const char *prefix, blob_list_fn fn, void *ctx,
              struct st_err *err);

/*
 * A presigned GET URL of the object (SigV4 query signing), valid for
 * expires_s seconds (1..604800) from now_s (seconds since the epoch): for a
 * remote engine to read the object straight from the store. ST_EUNSUPPORTED
 * on a store that is not an object store.
 */
#define BLOB_PRESIGN_MAX_S 604800
int blob_presign_get(struct blob_store *s, const char *key, int64_t now_s, int64_t expires_s,
                     char **url, struct st_err *err);

/* Make the object young again (mtime now) so that gc's grace counts from now. */
int blob_touch(struct blob_store *s, const char *key, struct st_err *err);

/* ---- what a store keeps besides its objects ------------------------------ */

/*
 * An upload begun and never completed (an S3 multipart upload whose writer
 * died or gave up without aborting it): the store keeps its parts, bytes
 * that no read or listing of objects shows, until it is completed or
 * aborted. A local store has none (a put is a temporary file, which
 * blob_list lists).
 */
struct blob_upload {
    const char *key;       /* the object it would create, relative to the store's root */
    const char *upload_id; /* the store's id of the upload */
    int64_t initiated_us;  /* when it began, on the store's clock (0: unknown) */
};
typedef int (*blob_upload_fn)(void *ctx, const struct blob_upload *u);
/* Every unfinished upload whose key starts with `prefix` (as blob_list); strings borrowed for
   the call of fn. A local store lists none. */
int blob_list_uploads(struct blob_store *s, const char *prefix, blob_upload_fn fn, void *ctx,
                      struct st_err *err);
/* Abort an unfinished upload: its parts are deleted. One already gone is not an error. */
int blob_abort_upload(struct blob_store *s, const char *key, const char *upload_id,
                      struct st_err *err);

/* Does the store keep older versions of what it overwrites or deletes? */
enum blob_versioning {
    BLOB_UNVERSIONED,          /* a local store, a bucket that never had versioning */
    BLOB_VERSIONING_ENABLED,   /* S3: every delete leaves the object as a noncurrent version */
    BLOB_VERSIONING_SUSPENDED, /* S3: versions made while it was enabled stay */
};
int blob_versioning(struct blob_store *s, enum blob_versioning *out, struct st_err *err);

#endif
