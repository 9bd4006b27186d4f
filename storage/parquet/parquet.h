/*
 * parquet.h - strike's Parquet writer and reader (prefix pq_).
 *
 * Data files are Parquet so that any engine can read a strike table. This
 * module writes flat files of the docs/API.md types and reads those files, the
 * files DuckDB writes, and the Spark/Databricks files of Delta tables. The
 * footer and page headers use the Thrift compact protocol, encoded and decoded
 * by our own code (pq_thrift.c). README.md in this directory has the design.
 *
 * Types written (physical type / annotation):
 *   boolean   BOOLEAN
 *   int       INT32
 *   long      INT64
 *   double    DOUBLE
 *   string    BYTE_ARRAY, STRING logical type (UTF8 converted type)
 *   timestamp INT64, TIMESTAMP(isAdjustedToUTC=true, MICROS) (TIMESTAMP_MICROS)
 *
 * Errors: every function that can fail returns ST_OK or a negative ST_E*
 * code and fills `err` with a message naming the column, row group, page and
 * byte offset concerned. Hostile files give ST_ECORRUPT; valid files using
 * features strike does not read give ST_EUNSUPPORTED naming the feature.
 */
#ifndef STRIKE_PARQUET_H
#define STRIKE_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/types.h"

/* ------------------------------------------------------------------ */
/* Writer                                                             */
/* ------------------------------------------------------------------ */

enum pq_compression {
    PQ_COMPRESS_NONE = 0,
    PQ_COMPRESS_ZSTD = 1,
};

/*
 * Receives the file's bytes in order. Return ST_OK, or an error code (and
 * fill err): the writer then stops and every later call fails.
 */
typedef int (*pq_write_fn)(void *ctx, const void *p, size_t n, struct st_err *err);

struct pq_write_opts {
    int compression;         /* PQ_COMPRESS_ZSTD (default) or PQ_COMPRESS_NONE */
    int zstd_level;          /* 1..22, default 3 */
    uint32_t row_group_rows; /* rows per row group, default 131072, at most 2^26 */
    /*
     * A row group is also closed early once its buffered values pass this
     * many bytes (default 256 MiB, at most 2 GiB): the writer's memory is
     * bounded by one row group whatever the row count or string sizes.
     */
    uint64_t row_group_bytes;
    bool dictionary;       /* dictionary-encode low-cardinality strings (default on) */
    const char *const *kv; /* key, value, key, value, ..., NULL: file key/value metadata */
    /*
     * Threads that compress a row group's pages: 1 (the caller alone) or 2
     * (the caller and one helper thread of the writer's); 0 (default) takes
     * STRIKE_PQ_THREADS from the environment (1 or, unset, 2). The file's
     * bytes are the same either way.
     */
    int threads;
};

/* Fill `o` with the defaults above. */
void pq_write_opts_default(struct pq_write_opts *o);

struct pq_writer;

/*
 * Start a file with the flat schema `cols` (1..ST_COLUMNS_MAX columns with
 * valid, distinct names; copied). `o` may be NULL for the defaults; o->kv is
 * copied. Bytes go to `write(ctx, ...)` as row groups fill (nothing is
 * written before the first row group or pq_writer_finish). On success *out is
 * a writer the caller frees with pq_writer_free.
 */
int pq_writer_open(struct pq_writer **out, const struct st_column *cols, int ncols,
                   const struct pq_write_opts *o, pq_write_fn write, void *ctx, struct st_err *err);

/*
 * Append one row: `row` holds ncols values (borrowed; copied). A null in a
 * required column, a string over ST_STRING_MAX bytes, a string that is not
 * UTF-8 or holds U+0000 is ST_EINVAL and leaves the file unchanged (the row
 * is not added; the writer stays usable).
 */
int pq_writer_add_row(struct pq_writer *w, const struct st_value *row, struct st_err *err);

/*
 * Append rows [start, start+n) of ncols column vectors (same order and types
 * as the schema). Rows are checked as in pq_writer_add_row; on ST_EINVAL the
 * rows before the bad one have been added and err names the bad row.
 */
int pq_writer_add_colvecs(struct pq_writer *w, const struct st_colvec *cols, size_t start, size_t n,
                          struct st_err *err);

/* Rows added so far. */
uint64_t pq_writer_rows(const struct pq_writer *w);

