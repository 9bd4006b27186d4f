/*
 * grpc_rpc.c - the RPCs of strike.v1.Strike: request -> engine call -> reply.
 *
 * The same engine calls, the same changeset_build() and filter_parse() as
 * HTTP, so the two APIs cannot drift; a failure's status message is the
 * engine's err.msg, which HTTP sends as the problem's `detail`.
 *
 * Every handler runs on a worker (blocking is fine) except the `fast`
 * ones, which answer from the engine's caches on the completion-queue
 * thread or leave the call to the worker. Each request is unpacked into a
 * per-call arena that also holds the reply, freed in one shot.
 *
 * Idempotency-Key: the `idempotency-key` metadata; the request hash is the
 * service's hash of the decoded request (svc_idem_*, as HTTP's), so a key
 * first used over HTTP replays over gRPC and the reverse. The engine
 * replays the first call's result struct, which is rendered like a fresh one.
 */
#include "grpc_conv.h"
#include "grpc_int.h"
#include "http.h"
#include "service.h"

#include "app.h"
#include "cdc.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "engine/engine.h"
#include "expr/filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_BATCH_ROWS 4096        /* rows per ScanBatch at most */
#define SCAN_BATCH_BYTES (1u << 20) /* a batch closes once past this size */

static struct engine *engine_of(struct rpc *r)
{
    return rpc_app(r)->engine;
}

/* The request as a message of type `d` in `a`, or NULL after failing the call. */
static void *unpack(struct rpc *r, const ProtobufCMessageDescriptor *d, struct garena *a)
{
    size_t n;
    const uint8_t *p = rpc_payload(r, &n);
    if (p == NULL) {
        rpc_fail(r, ST_EINVAL, "the request carries no readable message");
        return NULL;
    }
    struct st_err err = {0};
    ProtobufCMessage *m = gconv_unpack(d, p, n, a, &err);
    if (m == NULL)
        rpc_fail(r, err.code, err.msg);
    return m;
}

/*
 * The call's Idempotency-Key (*key NULL without one), for svc_idem_* once
 * the request is decoded. False after failing the call (a malformed key).
 */
static bool idem_key_of(struct rpc *r, const char **key)
{
    *key = rpc_idem_key(r);
    if (*key != NULL && !engine_idem_key_valid(*key)) {
        rpc_fail(r, ST_EINVAL, "idempotency-key: 1 to 255 visible ASCII characters");
        return false;
    }
    return true;
}

/* Fail the call with err unless rc is ST_OK; true when it failed. */
static bool failed(struct rpc *r, int rc, const struct st_err *err)
{
    if (rc == ST_OK)
        return false;
    rpc_fail(r, rc, err->msg[0] ? err->msg : NULL);
    return true;
}

/* ---- tables ---------------------------------------------------------------------- */

/* A proto3 string as the service takes it: "" is absent (proto3 cannot tell them apart). */
static const char *opt_str(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : NULL;
}

/* A oneof count as the service takes it. */
static struct svc_count count_of(bool has, int64_t v)
{
    return (struct svc_count){.has = has, .v = v};
}

static void h_create_table(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct engine_idem ib;
    const char *key;
    struct svc_table_res res = {0};
    Strike__V1__CreateTableRequest *q =
        unpack(r, &strike__v1__create_table_request__descriptor, &a);
    if (q == NULL || !idem_key_of(r, &key))
        goto out;
    struct svc_column *cols = garena_alloc(&a, (q->n_columns ? q->n_columns : 1) * sizeof *cols);
    for (size_t i = 0; i < q->n_columns; i++)
        cols[i] = (struct svc_column){opt_str(q->columns[i]->name), opt_str(q->columns[i]->type),
                                      q->columns[i]->required != 0};
    struct svc_create_req cq = {
        .name = opt_str(q->name),
        .cols = cols,
        .ncols = q->n_columns,
        .pk = (const char *const *)q->primary_key,
        .npk = q->n_primary_key,
        .version_column = opt_str(q->version_column),
    };
    cq.idem = svc_idem_create(&cq, key, &ib);
    if (failed(r, svc_create_table(engine_of(r), &cq, &res, &err), &err))
        goto out;
    Strike__V1__Table msg;
    gconv_table(res.table, NULL, &a, &msg);
    rpc_reply(r, &msg.base);
out:
    svc_table_res_clear(&res);
    garena_free(&a);
}

static void h_get_table(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct svc_table_res res = {0};
    Strike__V1__GetTableRequest *q = unpack(r, &strike__v1__get_table_request__descriptor, &a);
    if (q == NULL || failed(r, svc_get_table(engine_of(r), q->name, &res, &err), &err))
        goto out;
    Strike__V1__Table msg;
    gconv_table(res.table, &res.stats, &a, &msg);
    rpc_reply(r, &msg.base);
out:
    svc_table_res_clear(&res);
    garena_free(&a);
}

