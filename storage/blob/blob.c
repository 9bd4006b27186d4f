/* blob.c - the blob store interface: key checks and dispatch (blob.h). */
#include "blob_int.h"

#include "common/buf.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

bool blob__key_ok(const char *key)
{
    if (key == NULL || key[0] == '\0' || key[0] == '/')
        return false;
    for (const char *c = key;;) {
        const char *end = strchr(c, '/');
        size_t len = end != NULL ? (size_t)(end - c) : strlen(c);
        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        if (end == NULL)
            return true;
        c = end + 1;
    }
}

#define CHECK_KEY(key)                                                                             \
    do {                                                                                           \
        if (!blob__key_ok(key))                                                                    \
            return st_errf(err, ST_EINVAL, "not a blob key: \"%s\"", (key) ? (key) : "");          \
    } while (0)

int blob_open(const char *where, const struct blob_s3_opts *o, struct blob_store **out,
              struct st_err *err)
{
    if (strncmp(where, "s3://", 5) == 0)
        return blob_open_s3(where, o, out, err);
    return blob_open_local(where, out, err);
}

void blob_close(struct blob_store *s)
{
    if (s != NULL)
        s->ops->close(s);
}

const char *blob_local_root(const struct blob_store *s)
{
    return s->local_root;
}

const char *blob_describe(const struct blob_store *s)
{
    return s->desc;
}

const char *blob_uri_root(const struct blob_store *s)
{
    return s->uri;
}

char *blob_uri(const struct blob_store *s, const char *key)
{
    return xasprintf("%s%s", s->uri, key);
}

char *blob__file_uri(const char *abs_dir)
{
    struct buf b = BUF_INIT;
    buf_append_str(&b, "file://");
    for (const unsigned char *p = (const unsigned char *)abs_dir; *p; p++) {
        /* RFC 3986 path characters stay; anything else is %-encoded */
        if (isalnum(*p) || strchr("-._~/!$&'()*+,;=:@", *p) != NULL)
            buf_append(&b, p, 1);
        else
            buf_printf(&b, "%%%02X", *p);
    }
    if (b.len == 0 || ((char *)b.data)[b.len - 1] != '/')
        buf_append_str(&b, "/");
    size_t len;
    return (char *)buf_detach(&b, &len);
}

int blob_put_begin(struct blob_store *s, const char *key, struct blob_put **out, struct st_err *err)
{
    *out = NULL;
    CHECK_KEY(key);
    return s->ops->put_begin(s, key, out, err);
}

/* Every struct blob_put starts with its store (see the implementations). */
struct blob_put_head {
    struct blob_store *s;
};

int blob_put_write(struct blob_put *p, const void *d, size_t n, struct st_err *err)
{
    return ((struct blob_put_head *)p)->s->ops->put_write(p, d, n, err);
}

int blob_put_write_fn(void *ctx, const void *d, size_t n, struct st_err *err)
{
    return blob_put_write(ctx, d, n, err);
}

int blob_put_commit(struct blob_put *p, struct st_err *err)
{
    return ((struct blob_put_head *)p)->s->ops->put_commit(p, err);
}

void blob_put_abort(struct blob_put *p)
{
    if (p != NULL)
        ((struct blob_put_head *)p)->s->ops->put_abort(p);
}

int blob_put_all(struct blob_store *s, const char *key, const void *d, size_t n, struct st_err *err)
{
    struct blob_put *p;
    int rc = blob_put_begin(s, key, &p, err);
    if (rc != ST_OK)
        return rc;
    if ((rc = blob_put_write(p, d, n, err)) != ST_OK) {
        blob_put_abort(p);
        return rc;
    }
    return blob_put_commit(p, err);
}

int blob_head(struct blob_store *s, const char *key, struct blob_info *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    CHECK_KEY(key);
    return s->ops->head(s, key, out, err);
}

int blob_read(struct blob_store *s, const char *key, uint64_t off, void *dst, size_t n,
              struct st_err *err)
{
    CHECK_KEY(key);
    return s->ops->read(s, key, off, dst, n, err);
}

