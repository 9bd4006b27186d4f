/*
 * cli_where.c - the --where predicate language of the client commands,
 * compiled to the Iceberg expression JSON of docs/API.md ("Types"):
 *
 *   expr      := and_expr { OR and_expr }
 *   and_expr  := unary { AND unary }
 *   unary     := NOT unary | '(' expr ')' | TRUE | FALSE | predicate
 *   predicate := column op literal              op: = == != <> < <= > >=
 *              | column IS [NOT] NULL
 *              | column [NOT] IN '(' literal {',' literal} ')'
 *              | column [NOT] STARTS WITH 'text'
 *   literal   := integer | decimal | 'text' ('' inside is one ') | TRUE | FALSE
 *   column    := [A-Za-z_][A-Za-z0-9_]* | "quoted name"
 *
 * Keywords are case-insensitive. NOT binds tighter than AND, AND than OR
 * (SQL's precedence), so `not a is null or b = 1` is `(not (a is null)) or
 * (b = 1)`. Literals are sent as JSON numbers, strings and booleans; the
 * server types them by their column (a timestamp as an RFC 3339 string or
 * microseconds). Errors name the column (0-based) of the offending token.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHERE_DEPTH_MAX 64
#define WHERE_TEXT_MAX 65536

enum tok {
    T_END,
    T_IDENT,
    T_NUMBER,
    T_STRING,
    T_LPAREN,
    T_RPAREN,
    T_COMMA,
    T_OP,
    T_AND,
    T_OR,
    T_NOT,
    T_IS,
    T_NULL,
    T_IN,
    T_STARTS,
    T_WITH,
    T_TRUE,
    T_FALSE,
    T_BAD,
};

struct lexer {
    const char *s;
    size_t pos; /* of the next token */
    enum tok t; /* current token */
    size_t start, len;
    char *text; /* current identifier / string value / number / operator (malloc'd) */
    char *msg;
    size_t cap;
    size_t errcol;
    bool failed;
    int depth;
};

__attribute__((format(printf, 3, 4))) static void fail_at(struct lexer *L, size_t col,
                                                          const char *fmt, ...)
{
    if (L->failed)
        return;
    L->failed = true;
    L->errcol = col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->msg, L->cap, fmt, ap);
    va_end(ap);
}

/* RFC 3629 UTF-8 without U+0000 (what a JSON string may hold). */
static bool utf8_valid(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
        if (len == 0 || c > 0xf4 || len > n - i)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
        unsigned cp = len == 2   ? (c & 0x1fu) << 6 | (p[i + 1] & 0x3fu)
                      : len == 3 ? (c & 0x0fu) << 12 | (p[i + 1] & 0x3fu) << 6 | (p[i + 2] & 0x3fu)
                                 : (c & 0x07u) << 18 | (p[i + 1] & 0x3fu) << 12 |
                                       (p[i + 2] & 0x3fu) << 6 | (p[i + 3] & 0x3fu);
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
        i += len;
    }
    return true;
}

static const struct {
    const char *word;
    enum tok t;
} keywords[] = {
    {"and", T_AND}, {"or", T_OR},         {"not", T_NOT},   {"is", T_IS},     {"null", T_NULL},
    {"in", T_IN},   {"starts", T_STARTS}, {"with", T_WITH}, {"true", T_TRUE}, {"false", T_FALSE},
};

