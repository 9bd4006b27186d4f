/*
 * idem.c - Idempotency-Key records: the stored result of a mutating call,
 * its encoding, and its lookup (docs/API.md "Changes", engine.h engine_idem).
 *
 * A record is the engine's own encoding of the call's result struct, a
 * small versioned JSON object, stored with the operation's kind (column
 * `kind`: create, drop, changes, delete). No HTTP status, no wire format:
 * each front end renders a replayed struct as it renders a fresh one.
 *
 *   create   {"v":1,"id":..,"name":..,"uuid":..,"columns":[{"name","type","required"}],
 *             "primary_key":[..],"version_column":name|null,"seq":..,"created_us":..}
 *   drop     {"v":1}
 *   changes  {"v":1,"seq":..,"inserted":..,"updated":..,"deleted":..,"missing":..,
 *             "stale":..,"duplicate":bool}
 *   delete   {"v":1,"seq":..,"deleted":..}
 *   alter    as create; both give each column its field id ("id") and default
 *            ("default", when it has one), and the table its "schema_id"
 *
 * idem.c is the only writer and reader of strike.idempotency_keys: the
 * statements a commit pipelines (eng__sql_idem_select, eng__sql_idem_insert)
 * are defined here, and the one statement of a delete by keys, which
 * computes its result in SQL, stores idem.c's record through
 * eng__changes_record_format (the record's text as a format() string).
 *
 * Rows written before schema version 2 have no kind but an HTTP status and
 * the HTTP response body: 201 and the table's JSON, 204 and an empty body,
 * 200 and {"seq",...} of a change or delete result. Their field names are
 * the ones above, so one decoder reads both: the kind follows from the
 * status (200 is the kind of the call looking it up, changes or delete), a
 * table's created time comes from "created_at" (RFC 3339, microseconds)
 * and its id, which that body did not hold, is 0.
 */
#include "engine_int.h"

#include "common/buf.h"
#include "common/timeutil.h"
#include "common/uuid.h"

#include <assert.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDEM_RECORD_VERSION 1

static const char *const OP_NAMES[] = {"create", "drop", "changes", "delete", "alter"};

const char *eng__op_name(enum eng__op op)
{
    assert((size_t)op < sizeof OP_NAMES / sizeof OP_NAMES[0]);
    return OP_NAMES[op];
}

bool engine_idem_key_valid(const char *key)
{
    size_t n = strlen(key);
    bool ok = n > 0 && n <= ENGINE_IDEM_KEY_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = key[i] >= 0x21 && key[i] <= 0x7e;
    return ok;
}

/* ---- encoding -------------------------------------------------------------------- */

static json_t *table_record(const struct engine_table *t)
{
    json_t *cols = json_array();
    for (int i = 0; i < t->ncols; i++) {
        json_t *c = json_pack("{s:s, s:s, s:b, s:i}", "name", t->cols[i].name, "type",
                              st_type_name(t->cols[i].type), "required", t->cols[i].required, "id",
                              (int)t->cols[i].field_id);
        if (t->default_json != NULL && t->default_json[i] != NULL)
            json_object_set_new(c, "default",
                                json_loads(t->default_json[i], JSON_DECODE_ANY, NULL));
        json_array_append_new(cols, c);
    }
    json_t *pk = json_array();
    for (int i = 0; i < t->npk; i++)
        json_array_append_new(pk, json_string(t->cols[t->pk[i]].name));
    json_t *o =
        json_pack("{s:i, s:I, s:s, s:s, s:o, s:o, s:o, s:I, s:I}", "v", IDEM_RECORD_VERSION, "id",
                  (json_int_t)t->id, "name", t->name, "uuid", t->uuid, "columns", cols,
                  "primary_key", pk, "version_column",
                  t->version_col >= 0 ? json_string(t->cols[t->version_col].name) : json_null(),
                  "seq", (json_int_t)t->seq, "created_us", (json_int_t)t->created_us);
    json_object_set_new(o, "schema_id", json_integer(t->schema_id));
    return o;
}