static void h_list_tables(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct svc_table_list l = {0};
    if (unpack(r, &strike__v1__list_tables_request__descriptor, &a) == NULL ||
        failed(r, svc_list_tables(engine_of(r), &l, &err), &err))
        goto out;
    size_t n = l.n;
    Strike__V1__ListTablesResponse msg = STRIKE__V1__LIST_TABLES_RESPONSE__INIT;
    msg.tables = garena_alloc(&a, (n ? n : 1) * sizeof *msg.tables);
    Strike__V1__Table *tm = garena_alloc(&a, (n ? n : 1) * sizeof *tm);
    for (size_t i = 0; i < n; i++) {
        /* only the tables the token may read (docs/API.md "Auth") */
        if (!auth_may(rpc_auth(r), l.tables[i]->name, AUTH_READ))
            continue;
        gconv_table(l.tables[i], NULL, &a, &tm[msg.n_tables]);
        msg.tables[msg.n_tables] = &tm[msg.n_tables];
        msg.n_tables++;
    }
    rpc_reply(r, &msg.base);
out:
    svc_table_list_clear(&l);
    garena_free(&a);
}

static void h_drop_table(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct engine_idem ib;
    const char *key;
    bool replayed;
    Strike__V1__DropTableRequest *q = unpack(r, &strike__v1__drop_table_request__descriptor, &a);
    if (q == NULL || !idem_key_of(r, &key) ||
        failed(r,
               svc_drop_table(engine_of(r), q->name, svc_idem_drop(q->name, key, &ib), &replayed,
                              &err),
               &err))
        goto out;
    Strike__V1__DropTableResponse msg = STRIKE__V1__DROP_TABLE_RESPONSE__INIT;
    rpc_reply(r, &msg.base);
out:
    garena_free(&a);
}

/* One SchemaChange into the engine's change (strings borrowed from the request). */
static int alter_change_of(const Strike__V1__SchemaChange *m, size_t i,
                           struct engine_schema_change *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    switch (m->change_case) {
    case STRIKE__V1__SCHEMA_CHANGE__CHANGE_ADD: {
        const Strike__V1__Column *c = m->add;
        const char *name = opt_str(c->name), *type = opt_str(c->type);
        out->op = ENGINE_SCHEMA_ADD;
        if (name == NULL || !st_name_valid(name))
            return st_errf(err, ST_EINVAL,
                           "changes[%zu].add.name: \"%.128s\" is not a valid column name "
                           "([A-Za-z_][A-Za-z0-9_]{0,127})",
                           i, name ? name : "");
        if (type == NULL || !st_type_parse(type, &out->col.type))
            return st_errf(err, ST_EINVAL,
                           "changes[%zu].add.type: \"%.40s\" is not a type (boolean, int, long, "
                           "double, string, timestamp)",
                           i, type ? type : "");
        snprintf(out->col.name, sizeof out->col.name, "%s", name);
        out->col.required = c->required;
        out->def_json = opt_str(m->default_json);
        return ST_OK;
    }
    case STRIKE__V1__SCHEMA_CHANGE__CHANGE_DROP:
        out->op = ENGINE_SCHEMA_DROP;
        out->column = opt_str(m->drop);
        break;
    case STRIKE__V1__SCHEMA_CHANGE__CHANGE_RENAME:
        out->op = ENGINE_SCHEMA_RENAME;
        out->column = opt_str(m->rename->from);
        out->to = opt_str(m->rename->to);
        if (out->to == NULL || !st_name_valid(out->to))
            return st_errf(err, ST_EINVAL,
                           "changes[%zu].rename.to: \"%.128s\" is not a valid column name "
                           "([A-Za-z_][A-Za-z0-9_]{0,127})",
                           i, out->to ? out->to : "");
        break;
    case STRIKE__V1__SCHEMA_CHANGE__CHANGE_WIDEN: {
        const char *type = opt_str(m->widen->type);
        out->op = ENGINE_SCHEMA_WIDEN;
        out->column = opt_str(m->widen->column);
        if (type == NULL || !st_type_parse(type, &out->type))
            return st_errf(err, ST_EINVAL,
                           "changes[%zu].widen.type: \"%.40s\" is not a type (boolean, int, "
                           "long, double, string, timestamp)",
                           i, type ? type : "");
        break;
    }
    case STRIKE__V1__SCHEMA_CHANGE__CHANGE_OPTIONAL:
        out->op = ENGINE_SCHEMA_OPTIONAL;
        out->column = opt_str(m->optional);
        break;
    default:
        return st_errf(err, ST_EINVAL,
                       "changes[%zu]: one of add, drop, rename, widen or optional is required", i);
    }
    if (out->column == NULL)
        return st_errf(err, ST_EINVAL, "changes[%zu]: the column's name is required", i);
    if (m->default_json != NULL && m->default_json[0] != '\0')
        return st_errf(err, ST_EINVAL, "changes[%zu].default_json: only an add takes a default", i);
    return ST_OK;
}

