/*
 * fuzz_grpc_requests.c - the gRPC front end's request path without an engine:
 * protobuf-c unpacking of every strike.v1 request type (first input byte picks
 * the type), the U+0000 and UTF-8 checks (whatever unpacks holds only valid
 * UTF-8 in every string field, at any depth), the Idempotency-Key hash of changes (the
 * order of an object's members does not change it), and the conversions
 * to engine input (changes -> changeset_build, Debezium bodies -> cdc_decode, table definitions,
 * scan columns, filters) against a fixed table. Two more modes: the hand-written ScanBatch encoder,
 * checked value by value against protobuf-c's decoder, and the health request parser. (Idempotent
 * replays are not parsed here any more: the engine decodes its own records into result structs.)
 */
#include "cdc.h"
#include "changeset.h"
#include "grpc_conv.h"
#include "service.h"

#include "expr/filter.h"
#include "expr/literal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct st_column cols[] = {
    {"id", ST_T_LONG, true, 0},   {"b", ST_T_BOOLEAN, false, 0}, {"i", ST_T_INT, false, 0},
    {"d", ST_T_DOUBLE, false, 0}, {"s", ST_T_STRING, false, 0},  {"ts", ST_T_TIMESTAMP, false, 0},
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))
static int pk[] = {0};
static struct engine_table table = {
    .id = 1,
    .name = "fuzz",
    .ncols = NCOLS,
    .cols = cols,
    .npk = 1,
    .pk = pk,
    .version_col = -1,
};

static void check_filter(const char *text)
{
    struct filter *f = NULL;
    struct st_err err = {0};
    if (text[0] != '\0' && filter_parse(text, strlen(text), cols, NCOLS, &f, &err) == ST_OK)
        filter_free(f);
}

static void check_utf8(const char *s)
{
    if (s != NULL && lit_utf8_check(s, strlen(s)) != strlen(s))
        abort(); /* gconv_unpack let invalid UTF-8 through */
}

/* Every string field of an unpacked message, at any depth, is valid UTF-8. */
static void check_strings(const ProtobufCMessage *m, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;
    for (unsigned i = 0; i < d->n_fields && depth < 40; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(const void *)(base + f->quantifier_offset) != f->id)
            continue;
        size_t cnt = 1;
        void *const *vals = (void *const *)(const void *)(base + f->offset);
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            cnt = *(const size_t *)(const void *)(base + f->quantifier_offset);
            vals = *(void *const *const *)(const void *)(base + f->offset);
        }
        for (size_t k = 0; k < cnt; k++) {
            if (f->type == PROTOBUF_C_TYPE_STRING)
                check_utf8(vals[k]);
            else if (vals[k] != NULL)
                check_strings(vals[k], depth + 1);
        }
    }
}

/* An object with its members in reverse order (arrays from the arena). */
static struct wire_obj reversed(struct garena *a, const struct wire_obj *o)
{
    struct wire_obj r = *o;
    const char **names = garena_alloc(a, (o->n ? o->n : 1) * sizeof *names);
    struct st_literal *lits = garena_alloc(a, (o->n ? o->n : 1) * sizeof *lits);
    for (size_t i = 0; i < o->n; i++) {
        names[i] = o->names[o->n - 1 - i];
        lits[i] = o->lits[o->n - 1 - i];
    }
    r.names = names;
    r.lits = lits;
    return r;
}

/* The Idempotency-Key hash does not depend on the order of an object's members (the order
   protobuf maps and JSON objects arrive in), unless a name repeats (a map may repeat a key). */
static void check_idem_order(struct garena *a, const char *tname, const struct wire_change *w,
                             size_t n)
{
    struct wire_change *rw = garena_alloc(a, (n ? n : 1) * sizeof *rw);
    bool repeats = false;
    for (size_t i = 0; i < n; i++) {
        const struct wire_obj *objs[4] = {&w[i].row, &w[i].key, &w[i].before, &w[i].after};
        for (int k = 0; k < 4; k++)
            for (size_t x = 0; x < objs[k]->n; x++)
                for (size_t y = x + 1; y < objs[k]->n; y++)
                    repeats |= strcmp(objs[k]->names[x], objs[k]->names[y]) == 0;
        rw[i] = (struct wire_change){w[i].op, reversed(a, &w[i].row), reversed(a, &w[i].key),
                                     reversed(a, &w[i].before), reversed(a, &w[i].after)};
    }
    struct svc_changes_req q1 = {.table = tname, .changes = w, .nchanges = n};
    struct svc_changes_req q2 = {.table = tname, .changes = rw, .nchanges = n};
    struct engine_idem i1, i2;
    if (svc_idem_changes(&q1, "k", &i1) != &i1 || svc_idem_changes(&q2, "k", &i2) != &i2 ||
        svc_idem_changes(&q1, NULL, &i1) != NULL)
        abort();
    if (!repeats && memcmp(i1.hash, i2.hash, sizeof i1.hash) != 0)
        abort();
}

