/*
 * err.h - status codes and error details shared by every strike module.
 *
 * Functions return 0 (ST_OK) on success or a negative ST_E* code on
 * failure. Where the caller needs to tell a user what went wrong, the
 * function also takes a `struct st_err *` and fills in a one-line message
 * that names the field, row, byte offset or file concerned. The edges (HTTP,
 * gRPC, CLI) map codes to statuses; nothing below them knows about HTTP.
 */
#ifndef STRIKE_ERR_H
#define STRIKE_ERR_H

#include <stddef.h>

enum st_status {
    ST_OK = 0,
    ST_EINVAL = -1,        /* malformed or invalid input (HTTP 400) */
    ST_ENOTFOUND = -2,     /* unknown table, file or snapshot (404) */
    ST_EEXIST = -3,        /* already exists (409) */
    ST_ECONFLICT = -4,     /* expected_seq mismatch, retries exhausted (409) */
    ST_ETOOBIG = -5,       /* a size limit was exceeded (413) */
    ST_EUNAVAIL = -6,      /* catalog unreachable (503) */
    ST_EIO = -7,           /* blob store or OS failure (500) */
    ST_ECORRUPT = -8,      /* stored or supplied bytes fail validation */
    ST_EUNSUPPORTED = -9,  /* valid but not supported by strike */
    ST_EIDEMPOTENCY = -10, /* Idempotency-Key reused with another body (422) */
    ST_EGONE = -11,        /* snapshot expired (404 with its own detail) */
    ST_EINTERNAL = -12,    /* a bug: an invariant did not hold (500) */
    ST_ERANGE = -13,       /* unsatisfiable range (416) */
};

#define ST_ERR_MSG_MAX 512

/* An error with its message. Zero-initialise, or use st_err_clear(). */
struct st_err {
    int code;
    char msg[ST_ERR_MSG_MAX];
};

/*
 * Record `code` and a printf-style message in `e` (which may be NULL) and
 * return `code`, so that a failing path reads `return st_errf(e, ...)`.
 * When `e` already holds an error the new message is ignored: the first,
 * most specific error wins.
 */
int st_errf(struct st_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Like st_errf but replaces any message already recorded. */
int st_errf_replace(struct st_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix the message already in `e` with "prefix: ". Returns e->code. */
int st_err_prefix(struct st_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void st_err_clear(struct st_err *e);

/* A short constant name for a code ("invalid input", "not found", ...). */
const char *st_strerror(int code);

#endif
