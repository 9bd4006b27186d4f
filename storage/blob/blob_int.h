/* blob_int.h - what each blob store implements (blob.c dispatches). */
#ifndef STRIKE_BLOB_INT_H
#define STRIKE_BLOB_INT_H

#include "blob.h"

struct blob_ops {
    void (*close)(struct blob_store *s);
    int (*put_begin)(struct blob_store *s, const char *key, struct blob_put **out,
                     struct st_err *err);
    int (*put_write)(struct blob_put *p, const void *d, size_t n, struct st_err *err);
    int (*put_commit)(struct blob_put *p, struct st_err *err);
    void (*put_abort)(struct blob_put *p);
    int (*head)(struct blob_store *s, const char *key, struct blob_info *out, struct st_err *err);
    int (*read)(struct blob_store *s, const char *key, uint64_t off, void *dst, size_t n,
                struct st_err *err);
    int (*file_open)(struct blob_store *s, const char *key, struct blob_file **out,
                     struct st_err *err);
    int (*file_read)(struct blob_file *f, void *dst, size_t n, uint64_t off, struct st_err *err);
    void (*file_close)(struct blob_file *f);
    int (*del)(struct blob_store *s, const char *const *keys, size_t n, bool *gone,
               struct st_err *err);
    int (*list)(struct blob_store *s, const char *prefix, blob_list_fn fn, void *ctx,
                struct st_err *err);
    int (*touch)(struct blob_store *s, const char *key, struct st_err *err);
    /* NULL: not an object store */
    int (*presign)(struct blob_store *s, const char *key, int64_t now_s, int64_t expires_s,
                   char **url, struct st_err *err);
    /* NULL: the store keeps no unfinished uploads and no object versions (a local directory) */
    int (*list_uploads)(struct blob_store *s, const char *prefix, blob_upload_fn fn, void *ctx,
                        struct st_err *err);
    int (*abort_upload)(struct blob_store *s, const char *key, const char *upload_id,
                        struct st_err *err);
    int (*versioning)(struct blob_store *s, enum blob_versioning *out, struct st_err *err);
};

/* The head of every store. */
struct blob_store {
    const struct blob_ops *ops;
    char *desc;       /* for logs */
    char *local_root; /* local stores only */
    char *uri;        /* the root as a URI ending in '/': file:///abs/dir/, s3://bucket/prefix/ */
};

/* The head of every open object. */
struct blob_file {
    struct blob_store *s;
    uint64_t size;
};

/* SigV4 presigning (blob_s3.c), exposed for its test vectors: url_base is
   scheme://host[/...], path the encoded path on the host. */
int blob__s3_presign(const char *access_key, const char *secret, const char *token,
                     const char *region, const char *url_base, const char *path, int64_t now_s,
                     int64_t expires_s, char **out);

/* Is the key one the engine may name: relative, no "." or ".." component, no
   empty component? blob.c refuses any other key (ST_EINVAL: keys come from
   the catalog) before a store sees it; the stores assert it where they join
   a key to their root, which only a bug in blob.c could then break. */
bool blob__key_ok(const char *key);
/* file:///abs/dir/ for an absolute directory, %-encoded where a URI needs it (caller frees). */
char *blob__file_uri(const char *abs_dir);

#endif
