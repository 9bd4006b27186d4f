/*
 * dv.h - deletion vectors: an in-memory set of 64-bit row positions, and its
 * wire formats (docs/FORMATS.md has the byte layouts).
 *
 *   roaring32   RoaringFormatSpec 32-bit portable bitmap
 *   roaring64   RoaringFormatSpec 64-bit portable extension ("the vector")
 *   iceberg-dv  Iceberg v3 deletion-vector-v1 blob:
 *               BE u32 len | D1 D3 39 64 | vector | BE CRC-32(magic+vector)
 *   delta-dv    Delta DV file: version byte 1, then iceberg-dv-framed entries
 *               (Delta's sizeInBytes = len; one-vector file = 0x01 + blob)
 *   inline      Delta inline DV: Z85 of magic + vector (no size, no CRC)
 *   poslist     strike's position list, for small DVs in the catalog only
 *   paimon-dv   Paimon dvindex (paimon.h); puffin files (puffin.h)
 *
 * Encoding. Every encoder writes the canonical form Iceberg Java writes for
 * a set built position by position: keys ascending, containers typed by
 * cardinality (array <= 4096 < bitset) and then run-optimised exactly as
 * Java's runOptimize() does (array -> run when 2+4*runs < 2*card, bitset ->
 * run when 2+4*runs < 8192; ties keep the array/bitset). One deliberate
 * difference: 64-bit keys are written SPARSE (only non-empty buckets). Java
 * writes every key 0..max with empty bitmaps in the gaps; its reader (and
 * Delta's, Paimon's, CRoaring's) accepts sparse keys, and dense keys make
 * the size unbounded (one position at 2^62 would cost 12 GiB). The bytes are
 * identical to Java's whenever the set has no empty key below its largest
 * one, which covers every position < 2^32 and all of Java's golden files.
 *
 * Decoding validates every header, count, size, offset, key order and
 * container (sorted arrays, popcount of bitsets, non-overlapping runs, the
 * declared cardinality) before CRoaring sees a byte, and reports the first
 * problem with its byte offset in the input. Decoders accept what other
 * writers legitimately produce: empty inner bitmaps, sparse keys, any
 * cookie/container choice (non-canonical run choices, adjacent runs).
 *
 * Ownership: a `struct dv *` returned by dv_new, dv_clone or a decoder is
 * owned by the caller and released with dv_free. Input byte pointers are
 * borrowed for the call only. Output `struct buf *` are appended to (never
 * reset); on failure nothing is appended. A `struct st_err *` may be NULL.
 * A dv is not thread-safe for writes; concurrent readers are fine.
 */
#ifndef STRIKE_DV_H
#define STRIKE_DV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/buf.h"
#include "common/err.h"

/* ------------------------------------------------------------------ set */

struct dv; /* a set of uint64 row positions */

/* A new empty set; caller frees with dv_free. */
struct dv *dv_new(void);
/* Free the set and everything it owns. NULL is a no-op. */
void dv_free(struct dv *d);
/* A deep copy; caller frees. */
struct dv *dv_clone(const struct dv *d);

void dv_add(struct dv *d, uint64_t pos);
/* Add n positions, in any order (fastest ascending). `pos` is borrowed. */
void dv_add_many(struct dv *d, const uint64_t *pos, size_t n);
/* Add [lo, hi); nothing when hi <= lo. Memory grows with the range's size
   in containers (up to 8 KiB per 65536 positions before run encoding). */
void dv_add_range(struct dv *d, uint64_t lo, uint64_t hi);

bool dv_contains(const struct dv *d, uint64_t pos);
uint64_t dv_cardinality(const struct dv *d);
bool dv_is_empty(const struct dv *d);
/* The largest position into *out; false (and *out untouched) when empty. */
bool dv_max(const struct dv *d, uint64_t *out);
/* The smallest position into *out; false when empty. */
bool dv_min(const struct dv *d, uint64_t *out);
/* The number of positions <= pos (so the compaction remap of a live row at
   pos is pos - dv_rank(d, pos)). */
uint64_t dv_rank(const struct dv *d, uint64_t pos);
/* out[i] = dv_rank(d, pos[i]) for i < n, in one merge pass when pos is
   ascending (O(n + cardinality); out-of-order entries cost a dv_rank each).
   For remapping every row of a file at compaction. pos/out borrowed. */
void dv_rank_many(const struct dv *d, const uint64_t *pos, size_t n, uint64_t *out);
/* dst |= src. `src` is borrowed; dst may equal src. */
void dv_union(struct dv *dst, const struct dv *src);
/* Set equality, whatever the containers' in-memory types. */
bool dv_equal(const struct dv *a, const struct dv *b);

/*
 * mask[i] = 1 if start+i is in the set, else 0, for i < n (positions past
 * 2^64-1 read as 0). Works container by container: cost is O(n) for the
 * memset plus O(positions in range), never n lookups. `mask` is borrowed.
 */
void dv_fill_mask(const struct dv *d, uint64_t start, size_t n, uint8_t *mask);

