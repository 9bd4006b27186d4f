/*
 * iceberg.h - Iceberg v3 table metadata as files (apache/iceberg
 * format/spec.md): manifests and manifest lists (Avro object container
 * files, avro.h) and the table metadata JSON, from plain structs. Pure:
 * structs in, bytes out; no catalog, no blob store, no clock. The engine
 * (storage/engine/iceberg.c) decides what a snapshot holds and where the
 * files go; this module knows how the spec writes them.
 *
 * Choices the spec leaves open, made once here:
 *   - format version 3, one unpartitioned spec (id 0, no fields), one sort
 *     order (id 0, unsorted);
 *   - data_file.file_format is written "PARQUET" / "PUFFIN", as Iceberg
 *     Java and Spark write it (every reader compares it without case);
 *   - column statistics (value, null counts, bounds) by field id, bounds in
 *     the spec's single-value binary serialization (Appendix D);
 *   - a strike `timestamp` (microseconds, UTC) is Iceberg's `timestamptz`.
 */
#ifndef STRIKE_ICEBERG_H
#define STRIKE_ICEBERG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/types.h"

#define ICE_FORMAT_VERSION 3

/* A column of a table schema (a top-level field of its struct). */
struct ice_field {
    int32_t id; /* > 0 */
    const char *name;
    enum st_type type; /* boolean int long double string timestamp(tz) */
    bool required;
};

struct ice_schema {
    int32_t schema_id;
    const struct ice_field *fields;
    int nfields;
    const int32_t *identifier_ids; /* the primary key's field ids (identifier-field-ids) */
    int nidentifier;
};

/*
 * A data file's statistics of one column, by field id. Bounds are in the
 * spec's single-value binary serialization (ice_value_bytes), borrowed;
 * NULL when unknown.
 */
struct ice_col_stats {
    int32_t field_id;
    bool has_value_count, has_null_count;
    int64_t value_count; /* values, nulls included */
    int64_t null_count;
    const uint8_t *lower, *upper;
    size_t lower_len, upper_len;
};

enum ice_status { ICE_EXISTING = 0, ICE_ADDED = 1, ICE_DELETED = 2 };
enum ice_content { ICE_CONTENT_DATA = 0, ICE_CONTENT_POSITION_DELETES = 1 };

/*
 * One manifest entry. The snapshot id and the two sequence numbers are
 * written when has_* is set and null otherwise (inherited from the
 * manifest's list entry); the spec wants them explicit for EXISTING and
 * DELETED entries, ice_manifest_write refuses them null there.
 */
struct ice_entry {
    enum ice_status status;
    bool has_snapshot_id, has_sequence_number, has_file_sequence_number;
    int64_t snapshot_id;
    int64_t sequence_number;      /* data sequence number */
    int64_t file_sequence_number; /* the sequence number that added the file */
    enum ice_content content;
    const char *file_path; /* a fully qualified URI */
    int64_t record_count;  /* rows; a DV's cardinality */
    int64_t file_size_in_bytes;
    /* data files */
    const struct ice_col_stats *stats;
    int nstats;
    bool has_first_row_id;
    int64_t first_row_id;
    /* deletion vectors (content 1, a blob of a Puffin file) */
    const char *referenced_data_file;
    int64_t content_offset, content_size_in_bytes;
};

/* What a manifest list records of a manifest once it is written. */
struct ice_manifest_file {
    const char *manifest_path; /* URI */
    int64_t manifest_length;
    int32_t partition_spec_id; /* 0 */
    enum ice_content content;  /* data or deletes */
    int64_t sequence_number;   /* of the snapshot that added the manifest */
    int64_t min_sequence_number;
    int64_t added_snapshot_id;
    int32_t added_files_count, existing_files_count, deleted_files_count;
    int64_t added_rows_count, existing_rows_count, deleted_rows_count;
    bool has_first_row_id; /* data manifests (v3 row lineage) */
    int64_t first_row_id;
};

