/*
 * http_schema.c - POST /v1/tables/{t}/schema (docs/API.md "Schema changes"):
 * the body {"changes": [...], "expected_schema_id": n} into an
 * engine_alter_req, answered with the table as GET /v1/tables/{t} shows it.
 *
 * Each change is an object of exactly one member: {"add": COLUMN} (COLUMN as
 * in create, {"name","type","required"?}, plus an optional "default", a JSON
 * scalar), {"drop": "c"}, {"rename": {"from","to"}}, {"widen": {"column",
 * "type"}}, {"optional": "c"}. Anything else is a 400 naming the change; the
 * engine words the rules (engine_alter_table). Bounds: at most
 * ENGINE_SCHEMA_CHANGES_MAX changes, names of at most ST_NAME_MAX bytes (a
 * longer one is not a valid name), a default of at most
 * ENGINE_SCHEMA_DEFAULT_MAX bytes as JSON.
 *
 * Also the "evolve": true of POST /v1/tables/{t}/changes (http__evolve): the
 * columns its upserts name that the table lacks are added first, optional,
 * typed by their first non-null value, as a schema change of their own.
 */
#include "http_int.h"

#include "changeset.h"
#include "common/buf.h"
#include "common/jdoc.h"
#include "common/xalloc.h"
#include "expr/literal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A name member (a string of at most ST_NAME_MAX bytes; the engine checks the rest). */
static bool name_of(struct hreq *r, const struct jdoc_val *v, const char *where, const char **out)
{
    if (v == NULL || !jdoc_is(v, JDOC_STRING)) {
        http__reply_problem(r, 400, "%s: %s", where,
                            v ? "expected a column name (a string)" : "required");
        return false;
    }
    if (strlen(v->u.s) > ST_NAME_MAX) {
        http__reply_problem(r, 400,
                            "%s: \"%.40s...\" is not a valid column name (at most %d "
                            "characters)",
                            where, v->u.s, ST_NAME_MAX);
        return false;
    }
    *out = v->u.s;
    return true;
}

static bool type_of(struct hreq *r, const struct jdoc_val *v, const char *where, enum st_type *out)
{
    if (v == NULL || !jdoc_is(v, JDOC_STRING)) {
        http__reply_problem(r, 400, "%s: %s", where,
                            v ? "expected a type name (a string)" : "required");
        return false;
    }
    if (!st_type_parse(v->u.s, out)) {
        http__reply_problem(r, 400,
                            "%s: unknown type \"%.40s\" (boolean, int, long, double, string, "
                            "timestamp)",
                            where, v->u.s);
        return false;
    }
    return true;
}

/* A default (a JSON scalar) as JSON text in d's arena. */
static bool default_of(struct hreq *r, struct jdoc *d, const struct jdoc_val *v, const char *where,
                       const char **out)
{
    struct st_literal lit;
    struct st_err err = {0};
    if (lit_from_jdoc(v, &lit, &err) != ST_OK) {
        http__reply_problem(r, 400, "%s: %s", where, err.msg);
        return false;
    }
    struct buf b = BUF_INIT;
    switch (lit.kind) {
    case LIT_NULL:
        http__reply_problem(r, 400, "%s: null is no default (omit it)", where);
        return false;
    case LIT_BOOL:
        buf_append_str(&b, lit.b ? "true" : "false");
        break;
    case LIT_INT:
        buf_printf(&b, "%lld", (long long)lit.i);
        break;
    case LIT_DOUBLE:
        buf_printf(&b, "%.17g", lit.d);
        break;
    case LIT_STRING:
        if (lit.slen > ENGINE_SCHEMA_DEFAULT_MAX) {
            http__reply_problem(r, 400, "%s: longer than %d bytes", where,
                                ENGINE_SCHEMA_DEFAULT_MAX);
            return false;
        }
        buf_append_str(&b, "\"");
        buf_append_json_escaped(&b, lit.s);
        buf_append_str(&b, "\"");
        break;
    }
    char *s = jdoc_alloc(d, b.len + 1);
    memcpy(s, b.data, b.len);
    s[b.len] = '\0';
    buf_free(&b);
    *out = s;
    return true;
}

