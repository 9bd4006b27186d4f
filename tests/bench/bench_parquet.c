/*
 * bench_parquet.c - the Parquet writer and reader on the peers' table.
 *
 *   bench_parquet IN.parquet OUT.parquet [RUNS]
 *
 * IN is the table as DuckDB wrote it (tests/peers/lib/gen.mjs); OUT is the
 * same rows written by strike. Prints one JSON object with the timings of
 * RUNS runs of each step (seconds):
 *   write_s         strike writes every row group of IN (already decoded, in
 *                   memory) to OUT: add_colvecs + finish, no fsync
 *   read_ours_s     strike decodes all columns of OUT
 *   read_ours_amount_s   strike decodes only `amount` of OUT
 *   read_duck_s     strike decodes all columns of IN (DuckDB's file)
 * and the sizes, the logical bytes (8 per number, string lengths), and
 * whether OUT decodes to exactly the rows of IN. No timing is asserted:
 * tests/bench/bench_parquet.mjs puts these next to DuckDB's numbers.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "parquet/parquet.h"

static int fd_write(void *ctx, const void *p, size_t n, struct st_err *err)
{
    int fd = *(int *)ctx;
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return st_errf(err, ST_EIO, "write: %s", strerror(errno));
        }
        c += w;
        n -= (size_t)w;
    }
    return ST_OK;
}

static void die(const char *what, const struct st_err *err)
{
    fprintf(stderr, "bench_parquet: %s: %s\n", what, err ? err->msg : strerror(errno));
    exit(1);
}

static double secs(uint64_t ns)
{
    return (double)ns / 1e9;
}

/* Fold a batch into per-column checksums (equal for equal rows, whatever the row groups). */
static void fold(uint64_t *hs, const struct pq_batch *b)
{
    for (int c = 0; c < b->ncols; c++) {
        uint64_t h = hs[c];
        const struct st_colvec *v = &b->cols[c];
        for (size_t i = 0; i < v->n; i++) {
            struct st_value x;
            st_colvec_get(v, i, &x);
            uint64_t k = x.null ? 0x9e3779b97f4a7c15ull : 0;
            if (!x.null) {
                switch (v->type) {
                case ST_T_STRING:
                    for (uint32_t j = 0; j < x.v.s.len; j++)
                        k = k * 131 + (uint8_t)x.v.s.p[j];
                    break;
                case ST_T_DOUBLE:
                    memcpy(&k, &x.v.d, 8);
                    break;
                case ST_T_INT:
                    k = (uint64_t)(int64_t)x.v.i;
                    break;
                case ST_T_BOOLEAN:
                    k = x.v.b;
                    break;
                default:
                    k = (uint64_t)x.v.l;
                }
            }
            h = (h ^ k) * 0x100000001b3ull;
        }
        hs[c] = h;
    }
}

/* Decode columns `cols` of every row group; returns nanoseconds, *sum the checksum. */
static uint64_t read_file(const char *path, const int *cols, int ncols, uint64_t *sum)
{
    struct st_err err = {0};
    uint64_t t0 = st_mono_ns();
    struct pq_reader *r;
    if (pq_reader_open(path, &r, &err) != ST_OK)
        die(path, &err);
    struct pq_batch b = {0};
    uint64_t *hs = xcalloc((size_t)ncols, sizeof *hs);
    uint64_t fold_ns = 0;
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        if (pq_read_row_group(r, g, cols, ncols, &b, &err) != ST_OK)
            die(path, &err);
        if (sum != NULL) {
            uint64_t f0 = st_mono_ns();
            fold(hs, &b);
            fold_ns += st_mono_ns() - f0;
        }
    }
    pq_batch_free(&b);
    pq_reader_close(r);
    if (sum != NULL) {
        uint64_t h = 14695981039346656037ull;
        for (int c = 0; c < ncols; c++)
            h = (h ^ hs[c]) * 0x100000001b3ull;
        *sum = h;
    }
    free(hs);
    return st_mono_ns() - t0 - fold_ns;
}

