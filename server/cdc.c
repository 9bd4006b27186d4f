/* cdc.c - Debezium change events into plain events (see cdc.h). */
#include "cdc.h"

#include "common/jdoc.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- media types ------------------------------------------------------------------ */

bool cdc_media_ok(const char *ct)
{
    if (ct == NULL)
        return true;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, "; \t");
    static const char *const ok[] = {
        "application/json",  "application/x-ndjson",
        "application/jsonl", "application/cloudevents+json",
        "text/plain",        "application/cloudevents-batch+json",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strlen(ok[i]) == n && strncasecmp(ct, ok[i], n) == 0)
            return true;
    return n == 0;
}

bool cdc_media_ndjson(const char *ct)
{
    if (ct == NULL)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, "; \t");
    return (n == 20 && strncasecmp(ct, "application/x-ndjson", n) == 0) ||
           (n == 17 && strncasecmp(ct, "application/jsonl", n) == 0);
}

/* ---- the decoding context --------------------------------------------------------- */

struct dctx {
    struct cdc_batch *b;
    size_t cap, capdocs;
    size_t index;         /* the next event's index */
    size_t table_changes; /* op 's' events made */
    struct st_err *err;
};

static struct cdc_event *push_event(struct dctx *c)
{
    struct cdc_batch *b = c->b;
    if (b->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        b->ev = xreallocarray(b->ev, c->cap, sizeof *b->ev);
    }
    struct cdc_event *e = &b->ev[b->n++];
    memset(e, 0, sizeof *e);
    return e;
}

static void keep_doc(struct dctx *c, struct jdoc *d)
{
    struct cdc_batch *b = c->b;
    if (b->ndocs == c->capdocs) {
        c->capdocs = c->capdocs ? 2 * c->capdocs : 8;
        b->docs = xreallocarray(b->docs, c->capdocs, sizeof *b->docs);
    }
    b->docs[b->ndocs++] = d;
}

/*
 * The batch's document: the pieces of a body parsed one by one (NDJSON
 * lines, the elements of an array) all go into its arena, so that a body of
 * many tiny events costs its tree, not a document each (an arena starts at
 * a few KiB). Created by the first piece, with room for `hint` bytes.
 */
static struct jdoc *batch_doc(struct dctx *c, size_t hint)
{
    if (c->b->ndocs == 0)
        keep_doc(c, jdoc_new(hint));
    return c->b->docs[0];
}

