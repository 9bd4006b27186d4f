/*
 * iceberg.c - Iceberg's names of strike's types, single values as bytes
 * (Appendix D), and the JSON of schemas, name mappings and table metadata
 * (Appendix C, "Table Metadata"). Manifests and manifest lists are in
 * ice_manifest.c.
 *
 * The JSON is written by hand into a buffer, compact, keys in a fixed order
 * (Iceberg Java's TableMetadataParser order, so that a reader diffing our
 * file against Java's sees the same shape): the same input gives the same
 * bytes.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "ice_int.h"
#include "iceberg.h"

/* ------------------------------------------------------------- types and values */

const char *ice_type_name(enum st_type t)
{
    /* microseconds since the epoch, UTC: a point in time, Iceberg's timestamptz; every other
       type has the same name in both */
    const char *n = t == ST_T_TIMESTAMP ? "timestamptz" : st_type_name(t);
    assert(n != NULL && "ice_type_name: not a strike type");
    return n != NULL ? n : "unknown";
}

void ice_value_bytes(enum st_type t, const struct st_value *v, struct buf *out)
{
    assert(v != NULL && !v->null);
    uint8_t b[8];
    switch (t) {
    case ST_T_BOOLEAN:
        buf_put_u8(out, v->v.b ? 1 : 0);
        return;
    case ST_T_INT:
        st_u32le(b, (uint32_t)v->v.i);
        buf_append(out, b, 4);
        return;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        st_u64le(b, (uint64_t)v->v.l);
        buf_append(out, b, 8);
        return;
    case ST_T_DOUBLE: {
        uint64_t u;
        memcpy(&u, &v->v.d, 8);
        st_u64le(b, u);
        buf_append(out, b, 8);
        return;
    }
    case ST_T_STRING:
        buf_append(out, v->v.s.p, v->v.s.len);
        return;
    }
    assert(!"ice_value_bytes: not a strike type");
}

/* ------------------------------------------------------------- JSON */