/*
 * Per-column statistics. For strings, min/max point to memory owned by the
 * stats (writer) or by the reader (pq_row_group_stats). has_minmax is false
 * when the column has no non-null (for doubles: no non-NaN) value, or when the
 * file holds no usable bounds. Doubles: min/max bound every non-NaN value; NaN
 * values are counted by nan_count when has_nan_count, else NaN may be present.
 * Strings: min/max are bounds (a writer may truncate long values), compared
 * by bytes (memcmp).
 */
struct pq_col_stats {
    bool has_minmax;
    struct st_value min, max;
    uint64_t null_count;
    bool has_null_count; /* false when a (foreign) file does not say */
    bool has_nan_count;
    uint64_t nan_count;
};

struct pq_file_stats {
    uint64_t num_rows;
    uint64_t file_size; /* bytes written, footer included */
    int ncols;
    struct pq_col_stats *cols; /* ncols entries, whole-file statistics */
    char *strings_;            /* private: the string bounds' bytes */
};

/* Free the stats' strings and array (not `s` itself); NULL is a no-op. */
void pq_file_stats_free(struct pq_file_stats *s);

/*
 * Write the last row group and the footer. `stats` (may be NULL) receives
 * the file's row count, size and whole-file column statistics (free with
 * pq_file_stats_free). Then free the writer with pq_writer_free; no other
 * call is allowed in between.
 */
int pq_writer_finish(struct pq_writer *w, struct pq_file_stats *stats, struct st_err *err);

/* Free the writer (finished or not: an unfinished file is simply abandoned). NULL is a no-op. */
void pq_writer_free(struct pq_writer *w);

/* A pq_write_fn for a `struct st_afile *` ctx (common/fsutil.h). */
int pq_write_afile(void *ctx, const void *p, size_t n, struct st_err *err);

/* ------------------------------------------------------------------ */
/* Reader                                                             */
/* ------------------------------------------------------------------ */

/*
 * A reader holds the file's footer and reusable decoding buffers: use it
 * from one thread at a time (open one per thread; readers share nothing).
 * Writers likewise.
 */
struct pq_reader;

/*
 * Open a file: read and validate its footer (with pread; the file stays open
 * for pq_read_row_group). Every offset, length and count in the footer is
 * checked before use. Columns of types strike does not read are listed (see
 * pq_column_unsupported) and refused only when projected.
 */
int pq_reader_open(const char *path, struct pq_reader **out, struct st_err *err);

/*
 * A file read by byte ranges (a blob store object): the reader reads the
 * last 8 bytes and the first 4, then the footer, then, per row group it
 * decodes, one range per projected column chunk.
 */
struct pq_source {
    void *ctx;
    uint64_t size;
    /* exactly n bytes at off; fewer is an error */
    int (*read_at)(void *ctx, void *dst, size_t n, uint64_t off, struct st_err *err);
    /* called by pq_reader_close, and by a failed open; may be NULL */
    void (*close)(void *ctx);
};

/* Same as pq_reader_open over a source (the reader owns it from the call on). */
int pq_reader_open_source(const struct pq_source *src, struct pq_reader **out, struct st_err *err);

/* Same, over n bytes in memory (borrowed: they must outlive the reader). */
int pq_reader_open_mem(const uint8_t *p, size_t n, struct pq_reader **out, struct st_err *err);

/* NULL is a no-op. */
void pq_reader_close(struct pq_reader *r);

uint64_t pq_num_rows(const struct pq_reader *r);
uint64_t pq_file_size(const struct pq_reader *r);
int pq_ncols(const struct pq_reader *r);

/*
 * Column i (0 <= i < ncols) with its mapped strike type. For a nested
 * column the name is the dotted path (truncated to ST_NAME_MAX). Borrowed.
 */
const struct st_column *pq_column(const struct pq_reader *r, int i);

/* NULL when column i reads as its st_column type, else why not ("DECIMAL(10,2)", ...). */
const char *pq_column_unsupported(const struct pq_reader *r, int i);

/* Index of the top-level column `name` (exact match), or -1. */
int pq_find_column(const struct pq_reader *r, const char *name);

int pq_num_row_groups(const struct pq_reader *r);

/* Row group rg's first row (file position) and row count. */
void pq_row_group(const struct pq_reader *r, int rg, uint64_t *first_row, uint64_t *nrows);

/*
 * Statistics of column `col` in row group rg, as the file states them and
 * only where their sort order is known to match strike's comparison (signed
 * integers, doubles without NaN bounds, strings by unsigned bytes). False when
 * the chunk has no statistics at all. Strings are borrowed from the reader.
 */
