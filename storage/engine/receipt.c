/*
 * receipt.c - erasure receipts in the catalog (strike.erasures.receipt):
 * the engine's encoding of struct engine_erasure, its decoder, and the
 * reads of receipts (engine_get_erasure, engine_list_erasures). No wire
 * format: each front end renders the struct (docs/API.md "Maintenance").
 *
 * The record is a small versioned JSON object, text (a row keeps the bytes
 * it was given):
 *
 *   {"v":1,"id","table","status","key_digest","keys","rows_erased",
 *    "row_versions_purged","delete_seq","rewrite_seq":n|null,
 *    "expired_snapshots","files_rewritten","files_deleted","bytes_deleted",
 *    "checks":[{"check":name,"passed":bool,<figure>:n|"text",...}],
 *    "verified_us":n|null}
 *
 * "row_versions_purged" came later (an optional member, so the version stays
 * 1 and a striked of either side reads the other's records): a record
 * without it decodes with has_row_versions_purged false.
 *
 * A check object holds at most RECEIPT_FIGURES_V1 figures, what a striked
 * from before data_files' fourth figure (files_excluded_by_statistics) reads
 * (more is a malformed record to it); a check's later figures go to the
 * optional member "checks_more", after "checks": an array of one object per
 * check, in the same order (an empty one for a check without more), written
 * only when some check has more. An older striked ignores it and reads the
 * first figures; this one appends them to their check.
 *
 * A row written before it holds the receipt as it was answered: no "v",
 * "verified_at" (RFC 3339) instead of "verified_us", each check's figures
 * before "check" and "passed"; the decoder reads both. A row whose erasure
 * has just begun holds {} (nothing recorded yet).
 */
#include "engine_int.h"

#include "common/timeutil.h"
#include "common/uuid.h"
#include "common/xalloc.h"

#include <assert.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECEIPT_VERSION 1
/* Figures a check object of the record holds (the others go to "checks_more"). */
#define RECEIPT_FIGURES_V1 3

char *eng__receipt_encode(const struct engine_erasure *r)
{
    assert(r->recorded); /* a receipt is recorded from the erasure's first step on */
    assert(r->nchecks >= 0 && r->nchecks <= ENGINE_ERASURE_CHECKS_MAX);
    json_t *checks = json_array(), *more = json_array();
    bool any_more = false;
    for (int i = 0; i < r->nchecks; i++) {
        const struct engine_erasure_check *c = &r->checks[i];
        assert(c->nfigures >= 0 && c->nfigures <= ENGINE_ERASURE_FIGURES_MAX);
        json_t *o = json_pack("{s:s, s:b}", "check", c->name, "passed", c->passed);
        json_t *m = json_object();
        for (int k = 0; k < c->nfigures; k++) {
            const struct engine_erasure_figure *f = &c->figures[k];
            json_object_set_new(k < RECEIPT_FIGURES_V1 ? o : m, f->name,
                                f->is_text ? json_string(f->text) : json_integer(f->n));
        }
        any_more = any_more || c->nfigures > RECEIPT_FIGURES_V1;
        json_array_append_new(checks, o);
        json_array_append_new(more, m);
    }
    json_t *o = json_object();
    json_object_set_new(o, "v", json_integer(RECEIPT_VERSION));
    json_object_set_new(o, "id", json_string(r->id));
    json_object_set_new(o, "table", json_string(r->table));
    json_object_set_new(o, "status", json_string(r->status));
    json_object_set_new(o, "key_digest", json_string(r->key_digest));
    json_object_set_new(o, "keys", json_integer(r->keys));
    json_object_set_new(o, "rows_erased", json_integer(r->rows_erased));
    if (r->has_row_versions_purged)
        json_object_set_new(o, "row_versions_purged", json_integer(r->row_versions_purged));
    json_object_set_new(o, "delete_seq", json_integer(r->delete_seq));
    json_object_set_new(o, "rewrite_seq",
                        r->has_rewrite_seq ? json_integer(r->rewrite_seq) : json_null());
    json_object_set_new(o, "expired_snapshots", json_integer(r->expired_snapshots));
    json_object_set_new(o, "files_rewritten", json_integer(r->files_rewritten));
    json_object_set_new(o, "files_deleted", json_integer(r->files_deleted));
    json_object_set_new(o, "bytes_deleted", json_integer(r->bytes_deleted));
    json_object_set_new(o, "checks", checks);
    if (any_more)
        json_object_set_new(o, "checks_more", more);
    else
        json_decref(more);
    json_object_set_new(o, "verified_us",
                        r->verified_us > 0 ? json_integer(r->verified_us) : json_null());
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

/* ---- decoding ---------------------------------------------------------------------- */

/* A string member into out (false: absent, not a string, or longer than out holds). */
static bool get_str(json_t *o, const char *name, char *out, size_t cap)
{
    const char *s = json_string_value(json_object_get(o, name));
    if (s == NULL || strlen(s) >= cap)
        return false;
    memcpy(out, s, strlen(s) + 1);
    return true;
}

static bool get_int(json_t *o, const char *name, int64_t *out)
{
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v))
        return false;
    *out = (int64_t)json_integer_value(v);
    return true;
}

