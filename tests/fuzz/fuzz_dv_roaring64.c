/* fuzz_dv_roaring64.c - the 64-bit portable vector decoder, with and without
   the DV rule: never crashes or leaks; accepted input round-trips; the DV
   rule only ever refuses more. */
#include <stdint.h>
#include <stdlib.h>

#include "dv/dv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RANK_CHECKED (1u << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_err e = {0}, e2 = {0};
    struct dv *d, *dr;
    int rc = dv_decode_roaring64(data, size, 0, &d, &e);
    int rcr = dv_decode_roaring64(data, size, DV_RULE, &dr, &e2);
    if (rcr == ST_OK && (rc != ST_OK || !dv_equal(d, dr)))
        abort();
    dv_free(dr);
    if (rc != ST_OK) {
        if (d != NULL || e.msg[0] == '\0')
            abort();
        return 0;
    }
    struct buf b = BUF_INIT;
    dv_encode_roaring64(d, &b);
    if (b.len != dv_roaring64_size(d))
        abort();
    struct dv *back;
    if (dv_decode_roaring64(b.data, b.len, 0, &back, &e) != ST_OK || !dv_equal(back, d))
        abort();
    /* iteration agrees with the cardinality */
    struct dv_iter it;
    uint64_t buf[512], n = 0, prev = 0;
    size_t k;
    dv_iter_init(&it, d);
    while ((k = dv_iter_next_many(&it, buf, 512)) > 0) {
        for (size_t i = 0; i < k; i++) {
            if (n + i > 0 && buf[i] <= prev)
                abort();
            prev = buf[i];
            /* rank, seek and mask agree with the iteration (sampled, over the first
               RANK_CHECKED positions: a few bytes of run containers describe millions
               of positions, and checking all of them made the target too slow to explore) */
            if ((n + i) % 97 == 0 && n + i < RANK_CHECKED) {
                if (dv_rank(d, buf[i]) != n + i + 1 || !dv_contains(d, buf[i]))
                    abort();
                struct dv_iter s;
                uint64_t x;
                dv_iter_init(&s, d);
                dv_iter_seek(&s, buf[i]);
                if (!dv_iter_next(&s, &x) || x != buf[i])
                    abort();
                uint8_t m[3];
                dv_fill_mask(d, buf[i], 3, m);
                if (m[0] != 1)
                    abort();
            }
        }
        n += k;
    }
    if (n != dv_cardinality(d))
        abort();
    dv_free(back);
    buf_free(&b);
    dv_free(d);
    return 0;
}
