/*
 * test_parquet_util.h - helpers shared by the Parquet unit tests: an
 * in-memory write target and paths from the ctest environment.
 */
#ifndef STRIKE_TEST_PARQUET_UTIL_H
#define STRIKE_TEST_PARQUET_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"

/* A pq_write_fn target: bytes collected in b; fails once `fail_at` bytes would be passed. */
struct memfile {
    struct buf b;
    size_t fail_at; /* 0: never */
    int calls;
};

static inline int memfile_write(void *ctx, const void *p, size_t n, struct st_err *err)
{
    struct memfile *m = ctx;
    m->calls++;
    if (m->fail_at != 0 && m->b.len + n > m->fail_at)
        return st_errf(err, ST_EIO, "memfile: simulated write failure at byte %zu", m->b.len);
    buf_append(&m->b, p, n);
    return ST_OK;
}

/* The value of environment variable `name`; the test fails loudly when it is not set. */
static inline const char *env_dir(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "FATAL: %s is not set: run this test through ctest (it sets %s)\n", name,
                name);
        abort();
    }
    return v;
}

#endif