static void next(struct lexer *L)
{
    free(L->text);
    L->text = NULL;
    const char *s = L->s;
    size_t i = L->pos;
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
        i++;
    L->start = i;
    char c = s[i];
    if (c == 0) {
        L->t = T_END;
        L->pos = i;
        return;
    }
    if (isalpha((unsigned char)c) || c == '_') {
        size_t j = i;
        while (isalnum((unsigned char)s[j]) || s[j] == '_')
            j++;
        L->text = strndup(s + i, j - i);
        L->t = T_IDENT;
        for (size_t k = 0; k < sizeof keywords / sizeof keywords[0]; k++)
            if (strcasecmp(L->text, keywords[k].word) == 0)
                L->t = keywords[k].t;
        L->pos = j;
        return;
    }
    if (c == '"' || c == '\'') {
        /* "name" or 'text'; a doubled quote stands for itself */
        struct buf b = BUF_INIT;
        size_t j = i + 1;
        for (;;) {
            if (s[j] == 0) {
                buf_free(&b);
                fail_at(L, i, "unterminated %s", c == '"' ? "quoted column name" : "string");
                L->t = T_BAD;
                return;
            }
            if (s[j] == c) {
                if (s[j + 1] == c) {
                    buf_put_u8(&b, (uint8_t)c);
                    j += 2;
                    continue;
                }
                j++;
                break;
            }
            buf_put_u8(&b, (uint8_t)s[j++]);
        }
        if (!utf8_valid(b.data, b.len)) {
            buf_free(&b);
            fail_at(L, i, "%s is not valid UTF-8", c == '"' ? "quoted column name" : "string");
            L->t = T_BAD;
            return;
        }
        buf_put_u8(&b, 0);
        L->text = (char *)buf_detach(&b, NULL);
        L->t = c == '"' ? T_IDENT : T_STRING;
        L->pos = j;
        return;
    }
    if (isdigit((unsigned char)c) || ((c == '-' || c == '+' || c == '.') &&
                                      (isdigit((unsigned char)s[i + 1]) || s[i + 1] == '.'))) {
        size_t j = i + 1;
        while (isalnum((unsigned char)s[j]) || s[j] == '.' ||
               ((s[j] == '-' || s[j] == '+') && (s[j - 1] == 'e' || s[j - 1] == 'E')))
            j++;
        L->text = strndup(s + i, j - i);
        L->t = T_NUMBER;
        L->pos = j;
        return;
    }
    static const char *ops[] = {"<=", ">=", "<>", "!=", "==", "=", "<", ">"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        size_t n = strlen(ops[k]);
        if (strncmp(s + i, ops[k], n) == 0) {
            L->text = strdup(ops[k]);
            L->t = T_OP;
            L->pos = i + n;
            return;
        }
    }
    L->pos = i + 1;
    L->t = c == '(' ? T_LPAREN : c == ')' ? T_RPAREN : c == ',' ? T_COMMA : T_BAD;
    if (L->t == T_BAD) {
        char ch[2] = {c, 0};
        fail_at(L, i, "unexpected character '%s'", ch);
    }
}

static const char *describe(const struct lexer *L)
{
    switch (L->t) {
    case T_END:
        return "the end";
    case T_RPAREN:
        return "')'";
    case T_LPAREN:
        return "'('";
    case T_COMMA:
        return "','";
    default:
        return L->text != NULL ? L->text : "this";
    }
}

static json_t *literal(struct lexer *L)
{
    json_t *v = NULL;
    if (L->t == T_STRING) {
        v = json_string(L->text);
        if (v == NULL)
            fail_at(L, L->start, "string literal is not valid UTF-8%s", "");
    } else if (L->t == T_TRUE || L->t == T_FALSE) {
        v = json_boolean(L->t == T_TRUE);
    } else if (L->t == T_NUMBER) {
        char *end;
        errno = 0;
        long long i = strtoll(L->text, &end, 10);
        if (*end == 0 && errno == 0) {
            v = json_integer(i);
        } else {
            errno = 0;
            double d = strtod(L->text, &end);
            if (*end != 0 || errno != 0 || d != d)
                fail_at(L, L->start, "bad number '%s'", L->text);
            else
                v = json_real(d);
        }
    } else if (L->t == T_NULL) {
        fail_at(L, L->start, "compare with null using 'is null' or 'is not null'%s", "");
    } else {
        fail_at(L, L->start, "expected a value (number, 'text', true or false), got %s",
                describe(L));
    }
    if (v != NULL)
        next(L);
    return v;
}

static json_t *pred(const char *type, const char *col)
{
    return json_pack("{s:s, s:s}", "type", type, "term", col);
}

static json_t *expr(struct lexer *L);

