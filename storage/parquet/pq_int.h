/*
 * pq_int.h - internals shared by the Parquet module's files (not for other
 * modules): Parquet enum values (parquet.thrift), the Thrift compact
 * protocol reader and writer, decoded footer structures, and the value and
 * level encodings. Internal names use the pq__ prefix.
 */
#ifndef STRIKE_PQ_INT_H
#define STRIKE_PQ_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "parquet.h"

/* ---- parquet.thrift enums ---- */
enum {
    PQ_BOOLEAN = 0,
    PQ_INT32 = 1,
    PQ_INT64 = 2,
    PQ_INT96 = 3,
    PQ_FLOAT = 4,
    PQ_DOUBLE = 5,
    PQ_BYTE_ARRAY = 6,
    PQ_FIXED_LEN_BYTE_ARRAY = 7,
};
enum {
    PQ_CT_UTF8 = 0,
    PQ_CT_MAP = 1,
    PQ_CT_MAP_KEY_VALUE = 2,
    PQ_CT_LIST = 3,
    PQ_CT_ENUM = 4,
    PQ_CT_DECIMAL = 5,
    PQ_CT_DATE = 6,
    PQ_CT_TIME_MILLIS = 7,
    PQ_CT_TIME_MICROS = 8,
    PQ_CT_TIMESTAMP_MILLIS = 9,
    PQ_CT_TIMESTAMP_MICROS = 10,
    PQ_CT_UINT_8 = 11,
    PQ_CT_UINT_16 = 12,
    PQ_CT_UINT_32 = 13,
    PQ_CT_UINT_64 = 14,
    PQ_CT_INT_8 = 15,
    PQ_CT_INT_16 = 16,
    PQ_CT_INT_32 = 17,
    PQ_CT_INT_64 = 18,
    PQ_CT_JSON = 19,
    PQ_CT_BSON = 20,
    PQ_CT_INTERVAL = 21,
};
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };
/* LogicalType union members. */
enum {
    PQ_LT_STRING = 1,
    PQ_LT_MAP = 2,
    PQ_LT_LIST = 3,
    PQ_LT_ENUM = 4,
    PQ_LT_DECIMAL = 5,
    PQ_LT_DATE = 6,
    PQ_LT_TIME = 7,
    PQ_LT_TIMESTAMP = 8,
    PQ_LT_INTEGER = 10,
    PQ_LT_UNKNOWN = 11,
    PQ_LT_JSON = 12,
    PQ_LT_BSON = 13,
    PQ_LT_UUID = 14,
    PQ_LT_FLOAT16 = 15,
    PQ_LT_VARIANT = 16,
    PQ_LT_GEOMETRY = 17,
    PQ_LT_GEOGRAPHY = 18,
};
enum { PQ_UNIT_MILLIS = 1, PQ_UNIT_MICROS = 2, PQ_UNIT_NANOS = 3 };
enum {
    PQ_ENC_PLAIN = 0,
    PQ_ENC_PLAIN_DICTIONARY = 2,
    PQ_ENC_RLE = 3,
    PQ_ENC_BIT_PACKED = 4,
    PQ_ENC_DELTA_BINARY_PACKED = 5,
    PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    PQ_ENC_DELTA_BYTE_ARRAY = 7,
    PQ_ENC_RLE_DICTIONARY = 8,
    PQ_ENC_BYTE_STREAM_SPLIT = 9,
};
enum {
    PQ_CODEC_UNCOMPRESSED = 0,
    PQ_CODEC_SNAPPY = 1,
    PQ_CODEC_GZIP = 2,
    PQ_CODEC_LZO = 3,
    PQ_CODEC_BROTLI = 4,
    PQ_CODEC_LZ4 = 5,
    PQ_CODEC_ZSTD = 6,
    PQ_CODEC_LZ4_RAW = 7,
};
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3 };
/* ColumnOrder union members. */
enum { PQ_ORDER_TYPE = 1, PQ_ORDER_IEEE754 = 2 };

/* ---- limits on what a file may claim ---- */
#define PQ_FOOTER_MAX (256u << 20)            /* footer bytes */
#define PQ_PAGE_MAX (512u << 20)              /* one page, compressed or not */
#define PQ_SCHEMA_DEPTH_MAX 32                /* nesting of groups */
#define PQ_THRIFT_DEPTH_MAX 48                /* nesting of structs, lists */
#define PQ_DEFAULT_MAX_BATCH_ROWS (1u << 26)  /* rows in one row group we decode */
#define PQ_DEFAULT_MAX_BATCH_BYTES (2u << 30) /* string bytes of one column in one batch */

/* ---- Thrift compact protocol ---- */
enum {
    PQ_TT_STOP = 0,
    PQ_TT_TRUE = 1,
    PQ_TT_FALSE = 2,
    PQ_TT_I8 = 3,
    PQ_TT_I16 = 4,
    PQ_TT_I32 = 5,
    PQ_TT_I64 = 6,
    PQ_TT_DOUBLE = 7,
    PQ_TT_BINARY = 8,
    PQ_TT_LIST = 9,
    PQ_TT_SET = 10,
    PQ_TT_MAP = 11,
    PQ_TT_STRUCT = 12,
    PQ_TT_UUID = 13,
};

