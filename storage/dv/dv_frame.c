/*
 * dv_frame.c - the framing shared by Iceberg deletion-vector-v1 blobs,
 * Delta DV files and Paimon 64-bit entries (BE length, LE magic D1 D3 39 64,
 * portable 64-bit vector, BE CRC-32 over magic + vector), inline Delta DVs,
 * and the byte-level conversions the DV HTTP endpoint serves.
 */
#include "dv_int.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>
#include <zlib.h>

#include "common/xalloc.h"
#include "z85.h"

static const uint8_t MAGIC[4] = {0xD1, 0xD3, 0x39, 0x64};

int dv__check_dv_rule(const struct dv *d)
{
    if (d->n > 0 && d->b[d->n - 1].key > DV_MAX_KEY)
        return ST_EINVAL;
    return ST_OK;
}

static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}

int dv__frame(const uint8_t *p, size_t avail, size_t base, bool exact, const uint8_t **data,
              uint32_t *len, struct st_err *err)
{
    if (avail < 4)
        return st_errf(err, ST_ECORRUPT,
                       "truncated: the 4-byte big-endian length at byte %zu is cut off (%zu bytes "
                       "left)",
                       base, avail);
    uint32_t l = ld_u32be(p);
    if (exact && (uint64_t)l + 8 != avail)
        return st_errf(err, ST_ECORRUPT,
                       "length field at byte %zu says %" PRIu32
                       " bytes of magic and vector, so the blob would be %" PRIu64
                       " bytes, but it is %zu",
                       base, l, (uint64_t)l + 8, avail);
    if (!exact && (uint64_t)l + 8 > avail)
        return st_errf(err, ST_ECORRUPT,
                       "truncated: length field at byte %zu says %" PRIu32
                       " bytes, plus 8 for length and CRC, but only %zu bytes are left",
                       base, l, avail);
    uint32_t stored = ld_u32be(p + 4 + l), computed = crc32_of(p + 4, l);
    if (stored != computed)
        return st_errf(err, ST_ECORRUPT,
                       "CRC mismatch at byte %zu: stored 0x%08" PRIx32 ", computed 0x%08" PRIx32
                       " over bytes %zu..%zu",
                       base + 4 + l, stored, computed, base + 4, base + 4 + l);
    *data = p + 4;
    *len = l;
    return ST_OK;
}

int dv__dec_magic_vector(const uint8_t *p, size_t len, size_t base, int64_t expected_card,
                         struct dv **out, struct st_err *err)
{
    *out = NULL;
    if (len < 4)
        return st_errf(err, ST_ECORRUPT,
                       "truncated: the 4-byte magic at byte %zu is cut off (%zu bytes)", base, len);
    if (memcmp(p, MAGIC, 4) != 0) {
        static const uint8_t be[4] = {0x64, 0x39, 0xD3, 0xD1}, native[4] = {0xD0, 0xD3, 0x39, 0x64},
                             native_be[4] = {0x64, 0x39, 0xD3, 0xD0};
        const char *why = "";
        if (memcmp(p, be, 4) == 0)
            why = ": the magic was written big-endian";
        else if (memcmp(p, native, 4) == 0 || memcmp(p, native_be, 4) == 0)
            why = ": Delta's legacy 'native' RoaringBitmapArray format is not supported, only "
                  "'portable'";
        return st_errf(err, ST_ECORRUPT,
                       "bad magic %02x %02x %02x %02x at byte %zu (expected d1 d3 39 64)%s", p[0],
                       p[1], p[2], p[3], base, why);
    }
    struct dv *d;
    int rc = dv__dec64(p + 4, len - 4, base + 4, DV_RULE, &d, err);
    if (rc != ST_OK)
        return rc;
    if (expected_card >= 0) {
        uint64_t card = dv_cardinality(d);
        if (card != (uint64_t)expected_card) {
            dv_free(d);
            return st_errf(err, ST_ECORRUPT,
                           "the vector at byte %zu holds %" PRIu64
                           " positions, but its metadata says the cardinality is %" PRId64,
                           base + 4, card, expected_card);
        }
    }
    *out = d;
    return ST_OK;
}

int dv__decode_blob(const uint8_t *p, size_t n, size_t base, int64_t expected_card, struct dv **out,
                    struct st_err *err)
{
    *out = NULL;
    const uint8_t *data;
    uint32_t len;
    int rc = dv__frame(p, n, base, true, &data, &len, err);
    if (rc != ST_OK)
        return rc;
    return dv__dec_magic_vector(data, len, base + 4, expected_card, out, err);
}

/* Append len | magic | vector | CRC. */
static void encode_blob(const struct dv *d, struct buf *out)
{
    size_t at = out->len;
    buf_put_u32be(out, 0); /* patched below */
    buf_append(out, MAGIC, 4);
    dv_encode_roaring64(d, out);
    size_t len = out->len - at - 4;
    assert(len <= UINT32_MAX);
    /* A portable vector > 4 GiB would need more than 2^19 full containers
       per key in 2^31 keys' worth of positions; the caller bounds sets far
       below that (a data file's rows). */
    st_u32be(out->data + at, (uint32_t)len);
    buf_put_u32be(out, crc32_of(out->data + at + 4, len));
}

