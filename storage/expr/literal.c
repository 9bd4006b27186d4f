/* literal.c - wire values and their coercion to column types. */
#include "expr/literal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"
#include "expr/expr_int.h"
#include "expr/ndjson.h"

const char *lit_kind_name(enum lit_kind k)
{
    switch (k) {
    case LIT_NULL:
        return "null";
    case LIT_BOOL:
        return "boolean";
    case LIT_INT:
        return "integer";
    case LIT_DOUBLE:
        return "number";
    case LIT_STRING:
        return "string";
    }
    return "value";
}

const char *lit_jdoc_kind(const struct jdoc_val *v)
{
    switch ((enum jdoc_type)v->type) {
    case JDOC_OBJECT:
        return "object";
    case JDOC_ARRAY:
        return "array";
    case JDOC_STRING:
        return "string";
    case JDOC_INT:
        return "integer";
    case JDOC_REAL:
        return "number";
    case JDOC_BOOL:
        return "boolean";
    case JDOC_NULL:
        break;
    }
    return "null";
}

int lit_from_jdoc(const struct jdoc_val *v, struct st_literal *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    switch ((enum jdoc_type)v->type) {
    case JDOC_NULL:
        out->kind = LIT_NULL;
        return ST_OK;
    case JDOC_BOOL:
        out->kind = LIT_BOOL;
        out->b = v->b;
        return ST_OK;
    case JDOC_INT:
        out->kind = LIT_INT;
        out->i = v->u.i;
        return ST_OK;
    case JDOC_REAL:
        out->kind = LIT_DOUBLE;
        out->d = v->u.d;
        return ST_OK;
    case JDOC_STRING:
        out->kind = LIT_STRING;
        out->s = v->u.s;
        out->slen = v->n;
        return ST_OK;
    case JDOC_OBJECT:
    case JDOC_ARRAY:
        break;
    }
    return st_errf(err, ST_EINVAL, "expected a value, got %s", lit_jdoc_kind(v));
}

size_t lit_utf8_check(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        /* Eight ASCII bytes at a time while we can. */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = expr__utf8_seq(s + i, n - i);
        if (len == 0)
            return i;
        i += len;
    }
    return n;
}

/* Write s[0..n) for a message: quoted, at most ~60 bytes, non-printables as \xNN. */
static void quote_for_msg(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i >= 60) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20 || c >= 0x7F) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
}

static int coerce_string(const struct st_literal *lit, struct st_value *out, struct st_err *err)
{
    if (lit->slen > ST_STRING_MAX)
        return st_errf(err, ST_EINVAL, "string longer than 1 MiB (%zu bytes)", lit->slen);
    if (lit->slen > 0 && memchr(lit->s, '\0', lit->slen) != NULL)
        return st_errf(err, ST_EINVAL, "string contains U+0000");
    size_t bad = lit_utf8_check(lit->s, lit->slen);
    if (bad != lit->slen)
        return st_errf(err, ST_EINVAL, "invalid UTF-8 at byte %zu", bad);
    out->v.s.p = lit->slen > 0 ? lit->s : "";
    out->v.s.len = (uint32_t)lit->slen;
    return ST_OK;
}

static int coerce_timestamp(const struct st_literal *lit, struct st_value *out, struct st_err *err)
{
    if (lit->kind == LIT_INT) {
        if (lit->i < LIT_TIMESTAMP_MIN || lit->i > LIT_TIMESTAMP_MAX)
            return st_errf(err, ST_EINVAL,
                           "timestamp %" PRId64 " is out of range (years 0000 to 9999)", lit->i);
        out->v.l = lit->i;
        return ST_OK;
    }
    if (lit->kind != LIT_STRING)
        return st_errf(err, ST_EINVAL, "expected timestamp, got %s", lit_kind_name(lit->kind));
    /* 64 bytes hold any real timestamp (nanoseconds and an offset take 35). */
    char text[65];
    bool ok = lit->slen < sizeof text && memchr(lit->s, '\0', lit->slen) == NULL;
    if (ok) {
        memcpy(text, lit->s, lit->slen);
        text[lit->slen] = '\0';
        ok = st_parse_rfc3339(text, &out->v.l);
    }
    if (!ok || out->v.l < LIT_TIMESTAMP_MIN || out->v.l > LIT_TIMESTAMP_MAX) {
        char q[128];
        quote_for_msg(lit->s, lit->slen, q, sizeof q);
        if (ok) /* e.g. 0000-01-01T00:00:00+01:00, before year 0000 in UTC */
            return st_errf(err, ST_EINVAL, "timestamp %s is out of range (years 0000 to 9999)", q);
        return st_errf(err, ST_EINVAL, "not an RFC 3339 timestamp: %s", q);
    }
    return ST_OK;
}

/* "expected int, got number 7.0 (...)": integral numbers get a hint. */
static int refuse_number_for_integer(const struct st_literal *lit, enum st_type t,
                                     struct st_err *err)
{
    char num[NDJSON_DOUBLE_MAX];
    ndjson_format_double(lit->d, num);
    return st_errf(err, ST_EINVAL,
                   "expected %s, got number %s (write an integer without a fraction or exponent)",
                   st_type_name(t), num);
}

int lit_coerce(const struct st_literal *lit, enum st_type t, struct st_value *out,
               struct st_err *err)
{
    memset(out, 0, sizeof *out);
    if (lit->kind == LIT_NULL) {
        out->null = true;
        return ST_OK;
    }
    switch (t) {
    case ST_T_BOOLEAN:
        if (lit->kind != LIT_BOOL)
            break;
        out->v.b = lit->b;
        return ST_OK;
    case ST_T_INT:
        if (lit->kind == LIT_DOUBLE)
            return refuse_number_for_integer(lit, t, err);
        if (lit->kind != LIT_INT)
            break;
        if (lit->i < INT32_MIN || lit->i > INT32_MAX)
            return st_errf(err, ST_EINVAL, "%" PRId64 " is out of range for int", lit->i);
        out->v.i = (int32_t)lit->i;
        return ST_OK;
    case ST_T_LONG:
        if (lit->kind == LIT_DOUBLE)
            return refuse_number_for_integer(lit, t, err);
        if (lit->kind != LIT_INT)
            break;
        out->v.l = lit->i;
        return ST_OK;
    case ST_T_DOUBLE:
        if (lit->kind == LIT_INT) {
            out->v.d = (double)lit->i;
            return ST_OK;
        }
        if (lit->kind != LIT_DOUBLE)
            break;
        if (!isfinite(lit->d))
            return st_errf(err, ST_EINVAL, "expected a finite double, got %s",
                           isnan(lit->d) ? "NaN"
                           : lit->d > 0  ? "Infinity"
                                         : "-Infinity");
        out->v.d = lit->d;
        return ST_OK;
    case ST_T_STRING:
        if (lit->kind != LIT_STRING)
            break;
        return coerce_string(lit, out, err);
    case ST_T_TIMESTAMP:
        return coerce_timestamp(lit, out, err);
    default:
        return st_errf(err, ST_EINTERNAL, "unknown column type %d", (int)t);
    }
    const char *tn = st_type_name(t);
    return st_errf(err, ST_EINVAL, "expected %s, got %s", tn, lit_kind_name(lit->kind));
}