static json_t *predicate(struct lexer *L)
{
    if (L->t != T_IDENT) {
        fail_at(L, L->start, "expected a column name, got %s", describe(L));
        return NULL;
    }
    char *col = L->text;
    L->text = NULL;
    next(L);
    json_t *out = NULL;
    if (L->t == T_OP) {
        const char *op = L->text;
        const char *type = strcmp(op, "<") == 0                               ? "lt"
                           : strcmp(op, "<=") == 0                            ? "lt-eq"
                           : strcmp(op, ">") == 0                             ? "gt"
                           : strcmp(op, ">=") == 0                            ? "gt-eq"
                           : (strcmp(op, "!=") == 0 || strcmp(op, "<>") == 0) ? "not-eq"
                                                                              : "eq";
        next(L);
        json_t *v = literal(L);
        if (v != NULL) {
            out = pred(type, col);
            json_object_set_new(out, "value", v);
        }
    } else if (L->t == T_IS) {
        next(L);
        bool neg = L->t == T_NOT;
        if (neg)
            next(L);
        if (L->t != T_NULL) {
            fail_at(L, L->start, "expected 'null' after 'is%s', got %s", neg ? " not" : "",
                    describe(L));
        } else {
            next(L);
            out = pred(neg ? "not-null" : "is-null", col);
        }
    } else if (L->t == T_NOT || L->t == T_IN || L->t == T_STARTS) {
        bool neg = L->t == T_NOT;
        if (neg)
            next(L);
        if (L->t == T_IN) {
            next(L);
            if (L->t != T_LPAREN) {
                fail_at(L, L->start, "expected '(' after 'in', got %s", describe(L));
            } else {
                next(L);
                json_t *vals = json_array();
                for (;;) {
                    json_t *v = literal(L);
                    if (v == NULL)
                        break;
                    json_array_append_new(vals, v);
                    if (L->t == T_COMMA) {
                        next(L);
                        continue;
                    }
                    if (L->t != T_RPAREN)
                        fail_at(L, L->start, "expected ',' or ')' in the list, got %s",
                                describe(L));
                    break;
                }
                if (!L->failed) {
                    next(L);
                    out = pred(neg ? "not-in" : "in", col);
                    json_object_set_new(out, "values", vals);
                } else {
                    json_decref(vals);
                }
            }
        } else if (L->t == T_STARTS) {
            next(L);
            if (L->t != T_WITH) {
                fail_at(L, L->start, "expected 'with' after 'starts', got %s", describe(L));
            } else {
                next(L);
                if (L->t != T_STRING) {
                    fail_at(L, L->start, "expected a 'text' after 'starts with', got %s",
                            describe(L));
                } else {
                    out = pred(neg ? "not-starts-with" : "starts-with", col);
                    json_object_set_new(out, "value", json_string(L->text));
                    next(L);
                }
            }
        } else {
            fail_at(L, L->start, "expected 'in' or 'starts with' after 'not', got %s", describe(L));
        }
    } else {
        fail_at(L, L->start,
                "expected an operator (= != < <= > >= is in starts with) after the column, got %s",
                describe(L));
    }
    if (out == NULL && !L->failed)
        fail_at(L, L->start, "cannot encode the predicate on \"%s\"", col);
    free(col);
    return out;
}

static json_t *unary(struct lexer *L)
{
    if (++L->depth > WHERE_DEPTH_MAX) {
        fail_at(L, L->start, "nested deeper than %s levels", "64");
        return NULL;
    }
    json_t *out = NULL;
    if (L->t == T_NOT) {
        next(L);
        json_t *child = unary(L);
        if (child != NULL)
            out = json_pack("{s:s, s:o}", "type", "not", "child", child);
    } else if (L->t == T_LPAREN) {
        size_t open = L->start;
        next(L);
        out = expr(L);
        if (out != NULL && L->t != T_RPAREN) {
            fail_at(L, L->start, "expected ')' to close the '(' at column %zu, got %s", open + 1,
                    describe(L));
            json_decref(out);
            out = NULL;
        } else if (out != NULL) {
            next(L);
        }
    } else if (L->t == T_TRUE || L->t == T_FALSE) {
        out = json_pack("{s:s}", "type", L->t == T_TRUE ? "true" : "false");
        next(L);
    } else {
        out = predicate(L);
    }
    L->depth--;
    return out;
}

static json_t *and_expr(struct lexer *L)
{
    json_t *left = unary(L);
    while (left != NULL && L->t == T_AND) {
        next(L);
        json_t *right = unary(L);
        if (right == NULL) {
            json_decref(left);
            return NULL;
        }
        left = json_pack("{s:s, s:o, s:o}", "type", "and", "left", left, "right", right);
    }
    return left;
}

static json_t *expr(struct lexer *L)
{
    json_t *left = and_expr(L);
    while (left != NULL && L->t == T_OR) {
        next(L);
        json_t *right = and_expr(L);
        if (right == NULL) {
            json_decref(left);
            return NULL;
        }
        left = json_pack("{s:s, s:o, s:o}", "type", "or", "left", left, "right", right);
    }
    return left;
}

json_t *cli_where_compile(const char *text, char *msg, size_t cap, size_t *col)
{
    struct lexer L = {.s = text, .msg = msg, .cap = cap};
    *col = 0;
    msg[0] = 0;
    if (strlen(text) > WHERE_TEXT_MAX) {
        snprintf(msg, cap, "longer than %d characters", WHERE_TEXT_MAX);
        return NULL;
    }
    next(&L);
    json_t *out = L.failed ? NULL : expr(&L);
    if (out != NULL && L.t != T_END) {
        fail_at(&L, L.start, "expected 'and', 'or' or the end, got %s", describe(&L));
    }
    if (L.failed) {
        json_decref(out);
        out = NULL;
        *col = L.errcol;
    }
    free(L.text);
    return out;
}
