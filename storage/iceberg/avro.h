/*
 * avro.h - Avro object container files (Avro 1.11 specification, "Object
 * Container Files" and "Binary Encoding"), the codec under Iceberg's
 * manifests and manifest lists.
 *
 *   file   = "Obj" 0x01, metadata (map of bytes), 16-byte sync marker, block...
 *   block  = count (long), size (long), `count` values in `size` bytes, sync marker
 *
 * Schema: avro_schema_parse reads an Avro schema JSON (storage/common/jdoc.h)
 * into a read-only tree of `struct avro_node`. Attributes the codec does not
 * need (`field-id`, `element-id`, `logicalType`, `doc`, `default`, aliases,
 * ...) are allowed and ignored; the writer keeps the caller's JSON text byte
 * for byte as `avro.schema`, so they all survive.
 *
 * Writer: built in memory; values are written in schema order through typed
 * calls, each checked by a cursor that walks the schema. Records are entered
 * and left implicitly: a record's fields are written one after the other
 * with no call for the record itself, and a record with no fields takes no
 * call at all. Each top-level value ends with avro_w_record_end. A wrong call
 * makes the writer's error sticky (later calls do nothing) and
 * avro_writer_finish returns it, naming the record (counted from 0) and the
 * field path: "record 3: data_file.file_path: expected string, got long".
 * Arrays and maps announce their item count (Avro writes the count first) and
 * are written as one block. The output is deterministic: the same schema
 * text, metadata and calls give the same bytes (the sync marker is the first
 * 16 bytes of the SHA-256 of the header before it, unless the caller passes
 * one). Codec: null only.
 *
 * Reader: over a whole file held in memory (borrowed), codec null only.
 * Each avro_reader_next decodes one value into a tree that lives in the
 * reader's arena until the next call; strings, bytes and fixed point into the
 * file. Every length, count, varint, nesting depth, sync marker and block
 * size is checked against the bytes left, so that hostile bytes only ever
 * give ST_ECORRUPT with a message naming the byte, the record and the path.
 */
#ifndef STRIKE_AVRO_H
#define STRIKE_AVRO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

#define AVRO_MAGIC "Obj\x01"
#define AVRO_SYNC_SIZE 16
#define AVRO_MAX_DEPTH 32                 /* nesting of records, arrays, maps, unions */
#define AVRO_MAX_FIELDS 1024              /* fields of a record, symbols, union branches */
#define AVRO_MAX_NODES 8192               /* types defined in one schema */
#define AVRO_NAME_MAX 255                 /* bytes in a name or a full name */
#define AVRO_MAX_SCHEMA (1u << 20)        /* bytes of schema JSON */
#define AVRO_MAX_FIXED (1u << 20)         /* size of a fixed type */
#define AVRO_MAX_META 1024                /* file metadata entries */
#define AVRO_MAX_RECORD_VALUES (1u << 20) /* values decoded from one top-level value */
#define AVRO_BLOCK_BYTES (64u << 10)      /* the writer starts a new block past this */

enum avro_type {
    AVRO_NULL,
    AVRO_BOOLEAN,
    AVRO_INT,
    AVRO_LONG,
    AVRO_FLOAT,
    AVRO_DOUBLE,
    AVRO_BYTES,
    AVRO_STRING,
    AVRO_RECORD,
    AVRO_ENUM,
    AVRO_ARRAY,
    AVRO_MAP,
    AVRO_UNION,
    AVRO_FIXED,
};

/* ------------------------------------------------------------- schema */

struct avro_node;

struct avro_field {
    const char *name; /* NUL-terminated */
    const struct avro_node *type;
};

/* One type of a parsed schema (read-only; lives as long as its schema). */
struct avro_node {
    uint8_t type;     /* enum avro_type */
    const char *name; /* record, enum, fixed: the full name ("ns.name"); else NULL */
    uint32_t n;       /* record: fields; enum: symbols; union: branches; fixed: size */
    const struct avro_field *fields;         /* record: n fields in schema order */
    const char *const *symbols;              /* enum: n symbols */
    const struct avro_node *const *branches; /* union: n branches */
    const struct avro_node *items;           /* array: its items; map: its values */
    uint32_t min_size; /* fewest bytes a value encodes to (saturated); the reader's bounds */
};

