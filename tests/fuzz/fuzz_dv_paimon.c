/* fuzz_dv_paimon.c - Paimon dvindex files, 32-bit and 64-bit entries. */
#include <stdint.h>
#include <stdlib.h>

#include "dv/paimon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_err e = {0};
    struct paimon_cursor c;
    if (paimon_cursor_init(&c, data, size, &e) != ST_OK)
        return 0;
    struct paimon_dv_entry ent;
    struct dv *d;
    int rc;
    while ((rc = paimon_cursor_next(&c, &ent, &d, &e)) == 1) {
        struct dv *again;
        if (paimon_decode_dv(data, size, ent.offset, (int64_t)ent.length, NULL, &again, &e) !=
                ST_OK ||
            !dv_equal(again, d))
            abort();
        struct buf b = BUF_INIT;
        paimon_dvindex_begin(&b);
        if (paimon_dvindex_add(&b, d, ent.bitmap64, NULL, &e) != ST_OK)
            abort();
        dv_free(again);
        if (paimon_decode_dv(b.data, b.len, 1, -1, NULL, &again, &e) != ST_OK ||
            !dv_equal(again, d))
            abort();
        dv_free(again);
        buf_free(&b);
        dv_free(d);
    }
    if (rc < 0 && (d != NULL || e.msg[0] == '\0'))
        abort();
    return 0;
}
