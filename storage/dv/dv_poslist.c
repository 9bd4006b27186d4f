/*
 * dv_poslist.c - strike's position list, the form of a small DV that the
 * catalog's own SQL can append to (dv.h "poslist"; docs/DESIGN.md "Where a
 * DV lives"):
 *
 *   "SPL1" | the first 8 bytes of SHA-256 of the positions | positions
 *
 * each position a big-endian u32 below 2^31 (PostgreSQL's int4send), in
 * any order, none twice. A single-key delete appends its position and
 * recomputes the checksum in the statement that commits it; everything
 * that reads the row decodes it here.
 */
#include "dv_int.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "common/sha256.h"

static const uint8_t MAGIC[4] = {'S', 'P', 'L', '1'};

static void checksum(const uint8_t *p, size_t n, uint8_t out[8])
{
    struct st_sha256 s;
    uint8_t h[32];
    st_sha256_init(&s);
    st_sha256_update(&s, p, n);
    st_sha256_final(&s, h);
    memcpy(out, h, 8);
}

bool dv_is_poslist(const uint8_t *p, size_t n)
{
    return n >= sizeof MAGIC && memcmp(p, MAGIC, sizeof MAGIC) == 0;
}

size_t dv_poslist_size(const struct dv *d)
{
    uint64_t max;
    if (dv_max(d, &max) && max > DV_POSLIST_MAX_POS)
        return 0;
    return DV_POSLIST_HEADER + 4 * (size_t)dv_cardinality(d);
}

int dv_encode_poslist(const struct dv *d, struct buf *out)
{
    if (dv_poslist_size(d) == 0)
        return ST_EINVAL;
    size_t at = out->len;
    buf_append(out, MAGIC, sizeof MAGIC);
    uint8_t zero[8] = {0};
    buf_append(out, zero, sizeof zero);
    struct dv_iter it;
    dv_iter_init(&it, d);
    uint64_t pos;
    while (dv_iter_next(&it, &pos))
        buf_put_u32be(out, (uint32_t)pos);
    size_t body = at + DV_POSLIST_HEADER;
    assert(out->len - at == dv_poslist_size(d)); /* 4 bytes for each position */
    checksum(out->data + body, out->len - body, out->data + at + sizeof MAGIC);
    return ST_OK;
}

int dv_decode_poslist(const uint8_t *p, size_t n, int64_t expected_cardinality, struct dv **out,
                      struct st_err *err)
{
    *out = NULL;
    if (!dv_is_poslist(p, n))
        return st_errf(err, ST_ECORRUPT, "position list: no \"SPL1\" magic at byte 0");
    if (n < DV_POSLIST_HEADER || (n - DV_POSLIST_HEADER) % 4 != 0)
        return st_errf(err, ST_ECORRUPT,
                       "position list: %zu bytes is not a 12-byte header and 4-byte positions", n);
    size_t count = (n - DV_POSLIST_HEADER) / 4;
    if (expected_cardinality >= 0 && (uint64_t)expected_cardinality != count)
        return st_errf(err, ST_ECORRUPT,
                       "position list: %zu positions, the catalog row says %" PRId64, count,
                       expected_cardinality);
    uint8_t sum[8];
    checksum(p + DV_POSLIST_HEADER, n - DV_POSLIST_HEADER, sum);
    if (memcmp(sum, p + sizeof MAGIC, sizeof sum) != 0)
        return st_errf(err, ST_ECORRUPT, "position list: checksum mismatch (bytes 4..11)");
    struct dv *d = dv_new();
    for (size_t i = 0; i < count; i++) {
        const uint8_t *q = p + DV_POSLIST_HEADER + 4 * i;
        uint32_t pos = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
        if (pos > DV_POSLIST_MAX_POS || dv_contains(d, pos)) {
            dv_free(d);
            return st_errf(err, ST_ECORRUPT, "position list: %s position %" PRIu32 " at byte %zu",
                           pos > DV_POSLIST_MAX_POS ? "out-of-range" : "repeated", pos,
                           DV_POSLIST_HEADER + 4 * i);
        }
        dv_add(d, pos);
    }
    *out = d;
    return ST_OK;
}

int dv_poslist_to_iceberg(const uint8_t *p, size_t n, int64_t expected_cardinality, struct buf *out,
                          struct st_err *err)
{
    struct dv *d;
    int rc = dv_decode_poslist(p, n, expected_cardinality, &d, err);
    if (rc != ST_OK)
        return rc;
    rc = dv_encode_iceberg(d, out);
    assert(rc == ST_OK); /* positions < 2^31: always a valid DV */
    dv_free(d);
    return rc;
}
