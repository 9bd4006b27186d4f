/* fuzz_dv_puffin.c - Puffin footers and the DV blobs they point at. */
#include <stdint.h>
#include <stdlib.h>

#include "dv/puffin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_err e = {0};
    struct puffin_footer f;
    if (puffin_read_footer(data, size, &f, &e) != ST_OK) {
        if (f.n_blobs != 0 || f.blobs != NULL || e.msg[0] == '\0')
            abort();
        return 0;
    }
    for (size_t i = 0; i < f.n_blobs; i++) {
        const struct puffin_blob *b = &f.blobs[i];
        if (b->offset < 4 || b->offset + b->length > f.footer_offset)
            abort();
        if (puffin_find_blob(&f, b->offset, b->length) == NULL)
            abort();
        struct dv *d;
        st_err_clear(&e);
        if (puffin_decode_dv(data, size, b, &d, &e) == ST_OK) {
            if ((int64_t)dv_cardinality(d) != b->cardinality)
                abort();
            dv_free(d);
        }
        if (b->referenced_data_file != NULL)
            (void)puffin_find_dv(&f, b->referenced_data_file);
    }
    puffin_footer_free(&f);
    return 0;
}
