/*
 * blob_local.c - the blob store in a local directory (blob.h).
 *
 * A put is a temporary file next to its final name (st_afile: "<key>.tmp.
 * <random>"), fsynced, then linked to the final name, which fails when the
 * name exists (no overwrite, as S3's If-None-Match: *), then unlinked, and
 * the directory fsynced. A crash leaves at worst the temporary file, which
 * no catalog row names: gc takes it as any orphan once older than its grace.
 */
#include "blob_int.h"

#include "common/fsutil.h"
#include "common/hmap.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct local_put {
    struct blob_store *s; /* first: see blob.c */
    struct st_afile f;
};

struct local_file {
    struct blob_file h; /* first */
    int fd;
    char *key;
};

/* The path of an object (blob.c checked the key) or of a listed prefix (local_list checked it). */
static char *abs_of(const struct blob_store *s, const char *key)
{
    assert(key[0] != '/' && s->local_root[0] == '/'); /* relative, under an absolute root */
    return st_path_join(s->local_root, key);
}

/* An object's path: what blob.c's CHECK_KEY let through. */
static char *obj_path(const struct blob_store *s, const char *key)
{
    assert(blob__key_ok(key));
    return abs_of(s, key);
}

static int io_code(int e)
{
    return e == ENOSPC || e == EDQUOT ? ST_ENOSPACE : ST_EIO;
}

static void local_close(struct blob_store *s)
{
    free(s->desc);
    free(s->uri);
    free(s->local_root);
    free(s);
}

static int local_put_begin(struct blob_store *s, const char *key, struct blob_put **out,
                           struct st_err *err)
{
    struct local_put *p = xcalloc(1, sizeof *p);
    p->s = s;
    char *abs = obj_path(s, key);
    int rc = st_afile_open(&p->f, abs, err);
    free(abs);
    if (rc != ST_OK) {
        free(p);
        return rc;
    }
    *out = (struct blob_put *)p;
    return ST_OK;
}

static int local_put_write(struct blob_put *bp, const void *d, size_t n, struct st_err *err)
{
    struct local_put *p = (struct local_put *)bp;
    return st_afile_write(&p->f, d, n, err);
}

static void local_put_abort(struct blob_put *bp)
{
    struct local_put *p = (struct local_put *)bp;
    st_afile_abort(&p->f);
    free(p);
}

static int local_put_commit(struct blob_put *bp, struct st_err *err)
{
    struct local_put *p = (struct local_put *)bp;
    struct st_afile *f = &p->f;
    int rc = ST_OK;
    if (fsync(f->fd) != 0) {
        rc = st_errf(err, io_code(errno), "fsync %s: %s", f->tmp_path, strerror(errno));
    } else if (close(f->fd) != 0) {
        f->fd = -1;
        rc = st_errf(err, io_code(errno), "close %s: %s", f->tmp_path, strerror(errno));
    } else {
        f->fd = -1;
        /* link(2) refuses an existing name: the object is never replaced */
        if (link(f->tmp_path, f->final_path) != 0)
            rc = errno == EEXIST
                     ? st_errf(err, ST_EEXIST, "%s already exists: not overwritten", f->final_path)
                     : st_errf(err, io_code(errno), "link %s: %s", f->final_path, strerror(errno));
    }
    if (rc == ST_OK) {
        unlink(f->tmp_path);
        free(f->tmp_path); /* gone: st_afile_abort below only frees */
        f->tmp_path = NULL;
        const char *slash = strrchr(f->final_path, '/');
        assert(slash != NULL); /* an absolute path under the root */
        char *dir = xstrndup(f->final_path, (size_t)(slash - f->final_path));
        rc = st_fsync_dir(dir, err);
        free(dir);
    }
    st_afile_abort(f); /* the temporary name is gone on success: only frees */
    free(p);
    return rc;
}

