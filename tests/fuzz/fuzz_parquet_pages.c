/* fuzz_parquet_pages.c - a whole Parquet file through the reader: footer,
   then every row group's readable columns, every page (v1, v2, dictionary),
   every codec and encoding. Limits are lowered so that a claimed row count
   or page size cannot make one input use much memory. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parquet/parquet.h"
#include "parquet/pq_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_err err = {0};
    struct pq_reader *r;
    if (pq_reader_open_mem(data, size, &r, &err) != ST_OK) {
        if (err.msg[0] == '\0')
            abort();
        return 0;
    }
    pq__reader_set_limits(r, 1u << 16, 16u << 20, 4u << 20);
    int cols[32], k = 0;
    for (int i = 0; i < pq_ncols(r) && k < 32; i++)
        if (pq_column_unsupported(r, i) == NULL)
            cols[k++] = i;
    struct pq_batch b = {0};
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        struct pq_col_stats st;
        for (int i = 0; i < pq_ncols(r); i++)
            (void)pq_row_group_stats(r, g, i, &st);
        st_err_clear(&err);
        if (pq_read_row_group(r, g, cols, k, &b, &err) != ST_OK) {
            if (err.msg[0] == '\0')
                abort();
            continue;
        }
        /* what was decoded is consistent: strings lie inside their data */
        for (int c = 0; c < b.ncols; c++) {
            const struct st_colvec *v = &b.cols[c];
            if (v->n != b.nrows)
                abort();
            for (size_t i = 0; i < v->n; i++) {
                struct st_value x;
                st_colvec_get(v, i, &x);
                if (v->type == ST_T_STRING && !x.null && x.v.s.len > 0 &&
                    (x.v.s.p < (const char *)v->sdata || v->offs[i] > v->offs[i + 1]))
                    abort();
            }
        }
    }
    pq_batch_free(&b);
    pq_reader_close(r);
    return 0;
}
