/*
 * status.h - what the front ends make of an engine status code: the HTTP
 * status (docs/API.md "Errors"), the gRPC status (docs/API.md "gRPC") and
 * whether the code's message is withheld from clients. The codes and their
 * names are storage/common/err.h's; the wire is decided here, at the edge,
 * and nowhere below server/. http_server.c and grpc.c map through it.
 */
#ifndef STRIKE_STATUS_H
#define STRIKE_STATUS_H

#include <stdbool.h>

/* gRPC status codes, numbered as the gRPC protocol numbers them (grpc.c asserts at compile
   time that each is the gRPC core's grpc_status_code of that name). */
enum status_grpc {
    STATUS_GRPC_OK = 0,
    STATUS_GRPC_INVALID_ARGUMENT = 3,
    STATUS_GRPC_NOT_FOUND = 5,
    STATUS_GRPC_ALREADY_EXISTS = 6,
    STATUS_GRPC_PERMISSION_DENIED = 7,
    STATUS_GRPC_RESOURCE_EXHAUSTED = 8,
    STATUS_GRPC_FAILED_PRECONDITION = 9,
    STATUS_GRPC_ABORTED = 10,
    STATUS_GRPC_OUT_OF_RANGE = 11,
    STATUS_GRPC_INTERNAL = 13,
    STATUS_GRPC_UNAVAILABLE = 14,
    STATUS_GRPC_UNAUTHENTICATED = 16,
};

/* What a client is told instead of the message of a code whose message stays in the log. */
#define STATUS_INTERNAL_DETAIL "internal error; the server log has the details"

/* The HTTP status of a code (500 for a code not in the table). */
unsigned status_http(int code);
/* The gRPC status of a code (INTERNAL for a code not in the table). */
enum status_grpc status_grpc(int code);
/*
 * What a client may be told about an error of this code: `msg` itself, or
 * the table's public detail for codes whose messages stay in the log (5xx:
 * the catalog's and the system's own words, socket paths and SQL, stay in
 * the server log under the request id). `msg` NULL or empty: the code's
 * name (st_strerror).
 */
const char *status_public(int code, const char *msg);
/* Whether a code's message is withheld from clients (its public detail is set). */
bool status_redacted(int code);
/* Whether the table has a row for this code (tests: every err.h code has one). */
bool status_known(int code);

#endif