static int local_head(struct blob_store *s, const char *key, struct blob_info *out,
                      struct st_err *err)
{
    char *abs = obj_path(s, key);
    struct stat st;
    int rc = ST_OK;
    if (stat(abs, &st) != 0)
        rc = st_errf(err, errno == ENOENT ? ST_ENOTFOUND : ST_EIO, "cannot stat %s: %s", abs,
                     strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = st_errf(err, ST_ENOTFOUND, "%s is not a file", abs);
    if (rc == ST_OK) {
        out->size = (uint64_t)st.st_size;
        out->mtime_us = (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
    }
    free(abs);
    return rc;
}

static int local_file_open(struct blob_store *s, const char *key, struct blob_file **out,
                           struct st_err *err)
{
    char *abs = obj_path(s, key);
    int fd = open(abs, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int rc = st_errf(err, errno == ENOENT ? ST_ENOTFOUND : ST_EIO, "cannot open %s: %s", abs,
                         strerror(errno));
        free(abs);
        return rc;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = st_errf(err, ST_EIO, "cannot stat %s: %s", abs, strerror(errno));
        close(fd);
        free(abs);
        return rc;
    }
    free(abs);
    struct local_file *f = xcalloc(1, sizeof *f);
    f->h.s = s;
    f->h.size = (uint64_t)st.st_size;
    f->fd = fd;
    f->key = xstrdup(key);
    *out = &f->h;
    return ST_OK;
}

static int local_file_read(struct blob_file *bf, void *dst, size_t n, uint64_t off,
                           struct st_err *err)
{
    struct local_file *f = (struct local_file *)bf;
    int rc = st_pread_full(f->fd, dst, n, off, err);
    return rc == ST_OK ? ST_OK : st_err_prefix(err, "%s/%s", bf->s->local_root, f->key);
}

static void local_file_close(struct blob_file *bf)
{
    struct local_file *f = (struct local_file *)bf;
    close(f->fd);
    free(f->key);
    free(f);
}

static int local_read(struct blob_store *s, const char *key, uint64_t off, void *dst, size_t n,
                      struct st_err *err)
{
    struct blob_file *f;
    int rc = local_file_open(s, key, &f, err);
    if (rc != ST_OK)
        return rc;
    rc = blob_file_read(f, dst, n, off, err);
    if (rc != ST_OK)
        st_err_prefix(err, "%s/%s", s->local_root, key);
    local_file_close(f);
    return rc;
}

/* Unlink each; then fsync each directory an unlink changed (once). */
static int local_del(struct blob_store *s, const char *const *keys, size_t n, bool *gone,
                     struct st_err *err)
{
    struct hmap dirs;
    hmap_init(&dirs);
    int rc = ST_OK;
    for (size_t i = 0; i < n; i++) {
        char *abs = obj_path(s, keys[i]);
        if (unlink(abs) == 0) {
            if (gone != NULL)
                gone[i] = true;
            const char *slash = strrchr(abs, '/');
            assert(slash != NULL);
            hmap_put(&dirs, abs, (size_t)(slash - abs), NULL);
        } else if (errno != ENOENT && rc == ST_OK) {
            rc = st_errf(err, ST_EIO, "cannot delete %s: %s", abs, strerror(errno));
        }
        free(abs);
    }
    size_t it = 0;
    const uint8_t *k;
    size_t kl;
    void *v;
    while (hmap_next(&dirs, &it, &k, &kl, &v)) {
        char *d = xstrndup((const char *)k, kl);
        struct st_err e2 = {0};
        if (st_fsync_dir(d, &e2) != ST_OK && rc == ST_OK)
            rc = st_errf(err, ST_EIO, "%s", e2.msg);
        free(d);
    }
    hmap_free(&dirs);
    return rc;
}

/* Walk `dir` (the key prefix `rel`, ending in '/' or empty) depth first. */
static int walk(const char *dir, struct buf *rel, blob_list_fn fn, void *ctx, int depth,
                struct st_err *err)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT || errno == ENOTDIR)
            return ST_OK;
        return st_errf(err, ST_EIO, "cannot list %s: %s", dir, strerror(errno));
    }
    int rc = ST_OK;
    size_t mark = rel->len;
    struct dirent *de;
    while (rc == ST_OK && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        rel->len = mark;
        buf_append(rel, de->d_name, strlen(de->d_name));
        if (S_ISDIR(st.st_mode)) {
            if (depth >= 16)
                continue;
            char *sub = st_path_join(dir, de->d_name);
            buf_append(rel, "/", 1);
            rc = walk(sub, rel, fn, ctx, depth + 1, err);
            free(sub);
        } else if (S_ISREG(st.st_mode)) {
            buf_append(rel, "", 1);
            struct blob_info info = {.size = (uint64_t)st.st_size,
                                     .mtime_us = (int64_t)st.st_mtim.tv_sec * 1000000 +
                                                 st.st_mtim.tv_nsec / 1000};
            int r = fn(ctx, (const char *)rel->data, &info);
            if (r != 0)
                rc = r;
        }
    }
    rel->len = mark;
    closedir(d);
    return rc;
}

static int local_list(struct blob_store *s, const char *prefix, blob_list_fn fn, void *ctx,
                      struct st_err *err)
{
    size_t pl = strlen(prefix);
    if (pl > 0) {
        char *dir_key = xstrndup(prefix, pl - 1);
        bool ok = prefix[pl - 1] == '/' && blob__key_ok(dir_key);
        free(dir_key);
        if (!ok)
            return st_errf(err, ST_EINVAL, "not a blob prefix: \"%s\"", prefix);
    }
    struct buf rel = BUF_INIT;
    buf_append(&rel, prefix, pl);
    char *dir = pl > 0 ? abs_of(s, prefix) : xstrdup(s->local_root);
    int rc = walk(dir, &rel, fn, ctx, 0, err);
    free(dir);
    buf_free(&rel);
    return rc;
}

static int local_touch(struct blob_store *s, const char *key, struct st_err *err)
{
    char *abs = obj_path(s, key);
    int rc = utimensat(AT_FDCWD, abs, NULL, 0) == 0
                 ? ST_OK
                 : st_errf(err, ST_EIO, "touching %s: %s", key, strerror(errno));
    free(abs);
    return rc;
}

static const struct blob_ops local_ops = {
    .close = local_close,
    .put_begin = local_put_begin,
    .put_write = local_put_write,
    .put_commit = local_put_commit,
    .put_abort = local_put_abort,
    .head = local_head,
    .read = local_read,
    .file_open = local_file_open,
    .file_read = local_file_read,
    .file_close = local_file_close,
    .del = local_del,
    .list = local_list,
    .touch = local_touch,
};

int blob_open_local(const char *dir, struct blob_store **out, struct st_err *err)
{
    *out = NULL;
    int rc = st_mkdirs(dir, 0755, err);
    if (rc != ST_OK)
        return rc;
    char *real = realpath(dir, NULL);
    if (real == NULL)
        return st_errf(err, ST_EIO, "cannot resolve %s: %s", dir, strerror(errno));
    struct blob_store *s = xcalloc(1, sizeof *s);
    s->ops = &local_ops;
    s->local_root = real;
    s->desc = xstrdup(real);
    s->uri = blob__file_uri(real);
    *out = s;
    return ST_OK;
}
