/*
 * fuzz_jdoc.c - jdoc (storage/common/jdoc.h) against jansson on the same
 * bytes, the way the HTTP front end reads bodies (JSON_REJECT_DUPLICATES),
 * with an object or array at the top and with any value (JSON_DECODE_ANY):
 *   - both accept or both refuse;
 *   - a refusal has the same line, column, position and text;
 *   - an accepted document is the same tree: kinds, integers, doubles bit
 *     for bit, strings byte for byte, members in the same order, each found
 *     again by jdoc_get;
 *   - lit_from_jdoc makes of every value what jansson read (literal, or message);
 *   - with jdoc's default depth limit (64) the verdict is the same, unless it
 *     is "maximum parsing depth reached" for a document that nests deeper.
 * The full check runs with jansson's limit (2048) for jdoc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/err.h"
#include "common/jdoc.h"
#include "expr/literal.h"

static void die(const char *what, const uint8_t *data, size_t size)
{
    fprintf(stderr, "fuzz_jdoc: %s (input of %zu bytes: %.*s)\n", what, size,
            (int)(size < 200 ? size : 200), (const char *)data);
    abort();
}

/* The word messages use for the kind of a value jansson read (lit_jdoc_kind's for jdoc). */
static const char *kind_word(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        break;
    }
    return "null";
}

/* lit_from_jdoc on v makes of it what jansson read in j: the same literal, or the same refusal. */
static bool same_literal(const json_t *j, const struct jdoc_val *v)
{
    struct st_literal b;
    struct st_err eb = {0};
    int rb = lit_from_jdoc(v, &b, &eb);
    if (strcmp(kind_word(j), lit_jdoc_kind(v)) != 0)
        return false;
    if (json_is_object(j) || json_is_array(j)) {
        char want[64];
        snprintf(want, sizeof want, "expected a value, got %s", kind_word(j));
        return rb == ST_EINVAL && strcmp(eb.msg, want) == 0;
    }
    if (rb != ST_OK || eb.msg[0] != '\0')
        return false;
    switch (json_typeof(j)) {
    case JSON_NULL:
        return b.kind == LIT_NULL;
    case JSON_TRUE:
    case JSON_FALSE:
        return b.kind == LIT_BOOL && b.b == json_is_true(j);
    case JSON_INTEGER:
        return b.kind == LIT_INT && b.i == (int64_t)json_integer_value(j);
    case JSON_REAL: {
        double d = json_real_value(j);
        return b.kind == LIT_DOUBLE && memcmp(&d, &b.d, sizeof d) == 0;
    }
    case JSON_STRING:
        return b.kind == LIT_STRING && b.slen == json_string_length(j) &&
               memcmp(b.s, json_string_value(j), b.slen) == 0 && b.s[b.slen] == '\0';
    default:
        return false;
    }
}

static bool same(const json_t *j, const struct jdoc_val *v, int depth, int *maxdepth)
{
    if (depth > *maxdepth)
        *maxdepth = depth;
    if (!same_literal(j, v))
        return false;
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        if (v->type != JDOC_OBJECT || json_object_size(j) != jdoc_size(v))
            return false;
        size_t i = 0;
        const char *key;
        json_t *x;
        json_object_foreach((json_t *)j, key, x)
        {
            const struct jdoc_member *m = jdoc_member(v, i++);
            if (m == NULL || m->key.type != JDOC_STRING || strlen(key) != m->key.n ||
                memcmp(key, m->key.u.s, m->key.n + 1) != 0 || jdoc_get(v, key) != &m->val ||
                !same(x, &m->val, depth + 1, maxdepth))
                return false;
        }
        return jdoc_member(v, i) == NULL && jdoc_get(v, "\xff") == NULL;
    }
    case JSON_ARRAY:
        if (v->type != JDOC_ARRAY || json_array_size(j) != jdoc_size(v))
            return false;
        for (size_t i = 0; i < json_array_size(j); i++)
            if (!same(json_array_get(j, i), jdoc_at(v, i), depth + 1, maxdepth))
                return false;
        return jdoc_at(v, json_array_size(j)) == NULL;
    case JSON_STRING: {
        size_t n;
        const char *s = jdoc_str(v, &n);
        return s != NULL && n == json_string_length(j) && memcmp(s, json_string_value(j), n) == 0 &&
               s[n] == '\0';
    }
    case JSON_INTEGER:
        return jdoc_is(v, JDOC_INT) && jdoc_int(v) == json_integer_value(j);
    case JSON_REAL: {
        double a = json_real_value(j), b = jdoc_real(v);
        return jdoc_is(v, JDOC_REAL) && memcmp(&a, &b, sizeof a) == 0;
    }
    case JSON_TRUE:
        return jdoc_is(v, JDOC_BOOL) && jdoc_true(v);
    case JSON_FALSE:
        return jdoc_is(v, JDOC_BOOL) && !jdoc_true(v);
    case JSON_NULL:
        return jdoc_is(v, JDOC_NULL);
    }
    return false;
}

static bool same_error(const json_error_t *a, const struct jdoc_error *b)
{
    return a->line == b->line && a->column == b->column && a->position >= 0 &&
           (size_t)a->position == b->position && strcmp(a->text, b->text) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int any = 0; any < 2; any++) {
        json_error_t je;
        json_t *j = json_loadb((const char *)data, size,
                               JSON_REJECT_DUPLICATES | (any ? JSON_DECODE_ANY : 0), &je);
        struct jdoc_error de, de64;
        struct jdoc_opts deep = {.max_depth = 2048, .flags = any ? JDOC_ANY_ROOT : 0};
        struct jdoc_opts dflt = {.max_depth = 0, .flags = any ? JDOC_ANY_ROOT : 0};
        struct jdoc *d = jdoc_parse(data, size, &deep, &de);
        struct jdoc *d64 = jdoc_parse(data, size, &dflt, &de64);
        int maxdepth = 0;
        if ((j == NULL) != (d == NULL))
            die(j ? "jdoc refused what jansson accepted" : "jdoc accepted what jansson refused",
                data, size);
        if (j == NULL) {
            if (!same_error(&je, &de)) {
                fprintf(stderr, "jansson %d:%d:%d %s\njdoc    %d:%d:%zu %s\n", je.line, je.column,
                        je.position, je.text, de.line, de.column, de.position, de.text);
                die("the refusals differ", data, size);
            }
        } else if (!same(j, jdoc_root(d), 1, &maxdepth)) {
            die("the trees differ", data, size);
        }
        /* the default depth limit: the same verdict, or a refusal for depth alone */
        if (d64 == NULL && strncmp(de64.text, "maximum parsing depth reached", 29) == 0) {
            if (d != NULL ? maxdepth <= JDOC_DEPTH_DEFAULT : de64.position > de.position)
                die("a depth refusal below the limit", data, size);
        } else if ((d64 == NULL) != (d == NULL) ||
                   (d64 == NULL ? !same_error(&je, &de64)
                                : !same(j, jdoc_root(d64), 1, &maxdepth))) {
            die("the default limits changed the verdict", data, size);
        }
        json_decref(j);
        jdoc_free(d);
        jdoc_free(d64);
    }
    return 0;
}