static void print_runs(const char *name, const double *v, int n)
{
    printf("\"%s\":[", name);
    for (int i = 0; i < n; i++)
        printf("%s%.6f", i ? "," : "", v[i]);
    printf("],");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_parquet IN.parquet OUT.parquet [RUNS]\n");
        return 2;
    }
    const char *in = argv[1], *out = argv[2];
    int runs = argc > 3 ? atoi(argv[3]) : 3;
    if (runs < 1 || runs > 100)
        runs = 3;
    struct st_err err = {0};
    struct pq_reader *r;
    if (pq_reader_open(in, &r, &err) != ST_OK)
        die(in, &err);
    int ncols = pq_ncols(r);
    int *all = xcalloc((size_t)ncols, sizeof *all);
    struct st_column *schema = xcalloc((size_t)ncols, sizeof *schema);
    for (int i = 0; i < ncols; i++) {
        all[i] = i;
        schema[i] = *pq_column(r, i);
    }
    uint64_t rows = pq_num_rows(r), in_size = pq_file_size(r);
    int amount = pq_find_column(r, "amount");

    double *write_s = xcalloc((size_t)runs, sizeof(double));
    double *read_ours = xcalloc((size_t)runs, sizeof(double));
    double *read_amount = xcalloc((size_t)runs, sizeof(double));
    double *read_duck = xcalloc((size_t)runs, sizeof(double));
    uint64_t out_size = 0, logical = 0;
    struct pq_batch b = {0};
    for (int run = 0; run < runs; run++) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            die(out, NULL);
        struct pq_writer *w;
        const char *const kv[] = {"strike.bench", "peers", NULL};
        struct pq_write_opts o;
        pq_write_opts_default(&o);
        o.kv = kv;
        uint64_t t_write = 0, t0 = st_mono_ns();
        if (pq_writer_open(&w, schema, ncols, &o, fd_write, &fd, &err) != ST_OK)
            die("writer", &err);
        t_write += st_mono_ns() - t0;
        logical = 0;
        for (int g = 0; g < pq_num_row_groups(r); g++) {
            if (pq_read_row_group(r, g, all, ncols, &b, &err) != ST_OK)
                die(in, &err);
            for (int c = 0; c < ncols; c++) {
                const struct st_colvec *v = &b.cols[c];
                logical += v->type == ST_T_STRING    ? v->offs[v->n] - v->offs[0]
                           : v->type == ST_T_INT     ? 4 * v->n
                           : v->type == ST_T_BOOLEAN ? v->n
                                                     : 8 * v->n;
            }
            t0 = st_mono_ns();
            if (pq_writer_add_colvecs(w, b.cols, 0, b.nrows, &err) != ST_OK)
                die("add_colvecs", &err);
            t_write += st_mono_ns() - t0;
        }
        struct pq_file_stats st;
        t0 = st_mono_ns();
        if (pq_writer_finish(w, &st, &err) != ST_OK)
            die("finish", &err);
        t_write += st_mono_ns() - t0;
        out_size = st.file_size;
        pq_file_stats_free(&st);
        pq_writer_free(w);
        close(fd);
        write_s[run] = secs(t_write);

        read_ours[run] = secs(read_file(out, all, ncols, NULL));
        if (amount >= 0)
            read_amount[run] = secs(read_file(out, &amount, 1, NULL));
        read_duck[run] = secs(read_file(in, all, ncols, NULL));
    }
    uint64_t h_in, h_out;
    read_file(in, all, ncols, &h_in);
    read_file(out, all, ncols, &h_out);
    pq_batch_free(&b);
    pq_reader_close(r);

    printf("{\"rows\":%" PRIu64 ",\"in_size\":%" PRIu64 ",\"out_size\":%" PRIu64
           ",\"logical_bytes\":%" PRIu64 ",",
           rows, in_size, out_size, logical);
    print_runs("write_s", write_s, runs);
    print_runs("read_ours_s", read_ours, runs);
    print_runs("read_ours_amount_s", read_amount, runs);
    print_runs("read_duck_s", read_duck, runs);
    printf("\"same_rows\":%s}\n", h_in == h_out ? "true" : "false");
    free(write_s);
    free(read_ours);
    free(read_amount);
    free(read_duck);
    free(all);
    free(schema);
    return h_in == h_out ? 0 : 1;
}