/* Change i of the body into c; false with the 400 in the reply. */
static bool change_of(struct hreq *r, struct jdoc *d, const struct jdoc_val *o, size_t i,
                      struct engine_schema_change *c)
{
    char where[96];
    memset(c, 0, sizeof *c);
    if (!jdoc_is(o, JDOC_OBJECT) || jdoc_size(o) != 1) {
        http__reply_problem(r, 400,
                            "changes[%zu]: expected an object of one member: add, drop, rename, "
                            "widen or optional",
                            i);
        return false;
    }
    const struct jdoc_member *m = jdoc_member(o, 0);
    const char *op = m->key.u.s;
    const struct jdoc_val *v = &m->val;
    if (strcmp(op, "add") == 0) {
        static const char *const colf[] = {"name", "type", "required", "default", NULL};
        snprintf(where, sizeof where, "changes[%zu].add", i);
        if (!jdoc_is(v, JDOC_OBJECT)) {
            http__reply_problem(r, 400, "%s: expected a column object", where);
            return false;
        }
        if (!http__check_fields(r, v, colf, where))
            return false;
        const char *name = NULL;
        char w2[112];
        snprintf(w2, sizeof w2, "%s.name", where);
        if (!name_of(r, jdoc_get(v, "name"), w2, &name))
            return false;
        snprintf(w2, sizeof w2, "%s.type", where);
        if (!type_of(r, jdoc_get(v, "type"), w2, &c->col.type))
            return false;
        const struct jdoc_val *req = http__opt_value(v, "required");
        if (req != NULL && !jdoc_is(req, JDOC_BOOL)) {
            http__reply_problem(r, 400, "%s.required: expected a boolean", where);
            return false;
        }
        const struct jdoc_val *def = http__opt_value(v, "default");
        snprintf(w2, sizeof w2, "%s.default", where);
        if (def != NULL && !default_of(r, d, def, w2, &c->def_json))
            return false;
        c->op = ENGINE_SCHEMA_ADD;
        snprintf(c->col.name, sizeof c->col.name, "%s", name);
        c->col.required = jdoc_true(req);
        return true;
    }
    if (strcmp(op, "drop") == 0 || strcmp(op, "optional") == 0) {
        snprintf(where, sizeof where, "changes[%zu].%s", i, op);
        c->op = op[0] == 'd' ? ENGINE_SCHEMA_DROP : ENGINE_SCHEMA_OPTIONAL;
        return name_of(r, v, where, &c->column);
    }
    if (strcmp(op, "rename") == 0) {
        static const char *const rf[] = {"from", "to", NULL};
        snprintf(where, sizeof where, "changes[%zu].rename", i);
        if (!jdoc_is(v, JDOC_OBJECT)) {
            http__reply_problem(r, 400, "%s: expected {\"from\": name, \"to\": name}", where);
            return false;
        }
        char w2[112];
        c->op = ENGINE_SCHEMA_RENAME;
        if (!http__check_fields(r, v, rf, where))
            return false;
        snprintf(w2, sizeof w2, "%s.from", where);
        if (!name_of(r, jdoc_get(v, "from"), w2, &c->column))
            return false;
        snprintf(w2, sizeof w2, "%s.to", where);
        return name_of(r, jdoc_get(v, "to"), w2, &c->to);
    }
    if (strcmp(op, "widen") == 0) {
        static const char *const wf[] = {"column", "type", NULL};
        snprintf(where, sizeof where, "changes[%zu].widen", i);
        if (!jdoc_is(v, JDOC_OBJECT)) {
            http__reply_problem(r, 400, "%s: expected {\"column\": name, \"type\": type}", where);
            return false;
        }
        char w2[112];
        c->op = ENGINE_SCHEMA_WIDEN;
        if (!http__check_fields(r, v, wf, where))
            return false;
        snprintf(w2, sizeof w2, "%s.column", where);
        if (!name_of(r, jdoc_get(v, "column"), w2, &c->column))
            return false;
        snprintf(w2, sizeof w2, "%s.type", where);
        return type_of(r, jdoc_get(v, "type"), w2, &c->type);
    }
    http__reply_problem(r, 400,
                        "changes[%zu]: unknown change \"%.40s\" (add, drop, rename, widen, "
                        "optional)",
                        i, op);
    return false;
}

void http__job_schema(struct hreq *r)
{
    struct jdoc *d = http__body_jdoc(r, false, 0);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    static const char *const top[] = {"changes", "expected_schema_id", NULL};
    struct engine_alter_req q = {.table = r->table};
    struct engine_idem idem;
    bool has_expected = false;
    int64_t expected = 0;
    if (!http__check_fields(r, j, top, NULL) ||
        !http__opt_int(r, j, "expected_schema_id", &has_expected, &expected))
        goto out;
    if (has_expected && (expected < 0 || expected > INT32_MAX)) {
        http__reply_problem(r, 400, "expected_schema_id: from 0 to %d, got %lld", INT32_MAX,
                            (long long)expected);
        goto out;
    }
    q.has_expected_schema_id = has_expected;
    q.expected_schema_id = (int32_t)expected;
    const struct jdoc_val *jc = jdoc_get(j, "changes");
    if (jc == NULL || !jdoc_is(jc, JDOC_ARRAY)) {
        http__reply_problem(r, 400, "changes: %s",
                            jc ? "expected an array of changes" : "required");
        goto out;
    }
    size_t n = jdoc_size(jc);
    if (n == 0 || n > ENGINE_SCHEMA_CHANGES_MAX) {
        http__reply_problem(r, 400, "changes: from 1 to %d changes, got %zu",
                            ENGINE_SCHEMA_CHANGES_MAX, n);
        goto out;
    }
    struct engine_schema_change *ch = jdoc_alloc(d, n * sizeof *ch);
    for (size_t i = 0; i < n; i++)
        if (!change_of(r, d, jdoc_at(jc, i), i, &ch[i]))
            goto out;
    q.changes = ch;
    q.nchanges = n;
    if (r->idem_key != NULL) {
        idem.key = r->idem_key;
        engine_alter_digest(&q, idem.hash);
        q.idem = &idem;
    }
    struct engine_table *t = NULL;
    bool replayed = false;
    struct st_err err = {0};
    int rc = engine_alter_table(r->srv->app->engine, &q, &t, &replayed, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        goto out;
    }
    struct engine_table_stats stats;
    rc = engine_table_stats(r->srv->app->engine, t, &stats, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
    } else {
        http__reply_json(r, 200, http__table_json(t, &stats));
        if (replayed)
            http__reply_replayed(r);
    }
    engine_table_unref(t);
out:
    jdoc_free(d);
}

