/* fuzz_dv_iceberg.c - Iceberg deletion-vector-v1 blobs: the decoder, the
   framing check and the no-decode wire conversions agree, and never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dv/dv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_err e = {0};
    struct dv *d;
    int rc = dv_decode_iceberg(data, size, -1, &d, &e);
    struct st_err e2 = {0};
    int framed = dv_iceberg_check(data, size, true, &e2);
    if (rc == ST_OK && framed != ST_OK)
        abort(); /* a decodable blob has valid framing */
    struct iovec iov[2];
    int niov;
    st_err_clear(&e2);
    if (dv_iceberg_to_wire(data, size, DV_FMT_DELTA, iov, &niov, &e2) == ST_OK &&
        (niov != 2 || iov[1].iov_len != size))
        abort();
    if (rc != ST_OK) {
        if (d != NULL || e.msg[0] == '\0')
            abort();
        return 0;
    }
    struct buf b = BUF_INIT;
    if (dv_encode_iceberg(d, &b) != ST_OK)
        abort();
    struct dv *back;
    if (dv_decode_iceberg(b.data, b.len, (int64_t)dv_cardinality(d), &back, &e) != ST_OK ||
        !dv_equal(back, d))
        abort();
    /* the roaring64 slice of the blob decodes to the same set */
    st_err_clear(&e2);
    if (dv_iceberg_to_wire(data, size, DV_FMT_ROARING64, iov, &niov, &e2) != ST_OK)
        abort();
    struct dv *v;
    if (dv_decode_roaring64(iov[0].iov_base, iov[0].iov_len, DV_RULE, &v, &e) != ST_OK ||
        !dv_equal(v, d))
        abort();
    dv_free(v);
    dv_free(back);
    buf_free(&b);
    dv_free(d);
    return 0;
}