int dv_encode_iceberg(const struct dv *d, struct buf *out)
{
    if (dv__check_dv_rule(d) != ST_OK)
        return ST_EINVAL;
    encode_blob(d, out);
    return ST_OK;
}

int dv_decode_iceberg(const uint8_t *p, size_t n, int64_t expected_cardinality, struct dv **out,
                      struct st_err *err)
{
    return dv__decode_blob(p, n, 0, expected_cardinality, out, err);
}

int dv_decode_iceberg_at(const uint8_t *file, size_t file_len, uint64_t offset, uint64_t length,
                         int64_t expected_cardinality, struct dv **out, struct st_err *err)
{
    *out = NULL;
    if (offset > file_len || length > file_len - offset)
        return st_errf(err, ST_ECORRUPT,
                       "blob at offset %" PRIu64 " length %" PRIu64
                       " runs past the end of the %zu-byte file",
                       offset, length, file_len);
    return dv__decode_blob(file + offset, (size_t)length, (size_t)offset, expected_cardinality, out,
                           err);
}

/* ---------------------------------------------------------------- delta */

int dv_encode_delta_file(const struct dv *d, struct buf *out)
{
    if (dv__check_dv_rule(d) != ST_OK)
        return ST_EINVAL;
    buf_put_u8(out, DV_DELTA_FILE_VERSION);
    encode_blob(d, out);
    return ST_OK;
}

int dv__check_version(const uint8_t *file, size_t n, const char *kind, unsigned version,
                      struct st_err *err)
{
    if (n < 1)
        return st_errf(err, ST_ECORRUPT, "empty %s: no version byte at byte 0", kind);
    if (file[0] != version)
        return st_errf(err, ST_ECORRUPT, "unsupported %s version %u at byte 0 (expected %u)", kind,
                       file[0], version);
    return ST_OK;
}

int dv__check_entry(const uint8_t *file, size_t n, uint64_t offset, const char *kind,
                    unsigned version, struct st_err *err)
{
    int rc = dv__check_version(file, n, kind, version, err);
    if (rc != ST_OK)
        return rc;
    if (offset < 1 || offset >= n)
        return st_errf(err, ST_ECORRUPT,
                       "DV offset %" PRIu64 " is outside the entries of the %zu-byte file "
                       "(entries start at byte 1)",
                       offset, n);
    return ST_OK;
}

int dv_decode_delta_entry(const uint8_t *file, size_t n, uint64_t offset, int64_t size_in_bytes,
                          struct dv **out, struct st_err *err)
{
    *out = NULL;
    int rc = dv__check_entry(file, n, offset, "DV file", DV_DELTA_FILE_VERSION, err);
    if (rc != ST_OK)
        return rc;
    const uint8_t *p = file + offset;
    size_t avail = n - (size_t)offset;
    if (avail >= 4 && size_in_bytes >= 0 && ld_u32be(p) != (uint64_t)size_in_bytes)
        return st_errf(err, ST_ECORRUPT,
                       "size field at byte %" PRIu64 " says %" PRIu32
                       ", but the descriptor's sizeInBytes is %" PRId64,
                       offset, ld_u32be(p), size_in_bytes);
    const uint8_t *data;
    uint32_t len;
    rc = dv__frame(p, avail, (size_t)offset, false, &data, &len, err);
    if (rc != ST_OK)
        return rc;
    return dv__dec_magic_vector(data, len, (size_t)offset + 4, -1, out, err);
}

int dv_delta_cursor_init(struct dv_delta_cursor *c, const uint8_t *file, size_t n,
                         struct st_err *err)
{
    c->file = file;
    c->n = n;
    c->next = 1;
    return dv__check_version(file, n, "DV file", DV_DELTA_FILE_VERSION, err);
}

int dv_delta_cursor_next(struct dv_delta_cursor *c, uint64_t *offset, uint32_t *size_in_bytes,
                         struct dv **out, struct st_err *err)
{
    *out = NULL;
    if (c->next >= c->n)
        return 0;
    uint64_t at = c->next;
    int rc = dv_decode_delta_entry(c->file, c->n, at, -1, out, err);
    if (rc != ST_OK)
        return rc;
    uint32_t size = ld_u32be(c->file + at);
    assert(at + (uint64_t)size + 8 <= c->n); /* dv__frame checked the entry fits */
    c->next = at + (uint64_t)size + 8;
    *offset = at;
    *size_in_bytes = size;
    return 1;
}

int dv_decode_delta_inline(const char *z85, size_t size_in_bytes, struct dv **out,
                           struct st_err *err)
{
    *out = NULL;
    struct buf raw = BUF_INIT;
    int rc = z85_decode(z85, strlen(z85), &raw, err);
    if (rc != ST_OK)
        goto out;
    if (size_in_bytes > raw.len || raw.len - size_in_bytes >= 4) {
        rc = st_errf(err, ST_ECORRUPT,
                     "inline DV: sizeInBytes %zu does not match the %zu decoded bytes (Z85 pads "
                     "to a multiple of 4 only)",
                     size_in_bytes, raw.len);
        goto out;
    }
    rc = dv__dec_magic_vector(raw.data, size_in_bytes, 0, -1, out, err);
out:
    buf_free(&raw);
    return rc;
}

