/* fuzz_parquet_footer.c - the Thrift compact decoder of Parquet footers
   (FileMetaData) and page headers, and the footer validation of the reader.
   The input is a footer's Thrift bytes, or a whole Parquet file (PAR1 ...
   PAR1), whose footer is then used: the seeds are real files. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/xalloc.h"
#include "parquet/parquet.h"
#include "parquet/pq_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void explore(struct pq_reader *r)
{
    for (int i = 0; i < pq_ncols(r); i++) {
        struct pq_column_info ci;
        pq_column_info(r, i, &ci);
        (void)pq_column(r, i);
        (void)pq_column_unsupported(r, i);
    }
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        uint64_t first, n;
        pq_row_group(r, g, &first, &n);
        for (int i = 0; i < pq_ncols(r); i++) {
            struct pq_chunk_info ch;
            struct pq_col_stats st;
            pq_chunk_info(r, g, i, &ch);
            (void)pq_row_group_stats(r, g, i, &st);
        }
    }
    for (int i = 0; i < pq_kv_count(r); i++) {
        const char *k, *v;
        pq_kv_at(r, i, &k, &v);
        (void)pq_kv(r, k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *f = data;
    size_t n = size;
    if (size >= 12 && memcmp(data, "PAR1", 4) == 0 && memcmp(data + size - 4, "PAR1", 4) == 0) {
        uint32_t len = ld_u32le(data + size - 8);
        if (len <= size - 12) {
            f = data + size - 8 - len;
            n = len;
        }
    }
    struct st_err err = {0};
    struct pq__filemeta m;
    if (pq__filemeta_decode(f, n, 0, &m, &err) == ST_OK)
        pq__filemeta_free(&m);
    else if (err.msg[0] == '\0')
        abort(); /* every refusal says why */

    struct pq__tr t;
    struct pq__page_header h;
    st_err_clear(&err);
    pq__tr_init(&t, f, n, 0, "page header", &err);
    if (pq__page_header_decode(&t, &h) != ST_OK && err.msg[0] == '\0')
        abort();

    /* the same bytes as the footer of a file with no data pages */
    struct buf file = BUF_INIT;
    buf_append(&file, "PAR1", 4);
    buf_append(&file, f, n);
    buf_put_u32le(&file, (uint32_t)n);
    buf_append(&file, "PAR1", 4);
    struct pq_reader *r;
    st_err_clear(&err);
    if (pq_reader_open_mem(file.data, file.len, &r, &err) == ST_OK) {
        explore(r);
        pq__reader_set_limits(r, 1u << 16, 16u << 20, 4u << 20);
        int cols[8], k = 0;
        for (int i = 0; i < pq_ncols(r) && k < 8; i++)
            if (pq_column_unsupported(r, i) == NULL)
                cols[k++] = i;
        struct pq_batch b = {0};
        for (int g = 0; g < pq_num_row_groups(r); g++)
            (void)pq_read_row_group(r, g, cols, k, &b, &err);
        pq_batch_free(&b);
        pq_reader_close(r);
    } else if (err.msg[0] == '\0') {
        abort();
    }
    buf_free(&file);
    return 0;
}