static void h_alter_table(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct engine_table *t = NULL;
    struct engine_idem idem;
    const char *key;
    bool replayed = false;
    Strike__V1__AlterTableRequest *q = unpack(r, &strike__v1__alter_table_request__descriptor, &a);
    if (q == NULL || !idem_key_of(r, &key))
        goto out;
    if (q->n_changes == 0 || q->n_changes > ENGINE_SCHEMA_CHANGES_MAX) {
        rpc_fail(r, ST_EINVAL,
                 q->n_changes == 0 ? "changes: at least one change is required"
                                   : "changes: more than 256 changes");
        goto out;
    }
    struct engine_schema_change *ch = garena_alloc(&a, q->n_changes * sizeof *ch);
    for (size_t i = 0; i < q->n_changes; i++)
        if (failed(r, alter_change_of(q->changes[i], i, &ch[i], &err), &err))
            goto out;
    struct engine_alter_req aq = {
        .table = q->table,
        .changes = ch,
        .nchanges = q->n_changes,
        .has_expected_schema_id =
            q->expected_schema_id_present_case ==
            STRIKE__V1__ALTER_TABLE_REQUEST__EXPECTED_SCHEMA_ID_PRESENT_EXPECTED_SCHEMA_ID,
        .expected_schema_id = q->expected_schema_id,
    };
    if (key != NULL) {
        idem.key = key;
        engine_alter_digest(&aq, idem.hash);
        aq.idem = &idem;
    }
    if (failed(r, engine_alter_table(engine_of(r), &aq, &t, &replayed, &err), &err))
        goto out;
    Strike__V1__Table msg;
    gconv_table(t, NULL, &a, &msg);
    rpc_reply(r, &msg.base);
out:
    engine_table_unref(t);
    garena_free(&a);
}

/* ---- changes and deletes ----------------------------------------------------------- */

static void h_apply_changes(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct engine_idem ib;
    const char *key;
    Strike__V1__ApplyChangesRequest *q =
        unpack(r, &strike__v1__apply_changes_request__descriptor, &a);
    if (q == NULL || !idem_key_of(r, &key))
        goto out;
    struct svc_changes_req cq = {
        .table = q->table,
        .nchanges = q->n_changes,
        .producer = opt_str(q->producer),
        .offset = count_of(q->offset_present_case ==
                               STRIKE__V1__APPLY_CHANGES_REQUEST__OFFSET_PRESENT_OFFSET,
                           q->offset),
        .expected_seq =
            count_of(q->expected_seq_present_case ==
                         STRIKE__V1__APPLY_CHANGES_REQUEST__EXPECTED_SEQ_PRESENT_EXPECTED_SEQ,
                     q->expected_seq),
    };
    struct wire_change *w;
    if (failed(r, gconv_changes(q, &a, &w, &err), &err))
        goto out;
    cq.changes = w;
    cq.idem = svc_idem_changes(&cq, key, &ib);
    struct engine_change_res res;
    if (failed(r, svc_apply_changes(engine_of(r), &cq, &res, &err), &err))
        goto out;
    Strike__V1__ApplyChangesResponse msg = STRIKE__V1__APPLY_CHANGES_RESPONSE__INIT;
    msg.seq = res.seq;
    msg.inserted = res.inserted;
    msg.updated = res.updated;
    msg.deleted = res.deleted;
    msg.missing = res.missing;
    msg.stale = res.stale;
    msg.duplicate = res.duplicate;
    rpc_reply(r, &msg.base);
out:
    garena_free(&a);
}

static void h_apply_debezium(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct svc_cdc_res res = {0};
    const struct config *cfg = rpc_app(r)->cfg;
    Strike__V1__ApplyDebeziumRequest *q =
        unpack(r, &strike__v1__apply_debezium_request__descriptor, &a);
    if (q == NULL)
        goto out;
    if (opt_str(q->content_type) != NULL && !cdc_media_ok(q->content_type)) {
        rpc_fail(r, ST_EINVAL,
                 "content_type: must be application/json, application/x-ndjson or "
                 "application/cloudevents+json");
        goto out;
    }
    struct svc_cdc_route *routes =
        garena_alloc(&a, (cfg->ncdc_routes ? cfg->ncdc_routes : 1) * sizeof *routes);
    for (size_t i = 0; i < cfg->ncdc_routes; i++)
        routes[i] = (struct svc_cdc_route){cfg->cdc_routes[i].source, cfg->cdc_routes[i].table};
    struct svc_cdc_req cq = {
        .body = q->body.data,
        .len = q->body.len,
        .content_type = opt_str(q->content_type),
        .table = opt_str(q->table),
        .routes = routes,
        .nroutes = cfg->ncdc_routes,
        .auth = rpc_auth(r),
        .schema = svc_cdc_schema_of(cfg->cdc_schema),
    };
    if (failed(r, svc_cdc_apply(engine_of(r), &cq, &res, &err), &err))
        goto out;
    Strike__V1__ApplyDebeziumResponse msg = STRIKE__V1__APPLY_DEBEZIUM_RESPONSE__INIT;
    Strike__V1__DebeziumTableResult *tr = garena_alloc(&a, (res.n ? res.n : 1) * sizeof *tr);
    Strike__V1__DebeziumTableResult **tp = garena_alloc(&a, (res.n ? res.n : 1) * sizeof *tp);
    for (size_t i = 0; i < res.n; i++) {
        const struct svc_cdc_table *t = &res.tables[i];
        strike__v1__debezium_table_result__init(&tr[i]);
        tr[i].table = res.tables[i].name;
        tr[i].seq = t->seq;
        tr[i].inserted = t->inserted;
        tr[i].updated = t->updated;
        tr[i].deleted = t->deleted;
        tr[i].duplicates = t->duplicates;
        tr[i].schema_changes = t->schema_changes;
        tr[i].ignored = t->ignored;
        tr[i].schema_id = t->schema_id;
        tp[i] = &tr[i];
    }
    msg.n_tables = res.n;
    msg.tables = tp;
    msg.no_change = res.no_change;
    rpc_reply(r, &msg.base);
out:
    svc_cdc_res_clear(&res);
    garena_free(&a);
}

