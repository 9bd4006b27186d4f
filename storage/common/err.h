/*
 * err.h - status codes and error details shared by every strike module.
 *
 * Functions return 0 (ST_OK) on success or a negative ST_E* code on
 * failure. Where the caller needs to tell a user what went wrong, the
 * function also takes a `struct st_err *` and fills in a one-line message
 * that names the field, row, byte offset or file concerned. The edges (HTTP,
 * gRPC, CLI) map codes to statuses (server/status.h for the two wires);
 * nothing below them knows about HTTP or gRPC.
 */
#ifndef STRIKE_ERR_H
#define STRIKE_ERR_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The status codes: every code once, with st_strerror's short words.
 *   X(code, value, name)
 * What a front end makes of a code (an HTTP status, a gRPC status, whether
 * its message is shown to clients) is decided at the edge:
 * server/status.[ch]. Below it nothing knows a wire; a message the engine
 * writes for clients may name the API's own words (a field, an endpoint).
 */
#define ST_STATUS_TABLE(X)                                                                         \
    X(ST_OK, 0, "ok")                                                                              \
    X(ST_EINVAL, -1, "invalid input")                                                              \
    X(ST_ENOTFOUND, -2, "not found")                                                               \
    X(ST_EEXIST, -3, "already exists")                                                             \
    X(ST_ECONFLICT, -4, "conflict")                                                                \
    X(ST_ETOOBIG, -5, "too large")                                                                 \
    X(ST_EUNAVAIL, -6, "catalog unavailable")                                                      \
    X(ST_EIO, -7, "I/O error")                                                                     \
    X(ST_ECORRUPT, -8, "corrupt data")                                                             \
    X(ST_EUNSUPPORTED, -9, "unsupported")                                                          \
    X(ST_EIDEMPOTENCY, -10, "idempotency key reused")                                              \
    X(ST_EGONE, -11, "expired")                                                                    \
    X(ST_EINTERNAL, -12, "internal error")                                                         \
    X(ST_ERANGE, -13, "range not satisfiable")                                                     \
    X(ST_ENOSPACE, -14, "out of space")    /* a blob write failed with ENOSPC or EDQUOT */         \
    X(ST_EUNKNOWN, -15, "outcome unknown") /* a commit's outcome the catalog could not tell */     \
    X(ST_EBUSY, -16, "busy")               /* a bounded kind of work is at its limit */            \
    X(ST_ESTORE, -17, "object store unavailable")                                                  \
    X(ST_EAUTH, -20, "unauthenticated")   /* no bearer token, or an unknown one */                 \
    X(ST_EPERM, -21, "permission denied") /* the token lacks the scope on that table */

enum st_status {
#define ST_X_ENUM(code, value, name) code = value,
    ST_STATUS_TABLE(ST_X_ENUM)
#undef ST_X_ENUM
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