static void requests(int kind, const uint8_t *p, size_t n)
{
    static const ProtobufCMessageDescriptor *const descs[] = {
        &strike__v1__create_table_request__descriptor,
        &strike__v1__get_table_request__descriptor,
        &strike__v1__drop_table_request__descriptor,
        &strike__v1__apply_changes_request__descriptor,
        &strike__v1__delete_where_request__descriptor,
        &strike__v1__scan_request__descriptor,
        &strike__v1__plan_scan_request__descriptor,
        &strike__v1__get_deletion_vector_request__descriptor,
        &strike__v1__list_snapshots_request__descriptor,
        &strike__v1__erase_request__descriptor,
        &strike__v1__apply_debezium_request__descriptor,
    };
    const ProtobufCMessageDescriptor *d = descs[(size_t)kind % (sizeof descs / sizeof descs[0])];
    struct garena a;
    garena_init(&a);
    struct st_err err = {0};
    ProtobufCMessage *m = gconv_unpack(d, p, n, &a, &err);
    if (m == NULL)
        goto out;
    check_strings(m, 0);
    if (d == &strike__v1__apply_changes_request__descriptor) {
        Strike__V1__ApplyChangesRequest *q = (Strike__V1__ApplyChangesRequest *)m;
        struct wire_change *w;
        struct changeset cs;
        if (gconv_changes(q, &a, &w, &err) == ST_OK) {
            check_idem_order(&a, q->table, w, q->n_changes);
            if (changeset_build(&table, w, q->n_changes, &cs, &err) == ST_OK) {
                if (cs.n > 2 * q->n_changes)
                    abort();
                changeset_free(&cs);
            }
        }
    } else if (d == &strike__v1__create_table_request__descriptor) {
        Strike__V1__CreateTableRequest *q = (Strike__V1__CreateTableRequest *)m;
        struct svc_column *sc = garena_alloc(&a, (q->n_columns + 1) * sizeof *sc);
        for (size_t i = 0; i < q->n_columns; i++)
            sc[i] = (struct svc_column){q->columns[i]->name, q->columns[i]->type,
                                        q->columns[i]->required != 0};
        struct svc_create_req cq = {.name = q->name,
                                    .cols = sc,
                                    .ncols = q->n_columns,
                                    .pk = (const char *const *)q->primary_key,
                                    .npk = q->n_primary_key,
                                    .version_column = q->version_column};
        struct st_column *tcols = garena_alloc(&a, (q->n_columns + 1) * sizeof *tcols);
        struct engine_table_def def;
        if (svc_table_def(&cq, tcols, &def, &err) == ST_OK &&
            (def.ncols < 0 || def.ncols > ST_COLUMNS_MAX))
            abort();
    } else if (d == &strike__v1__scan_request__descriptor) {
        Strike__V1__ScanRequest *q = (Strike__V1__ScanRequest *)m;
        struct svc_scan_req sq = {.has_columns = q->n_columns > 0,
                                  .columns = (const char *const *)q->columns,
                                  .ncolumns = q->n_columns};
        int *idx;
        if (svc_scan_columns(&table, &sq, &idx, &err) == ST_OK) {
            for (size_t i = 0; idx != NULL && i < q->n_columns; i++)
                if (idx[i] < 0 || idx[i] >= NCOLS)
                    abort();
            free(idx);
        }
        check_filter(q->filter);
    } else if (d == &strike__v1__apply_debezium_request__descriptor) {
        Strike__V1__ApplyDebeziumRequest *q = (Strike__V1__ApplyDebeziumRequest *)m;
        struct cdc_batch b;
        if (cdc_decode(q->body.data, q->body.len, q->content_type, &b, &err) == ST_OK)
            cdc_batch_free(&b);
        else if (b.n != 0 || err.msg[0] == '\0')
            abort();
    } else if (d == &strike__v1__delete_where_request__descriptor) {
        check_filter(((Strike__V1__DeleteWhereRequest *)m)->filter);
    } else if (d == &strike__v1__plan_scan_request__descriptor) {
        check_filter(((Strike__V1__PlanScanRequest *)m)->filter);
    }
out:
    garena_free(&a);
}