/* ---- /changes with "evolve": true ---------------------------------------------------- */

/* The type a column added for value `l` gets (false: a null tells nothing). */
static bool inferred_type(const struct st_literal *l, enum st_type *out)
{
    switch (l->kind) {
    case LIT_NULL:
        return false;
    case LIT_BOOL:
        *out = ST_T_BOOLEAN;
        return true;
    case LIT_INT:
        *out = ST_T_LONG;
        return true;
    case LIT_DOUBLE:
        *out = ST_T_DOUBLE;
        return true;
    case LIT_STRING:
        *out = ST_T_STRING;
        return true;
    }
    return false;
}

/* Column `name` of an upsert's object into adds[0..*n) unless t or adds has it. */
static bool evolve_note(struct hreq *r, const struct engine_table *t, const char *name,
                        const struct st_literal *l, struct engine_schema_change *adds, size_t *n)
{
    enum st_type type;
    if (!st_name_valid(name) || engine_table_column(t, name) >= 0 || !inferred_type(l, &type))
        return true; /* an invalid name or an all-null column: /changes words its refusal */
    for (size_t i = 0; i < *n; i++)
        if (strcmp(adds[i].col.name, name) == 0)
            return true;
    if (*n == ENGINE_SCHEMA_CHANGES_MAX) {
        http__reply_problem(r, 400, "evolve: more than %d new columns in one request",
                            ENGINE_SCHEMA_CHANGES_MAX);
        return false;
    }
    struct engine_schema_change *c = &adds[(*n)++];
    memset(c, 0, sizeof *c);
    c->op = ENGINE_SCHEMA_ADD;
    snprintf(c->col.name, sizeof c->col.name, "%s", name);
    c->col.type = type;
    return true;
}

bool http__evolve(struct hreq *r, const struct wire_change *w, size_t n)
{
    struct st_err err = {0};
    /* a schema change: the scope schema changes take (admin on the table) */
    int rc = auth_check_table(&r->auth, r->table, AUTH_ADMIN, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return false;
    }
    struct engine_schema_change *adds = xcalloc(ENGINE_SCHEMA_CHANGES_MAX, sizeof *adds);
    bool ok = true;
    /* a concurrent change moves the schema id: read the table again and retry */
    for (int attempt = 0; ok && attempt < 4; attempt++) {
        struct engine_table *t = NULL;
        if ((rc = engine_get_table(r->srv->app->engine, r->table, &t, &err)) != ST_OK) {
            http__reply_err(r, rc, &err);
            ok = false;
            break;
        }
        size_t nadd = 0;
        for (size_t i = 0; ok && i < n; i++) {
            const struct wire_obj *objs[2] = {&w[i].row, &w[i].after};
            for (int o = 0; ok && o < 2; o++)
                for (size_t k = 0; ok && objs[o]->present && k < objs[o]->n; k++)
                    ok = evolve_note(r, t, objs[o]->names[k], &objs[o]->lits[k], adds, &nadd);
        }
        if (!ok || nadd == 0) {
            engine_table_unref(t);
            break;
        }
        struct engine_alter_req q = {.table = r->table,
                                     .changes = adds,
                                     .nchanges = nadd,
                                     .has_expected_schema_id = true,
                                     .expected_schema_id = t->schema_id};
        struct engine_table *a = NULL;
        bool replayed = false;
        rc = engine_alter_table(r->srv->app->engine, &q, &a, &replayed, &err);
        engine_table_unref(t);
        engine_table_unref(a);
        if (rc == ST_OK)
            break;
        if (rc != ST_ECONFLICT || attempt == 3) {
            st_err_prefix(&err, "evolve");
            http__reply_err(r, rc, &err);
            ok = false;
        }
    }
    free(adds);
    return ok;
}