/* Ascending iteration. The iterator borrows `d`, which must not change
   while it is in use. No cleanup is needed. */
struct dv_iter {
    const struct dv *d;
    size_t bucket;     /* index of the current 64-bit bucket */
    int32_t container; /* index of the current container in that bucket */
    uint32_t idx;      /* array: next value; run: current run; bitset: current word */
    uint32_t sub;      /* run: offset of the next value inside the current run */
    uint64_t word;     /* bitset: bits of word `idx` not yet returned */
};
void dv_iter_init(struct dv_iter *it, const struct dv *d);
/* Move to the first position >= pos (from any state of the iterator). */
void dv_iter_seek(struct dv_iter *it, uint64_t pos);
/* The next position into *pos; false at the end. */
bool dv_iter_next(struct dv_iter *it, uint64_t *pos);
/* Up to `max` next positions into out[]; returns how many (0 at the end). */
size_t dv_iter_next_many(struct dv_iter *it, uint64_t *out, size_t max);

/* ------------------------------------------------------------ roaring */

/* Decode flag: refuse keys (high 32 bits) >= 2^31, i.e. positions >= 2^63
   (the Iceberg/Delta/Paimon DV rule; the key's MSB must be 0). */
#define DV_RULE 1u

/* Largest key a DV may hold under DV_RULE. */
#define DV_MAX_KEY 0x7fffffffu

/* Append the 64-bit portable serialization (sparse keys, run-optimised).
   Never fails; returns 0. */
int dv_encode_roaring64(const struct dv *d, struct buf *out);
/* Exact size dv_encode_roaring64 would append. */
size_t dv_roaring64_size(const struct dv *d);
/* Decode exactly n bytes (trailing bytes are an error). On success *out is
   a new set the caller frees; on failure *out is NULL. */
int dv_decode_roaring64(const uint8_t *p, size_t n, unsigned flags, struct dv **out,
                        struct st_err *err);

/* The same for the bytes at [offset, offset+length) of a larger buffer;
   error offsets are then offsets in `file`. */
int dv_decode_roaring64_at(const uint8_t *file, size_t file_len, uint64_t offset, uint64_t length,
                           unsigned flags, struct dv **out, struct st_err *err);

/* Append the 32-bit portable serialization. ST_EINVAL (nothing appended)
   if any position is >= 2^32. */
int dv_encode_roaring32(const struct dv *d, struct buf *out, struct st_err *err);
/* Decode exactly n bytes of a 32-bit portable bitmap (positions < 2^32). */
int dv_decode_roaring32(const uint8_t *p, size_t n, struct dv **out, struct st_err *err);
int dv_decode_roaring32_at(const uint8_t *file, size_t file_len, uint64_t offset, uint64_t length,
                           struct dv **out, struct st_err *err);

/* ---------------------------------------------------------- iceberg-dv */

#define DV_MAGIC_LE 0x6439D3D1u     /* bytes D1 D3 39 64 */
#define DV_ICEBERG_VECTOR_OFFSET 8u /* the vector starts after len + magic */
#define DV_ICEBERG_OVERHEAD 12u     /* len + magic + CRC */
#define DV_BLOB_TYPE "deletion-vector-v1"

/* Append an Iceberg deletion-vector-v1 blob. ST_EINVAL (nothing appended)
   if a position is >= 2^63 (such a set is not a valid DV). */
int dv_encode_iceberg(const struct dv *d, struct buf *out);
/* Decode a whole blob (n = Iceberg content_size_in_bytes). Checks the
   length field (= n - 8), the magic, the CRC, the vector (DV rule), and
   the cardinality when expected_cardinality >= 0 (Iceberg record_count). */
int dv_decode_iceberg(const uint8_t *p, size_t n, int64_t expected_cardinality, struct dv **out,
                      struct st_err *err);
/* The same for a blob at [offset, offset+length) of a larger buffer (a
   Puffin file); error offsets are then offsets in `file`. */
int dv_decode_iceberg_at(const uint8_t *file, size_t file_len, uint64_t offset, uint64_t length,
                         int64_t expected_cardinality, struct dv **out, struct st_err *err);

/* ------------------------------------------------------------- poslist */

/*
 * strike's position list: how the catalog keeps a small DV that its own SQL
 * appends to (a single-key delete commits in one statement; docs/DESIGN.md
 * "Where a DV lives"). Never leaves the catalog: the DV endpoints and Puffin
 * files get the Iceberg blob of the same set (dv_poslist_to_iceberg).
 *   "SPL1" | first 8 bytes of SHA-256(positions) | positions, BE u32 each
 * Positions are below 2^31 (PostgreSQL's int4send), in any order, none
 * twice. The magic cannot open an Iceberg blob of an inline size (its
 * first byte would make the length field at least 0x53000000).
 */
#define DV_POSLIST_HEADER 12u
#define DV_POSLIST_MAX_POS 0x7FFFFFFFu
/* The bytes start with the position list's magic (the rest unchecked). */
bool dv_is_poslist(const uint8_t *p, size_t n);
/* The encoded size of d (12 + 4 per position), or 0 when a position is above
   DV_POSLIST_MAX_POS. */
