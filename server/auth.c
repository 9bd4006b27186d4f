/* auth.c - the tokens file, bearer tokens, scopes per table glob, audit lines (auth.h). */
#include "auth.h"

#include "common/hex.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

struct auth_grant {
    enum auth_scope scope;
    char *glob;
};

struct auth_token {
    struct auth_set *set; /* its set, for the reference a request holds */
    uint8_t digest[32];
    char id[9];
    struct auth_grant *g;
    size_t ng;
};

struct auth_set {
    atomic_int refs;
    struct auth_token *t;
    size_t n;
};

struct auth {
    char *path; /* NULL: auth off */
    pthread_mutex_t mu;
    struct auth_set *cur; /* under mu */
};

const char *auth_scope_name(enum auth_scope s)
{
    switch (s) {
    case AUTH_OPEN:
        return "open";
    case AUTH_READ:
        return "read";
    case AUTH_WRITE:
        return "write";
    case AUTH_ADMIN:
        return "admin";
    default:
        return "undeclared";
    }
}

/* ---- the tokens file ---------------------------------------------------------- */

void auth_set_unref(struct auth_set *s)
{
    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 0; k < s->t[i].ng; k++)
            free(s->t[i].g[k].glob);
        free(s->t[i].g);
    }
    free(s->t);
    free(s);
}

size_t auth_set_tokens(const struct auth_set *s)
{
    return s ? s->n : 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* The next whitespace-separated field of [*p, e); false at the end. */
static bool field(const char **p, const char *e, const char **f, size_t *n)
{
    const char *s = *p;
    while (s < e && is_space(*s))
        s++;
    if (s == e)
        return false;
    const char *t = s;
    while (t < e && !is_space(*t))
        t++;
    *f = s;
    *n = (size_t)(t - s);
    *p = t;
    return true;
}

static bool field_is(const char *f, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(f, lit, n) == 0;
}

/* One line "HEX SCOPE GLOB" into `s` (merged with the token's earlier lines). */
static int parse_line(struct auth_set *s, size_t *cap, const char *p, const char *e, size_t lineno,
                      struct st_err *err)
{
    const char *f[4];
    size_t n[4];
    int k = 0;
    const char *q = p;
    while (k < 4 && field(&q, e, &f[k], &n[k]))
        k++;
    if (k == 0 || f[0][0] == '#')
        return ST_OK;
    if (k != 3 && !(k == 4 && f[3][0] == '#'))
        return st_errf(err, ST_EINVAL,
                       "tokens file line %zu: expected SHA256HEX SCOPE TABLE_GLOB, got %d fields",
                       lineno, k == 4 ? 4 : k);
    uint8_t d[32];
    if (n[0] != 64)
        return st_errf(err, ST_EINVAL,
                       "tokens file line %zu: the digest must be 64 hex digits (the SHA-256 of "
                       "the token, not the token), got %zu characters",
                       lineno, n[0]);
    for (int i = 0; i < 32; i++) {
        int hi = st_hex_value(f[0][2 * i]), lo = st_hex_value(f[0][2 * i + 1]);
        if (hi < 0 || lo < 0)
            return st_errf(err, ST_EINVAL, "tokens file line %zu: the digest is not hex", lineno);
        d[i] = (uint8_t)(hi * 16 + lo);
    }
    enum auth_scope sc;
    if (field_is(f[1], n[1], "read"))
        sc = AUTH_READ;
    else if (field_is(f[1], n[1], "write"))
        sc = AUTH_WRITE;
    else if (field_is(f[1], n[1], "admin"))
        sc = AUTH_ADMIN;
    else
        return st_errf(err, ST_EINVAL,
                       "tokens file line %zu: scope \"%.*s\" (want read, write or admin)", lineno,
                       (int)(n[1] > 40 ? 40 : n[1]), f[1]);
    if (n[2] >= AUTH_GLOB_MAX)
        return st_errf(err, ST_EINVAL, "tokens file line %zu: the table glob is over %d bytes",
                       lineno, AUTH_GLOB_MAX - 1);
    for (size_t i = 0; i < n[2]; i++)
        if ((unsigned char)f[2][i] < 0x21 || (unsigned char)f[2][i] > 0x7e)
            return st_errf(err, ST_EINVAL,
                           "tokens file line %zu: the table glob has a byte that is not "
                           "visible ASCII",
                           lineno);
    struct auth_token *t = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (memcmp(s->t[i].digest, d, 32) == 0)
            t = &s->t[i];
    if (t == NULL) {
        if (s->n == *cap) {
            *cap = *cap ? *cap * 2 : 8;
            s->t = xrealloc(s->t, *cap * sizeof *s->t);
        }
        t = &s->t[s->n++];
        memset(t, 0, sizeof *t);
        t->set = s;
        memcpy(t->digest, d, 32);
        char hex[65];
        st_sha256_hex(d, hex);
        memcpy(t->id, hex, 8);
        t->id[8] = '\0';
    }
    t->g = xrealloc(t->g, (t->ng + 1) * sizeof *t->g);
    t->g[t->ng].scope = sc;
    t->g[t->ng].glob = xstrndup(f[2], n[2]);
    t->ng++;
    return ST_OK;
}

int auth_parse(const char *text, size_t len, struct auth_set **out, struct st_err *err)
{
    *out = NULL;
    if (len > AUTH_FILE_MAX)
        return st_errf(err, ST_ETOOBIG, "tokens file: larger than %d bytes", AUTH_FILE_MAX);
    if (memchr(text, '\0', len) != NULL)
        return st_errf(err, ST_EINVAL, "tokens file: contains a NUL byte");
    struct auth_set *s = xcalloc(1, sizeof *s);
    atomic_init(&s->refs, 1);
    size_t cap = 0, lineno = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        lineno++;
        const char *le = e;
        if (le > p && le[-1] == '\r')
            le--;
        int rc = parse_line(s, &cap, p, le, lineno, err);
        if (rc != ST_OK) {
            auth_set_unref(s);
            return rc;
        }
        p = nl ? nl + 1 : end;
    }
    *out = s;
    return ST_OK;
}