static void h_delete_where(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct engine_idem ib;
    const char *key;
    Strike__V1__DeleteWhereRequest *q =
        unpack(r, &strike__v1__delete_where_request__descriptor, &a);
    if (q == NULL || !idem_key_of(r, &key))
        goto out;
    struct svc_delete_req dq = {
        .table = q->table,
        .filter.text = q->filter,
        .expected_seq =
            count_of(q->expected_seq_present_case ==
                         STRIKE__V1__DELETE_WHERE_REQUEST__EXPECTED_SEQ_PRESENT_EXPECTED_SEQ,
                     q->expected_seq),
    };
    dq.idem = svc_idem_delete(&dq, key, &ib);
    struct engine_delete_res res;
    if (failed(r, svc_delete_where(engine_of(r), &dq, &res, &err), &err))
        goto out;
    Strike__V1__DeleteWhereResponse msg = STRIKE__V1__DELETE_WHERE_RESPONSE__INIT;
    msg.seq = res.seq;
    msg.deleted = res.deleted;
    rpc_reply(r, &msg.base);
out:
    garena_free(&a);
}

/* ---- maintenance ---------------------------------------------------------------------- */

static void h_compact(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    Strike__V1__CompactRequest *q = unpack(r, &strike__v1__compact_request__descriptor, &a);
    if (q == NULL)
        goto out;
    struct svc_compact_req cq = {
        .table = q->table,
        .has_min_deleted_fraction =
            q->min_deleted_fraction_present_case ==
            STRIKE__V1__COMPACT_REQUEST__MIN_DELETED_FRACTION_PRESENT_MIN_DELETED_FRACTION,
        .min_deleted_fraction = q->min_deleted_fraction,
        .target_file_rows =
            count_of(q->target_file_rows_present_case ==
                         STRIKE__V1__COMPACT_REQUEST__TARGET_FILE_ROWS_PRESENT_TARGET_FILE_ROWS,
                     q->target_file_rows),
    };
    struct engine_compact_res res;
    if (failed(r, svc_compact(engine_of(r), &cq, &res, &err), &err))
        goto out;
    Strike__V1__CompactResponse msg = STRIKE__V1__COMPACT_RESPONSE__INIT;
    msg.seq = res.seq;
    msg.rewritten_files = res.rewritten_files;
    msg.written_files = res.written_files;
    msg.rows_dropped = res.rows_dropped;
    msg.rows_moved = res.rows_moved;
    rpc_reply(r, &msg.base);
out:
    garena_free(&a);
}

/* An erasure's receipt as an EraseResponse; receipt_json is the receipt as HTTP answers it. */
static void reply_erasure(struct rpc *r, const struct engine_erasure *er)
{
    Strike__V1__EraseResponse msg = STRIKE__V1__ERASE_RESPONSE__INIT;
    char verified[ST_RFC3339_MAX] = "";
    if (er->verified_us > 0)
        st_format_rfc3339(er->verified_us, verified);
    char *json = http__erasure_json(er);
    msg.id = (char *)er->id;
    msg.status = (char *)er->status;
    msg.table = (char *)er->table;
    msg.key_digest = (char *)er->key_digest;
    msg.verified_at = verified;
    msg.delete_seq = er->delete_seq;
    msg.rewrite_seq = er->has_rewrite_seq ? er->rewrite_seq : 0;
    msg.expired_snapshots = er->expired_snapshots;
    msg.files_rewritten = er->files_rewritten;
    msg.files_deleted = er->files_deleted;
    msg.rows_erased = er->rows_erased;
    msg.bytes_deleted = er->bytes_deleted;
    msg.row_versions_purged = er->row_versions_purged;
    msg.receipt_json = json;
    rpc_reply(r, &msg.base);
    free(json);
}

static void h_erase(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct engine_idem ib;
    const char *key;
    struct engine_erasure er = {0};
    Strike__V1__EraseRequest *q = unpack(r, &strike__v1__erase_request__descriptor, &a);
    if (q == NULL || !idem_key_of(r, &key))
        goto out;
    struct wire_obj *keys = NULL;
    if (failed(r, gconv_erase_keys(q, &a, &keys, &err), &err))
        goto out;
    struct svc_erase_req eq = {
        .table = q->table,
        .has_keys = q->n_keys > 0,
        .keys = keys,
        .nkeys = q->n_keys,
        .filter.text = q->filter,
    };
    eq.idem = svc_idem_erase(&eq, key, &ib);
    if (failed(r, svc_erase(engine_of(r), &eq, &er, &err), &err))
        goto out;
    rpc_audit_receipt(r, er.id);
    reply_erasure(r, &er);
out:
    engine_erasure_free(&er);
    garena_free(&a);
}

