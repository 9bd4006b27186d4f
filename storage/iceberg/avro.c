/*
 * avro.c - Avro schemas (avro.h): the JSON into a tree of avro_node, and the
 * encoding primitives the writer and the reader share (avro_int.h).
 *
 * The nodes and every full name live in the arena of the schema's own JSON
 * document (jdoc_alloc), so a schema is one jdoc freed in one call. Named
 * types are registered before their fields are parsed (a record may refer to
 * itself) in a hash map that lives only during the parse.
 */
#include "avro_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "common/jdoc.h"
#include "common/xalloc.h"

/* ------------------------------------------------------------- shared */

void avro__put_long(struct buf *b, int64_t v)
{
    uint8_t tmp[AVRO__VARINT_MAX];
    size_t n = 0;
    uint64_t u = avro__zigzag(v);
    while (u >= 0x80) {
        tmp[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    tmp[n++] = (uint8_t)u;
    buf_append(b, tmp, n);
}

static const char *const type_names[] = {
    [AVRO_NULL] = "null",   [AVRO_BOOLEAN] = "boolean", [AVRO_INT] = "int",
    [AVRO_LONG] = "long",   [AVRO_FLOAT] = "float",     [AVRO_DOUBLE] = "double",
    [AVRO_BYTES] = "bytes", [AVRO_STRING] = "string",   [AVRO_RECORD] = "record",
    [AVRO_ENUM] = "enum",   [AVRO_ARRAY] = "array",     [AVRO_MAP] = "map",
    [AVRO_UNION] = "union", [AVRO_FIXED] = "fixed",
};

const char *avro_type_name(int type)
{
    if (type < 0 || (size_t)type >= sizeof type_names / sizeof type_names[0])
        return "?";
    return type_names[type];
}

/* The short word for a union branch: a named type's name, else its kind. */
static const char *branch_word(const struct avro_node *n)
{
    return n->name != NULL ? n->name : avro_type_name(n->type);
}

void avro__describe(const struct avro_node *n, char *out, size_t size)
{
    switch (n->type) {
    case AVRO_RECORD:
    case AVRO_ENUM:
        snprintf(out, size, "%s %s", avro_type_name(n->type), n->name);
        return;
    case AVRO_FIXED:
        snprintf(out, size, "fixed %s (%" PRIu32 " bytes)", n->name, n->n);
        return;
    case AVRO_UNION: {
        size_t at = (size_t)snprintf(out, size, "union [");
        for (uint32_t i = 0; i < n->n && at < size; i++)
            at += (size_t)snprintf(out + at, size - at, "%s%s", i ? ", " : "",
                                   branch_word(n->branches[i]));
        if (at < size)
            snprintf(out + at, size - at, "]");
        return;
    }
    default:
        snprintf(out, size, "%s", avro_type_name(n->type));
        return;
    }
}

int avro_node_field(const struct avro_node *rec, const char *name)
{
    if (rec == NULL || rec->type != AVRO_RECORD)
        return -1;
    for (uint32_t i = 0; i < rec->n; i++)
        if (strcmp(rec->fields[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* ------------------------------------------------------------- parsing */

/* The primitives: one shared node each (they carry no name and no state). */
static const struct avro_node prims[] = {
    {.type = AVRO_NULL, .min_size = 0},  {.type = AVRO_BOOLEAN, .min_size = 1},
    {.type = AVRO_INT, .min_size = 1},   {.type = AVRO_LONG, .min_size = 1},
    {.type = AVRO_FLOAT, .min_size = 4}, {.type = AVRO_DOUBLE, .min_size = 8},
    {.type = AVRO_BYTES, .min_size = 1}, {.type = AVRO_STRING, .min_size = 1},
};

const struct avro_node *avro__prim(int type)
{
    assert(type >= AVRO_NULL && type <= AVRO_STRING);
    return &prims[type];
}

/* One step of the place an error names: a name, or "[i]" for a union branch. */
struct sp_step {
    const char *name;
    int64_t branch; /* >= 0: a union branch */
};

struct sp {
    struct jdoc *doc;
    struct st_err *err;
    struct hmap names; /* full name -> struct avro_node * */
    uint32_t nodes;    /* types and fields so far */
    struct sp_step path[AVRO_MAX_DEPTH + 2];
    unsigned depth;
};

#define PATH_SHOWN 8

static int sp_fail(struct sp *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sp_fail(struct sp *c, const char *fmt, ...)
{
    char what[256], where[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t at = 0;
    where[0] = '\0';
    /* the last PATH_SHOWN steps of a deeper path, after "..." */
    unsigned from = 0;
    if (c->depth > PATH_SHOWN) {
        from = c->depth - PATH_SHOWN;
        at = (size_t)snprintf(where, sizeof where, ".."); /* and the "." of the next step */
    }
    for (unsigned i = from; i < c->depth && at < sizeof where; i++) {
        const struct sp_step *s = &c->path[i];
        if (s->branch >= 0)
            at += (size_t)snprintf(where + at, sizeof where - at, "[%" PRId64 "]", s->branch);
        else
            at += (size_t)snprintf(where + at, sizeof where - at, "%s%s", at ? "." : "", s->name);
    }
    if (where[0] != '\0')
        return st_errf(c->err, ST_EINVAL, "avro schema: at %s: %s", where, what);
    return st_errf(c->err, ST_EINVAL, "avro schema: %s", what);
}

static bool name_char(char ch, bool first)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_' ||
           (!first && ch >= '0' && ch <= '9');
}

/* [A-Za-z_][A-Za-z0-9_]* */
static bool valid_name(const char *s, size_t n)
{
    if (n == 0 || n > AVRO_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i], i == 0))
            return false;
    return true;
}

/* Names separated by dots (a full name or a namespace). */
static bool valid_dotted(const char *s, size_t n)
{
    if (n == 0 || n > AVRO_NAME_MAX)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!valid_name(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

static struct avro_node *sp_node(struct sp *c, uint8_t type)
{
    struct avro_node *n = jdoc_alloc(c->doc, sizeof *n);
    memset(n, 0, sizeof *n);
    n->type = type;
    return n;
}

/* Count one more type or field against AVRO_MAX_NODES. */
static int sp_count(struct sp *c)
{
    if (++c->nodes > AVRO_MAX_NODES)
        return sp_fail(c, "more than %u types and fields", AVRO_MAX_NODES);
    return ST_OK;
}

static char *sp_strcat3(struct sp *c, const char *a, size_t an, const char *b, size_t bn)
{
    char *s = jdoc_alloc(c->doc, an + 1 + bn + 1);
    memcpy(s, a, an);
    s[an] = '.';
    memcpy(s + an + 1, b, bn);
    s[an + 1 + bn] = '\0';
    return s;
}

/* Look up a named type by the reference `ref` made inside namespace `ns`. */
static const struct avro_node *sp_lookup(struct sp *c, const char *ref, size_t rn, const char *ns)
{
    void **slot;
    if (memchr(ref, '.', rn) == NULL && ns[0] != '\0') {
        size_t nn = strlen(ns);
        if (nn + 1 + rn <= AVRO_NAME_MAX) {
            char full[AVRO_NAME_MAX + 1];
            memcpy(full, ns, nn);
            full[nn] = '.';
            memcpy(full + nn + 1, ref, rn);
            slot = hmap_get(&c->names, full, nn + 1 + rn);
            if (slot != NULL)
                return *slot;
        }
    }
    slot = hmap_get(&c->names, ref, rn);
    return slot != NULL ? *slot : NULL;
}

static int sp_type(struct sp *c, const struct jdoc_val *v, const char *ns, unsigned depth,
                   const struct avro_node **out);

/* The primitive called s, or NULL. */
static const struct avro_node *sp_prim(const char *s)
{
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        if (strcmp(s, type_names[prims[i].type]) == 0)
            return &prims[i];
    return NULL;
}

/* A type given by name: a primitive or a named type defined before. */
static int sp_ref(struct sp *c, const char *s, size_t n, const char *ns,
                  const struct avro_node **out)
{
    const struct avro_node *p = sp_prim(s);
    if (p != NULL) {
        *out = p;
        return ST_OK;
    }
    if (!valid_dotted(s, n))
        return sp_fail(c, "\"%.*s\" is not a type name", (int)(n > 64 ? 64 : n), s);
    p = sp_lookup(c, s, n, ns);
    if (p == NULL)
        return sp_fail(c, "unknown type \"%s\"", s);
    *out = p;
    return ST_OK;
}

/*
 * The name and namespace of a named type's object: its full name (in the
 * arena) and the namespace its own definitions inherit; registers `node`.
 */
static int sp_define(struct sp *c, const struct jdoc_val *o, const char *ns, struct avro_node *node,
                     const char **inner_ns)
{
    size_t n, nsn = 0;
    const char *name = jdoc_str(jdoc_get(o, "name"), &n);
    if (name == NULL)
        return sp_fail(c, "a %s needs a \"name\" string", avro_type_name(node->type));
    if (!valid_dotted(name, n))
        return sp_fail(c, "\"%.*s\" is not a valid name", (int)(n > 64 ? 64 : n), name);
    const struct jdoc_val *nsv = jdoc_get(o, "namespace");
    const char *own_ns = ns;
    if (nsv != NULL && nsv->type != JDOC_NULL) {
        own_ns = jdoc_str(nsv, &nsn);
        if (own_ns == NULL)
            return sp_fail(c, "\"namespace\" of %s is not a string", name);
        if (nsn != 0 && !valid_dotted(own_ns, nsn))
            return sp_fail(c, "\"%.*s\" is not a valid namespace", (int)(nsn > 64 ? 64 : nsn),
                           own_ns);
    }
    const char *full;
    const char *dot = strrchr(name, '.');
    if (dot != NULL) {
        /* a dotted name is the full name; its namespace is what precedes the last dot */
        full = name;
        size_t pn = (size_t)(dot - name);
        char *p = jdoc_alloc(c->doc, pn + 1);
        memcpy(p, name, pn);
        p[pn] = '\0';
        *inner_ns = p;
    } else if (own_ns[0] != '\0') {
        size_t on = strlen(own_ns);
        if (on + 1 + n > AVRO_NAME_MAX)
            return sp_fail(c, "the full name %s.%s is longer than %u bytes", own_ns, name,
                           AVRO_NAME_MAX);
        full = sp_strcat3(c, own_ns, on, name, n);
        *inner_ns = own_ns;
    } else {
        full = name;
        *inner_ns = "";
    }
    const char *last = dot != NULL ? dot + 1 : name;
    if (sp_prim(last) != NULL && dot == NULL)
        return sp_fail(c, "a named type cannot be called \"%s\"", name);
    bool created;
    void **slot = hmap_put(&c->names, full, strlen(full), &created);
    if (!created)
        return sp_fail(c, "%s is defined twice", full);
    *slot = node;
    node->name = full;
    return ST_OK;
}

static int sp_record(struct sp *c, const struct jdoc_val *o, const char *ns, unsigned depth,
                     const struct avro_node **out)
{
    struct avro_node *node = sp_node(c, AVRO_RECORD);
    const char *inner;
    int rc = sp_define(c, o, ns, node, &inner);
    if (rc != ST_OK)
        return rc;
    const struct jdoc_val *fv = jdoc_get(o, "fields");
    if (!jdoc_is(fv, JDOC_ARRAY))
        return sp_fail(c, "record %s needs a \"fields\" array", node->name);
    if (fv->n > AVRO_MAX_FIELDS)
        return sp_fail(c, "record %s has %" PRIu32 " fields (at most %u)", node->name, fv->n,
                       AVRO_MAX_FIELDS);
    struct avro_field *fields = jdoc_alloc(c->doc, (fv->n ? fv->n : 1) * sizeof *fields);
    uint64_t min = 0;
    /* the record is visible (a field may refer to it) before its fields exist */
    node->fields = fields;
    for (uint32_t i = 0; i < fv->n; i++) {
        const struct jdoc_val *f = jdoc_at(fv, i);
        size_t fnl;
        const char *fname = jdoc_str(jdoc_get(f, "name"), &fnl);
        if (!jdoc_is(f, JDOC_OBJECT) || fname == NULL)
            return sp_fail(c, "field %" PRIu32 " of record %s needs a \"name\" string", i,
                           node->name);
        if (!valid_name(fname, fnl))
            return sp_fail(c, "field name \"%.*s\" of record %s is not a valid name",
                           (int)(fnl > 64 ? 64 : fnl), fname, node->name);
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(fields[k].name, fname) == 0)
                return sp_fail(c, "record %s has two fields called %s", node->name, fname);
        if ((rc = sp_count(c)) != ST_OK)
            return rc;
        const struct jdoc_val *t = jdoc_get(f, "type");
        if (t == NULL)
            return sp_fail(c, "field %s of record %s has no \"type\"", fname, node->name);
        c->path[c->depth].name = fname;
        c->path[c->depth].branch = -1;
        c->depth++;
        rc = sp_type(c, t, inner, depth + 1, &fields[i].type);
        c->depth--;
        if (rc != ST_OK)
            return rc;
        fields[i].name = fname;
        node->n = i + 1;
        min += fields[i].type->min_size;
    }
    node->min_size = min > UINT32_MAX ? UINT32_MAX : (uint32_t)min;
    *out = node;
    return ST_OK;
}

static int sp_enum(struct sp *c, const struct jdoc_val *o, const char *ns,
                   const struct avro_node **out)
{
    struct avro_node *node = sp_node(c, AVRO_ENUM);
    const char *inner;
    int rc = sp_define(c, o, ns, node, &inner);
    if (rc != ST_OK)
        return rc;
    const struct jdoc_val *sv = jdoc_get(o, "symbols");
    if (!jdoc_is(sv, JDOC_ARRAY) || sv->n == 0)
        return sp_fail(c, "enum %s needs a non-empty \"symbols\" array", node->name);
    if (sv->n > AVRO_MAX_FIELDS)
        return sp_fail(c, "enum %s has %" PRIu32 " symbols (at most %u)", node->name, sv->n,
                       AVRO_MAX_FIELDS);
    const char **syms = jdoc_alloc(c->doc, sv->n * sizeof *syms);
    for (uint32_t i = 0; i < sv->n; i++) {
        size_t sn;
        const char *s = jdoc_str(jdoc_at(sv, i), &sn);
        if (s == NULL || !valid_name(s, sn))
            return sp_fail(c, "symbol %" PRIu32 " of enum %s is not a valid name", i, node->name);
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(syms[k], s) == 0)
                return sp_fail(c, "enum %s has the symbol %s twice", node->name, s);
        syms[i] = s;
    }
    node->symbols = syms;
    node->n = sv->n;
    node->min_size = 1;
    *out = node;
    return ST_OK;
}

static int sp_fixed(struct sp *c, const struct jdoc_val *o, const char *ns,
                    const struct avro_node **out)
{
    struct avro_node *node = sp_node(c, AVRO_FIXED);
    const char *inner;
    int rc = sp_define(c, o, ns, node, &inner);
    if (rc != ST_OK)
        return rc;
    const struct jdoc_val *sz = jdoc_get(o, "size");
    if (!jdoc_is(sz, JDOC_INT) || sz->u.i < 0 || sz->u.i > AVRO_MAX_FIXED)
        return sp_fail(c, "fixed %s needs a \"size\" from 0 to %u", node->name, AVRO_MAX_FIXED);
    node->n = (uint32_t)sz->u.i;
    node->min_size = node->n;
    *out = node;
    return ST_OK;
}

static int sp_union(struct sp *c, const struct jdoc_val *a, const char *ns, unsigned depth,
                    const struct avro_node **out)
{
    if (a->n == 0)
        return sp_fail(c, "a union needs at least one branch");
    if (a->n > AVRO_MAX_FIELDS)
        return sp_fail(c, "a union has %" PRIu32 " branches (at most %u)", a->n, AVRO_MAX_FIELDS);
    struct avro_node *node = sp_node(c, AVRO_UNION);
    const struct avro_node **br = jdoc_alloc(c->doc, a->n * sizeof *br);
    uint32_t min = UINT32_MAX;
    for (uint32_t i = 0; i < a->n; i++) {
        c->path[c->depth].name = NULL;
        c->path[c->depth].branch = i;
        c->depth++;
        int rc = sp_type(c, jdoc_at(a, i), ns, depth + 1, &br[i]);
        if (rc != ST_OK)
            return rc;
        if (br[i]->type == AVRO_UNION)
            return sp_fail(c, "a union in a union");
        for (uint32_t k = 0; k < i; k++) {
            bool named = br[i]->name != NULL;
            if (br[k]->type == br[i]->type && (!named || strcmp(br[k]->name, br[i]->name) == 0))
                return sp_fail(c, "a union has two branches of type %s", branch_word(br[i]));
        }
        c->depth--;
        if (br[i]->min_size < min)
            min = br[i]->min_size;
    }
    node->branches = br;
    node->n = a->n;
    node->min_size = min == UINT32_MAX ? UINT32_MAX : min + 1;
    *out = node;
    return ST_OK;
}

static int sp_type(struct sp *c, const struct jdoc_val *v, const char *ns, unsigned depth,
                   const struct avro_node **out)
{
    if (v->type == JDOC_STRING)
        return sp_ref(c, v->u.s, v->n, ns, out);
    if (v->type != JDOC_OBJECT && v->type != JDOC_ARRAY)
        return sp_fail(c, "a type must be a string, an object or an array");
    if (depth > AVRO_MAX_DEPTH)
        return sp_fail(c, "types nested deeper than %u", AVRO_MAX_DEPTH);
    int rc = sp_count(c);
    if (rc != ST_OK)
        return rc;
    if (v->type == JDOC_ARRAY)
        return sp_union(c, v, ns, depth, out);

    size_t tn;
    const char *t = jdoc_str(jdoc_get(v, "type"), &tn);
    if (t == NULL)
        return sp_fail(c, "a type object needs a \"type\" string");
    if (strcmp(t, "record") == 0)
        return sp_record(c, v, ns, depth, out);
    if (strcmp(t, "enum") == 0)
        return sp_enum(c, v, ns, out);
    if (strcmp(t, "fixed") == 0)
        return sp_fixed(c, v, ns, out);
    if (strcmp(t, "array") == 0 || strcmp(t, "map") == 0) {
        bool arr = t[0] == 'a';
        const struct jdoc_val *it = jdoc_get(v, arr ? "items" : "values");
        if (it == NULL)
            return sp_fail(c, "an %s needs \"%s\"", arr ? "array" : "map",
                           arr ? "items" : "values");
        struct avro_node *node = sp_node(c, arr ? AVRO_ARRAY : AVRO_MAP);
        c->path[c->depth].name = arr ? "items" : "values";
        c->path[c->depth].branch = -1;
        c->depth++;
        rc = sp_type(c, it, ns, depth + 1, &node->items);
        c->depth--;
        if (rc != ST_OK)
            return rc;
        node->min_size = 1;
        *out = node;
        return ST_OK;
    }
    /* {"type": "long", "logicalType": ...} and {"type": "SomeRecord"} */
    return sp_ref(c, t, tn, ns, out);
}

int avro_schema_parse(const char *json, size_t len, struct avro_schema **out, struct st_err *err)
{
    *out = NULL;
    if (len > AVRO_MAX_SCHEMA)
        return st_errf(err, ST_EINVAL, "avro schema: %zu bytes of JSON (at most %u)", len,
                       AVRO_MAX_SCHEMA);
    struct jdoc_opts jo = {.max_depth = 4 * AVRO_MAX_DEPTH + 8, .flags = JDOC_ANY_ROOT};
    struct jdoc_error je;
    struct jdoc *doc = jdoc_parse(json, len, &jo, &je);
    if (doc == NULL)
        return st_errf(err, ST_EINVAL, "avro schema: not JSON: %s (line %d, column %d)", je.text,
                       je.line, je.column);
    struct sp c = {.doc = doc, .err = err};
    hmap_init(&c.names);
    const struct avro_node *root;
    int rc = sp_type(&c, jdoc_root(doc), "", 1, &root);
    hmap_free(&c.names);
    if (rc != ST_OK) {
        jdoc_free(doc);
        return rc;
    }
    struct avro_schema *s = xmalloc(sizeof *s);
    s->doc = doc;
    s->root = root;
    *out = s;
    return ST_OK;
}

void avro_schema_free(struct avro_schema *s)
{
    if (s == NULL)
        return;
    jdoc_free(s->doc);
    free(s);
}

const struct avro_node *avro_schema_root(const struct avro_schema *s)
{
    return s->root;
}
