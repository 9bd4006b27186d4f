/*
 * dv_int.h - internals shared by the dv/ sources. Not part of the contract.
 *
 * A `struct dv` is a sorted array of buckets: the high 32 bits of the
 * positions (the key) and a CRoaring 0.2.66 32-bit bitmap of the low 32
 * bits. Invariant: keys strictly ascending, no bucket empty.
 *
 * The encoder, the iterator and the mask fill walk CRoaring's containers
 * directly (roaring_array_t and the container structs of its installed
 * headers), because 0.2.66 has neither Java's run-optimisation rule nor a
 * container-level scan API. That layout is pinned by a static assertion on
 * the CRoaring version in dv_set.c.
 */
#ifndef STRIKE_DV_INT_H
#define STRIKE_DV_INT_H

#include <roaring/roaring.h>
#include <roaring/roaring_version.h>

#include "common/debug.h"
#include "dv.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dv/: CRoaring's in-memory containers are read as little-endian words"
#endif

struct dv_bucket {
    uint32_t key;
    roaring_bitmap_t *bm; /* owned, never empty */
};

struct dv {
    struct dv_bucket *b; /* owned */
    size_t n;
    size_t cap;
};

/* Append a bucket (key above every existing key); takes ownership of bm. */
void dv__push_bucket(struct dv *d, uint32_t key, roaring_bitmap_t *bm);

#ifndef NDEBUG
/*
 * Assert everything the structure promises (debug builds only; call it as
 * ST_DEBUG_CHECK(dv__check(d)), common/debug.h): the invariant above, and in
 * every bitmap what the container walks rely on: container keys strictly
 * ascending, arrays strictly ascending, runs sorted, disjoint and inside
 * 0..65535, a bitset's cached cardinality its popcount. O(containers +
 * array values): for the ends of operations that cost as much (decoding,
 * union, clone), never for one dv_add.
 */
void dv__check(const struct dv *d);
#endif

/* A view of one container, whatever CRoaring's type for it. */
struct dv__cont {
    uint8_t type; /* BITSET_/ARRAY_/RUN_CONTAINER_TYPE_CODE */
    uint16_t key; /* high 16 bits of the low 32 */
    const void *c;
};
void dv__container(const roaring_bitmap_t *bm, int32_t i, struct dv__cont *out);

/* The 32-bit portable encoding of bm (canonical, Java's run rule). */
size_t dv__enc32_size(const roaring_bitmap_t *bm);
void dv__enc32(const roaring_bitmap_t *bm, struct buf *out);

/*
 * Validate a 32-bit portable bitmap at p[0..n) (`base` = offset of p in
 * the caller's input, for messages). On success *used = its length and,
 * when out is not NULL, *out = the bitmap (NULL when it is empty).
 */
int dv__dec32(const uint8_t *p, size_t n, size_t base, size_t *used, roaring_bitmap_t **out,
              struct st_err *err);
/* Decode a 64-bit portable vector that must span exactly p[0..n). */
int dv__dec64(const uint8_t *p, size_t n, size_t base, unsigned flags, struct dv **out,
              struct st_err *err);

/*
 * A framed entry at p[0..avail): BE u32 len | data[len] | BE u32 CRC(data).
 * `exact`: the frame must fill avail exactly. Checks the CRC. On success
 * data and len describe the payload.
 */
int dv__frame(const uint8_t *p, size_t avail, size_t base, bool exact, const uint8_t **data,
              uint32_t *len, struct st_err *err);
/*
 * Files of framed entries behind a version byte (Delta DV files, Paimon
 * dvindex files; `kind` names them in messages): byte 0 must be `version`,
 * and an entry's offset must fall inside the entries (at or after byte 1).
 */
int dv__check_version(const uint8_t *file, size_t n, const char *kind, unsigned version,
                      struct st_err *err);
int dv__check_entry(const uint8_t *file, size_t n, uint64_t offset, const char *kind,
                    unsigned version, struct st_err *err);
/* Decode a RoaringBitmapArray payload (LE magic + vector) of len bytes. */
int dv__dec_magic_vector(const uint8_t *p, size_t len, size_t base, int64_t expected_card,
                         struct dv **out, struct st_err *err);

/* Decode a whole Iceberg blob p[0..n) (base: its offset, for messages). */
int dv__decode_blob(const uint8_t *p, size_t n, size_t base, int64_t expected_card, struct dv **out,
                    struct st_err *err);

/*
 * Bitset word loops. On x86-64 these use the POPCNT instruction when the
 * CPU has it (checked at run time: the build targets baseline x86-64, whose
 * software popcount is several times slower).
 */
/* Sum of the popcounts of n little-endian u64 words at p (any alignment). */
uint32_t dv__popcount(const uint8_t *p, size_t n);
/* Cardinality and number of runs of a 1024-word bitset container. */
void dv__bitset_info(const uint64_t *w, uint32_t *card, uint32_t *runs);

/* Returns ST_EINVAL when d holds a position >= 2^63. */
int dv__check_dv_rule(const struct dv *d);

#endif