char *eng__result_encode(const struct eng__result *r)
{
    /* the member of its kind is set (struct eng__result) */
    assert((r->op != ENG__OP_CREATE && r->op != ENG__OP_ALTER) ||
           (r->table != NULL && *r->table != NULL));
    assert(r->op != ENG__OP_CHANGES || r->changes != NULL);
    assert(r->op != ENG__OP_DELETE || r->del != NULL);
    json_t *o = NULL;
    switch (r->op) {
    case ENG__OP_CREATE:
    case ENG__OP_ALTER:
        o = table_record(*r->table);
        break;
    case ENG__OP_DROP:
        o = json_pack("{s:i}", "v", IDEM_RECORD_VERSION);
        break;
    case ENG__OP_CHANGES: {
        /* also the text of eng__changes_record_format, which a delete by keys in one statement
           fills in (commit_fast.c) */
        const struct engine_change_res *c = r->changes;
        o = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "v", IDEM_RECORD_VERSION, "seq",
                      (json_int_t)c->seq, "inserted", (json_int_t)c->inserted, "updated",
                      (json_int_t)c->updated, "deleted", (json_int_t)c->deleted, "missing",
                      (json_int_t)c->missing, "stale", (json_int_t)c->stale, "duplicate",
                      c->duplicate);
        break;
    }
    case ENG__OP_DELETE:
        o = json_pack("{s:i, s:I, s:I}", "v", IDEM_RECORD_VERSION, "seq", (json_int_t)r->del->seq,
                      "deleted", (json_int_t)r->del->deleted);
        break;
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

/* Values no other field of a change record holds (eng__changes_record_format). */
#define MARK_SEQ 7318052090000000001LL
#define MARK_DELETED 7318052090000000002LL
#define MARK_MISSING 7318052090000000003LL

char *eng__changes_record_format(const struct engine_change_res *known)
{
    struct engine_change_res c = *known;
    c.seq = MARK_SEQ;
    c.deleted = MARK_DELETED;
    c.missing = MARK_MISSING;
    struct eng__result r = {.op = ENG__OP_CHANGES, .changes = &c};
    char *text = eng__result_encode(&r);
    const int64_t marks[3] = {MARK_SEQ, MARK_DELETED, MARK_MISSING};
    char *f = pgu_format_template(text, marks, 3);
    free(text);
    return f;
}

/* ---- decoding -------------------------------------------------------------------- */

static bool get_int(json_t *o, const char *name, int64_t *out)
{
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v))
        return false;
    *out = (int64_t)json_integer_value(v);
    return true;
}

static int decode_table(json_t *o, struct engine_table **out, struct st_err *err)
{
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *uuid = json_string_value(json_object_get(o, "uuid"));
    json_t *vc = json_object_get(o, "version_column");
    int64_t seq, created = 0, id = 0;
    const char *created_at = json_string_value(json_object_get(o, "created_at"));
    if (name == NULL || uuid == NULL || strlen(uuid) != ST_UUID_STR_LEN ||
        !(vc == NULL || json_is_null(vc) || json_is_string(vc)) || !get_int(o, "seq", &seq) ||
        !(get_int(o, "created_us", &created) ||
          (created_at != NULL && st_parse_rfc3339(created_at, &created))))
        return st_errf(err, ST_EINTERNAL, "idempotency record: malformed table");
    get_int(o, "id", &id); /* absent in records written before schema version 2 */
    int rc =
        eng__table_from_json(name, json_object_get(o, "columns"), json_object_get(o, "primary_key"),
                             json_string_value(vc), out, err);
    if (rc != ST_OK)
        return rc;
    struct engine_table *t = *out;
    t->id = id;
    snprintf(t->uuid, sizeof t->uuid, "%s", uuid);
    t->seq = seq;
    t->created_us = created;
    int64_t sid = 0;
    if (get_int(o, "schema_id", &sid) && sid >= 0 && sid <= INT32_MAX)
        t->schema_id = (int32_t)sid;
    return ST_OK;
}

static int decode_changes(json_t *o, struct engine_change_res *c, struct st_err *err)
{
    json_t *dup = json_object_get(o, "duplicate");
    memset(c, 0, sizeof *c);
    if (!get_int(o, "seq", &c->seq) || !get_int(o, "inserted", &c->inserted) ||
        !get_int(o, "updated", &c->updated) || !get_int(o, "deleted", &c->deleted) ||
        !get_int(o, "missing", &c->missing) || !get_int(o, "stale", &c->stale) ||
        !json_is_boolean(dup))
        return st_errf(err, ST_EINTERNAL, "idempotency record: malformed change result");
    c->duplicate = json_is_true(dup);
    c->replayed = true;
    return ST_OK;
}

