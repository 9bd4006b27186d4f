/*
 * status.c - the wire table of the engine's status codes (status.h).
 *
 *   X(code, http, grpc, public_detail)
 * http:          the HTTP status of docs/API.md "Errors".
 * grpc:          the gRPC status (STATUS_GRPC_ suffix; docs/API.md "gRPC").
 * public_detail: NULL when the code's message goes to the client as it is;
 *                else the words the client gets instead.
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
 * Every 503 gets Retry-After (http_server.c).
 */
#include "status.h"

#include "common/err.h"

#define STATUS_WIRE_TABLE(X)                                                                       \
    X(ST_OK, 200, OK, NULL)                                                                        \
    X(ST_EINVAL, 400, INVALID_ARGUMENT, NULL)                                                      \
    X(ST_ENOTFOUND, 404, NOT_FOUND, NULL)                                                          \
    X(ST_EEXIST, 409, ALREADY_EXISTS, NULL)                                                        \
    X(ST_ECONFLICT, 409, ABORTED, NULL)                                                            \
    X(ST_ETOOBIG, 413, RESOURCE_EXHAUSTED, NULL)                                                   \
    X(ST_EUNAVAIL, 503, UNAVAILABLE, "the catalog is unreachable; retry later")                    \
    X(ST_EIO, 500, INTERNAL, STATUS_INTERNAL_DETAIL)                                               \
    X(ST_ECORRUPT, 500, INTERNAL, STATUS_INTERNAL_DETAIL)                                          \
    X(ST_EUNSUPPORTED, 400, INVALID_ARGUMENT, NULL)                                                \
    X(ST_EIDEMPOTENCY, 422, FAILED_PRECONDITION, NULL)                                             \
    X(ST_EGONE, 404, NOT_FOUND, NULL)                                                              \
    X(ST_EINTERNAL, 500, INTERNAL, STATUS_INTERNAL_DETAIL)                                         \
    X(ST_ERANGE, 416, OUT_OF_RANGE, NULL)                                                          \
    X(ST_ENOSPACE, 507, RESOURCE_EXHAUSTED,                                                        \
      "the blob store is out of space; retry once space is freed")                                 \
    X(ST_EUNKNOWN, 503, UNAVAILABLE, NULL)                                                         \
    X(ST_EBUSY, 503, UNAVAILABLE, NULL)                                                            \
    X(ST_ESTORE, 503, UNAVAILABLE, "the object store is unreachable or failing; retry later")      \
    X(ST_EAUTH, 401, UNAUTHENTICATED, NULL)                                                        \
    X(ST_EPERM, 403, PERMISSION_DENIED, NULL)

unsigned status_http(int code)
{
    switch (code) {
#define X_HTTP(c, http, grpc, detail)                                                              \
    case c:                                                                                        \
        return http;
        STATUS_WIRE_TABLE(X_HTTP)
#undef X_HTTP
    default:
        return 500;
    }
}

enum status_grpc status_grpc(int code)
{
    switch (code) {
#define X_GRPC(c, http, grpc, detail)                                                              \
    case c:                                                                                        \
        return STATUS_GRPC_##grpc;
        STATUS_WIRE_TABLE(X_GRPC)
#undef X_GRPC
    default:
        return STATUS_GRPC_INTERNAL;
    }
}

bool status_known(int code)
{
    switch (code) {
#define X_KNOWN(c, http, grpc, detail)                                                             \
    case c:                                                                                        \
        return true;
        STATUS_WIRE_TABLE(X_KNOWN)
#undef X_KNOWN
    default:
        return false;
    }
}

static const char *public_detail(int code)
{
    switch (code) {
#define X_DETAIL(c, http, grpc, detail)                                                            \
    case c:                                                                                        \
        return detail;
        STATUS_WIRE_TABLE(X_DETAIL)
#undef X_DETAIL
    default:
        return STATUS_INTERNAL_DETAIL;
    }
}

const char *status_public(int code, const char *msg)
{
    const char *d = public_detail(code);
    if (d != NULL)
        return d;
    return msg != NULL && msg[0] != '\0' ? msg : st_strerror(code);
}

bool status_redacted(int code)
{
    return public_detail(code) != NULL;
}
