/* paimon.c - Paimon dvindex files, 32-bit and 64-bit deletion vectors. */
#include "paimon.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>
#include <zlib.h>

#include "dv_int.h"

int paimon_decode_dv(const uint8_t *file, size_t n, uint64_t offset, int64_t length,
                     struct paimon_dv_entry *e, struct dv **out, struct st_err *err)
{
    *out = NULL;
    int rc = dv__check_entry(file, n, offset, "dvindex", PAIMON_DVINDEX_VERSION, err);
    if (rc != ST_OK)
        return rc;
    const uint8_t *data;
    uint32_t size;
    rc = dv__frame(file + offset, n - (size_t)offset, (size_t)offset, false, &data, &size, err);
    if (rc != ST_OK)
        return rc;
    size_t at = (size_t)offset + 4;
    if (size < 4)
        return st_errf(err, ST_ECORRUPT, "truncated: the 4-byte magic at byte %zu is cut off", at);
    struct paimon_dv_entry ent = {.offset = offset, .size = size};
    if (ld_u32be(data) == PAIMON_DV_MAGIC32) {
        ent.length = size;
        size_t used;
        roaring_bitmap_t *bm;
        rc = dv__dec32(data + 4, size - 4, at + 4, &used, &bm, err);
        if (rc != ST_OK)
            return rc;
        if (used != size - 4) {
            if (bm != NULL) /* 0.2.66 does not accept NULL */
                roaring_bitmap_free(bm);
            return st_errf(err, ST_ECORRUPT,
                           "%zu unexpected bytes after the 32-bit bitmap at byte %zu",
                           size - 4 - used, at + 4 + used);
        }
        struct dv *d = dv_new();
        if (bm != NULL)
            dv__push_bucket(d, 0, bm);
        *out = d;
    } else if (ld_u32le(data) == DV_MAGIC_LE) {
        ent.bitmap64 = true;
        ent.length = (uint64_t)size + 8;
        rc = dv__dec_magic_vector(data, size, at, -1, out, err);
        if (rc != ST_OK)
            return rc;
    } else {
        return st_errf(err, ST_ECORRUPT,
                       "bad magic %02x %02x %02x %02x at byte %zu (expected 5e 43 f2 d0 for a "
                       "32-bit or d1 d3 39 64 for a 64-bit DV)",
                       data[0], data[1], data[2], data[3], at);
    }
    if (length >= 0 && (uint64_t)length != ent.length) {
        dv_free(*out);
        *out = NULL;
        return st_errf(err, ST_ECORRUPT,
                       "the %s DV at byte %" PRIu64 " has length %" PRIu64 " (size field %" PRIu32
                       "), but the index manifest says %" PRId64,
                       ent.bitmap64 ? "64-bit" : "32-bit", offset, ent.length, size, length);
    }
    if (e != NULL)
        *e = ent;
    return ST_OK;
}

int paimon_cursor_init(struct paimon_cursor *c, const uint8_t *file, size_t n, struct st_err *err)
{
    c->file = file;
    c->n = n;
    c->next = 1;
    return dv__check_version(file, n, "dvindex", PAIMON_DVINDEX_VERSION, err);
}

int paimon_cursor_next(struct paimon_cursor *c, struct paimon_dv_entry *e, struct dv **out,
                       struct st_err *err)
{
    *out = NULL;
    if (c->next >= c->n)
        return 0;
    int rc = paimon_decode_dv(c->file, c->n, c->next, -1, e, out, err);
    if (rc != ST_OK)
        return rc;
    assert(e->offset + (uint64_t)e->size + 8 <= c->n); /* dv__frame checked the entry fits */
    c->next = e->offset + (uint64_t)e->size + 8;
    return 1;
}

void paimon_dvindex_begin(struct buf *out)
{
    buf_put_u8(out, PAIMON_DVINDEX_VERSION);
}

int paimon_dvindex_add(struct buf *out, const struct dv *d, bool bitmap64,
                       struct paimon_dv_entry *e, struct st_err *err)
{
    size_t at = out->len;
    if (bitmap64) {
        int rc = dv_encode_iceberg(d, out);
        if (rc != ST_OK)
            return st_errf(err, rc, "a 64-bit deletion vector holds positions below 2^63 only");
    } else {
        if (d->n > 1 || (d->n == 1 && d->b[0].key != 0))
            return st_errf(err, ST_EINVAL,
                           "a 32-bit Paimon deletion vector holds positions below 2^32 only");
        buf_put_u32be(out, 0); /* patched below */
        buf_put_u32be(out, PAIMON_DV_MAGIC32);
        int rc = dv_encode_roaring32(d, out, NULL);
        assert(rc == ST_OK); /* positions below 2^32: checked above */
        (void)rc;
        size_t size = out->len - at - 4;
        st_u32be(out->data + at, (uint32_t)size);
        buf_put_u32be(out, (uint32_t)crc32(crc32(0L, Z_NULL, 0), out->data + at + 4, (uInt)size));
    }
    if (e != NULL) {
        e->offset = at;
        e->size = ld_u32be(out->data + at);
        e->bitmap64 = bitmap64;
        e->length = bitmap64 ? (uint64_t)e->size + 8 : e->size;
    }
    return ST_OK;
}