static int decode_delete(json_t *o, struct engine_delete_res *d, struct st_err *err)
{
    memset(d, 0, sizeof *d);
    if (!get_int(o, "seq", &d->seq) || !get_int(o, "deleted", &d->deleted))
        return st_errf(err, ST_EINTERNAL, "idempotency record: malformed delete result");
    d->replayed = true;
    return ST_OK;
}

/* The kind of a record: its `kind` column, or for an older row, its HTTP status. */
static bool record_op(const char *kind, int status, enum eng__op asked, enum eng__op *op)
{
    if (kind != NULL) {
        for (int i = 0; i < (int)(sizeof OP_NAMES / sizeof OP_NAMES[0]); i++)
            if (strcmp(kind, OP_NAMES[i]) == 0) {
                *op = (enum eng__op)i;
                return true;
            }
        return false;
    }
    switch (status) {
    case 201:
        *op = ENG__OP_CREATE;
        return true;
    case 204:
        *op = ENG__OP_DROP;
        return true;
    case 200:
        *op = asked == ENG__OP_DELETE ? ENG__OP_DELETE : ENG__OP_CHANGES;
        return true;
    }
    return false;
}

int eng__result_decode(struct eng__result *r, const char *kind, int status, const char *rec,
                       size_t len, struct st_err *err)
{
    enum eng__op op;
    if (!record_op(kind, status, r->op, &op))
        return st_errf(err, ST_EINTERNAL, "idempotency record: unknown kind \"%.20s\" (status %d)",
                       kind ? kind : "", status);
    if (op != r->op)
        return ST_EIDEMPOTENCY; /* the caller words it: the key names another request */
    if (op == ENG__OP_DROP && kind == NULL)
        return ST_OK; /* an older row: 204 and no body */
    json_error_t je;
    json_t *o = json_loadb(rec, len, 0, &je);
    int64_t v = 0;
    int rc;
    if (!json_is_object(o))
        rc = st_errf(err, ST_EINTERNAL, "idempotency record: not a JSON object");
    else if (get_int(o, "v", &v) && v != IDEM_RECORD_VERSION)
        rc = st_errf(err, ST_EINTERNAL,
                     "idempotency record: format %lld is newer than this striked knows",
                     (long long)v);
    else if (op == ENG__OP_CREATE || op == ENG__OP_ALTER)
        rc = decode_table(o, r->table, err);
    else if (op == ENG__OP_CHANGES)
        rc = decode_changes(o, r->changes, err);
    else if (op == ENG__OP_DELETE)
        rc = decode_delete(o, r->del, err);
    else
        rc = ST_OK;
    json_decref(o);
    return rc;
}

/* ---- the catalog --------------------------------------------------------------- */

const char *const eng__sql_idem_select =
    "SELECT key, request_hash, kind, status, response FROM strike.idempotency_keys WHERE scope = "
    "$1 AND key = ANY($2::text[])";
const char *const eng__sql_idem_insert =
    ENG__SQL_IDEM_INSERT "SELECT $1, k, h, $5, r FROM unnest($2::text[], $3::bytea[], $4::text[]) "
                         "AS u(k, h, r)";

void eng__idem_rows_begin(struct eng__idem_rows *rows, enum eng__op op, uint32_t n)
{
    assert(rows->n == 0 && rows->want == 0); /* one set of rows per commit attempt */
    rows->op = op;
    rows->want = n;
    pgu_array_begin(&rows->keys, PG_OID_TEXT, n);
    pgu_array_begin(&rows->hashes, PG_OID_BYTEA, n);
    pgu_array_begin(&rows->records, PG_OID_TEXT, n);
}

void eng__idem_rows_add(struct eng__idem_rows *rows, const struct engine_idem *idem,
                        const struct eng__result *res)
{
    assert(res->op == rows->op && rows->n < rows->want); /* the arrays' declared count */
    char *rec = eng__result_encode(res);
    pgu_array_bytes(&rows->keys, idem->key, strlen(idem->key));
    pgu_array_bytes(&rows->hashes, idem->hash, 32);
    pgu_array_bytes(&rows->records, rec, strlen(rec));
    free(rec);
    rows->n++;
}

