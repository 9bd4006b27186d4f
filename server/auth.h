/*
 * auth.h - bearer tokens with per-table scopes (docs/API.md "Auth"), shared
 * by both front ends.
 *
 * The tokens file (--tokens) has one grant per line:
 *
 *     SHA256HEX SCOPE TABLE_GLOB      # the SHA-256 of the token, read|write|admin, a glob
 *
 * Blank lines and lines starting with '#' are ignored; a token may have
 * several lines (several grants). A file without a token is valid: every
 * request is then refused (how to revoke every token at once). Scopes nest: read < write < admin. A
 * glob is fnmatch(3)'s ('*', '?', '[...]') over table names. The server never stores a token: a
 * request's token is hashed and its digest compared, in constant time, with every digest of the
 * file. A token's id in logs is the first 8 hex digits of its digest.
 *
 * Where the check runs: every HTTP route and every RPC declares a scope
 * (auth_scope) and where its table name comes from (auth_table_from); the
 * front end authenticates once, before anything is read from the catalog
 * (auth_begin), and checks the scope on the table (auth_check_table) as soon
 * as the table name is known: from the path or the message on arrival,
 * from the body for create, per routed table for the CDC endpoint.
 *
 * Reload (SIGHUP, main.c): auth_reload() reads the file again; a file that
 * cannot be read or parsed keeps the set in force and says why. A request
 * keeps the set it authenticated against (refcounted) until it ends.
 *
 * Thread-safe: auth_begin and auth_reload may run on any threads at once.
 */
#ifndef STRIKE_AUTH_H
#define STRIKE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* What an operation needs. AUTH_UNDECLARED is a route table's bug (refused at start). */
enum auth_scope { AUTH_UNDECLARED = 0, AUTH_OPEN, AUTH_READ, AUTH_WRITE, AUTH_ADMIN };

/* Where an operation's table name is found. */
enum auth_table_from {
    AUTH_TABLE_NONE = 0, /* no table: the token needs the scope on some table (list: filtered) */
    AUTH_TABLE_PATH,     /* the URL path's {t}, or the request message's table/name field */
    AUTH_TABLE_BODY,     /* the body, once parsed (create): the handler calls auth_check_table */
    AUTH_TABLE_PARSED,   /* each table the handler routes to (CDC): auth_check_table per table */
};

#define AUTH_TOKEN_MAX 512      /* bytes of a presented token */
#define AUTH_FILE_MAX (1 << 20) /* bytes of a tokens file */
#define AUTH_GLOB_MAX 256       /* bytes of a table glob */

struct auth;     /* the tokens in force (opaque) */
struct auth_set; /* one version of the tokens file (opaque) */
struct auth_token;

/* One request's identity. Zero-initialized = not authenticated yet; release with auth_end. */
struct auth_ctx {
    const struct auth_token *tok; /* holds its set (refcounted); NULL: unauthenticated or off */
    const char *op; /* static: "POST /v1/tables/{t}/changes", "/strike.v1.Strike/Scan" */
    char id[9];     /* the token id ("" without a token) */
    bool off;       /* no tokens configured: everything is allowed */
};

/*
 * Load `path` (NULL: auth off). On failure nothing is allocated and `err`
 * says which line is wrong. Caller frees with auth_close().
 */
int auth_open(const char *path, struct auth **out, struct st_err *err);
/* Read the file again. On failure the tokens in force stay, and err says why. */
int auth_reload(struct auth *a, struct st_err *err);
/* Whether tokens are configured. */
bool auth_enabled(const struct auth *a);
/* The number of tokens in force (distinct digests). */
size_t auth_count(struct auth *a);
void auth_close(struct auth *a); /* NULL ok */

/*
 * Authenticate a request from its Authorization header value (`Bearer T`,
 * or Debezium's `Bearer: T`; NULL: none). `table` (NULL: not known yet) is
 * only for the audit line of a refusal. ST_OK, or ST_EAUTH (401 /
 * UNAUTHENTICATED) with err naming the problem (never the token), and an
 * audit line. ctx->op should be set first (for the audit line). Auth off:
 * ST_OK, every check passes.
 */
int auth_begin(struct auth *a, const char *authorization, const char *table, struct auth_ctx *ctx,
               struct st_err *err);
/* Release what auth_begin took. Idempotent. */
void auth_end(struct auth_ctx *ctx);

/*
 * The authenticated token may do `scope` on `table`: ST_OK, or ST_EPERM
 * (403 / PERMISSION_DENIED) with err and an audit line. This is the one
 * check every operation goes through; the CDC endpoint calls it for each
 * table it routes to, before anything commits.
 */
int auth_check_table(const struct auth_ctx *ctx, const char *table, enum auth_scope scope,
                     struct st_err *err);
/* The token has `scope` on at least one table glob (operations without a table). */
int auth_check_any(const struct auth_ctx *ctx, enum auth_scope scope, struct st_err *err);
/* The check an operation declares: auth_check_table for AUTH_TABLE_PATH, else auth_check_any. */
int auth_check_op(const struct auth_ctx *ctx, enum auth_scope scope, enum auth_table_from from,
                  const char *table, struct st_err *err);
/* Whether the token may read `table` (for filtering lists); no audit line. */
bool auth_may(const struct auth_ctx *ctx, const char *table, enum auth_scope scope);

/*
 * One audit line ("audit":true, written whatever the log level) for an
 * operation that needs the admin scope, whatever its outcome: the token id,
 * ctx->op, the table, the outcome ("ok" or the error's short name) and one
 * optional extra pair (key NULL: none; e.g. "receipt", id). Never key values.
 */
void auth_audit(const struct auth_ctx *ctx, const char *table, const char *outcome, const char *key,
                const char *value);

const char *auth_scope_name(enum auth_scope s);

/* ---- for tests and fuzzing ---- */

/* Parse a tokens file's text. On failure err names the line. Free with auth_set_unref. */
int auth_parse(const char *text, size_t len, struct auth_set **out, struct st_err *err);
void auth_set_unref(struct auth_set *s); /* NULL ok */
/* Grants in a set (lines merged per token). */
size_t auth_set_tokens(const struct auth_set *s);
/* The token a header names in `s` (NULL: none); for the fuzz target and unit tests. */
const struct auth_token *auth_set_find(const struct auth_set *s, const char *authorization);
/* Extract the token of an Authorization value; false when it is not a bearer token. */
bool auth_bearer(const char *authorization, const char **tok, size_t *len);

#endif