/* The members of object o but "check" and "passed", as figures appended to c's. */
static bool decode_figures(json_t *o, struct engine_erasure_check *c)
{
    if (!json_is_object(o))
        return false;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (strcmp(k, "check") == 0 || strcmp(k, "passed") == 0)
            continue;
        if (c->nfigures >= ENGINE_ERASURE_FIGURES_MAX || strlen(k) >= sizeof c->figures[0].name)
            return false;
        struct engine_erasure_figure *f = &c->figures[c->nfigures++];
        memcpy(f->name, k, strlen(k) + 1);
        if (json_is_integer(v)) {
            f->n = (int64_t)json_integer_value(v);
        } else if (json_is_string(v) && strlen(json_string_value(v)) < sizeof f->text) {
            f->is_text = true;
            memcpy(f->text, json_string_value(v), strlen(json_string_value(v)) + 1);
        } else {
            return false;
        }
    }
    return true;
}

static bool decode_check(json_t *o, struct engine_erasure_check *c)
{
    json_t *passed = json_object_get(o, "passed");
    if (!json_is_object(o) || !get_str(o, "check", c->name, sizeof c->name) ||
        !json_is_boolean(passed))
        return false;
    c->passed = json_is_true(passed);
    return decode_figures(o, c);
}

static bool decode_fields(json_t *o, struct engine_erasure *r)
{
    json_t *rw = json_object_get(o, "rewrite_seq");
    json_t *checks = json_object_get(o, "checks");
    if (!get_str(o, "table", r->table, sizeof r->table) ||
        !get_str(o, "status", r->status, sizeof r->status) ||
        !get_str(o, "key_digest", r->key_digest, sizeof r->key_digest) ||
        !get_int(o, "keys", &r->keys) || !get_int(o, "rows_erased", &r->rows_erased) ||
        !get_int(o, "delete_seq", &r->delete_seq) ||
        !get_int(o, "expired_snapshots", &r->expired_snapshots) ||
        !get_int(o, "files_rewritten", &r->files_rewritten) ||
        !get_int(o, "files_deleted", &r->files_deleted) ||
        !get_int(o, "bytes_deleted", &r->bytes_deleted) ||
        !(json_is_null(rw) || json_is_integer(rw)) || !json_is_array(checks) ||
        json_array_size(checks) > ENGINE_ERASURE_CHECKS_MAX)
        return false;
    json_t *purged = json_object_get(o, "row_versions_purged");
    if (purged != NULL && !json_is_integer(purged))
        return false;
    r->has_row_versions_purged = purged != NULL;
    r->row_versions_purged = purged != NULL ? (int64_t)json_integer_value(purged) : 0;
    r->has_rewrite_seq = json_is_integer(rw);
    r->rewrite_seq = r->has_rewrite_seq ? (int64_t)json_integer_value(rw) : 0;
    for (size_t i = 0; i < json_array_size(checks); i++)
        if (!decode_check(json_array_get(checks, i), &r->checks[r->nchecks++]))
            return false;
    json_t *more = json_object_get(o, "checks_more"); /* the later figures of each check */
    if (more != NULL && !(json_is_array(more) && json_array_size(more) <= (size_t)r->nchecks))
        return false;
    for (size_t i = 0; i < json_array_size(more); i++)
        if (!decode_figures(json_array_get(more, i), &r->checks[i]))
            return false;
    /* when it verified: microseconds, or as it was answered before (RFC 3339); null: not */
    json_t *us = json_object_get(o, "verified_us");
    json_t *at = json_object_get(o, "verified_at");
    if (json_is_integer(us))
        r->verified_us = (int64_t)json_integer_value(us);
    else if (json_is_string(at))
        return st_parse_rfc3339(json_string_value(at), &r->verified_us) && r->verified_us > 0;
    else if (!(json_is_null(us) || json_is_null(at)))
        return false;
    return true;
}