/* "event i (source): " or "event i: " before a message. */
static int event_err(struct dctx *c, size_t index, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int event_err(struct dctx *c, size_t index, const char *source, const char *fmt, ...)
{
    char msg[ST_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (source != NULL)
        return st_errf(c->err, ST_EINVAL, "event %zu (%.200s): %s", index, source, msg);
    return st_errf(c->err, ST_EINVAL, "event %zu: %s", index, msg);
}

/* ---- schemas and logical types ------------------------------------------------------ */

static enum cdc_logical logical_of(const struct jdoc_val *field_schema)
{
    const char *type = jdoc_str(jdoc_get(field_schema, "type"), NULL);
    const char *name = jdoc_str(jdoc_get(field_schema, "name"), NULL);
    if (name != NULL) {
        static const struct {
            const char *name;
            enum cdc_logical l;
        } map[] = {
            {"io.debezium.time.Timestamp", CDC_L_TS_MILLIS},
            {"org.apache.kafka.connect.data.Timestamp", CDC_L_TS_MILLIS},
            {"io.debezium.time.MicroTimestamp", CDC_L_TS_MICROS},
            {"io.debezium.time.NanoTimestamp", CDC_L_TS_NANOS},
            {"io.debezium.time.ZonedTimestamp", CDC_L_TS_ZONED},
            {"io.debezium.time.Date", CDC_L_DATE},
            {"org.apache.kafka.connect.data.Date", CDC_L_DATE},
            {"io.debezium.time.Time", CDC_L_TIME},
            {"io.debezium.time.MicroTime", CDC_L_TIME},
            {"io.debezium.time.NanoTime", CDC_L_TIME},
            {"io.debezium.time.ZonedTime", CDC_L_TIME},
            {"org.apache.kafka.connect.data.Time", CDC_L_TIME},
        };
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (strcmp(name, map[i].name) == 0)
                return map[i].l;
        if (strcmp(name, "org.apache.kafka.connect.data.Decimal") == 0 && type != NULL &&
            strcmp(type, "bytes") == 0)
            return CDC_L_DECIMAL_B64;
    }
    if (type != NULL && strcmp(type, "bytes") == 0)
        return CDC_L_BYTES;
    return CDC_L_NONE;
}

/* The strike type of a field of the JSON converter's schema (see cdc.h), 0: none fits. */
static enum st_type stype_of(const struct jdoc_val *field_schema)
{
    const char *type = jdoc_str(jdoc_get(field_schema, "type"), NULL);
    const char *name = jdoc_str(jdoc_get(field_schema, "name"), NULL);
    if (type == NULL)
        return 0;
    switch (name != NULL ? logical_of(field_schema) : CDC_L_NONE) {
    case CDC_L_TS_MILLIS:
    case CDC_L_TS_MICROS:
    case CDC_L_TS_NANOS:
    case CDC_L_TS_ZONED:
    case CDC_L_DATE:
        return ST_T_TIMESTAMP;
    case CDC_L_DECIMAL_B64:
        return ST_T_STRING;
    case CDC_L_NONE:
    case CDC_L_TIME:
    case CDC_L_BYTES:
        break;
    }
    static const struct {
        const char *type;
        enum st_type t;
    } map[] = {
        {"int8", ST_T_INT},      {"int16", ST_T_INT},      {"int32", ST_T_INT},
        {"int64", ST_T_LONG},    {"float32", ST_T_DOUBLE}, {"float64", ST_T_DOUBLE},
        {"float", ST_T_DOUBLE},  {"double", ST_T_DOUBLE},  {"boolean", ST_T_BOOLEAN},
        {"string", ST_T_STRING}, {"bytes", ST_T_STRING},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(type, map[i].type) == 0)
            return map[i].t;
    return 0; /* struct, array, map */
}

/* The strike type a value's JSON type says (no schema), 0 for null. */
static enum st_type stype_of_lit(const struct st_literal *l)
{
    switch (l->kind) {
    case LIT_BOOL:
        return ST_T_BOOLEAN;
    case LIT_INT:
        return ST_T_LONG;
    case LIT_DOUBLE:
        return ST_T_DOUBLE;
    case LIT_STRING:
        return ST_T_STRING;
    case LIT_NULL:
        break;
    }
    return 0;
}

/* The "fields" of the struct field `which` ("before"/"after") of an envelope schema, or NULL. */
static const struct jdoc_val *image_fields(const struct jdoc_val *schema, const char *which)
{
    const struct jdoc_val *fields = jdoc_get(schema, "fields");
    for (size_t i = 0; i < jdoc_size(fields); i++) {
        const struct jdoc_val *f = jdoc_at(fields, i);
        const char *name = jdoc_str(jdoc_get(f, "field"), NULL);
        if (name != NULL && strcmp(name, which) == 0)
            return jdoc_get(f, "fields");
    }
    return NULL;
}

/* The schema of field `name`, looked for at `hint` first (fields usually come in schema order). */
static const struct jdoc_val *field_schema(const struct jdoc_val *fields, size_t hint,
                                           const char *name)
{
    size_t n = jdoc_size(fields);
    if (hint < n) {
        const struct jdoc_val *f = jdoc_at(fields, hint);
        const char *fn = jdoc_str(jdoc_get(f, "field"), NULL);
        if (fn != NULL && strcmp(fn, name) == 0)
            return f;
    }
    for (size_t i = 0; i < n; i++) {
        const struct jdoc_val *f = jdoc_at(fields, i);
        const char *fn = jdoc_str(jdoc_get(f, "field"), NULL);
        if (fn != NULL && strcmp(fn, name) == 0)
            return f;
    }
    return NULL;
}

/* before or after of an event into `img` (arrays from the document's arena). */
static int read_image(struct dctx *c, struct jdoc *d, const struct cdc_event *e,
                      const struct jdoc_val *v, const struct jdoc_val *schema, const char *which,
                      struct cdc_image *img)
{
    memset(img, 0, sizeof *img);
    if (v == NULL || v->type == JDOC_NULL)
        return ST_OK;
    if (v->type != JDOC_OBJECT)
        return event_err(c, e->index, e->source, "%s: expected an object or null, got %s", which,
                         lit_jdoc_kind(v));
    const struct jdoc_val *fields = schema != NULL ? image_fields(schema, which) : NULL;
    size_t n = v->n;
    img->present = true;
    img->n = n;
    img->names = jdoc_alloc(d, (n ? n : 1) * sizeof *img->names);
    img->lits = jdoc_alloc(d, (n ? n : 1) * sizeof *img->lits);
    img->logical = jdoc_alloc(d, n ? n : 1);
    img->stype = jdoc_alloc(d, n ? n : 1);
    img->typed = fields != NULL;
    for (size_t i = 0; i < n; i++) {
        const struct jdoc_member *m = jdoc_member(v, i);
        img->names[i] = m->key.u.s;
        const struct jdoc_val *fs = fields != NULL ? field_schema(fields, i, m->key.u.s) : NULL;
        const char *lname = jdoc_str(jdoc_get(fs, "name"), NULL);
        if (jdoc_is(&m->val, JDOC_OBJECT) && lname != NULL &&
            strcmp(lname, "io.debezium.data.VariableScaleDecimal") == 0)
            return event_err(c, e->index, e->source,
                             "%s.%.128s: a variable-scale decimal cannot be stored; set "
                             "decimal.handling.mode=double or string",
                             which, m->key.u.s);
        struct st_err ferr = {0};
        if (lit_from_jdoc(&m->val, &img->lits[i], &ferr) != ST_OK)
            return event_err(c, e->index, e->source, "%s.%.128s: %s", which, m->key.u.s, ferr.msg);
        img->logical[i] = (uint8_t)(fs != NULL ? logical_of(fs) : CDC_L_NONE);
        img->stype[i] = (uint8_t)(fs != NULL ? stype_of(fs) : stype_of_lit(&img->lits[i]));
    }
    return ST_OK;
}

/* ---- positions --------------------------------------------------------------------- */

bool cdc_mysql_pos(int64_t file_no, int64_t pos, int64_t row, int64_t *out)
{
    if (file_no < 0 || file_no >= (INT64_C(1) << 20) || pos < 0 || pos >= (INT64_C(1) << 32) ||
        row < 0 || row >= (INT64_C(1) << 10))
        return false;
    *out = file_no << 42 | pos << 10 | row;
    return true;
}

/* An integer, or a string of decimal digits (CloudEvent attributes are often strings). */
static bool int_of(const struct jdoc_val *v, int64_t *out)
{
    if (jdoc_is(v, JDOC_INT)) {
        *out = v->u.i;
        return true;
    }
    if (!jdoc_is(v, JDOC_STRING) || v->n == 0 || v->n > 18)
        return false;
    int64_t x = 0;
    for (uint32_t i = 0; i < v->n; i++) {
        if (v->u.s[i] < '0' || v->u.s[i] > '9')
            return false;
        x = x * 10 + (v->u.s[i] - '0');
    }
    *out = x;
    return true;
}

/* The number of a binlog file name: the digits after its last '.' ("mysql-bin.000003": 3). */
static bool binlog_no(const char *file, int64_t *out)
{
    const char *dot = strrchr(file, '.');
    if (dot == NULL || dot[1] == '\0' || strlen(dot + 1) > 18)
        return false;
    int64_t x = 0;
    for (const char *p = dot + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        x = x * 10 + (*p - '0');
    }
    *out = x;
    return true;
}

/* Field `key` of the source: source.<key>, or the CloudEvent's iodebezium<key>. */
struct src {
    const struct jdoc_val *obj; /* payload.source, or NULL */
    const struct jdoc_val *ce;  /* the CloudEvent, or NULL */
};

static const struct jdoc_val *src_get(const struct src *s, const char *key)
{
    const struct jdoc_val *v = jdoc_get(s->obj, key);
    if (v == NULL && s->ce != NULL) {
        char k[64];
        snprintf(k, sizeof k, "iodebezium%s", key);
        v = jdoc_get(s->ce, k);
    }
    return v != NULL && v->type != JDOC_NULL ? v : NULL;
}

/* The first element of source.sequence, "[\"24023120\",\"24023128\"]": false when null or not
 * there. */
static bool sequence_commit(const struct jdoc_val *seq, int64_t *out)
{
    const char *p = jdoc_str(seq, NULL);
    if (p == NULL)
        return false;
    while (*p == ' ')
        p++;
    if (*p++ != '[')
        return false;
    while (*p == ' ')
        p++;
    if (*p++ != '"')
        return false;
    int64_t x = 0;
    int n = 0;
    for (; *p >= '0' && *p <= '9' && n < 19; p++, n++)
        x = x * 10 + (*p - '0');
    if (n == 0 || n > 18 || *p != '"')
        return false;
    *out = x;
    return true;
}

static int read_position(struct dctx *c, const struct src *s, struct cdc_event *e)
{
    const struct jdoc_val *snap = src_get(s, "snapshot");
    bool snapshot =
        (jdoc_is(snap, JDOC_STRING) && strcmp(snap->u.s, "false") != 0) || jdoc_true(snap);
    if (e->op == 'r' || snapshot)
        return ST_OK; /* a snapshot read repeats its position: at least once */
    const char *connector = jdoc_str(src_get(s, "connector"), NULL);
    const struct jdoc_val *lsn = src_get(s, "lsn");
    const struct jdoc_val *file = src_get(s, "file"), *pos = src_get(s, "pos");
    bool pg = connector != NULL ? strcmp(connector, "postgresql") == 0 : lsn != NULL;
    bool my = connector != NULL
                  ? strcmp(connector, "mysql") == 0 || strcmp(connector, "mariadb") == 0
                  : file != NULL && pos != NULL;
    int64_t base;
    if (pg && lsn != NULL) {
        if (!int_of(lsn, &base) || base < 0 || base >= (INT64_C(1) << 62))
            return event_err(c, e->index, e->source,
                             "source.lsn: expected an integer from 0 to 2^62, got %s",
                             lit_jdoc_kind(lsn));
        e->has_txpos = sequence_commit(src_get(s, "sequence"), &e->txpos);
    } else if (my && file != NULL && pos != NULL) {
        int64_t fno, p, row = 0;
        const struct jdoc_val *rowv = src_get(s, "row");
        if (!jdoc_is(file, JDOC_STRING) || !binlog_no(file->u.s, &fno))
            return event_err(c, e->index, e->source,
                             "source.file: expected a binlog file name ending in .NNNNNN");
        if (!int_of(pos, &p) || (rowv != NULL && !int_of(rowv, &row)))
            return event_err(c, e->index, e->source, "source.%s: expected an integer",
                             int_of(pos, &p) ? "row" : "pos");
        if (!cdc_mysql_pos(fno, p, row, &base))
            return event_err(c, e->index, e->source,
                             "source: binlog position out of range for exactly-once (file "
                             "number < 2^20, pos < 2^32, row < 2^10): file %" PRId64
                             ", pos %" PRId64 ", row %" PRId64,
                             fno, p, row);
    } else {
        return ST_OK;
    }
    e->has_pos = true;
    e->pos = 2 * base + (e->op == 'c'); /* a key change's delete, then its create */
    return ST_OK;
}

/* ---- one event --------------------------------------------------------------------- */

static const char *src_str(const struct src *s, const char *key)
{
    return jdoc_str(src_get(s, key), NULL);
}

/* "schema.table", "db.table" or "table" in the document's arena. */
static const char *source_name(struct jdoc *d, const struct cdc_event *e)
{
    if (e->table == NULL)
        return NULL;
    const char *pre = e->schema != NULL ? e->schema : e->db;
    if (pre == NULL)
        return e->table;
    size_t a = strlen(pre), b = strlen(e->table);
    char *s = jdoc_alloc(d, a + b + 2);
    memcpy(s, pre, a);
    s[a] = '.';
    memcpy(s + a + 1, e->table, b + 1);
    return s;
}

static int decode_payload(struct dctx *c, struct jdoc *d, size_t index,
                          const struct jdoc_val *payload, const struct jdoc_val *schema,
                          const struct jdoc_val *ce, const char *prefix);

/* The strike type of a column of a schema-change event, from its java.sql.Types jdbcType
   (typeName when there is none); 0: none fits. */
static enum st_type stype_of_jdbc(const struct jdoc_val *col)
{
    int64_t j;
    if (int_of(jdoc_get(col, "jdbcType"), &j)) {
        switch (j) {
        case -7: /* BIT */
        case 16: /* BOOLEAN */
            return ST_T_BOOLEAN;
        case -6: /* TINYINT */
        case 5:  /* SMALLINT */
        case 4:  /* INTEGER */
            return ST_T_INT;
        case -5: /* BIGINT */
            return ST_T_LONG;
        case 6: /* FLOAT */
        case 7: /* REAL */
        case 8: /* DOUBLE */
            return ST_T_DOUBLE;
        case 92: /* TIME: Debezium's MicroTime, microseconds of the day */
            return ST_T_LONG;
        case -2:   /* BINARY */
        case -3:   /* VARBINARY */
        case -4:   /* LONGVARBINARY */
        case 2004: /* BLOB: bytes, base64 */
            return ST_T_STRING;
        case 91:   /* DATE */
        case 93:   /* TIMESTAMP */
        case 2014: /* TIMESTAMP_WITH_TIMEZONE */
            return ST_T_TIMESTAMP;
        case 1:    /* CHAR */
        case 12:   /* VARCHAR */
        case -1:   /* LONGVARCHAR */
        case -15:  /* NCHAR */
        case -9:   /* NVARCHAR */
        case -16:  /* LONGNVARCHAR */
        case 2005: /* CLOB */
        case 2:    /* NUMERIC */
        case 3:    /* DECIMAL */
        case 1111: /* OTHER (json, uuid...) */
            return ST_T_STRING;
        default:
            return 0;
        }
    }
    const char *tn = jdoc_str(jdoc_get(col, "typeName"), NULL);
    if (tn == NULL)
        return 0;
    static const struct {
        const char *name;
        enum st_type t;
    } map[] = {
        {"INT", ST_T_INT},
        {"INTEGER", ST_T_INT},
        {"INT4", ST_T_INT},
        {"SMALLINT", ST_T_INT},
        {"INT2", ST_T_INT},
        {"BIGINT", ST_T_LONG},
        {"INT8", ST_T_LONG},
        {"DOUBLE", ST_T_DOUBLE},
        {"FLOAT", ST_T_DOUBLE},
        {"FLOAT8", ST_T_DOUBLE},
        {"REAL", ST_T_DOUBLE},
        {"BOOLEAN", ST_T_BOOLEAN},
        {"BOOL", ST_T_BOOLEAN},
        {"VARCHAR", ST_T_STRING},
        {"TEXT", ST_T_STRING},
        {"CHAR", ST_T_STRING},
        {"TIMESTAMP", ST_T_TIMESTAMP},
        {"DATETIME", ST_T_TIMESTAMP},
        {"DATE", ST_T_TIMESTAMP},
        {"TIMESTAMPTZ", ST_T_TIMESTAMP},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcasecmp(tn, map[i].name) == 0)
            return map[i].t;
    return 0;
}

/* The parts of a tableChanges id: "\"db\".\"table\"" or "\"db\".\"schema\".\"table\"" (quotes
   optional), into the arena; false when it has another shape. */
static bool split_table_id(struct jdoc *d, const char *id, const char *parts[3], int *nparts)
{
    *nparts = 0;
    const char *p = id;
    while (*p != '\0') {
        if (*nparts == 3)
            return false;
        bool q = *p == '"';
        const char *start = q ? p + 1 : p;
        const char *end = q ? strchr(start, '"') : start + strcspn(start, ".");
        if (end == NULL || end == start || (size_t)(end - start) > 255)
            return false;
        char *s = jdoc_alloc(d, (size_t)(end - start) + 1);
        memcpy(s, start, (size_t)(end - start));
        s[end - start] = '\0';
        parts[(*nparts)++] = s;
        p = q ? end + 1 : end;
        if (*p == '.')
            p++;
        else if (*p != '\0')
            return false;
    }
    return *nparts >= 1;
}

/*
 * A schema-change event: one event of op 's' for each tableChanges entry of
 * type CREATE or ALTER (see cdc.h); nothing of it otherwise (counted skipped).
 */
static int decode_schema_change(struct dctx *c, struct jdoc *d, size_t index,
                                const struct jdoc_val *payload, const struct src *s,
                                const char *prefix)
{
    const struct jdoc_val *changes = jdoc_get(payload, "tableChanges");
    size_t made = 0;
    if (changes != NULL && changes->type != JDOC_ARRAY && changes->type != JDOC_NULL)
        return event_err(c, index, NULL, "%stableChanges: expected an array, got %s", prefix,
                         lit_jdoc_kind(changes));
    for (size_t k = 0; k < jdoc_size(changes); k++) {
        const struct jdoc_val *ch = jdoc_at(changes, k);
        const char *type = jdoc_str(jdoc_get(ch, "type"), NULL);
        const char *id = jdoc_str(jdoc_get(ch, "id"), NULL);
        const struct jdoc_val *tab = jdoc_get(ch, "table");
        if (type == NULL || (strcmp(type, "CREATE") != 0 && strcmp(type, "ALTER") != 0))
            continue; /* DROP, TRUNCATE: nothing to learn */
        if (++c->table_changes > CDC_TABLE_CHANGES_MAX)
            return st_errf(c->err, ST_ETOOBIG,
                           "event %zu: the body's schema-change events describe more than %d "
                           "tables; send fewer at once",
                           index, CDC_TABLE_CHANGES_MAX);
        struct cdc_event tmp = {.index = index, .op = 's'};
        tmp.name = src_str(s, "name");
        const char *parts[3];
        int np;
        if (id == NULL || !split_table_id(d, id, parts, &np))
            return event_err(c, index, NULL, "%stableChanges[%zu].id: expected \"db\".\"table\"",
                             prefix, k);
        tmp.table = parts[np - 1];
        if (np == 3) {
            tmp.db = parts[0];
            tmp.schema = parts[1];
        } else if (np == 2) {
            tmp.db = parts[0];
        }
        tmp.source = source_name(d, &tmp);
        const struct jdoc_val *cols = jdoc_get(tab, "columns");
        if (!jdoc_is(cols, JDOC_ARRAY))
            return event_err(c, index, tmp.source, "%stableChanges[%zu].table.columns: required",
                             prefix, k);
        size_t n = jdoc_size(cols);
        struct cdc_image *img = &tmp.after;
        img->present = true;
        img->typed = true;
        img->n = n;
        img->names = jdoc_alloc(d, (n ? n : 1) * sizeof *img->names);
        img->lits = jdoc_alloc(d, (n ? n : 1) * sizeof *img->lits);
        img->logical = jdoc_alloc(d, n ? n : 1);
        img->stype = jdoc_alloc(d, n ? n : 1);
        for (size_t i = 0; i < n; i++) {
            const struct jdoc_val *col = jdoc_at(cols, i);
            const char *name = jdoc_str(jdoc_get(col, "name"), NULL);
            if (name == NULL)
                return event_err(c, index, tmp.source,
                                 "%stableChanges[%zu].table.columns[%zu].name: required", prefix, k,
                                 i);
            img->names[i] = name;
            img->lits[i] = (struct st_literal){.kind = LIT_NULL};
            img->logical[i] = CDC_L_NONE;
            img->stype[i] = (uint8_t)stype_of_jdbc(col);
        }
        const struct jdoc_val *pk = jdoc_get(tab, "primaryKeyColumnNames");
        tmp.npk = jdoc_size(pk);
        tmp.pk = jdoc_alloc(d, (tmp.npk ? tmp.npk : 1) * sizeof *tmp.pk);
        for (size_t i = 0; i < tmp.npk; i++)
            if ((tmp.pk[i] = jdoc_str(jdoc_at(pk, i), NULL)) == NULL)
                return event_err(c, index, tmp.source,
                                 "%stableChanges[%zu].table.primaryKeyColumnNames[%zu]: expected a "
                                 "string",
                                 prefix, k, i);
        *push_event(c) = tmp;
        made++;
    }
    if (made == 0)
        c->b->nskipped++; /* a ddl alone, a DROP, an empty tableChanges */
    return ST_OK;
}

static int decode_event(struct dctx *c, struct jdoc *d, const struct jdoc_val *v)
{
    size_t index = c->index++;
    if (c->index > CDC_EVENTS_MAX)
        return st_errf(c->err, ST_ETOOBIG, "the body holds more than %d events", CDC_EVENTS_MAX);
    if (v->type == JDOC_NULL) {
        c->b->nskipped++;
        return ST_OK;
    }
    if (v->type != JDOC_OBJECT)
        return event_err(c, index, NULL, "expected an event object, got %s", lit_jdoc_kind(v));
    struct src s = {0};
    const struct jdoc_val *payload = v, *schema = NULL;
    const char *prefix = "";
    if (jdoc_get(v, "specversion") != NULL) { /* a structured CloudEvent */
        s.ce = v;
        payload = jdoc_get(v, "data");
        prefix = "data.";
        if (payload == NULL)
            return event_err(c, index, NULL, "data: required in a CloudEvent");
    }
    if (jdoc_is(payload, JDOC_OBJECT) && payload->n == 2 && jdoc_get(payload, "payload") != NULL &&
        jdoc_get(payload, "schema") != NULL) { /* the JSON converter's wrapper */
        schema = jdoc_get(payload, "schema");
        payload = jdoc_get(payload, "payload");
        prefix = s.ce != NULL ? "data.payload." : "payload.";
    }
    return decode_payload(c, d, index, payload, schema, s.ce, prefix);
}

/* An event's payload (and its schema, NULL: none) once unwrapped; `ce`: the CloudEvent, or NULL. */
static int decode_payload(struct dctx *c, struct jdoc *d, size_t index,
                          const struct jdoc_val *payload, const struct jdoc_val *schema,
                          const struct jdoc_val *ce, const char *prefix)
{
    struct src s = {.ce = ce};
    if (payload->type == JDOC_NULL) { /* a tombstone */
        c->b->nskipped++;
        return ST_OK;
    }
    if (payload->type != JDOC_OBJECT)
        return event_err(c, index, NULL, "%.20spayload: expected an object, got %s", prefix,
                         lit_jdoc_kind(payload));
    s.obj = jdoc_get(payload, "source");
    if (s.obj != NULL && s.obj->type != JDOC_OBJECT && s.obj->type != JDOC_NULL)
        return event_err(c, index, NULL, "%.20ssource: expected an object, got %s", prefix,
                         lit_jdoc_kind(s.obj));
    if (jdoc_get(payload, "ddl") != NULL || jdoc_get(payload, "tableChanges") != NULL)
        return decode_schema_change(c, d, index, payload, &s, prefix);
    const struct jdoc_val *opv = jdoc_get(payload, "op");
    if (opv == NULL && s.ce != NULL)
        opv = jdoc_get(s.ce, "iodebeziumop");
    const struct jdoc_val *before = jdoc_get(payload, "before"),
                          *after = jdoc_get(payload, "after");
    struct cdc_event tmp = {.index = index};
    tmp.name = src_str(&s, "name");
    tmp.db = src_str(&s, "db");
    tmp.schema = src_str(&s, "schema");
    tmp.table = src_str(&s, "table");
    tmp.source = source_name(d, &tmp);
    if (opv == NULL || opv->type == JDOC_NULL) {
        if (before == NULL && after == NULL) {
            c->b->nskipped++; /* a heartbeat or a transaction boundary */
            return ST_OK;
        }
        return event_err(c, index, tmp.source, "%sop: required with before/after", prefix);
    }
    const char *op = jdoc_str(opv, NULL);
    if (op == NULL || strlen(op) != 1 || strchr("crudtm", op[0]) == NULL)
        return event_err(c, index, tmp.source,
                         "%sop: expected \"c\", \"r\", \"u\", \"d\", \"t\" or \"m\", got %s%.20s%s",
                         prefix, op ? "\"" : "", op ? op : lit_jdoc_kind(opv), op ? "\"" : "");
    if (op[0] == 'm') {
        c->b->nskipped++; /* a logical decoding message */
        return ST_OK;
    }
    tmp.op = op[0];
    int rc;
    if ((rc = read_image(c, d, &tmp, before, schema, "before", &tmp.before)) != ST_OK ||
        (rc = read_image(c, d, &tmp, after, schema, "after", &tmp.after)) != ST_OK ||
        (rc = read_position(c, &s, &tmp)) != ST_OK)
        return rc;
    if ((tmp.op == 'c' || tmp.op == 'r' || tmp.op == 'u') && !tmp.after.present)
        return event_err(c, index, tmp.source, "%safter: required (an object) for op \"%c\"",
                         prefix, tmp.op);
    if (tmp.op == 'd' && !tmp.before.present)
        return event_err(c, index, tmp.source,
                         "%sbefore: required (an object with the key) for op \"d\"", prefix);
    *push_event(c) = tmp;
    return ST_OK;
}

/* One JSON text (the whole body or an NDJSON line) in d: an event, an array of them, or null. */
static int decode_root(struct dctx *c, struct jdoc *d, const struct jdoc_val *root, bool array_ok)
{
    if (root->type != JDOC_ARRAY)
        return decode_event(c, d, root);
    if (!array_ok)
        return st_errf(c->err, ST_EINVAL, "event %zu: expected an event object, got array",
                       c->index);
    if (root->n == 0)
        c->b->nskipped++;
    for (size_t i = 0; i < root->n; i++) {
        int rc = decode_event(c, d, jdoc_at(root, i));
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return false;
    return true;
}

static int decode_ndjson(struct dctx *c, const char *p, size_t len)
{
    struct jdoc_opts o = {.flags = JDOC_ANY_ROOT};
    size_t line = 0;
    while (len > 0) {
        const char *nl = memchr(p, '\n', len);
        size_t n = nl ? (size_t)(nl - p) : len;
        line++;
        if (!blank(p, n)) {
            struct jdoc_error je;
            struct jdoc *d = batch_doc(c, len);
            const struct jdoc_val *v = jdoc_parse_into(d, p, n, &o, &je);
            if (v == NULL)
                return st_errf(c->err, ST_EINVAL, "line %zu (event %zu): not JSON: %s (column %d)",
                               line, c->index, je.text, je.column);
            int rc = decode_root(c, d, v, false);
            if (rc != ST_OK)
                return rc;
        }
        p += n;
        len -= n;
        if (nl != NULL) {
            p++;
            len--;
        }
    }
    return ST_OK;
}

/* ---- the fast path: arrays of wrapped events --------------------------------------
 *
 * Debezium's JSON converter repeats the whole schema in every event, so a
 * batch of 200 is mostly the same schema 200 times. For a body that is an
 * array, each element is parsed on its own, and an element of the form
 * {"schema":S,"payload":P} (those two members in that order) has P parsed
 * alone and S parsed only when its bytes differ from the previous event's
 * schema (the same bytes are the same tree). The pieces between the parsed
 * values are checked here (whitespace and punctuation), the values by jdoc
 * at the depth they have in the whole body, so that the fast path accepts
 * exactly what a parse of the whole body accepts; anything it does not
 * expect, and every refusal, goes to the whole-body parse (fast_array
 * answers FAST_NO), which words the error: a body both wrong in an early
 * event and broken JSON later gets the answer of the whole body.
 */

enum { FAST_OK = 0, FAST_NO = 1 };

static size_t skip_ws(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i;
}

/* The end of the JSON value at p[i] (strings and nesting only; jdoc checks the rest), or 0. */
static size_t skip_value(const char *p, size_t i, size_t n)
{
    size_t depth = 0;
    if (i >= n)
        return 0;
    if (p[i] != '"' && p[i] != '{' && p[i] != '[') { /* a scalar: up to a delimiter */
        while (i < n && strchr(" \t\r\n,]}:[{\"", p[i]) == NULL)
            i++;
        return i;
    }
    while (i < n) {
        char ch = p[i];
        if (ch == '"') { /* to the next quote after an even run of backslashes */
            for (i++;;) {
                const char *q = i < n ? memchr(p + i, '"', n - i) : NULL;
                if (q == NULL)
                    return 0;
                size_t k = (size_t)(q - p), bs = 0;
                while (k - bs > i && p[k - bs - 1] == '\\')
                    bs++;
                i = k + 1;
                if (bs % 2 == 0)
                    break;
            }
        } else if (ch == '{' || ch == '[') {
            depth++;
            i++;
        } else if (ch == '}' || ch == ']') {
            if (depth == 0)
                return 0;
            depth--;
            i++;
        } else {
            i++;
        }
        if (depth == 0)
            return i;
    }
    return 0;
}

/* Parse p[a..b) alone, as a value found at nesting `level` of the body (the root is 0), into
   the batch's document (the whole body's length n: the arena's first hint). */
static const struct jdoc_val *parse_at(struct dctx *c, const char *p, size_t a, size_t b, size_t n,
                                       unsigned level)
{
    struct jdoc_opts o = {.max_depth = JDOC_DEPTH_DEFAULT - level, .flags = JDOC_ANY_ROOT};
    return jdoc_parse_into(batch_doc(c, n), p + a, b - a, &o, NULL);
}

/* Match `lit` at p[i]; its end, or 0. */
static size_t expect(const char *p, size_t i, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return i + l <= n && memcmp(p + i, lit, l) == 0 ? i + l : 0;
}

/* The payload p[p0..p1) of a wrapped event, with its schema's tree. */
static int fast_payload(struct dctx *c, const char *p, size_t p0, size_t p1, size_t n,
                        const struct jdoc_val *schema)
{
    const struct jdoc_val *pv = parse_at(c, p, p0, p1, n, 2);
    if (pv == NULL)
        return FAST_NO;
    size_t index = c->index++;
    if (c->index > CDC_EVENTS_MAX)
        return FAST_NO;
    return decode_payload(c, c->b->docs[0], index, pv, schema, NULL, "payload.") == ST_OK ? FAST_OK
                                                                                          : FAST_NO;
}

/* The schema of the previous wrapped event: its bytes in the body and its tree. */
struct prev_schema {
    const char *s;
    size_t len;
    const struct jdoc_val *tree;
};

/*
 * The element at p[a..n): *end receives where it ends. A wrapped event
 * {"schema":S,"payload":P} whose S has the bytes of the previous one (an
 * object, so those bytes end where it ends) reuses its tree unscanned.
 */
static int fast_element(struct dctx *c, const char *p, size_t a, size_t n, size_t *end,
                        struct prev_schema *prev)
{
    size_t i, s0, s1 = 0, p0, p1 = 0;
    bool wrapped = (i = expect(p, a, n, "{")) != 0 &&
                   (i = expect(p, skip_ws(p, i, n), n, "\"schema\"")) != 0 &&
                   (i = expect(p, skip_ws(p, i, n), n, ":")) != 0;
    bool same = false;
    if (wrapped) {
        s0 = skip_ws(p, i, n);
        same = prev->tree != NULL && n - s0 >= prev->len && memcmp(p + s0, prev->s, prev->len) == 0;
        s1 = same ? s0 + prev->len : skip_value(p, s0, n);
        wrapped = s1 != 0 && (i = expect(p, skip_ws(p, s1, n), n, ",")) != 0 &&
                  (i = expect(p, skip_ws(p, i, n), n, "\"payload\"")) != 0 &&
                  (i = expect(p, skip_ws(p, i, n), n, ":")) != 0 &&
                  (p1 = skip_value(p, p0 = skip_ws(p, i, n), n)) != 0 &&
                  (i = expect(p, skip_ws(p, p1, n), n, "}")) != 0;
    }
    if (!wrapped) {
        size_t e = skip_value(p, a, n);
        if (e == 0)
            return FAST_NO;
        const struct jdoc_val *v = parse_at(c, p, a, e, n, 1);
        if (v == NULL)
            return FAST_NO;
        *end = e;
        return decode_event(c, c->b->docs[0], v) == ST_OK ? FAST_OK : FAST_NO;
    }
    *end = i;
    if (!same) {
        const struct jdoc_val *sv = parse_at(c, p, s0, s1, n, 2);
        if (sv == NULL)
            return FAST_NO;
        prev->tree = sv;
        /* only an object's bytes end where it ends: another value is parsed every time */
        prev->s = p[s0] == '{' ? p + s0 : NULL;
        prev->len = p[s0] == '{' ? s1 - s0 : 0;
        if (prev->s == NULL) {
            const struct jdoc_val *tree = prev->tree;
            prev->tree = NULL;
            return fast_payload(c, p, p0, p1, n, tree);
        }
    }
    return fast_payload(c, p, p0, p1, n, prev->tree);
}

/* A body that is an array, element by element (see above): FAST_OK, or FAST_NO for anything
   else, refusals included (the whole-body parse answers those, the same way every time). */
static int fast_array(struct dctx *c, const char *p, size_t n)
{
    size_t i = skip_ws(p, 0, n);
    if (i >= n || p[i] != '[')
        return FAST_NO;
    i = skip_ws(p, i + 1, n);
    if (i < n && p[i] == ']')
        return FAST_NO; /* [] is the whole-body path's */
    struct prev_schema prev = {0};
    for (;;) {
        size_t e;
        if (fast_element(c, p, i, n, &e, &prev) != FAST_OK)
            return FAST_NO;
        i = skip_ws(p, e, n);
        if (i < n && p[i] == ',') {
            i = skip_ws(p, i + 1, n);
            continue;
        }
        if (i < n && p[i] == ']')
            return skip_ws(p, i + 1, n) == n ? FAST_OK : FAST_NO;
        return FAST_NO;
    }
}

static int decode(const void *body, size_t len, const char *content_type, bool fast,
                  struct cdc_batch *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    struct dctx c = {.b = out, .err = err};
    const char *p = body;
    int rc;
    if (len == 0 || blank(p, len)) {
        out->nskipped = 1; /* an empty body: a tombstone */
        return ST_OK;
    }
    if (cdc_media_ndjson(content_type)) {
        rc = decode_ndjson(&c, p, len);
    } else if (fast && fast_array(&c, p, len) == FAST_OK) {
        rc = ST_OK;
    } else {
        if (fast) { /* start over on the whole body */
            cdc_batch_free(out);
            c = (struct dctx){.b = out, .err = err};
            st_err_clear(err);
        }
        struct jdoc_opts o = {.flags = JDOC_ANY_ROOT};
        struct jdoc_error je;
        struct jdoc *d = jdoc_parse(p, len, &o, &je);
        if (d != NULL) {
            keep_doc(&c, d);
            rc = decode_root(&c, d, jdoc_root(d), true);
        } else {
            /* NDJSON without its Content-Type (Kafka Connect sinks send application/json) */
            const char *nl = memchr(p, '\n', len);
            struct jdoc *first = nl != NULL ? jdoc_parse(p, (size_t)(nl - p), &o, NULL) : NULL;
            jdoc_free(first);
            if (first != NULL && !blank(nl, len - (size_t)(nl - p)))
                rc = decode_ndjson(&c, p, len);
            else
                rc = st_errf(err, ST_EINVAL, "the body is not JSON: %s (line %d, column %d)",
                             je.text, je.line, je.column);
        }
    }
    if (rc != ST_OK)
        cdc_batch_free(out);
    return rc;
}

int cdc_decode(const void *body, size_t len, const char *content_type, struct cdc_batch *out,
               struct st_err *err)
{
    return decode(body, len, content_type, true, out, err);
}

int cdc_decode_whole(const void *body, size_t len, const char *content_type, struct cdc_batch *out,
                     struct st_err *err)
{
    return decode(body, len, content_type, false, out, err);
}

void cdc_batch_free(struct cdc_batch *b)
{
    for (size_t i = 0; i < b->ndocs; i++)
        jdoc_free(b->docs[i]);
    free(b->docs);
    free(b->ev);
    memset(b, 0, sizeof *b);
}

/* ---- values ------------------------------------------------------------------------ */

/* A decimal string ("123.45", "-1e3") as a double: digits, sign, point and exponent only. */
static bool number_of(const char *s, size_t n, double *out)
{
    if (n == 0 || n > 64)
        return false;
    char buf[65];
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!(isdigit((unsigned char)ch) || ch == '-' || ch == '+' || ch == '.' || ch == 'e' ||
              ch == 'E'))
            return false;
        buf[i] = ch;
    }
    buf[n] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (end != buf + n || !isfinite(d))
        return false;
    *out = d;
    return true;
}

static int scale(const struct st_literal *in, int64_t mul, struct st_literal *out,
                 struct st_err *err)
{
    if (in->i > INT64_MAX / mul || in->i < INT64_MIN / mul)
        return st_errf(err, ST_EINVAL, "%" PRId64 " is out of range for a timestamp", in->i);
    *out = *in;
    out->i = in->i * mul;
    return ST_OK;
}

int cdc_value(const struct st_literal *in, enum cdc_logical logical, enum st_type t,
              struct st_literal *out, struct st_err *err)
{
    *out = *in;
    if (in->kind == LIT_NULL)
        return ST_OK;
    switch (logical) {
    case CDC_L_TS_MILLIS:
        if (t == ST_T_TIMESTAMP && in->kind == LIT_INT)
            return scale(in, 1000, out, err);
        break;
    case CDC_L_TS_NANOS:
        if (t == ST_T_TIMESTAMP && in->kind == LIT_INT) {
            int64_t q = in->i / 1000, r = in->i % 1000;
            out->i = r < 0 ? q - 1 : q; /* floor: before 1970 too */
        }
        break;
    case CDC_L_DATE:
        if (t == ST_T_TIMESTAMP && in->kind == LIT_INT)
            return scale(in, INT64_C(86400000000), out, err);
        break;
    case CDC_L_TIME:
        if (t == ST_T_TIMESTAMP)
            return st_errf(err, ST_EINVAL,
                           "a time of day (no date) cannot go into a timestamp column");
        break;
    case CDC_L_DECIMAL_B64:
        if (t != ST_T_STRING)
            return st_errf(err, ST_EINVAL,
                           "a decimal as base64 bytes (decimal.handling.mode=precise) needs a "
                           "string column; set decimal.handling.mode=double or string");
        break;
    case CDC_L_NONE:
    case CDC_L_TS_MICROS:
    case CDC_L_TS_ZONED:
    case CDC_L_BYTES:
        break;
    }
    if (t == ST_T_DOUBLE && in->kind == LIT_STRING) {
        double d;
        if (!number_of(in->s, in->slen, &d))
            return st_errf(err, ST_EINVAL, "expected double, got a string that is not a number");
        out->kind = LIT_DOUBLE;
        out->d = d;
    }
    return ST_OK;
}