/*
 * A manifest of `content` for `schema`: the Avro container file (the spec's
 * v3 manifest_entry schema with its field ids; header keys schema,
 * schema-id, partition-spec, partition-spec-id, format-version, content)
 * appended to `out`. `info` (may be NULL) gets its counts, length and
 * min_sequence_number (of entries whose sequence number is explicit; -1
 * when none is): the caller fills path, sequence number, snapshot id and
 * first_row_id. ST_EINVAL for entries the spec forbids (a DV without its
 * referenced file, a DELETED entry without its sequence numbers, ...).
 */
int ice_manifest_write(const struct ice_schema *schema, enum ice_content content,
                       const struct ice_entry *entries, size_t n, struct buf *out,
                       struct ice_manifest_file *info, struct st_err *err);

/*
 * Read a manifest back (one this module wrote, or any v2/v3 manifest):
 * fn(ctx, entry) for each entry in file order, with the spec's inheritance
 * applied from the manifest's list record `from` (an ADDED entry's null
 * snapshot id, sequence numbers and first_row_id become explicit: the
 * first_row_id of the i-th entry without one is from->first_row_id plus
 * the record counts of those before it), so that has_* is set on every
 * entry whose value is known. The entry and what it points to live until
 * fn returns. fn's nonzero return stops the walk and is returned.
 * ST_ECORRUPT (the avro reader's message, or the field that is missing or
 * of another type) for a file that is not a manifest.
 */
int ice_manifest_read(const uint8_t *bytes, size_t len, const struct ice_manifest_file *from,
                      int (*fn)(void *ctx, const struct ice_entry *e), void *ctx,
                      struct st_err *err);

/*
 * The manifest list of a snapshot (manifest_file records, v3 schema; header
 * keys snapshot-id, parent-snapshot-id, sequence-number, first-row-id,
 * format-version), appended to `out`.
 */
struct ice_list_header {
    int64_t snapshot_id;
    bool has_parent;
    int64_t parent_snapshot_id;
    int64_t sequence_number;
    int64_t first_row_id;
};
int ice_manifest_list_write(const struct ice_list_header *h, const struct ice_manifest_file *m,
                            size_t n, struct buf *out, struct st_err *err);

struct ice_kv {
    const char *key, *value;
};

struct ice_snapshot {
    int64_t snapshot_id;
    bool has_parent;
    int64_t parent_snapshot_id;
    int64_t sequence_number;
    int64_t timestamp_ms;
    const char *manifest_list; /* URI */
    const char *operation;     /* append, replace, overwrite, delete */
    const struct ice_kv *summary; /* besides "operation" */
    size_t nsummary;
    int32_t schema_id;
    int64_t first_row_id, added_rows;
};

struct ice_metadata_log {
    int64_t timestamp_ms;
    const char *metadata_file; /* URI */
};

struct ice_table_metadata {
    const char *table_uuid;
    const char *location; /* URI, no trailing '/' */
    int64_t last_sequence_number;
    int64_t last_updated_ms;
    int32_t last_column_id;
    const struct ice_schema *schemas;
    int nschemas;
    int32_t current_schema_id;
    const struct ice_kv *properties;
    size_t nproperties;
    bool has_current_snapshot; /* none for a table without a snapshot */
    int64_t current_snapshot_id;
    const struct ice_snapshot *snapshots; /* oldest first; snapshot-log follows them */
    size_t nsnapshots;
    const struct ice_metadata_log *metadata_log; /* previous metadata files, oldest first */
    size_t nmetadata_log;
    int64_t next_row_id;
};

/* The table metadata file (TableMetadata, format-version 3), JSON; caller frees. */
char *ice_metadata_json(const struct ice_table_metadata *m);
/* One schema as the spec serializes it (Appendix C); caller frees. */
char *ice_schema_json(const struct ice_schema *s);
/* schema.name-mapping.default for a schema: [{"field-id":1,"names":["id"]},...]; caller frees. */
char *ice_name_mapping_json(const struct ice_schema *s);
/* "long", "timestamptz", ...: the Iceberg type of a strike type. */
const char *ice_type_name(enum st_type t);
/* The spec's single-value binary serialization of v (Appendix D), appended to out. */
void ice_value_bytes(enum st_type t, const struct st_value *v, struct buf *out);

#endif
