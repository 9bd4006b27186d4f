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

#include <stdbool.h>
#include <stddef.h>

/*
 * The status table: every code once, with what each front end makes of it.
 *   X(code, value, name, http, grpc, public_detail)
 * name:          st_strerror's short words.
 * http:          the HTTP status of docs/API.md "Errors".
 * grpc:          the gRPC status, as the suffix of GRPC_STATUS_* (docs/API.md "gRPC").
 * public_detail: NULL when the code's message goes to the client as it is;
 *                else the words the client gets instead (5xx: the catalog's
 *                and the system's own words, socket paths and SQL, stay in
 *                the server log under the request id).
 * ST_ENOSPACE:   a blob write failed with ENOSPC or EDQUOT: 507 Insufficient Storage, so that
 *                a full disk is told apart from a fault (nothing was committed; retry later).
 * ST_EBUSY:      a bounded kind of work is at its limit (deletes by filter at
 *                once): a 503 whose message says which and to retry.
 * ST_ESTORE:     the object store (S3) did not answer, or kept failing (5xx,
 *                throttling) through the retries: a 503; nothing was committed.
 * ST_EAUTH:      no bearer token, or one the server does not know (401 with
 *                WWW-Authenticate: Bearer; gRPC UNAUTHENTICATED).
 * ST_EPERM:      the token lacks the scope on that table (403; PERMISSION_DENIED).
 * ST_EUNKNOWN:   a commit whose outcome the catalog could not tell (the
 *                connection broke around COMMIT): a 503 (with Retry-After,
 *                as every 503) whose message, written by the engine for the
 *                client, names the commit and says how to resolve it.
 */
#define ST_STATUS_TABLE(X)                                                                         \
    X(ST_OK, 0, "ok", 200, OK, NULL)                                                               \
    X(ST_EINVAL, -1, "invalid input", 400, INVALID_ARGUMENT, NULL)                                 \
    X(ST_ENOTFOUND, -2, "not found", 404, NOT_FOUND, NULL)                                         \
    X(ST_EEXIST, -3, "already exists", 409, ALREADY_EXISTS, NULL)                                  \
    X(ST_ECONFLICT, -4, "conflict", 409, ABORTED, NULL)                                            \
    X(ST_ETOOBIG, -5, "too large", 413, RESOURCE_EXHAUSTED, NULL)                                  \
    X(ST_EUNAVAIL, -6, "catalog unavailable", 503, UNAVAILABLE,                                    \
      "the catalog is unreachable; retry later")                                                   \
    X(ST_EIO, -7, "I/O error", 500, INTERNAL, ST_INTERNAL_DETAIL)                                  \
    X(ST_ECORRUPT, -8, "corrupt data", 500, INTERNAL, ST_INTERNAL_DETAIL)                          \
    X(ST_EUNSUPPORTED, -9, "unsupported", 400, INVALID_ARGUMENT, NULL)                             \
    X(ST_EIDEMPOTENCY, -10, "idempotency key reused", 422, FAILED_PRECONDITION, NULL)              \
    X(ST_EGONE, -11, "expired", 404, NOT_FOUND, NULL)                                              \
    X(ST_EINTERNAL, -12, "internal error", 500, INTERNAL, ST_INTERNAL_DETAIL)                      \
    X(ST_ERANGE, -13, "range not satisfiable", 416, OUT_OF_RANGE, NULL)                            \
    X(ST_ENOSPACE, -14, "out of space", 507, RESOURCE_EXHAUSTED,                                   \
      "the blob store is out of space; retry once space is freed")                                 \
    X(ST_EUNKNOWN, -15, "outcome unknown", 503, UNAVAILABLE, NULL)                                 \
    X(ST_EBUSY, -16, "busy", 503, UNAVAILABLE, NULL)                                               \
    X(ST_ESTORE, -17, "object store unavailable", 503, UNAVAILABLE,                                \
      "the object store is unreachable or failing; retry later")                                   \
    X(ST_EAUTH, -20, "unauthenticated", 401, UNAUTHENTICATED, NULL)                                \
    X(ST_EPERM, -21, "permission denied", 403, PERMISSION_DENIED, NULL)

#define ST_INTERNAL_DETAIL "internal error; the server log has the details"

enum st_status {
#define ST_X_ENUM(code, value, name, http, grpc, detail) code = value,
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

/* The HTTP status of a code (500 for a code not in the table). */
unsigned st_status_http(int code);

/*
 * What a client may be told about an error of this code: `msg` itself, or
 * the table's public detail for codes whose messages stay in the log.
 * `msg` NULL or empty: the code's name.
 */
const char *st_status_public(int code, const char *msg);

/* Whether a code's message is withheld from clients (its public detail is set). */
bool st_status_redacted(int code);

#endif
