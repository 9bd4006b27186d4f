/* fuzz_dv_roaring32.c - the 32-bit portable bitmap decoder: never crashes or
   leaks; what it accepts re-encodes canonically and decodes to the same set. */
#include <stdint.h>
#include <stdlib.h>

#include "dv/dv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_err e = {0};
    struct dv *d;
    if (dv_decode_roaring32(data, size, &d, &e) != ST_OK) {
        if (d != NULL || e.msg[0] == '\0')
            abort();
        return 0;
    }
    struct buf b = BUF_INIT;
    if (dv_encode_roaring32(d, &b, &e) != ST_OK)
        abort();
    struct dv *back;
    if (dv_decode_roaring32(b.data, b.len, &back, &e) != ST_OK || !dv_equal(back, d) ||
        dv_cardinality(back) != dv_cardinality(d))
        abort();
    uint8_t mask[256];
    uint64_t min = 0;
    if (dv_min(d, &min)) {
        dv_fill_mask(d, min, sizeof mask, mask);
        if (mask[0] != 1 || dv_rank(d, min) != 1)
            abort();
    }
    dv_free(back);
    buf_free(&b);
    dv_free(d);
    return 0;
}