int blob_read_all(struct blob_store *s, const char *key, size_t max, struct buf *out,
                  struct st_err *err)
{
    struct blob_file *f;
    int rc = blob_file_open(s, key, &f, err);
    if (rc != ST_OK)
        return rc;
    if (f->size > max) {
        rc = st_errf(err, ST_ETOOBIG, "%s is %llu bytes, more than the limit of %zu", key,
                     (unsigned long long)f->size, max);
    } else {
        buf_reset(out);
        buf_reserve(out, (size_t)f->size);
        rc = blob_file_read(f, out->data, (size_t)f->size, 0, err);
        if (rc == ST_OK)
            out->len = (size_t)f->size;
    }
    blob_file_close(f);
    return rc;
}

int blob_file_open(struct blob_store *s, const char *key, struct blob_file **out,
                   struct st_err *err)
{
    *out = NULL;
    CHECK_KEY(key);
    return s->ops->file_open(s, key, out, err);
}

uint64_t blob_file_size(const struct blob_file *f)
{
    return f->size;
}

int blob_file_read(struct blob_file *f, void *dst, size_t n, uint64_t off, struct st_err *err)
{
    if (off > f->size || n > f->size - off)
        return st_errf(err, ST_ECORRUPT, "read of %zu bytes at %llu past the end (%llu bytes)", n,
                       (unsigned long long)off, (unsigned long long)f->size);
    return f->s->ops->file_read(f, dst, n, off, err);
}

void blob_file_close(struct blob_file *f)
{
    if (f != NULL)
        f->s->ops->file_close(f);
}

int blob_delete(struct blob_store *s, const char *const *keys, size_t n, bool *gone,
                struct st_err *err)
{
    if (gone != NULL)
        memset(gone, 0, n * sizeof *gone);
    for (size_t i = 0; i < n; i++)
        CHECK_KEY(keys[i]);
    return n == 0 ? ST_OK : s->ops->del(s, keys, n, gone, err);
}

int blob_list(struct blob_store *s, const char *prefix, blob_list_fn fn, void *ctx,
              struct st_err *err)
{
    return s->ops->list(s, prefix, fn, ctx, err);
}

int blob_presign_get(struct blob_store *s, const char *key, int64_t now_s, int64_t expires_s,
                     char **url, struct st_err *err)
{
    *url = NULL;
    CHECK_KEY(key);
    if (s->ops->presign == NULL)
        return st_errf(err, ST_EUNSUPPORTED, "presign: the blob store is not an object store");
    if (expires_s < 1 || expires_s > BLOB_PRESIGN_MAX_S)
        return st_errf(err, ST_EINVAL, "expires_in: from 1 to %d seconds, got %lld",
                       BLOB_PRESIGN_MAX_S, (long long)expires_s);
    return s->ops->presign(s, key, now_s, expires_s, url, err);
}

int blob_touch(struct blob_store *s, const char *key, struct st_err *err)
{
    CHECK_KEY(key);
    return s->ops->touch(s, key, err);
}

int blob_list_uploads(struct blob_store *s, const char *prefix, blob_upload_fn fn, void *ctx,
                      struct st_err *err)
{
    return s->ops->list_uploads == NULL ? ST_OK : s->ops->list_uploads(s, prefix, fn, ctx, err);
}

int blob_abort_upload(struct blob_store *s, const char *key, const char *upload_id,
                      struct st_err *err)
{
    CHECK_KEY(key);
    if (upload_id == NULL || upload_id[0] == '\0')
        return st_errf(err, ST_EINVAL, "abort of %s: no upload id", key);
    if (s->ops->abort_upload == NULL)
        return st_errf(err, ST_EUNSUPPORTED, "the blob store keeps no unfinished uploads");
    return s->ops->abort_upload(s, key, upload_id, err);
}

int blob_versioning(struct blob_store *s, enum blob_versioning *out, struct st_err *err)
{
    *out = BLOB_UNVERSIONED;
    return s->ops->versioning == NULL ? ST_OK : s->ops->versioning(s, out, err);
}
