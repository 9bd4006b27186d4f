/* types.c - column types and values. */
#include "types.h"

#include "buf.h"

#include <assert.h>
#include <string.h>

const char *st_type_name(enum st_type t)
{
    switch (t) {
    case ST_T_BOOLEAN:
        return "boolean";
    case ST_T_INT:
        return "int";
    case ST_T_LONG:
        return "long";
    case ST_T_DOUBLE:
        return "double";
    case ST_T_STRING:
        return "string";
    case ST_T_TIMESTAMP:
        return "timestamp";
    }
    return NULL;
}

bool st_type_parse(const char *name, enum st_type *out)
{
    static const enum st_type all[] = {ST_T_BOOLEAN, ST_T_INT,    ST_T_LONG,
                                       ST_T_DOUBLE,  ST_T_STRING, ST_T_TIMESTAMP};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(name, st_type_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    }
    return false;
}

bool st_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > ST_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (!(alpha || (i > 0 && digit)))
            return false;
    }
    return true;
}

int st_value_cmp(enum st_type t, const struct st_value *a, const struct st_value *b)
{
    switch (t) {
    case ST_T_BOOLEAN:
        return (int)a->v.b - (int)b->v.b;
    case ST_T_INT:
        return (a->v.i > b->v.i) - (a->v.i < b->v.i);
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        return (a->v.l > b->v.l) - (a->v.l < b->v.l);
    case ST_T_DOUBLE:
        /* NaN sorts after every other value, and equals itself, as in Iceberg. */
        if (a->v.d != a->v.d || b->v.d != b->v.d)
            return (a->v.d != a->v.d) - (b->v.d != b->v.d);
        return (a->v.d > b->v.d) - (a->v.d < b->v.d);
    case ST_T_STRING:
        return st_bytes_cmp(a->v.s.p, a->v.s.len, b->v.s.p, b->v.s.len);
    }
    return 0;
}

void st_colvec_get(const struct st_colvec *c, size_t i, struct st_value *out)
{
    assert(i < c->n);
    memset(out, 0, sizeof *out);
    if (c->nulls != NULL && c->nulls[i]) {
        out->null = true;
        return;
    }
    switch (c->type) {
    case ST_T_BOOLEAN:
        out->v.b = c->v.b[i] != 0;
        break;
    case ST_T_INT:
        out->v.i = c->v.i[i];
        break;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        out->v.l = c->v.l[i];
        break;
    case ST_T_DOUBLE:
        out->v.d = c->v.d[i];
        break;
    case ST_T_STRING:
        assert(c->offs[i] <= c->offs[i + 1]); /* offsets ascend (types.h) */
        out->v.s.p = (const char *)c->sdata + c->offs[i];
        out->v.s.len = c->offs[i + 1] - c->offs[i];
        break;
    }
}

size_t st_type_width(enum st_type t)
{
    switch (t) {
    case ST_T_BOOLEAN:
        return 1;
    case ST_T_INT:
        return 4;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
    case ST_T_DOUBLE:
        return 8;
    case ST_T_STRING:
        return 0;
    }
    return 0;
}
