/*
 * iceberg.h - Iceberg v3 table metadata as files (apache/iceberg
 * format/spec.md): manifests and manifest lists (Avro object container
 * files, avro.h) and the table metadata JSON, from plain structs. Pure:
 * structs in, bytes out; no catalog, no blob store, no clock. The engine
 * (storage/engine/iceberg.c) decides what a snapshot holds and where the
 * files go; this module knows how the spec writes them.
 *
 * Choices the spec leaves open, made once here:
 *   - format version 3, one unpartitioned spec (id 0, no fields;
 *     last-partition-id 999, as Iceberg Java writes it: partition field ids
 *     start at 1000), one sort order (id 0, unsorted);
 *   - data_file.file_format is written "PARQUET" / "PUFFIN", as Iceberg
 *     Java and Spark write it (every reader compares it without case; the
 *     spec's text spells it in lower case);
 *   - column statistics (value, null, NaN counts, bounds) by field id,
 *     bounds in the spec's single-value binary serialization (Appendix D); a
 *     map no column has a value for is written null; column_sizes,
 *     split_offsets, key_metadata, equality_ids are always null;
 *     sort_order_id is 0 (unsorted) for data files and null for DVs;
 *   - the manifest list's partitions is an empty list (Java writes that for
 *     an unpartitioned spec: one summary per partition field, none here);
 *   - header keys of a manifest list, which the spec does not name: those
 *     Iceberg Java writes (snapshot-id, parent-snapshot-id - "null" without a
 *     parent -, sequence-number, first-row-id, format-version);
 *   - JSON: compact, keys in Iceberg Java's order; a table without snapshots
 *     has "current-snapshot-id": null and no main ref, as Java 1.10 writes it;
 *   - a strike `timestamp` (microseconds, UTC) is Iceberg's `timestamptz`.
 *
 * Everything is deterministic: the same structs give the same bytes.
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
    /* v3's initial-default and write-default (the same value: the value of the rows written
       before the field existed and of those written without it), NULL: none (not null) */
    const struct st_value *initial_default;
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
 * NULL when unknown. For doubles the bounds exclude NaN (the spec forbids
 * NaN bounds) and nan_count says how many there are.
 */
struct ice_col_stats {
    int32_t field_id;
    bool has_value_count, has_null_count;
    int64_t value_count; /* values, nulls included */
    int64_t null_count;
    bool has_nan_count; /* doubles: how many values are NaN (bounds never are) */
    int64_t nan_count;
    const uint8_t *lower, *upper; /* NULL: unknown; length 0 is the empty string */
    size_t lower_len, upper_len;
};

enum ice_status { ICE_EXISTING = 0, ICE_ADDED = 1, ICE_DELETED = 2 };
enum ice_content { ICE_CONTENT_DATA = 0, ICE_CONTENT_POSITION_DELETES = 1 };

/*
 * One manifest entry. The snapshot id and the two sequence numbers are
 * written when has_* is set and null otherwise (inherited from the
 * manifest's list entry); the spec wants the sequence numbers explicit for
 * EXISTING and DELETED entries, and ice_manifest_write refuses those three
 * null there. A data file's first_row_id is null when ADDED (inherited) and
 * written when EXISTING or DELETED; a DV never has one.
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
 * min_sequence_number (of live entries whose sequence number is explicit; -1
 * when none is): the caller fills path, sequence number, snapshot id and
 * first_row_id. ST_EINVAL naming the entry, with nothing appended, for what
 * the spec forbids: an entry whose content is not the manifest's, an
 * EXISTING or DELETED entry without its snapshot id and both sequence
 * numbers, a data sequence number above the file sequence number, a
 * file_path or referenced_data_file that is not a full URI with a scheme,
 * negative counts, statistics of one field id twice, a data file with a
 * referenced_data_file, a DV without its referenced file, with a first_row_id
 * or whose blob [content_offset, +content_size_in_bytes) does not lie in the
 * Puffin file after its magic (offset >= 4, size > 0).
 */
int ice_manifest_write(const struct ice_schema *schema, enum ice_content content,
                       const struct ice_entry *entries, size_t n, struct buf *out,
                       struct ice_manifest_file *info, struct st_err *err);

/*
 * Read a manifest back (one this module wrote, or any v1-v3 manifest):
 * fn(ctx, entry) for each entry in file order, with the spec's inheritance
 * applied from the manifest's list record `from` (may be NULL: nothing is
 * inherited). A null snapshot id becomes from->added_snapshot_id; an ADDED
 * entry's null sequence numbers become from->sequence_number; with
 * from->has_first_row_id, the i-th data file without a first_row_id gets
 * from->first_row_id plus the record counts of those before it that had
 * none (whatever their status). v1 manifests (no sequence numbers) read as
 * sequence number 0. So has_* is set on every entry whose value is known.
 * Statistics come in ascending field id; bounds point into `bytes`. The
 * entry and its strings live until fn returns. fn's nonzero return stops
 * the walk and is returned. ST_ECORRUPT (the avro reader's message, or the
 * entry and field that is missing, of another type or out of range; a
 * header content that is not from->content) for a file that is not a
 * manifest; ST_EUNSUPPORTED naming what the entry struct cannot carry
 * (equality deletes, position delete files that are not Puffin DVs, data
 * files that are not Parquet, partitions, key_metadata, format-version > 3).
 */
int ice_manifest_read(const uint8_t *bytes, size_t len, const struct ice_manifest_file *from,
                      int (*fn)(void *ctx, const struct ice_entry *e), void *ctx,
                      struct st_err *err);

/*
 * The manifest list of a snapshot (manifest_file records, v3 schema; header
 * keys snapshot-id, parent-snapshot-id, sequence-number, first-row-id,
 * format-version), appended to `out`. ST_EINVAL naming the manifest, with
 * nothing appended, for a manifest_path that is not a URI, a length <= 0, a
 * partition spec other than 0, negative counts, a sequence number above the
 * snapshot's (or, for a manifest this snapshot added, other than its own), a
 * min_sequence_number outside [0, sequence_number], a data manifest without
 * a first_row_id (v3 assigns one to every data manifest) or a delete manifest
 * with one.
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
    const char *manifest_list;    /* URI */
    const char *operation;        /* append, replace, overwrite, delete */
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

/*
 * The table metadata file (TableMetadata, format-version 3), JSON; caller
 * frees. The snapshot-log lists `snapshots` in order (strike's history is
 * linear, main only); refs has main -> current-snapshot-id. Strings must be
 * UTF-8 and the current schema and snapshot must be in their lists
 * (asserted).
 */
char *ice_metadata_json(const struct ice_table_metadata *m);
/*
 * One schema as the spec serializes it (Appendix C); caller frees.
 * identifier-field-ids is written only when every id names a required field
 * of the schema that is not a double, once (the spec forbids the others and
 * Iceberg Java refuses such a schema); otherwise it is left out whole.
 */
char *ice_schema_json(const struct ice_schema *s);
/* schema.name-mapping.default for a schema: [{"field-id":1,"names":["id"]},...]; caller frees. */
char *ice_name_mapping_json(const struct ice_schema *s);
/* "long", "timestamptz", ...: the Iceberg type of a strike type. */
const char *ice_type_name(enum st_type t);
/*
 * The spec's single-value binary serialization of v (Appendix D), appended
 * to out: boolean 0x00/0x01, int 4 and long, double, timestamptz 8 bytes
 * little-endian, string its UTF-8 bytes. v is not null (asserted).
 */
void ice_value_bytes(enum st_type t, const struct st_value *v, struct buf *out);

#endif