/* Column vectors from the input, encoded as a ScanBatch and decoded back. */
static void batch(const uint8_t *p, size_t n)
{
    size_t pos = 0;
#define TAKE() (pos < n ? p[pos++] : 0)
    size_t rows = TAKE() % 40;
    struct st_colvec vecs[NCOLS];
    const struct st_colvec *vp[NCOLS];
    memset(vecs, 0, sizeof vecs);
    for (int j = 0; j < NCOLS; j++) {
        struct st_colvec *v = &vecs[j];
        v->type = cols[j].type;
        v->n = rows;
        v->nulls = calloc(rows + 1, 1);
        v->v.l = calloc(rows + 1, 8);
        v->offs = calloc(rows + 2, sizeof *v->offs);
        v->sdata = malloc(rows * 64 + 1);
        vp[j] = v;
    }
    for (size_t r = 0; r < rows; r++) {
        for (int j = 0; j < NCOLS; j++) {
            struct st_colvec *v = &vecs[j];
            uint8_t flag = TAKE();
            v->nulls[r] = (flag & 7) == 0;
            uint64_t x = 0;
            for (int k = 0; k < 8; k++)
                x = x << 8 | TAKE();
            size_t slen = 0;
            switch (v->type) {
            case ST_T_BOOLEAN:
                v->v.b[r] = x & 1;
                break;
            case ST_T_INT:
                v->v.i[r] = (int32_t)x;
                break;
            case ST_T_DOUBLE:
                memcpy(&v->v.d[r], &x, 8);
                break;
            case ST_T_STRING:
                slen = flag % 64;
                for (size_t k = 0; k < slen; k++) {
                    uint8_t c = TAKE();
                    v->sdata[v->offs[r] + k] = c ? c : 'x';
                }
                break;
            default:
                v->v.l[r] = (int64_t)x;
                break;
            }
            v->offs[r + 1] = v->offs[r] + (uint32_t)slen;
        }
    }
    const char *names[NCOLS];
    for (int j = 0; j < NCOLS; j++)
        names[j] = cols[j].name;
    int64_t snapshot = (int64_t)TAKE() - 20;
    struct buf b = BUF_INIT;
    gconv_batch_begin(&b, snapshot, names, NCOLS);
    for (size_t r = 0; r < rows; r++)
        gconv_batch_row(&b, vp, NCOLS, (uint32_t)r);
    Strike__V1__ScanBatch *m = strike__v1__scan_batch__unpack(NULL, b.len, b.data);
    if (m == NULL || m->snapshot != snapshot || m->n_columns != NCOLS || m->n_rows != rows)
        abort();
    for (size_t r = 0; r < rows; r++) {
        if (m->rows[r]->n_values != NCOLS)
            abort();
        for (int j = 0; j < NCOLS; j++) {
            const struct st_colvec *v = &vecs[j];
            const Strike__V1__Value *x = m->rows[r]->values[j];
            if (v->nulls[r]) {
                if (x->kind_case != STRIKE__V1__VALUE__KIND_NULL_VALUE || !x->null_value)
                    abort();
                continue;
            }
            bool ok;
            switch (v->type) {
            case ST_T_BOOLEAN:
                ok = x->kind_case == STRIKE__V1__VALUE__KIND_BOOL_VALUE &&
                     x->bool_value == v->v.b[r];
                break;
            case ST_T_INT:
                ok = x->kind_case == STRIKE__V1__VALUE__KIND_INT_VALUE && x->int_value == v->v.i[r];
                break;
            case ST_T_LONG:
                ok = x->kind_case == STRIKE__V1__VALUE__KIND_LONG_VALUE &&
                     x->long_value == v->v.l[r];
                break;
            case ST_T_TIMESTAMP:
                ok = x->kind_case == STRIKE__V1__VALUE__KIND_TIMESTAMP_VALUE &&
                     x->timestamp_value == v->v.l[r];
                break;
            case ST_T_DOUBLE:
                ok = x->kind_case == STRIKE__V1__VALUE__KIND_DOUBLE_VALUE &&
                     memcmp(&x->double_value, &v->v.d[r], 8) == 0;
                break;
            default: {
                size_t len = v->offs[r + 1] - v->offs[r];
                ok = x->kind_case == STRIKE__V1__VALUE__KIND_STRING_VALUE &&
                     strlen(x->string_value) == len &&
                     memcmp(x->string_value, v->sdata + v->offs[r], len) == 0;
            }
            }
            if (!ok)
                abort();
        }
    }
    strike__v1__scan_batch__free_unpacked(m, NULL);
    buf_free(&b);
    for (int j = 0; j < NCOLS; j++) {
        free(vecs[j].nulls);
        free(vecs[j].v.l);
        free(vecs[j].offs);
        free(vecs[j].sdata);
    }
#undef TAKE
}

static void misc(const uint8_t *p, size_t n)
{
    const char *svc;
    size_t sl;
    if (gconv_health_service(p, n, &svc, &sl) && sl != 0 &&
        (svc < (const char *)p || svc + sl > (const char *)p + n))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t sel = data[0];
    if (sel < 200)
        requests(sel, data + 1, size - 1);
    else if (sel < 230)
        batch(data + 1, size - 1);
    else
        misc(data + 1, size - 1);
    return 0;
}
