/*
 * pq_codec.c - page decompression: SNAPPY (libsnappy's C API), ZSTD
 * (libzstd), GZIP (zlib), and UNCOMPRESSED. The page header states the
 * decompressed size; the output must be exactly that many bytes, so a page
 * can never make us write past, or allocate more than, what it claimed
 * (and the claim itself is bounded by PQ_PAGE_MAX before we get here).
 */
#include "pq_int.h"

#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

bool pq__codec_supported(int codec)
{
    return codec == PQ_CODEC_UNCOMPRESSED || codec == PQ_CODEC_SNAPPY || codec == PQ_CODEC_ZSTD ||
           codec == PQ_CODEC_GZIP;
}

static int gunzip(const uint8_t *src, size_t sn, uint8_t *dst, size_t dn, struct st_err *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK)
        return st_errf(err, ST_EINTERNAL, "zlib initialisation failed");
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)sn;
    z.next_out = dst;
    z.avail_out = (uInt)dn;
    int rc = ST_OK;
    for (;;) {
        int zr = inflate(&z, Z_FINISH);
        if (zr == Z_STREAM_END) {
            if (z.avail_in == 0)
                break;
            /* concatenated gzip members */
            if (inflateReset(&z) != Z_OK) {
                rc = st_errf(err, ST_ECORRUPT, "GZIP stream is corrupt");
                break;
            }
            continue;
        }
        if (zr == Z_BUF_ERROR && z.avail_out == 0) {
            rc = st_errf(err, ST_ECORRUPT, "GZIP data is larger than the page claims (%zu bytes)",
                         dn);
            break;
        }
        if (zr != Z_OK) {
            rc = st_errf(err, ST_ECORRUPT, "GZIP data is corrupt (%s)", z.msg ? z.msg : "?");
            break;
        }
    }
    if (rc == ST_OK && z.avail_out != 0)
        rc = st_errf(err, ST_ECORRUPT, "GZIP data is %zu bytes, the page claims %zu",
                     dn - z.avail_out, dn);
    inflateEnd(&z);
    return rc;
}

int pq__decompress(int codec, const uint8_t *src, size_t sn, uint8_t *dst, size_t dn,
                   void **zstd_dctx, struct st_err *err)
{
    switch (codec) {
    case PQ_CODEC_UNCOMPRESSED:
        if (sn != dn)
            return st_errf(err, ST_ECORRUPT,
                           "uncompressed page: compressed size %zu differs from size %zu", sn, dn);
        memcpy(dst, src, dn);
        return ST_OK;
    case PQ_CODEC_SNAPPY: {
        size_t len = 0;
        if (snappy_uncompressed_length((const char *)src, sn, &len) != SNAPPY_OK)
            return st_errf(err, ST_ECORRUPT, "SNAPPY data is corrupt (bad length header)");
        if (len != dn)
            return st_errf(err, ST_ECORRUPT, "SNAPPY data holds %zu bytes, the page claims %zu",
                           len, dn);
        size_t out = dn;
        if (snappy_uncompress((const char *)src, sn, (char *)dst, &out) != SNAPPY_OK || out != dn)
            return st_errf(err, ST_ECORRUPT, "SNAPPY data is corrupt");
        return ST_OK;
    }
    case PQ_CODEC_ZSTD: {
        if (*zstd_dctx == NULL)
            *zstd_dctx = ZSTD_createDCtx();
        if (*zstd_dctx == NULL)
            return st_errf(err, ST_EINTERNAL, "cannot create a ZSTD context");
        size_t r = ZSTD_decompressDCtx(*zstd_dctx, dst, dn, src, sn);
        if (ZSTD_isError(r))
            return st_errf(err, ST_ECORRUPT, "ZSTD data is corrupt (%s)", ZSTD_getErrorName(r));
        if (r != dn)
            return st_errf(err, ST_ECORRUPT, "ZSTD data holds %zu bytes, the page claims %zu", r,
                           dn);
        return ST_OK;
    }
    case PQ_CODEC_GZIP:
        return gunzip(src, sn, dst, dn, err);
    default:
        return st_errf(err, ST_EUNSUPPORTED, "compression codec %s is not supported",
                       pq_codec_name(codec));
    }
}