int eng__receipt_decode(const char *id, const char *rec, struct engine_erasure *out,
                        struct st_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->id, sizeof out->id, "%s", id);
    json_error_t je;
    json_t *o = json_loads(rec, 0, &je);
    int64_t v = 0;
    int rc = ST_OK;
    if (!json_is_object(o))
        rc = st_errf(err, ST_EINTERNAL, "erasure %s: its receipt is not a JSON object", id);
    else if (get_int(o, "v", &v) && v != RECEIPT_VERSION)
        rc = st_errf(err, ST_EINTERNAL,
                     "erasure %s: receipt format %lld is newer than this striked knows", id,
                     (long long)v);
    else if (json_object_size(o) > 0 && !(out->recorded = decode_fields(o, out)))
        rc = st_errf(err, ST_EINTERNAL, "erasure %s: malformed receipt", id);
    json_decref(o);
    if (rc != ST_OK)
        memset(out, 0, sizeof *out);
    return rc;
}

/* ---- reads ----------------------------------------------------------------------------- */

void engine_erasure_free(struct engine_erasure *r)
{
    if (r != NULL)
        memset(r, 0, sizeof *r);
}

int engine_get_erasure(struct engine *e, const struct engine_table *t, const char *id,
                       struct engine_erasure *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    uint8_t u[16];
    if (!st_uuid_parse(id, u))
        return st_errf(err, ST_ENOTFOUND, "no erasure %.64s in table \"%s\"", id, t->name);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num tid;
    const char *v[2] = {pgu_i64(&tid, t->id), id};
    PGresult *r = cat_pq_exec_params(
        c, "SELECT id::text, receipt FROM strike.erasures WHERE table_id = $1 AND id = $2::uuid", 2,
        NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = cat_fail(c, r, "reading an erasure", err);
    else if (PQntuples(r) == 0)
        rc = st_errf(err, ST_ENOTFOUND, "no erasure %s in table \"%s\"", id, t->name);
    else
        rc = eng__receipt_decode(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), out, err);
    PQclear(r);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

int engine_list_erasures(struct engine *e, const struct engine_table *t, int64_t limit,
                         const char *after, struct engine_erasure **out, size_t *n, char *next,
                         size_t next_len, struct st_err *err)
{
    *out = NULL;
    *n = 0;
    next[0] = 0;
    uint8_t u[16];
    if (after != NULL && !st_uuid_parse(after, u))
        return st_errf(err, ST_EINVAL, "after: not an erasure id: %.64s", after);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num tid, lim;
    const char *v[3] = {pgu_i64(&tid, t->id), pgu_i64(&lim, limit + 1), after};
    /* ids are UUIDv7: their order is their creation order */
    PGresult *r = cat_pq_exec_params(c,
                                     "SELECT id::text, receipt FROM strike.erasures WHERE "
                                     "table_id = $1 AND ($3::uuid IS NULL OR id > $3::uuid) "
                                     "ORDER BY id LIMIT $2",
                                     3, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "listing erasures", err);
    } else {
        int rows = PQntuples(r);
        size_t got = (size_t)(rows < limit ? rows : limit);
        struct engine_erasure *list = xcalloc(got ? got : 1, sizeof *list);
        for (size_t i = 0; i < got && rc == ST_OK; i++)
            rc = eng__receipt_decode(PQgetvalue(r, (int)i, 0), PQgetvalue(r, (int)i, 1), &list[i],
                                     err);
        if (rc == ST_OK && rows > limit)
            snprintf(next, next_len, "%s", PQgetvalue(r, (int)limit - 1, 0));
        if (rc == ST_OK && got > 0) {
            *out = list;
            *n = got;
        } else {
            free(list);
        }
    }
    PQclear(r);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}
