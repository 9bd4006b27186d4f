/*
 * puffin.h - Iceberg Puffin files (format/puffin-spec.md) holding
 * deletion-vector-v1 blobs.
 *
 *   file   = "PFA1" blob... footer
 *   footer = "PFA1" payload(JSON) payload-size(LE int32) flags(4) "PFA1"
 *
 * The writer emits what Iceberg Java's BaseDVFileWriter emits: per blob
 * type "deletion-vector-v1", fields [2147483645], snapshot-id and
 * sequence-number -1, offset, length, properties referenced-data-file and
 * cardinality, no compression-codec; file properties created-by
 * "strike <version>"; an uncompressed footer, compact JSON in Java's key
 * order.
 *
 * The reader checks the magic at both ends and at the footer, the payload
 * size, the flags (a compressed - LZ4 - footer is refused), the JSON's
 * shape and every blob's offset/length against the blob area.
 */
#ifndef STRIKE_PUFFIN_H
#define STRIKE_PUFFIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "dv.h"

#define PUFFIN_MAGIC "PFA1"
#define PUFFIN_DV_FIELD 2147483645    /* the _pos metadata column id Java writes */
#define PUFFIN_MAX_FOOTER (64u << 20) /* larger footer payloads are refused */
#define PUFFIN_MAX_BLOB (1u << 30)    /* larger DV blobs are refused by the fd reader */

struct puffin_prop {
    char *key;   /* owned */
    char *value; /* owned */
};

struct puffin_blob {
    char *type;      /* owned */
    int32_t *fields; /* owned */
    size_t n_fields;
    int64_t snapshot_id;
    int64_t sequence_number;
    uint64_t offset;
    uint64_t length;
    char *compression_codec;   /* owned; NULL when absent (uncompressed) */
    struct puffin_prop *props; /* owned */
    size_t n_props;
    const char *referenced_data_file; /* the property's value (in props), or NULL */
    int64_t cardinality;              /* the "cardinality" property if a valid decimal, else -1 */
};

struct puffin_footer {
    struct puffin_blob *blobs; /* owned */
    size_t n_blobs;
    struct puffin_prop *props; /* owned: file properties */
    size_t n_props;
    uint64_t footer_offset; /* offset of the footer's opening magic */
    uint32_t payload_size;
    uint64_t file_size;
};

/* Parse the footer of a whole file held in file[0..n) (borrowed). On
   success the caller frees *out with puffin_footer_free; on failure *out
   holds nothing to free. */
int puffin_read_footer(const uint8_t *file, size_t n, struct puffin_footer *out,
                       struct st_err *err);
/* The same reading only the header magic and the tail of an open file of
   file_size bytes (the caller keeps the fd). */
int puffin_read_footer_fd(int fd, uint64_t file_size, struct puffin_footer *out,
                          struct st_err *err);
void puffin_footer_free(struct puffin_footer *f); /* NULL ok */

/* A property's value (borrowed from the array), or NULL. */
const char *puffin_prop(const struct puffin_prop *props, size_t n, const char *key);
/* Lookups (results borrowed from f); NULL when absent. */
const struct puffin_blob *puffin_find_blob(const struct puffin_footer *f, uint64_t offset,
                                           uint64_t length);
const struct puffin_blob *puffin_find_dv(const struct puffin_footer *f,
                                         const char *referenced_data_file);
/* Whether b is a deletion-vector-v1 blob as the spec requires it (type,
   no compression-codec, referenced-data-file and a decimal cardinality). */
int puffin_check_dv_blob(const struct puffin_blob *b, struct st_err *err);
/* Decode DV blob b of a file held in file[0..n): checks the blob metadata,
   then dv_decode_iceberg_at with the cardinality property. */
int puffin_decode_dv(const uint8_t *file, size_t n, const struct puffin_blob *b, struct dv **out,
                     struct st_err *err);
/* The same reading only the blob's bytes from an open file. */
int puffin_read_dv_fd(int fd, const struct puffin_blob *b, struct dv **out, struct st_err *err);

/* ------------------------------------------------------------- writer */

/* Builds a whole Puffin file in memory (the caller writes it durably). */
struct puffin_writer;

/* A new writer; created_by is the file's created-by property (copied;
   NULL: "strike <version>"). Caller frees with puffin_writer_free. */
struct puffin_writer *puffin_writer_new(const char *created_by);
/* Encode d as a DV blob for referenced_file (copied) and append it; offset
   and length receive the blob's (Iceberg content_offset and
   content_size_in_bytes). ST_EINVAL for a position >= 2^63, or after
   puffin_writer_finish. */
int puffin_writer_add_dv(struct puffin_writer *w, const char *referenced_file, const struct dv *d,
                         uint64_t *offset, uint64_t *length, struct st_err *err);
/* Append an already encoded deletion-vector-v1 blob (borrowed, copied) of
   the given cardinality; its framing and CRC are checked, not decoded. */
int puffin_writer_add_dv_blob(struct puffin_writer *w, const char *referenced_file,
                              const uint8_t *blob, size_t n, uint64_t cardinality, uint64_t *offset,
                              uint64_t *length, struct st_err *err);
/* Number of blobs added so far. */
size_t puffin_writer_count(const struct puffin_writer *w);
/* Append the footer and the whole file to `out` (a writer with no blob
   gives a valid empty Puffin file). The writer is finished: later adds and
   finishes are ST_EINVAL. */
int puffin_writer_finish(struct puffin_writer *w, struct buf *out, struct st_err *err);
void puffin_writer_free(struct puffin_writer *w); /* NULL ok */

#endif