/* A reader over untrusted bytes; the first error sticks in err. */
struct pq__tr {
    const uint8_t *start, *p, *end;
    uint64_t base;    /* file offset of start, for messages */
    const char *what; /* "footer", "page header" */
    int depth;
    struct st_err *err;
};

void pq__tr_init(struct pq__tr *t, const uint8_t *p, size_t n, uint64_t base, const char *what,
                 struct st_err *err);
/* Corrupt-input error at the current position. */
int pq__tr_fail(struct pq__tr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Next field header of the struct being read: *type 0 (stop) ends the struct. */
int pq__tr_field(struct pq__tr *t, int16_t *last_id, int *type, int16_t *id);
/* Integer fields of wire type i8/i16/i32/i64 with range checks. */
int pq__tr_i64(struct pq__tr *t, int type, int64_t *v);
int pq__tr_i32(struct pq__tr *t, int type, int32_t *v);
/* Bool field value (the wire type carries it) or a bool list element. */
int pq__tr_bool(struct pq__tr *t, int type, bool *v);
int pq__tr_elem_bool(struct pq__tr *t, bool *v);
int pq__tr_binary(struct pq__tr *t, int type, const uint8_t **p, uint32_t *n);
/* List header; the count is checked against the bytes left. */
int pq__tr_list(struct pq__tr *t, int type, int *etype, uint32_t *n);
/* Enter/leave a nested struct (depth check). */
int pq__tr_struct_begin(struct pq__tr *t, int type);
void pq__tr_struct_end(struct pq__tr *t);
/* Skip a value of wire type `type`. */
int pq__tr_skip(struct pq__tr *t, int type);
/* Skip the rest of the current struct, up to and including its stop byte. */
int pq__tr_skip_struct_rest(struct pq__tr *t, int16_t *last_id);

/* A writer into a buffer. */
struct pq__tw {
    struct buf *b;
    int16_t last[PQ_THRIFT_DEPTH_MAX];
    int depth;
};
void pq__tw_init(struct pq__tw *w, struct buf *b);
void pq__tw_i16(struct pq__tw *w, int16_t id, int16_t v);
void pq__tw_i32(struct pq__tw *w, int16_t id, int32_t v);
void pq__tw_i64(struct pq__tw *w, int16_t id, int64_t v);
void pq__tw_bool(struct pq__tw *w, int16_t id, bool v);
void pq__tw_binary(struct pq__tw *w, int16_t id, const void *p, size_t n);
void pq__tw_struct_begin(struct pq__tw *w, int16_t id);
void pq__tw_struct_end(struct pq__tw *w);
void pq__tw_list_begin(struct pq__tw *w, int16_t id, int etype, uint32_t n);
void pq__tw_elem_i32(struct pq__tw *w, int32_t v);
void pq__tw_elem_binary(struct pq__tw *w, const void *p, size_t n);
void pq__tw_elem_struct_begin(struct pq__tw *w);
/* The outermost struct: begin resets the field-id stack, end writes its stop. */
void pq__tw_root_begin(struct pq__tw *w);
void pq__tw_root_end(struct pq__tw *w);
void pq__put_uvarint(struct buf *b, uint64_t v);

/* ---- decoded footer ---- */
struct pq__str {
    const uint8_t *p;
    uint32_t n;
};

struct pq__stats {
    struct pq__str max, min, max_value, min_value;
    bool has_max, has_min, has_max_value, has_min_value;
    bool has_null_count, has_nan_count;
    int64_t null_count, nan_count;
};

struct pq__schema_el {
    struct pq__str name;
    int32_t type; /* -1: a group */
    int32_t type_length;
    int32_t repetition;   /* -1: absent */
    int32_t num_children; /* -1: absent */
    int32_t converted;    /* -1: absent */
    int32_t scale, precision;
    int32_t field_id; /* 0: absent */
    int logical;      /* LogicalType member, 0: absent */
    bool ts_utc;
    int unit; /* PQ_UNIT_* for TIME/TIMESTAMP */
    int int_bits;
    bool int_signed;
    int32_t dec_scale, dec_precision;
};

struct pq__chunk {
    bool has_meta;
    bool has_file_path;
    int32_t type, codec;
    uint32_t encodings; /* bit (1u << Encoding) for values < 32 */
    int64_t num_values, total_uncompressed, total_compressed;
    int64_t data_page_offset, dict_page_offset, index_page_offset; /* -1 absent */
    struct pq__str *path;
    uint32_t npath;
    bool has_stats;
    struct pq__stats stats;
};

struct pq__rowgroup {
    struct pq__chunk *cols;
    uint32_t ncols;
    int64_t num_rows;
    int64_t total_byte_size;
};

struct pq__kv {
    struct pq__str key, value;
    bool has_value;
};

struct pq__filemeta {
    int32_t version;
    struct pq__schema_el *schema;
    uint32_t nschema;
    int64_t num_rows;
    struct pq__rowgroup *rgs;
    uint32_t nrgs;
    struct pq__kv *kv;
    uint32_t nkv;
    bool has_created_by;
    struct pq__str created_by;
    int *orders; /* ColumnOrder member per leaf, 0 unknown */
    uint32_t norders;
    bool has_orders;
    bool encrypted;
};

/* Decode a FileMetaData from footer bytes (strings point into them). */
int pq__filemeta_decode(const uint8_t *p, size_t n, uint64_t base, struct pq__filemeta *m,
                        struct st_err *err);
void pq__filemeta_free(struct pq__filemeta *m);

struct pq__page_header {
    int32_t type, uncompressed_size, compressed_size;
    bool has_dp, has_dict, has_dp2;
    int32_t num_values;                            /* dp, dict or dp2 */
    int32_t encoding;                              /* dp, dict or dp2 */
    int32_t def_encoding, rep_encoding;            /* dp */
    int32_t num_nulls, num_rows, def_len, rep_len; /* dp2 */
    bool is_compressed;                            /* dp2, default true */
};

/* Decode a PageHeader at t's position; advances t. */
int pq__page_header_decode(struct pq__tr *t, struct pq__page_header *h);
/* Encode a v1 data page or dictionary page header. */
void pq__page_header_encode(struct buf *b, const struct pq__page_header *h);

/* ---- encodings (pq_encoding.c) ---- */

/* Bits needed for v (0 for 0). */
static inline int pq__bit_width(uint64_t v)
{
    return v == 0 ? 0 : 64 - __builtin_clzll(v);
}

/*
 * RLE/bit-packed hybrid decoder over [p, end) with bit width bw (0..32).
 * Decodes exactly `count` values; running out of input is an error.
 */
struct pq__rle {
    const uint8_t *p, *end;
    int bw;
    uint32_t rle_left; /* values left in the current RLE run */
    uint32_t rle_value;
    uint64_t bp_left;           /* values left in the current bit-packed run */
    const uint8_t *bp, *bp_end; /* the run's packed bytes */
    uint64_t bp_bit;            /* next bit to read, from bp */
};
void pq__rle_init(struct pq__rle *d, const uint8_t *p, const uint8_t *end, int bw);
/* Decode `count` values into out32 (or out8 when out32 is NULL; then bw <= 8). */
int pq__rle_get(struct pq__rle *d, uint32_t *out32, uint8_t *out8, size_t count);

/* RLE/bit-packed hybrid encoder (no length prefix) of n values of width bw. */
void pq__rle_encode_u8(struct buf *b, const uint8_t *v, size_t n, int bw);
void pq__rle_encode_u32(struct buf *b, const uint32_t *v, size_t n, int bw);

/*
 * DELTA_BINARY_PACKED: decode up to `count` values (all of them when the
 * stream holds exactly count) as 64-bit integers (wrapping arithmetic);
 * `*used` is the bytes consumed. `nvals` returns the stream's value count.
 * `maxbw` is 32 for INT32, 64 for INT64.
 */
int pq__delta_decode(const uint8_t *p, size_t n, int64_t *out, size_t count, size_t *nvals,
                     size_t *used, int maxbw);
/* Read only the header's value count. */
int pq__delta_count(const uint8_t *p, size_t n, size_t *nvals);

/* ULEB128 read with bounds; false on truncation/overflow. */
bool pq__get_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* Well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF) and no NUL byte. */
bool pq__utf8_valid(const uint8_t *p, size_t n);