struct avro_schema;

/*
 * Parse schema JSON json[0..len) (borrowed, not referenced after the call):
 * primitives (also in the {"type": "long", ...} form), record, enum, array,
 * map, fixed, unions (JSON arrays) and references to named types defined
 * before (a record may refer to itself). Names follow the spec's grammar and
 * namespace rules. Refused with ST_EINVAL and a message naming the place:
 * malformed JSON, unknown types, duplicate names or fields, unions with two
 * branches of one kind or a union directly in a union, and anything past the
 * AVRO_MAX_* bounds. On success the caller frees *out with avro_schema_free.
 */
int avro_schema_parse(const char *json, size_t len, struct avro_schema **out, struct st_err *err);
void avro_schema_free(struct avro_schema *s); /* NULL ok */
/* The top-level type (borrowed from s). */
const struct avro_node *avro_schema_root(const struct avro_schema *s);
/* "null", "boolean", ..., "fixed"; "?" for a value out of range. */
const char *avro_type_name(int type);
/* The index of field `name` of a record node, or -1 (absent, or not a record). */
int avro_node_field(const struct avro_node *rec, const char *name);

/* ------------------------------------------------------------- writer */

/* A file metadata entry: key (NUL-terminated, UTF-8) and value bytes, borrowed. */
struct avro_kv {
    const char *key;
    const void *value;
    size_t len;
};

struct avro_writer_opts {
    const uint8_t *sync; /* AVRO_SYNC_SIZE bytes (copied), or NULL: derived from the header */
    size_t block_bytes;  /* a block ends once it holds this many bytes; 0: AVRO_BLOCK_BYTES */
};

struct avro_writer;

/*
 * A new writer for the schema text schema_json[0..len) (copied; it becomes
 * the `avro.schema` metadata byte for byte), with `avro.codec` "null" and
 * then meta[0..n_meta) in that order (borrowed, copied). ST_EINVAL when the
 * schema does not parse (its message) or a key is empty, not UTF-8, repeated,
 * or reserved (starts with "avro."). `opts` may be NULL. On success the
 * caller frees *out with avro_writer_free.
 */
int avro_writer_new(const char *schema_json, size_t len, const struct avro_kv *meta, size_t n_meta,
                    const struct avro_writer_opts *opts, struct avro_writer **out,
                    struct st_err *err);

/*
 * The value calls. Each writes the next value the schema expects, or records
 * the writer's (sticky) error when the schema expects something else; they
 * return 0 or that error's code (ST_EINVAL), so a caller may check each call
 * or only avro_writer_finish. Strings and map keys must be UTF-8; fixed
 * takes exactly the type's size; enum takes a symbol index; union takes the
 * branch (from 0) whose value follows. Bytes are borrowed for the call.
 */
int avro_w_null(struct avro_writer *w);
int avro_w_bool(struct avro_writer *w, bool v);
int avro_w_int(struct avro_writer *w, int32_t v);
int avro_w_long(struct avro_writer *w, int64_t v);
int avro_w_float(struct avro_writer *w, float v);
int avro_w_double(struct avro_writer *w, double v);
int avro_w_string(struct avro_writer *w, const char *s, size_t n);
int avro_w_bytes(struct avro_writer *w, const void *p, size_t n);
int avro_w_fixed(struct avro_writer *w, const void *p, size_t n);
int avro_w_enum(struct avro_writer *w, uint32_t symbol);
int avro_w_union(struct avro_writer *w, uint32_t branch);
/* An array of exactly `count` items follows, then avro_w_array_end. */
int avro_w_array_begin(struct avro_writer *w, uint64_t count);
int avro_w_array_end(struct avro_writer *w);
/* A map of exactly `count` entries follows, each avro_w_map_key then its value. */
int avro_w_map_begin(struct avro_writer *w, uint64_t count);
int avro_w_map_key(struct avro_writer *w, const char *key, size_t n);
int avro_w_map_end(struct avro_writer *w);
/* End the top-level value (a record: every field written). */
int avro_w_record_end(struct avro_writer *w);