int dv_encode_delta_inline(const struct dv *d, struct buf *out, size_t *size_in_bytes)
{
    if (dv__check_dv_rule(d) != ST_OK)
        return ST_EINVAL;
    struct buf raw = BUF_INIT;
    buf_append(&raw, MAGIC, 4);
    dv_encode_roaring64(d, &raw);
    *size_in_bytes = raw.len;
    while (raw.len % 4 != 0)
        buf_put_u8(&raw, 0);
    z85_encode(raw.data, raw.len, out);
    buf_free(&raw);
    return ST_OK;
}

/* ------------------------------------------------------------ the wire */

static const struct {
    enum dv_format f;
    const char *name;
} FORMATS[] = {
    {DV_FMT_ROARING32, "roaring32"}, {DV_FMT_ROARING64, "roaring64"},
    {DV_FMT_ICEBERG, "iceberg-dv"},  {DV_FMT_PUFFIN, "puffin"},
    {DV_FMT_DELTA, "delta-dv"},      {DV_FMT_PAIMON, "paimon-dv"},
};

bool dv_format_parse(const char *name, enum dv_format *out)
{
    for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++) {
        if (strcmp(name, FORMATS[i].name) == 0) {
            *out = FORMATS[i].f;
            return true;
        }
    }
    return false;
}

const char *dv_format_name(enum dv_format f)
{
    for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++)
        if (FORMATS[i].f == f)
            return FORMATS[i].name;
    return "unknown";
}

int dv_iceberg_check(const uint8_t *blob, size_t n, bool verify_crc, struct st_err *err)
{
    if (verify_crc) {
        const uint8_t *data;
        uint32_t len;
        return dv__frame(blob, n, 0, true, &data, &len, err);
    }
    if (n < DV_ICEBERG_OVERHEAD + 8)
        return st_errf(err, ST_ECORRUPT,
                       "a deletion-vector-v1 blob is at least 20 bytes; this one is %zu", n);
    if ((uint64_t)ld_u32be(blob) + 8 != n)
        return st_errf(err, ST_ECORRUPT,
                       "length field at byte 0 says %" PRIu32 ", but the blob is %zu bytes",
                       ld_u32be(blob), n);
    if (memcmp(blob + 4, MAGIC, 4) != 0)
        return st_errf(err, ST_ECORRUPT, "bad magic at byte 4 (expected d1 d3 39 64)");
    return ST_OK;
}

int dv_iceberg_to_wire(const uint8_t *blob, size_t n, enum dv_format fmt, struct iovec iov[2],
                       int *niov, struct st_err *err)
{
    static const uint8_t version = DV_DELTA_FILE_VERSION;
    int rc = dv_iceberg_check(blob, n, false, err);
    if (rc != ST_OK)
        return rc;
    switch (fmt) {
    case DV_FMT_ROARING64:
        iov[0].iov_base = (void *)(uintptr_t)(blob + DV_ICEBERG_VECTOR_OFFSET);
        iov[0].iov_len = n - DV_ICEBERG_OVERHEAD;
        *niov = 1;
        return ST_OK;
    case DV_FMT_ICEBERG:
        iov[0].iov_base = (void *)(uintptr_t)blob;
        iov[0].iov_len = n;
        *niov = 1;
        return ST_OK;
    case DV_FMT_DELTA:
        iov[0].iov_base = (void *)(uintptr_t)&version;
        iov[0].iov_len = 1;
        iov[1].iov_base = (void *)(uintptr_t)blob;
        iov[1].iov_len = n;
        *niov = 2;
        return ST_OK;
    default:
        return st_errf(err, ST_EINVAL, "format %s cannot be served from an Iceberg blob",
                       dv_format_name(fmt));
    }
}

const uint8_t *dv_empty_bytes(enum dv_format fmt, size_t *len)
{
    static const uint8_t r32[8] = {0x3a, 0x30, 0, 0, 0, 0, 0, 0};
    static const uint8_t r64[8] = {0};
    /* 0x01 | len 12 | magic | 8 zero bytes | CRC 0xbf18480c */
    static const uint8_t delta[21] = {0x01, 0x00, 0x00, 0x00, 0x0c, 0xd1, 0xd3, 0x39, 0x64, 0,   0,
                                      0,    0,    0,    0,    0,    0,    0xbf, 0x18, 0x48, 0x0c};
    switch (fmt) {
    case DV_FMT_ROARING32:
        *len = sizeof r32;
        return r32;
    case DV_FMT_ROARING64:
        *len = sizeof r64;
        return r64;
    case DV_FMT_ICEBERG:
        *len = sizeof delta - 1;
        return delta + 1;
    case DV_FMT_DELTA:
        *len = sizeof delta;
        return delta;
    default:
        *len = 0;
        return NULL;
    }
}