size_t dv_poslist_size(const struct dv *d);
/* Append d as a position list, ascending. ST_EINVAL (nothing appended) when
   dv_poslist_size(d) is 0. */
int dv_encode_poslist(const struct dv *d, struct buf *out);
/* Decode a whole list: magic, size, checksum, range and repeats are checked,
   and the count when expected_cardinality >= 0. */
int dv_decode_poslist(const uint8_t *p, size_t n, int64_t expected_cardinality, struct dv **out,
                      struct st_err *err);
/* Append the Iceberg deletion-vector-v1 blob of the set a list holds. */
int dv_poslist_to_iceberg(const uint8_t *p, size_t n, int64_t expected_cardinality, struct buf *out,
                          struct st_err *err);

/* ------------------------------------------------------------ delta-dv */

#define DV_DELTA_FILE_VERSION 1u

/* Append a one-vector Delta DV file: byte 0x01 followed by exactly the
   Iceberg blob. The descriptor is offset 1, sizeInBytes = blob len - 8.
   ST_EINVAL as for dv_encode_iceberg. */
int dv_encode_delta_file(const struct dv *d, struct buf *out);
/* Decode the entry at `offset` (it points at the BE size) of a Delta DV
   file held in file[0..n). size_in_bytes is the descriptor's sizeInBytes,
   checked against the entry's size field unless -1. */
int dv_decode_delta_entry(const uint8_t *file, size_t n, uint64_t offset, int64_t size_in_bytes,
                          struct dv **out, struct st_err *err);
/* Decode an inline DV: `z85` (NUL-terminated) is Z85 of the bare
   RoaringBitmapArray (magic + vector), zero-padded to a multiple of 4;
   size_in_bytes is the descriptor's sizeInBytes (the unpadded length). */
int dv_decode_delta_inline(const char *z85, size_t size_in_bytes, struct dv **out,
                           struct st_err *err);
/* Append the Z85 text of an inline DV for d (NUL-terminated, not counted in
   out->len) and set *size_in_bytes. ST_EINVAL as for dv_encode_iceberg. */
int dv_encode_delta_inline(const struct dv *d, struct buf *out, size_t *size_in_bytes);

/* Iterating the entries of a multi-vector Delta DV file (entries are laid
   out back to back from offset 1; each takes its size + 8 bytes). */
struct dv_delta_cursor {
    const uint8_t *file; /* borrowed */
    size_t n;
    uint64_t next; /* offset of the next entry */
};
/* Checks the version byte. */
int dv_delta_cursor_init(struct dv_delta_cursor *c, const uint8_t *file, size_t n,
                         struct st_err *err);
/* 1 and the next entry (its offset, its sizeInBytes and its set, which the
   caller frees) ; 0 at the end of the file; < 0 on an invalid entry. */
int dv_delta_cursor_next(struct dv_delta_cursor *c, uint64_t *offset, uint32_t *size_in_bytes,
                         struct dv **out, struct st_err *err);

/* ---------------------------------------------- serving without decoding */

enum dv_format {
    DV_FMT_ROARING32,
    DV_FMT_ROARING64,
    DV_FMT_ICEBERG, /* "iceberg-dv" */
    DV_FMT_PUFFIN,
    DV_FMT_DELTA,  /* "delta-dv" */
    DV_FMT_PAIMON, /* "paimon-dv" */
};
/* Parse a format name as used by the CLI and the HTTP API ("roaring64",
   "iceberg-dv", ...); false if unknown. */
bool dv_format_parse(const char *name, enum dv_format *out);
/* The name of a format (a static string). */
const char *dv_format_name(enum dv_format f);

/*
 * Check a stored Iceberg blob's framing (length field = n - 8, magic, and
 * the CRC when verify_crc) without decoding the vector: O(1) without the
 * CRC, one crc32 pass with it.
 */
int dv_iceberg_check(const uint8_t *blob, size_t n, bool verify_crc, struct st_err *err);

/*
 * Express a stored Iceberg blob in another wire format without decoding or
 * copying it: fills iov[0..*niov) with pointers into `blob` (borrowed: keep
 * it alive while the iovecs are used) and static bytes. fmt is
 * DV_FMT_ROARING64 (the blob's vector slice), DV_FMT_ICEBERG (the blob) or
 * DV_FMT_DELTA (the version byte, then the blob). The framing is checked
 * (dv_iceberg_check without CRC). Other formats: ST_EINVAL.
 */
int dv_iceberg_to_wire(const uint8_t *blob, size_t n, enum dv_format fmt, struct iovec iov[2],
                       int *niov, struct st_err *err);

/* The bytes of an empty DV in fmt (ROARING32, ROARING64, ICEBERG, DELTA);
   static storage, never freed. NULL for other formats. */
const uint8_t *dv_empty_bytes(enum dv_format fmt, size_t *len);

#endif
