/*
 * fsutil.h - durable file writes and bounded reads.
 *
 * Durability rule (docs/DESIGN.md principle 3): a file becomes visible under its
 * final name only after its bytes are fsynced, and the rename is made
 * durable by fsyncing the directory. Files are never changed afterwards.
 */
#ifndef STRIKE_FSUTIL_H
#define STRIKE_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "err.h"

/* A file being written under a temporary name in its final directory. */
struct st_afile {
    int fd;
    char *tmp_path;   /* owned */
    char *final_path; /* owned */
    uint64_t written;
};

/*
 * Create the directory and its parents (like mkdir -p), durably: every
 * directory it creates is fsynced, and so is the parent of the outermost
 * one, so that a crash cannot lose a directory a later file was put in.
 */
int st_mkdirs(const char *path, mode_t mode, struct st_err *err);
/* st_mkdirs, also saying how many directories it fsynced (for tests). */
int st_mkdirs_synced(const char *path, mode_t mode, int *nsynced, struct st_err *err);

/* Open `final_path.tmp.<random>` for writing; creates parent directories. */
int st_afile_open(struct st_afile *f, const char *final_path, struct st_err *err);
int st_afile_write(struct st_afile *f, const void *p, size_t n, struct st_err *err);
/* fsync, rename to the final name, fsync the directory; frees f's strings. */
int st_afile_commit(struct st_afile *f, struct st_err *err);
/* Close and unlink the temporary file; safe after a failed commit; frees. */
void st_afile_abort(struct st_afile *f);

/* Whole-file convenience: st_afile_open + write + commit. */
int st_write_file_atomic(const char *path, const void *p, size_t n, struct st_err *err);

/* Read a whole file into `out`, refusing files larger than `max` bytes. */
int st_read_file(const char *path, size_t max, struct buf *out, struct st_err *err);

/* pread exactly n bytes at off; short files are ST_ECORRUPT. */
int st_pread_full(int fd, void *p, size_t n, uint64_t off, struct st_err *err);

int st_fsync_dir(const char *dir, struct st_err *err);

/* Join two path parts with exactly one '/'; caller frees. */
char *st_path_join(const char *a, const char *b);

#endif