bool ice__has_scheme(const char *s)
{
    if (s == NULL || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
        return false;
    for (s++; *s != ':'; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '+' || c == '-' || c == '.';
        if (!ok)
            return false;
    }
    return s[1] == '/';
}

/* Append s (UTF-8, asserted) as a JSON string. */
static void json_str(struct buf *b, const char *s)
{
    assert(s != NULL && st_utf8_valid((const uint8_t *)s, strlen(s)));
    buf_put_u8(b, '"');
    buf_append_json_escaped(b, s);
    buf_put_u8(b, '"');
}

static const struct ice_field *field_by_id(const struct ice_schema *s, int32_t id)
{
    for (int i = 0; i < s->nfields; i++)
        if (s->fields[i].id == id)
            return &s->fields[i];
    return NULL;
}

/*
 * identifier-field-ids are written only when every id names a required,
 * non-double field of the schema, once: the spec forbids float, double and
 * optional identifier fields, and Iceberg Java refuses to load a schema that
 * has one. A partial list would name another key, so an invalid list is
 * left out whole.
 */
static bool identifiers_valid(const struct ice_schema *s)
{
    if (s->nidentifier <= 0)
        return false;
    for (int i = 0; i < s->nidentifier; i++) {
        const struct ice_field *f = field_by_id(s, s->identifier_ids[i]);
        if (f == NULL || !f->required || f->type == ST_T_DOUBLE)
            return false;
        for (int j = 0; j < i; j++)
            if (s->identifier_ids[j] == s->identifier_ids[i])
                return false;
    }
    return true;
}

/* A default of type t as Appendix D's JSON single-value serialization. */
static void default_json(struct buf *b, enum st_type t, const struct st_value *v)
{
    char ts[ST_RFC3339_MAX];
    size_t n;
    switch (t) {
    case ST_T_BOOLEAN:
        buf_append_str(b, v->v.b ? "true" : "false");
        return;
    case ST_T_INT:
        buf_printf(b, "%" PRId32, v->v.i);
        return;
    case ST_T_LONG:
        buf_printf(b, "%" PRId64, v->v.l);
        return;
    case ST_T_DOUBLE: /* finite (a default is checked as a value); 17 digits round-trip */
        buf_printf(b, "%.17g", v->v.d);
        return;
    case ST_T_STRING: {
        char *z = xstrndup(v->v.s.p, v->v.s.len);
        json_str(b, z);
        free(z);
        return;
    }
    case ST_T_TIMESTAMP: /* timestamptz: ISO 8601 with the offset +00:00 */
        st_format_rfc3339(v->v.l, ts);
        n = strlen(ts);
        if (n > 0 && ts[n - 1] == 'Z')
            ts[--n] = '\0';
        buf_printf(b, "\"%s+00:00\"", ts);
        return;
    }
    assert(0 && "a default of an unknown type");
}

/* Append schema s as Appendix C serializes it (what ice_schema_json returns). */
static void schema_json(struct buf *b, const struct ice_schema *s)
{
    assert(s != NULL && s->nfields >= 0 && (s->nfields == 0 || s->fields != NULL));
    buf_printf(b, "{\"type\":\"struct\",\"schema-id\":%" PRId32, s->schema_id);
    if (identifiers_valid(s)) {
        buf_append_str(b, ",\"identifier-field-ids\":[");
        for (int i = 0; i < s->nidentifier; i++)
            buf_printf(b, "%s%" PRId32, i ? "," : "", s->identifier_ids[i]);
        buf_put_u8(b, ']');
    }
    buf_append_str(b, ",\"fields\":[");
    for (int i = 0; i < s->nfields; i++) {
        const struct ice_field *f = &s->fields[i];
        assert(f->id > 0 && f->name != NULL);
        buf_printf(b, "%s{\"id\":%" PRId32 ",\"name\":", i ? "," : "", f->id);
        json_str(b, f->name);
        buf_printf(b, ",\"required\":%s,\"type\":\"%s\"", f->required ? "true" : "false",
                   ice_type_name(f->type));
        if (f->initial_default != NULL) {
            assert(!f->initial_default->null);
            buf_append_str(b, ",\"initial-default\":");
            default_json(b, f->type, f->initial_default);
            buf_append_str(b, ",\"write-default\":");
            default_json(b, f->type, f->initial_default);
        }
        buf_put_u8(b, '}');
    }
    buf_append_str(b, "]}");
}

static char *detach(struct buf *b)
{
    return (char *)buf_detach(b, NULL);
}

char *ice_schema_json(const struct ice_schema *s)
{
    struct buf b = BUF_INIT;
    schema_json(&b, s);
    return detach(&b);
}

char *ice_name_mapping_json(const struct ice_schema *s)
{
    assert(s != NULL);
    struct buf b = BUF_INIT;
    buf_put_u8(&b, '[');
    for (int i = 0; i < s->nfields; i++) {
        buf_printf(&b, "%s{\"field-id\":%" PRId32 ",\"names\":[", i ? "," : "", s->fields[i].id);
        json_str(&b, s->fields[i].name);
        buf_append_str(&b, "]}");
    }
    buf_put_u8(&b, ']');
    return detach(&b);
}

static void kv_object(struct buf *b, const char *first_key, const char *first_value,
                      const struct ice_kv *kv, size_t n)
{
    buf_put_u8(b, '{');
    bool comma = false;
    if (first_key != NULL) {
        json_str(b, first_key);
        buf_put_u8(b, ':');
        json_str(b, first_value);
        comma = true;
    }
    for (size_t i = 0; i < n; i++) {
        assert(first_key == NULL || strcmp(kv[i].key, first_key) != 0);
        if (comma)
            buf_put_u8(b, ',');
        json_str(b, kv[i].key);
        buf_put_u8(b, ':');
        json_str(b, kv[i].value);
        comma = true;
    }
    buf_put_u8(b, '}');
}

static bool valid_operation(const char *op)
{
    static const char *const ops[] = {"append", "replace", "overwrite", "delete"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (op != NULL && strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

static void snapshot_json(struct buf *b, const struct ice_snapshot *s)
{
    assert(s->manifest_list != NULL);
    if (!valid_operation(s->operation))
        assert(!"ice_metadata_json: operation is append, replace, overwrite or delete");
    buf_printf(b, "{\"sequence-number\":%" PRId64 ",\"snapshot-id\":%" PRId64, s->sequence_number,
               s->snapshot_id);
    if (s->has_parent)
        buf_printf(b, ",\"parent-snapshot-id\":%" PRId64, s->parent_snapshot_id);
    buf_printf(b, ",\"timestamp-ms\":%" PRId64 ",\"summary\":", s->timestamp_ms);
    kv_object(b, "operation", s->operation, s->summary, s->nsummary);
    buf_append_str(b, ",\"manifest-list\":");
    json_str(b, s->manifest_list);
    buf_printf(
        b, ",\"schema-id\":%" PRId32 ",\"first-row-id\":%" PRId64 ",\"added-rows\":%" PRId64 "}",
        s->schema_id, s->first_row_id, s->added_rows);
}

char *ice_metadata_json(const struct ice_table_metadata *m)
{
    assert(m != NULL && m->table_uuid != NULL && m->location != NULL);
    assert(m->nschemas > 0 && m->schemas != NULL);
    bool current_schema = false;
    for (int i = 0; i < m->nschemas; i++)
        current_schema |= m->schemas[i].schema_id == m->current_schema_id;
    assert(current_schema);
    bool current_snapshot = !m->has_current_snapshot;
    for (size_t i = 0; i < m->nsnapshots; i++)
        current_snapshot |= m->snapshots[i].snapshot_id == m->current_snapshot_id;
    assert(current_snapshot);
    (void)current_schema;
    (void)current_snapshot;

    struct buf b = BUF_INIT;
    buf_printf(&b, "{\"format-version\":%d,\"table-uuid\":", ICE_FORMAT_VERSION);
    json_str(&b, m->table_uuid);
    buf_append_str(&b, ",\"location\":");
    json_str(&b, m->location);
    buf_printf(&b,
               ",\"last-sequence-number\":%" PRId64 ",\"last-updated-ms\":%" PRId64
               ",\"last-column-id\":%" PRId32 ",\"current-schema-id\":%" PRId32 ",\"schemas\":[",
               m->last_sequence_number, m->last_updated_ms, m->last_column_id,
               m->current_schema_id);
    for (int i = 0; i < m->nschemas; i++) {
        if (i)
            buf_put_u8(&b, ',');
        schema_json(&b, &m->schemas[i]);
    }
    /* one unpartitioned spec; partition field ids start at 1000, so none assigned is 999 */
    buf_append_str(&b,
                   "],\"default-spec-id\":0,\"partition-specs\":[{\"spec-id\":0,\"fields\":[]}],"
                   "\"last-partition-id\":999,\"default-sort-order-id\":0,"
                   "\"sort-orders\":[{\"order-id\":0,\"fields\":[]}],\"properties\":");
    kv_object(&b, NULL, NULL, m->properties, m->nproperties);
    if (m->has_current_snapshot)
        buf_printf(&b, ",\"current-snapshot-id\":%" PRId64, m->current_snapshot_id);
    else
        buf_append_str(&b, ",\"current-snapshot-id\":null");
    buf_printf(&b, ",\"next-row-id\":%" PRId64 ",\"refs\":{", m->next_row_id);
    if (m->has_current_snapshot)
        buf_printf(&b, "\"main\":{\"snapshot-id\":%" PRId64 ",\"type\":\"branch\"}",
                   m->current_snapshot_id);
    buf_append_str(&b, "},\"snapshots\":[");
    for (size_t i = 0; i < m->nsnapshots; i++) {
        if (i)
            buf_put_u8(&b, ',');
        snapshot_json(&b, &m->snapshots[i]);
    }
    buf_append_str(&b, "],\"statistics\":[],\"partition-statistics\":[],\"snapshot-log\":[");
    for (size_t i = 0; i < m->nsnapshots; i++)
        buf_printf(&b, "%s{\"timestamp-ms\":%" PRId64 ",\"snapshot-id\":%" PRId64 "}", i ? "," : "",
                   m->snapshots[i].timestamp_ms, m->snapshots[i].snapshot_id);
    buf_append_str(&b, "],\"metadata-log\":[");
    for (size_t i = 0; i < m->nmetadata_log; i++) {
        buf_printf(&b, "%s{\"timestamp-ms\":%" PRId64 ",\"metadata-file\":", i ? "," : "",
                   m->metadata_log[i].timestamp_ms);
        json_str(&b, m->metadata_log[i].metadata_file);
        buf_put_u8(&b, '}');
    }
    buf_append_str(&b, "]}");
    return detach(&b);
}
