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
 * Idempotency-Key: the `idempotency-key` metadata; the request hash is
 * SHA-256 of the method path, a NUL, and the request re-packed in canonical
 * form (map entries sorted by key: clients do not serialize maps in a fixed
 * order, so a retry may arrive as other bytes). The engine replays the
 * first call's result struct, which is rendered like a fresh one.
 */
#include "grpc_conv.h"
#include "grpc_int.h"

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
 * The call's Idempotency-Key as the engine wants it: *out NULL without one.
 * The request hash covers the method and the request `m` in its canonical
 * form. False after failing the call (a malformed key).
 */
static bool idem_of(struct rpc *r, ProtobufCMessage *m, struct st_idem *buf,
                    const struct st_idem **out)
{
    *out = NULL;
    const char *key = rpc_idem_key(r);
    if (key == NULL)
        return true;
    if (!st_idem_key_valid(key)) {
        rpc_fail(r, ST_EINVAL, "idempotency-key: 1 to 255 visible ASCII characters");
        return false;
    }
    gconv_canonicalize(m);
    gconv_hash(rpc_path(r), m, buf->hash);
    buf->key = key;
    *out = buf;
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

/* An optional count given as a oneof: like HTTP, it must not be negative. */
static bool nonneg(struct rpc *r, const char *name, bool has, int64_t v)
{
    if (!has || v >= 0)
        return true;
    char msg[120];
    snprintf(msg, sizeof msg, "%s: must be >= 0, got %lld", name, (long long)v);
    rpc_fail(r, ST_EINVAL, msg);
    return false;
}

/* A table definition for reads and writes (may be up to ~1 s old, like HTTP's). */
static bool get_table(struct rpc *r, const char *name, struct table **t)
{
    struct st_err err = {0};
    return !failed(r, engine_get_table_cached(engine_of(r), name, t, &err), &err);
}

/* An optional filter: empty text is none. */
static bool parse_filter(struct rpc *r, const struct table *t, const char *text, struct filter **f)
{
    *f = NULL;
    if (text[0] == '\0')
        return true;
    struct st_err err = {0};
    return !failed(r, filter_parse(text, strlen(text), t->cols, t->ncols, f, &err), &err);
}

/* ---- tables ---------------------------------------------------------------------- */

static void h_create_table(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct st_idem ib;
    const struct st_idem *idem;
    struct table *t = NULL;
    bool replayed;
    Strike__V1__CreateTableRequest *q =
        unpack(r, &strike__v1__create_table_request__descriptor, &a);
    if (q == NULL || !idem_of(r, &q->base, &ib, &idem))
        goto out;
    struct table_def def;
    if (failed(r, gconv_table_def(q, &a, &def, &err), &err))
        goto out;
    if (failed(r, engine_create_table(engine_of(r), &def, idem, &t, &replayed, &err), &err))
        goto out;
    Strike__V1__Table msg;
    gconv_table(t, NULL, &a, &msg);
    rpc_reply(r, &msg.base);
out:
    table_unref(t);
    garena_free(&a);
}

static void h_get_table(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct table *t = NULL;
    Strike__V1__GetTableRequest *q = unpack(r, &strike__v1__get_table_request__descriptor, &a);
    if (q == NULL)
        goto out;
    if (failed(r, engine_get_table(engine_of(r), q->name, &t, &err), &err))
        goto out;
    struct table_stats stats;
    if (failed(r, engine_table_stats(engine_of(r), t, &stats, &err), &err))
        goto out;
    Strike__V1__Table msg;
    gconv_table(t, &stats, &a, &msg);
    rpc_reply(r, &msg.base);
out:
    table_unref(t);
    garena_free(&a);
}

static void h_list_tables(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct table **ts = NULL;
    size_t n = 0;
    if (unpack(r, &strike__v1__list_tables_request__descriptor, &a) == NULL)
        goto out;
    if (failed(r, engine_list_tables(engine_of(r), &ts, &n, &err), &err))
        goto out;
    Strike__V1__ListTablesResponse msg = STRIKE__V1__LIST_TABLES_RESPONSE__INIT;
    msg.n_tables = n;
    msg.tables = garena_alloc(&a, (n ? n : 1) * sizeof *msg.tables);
    Strike__V1__Table *tm = garena_alloc(&a, (n ? n : 1) * sizeof *tm);
    for (size_t i = 0; i < n; i++) {
        gconv_table(ts[i], NULL, &a, &tm[i]);
        msg.tables[i] = &tm[i];
    }
    rpc_reply(r, &msg.base);
out:
    for (size_t i = 0; i < n; i++)
        table_unref(ts[i]);
    free(ts);
    garena_free(&a);
}

static void h_drop_table(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct st_idem ib;
    const struct st_idem *idem;
    bool replayed;
    Strike__V1__DropTableRequest *q = unpack(r, &strike__v1__drop_table_request__descriptor, &a);
    if (q == NULL || !idem_of(r, &q->base, &ib, &idem))
        goto out;
    if (failed(r, engine_drop_table(engine_of(r), q->name, idem, &replayed, &err), &err))
        goto out;
    Strike__V1__DropTableResponse msg = STRIKE__V1__DROP_TABLE_RESPONSE__INIT;
    rpc_reply(r, &msg.base);
out:
    garena_free(&a);
}

/* ---- changes and deletes ----------------------------------------------------------- */

static void h_apply_changes(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct st_idem ib;
    const struct st_idem *idem;
    struct table *t = NULL;
    struct changeset cs = {0};
    Strike__V1__ApplyChangesRequest *q =
        unpack(r, &strike__v1__apply_changes_request__descriptor, &a);
    if (q == NULL || !idem_of(r, &q->base, &ib, &idem))
        goto out;
    bool has_offset =
        q->offset_present_case == STRIKE__V1__APPLY_CHANGES_REQUEST__OFFSET_PRESENT_OFFSET;
    bool has_expected = q->expected_seq_present_case ==
                        STRIKE__V1__APPLY_CHANGES_REQUEST__EXPECTED_SEQ_PRESENT_EXPECTED_SEQ;
    bool has_producer = q->producer[0] != '\0';
    if (!nonneg(r, "offset", has_offset, q->offset) ||
        !nonneg(r, "expected_seq", has_expected, q->expected_seq))
        goto out;
    if (has_offset != has_producer) {
        rpc_fail(r, ST_EINVAL,
                 has_producer ? "offset: required with \"producer\""
                              : "producer: required with \"offset\"");
        goto out;
    }
    struct wire_change *w;
    if (failed(r, gconv_changes(q, &a, &w, &err), &err) || !get_table(r, q->table, &t) ||
        failed(r, changeset_build(t, w, q->n_changes, &cs, &err), &err))
        goto out;
    struct change_req cr = {
        .table = t,
        .changes = cs.changes,
        .nchanges = cs.n,
        .producer = has_producer ? q->producer : NULL,
        .has_offset = has_offset,
        .offset = q->offset,
        .has_expected_seq = has_expected,
        .expected_seq = q->expected_seq,
        .idem = idem,
    };
    struct change_res res;
    if (failed(r, engine_apply_changes(engine_of(r), &cr, &res, &err), &err))
        goto out;
    Strike__V1__ApplyChangesResponse msg;
    strike__v1__apply_changes_response__init(&msg);
    msg.seq = res.seq;
    msg.inserted = res.inserted;
    msg.updated = res.updated;
    msg.deleted = res.deleted;
    msg.missing = res.missing;
    msg.stale = res.stale;
    msg.duplicate = res.duplicate;
    rpc_reply(r, &msg.base);
out:
    changeset_free(&cs);
    table_unref(t);
    garena_free(&a);
}

static void h_delete_where(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct st_idem ib;
    const struct st_idem *idem;
    struct table *t = NULL;
    struct filter *f = NULL;
    Strike__V1__DeleteWhereRequest *q =
        unpack(r, &strike__v1__delete_where_request__descriptor, &a);
    if (q == NULL || !idem_of(r, &q->base, &ib, &idem))
        goto out;
    bool has_expected = q->expected_seq_present_case ==
                        STRIKE__V1__DELETE_WHERE_REQUEST__EXPECTED_SEQ_PRESENT_EXPECTED_SEQ;
    if (!nonneg(r, "expected_seq", has_expected, q->expected_seq))
        goto out;
    if (q->filter[0] == '\0') {
        rpc_fail(r, ST_EINVAL, "filter: required (the expression \"true\" deletes every row)");
        goto out;
    }
    if (!get_table(r, q->table, &t) || !parse_filter(r, t, q->filter, &f))
        goto out;
    struct delete_res res;
    if (failed(r,
               engine_delete_where(engine_of(r), t, f, has_expected, q->expected_seq, idem, &res,
                                   &err),
               &err))
        goto out;
    Strike__V1__DeleteWhereResponse msg;
    strike__v1__delete_where_response__init(&msg);
    msg.seq = res.seq;
    msg.deleted = res.deleted;
    rpc_reply(r, &msg.base);
out:
    filter_free(f);
    table_unref(t);
    garena_free(&a);
}

/* ---- scan (server streaming) -------------------------------------------------------- */

struct scan_call {
    struct table *t;
    struct filter *f; /* the scan borrows it */
    struct scan *s;
    struct scan_batch b; /* rows not sent yet: b.rows[bpos..b.nrows) */
    size_t bpos;
    bool eof, first;
    int ncols;
    const char **names; /* output column names (in t) */
    int64_t snapshot;
};

static void scan_call_free(void *p)
{
    struct scan_call *sc = p;
    scan_close(sc->s);
    filter_free(sc->f);
    table_unref(sc->t);
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
            int rc = scan_next(sc->s, &sc->b, &done, &err);
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
    struct table *t = NULL;
    struct filter *f = NULL;
    Strike__V1__ScanRequest *q = unpack(r, &strike__v1__scan_request__descriptor, &a);
    if (q == NULL)
        goto fail;
    bool has_snapshot =
        q->snapshot_present_case == STRIKE__V1__SCAN_REQUEST__SNAPSHOT_PRESENT_SNAPSHOT;
    bool has_limit = q->limit_present_case == STRIKE__V1__SCAN_REQUEST__LIMIT_PRESENT_LIMIT;
    if (!nonneg(r, "snapshot", has_snapshot, q->snapshot) ||
        !nonneg(r, "limit", has_limit, q->limit) || !get_table(r, q->table, &t))
        goto fail;
    int *cols, ncols;
    if (failed(r, gconv_columns(t, q->columns, q->n_columns, &a, &cols, &ncols, &err), &err) ||
        !parse_filter(r, t, q->filter, &f))
        goto fail;
    struct scan_req sr = {
        .has_snapshot = has_snapshot,
        .snapshot = q->snapshot,
        .columns = cols,
        .ncolumns = ncols,
        .filter = f,
        .has_limit = has_limit,
        .limit = q->limit,
    };
    struct scan *s;
    if (failed(r, engine_scan_open(engine_of(r), t, &sr, &s, &err), &err))
        goto fail;
    garena_free(&a);

    struct scan_call *sc = xcalloc(1, sizeof *sc);
    sc->t = t;
    sc->f = f;
    sc->s = s;
    sc->first = true;
    sc->snapshot = scan_snapshot(s);
    const int *out = scan_columns(s, &sc->ncols);
    sc->names = xcalloc((size_t)sc->ncols, sizeof *sc->names);
    for (int j = 0; j < sc->ncols; j++)
        sc->names[j] = t->cols[out[j]].name;
    char snap[32];
    snprintf(snap, sizeof snap, "%lld", (long long)sc->snapshot);
    rpc_stream_header(r, "strike-snapshot", snap); /* HTTP's Strike-Snapshot header */
    rpc_stream_start(r, sc, scan_produce, scan_call_free);
    return;
fail:
    filter_free(f);
    table_unref(t);
    garena_free(&a);
}

/* ---- plans, snapshots, deletion vectors ------------------------------------------- */

static void h_plan_scan(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct table *t = NULL;
    struct filter *f = NULL;
    struct plan_file *files = NULL;
    size_t n = 0;
    Strike__V1__PlanScanRequest *q = unpack(r, &strike__v1__plan_scan_request__descriptor, &a);
    if (q == NULL)
        goto out;
    bool has_snapshot =
        q->snapshot_present_case == STRIKE__V1__PLAN_SCAN_REQUEST__SNAPSHOT_PRESENT_SNAPSHOT;
    if (!nonneg(r, "snapshot", has_snapshot, q->snapshot) || !get_table(r, q->table, &t) ||
        !parse_filter(r, t, q->filter, &f))
        goto out;
    int64_t seq;
    if (failed(r,
               engine_plan(engine_of(r), t, has_snapshot, q->snapshot, f, &files, &n, &seq, &err),
               &err))
        goto out;
    Strike__V1__PlanScanResponse msg = STRIKE__V1__PLAN_SCAN_RESPONSE__INIT;
    msg.seq = seq;
    msg.n_files = n;
    msg.files = garena_alloc(&a, (n ? n : 1) * sizeof *msg.files);
    for (size_t i = 0; i < n; i++) {
        const struct plan_file *pf = &files[i];
        Strike__V1__PlannedFile *m = garena_alloc(&a, sizeof *m);
        strike__v1__planned_file__init(m);
        m->id = pf->id;
        m->path = pf->path;
        m->url = gconv_file_url(&a, t->name, pf->id);
        m->format = (char *)"parquet";
        m->record_count = pf->record_count;
        m->file_size = pf->file_size;
        m->data_seq = pf->data_seq;
        m->deleted_count = pf->deleted_count;
        if (pf->has_dv) {
            Strike__V1__DvRef *d = garena_alloc(&a, sizeof *d);
            strike__v1__dv_ref__init(d);
            d->url = gconv_dv_url(&a, t->name, pf->id, seq);
            d->path = pf->dv_path;
            d->offset = pf->dv_offset;
            d->length = pf->dv_length;
            d->cardinality = pf->dv_cardinality;
            m->dv = d;
        }
        msg.files[i] = m;
    }
    rpc_reply(r, &msg.base);
out:
    plan_free(files, n);
    filter_free(f);
    table_unref(t);
    garena_free(&a);
}

static void h_list_snapshots(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct table *t = NULL;
    struct snapshot_info *ss = NULL;
    size_t n = 0;
    Strike__V1__ListSnapshotsRequest *q =
        unpack(r, &strike__v1__list_snapshots_request__descriptor, &a);
    if (q == NULL || !get_table(r, q->table, &t))
        goto out;
    if (failed(r, engine_list_snapshots(engine_of(r), t, &ss, &n, &err), &err))
        goto out;
    Strike__V1__ListSnapshotsResponse msg = STRIKE__V1__LIST_SNAPSHOTS_RESPONSE__INIT;
    msg.n_snapshots = n;
    msg.snapshots = garena_alloc(&a, (n ? n : 1) * sizeof *msg.snapshots);
    for (size_t i = 0; i < n; i++) {
        Strike__V1__Snapshot *m = garena_alloc(&a, sizeof *m);
        strike__v1__snapshot__init(m);
        m->seq = ss[i].seq;
        char at[ST_RFC3339_MAX];
        st_format_rfc3339(ss[i].committed_us, at);
        m->committed_at = garena_strdup(&a, at);
        m->operation = ss[i].operation;
        m->summary = ss[i].summary_json;
        msg.snapshots[i] = m;
    }
    rpc_reply(r, &msg.base);
out:
    snapshots_free(ss, n);
    table_unref(t);
    garena_free(&a);
}

static void dv_reply(struct rpc *r, const struct dv_bytes *b, enum dv_format f, int64_t snapshot)
{
    Strike__V1__DeletionVector msg = STRIKE__V1__DELETION_VECTOR__INIT;
    msg.data.data = (uint8_t *)b->data;
    msg.data.len = b->len;
    msg.cardinality = b->cardinality;
    msg.format = (char *)dv_format_name(f);
    msg.etag = (char *)b->etag;
    msg.snapshot = snapshot;
    rpc_reply(r, &msg.base);
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
    struct table *t = NULL;
    struct dv_bytes *b = NULL;
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
    answered = true;
out:
    dv_bytes_unref(b);
    table_unref(t);
    garena_free(&a);
    return answered;
}

static void h_get_dv(struct rpc *r)
{
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    struct table *t = NULL;
    struct dv_bytes *b = NULL;
    Strike__V1__GetDeletionVectorRequest *q =
        unpack(r, &strike__v1__get_deletion_vector_request__descriptor, &a);
    if (q == NULL)
        goto out;
    bool has_snapshot = q->snapshot_present_case ==
                        STRIKE__V1__GET_DELETION_VECTOR_REQUEST__SNAPSHOT_PRESENT_SNAPSHOT;
    enum dv_format f = DV_FMT_ROARING64;
    if (q->file_id <= 0) {
        char msg[100];
        snprintf(msg, sizeof msg, "file_id: expected a positive integer, got %lld",
                 (long long)q->file_id);
        rpc_fail(r, ST_EINVAL, msg);
        goto out;
    }
    if (!nonneg(r, "snapshot", has_snapshot, q->snapshot) ||
        failed(r, engine_dv_format(q->format, &f, &err), &err) || !get_table(r, q->table, &t))
        goto out;
    int64_t resolved;
    if (failed(r,
               engine_get_dv(engine_of(r), t, q->file_id, has_snapshot, q->snapshot, f, &b,
                             &resolved, &err),
               &err))
        goto out;
    dv_reply(r, b, f, resolved);
out:
    dv_bytes_unref(b);
    table_unref(t);
    garena_free(&a);
}

/* ---- the table ----------------------------------------------------------------------- */

static const struct rpc_method methods[] = {
    {.name = "CreateTable", .kind = RPC_UNARY, .run = h_create_table},
    {.name = "GetTable", .kind = RPC_UNARY, .run = h_get_table},
    {.name = "ListTables", .kind = RPC_UNARY, .run = h_list_tables},
    {.name = "DropTable", .kind = RPC_UNARY, .run = h_drop_table},
    {.name = "ApplyChanges", .kind = RPC_UNARY, .run = h_apply_changes},
    {.name = "DeleteWhere", .kind = RPC_UNARY, .run = h_delete_where},
    {.name = "Scan", .kind = RPC_SERVER_STREAM, .run = h_scan},
    {.name = "PlanScan", .kind = RPC_UNARY, .run = h_plan_scan},
    {.name = "GetDeletionVector", .kind = RPC_UNARY, .run = h_get_dv, .fast = f_get_dv},
    {.name = "ListSnapshots", .kind = RPC_UNARY, .run = h_list_snapshots},
    {.name = "Compact",
     .kind = RPC_UNIMPLEMENTED,
     .unimplemented = "Compact is not implemented yet: table maintenance (compaction) is not "
                      "part of this version of striked"},
    {.name = "Expire",
     .kind = RPC_UNIMPLEMENTED,
     .unimplemented = "Expire is not implemented yet: snapshot expiry is not part of this "
                      "version of striked"},
    {.name = "Erase",
     .kind = RPC_UNIMPLEMENTED,
     .unimplemented = "Erase is not implemented yet: erasure with receipts is not part of this "
                      "version of striked"},
};

const struct rpc_method *grpcs__method(const char *name)
{
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (strcmp(methods[i].name, name) == 0)
            return &methods[i];
    return NULL;
}