static void h_check_erasure(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    Strike__V1__CheckErasureRequest *q =
        unpack(r, &strike__v1__check_erasure_request__descriptor, &a);
    if (q == NULL)
        goto out;
    /* the keys of a check are an erasure's keys: the same conversion */
    Strike__V1__EraseRequest keys_of = STRIKE__V1__ERASE_REQUEST__INIT;
    keys_of.n_keys = q->n_keys;
    keys_of.keys = q->keys;
    struct wire_obj *keys = NULL;
    if (failed(r, gconv_erase_keys(&keys_of, &a, &keys, &err), &err))
        goto out;
    struct svc_check_erasure_req cq = {
        .table = q->table, .id = q->id, .keys = keys, .nkeys = q->n_keys};
    bool match = false;
    if (failed(r, svc_check_erasure(engine_of(r), &cq, &match, &err), &err))
        goto out;
    Strike__V1__CheckErasureResponse msg = STRIKE__V1__CHECK_ERASURE_RESPONSE__INIT;
    msg.match = match;
    rpc_reply(r, &msg.base);
out:
    garena_free(&a);
}

static void h_get_erasure(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct engine_erasure er = {0};
    Strike__V1__GetErasureRequest *q = unpack(r, &strike__v1__get_erasure_request__descriptor, &a);
    if (q == NULL || failed(r, svc_get_erasure(engine_of(r), q->table, q->id, &er, &err), &err))
        goto out;
    reply_erasure(r, &er);
out:
    engine_erasure_free(&er);
    garena_free(&a);
}

/* ---- scan (server streaming) -------------------------------------------------------- */

struct scan_call {
    struct svc_scan sv;
    struct engine_scan_batch b; /* rows not sent yet: b.rows[bpos..b.nrows) */
    size_t bpos;
    bool eof, first;
    int ncols;
    const char **names; /* output column names (in t) */
    int64_t snapshot;
};

static void scan_call_free(void *p)
{
    struct scan_call *sc = p;
    svc_scan_close(&sc->sv);
    free(sc->names);
    free(sc);
}

/* One ScanBatch: up to SCAN_BATCH_ROWS rows, closed once past SCAN_BATCH_BYTES. */
static void scan_produce(struct rpc *r, void *arg)
{
    struct scan_call *sc = arg;
    struct buf out = BUF_INIT;
    gconv_batch_begin(&out, sc->snapshot, sc->names, sc->ncols);
    size_t header = out.len, rows = 0;
    struct st_err err = {0};
    while (rows < SCAN_BATCH_ROWS && out.len - header < SCAN_BATCH_BYTES) {
        if (sc->bpos >= sc->b.nrows) {
            if (sc->eof)
                break;
            if (rpc_cancelled(r)) { /* a selective filter may read long between rows */
                buf_free(&out);
                rpc_abort(r);
                return;
            }
            bool done;
            int rc = engine_scan_next(sc->sv.scan, &sc->b, &done, &err);
            if (rc != ST_OK) {
                buf_free(&out);
                rpc_fail(r, rc, err.msg);
                return;
            }
            sc->bpos = 0;
            if (done) {
                sc->b.nrows = 0;
                sc->eof = true;
            }
            continue;
        }
        gconv_batch_row(&out, sc->b.vecs, sc->ncols, sc->b.rows[sc->bpos++]);
        rows++;
    }
    if (out.len > rpc_max_send(r)) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "scan: %zu rows take %zu bytes, more than the message limit (%zu bytes)", rows,
                 out.len, rpc_max_send(r));
        buf_free(&out);
        rpc_fail(r, ST_ETOOBIG, msg);
        return;
    }
    bool first = sc->first;
    sc->first = false;
    if (rows == 0 && !first) { /* the previous batch was the last one with rows */
        buf_free(&out);
        rpc_stream_send(r, NULL, 0, true);
        return;
    }
    size_t len;
    uint8_t *p = buf_detach(&out, &len);
    if (p == NULL)
        p = xcalloc(1, 1);
    rpc_stream_send(r, p, len, sc->eof);
}

static void h_scan(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct scan_call *sc = xcalloc(1, sizeof *sc);
    Strike__V1__ScanRequest *q = unpack(r, &strike__v1__scan_request__descriptor, &a);
    if (q == NULL)
        goto fail;
    struct svc_scan_req sq = {
        .table = q->table,
        .snapshot = count_of(q->snapshot_present_case ==
                                 STRIKE__V1__SCAN_REQUEST__SNAPSHOT_PRESENT_SNAPSHOT,
                             q->snapshot),
        .has_columns = q->n_columns > 0, /* proto3: an empty list is an absent one */
        .columns = (const char *const *)q->columns,
        .ncolumns = q->n_columns,
        .filter.text = q->filter,
        .limit = count_of(q->limit_present_case == STRIKE__V1__SCAN_REQUEST__LIMIT_PRESENT_LIMIT,
                          q->limit),
    };
    if (failed(r, svc_scan_open(engine_of(r), &sq, &sc->sv, &err), &err))
        goto fail;
    garena_free(&a);

    struct engine_scan *s = sc->sv.scan;
    const struct engine_table *t = sc->sv.table;
    sc->first = true;
    sc->snapshot = engine_scan_snapshot(s);
    const int *out = engine_scan_columns(s, &sc->ncols);
    sc->names = xcalloc((size_t)sc->ncols, sizeof *sc->names);
    for (int j = 0; j < sc->ncols; j++)
        sc->names[j] = t->cols[out[j]].name;
    char snap[32];
    snprintf(snap, sizeof snap, "%lld", (long long)sc->snapshot);
    rpc_stream_header(r, "strike-snapshot", snap); /* HTTP's Strike-Snapshot header */
    rpc_stream_start(r, sc, scan_produce, scan_call_free);
    return;
fail:
    scan_call_free(sc);
    garena_free(&a);
}