static int load(const char *path, struct auth_set **out, struct st_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return st_errf(err, ST_EIO, "tokens file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return st_errf(err, ST_EINVAL, "tokens file %s: not a regular file", path);
    }
    if (st.st_size > AUTH_FILE_MAX) {
        close(fd);
        return st_errf(err, ST_ETOOBIG, "tokens file %s: larger than %d bytes", path,
                       AUTH_FILE_MAX);
    }
    char *text = xmalloc((size_t)AUTH_FILE_MAX + 1);
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, text + len, (size_t)AUTH_FILE_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(text);
            close(fd);
            return st_errf(err, ST_EIO, "tokens file %s: %s", path, strerror(e));
        }
        if (n == 0 || (len += (size_t)n) > AUTH_FILE_MAX)
            break;
    }
    close(fd);
    int rc = auth_parse(text, len, out, err);
    free(text);
    if (rc != ST_OK)
        st_err_prefix(err, "%s", path);
    return rc;
}

int auth_open(const char *path, struct auth **out, struct st_err *err)
{
    *out = NULL;
    struct auth_set *s = NULL;
    if (path != NULL && load(path, &s, err) != ST_OK)
        return err->code;
    struct auth *a = xcalloc(1, sizeof *a);
    a->path = path ? xstrdup(path) : NULL;
    pthread_mutex_init(&a->mu, NULL);
    a->cur = s;
    *out = a;
    return ST_OK;
}

int auth_reload(struct auth *a, struct st_err *err)
{
    if (a == NULL || a->path == NULL)
        return ST_OK;
    struct auth_set *s;
    if (load(a->path, &s, err) != ST_OK)
        return err->code;
    pthread_mutex_lock(&a->mu);
    struct auth_set *old = a->cur;
    a->cur = s;
    pthread_mutex_unlock(&a->mu);
    auth_set_unref(old);
    return ST_OK;
}

bool auth_enabled(const struct auth *a)
{
    return a != NULL && a->path != NULL;
}

size_t auth_count(struct auth *a)
{
    if (!auth_enabled(a))
        return 0;
    pthread_mutex_lock(&a->mu);
    size_t n = a->cur ? a->cur->n : 0;
    pthread_mutex_unlock(&a->mu);
    return n;
}

void auth_close(struct auth *a)
{
    if (a == NULL)
        return;
    auth_set_unref(a->cur);
    pthread_mutex_destroy(&a->mu);
    free(a->path);
    free(a);
}

/* ---- requests ------------------------------------------------------------------- */

bool auth_bearer(const char *v, const char **tok, size_t *len)
{
    if (v == NULL)
        return false;
    while (is_space(*v))
        v++;
    if (strncasecmp(v, "Bearer", 6) != 0)
        return false;
    v += 6;
    if (*v == ':') /* Debezium Server's HTTP sink: "Bearer: <token>" */
        v++;
    if (!is_space(*v))
        return false;
    while (is_space(*v))
        v++;
    size_t n = 0;
    while (v[n] > 0x20 && v[n] < 0x7f)
        n++;
    const char *rest = v + n;
    while (is_space(*rest))
        rest++;
    if (n == 0 || n > AUTH_TOKEN_MAX || *rest != '\0')
        return false;
    *tok = v;
    *len = n;
    return true;
}

/* The token whose digest is `d`: every digest is compared, each in constant time. */
static const struct auth_token *find_digest(const struct auth_set *s, const uint8_t d[32])
{
    const struct auth_token *found = NULL;
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        uint8_t diff = 0;
        for (int k = 0; k < 32; k++)
            diff |= (uint8_t)(s->t[i].digest[k] ^ d[k]);
        if (diff == 0)
            found = &s->t[i];
    }
    return found;
}

