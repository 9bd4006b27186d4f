/* fuzz_dv_poslist.c - strike's position lists (inline DVs in the catalog): the decoder never
   crashes, a decoded list re-encodes to a list of the same set (sorted), and its Iceberg blob
   decodes to that set too. */
#include <stdint.h>
#include <stdlib.h>

#include "dv/dv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_err e = {0};
    struct dv *d;
    int rc = dv_decode_poslist(data, size, -1, &d, &e);
    if (rc != ST_OK) {
        if (d != NULL || e.msg[0] == '\0')
            abort();
        return 0;
    }
    if (!dv_is_poslist(data, size) || dv_poslist_size(d) != size)
        abort(); /* every position is distinct and below 2^31: the same size again */
    struct buf b = BUF_INIT;
    struct dv *back;
    if (dv_encode_poslist(d, &b) != ST_OK || b.len != size ||
        dv_decode_poslist(b.data, b.len, (int64_t)dv_cardinality(d), &back, &e) != ST_OK ||
        !dv_equal(back, d))
        abort();
    dv_free(back);
    buf_reset(&b);
    if (dv_poslist_to_iceberg(data, size, (int64_t)dv_cardinality(d), &b, &e) != ST_OK ||
        dv_decode_iceberg(b.data, b.len, (int64_t)dv_cardinality(d), &back, &e) != ST_OK ||
        !dv_equal(back, d))
        abort();
    dv_free(back);
    buf_free(&b);
    dv_free(d);
    return 0;
}