/* ---- plans, snapshots, deletion vectors ------------------------------------------- */

static void h_plan_scan(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct svc_plan_res res = {0};
    Strike__V1__PlanScanRequest *q = unpack(r, &strike__v1__plan_scan_request__descriptor, &a);
    if (q == NULL)
        goto out;
    struct svc_plan_req pq = {
        .table = q->table,
        .snapshot = count_of(q->snapshot_present_case ==
                                 STRIKE__V1__PLAN_SCAN_REQUEST__SNAPSHOT_PRESENT_SNAPSHOT,
                             q->snapshot),
        .filter.text = q->filter,
        /* POST /plan's "presign" and "expires_in": svc_plan checks them for both wires */
        .presign = q->presign,
        .expires_in = count_of(q->expires_in_present_case ==
                                   STRIKE__V1__PLAN_SCAN_REQUEST__EXPIRES_IN_PRESENT_EXPIRES_IN,
                               q->expires_in),
    };
    if (failed(r, svc_plan(engine_of(r), &pq, &res, &err), &err))
        goto out;
    char expires_at[ST_RFC3339_MAX];
    if (res.expires_at_s > 0)
        st_format_rfc3339(res.expires_at_s * 1000000, expires_at);
    size_t n = res.nfiles;
    Strike__V1__PlanScanResponse msg = STRIKE__V1__PLAN_SCAN_RESPONSE__INIT;
    msg.seq = res.seq;
    msg.n_files = n;
    msg.files = garena_alloc(&a, (n ? n : 1) * sizeof *msg.files);
    for (size_t i = 0; i < n; i++)
        msg.files[i] = gconv_planned_file(&a, res.table->name, res.seq, &res.files[i],
                                          res.expires_at_s > 0 ? expires_at : NULL);
    rpc_reply(r, &msg.base);
out:
    svc_plan_res_clear(&res);
    garena_free(&a);
}

static void h_list_snapshots(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct svc_snapshots_res res = {0};
    Strike__V1__ListSnapshotsRequest *q =
        unpack(r, &strike__v1__list_snapshots_request__descriptor, &a);
    if (q == NULL)
        goto out;
    struct svc_snapshots_req sq = {
        .table = q->table,
        .limit = count_of(q->limit_present_case ==
                              STRIKE__V1__LIST_SNAPSHOTS_REQUEST__LIMIT_PRESENT_LIMIT,
                          q->limit),
        .after = count_of(q->after_present_case ==
                              STRIKE__V1__LIST_SNAPSHOTS_REQUEST__AFTER_PRESENT_AFTER,
                          q->after),
    };
    if (failed(r, svc_list_snapshots(engine_of(r), &sq, &res, &err), &err))
        goto out;
    size_t n = res.n;
    Strike__V1__ListSnapshotsResponse msg = STRIKE__V1__LIST_SNAPSHOTS_RESPONSE__INIT;
    msg.n_snapshots = n;
    msg.snapshots = garena_alloc(&a, (n ? n : 1) * sizeof *msg.snapshots);
    for (size_t i = 0; i < n; i++) {
        const struct engine_snapshot_info *si = &res.snapshots[i];
        Strike__V1__Snapshot *m = garena_alloc(&a, sizeof *m);
        strike__v1__snapshot__init(m);
        m->seq = si->seq;
        char at[ST_RFC3339_MAX];
        st_format_rfc3339(si->committed_us, at);
        m->committed_at = garena_strdup(&a, at);
        m->operation = si->operation;
        m->summary = si->summary_json;
        msg.snapshots[i] = m;
    }
    if (res.has_next) {
        msg.next_present_case = STRIKE__V1__LIST_SNAPSHOTS_RESPONSE__NEXT_PRESENT_NEXT;
        msg.next = res.next;
    }
    rpc_reply(r, &msg.base);
out:
    svc_snapshots_res_clear(&res);
    garena_free(&a);
}

static void dv_release(void *b)
{
    engine_dv_bytes_unref(b);
}

/* The DV as a DeletionVector; its bytes go out without a copy, holding the reference `b` (taken
   over: released when gRPC is done with them). */
static void dv_reply(struct rpc *r, struct engine_dv_bytes *b, enum dv_format f, int64_t snapshot)
{
    Strike__V1__DeletionVector msg = STRIKE__V1__DELETION_VECTOR__INIT;
    msg.cardinality = b->cardinality;
    msg.format = (char *)dv_format_name(f);
    msg.etag = b->etag;
    msg.snapshot = snapshot;
    rpc_reply_lead(r, &msg.base, b->data, b->len, dv_release, b);
}