bool pq_row_group_stats(const struct pq_reader *r, int rg, int col, struct pq_col_stats *out);

/* Value of key/value metadata `key` (borrowed, NUL-terminated), or NULL. */
const char *pq_kv(const struct pq_reader *r, const char *key);

/* The footer's created_by, or NULL. */
const char *pq_created_by(const struct pq_reader *r);

/*
 * Decoded columns of one row group. Columns are in the order asked for;
 * row i of the batch is file position first_row + i. Zero-initialise before
 * the first use (`struct pq_batch b = {0};`); the memory is reused across
 * calls and freed by pq_batch_free.
 */
struct pq_batch {
    uint64_t first_row;
    size_t nrows;
    int ncols;
    struct st_colvec *cols;
    /* private */
    struct pq__vecmem *mem_;
    int mem_cap_;
};

/*
 * Decode columns cols[0..ncols) of row group rg into b. Projecting a column
 * listed as unsupported is ST_EUNSUPPORTED; any inconsistency in the pages
 * is ST_ECORRUPT (b is then unspecified but still safe to reuse or free).
 */
int pq_read_row_group(struct pq_reader *r, int rg, const int *cols, int ncols, struct pq_batch *b,
                      struct st_err *err);

/*
 * Read-ahead: while the caller reads row groups in order (rg 0, 1, 2, ... or
 * any run of consecutive ones), a helper thread of the reader decodes the
 * next row group (at most one ahead) while the caller works on the current
 * one or decodes another. Batches, errors and their order are the same as
 * without it: an error of a row group decoded ahead is returned by the call
 * that asks for that row group. The file is only read from the caller's
 * thread (pq_source need not be thread-safe). A batch's memory may move
 * between it and the reader: use a batch only until the next call that
 * fills it.
 *
 * threads: 1 turns read-ahead off, 2 on; 0 takes STRIKE_PQ_THREADS from the
 * environment (1 or, unset, 2), the default of a new reader.
 */
void pq_reader_set_threads(struct pq_reader *r, int threads);

/* Free the batch's memory; b is zeroed and reusable. NULL is a no-op. */
void pq_batch_free(struct pq_batch *b);

/* ------------------------------------------------------------------ */
/* Inspection (strike parquet meta)                                   */
/* ------------------------------------------------------------------ */

/* Column i as stored: physical, converted and logical type, repetition. */
struct pq_column_info {
    const char *path;       /* dotted path in the schema */
    const char *physical;   /* "INT64", "BYTE_ARRAY", ... */
    const char *converted;  /* "UTF8", "TIMESTAMP_MICROS", ... or NULL */
    char logical[64];       /* "STRING", "TIMESTAMP(UTC,MICROS)", ... or "" */
    const char *repetition; /* "required", "optional", "repeated" */
    int max_def, max_rep;
    int32_t type_length; /* FIXED_LEN_BYTE_ARRAY width, else -1 */
};
void pq_column_info(const struct pq_reader *r, int i, struct pq_column_info *out);

/* Column chunk (rg, col) as stored. */
struct pq_chunk_info {
    const char *codec;   /* "UNCOMPRESSED", "SNAPPY", "ZSTD", ... */
    char encodings[128]; /* "PLAIN,RLE,RLE_DICTIONARY" */
    int64_t num_values;
    int64_t total_compressed_size, total_uncompressed_size;
    int64_t data_page_offset, dictionary_page_offset; /* -1 when absent */
};
void pq_chunk_info(const struct pq_reader *r, int rg, int col, struct pq_chunk_info *out);

/* Key/value metadata entry i (0 <= i < pq_kv_count); value may be NULL. */
int pq_kv_count(const struct pq_reader *r);
void pq_kv_at(const struct pq_reader *r, int i, const char **key, const char **value);

/* Page types and encodings met while reading, as bit masks (for tests and meta). */
struct pq_read_counters {
    uint64_t pages_v1, pages_v2, dict_pages;
    uint32_t encodings_seen; /* bit (1u << Encoding) */
    uint32_t codecs_seen;    /* bit (1u << CompressionCodec) */
};
void pq_reader_counters(const struct pq_reader *r, struct pq_read_counters *out);

/* Name of a Parquet Encoding enum value ("PLAIN", ...) or "?". */
const char *pq_encoding_name(int enc);
/* Name of a Parquet CompressionCodec enum value or "?". */
const char *pq_codec_name(int codec);

#endif
