/*
 * paimon.h - Apache Paimon deletion-vector index files (`dvindex`).
 *
 * A file is version byte 1, then entries <u32 BE size><bin><u32 BE CRC-32
 * of bin>. `bin` is either a 32-bit DV (BE magic 5E 43 F2 D0 and a 32-bit
 * portable bitmap; Paimon's default) or a 64-bit DV (LE magic D1 D3 39 64
 * and the portable 64-bit vector: an Iceberg blob's framing). Paimon's
 * index manifest holds (data file name, offset of the size field, length,
 * cardinality) with length = size for 32-bit and size + 8 for 64-bit.
 */
#ifndef STRIKE_PAIMON_H
#define STRIKE_PAIMON_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "dv.h"

#define PAIMON_DV_MAGIC32 0x5E43F2D0u /* stored big-endian */
#define PAIMON_DVINDEX_VERSION 1u

struct paimon_dv_entry {
    uint64_t offset; /* of the entry's BE size field */
    uint32_t size;   /* the size field: magic + bitmap */
    bool bitmap64;   /* 64-bit (Iceberg framing) rather than 32-bit */
    uint64_t length; /* DeletionVectorMeta.length: size (32-bit) or size + 8 (64-bit) */
};

/* Decode the entry at `offset` of a dvindex file held in file[0..n)
   (borrowed). `length` is the manifest's length, checked unless -1. Fills
   *e when not NULL; *out is a new set the caller frees. */
int paimon_decode_dv(const uint8_t *file, size_t n, uint64_t offset, int64_t length,
                     struct paimon_dv_entry *e, struct dv **out, struct st_err *err);

/* Iterating every entry of a dvindex file. */
struct paimon_cursor {
    const uint8_t *file; /* borrowed */
    size_t n;
    uint64_t next;
};
/* Checks the version byte. */
int paimon_cursor_init(struct paimon_cursor *c, const uint8_t *file, size_t n, struct st_err *err);
/* 1 with the next entry and its set (caller frees), 0 at the end, < 0 on
   an invalid entry. */
int paimon_cursor_next(struct paimon_cursor *c, struct paimon_dv_entry *e, struct dv **out,
                       struct st_err *err);

/* Writing a dvindex file into `out`: paimon_dvindex_begin appends the
   version byte, paimon_dvindex_add one entry (ST_EINVAL, nothing appended,
   for a position >= 2^32 in a 32-bit DV or >= 2^63 in a 64-bit one). */
void paimon_dvindex_begin(struct buf *out);
int paimon_dvindex_add(struct buf *out, const struct dv *d, bool bitmap64,
                       struct paimon_dv_entry *e, struct st_err *err);

#endif