void eng__idem_rows_free(struct eng__idem_rows *rows)
{
    buf_free(&rows->keys);
    buf_free(&rows->hashes);
    buf_free(&rows->records);
    rows->n = rows->want = 0;
}

int eng__idem_row(const PGresult *r, int row, int col, const struct engine_idem *idem,
                  struct eng__result *out, struct st_err *err)
{
    int rc = ST_EIDEMPOTENCY;
    if (PQgetlength(r, row, col) == 32 && memcmp(PQgetvalue(r, row, col), idem->hash, 32) == 0) {
        const char *kind = PQgetisnull(r, row, col + 1) ? NULL : PQgetvalue(r, row, col + 1);
        int status = PQgetisnull(r, row, col + 2)
                         ? 0
                         : (int)ld_u32be((const uint8_t *)PQgetvalue(r, row, col + 2));
        rc = eng__result_decode(out, kind, status, PQgetvalue(r, row, col + 3),
                                (size_t)PQgetlength(r, row, col + 3), err);
    }
    if (rc == ST_EIDEMPOTENCY)
        rc = st_errf(err, ST_EIDEMPOTENCY,
                     "Idempotency-Key \"%.100s\" was already used with a different request",
                     idem->key);
    return rc;
}

int eng__idem_lookup(PGconn *c, const char *scope, const struct engine_idem *idem,
                     struct eng__result *out, bool *found, struct st_err *err)
{
    *found = false;
    if (idem == NULL)
        return ST_OK;
    const char *params[2] = {scope, idem->key};
    PGresult *r = cat_pq_exec_params(c,
                                     "SELECT request_hash, kind, status, response FROM "
                                     "strike.idempotency_keys WHERE scope = $1 AND key = $2",
                                     2, NULL, params, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = cat_fail(c, r, "reading the idempotency key", err);
        PQclear(r);
        return rc;
    }
    int rc = ST_OK;
    if (PQntuples(r) == 1) {
        rc = eng__idem_row(r, 0, 0, idem, out, err);
        *found = rc == ST_OK;
    }
    PQclear(r);
    return rc;
}

int eng__idem_store(PGconn *c, const char *scope, const struct engine_idem *idem,
                    const struct eng__result *res, struct st_err *err)
{
    if (idem == NULL)
        return ST_OK;
    char *rec = eng__result_encode(res);
    const char *params[5] = {scope, idem->key, (const char *)idem->hash, eng__op_name(res->op),
                             rec};
    int lengths[5] = {0, 0, 32, 0, 0};
    int formats[5] = {0, 0, 1, 0, 0};
    PGresult *r = cat_pq_exec_params(
        c, ENG__SQL_IDEM_INSERT "VALUES ($1, $2, $3, $4, $5)" ENG__SQL_IDEM_KEPT " RETURNING 1", 5,
        NULL, params, lengths, formats, 0);
    free(rec);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = cat_fail(c, r, "storing the idempotency key", err);
    else if (PQntuples(r) == 0)
        rc = ST_ECONFLICT; /* a concurrent request with the same key won */
    PQclear(r);
    return rc;
}

int eng__idem_forget_scope(PGconn *c, const char *scope, struct st_err *err)
{
    const char *v[1] = {scope};
    PGresult *r = cat_pq_exec_params(c, "DELETE FROM strike.idempotency_keys WHERE scope = $1", 1,
                                     NULL, v, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK
                 ? ST_OK
                 : cat_fail(c, r, "dropping the table's idempotency keys", err);
    PQclear(r);
    return rc;
}

int eng__idem_expire(PGconn *c, struct st_err *err)
{
    PGresult *r = cat_pq_exec(c, "DELETE FROM strike.idempotency_keys WHERE created_at < now() - "
                                 "interval '" ENG__IDEM_RETAIN "'");
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK
                 ? ST_OK
                 : cat_fail(c, r, "expiring idempotency keys", err);
    PQclear(r);
    return rc;
}

int eng__idem_commit(PGconn *c, const char *scope, const struct engine_idem *idem,
                     const struct eng__result *res, struct st_err *err)
{
    int rc = eng__idem_store(c, scope, idem, res, err);
    if (rc == ST_OK)
        rc = cat_exec(c, "COMMIT", "commit", err);
    if (rc != ST_OK)
        pgu_rollback(c); /* ST_ECONFLICT: the same key committed concurrently */
    return rc;
}