/* Top-level values ended so far. */
uint64_t avro_writer_count(const struct avro_writer *w);
/* The sticky error, if any: its code (0 when none), message copied to err. */
int avro_writer_error(const struct avro_writer *w, struct st_err *err);
/*
 * Append the whole file to `out`. ST_EINVAL with the sticky error, when a
 * top-level value is unfinished ("record 7: data_file.record_count: expected
 * long, got finish"), or when the file holds more values than its size lets
 * avro_reader_next take (only zero-byte values get there); `out` is then
 * unchanged. The writer is finished either way: every later call is ST_EINVAL.
 */
int avro_writer_finish(struct avro_writer *w, struct buf *out, struct st_err *err);
void avro_writer_free(struct avro_writer *w); /* NULL ok */

/* ------------------------------------------------------------- reader */

/* One decoded value (in its reader's arena: valid until the next avro_reader_next). */
struct avro_value {
    uint8_t kind;                 /* enum avro_type, = node->type */
    const struct avro_node *node; /* its type in the file's schema */
    union {
        bool b;
        int32_t i; /* int; enum: the symbol index */
        int64_t l; /* long */
        float f;
        double d;
        struct {
            const uint8_t *p; /* into the file; not NUL-terminated */
            size_t n;
        } bytes; /* bytes, string (UTF-8, checked), fixed */
        struct {
            const struct avro_value *v;
            size_t n;
        } items; /* record: its fields in schema order; array: its items */
        struct {
            const struct avro_value *keys; /* n strings */
            const struct avro_value *vals; /* n values */
            size_t n;
        } map;
        struct {
            uint32_t index;             /* the branch */
            const struct avro_value *v; /* its value */
        } branch;
    } u;
};

/* Field `name` of a record value, or NULL (absent, or not a record). */
const struct avro_value *avro_value_field(const struct avro_value *rec, const char *name);
/* A union's branch value (a non-union value itself); NULL when the branch is null. */
const struct avro_value *avro_value_unwrap(const struct avro_value *v);

struct avro_reader;

/*
 * Read the header of the container file bytes[0..len) (borrowed: they must
 * outlive the reader): magic, metadata, schema (avro_schema_parse), codec
 * (absent or "null"; others are ST_EUNSUPPORTED) and sync marker. ST_ECORRUPT
 * for anything malformed. On success the caller frees *out with
 * avro_reader_free.
 */
int avro_reader_open(const uint8_t *bytes, size_t len, struct avro_reader **out,
                     struct st_err *err);
void avro_reader_free(struct avro_reader *r); /* NULL ok */
/* The file's schema (borrowed from r). */
const struct avro_schema *avro_reader_schema(const struct avro_reader *r);
/* Metadata value of `key` (into the file; *len its bytes), or NULL when absent. */
const uint8_t *avro_reader_meta(const struct avro_reader *r, const char *key, size_t *len);
/* Metadata entries in file order: entry i's key and value (into the file); false past the end. */
size_t avro_reader_meta_count(const struct avro_reader *r);
bool avro_reader_meta_at(const struct avro_reader *r, size_t i, const uint8_t **key, size_t *klen,
                         const uint8_t **val, size_t *vlen);
/* The file's sync marker (AVRO_SYNC_SIZE bytes, borrowed). */
const uint8_t *avro_reader_sync(const struct avro_reader *r);

/*
 * Decode the next top-level value into *value (valid until the next call or
 * avro_reader_free). Returns 1 with a value, 0 at the end of the file (every
 * block and sync marker checked), or ST_ECORRUPT; after an error every call
 * returns it again. A file decodes to at most 2^20 + 16 * len values in all
 * and AVRO_MAX_RECORD_VALUES per top-level value (only zero-byte values such
 * as nulls and empty records can get near; more is ST_ECORRUPT).
 */
int avro_reader_next(struct avro_reader *r, const struct avro_value **value, struct st_err *err);

#endif