/* On the CQ thread: an explicit snapshot whose DV is cached needs no catalog round trip. */
static bool f_get_dv(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    bool answered = false;
    size_t n;
    const uint8_t *p = rpc_payload(r, &n);
    struct st_err err = {0};
    enum dv_format f = DV_FMT_ROARING64;
    struct engine_table *t = NULL;
    struct engine_dv_bytes *b = NULL;
    Strike__V1__GetDeletionVectorRequest *q =
        p ? (Strike__V1__GetDeletionVectorRequest *)gconv_unpack(
                &strike__v1__get_deletion_vector_request__descriptor, p, n, &a, &err)
          : NULL;
    if (q == NULL || engine_dv_format(q->format, &f, &err) != ST_OK ||
        q->snapshot_present_case !=
            STRIKE__V1__GET_DELETION_VECTOR_REQUEST__SNAPSHOT_PRESENT_SNAPSHOT ||
        q->snapshot < 0 || q->file_id <= 0)
        goto out; /* the worker words the error */
    struct engine *e = engine_of(r);
    if (!engine_peek_table(e, q->table, &t) ||
        !engine_peek_dv(e, t, q->file_id, q->snapshot, f, &b))
        goto out;
    dv_reply(r, b, f, q->snapshot);
    b = NULL; /* the reply holds it */
    answered = true;
out:
    engine_dv_bytes_unref(b);
    engine_table_unref(t);
    garena_free(&a);
    return answered;
}

static void h_get_dv(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct svc_dv_res res = {0};
    Strike__V1__GetDeletionVectorRequest *q =
        unpack(r, &strike__v1__get_deletion_vector_request__descriptor, &a);
    if (q == NULL)
        goto out;
    struct svc_dv_req dq = {
        .table = q->table,
        .file_id = q->file_id,
        .snapshot = count_of(q->snapshot_present_case ==
                                 STRIKE__V1__GET_DELETION_VECTOR_REQUEST__SNAPSHOT_PRESENT_SNAPSHOT,
                             q->snapshot),
    };
    if (failed(r, engine_dv_format(q->format, &dq.format, &err), &err) ||
        failed(r, svc_get_dv(engine_of(r), &dq, &res, &err), &err))
        goto out;
    dv_reply(r, res.bytes, dq.format, res.snapshot);
    res.bytes = NULL; /* the reply holds it */
out:
    svc_dv_res_clear(&res);
    garena_free(&a);
}

/* ---- maintenance ----------------------------------------------------------------------- */

static void h_expire(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    Strike__V1__ExpireRequest *q = unpack(r, &strike__v1__expire_request__descriptor, &a);
    if (q == NULL)
        goto out;
    /* proto3 cannot tell 0 or "" from absent: both mean "not given" */
    struct svc_expire_req eq = {
        .table = q->table,
        .retain_last = {q->retain_last != 0, q->retain_last},
        .older_than = q->older_than != NULL && q->older_than[0] != '\0' ? q->older_than : NULL,
        .default_retain_s = rpc_app(r)->cfg->retain_s,
    };
    struct engine_expire_res res;
    if (failed(r, svc_expire(engine_of(r), &eq, &res, &err), &err))
        goto out;
    Strike__V1__ExpireResponse msg = STRIKE__V1__EXPIRE_RESPONSE__INIT;
    msg.expired_snapshots = res.expired_snapshots;
    msg.deleted_files = res.deleted_files;
    msg.deleted_bytes = res.deleted_bytes;
    msg.oldest_seq = res.oldest_seq;
    rpc_reply(r, &msg.base);
out:
    garena_free(&a);
}

static double fraction(int64_t part, int64_t whole)
{
    return whole > 0 ? (double)part / (double)whole : 0.0;
}

static void h_table_health(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct engine_health h = {0};
    Strike__V1__TableHealthRequest *q =
        unpack(r, &strike__v1__table_health_request__descriptor, &a);
    if (q == NULL)
        goto out;
    struct svc_health_req hq = {
        .table = q->table,
        .limit =
            count_of(q->limit_present_case == STRIKE__V1__TABLE_HEALTH_REQUEST__LIMIT_PRESENT_LIMIT,
                     q->limit),
        .after =
            count_of(q->after_present_case == STRIKE__V1__TABLE_HEALTH_REQUEST__AFTER_PRESENT_AFTER,
                     q->after),
        .retain_s = rpc_app(r)->cfg->retain_s,
    };
    if (failed(r, svc_table_health(engine_of(r), &hq, &h, &err), &err))
        goto out;
    Strike__V1__TableHealthResponse msg = STRIKE__V1__TABLE_HEALTH_RESPONSE__INIT;
    msg.seq = h.seq;
    msg.data_files = h.data_files;
    msg.rows = h.rows;
    msg.deleted_rows = h.deleted_rows;
    msg.deleted_fraction = fraction(h.deleted_rows, h.rows);
    msg.small_files = h.small_files;
    msg.dv_bytes = h.dv_bytes;
    msg.inline_dvs = h.inline_dvs;
    msg.data_bytes = h.data_bytes;
    msg.snapshots = h.snapshots;
    char at[ST_RFC3339_MAX] = "";
    if (h.snapshots > 0)
        st_format_rfc3339(h.oldest_snapshot_us, at);
    msg.oldest_snapshot_at = at;
    Strike__V1__HealthAdvice adv[2];
    Strike__V1__HealthAdvice *advp[2];
    if (h.compact) {
        strike__v1__health_advice__init(&adv[msg.n_advice]);
        adv[msg.n_advice].action = "compact";
        adv[msg.n_advice].reason = h.compact_reason;
        advp[msg.n_advice] = &adv[msg.n_advice];
        msg.n_advice++;
    }
    if (h.expire) {
        strike__v1__health_advice__init(&adv[msg.n_advice]);
        adv[msg.n_advice].action = "expire";
        adv[msg.n_advice].reason = h.expire_reason;
        advp[msg.n_advice] = &adv[msg.n_advice];
        msg.n_advice++;
    }
    msg.advice = advp;
    msg.n_files = h.nfiles;
    msg.files = garena_alloc(&a, (h.nfiles ? h.nfiles : 1) * sizeof *msg.files);
    for (size_t i = 0; i < h.nfiles; i++) {
        const struct engine_health_file *f = &h.files[i];
        Strike__V1__FileHealth *m = garena_alloc(&a, sizeof *m);
        strike__v1__file_health__init(m);
        m->id = f->id;
        m->rows = f->rows;
        m->deleted = f->deleted;
        m->deleted_fraction = fraction(f->deleted, f->rows);
        m->bytes = f->bytes;
        m->dv_bytes = f->dv_bytes;
        m->data_seq = f->data_seq;
        msg.files[i] = m;
    }
    if (h.has_next) {
        msg.next_present_case = STRIKE__V1__TABLE_HEALTH_RESPONSE__NEXT_PRESENT_NEXT;
        msg.next = h.next;
    }
    rpc_reply(r, &msg.base);
out:
    engine_health_clear(&h);
    garena_free(&a);
}