const struct auth_token *auth_set_find(const struct auth_set *s, const char *authorization)
{
    const char *tok;
    size_t n;
    if (!auth_bearer(authorization, &tok, &n))
        return NULL;
    uint8_t d[32];
    st_sha256(tok, n, d);
    return find_digest(s, d);
}

static void audit_denied(const struct auth_ctx *ctx, const char *table, const char *outcome,
                         const char *why)
{
    st_log_audit("audit", "token", ctx->id, "op", ctx->op ? ctx->op : "", "table",
                 table ? table : "", "outcome", outcome, "detail", why, NULL);
}

int auth_begin(struct auth *a, const char *authorization, const char *table, struct auth_ctx *ctx,
               struct st_err *err)
{
    ctx->tok = NULL;
    ctx->id[0] = '\0';
    ctx->off = !auth_enabled(a);
    if (ctx->off)
        return ST_OK;
    const char *tok;
    size_t n;
    if (authorization == NULL) {
        st_errf(err, ST_EAUTH, "a bearer token is required (Authorization: Bearer <token>)");
    } else if (!auth_bearer(authorization, &tok, &n)) {
        st_errf(err, ST_EAUTH,
                "Authorization: expected \"Bearer <token>\" (1 to %d visible ASCII characters)",
                AUTH_TOKEN_MAX);
    } else {
        uint8_t d[32];
        st_sha256(tok, n, d);
        char hex[65];
        st_sha256_hex(d, hex);
        memcpy(ctx->id, hex, 8);
        ctx->id[8] = '\0';
        pthread_mutex_lock(&a->mu);
        ctx->tok = find_digest(a->cur, d);
        if (ctx->tok != NULL) /* the request keeps the set it was let in by */
            atomic_fetch_add(&ctx->tok->set->refs, 1);
        pthread_mutex_unlock(&a->mu);
        if (ctx->tok != NULL)
            return ST_OK;
        st_errf(err, ST_EAUTH, "unknown token (id %s)", ctx->id);
    }
    audit_denied(ctx, table, "unauthenticated", err->msg);
    return ST_EAUTH;
}

void auth_end(struct auth_ctx *ctx)
{
    if (ctx->tok != NULL)
        auth_set_unref(ctx->tok->set);
    ctx->tok = NULL;
}

static bool grants(const struct auth_token *t, const char *table, enum auth_scope scope)
{
    for (size_t i = 0; i < t->ng; i++)
        if (t->g[i].scope >= scope && (table == NULL || fnmatch(t->g[i].glob, table, 0) == 0))
            return true;
    return false;
}

bool auth_may(const struct auth_ctx *ctx, const char *table, enum auth_scope scope)
{
    if (ctx->off || scope <= AUTH_OPEN)
        return true;
    return ctx->tok != NULL && grants(ctx->tok, table, scope);
}

int auth_check_table(const struct auth_ctx *ctx, const char *table, enum auth_scope scope,
                     struct st_err *err)
{
    if (auth_may(ctx, table ? table : "", scope))
        return ST_OK;
    if (ctx->tok == NULL)
        st_errf(err, ST_EAUTH, "a bearer token is required (Authorization: Bearer <token>)");
    else
        st_errf(err, ST_EPERM, "token %s lacks the %s scope on table \"%.128s\"", ctx->id,
                auth_scope_name(scope), table ? table : "");
    audit_denied(ctx, table, ctx->tok == NULL ? "unauthenticated" : "forbidden", err->msg);
    return err->code;
}

int auth_check_any(const struct auth_ctx *ctx, enum auth_scope scope, struct st_err *err)
{
    if (ctx->off || scope <= AUTH_OPEN || (ctx->tok != NULL && grants(ctx->tok, NULL, scope)))
        return ST_OK;
    if (ctx->tok == NULL)
        st_errf(err, ST_EAUTH, "a bearer token is required (Authorization: Bearer <token>)");
    else
        st_errf(err, ST_EPERM, "token %s lacks the %s scope on every table", ctx->id,
                auth_scope_name(scope));
    audit_denied(ctx, NULL, ctx->tok == NULL ? "unauthenticated" : "forbidden", err->msg);
    return err->code;
}

int auth_check_op(const struct auth_ctx *ctx, enum auth_scope scope, enum auth_table_from from,
                  const char *table, struct st_err *err)
{
    if (from == AUTH_TABLE_PATH)
        return auth_check_table(ctx, table, scope, err);
    return auth_check_any(ctx, scope, err);
}

void auth_audit(const struct auth_ctx *ctx, const char *table, const char *outcome, const char *key,
                const char *value)
{
    st_log_audit("audit", "token", ctx->id, "op", ctx->op ? ctx->op : "", "table",
                 table ? table : "", "outcome", outcome, key, value, NULL);
}
