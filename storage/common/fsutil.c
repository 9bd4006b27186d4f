/* fsutil.c - durable file writes and bounded reads. */
#include "fsutil.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir_of(const char *path);

/* The code of a failed write, create, fsync or rename: a full file system (or
   quota) is ST_ENOSPACE, for the client to retry once space is freed. */
static int write_code(int e)
{
    return e == ENOSPC || e == EDQUOT ? ST_ENOSPACE : ST_EIO;
}

int st_mkdirs_synced(const char *path, mode_t mode, int *nsynced, struct st_err *err)
{
    *nsynced = 0;
    char *p = xstrdup(path);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    /* The directories this call creates are the last components of the path:
       once one mkdir succeeds, every deeper one is new too. */
    size_t first_created = 0; /* length of the first path it created; 0: none */
    int rc = ST_OK;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char saved = *s;
            *s = '\0';
            if (mkdir(p, mode) == 0) {
                if (first_created == 0)
                    first_created = (size_t)(s - p);
            } else if (errno != EEXIST) {
                int e = errno;
                rc = st_errf(err, write_code(e), "cannot create directory %s: %s", p, strerror(e));
                goto out;
            }
            *s = saved;
            if (saved == '\0')
                break;
        }
    }
    struct stat st;
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
        rc = st_errf(err, ST_EIO, "%s exists and is not a directory", p);
        goto out;
    }
    if (first_created > 0) {
        /* A new directory is durable once its entry in its parent is: fsync the
           parent of the first one created, then each created one, outermost first. */
        char *parent = xstrndup(p, first_created);
        char *top = dir_of(parent);
        free(parent);
        rc = st_fsync_dir(top, err);
        free(top);
        if (rc == ST_OK)
            (*nsynced)++;
        for (size_t k = first_created; rc == ST_OK && k <= n; k++) {
            if (p[k] != '/' && p[k] != '\0')
                continue;
            char saved = p[k];
            p[k] = '\0';
            rc = st_fsync_dir(p, err);
            p[k] = saved;
            if (rc == ST_OK)
                (*nsynced)++;
        }
    }
out:
    free(p);
    return rc;
}

int st_mkdirs(const char *path, mode_t mode, struct st_err *err)
{
    int nsynced;
    return st_mkdirs_synced(path, mode, &nsynced, err);
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return xstrdup(".");
    if (slash == path)
        return xstrdup("/");
    return xstrndup(path, (size_t)(slash - path));
}

int st_fsync_dir(const char *dir, struct st_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return st_errf(err, ST_EIO, "cannot open directory %s: %s", dir, strerror(errno));
    int rc = ST_OK;
    if (fsync(fd) != 0)
        rc = st_errf(err, write_code(errno), "cannot fsync directory %s: %s", dir, strerror(errno));
    close(fd);
    return rc;
}

int st_afile_open(struct st_afile *f, const char *final_path, struct st_err *err)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (uint64_t)getpid() ^ (uint64_t)(uintptr_t)f;
    f->tmp_path = xasprintf("%s.tmp.%016llx", final_path, (unsigned long long)r);
    f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int rc = ST_OK;
    if (f->fd < 0 && errno == ENOENT) {
        /* the directory is new: create it (durably), then the file; an existing
           one costs no mkdir calls (a delete writes a Puffin file each time) */
        char *dir = dir_of(final_path);
        rc = st_mkdirs(dir, 0755, err);
        free(dir);
        if (rc != ST_OK) {
            free(f->tmp_path);
            f->tmp_path = NULL;
            return rc;
        }
        f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (f->fd < 0) {
        rc = st_errf(err, write_code(errno), "cannot create %s: %s", f->tmp_path, strerror(errno));
        free(f->tmp_path);
        f->tmp_path = NULL;
        return rc;
    }
    f->final_path = xstrdup(final_path);
    return ST_OK;
}

int st_afile_write(struct st_afile *f, const void *p, size_t n, struct st_err *err)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = write(f->fd, b, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return st_errf(err, write_code(errno), "write %s: %s", f->tmp_path, strerror(errno));
        }
        b += w;
        n -= (size_t)w;
        f->written += (uint64_t)w;
    }
    return ST_OK;
}

int st_afile_commit(struct st_afile *f, struct st_err *err)
{
    int rc = ST_OK;
    if (fsync(f->fd) != 0) {
        rc = st_errf(err, write_code(errno), "fsync %s: %s", f->tmp_path, strerror(errno));
        goto fail;
    }
    if (close(f->fd) != 0) {
        f->fd = -1;
        rc = st_errf(err, write_code(errno), "close %s: %s", f->tmp_path, strerror(errno));
        goto fail;
    }
    f->fd = -1;
    if (rename(f->tmp_path, f->final_path) != 0) {
        rc = st_errf(err, write_code(errno), "rename %s: %s", f->tmp_path, strerror(errno));
        goto fail;
    }
    char *dir = dir_of(f->final_path);
    rc = st_fsync_dir(dir, err);
    free(dir);
    free(f->tmp_path);
    free(f->final_path);
    f->tmp_path = f->final_path = NULL;
    return rc;
fail:
    st_afile_abort(f);
    return rc;
}

void st_afile_abort(struct st_afile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->tmp_path != NULL)
        unlink(f->tmp_path);
    free(f->tmp_path);
    free(f->final_path);
    f->tmp_path = f->final_path = NULL;
}

int st_write_file_atomic(const char *path, const void *p, size_t n, struct st_err *err)
{
    struct st_afile f;
    int rc = st_afile_open(&f, path, err);
    if (rc != ST_OK)
        return rc;
    rc = st_afile_write(&f, p, n, err);
    if (rc != ST_OK) {
        st_afile_abort(&f);
        return rc;
    }
    return st_afile_commit(&f, err);
}

int st_read_file(const char *path, size_t max, struct buf *out, struct st_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int code = errno == ENOENT ? ST_ENOTFOUND : ST_EIO;
        return st_errf(err, code, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return st_errf(err, ST_EIO, "cannot stat %s: %s", path, strerror(errno));
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return st_errf(err, ST_ETOOBIG, "%s is %lld bytes, more than the limit of %zu", path,
                       (long long)st.st_size, max);
    }
    buf_reset(out);
    buf_reserve(out, (size_t)st.st_size);
    for (;;) {
        buf_reserve(out, 4096);
        ssize_t n = read(fd, out->data + out->len, out->cap - out->len - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return st_errf(err, ST_EIO, "read %s: %s", path, strerror(errno));
        }
        if (n == 0)
            break;
        out->len += (size_t)n;
        if (out->len > max) {
            close(fd);
            return st_errf(err, ST_ETOOBIG, "%s grew past the limit of %zu bytes", path, max);
        }
    }
    close(fd);
    return ST_OK;
}

int st_pread_full(int fd, void *p, size_t n, uint64_t off, struct st_err *err)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = pread(fd, b, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return st_errf(err, ST_EIO, "read at offset %llu: %s", (unsigned long long)off,
                           strerror(errno));
        }
        if (r == 0)
            return st_errf(err, ST_ECORRUPT, "file ends before offset %llu",
                           (unsigned long long)(off + n));
        b += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return ST_OK;
}

char *st_path_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    while (la > 1 && a[la - 1] == '/')
        la--;
    while (*b == '/')
        b++;
    return xasprintf("%.*s/%s", (int)la, a, b);
}