/* ---- codecs (pq_codec.c) ---- */

/* Decompress exactly `dn` bytes from src into dst (codec is a PQ_CODEC_*). */
int pq__decompress(int codec, const uint8_t *src, size_t sn, uint8_t *dst, size_t dn,
                   void **zstd_dctx, struct st_err *err);
bool pq__codec_supported(int codec);

/* ---- reader limits (for fuzzers) ---- */
void pq__reader_set_limits(struct pq_reader *r, uint64_t max_batch_rows, uint64_t max_batch_bytes,
                           uint64_t max_page);
/*
 * Read-ahead, for tests: step 1 makes the helper always decode the row group
 * after the one just handed out (0, the default, adapts: see
 * pq_read_row_group); ahead_taken counts the batches the helper decoded and
 * the caller took.
 */
void pq__reader_set_ahead_step(struct pq_reader *r, int step);
uint64_t pq__reader_ahead_taken(const struct pq_reader *r);

/* ---- the helper thread (pq_worker.c) ---- */

/*
 * One helper thread running one job at a time. pq__worker_start is NULL when
 * no thread can be created (the caller then does the work itself).
 * pq__worker_submit waits for the previous job first; pq__worker_wait
 * returns once no job is running (true when it had to wait);
 * pq__worker_stop finishes the running job, joins the thread and frees the
 * worker (NULL is a no-op).
 */
struct pq__worker;
struct pq__worker *pq__worker_start(void);
void pq__worker_submit(struct pq__worker *w, void (*fn)(void *), void *arg);
bool pq__worker_wait(struct pq__worker *w);
void pq__worker_stop(struct pq__worker *w);
/* 1 when STRIKE_PQ_THREADS=1 (no helper threads), else 2. */
int pq__threads_default(void);

#endif