/* ---- the table ----------------------------------------------------------------------- */

static const struct rpc_method methods[] = {
    {.name = "CreateTable",
     .kind = RPC_UNARY,
     .run = h_create_table,
     .scope = AUTH_ADMIN,
     .table_field = "name",
     .charge = ADMIT_X_GRPC},
    {.name = "GetTable",
     .kind = RPC_UNARY,
     .run = h_get_table,
     .scope = AUTH_READ,
     .table_field = "name",
     .charge = ADMIT_X_GRPC},
    /* lists only the tables the token may read */
    {.name = "ListTables",
     .kind = RPC_UNARY,
     .run = h_list_tables,
     .scope = AUTH_READ,
     .table_field = NULL,
     .charge = ADMIT_X_GRPC},
    {.name = "DropTable",
     .kind = RPC_UNARY,
     .run = h_drop_table,
     .scope = AUTH_ADMIN,
     .table_field = "name",
     .charge = ADMIT_X_GRPC},
    {.name = "ApplyChanges",
     .kind = RPC_UNARY,
     .run = h_apply_changes,
     .scope = AUTH_WRITE,
     .table_field = "table",
     .charge = ADMIT_X_GRPC_CHANGES},
    {.name = "DeleteWhere",
     .kind = RPC_UNARY,
     .run = h_delete_where,
     .scope = AUTH_WRITE,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
    {.name = "Scan",
     .kind = RPC_SERVER_STREAM,
     .run = h_scan,
     .scope = AUTH_READ,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
    {.name = "PlanScan",
     .kind = RPC_UNARY,
     .run = h_plan_scan,
     .scope = AUTH_READ,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
    {.name = "GetDeletionVector",
     .kind = RPC_UNARY,
     .run = h_get_dv,
     .fast = f_get_dv,
     .scope = AUTH_READ,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
    {.name = "ListSnapshots",
     .kind = RPC_UNARY,
     .run = h_list_snapshots,
     .scope = AUTH_READ,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
    /* the tables are in the body: write on each routed table (svc_cdc_apply) */
    {.name = "ApplyDebezium",
     .kind = RPC_UNARY,
     .run = h_apply_debezium,
     .scope = AUTH_WRITE,
     .table_field = NULL,
     .charge = ADMIT_X_GRPC_CDC},
    {.name = "Compact",
     .kind = RPC_UNARY,
     .run = h_compact,
     .scope = AUTH_ADMIN,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
    {.name = "Expire",
     .kind = RPC_UNARY,
     .run = h_expire,
     .scope = AUTH_ADMIN,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
    {.name = "TableHealth",
     .kind = RPC_UNARY,
     .run = h_table_health,
     .scope = AUTH_READ,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
    {.name = "Erase",
     .kind = RPC_UNARY,
     .run = h_erase,
     .scope = AUTH_ADMIN,
     .table_field = "table",
     .charge = ADMIT_X_GRPC_ERASE},
    {.name = "GetErasure",
     .kind = RPC_UNARY,
     .run = h_get_erasure,
     .scope = AUTH_READ,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
    {.name = "CheckErasure",
     .kind = RPC_UNARY,
     .run = h_check_erasure,
     .scope = AUTH_ADMIN,
     .table_field = "table",
     .charge = ADMIT_X_GRPC_ERASE},
    {.name = "AlterTable",
     .kind = RPC_UNARY,
     .run = h_alter_table,
     .scope = AUTH_ADMIN,
     .table_field = "table",
     .charge = ADMIT_X_GRPC},
};

const struct rpc_method *grpcs__method(const char *name)
{
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (strcmp(methods[i].name, name) == 0)
            return &methods[i];
    return NULL;
}
