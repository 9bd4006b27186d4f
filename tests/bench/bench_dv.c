/*
 * bench_dv.c - deletion-vector codec speed: encode and decode of 10% of 10M
 * positions and of one position in every format, plus the set operations a
 * scan and a commit use. Prints numbers; asserts nothing about time.
 *
 *   bench_dv [--runs N] [--rows N] [--frac F]
 *
 * The 10% sample is the Bernoulli draw of tests/peers/lib/stats.mjs (mulberry32, seed
 * 12345), so tests/bench/dv_peer.mjs times the npm `roaring` package on the
 * very same set. Build it in a Release tree for meaningful numbers.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <roaring/roaring.h>

#include "common/xalloc.h"
#include "dv/delta.h"
#include "dv/dv.h"
#include "dv/paimon.h"
#include "dv/puffin.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* mulberry32, as tests/peers/lib/stats.mjs uses it (JS double semantics). */
static uint32_t mb_state;
static double mulberry32(void)
{
    mb_state += 0x6d2b79f5u;
    uint32_t t = mb_state;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return (double)(t ^ (t >> 14)) / 4294967296.0;
}

static uint64_t *sample(uint64_t rows, double frac, uint32_t seed, size_t *n)
{
    mb_state = seed;
    size_t cap = (size_t)((double)rows * frac * 1.1) + 64, k = 0;
    uint64_t *v = xmalloc(cap * sizeof *v);
    for (uint64_t i = 0; i < rows; i++) {
        if (mulberry32() < frac) {
            if (k == cap)
                v = xreallocarray(v, cap *= 2, sizeof *v);
            v[k++] = i;
        }
    }
    *n = k;
    return v;
}

static int runs = 21;

struct result {
    double min, med, max;
};

/* Time fn(arg) `runs` times after one warm-up. */
static struct result timeit(void (*fn)(void *), void *arg)
{
    double *t = xmalloc((size_t)runs * sizeof *t);
    fn(arg);
    for (int i = 0; i < runs; i++) {
        double t0 = now_us();
        fn(arg);
        t[i] = now_us() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    struct result r = {t[0], t[runs / 2], t[runs - 1]};
    free(t);
    return r;
}

static void print_row(const char *set, const char *what, size_t bytes, struct result r)
{
    printf("  %-10s %-34s %10zu B  %10.1f / %10.1f / %10.1f us\n", set, what, bytes, r.min, r.med,
           r.max);
}

/* ---------------------------------------------------------- operations */

struct ctx {
    const struct dv *d;
    struct buf out;
    const uint8_t *in;
    size_t in_len;
    enum dv_format fmt;
    bool b64;
    const uint64_t *pos;
    size_t npos;
    uint8_t *mask;
    size_t mask_n;
    uint64_t sink;
    const roaring_bitmap_t *rb;
    char *text;
};

static void enc(void *arg)
{
    struct ctx *c = arg;
    struct st_err e = {0};
    buf_reset(&c->out);
    switch (c->fmt) {
    case DV_FMT_ROARING32:
        dv_encode_roaring32(c->d, &c->out, &e);
        break;
    case DV_FMT_ROARING64:
        dv_encode_roaring64(c->d, &c->out);
        break;
    case DV_FMT_ICEBERG:
        dv_encode_iceberg(c->d, &c->out);
        break;
    case DV_FMT_DELTA:
        dv_encode_delta_file(c->d, &c->out);
        break;
    case DV_FMT_PAIMON:
        paimon_dvindex_begin(&c->out);
        paimon_dvindex_add(&c->out, c->d, c->b64, NULL, &e);
        break;
    case DV_FMT_PUFFIN: {
        struct puffin_writer *w = puffin_writer_new(NULL);
        uint64_t off, len;
        puffin_writer_add_dv(w, "tables/t/data/0193-0000.parquet", c->d, &off, &len, &e);
        puffin_writer_finish(w, &c->out, &e);
        puffin_writer_free(w);
        break;
    }
    }
}

static void dec(void *arg)
{
    struct ctx *c = arg;
    struct st_err e = {0};
    struct dv *d = NULL;
    int rc = ST_EINTERNAL;
    switch (c->fmt) {
    case DV_FMT_ROARING32:
        rc = dv_decode_roaring32(c->in, c->in_len, &d, &e);
        break;
    case DV_FMT_ROARING64:
        rc = dv_decode_roaring64(c->in, c->in_len, DV_RULE, &d, &e);
        break;
    case DV_FMT_ICEBERG:
        rc = dv_decode_iceberg(c->in, c->in_len, -1, &d, &e);
        break;
    case DV_FMT_DELTA:
        rc = dv_decode_delta_entry(c->in, c->in_len, 1, -1, &d, &e);
        break;
    case DV_FMT_PAIMON:
        rc = paimon_decode_dv(c->in, c->in_len, 1, -1, NULL, &d, &e);
        break;
    case DV_FMT_PUFFIN: {
        struct puffin_footer f;
        rc = puffin_read_footer(c->in, c->in_len, &f, &e);
        if (rc == ST_OK) {
            rc = puffin_decode_dv(c->in, c->in_len, &f.blobs[0], &d, &e);
            puffin_footer_free(&f);
        }
        break;
    }
    }
    if (rc != ST_OK) {
        fprintf(stderr, "bench_dv: decode %s failed: %s\n", dv_format_name(c->fmt), e.msg);
        exit(1);
    }
    c->sink += dv_cardinality(d);
    dv_free(d);
}

static void wire(void *arg)
{
    struct ctx *c = arg;
    struct iovec iov[2];
    int niov;
    for (int i = 0; i < 1000; i++) {
        dv_iceberg_to_wire(c->in, c->in_len,
                           (enum dv_format)(i % 2 ? DV_FMT_DELTA : DV_FMT_ROARING64), iov, &niov,
                           NULL);
        c->sink += iov[0].iov_len;
    }
}

static void crc_check(void *arg)
{
    struct ctx *c = arg;
    c->sink += (uint64_t)dv_iceberg_check(c->in, c->in_len, true, NULL);
}

static void build(void *arg)
{
    struct ctx *c = arg;
    struct dv *d = dv_new();
    dv_add_many(d, c->pos, c->npos);
    c->sink += dv_cardinality(d);
    dv_free(d);
}

static void mask_all(void *arg)
{
    struct ctx *c = arg;
    const size_t group = 122880; /* DuckDB's row group */
    for (uint64_t s = 0; s < c->mask_n; s += group) {
        size_t n = c->mask_n - s < group ? c->mask_n - s : group;
        dv_fill_mask(c->d, s, n, c->mask);
        c->sink += c->mask[n / 2];
    }
}

static void iterate(void *arg)
{
    struct ctx *c = arg;
    struct dv_iter it;
    uint64_t buf[4096];
    size_t k;
    dv_iter_init(&it, c->d);
    while ((k = dv_iter_next_many(&it, buf, 4096)) > 0)
        c->sink += buf[k - 1];
}

static void rank_all(void *arg)
{
    struct ctx *c = arg;
    for (uint64_t p = 0; p < c->mask_n; p += 97)
        c->sink += dv_rank(c->d, p);
}

static void rank_many(void *arg)
{
    struct ctx *c = arg;
    /* compaction: the new position of every row of the file */
    const size_t chunk = 65536;
    uint64_t *q = xmalloc(chunk * sizeof *q), *out = xmalloc(chunk * sizeof *out);
    uint64_t done = 0;
    for (uint64_t s = 0; s < c->mask_n; s += chunk) {
        size_t n = c->mask_n - s < chunk ? c->mask_n - s : chunk;
        for (size_t i = 0; i < n; i++)
            q[i] = s + i;
        dv_rank_many(c->d, q, n, out);
        done += out[n - 1];
    }
    c->sink += done;
    free(q);
    free(out);
}

static void union_op(void *arg)
{
    struct ctx *c = arg;
    struct dv *x = dv_clone(c->d);
    dv_union(x, c->d);
    c->sink += dv_cardinality(x);
    dv_free(x);
}

static void croaring_ser(void *arg)
{
    struct ctx *c = arg;
    buf_reset(&c->out);
    size_t n = roaring_bitmap_portable_size_in_bytes(c->rb);
    char *p = (char *)buf_extend(&c->out, n);
    c->sink += roaring_bitmap_portable_serialize(c->rb, p);
}

static void croaring_deser(void *arg)
{
    struct ctx *c = arg;
    roaring_bitmap_t *r = roaring_bitmap_portable_deserialize_safe((const char *)c->in, c->in_len);
    c->sink += roaring_bitmap_get_cardinality(r);
    roaring_bitmap_free(r);
}

static void inline_enc(void *arg)
{
    struct ctx *c = arg;
    size_t size;
    buf_reset(&c->out);
    dv_encode_delta_inline(c->d, &c->out, &size);
}

static void inline_dec(void *arg)
{
    struct ctx *c = arg;
    struct dv *d;
    struct st_err e = {0};
    if (dv_decode_delta_inline(c->text, c->in_len, &d, &e) != ST_OK) {
        fprintf(stderr, "bench_dv: inline: %s\n", e.msg);
        exit(1);
    }
    c->sink += dv_cardinality(d);
    dv_free(d);
}

static void bench_set(const char *name, const uint64_t *pos, size_t n, uint64_t rows)
{
    struct dv *d = dv_new();
    dv_add_many(d, pos, n);
    printf("\n%s: %zu positions (of %" PRIu64 " rows)\n", name, n, rows);
    printf("  %-10s %-34s %12s  %s\n", "set", "operation", "bytes", "min / median / max");
    static const struct {
        enum dv_format f;
        bool b64;
        const char *label;
    } fmts[] = {
        {DV_FMT_ROARING32, false, "roaring32"},    {DV_FMT_ROARING64, false, "roaring64"},
        {DV_FMT_ICEBERG, false, "iceberg-dv"},     {DV_FMT_DELTA, false, "delta-dv"},
        {DV_FMT_PUFFIN, false, "puffin (1 blob)"}, {DV_FMT_PAIMON, false, "paimon-dv 32-bit"},
        {DV_FMT_PAIMON, true, "paimon-dv 64-bit"},
    };
    struct ctx c = {.d = d, .pos = pos, .npos = n};
    struct buf blob = BUF_INIT;
    dv_encode_iceberg(d, &blob);
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        char what[64];
        c.fmt = fmts[i].f;
        c.b64 = fmts[i].b64;
        snprintf(what, sizeof what, "encode %s", fmts[i].label);
        struct result r = timeit(enc, &c);
        print_row(name, what, c.out.len, r);
        struct buf copy = BUF_INIT;
        buf_append(&copy, c.out.data, c.out.len);
        c.in = copy.data;
        c.in_len = copy.len;
        snprintf(what, sizeof what, "decode %s", fmts[i].label);
        print_row(name, what, copy.len, timeit(dec, &c));
        buf_free(&copy);
    }
    /* Delta inline (Z85) */
    inline_enc(&c);
    size_t size_in_bytes = dv_roaring64_size(d) + 4;
    print_row(name, "encode delta inline (Z85)", c.out.len, timeit(inline_enc, &c));
    c.text = xstrdup(buf_cstr(&c.out));
    c.in_len = size_in_bytes;
    print_row(name, "decode delta inline (Z85)", strlen(c.text), timeit(inline_dec, &c));
    free(c.text);

    /* The DV endpoint's path: no decode. */
    c.in = blob.data;
    c.in_len = blob.len;
    struct result w = timeit(wire, &c);
    w.min /= 1000, w.med /= 1000, w.max /= 1000;
    print_row(name, "iceberg blob -> roaring64/delta (1x)", blob.len, w);
    print_row(name, "iceberg blob CRC check", blob.len, timeit(crc_check, &c));

    /* CRoaring 0.2.66's own portable (de)serializer, same 32-bit bitmap */
    struct buf r32 = BUF_INIT;
    if (dv_encode_roaring32(d, &r32, NULL) == ST_OK) {
        roaring_bitmap_t *rb =
            roaring_bitmap_portable_deserialize_safe((const char *)r32.data, r32.len);
        c.rb = rb;
        struct result rs = timeit(croaring_ser, &c);
        print_row(name, "CRoaring 0.2.66 portable serialize", c.out.len, rs);
        c.in = r32.data;
        c.in_len = r32.len;
        print_row(name, "CRoaring 0.2.66 portable deserial.", r32.len, timeit(croaring_deser, &c));
        roaring_bitmap_free(rb);
    }
    buf_free(&r32);

    /* set operations */
    print_row(name, "dv_add_many (sorted)", 0, timeit(build, &c));
    print_row(name, "iterate all (next_many)", 0, timeit(iterate, &c));
    c.mask_n = (size_t)rows;
    c.mask = xmalloc(122880);
    print_row(name, "fill_mask, all rows by 122880", 0, timeit(mask_all, &c));
    free(c.mask);
    print_row(name, "dv_rank every 97th row", 0, timeit(rank_all, &c));
    print_row(name, "dv_rank_many, all rows by 65536", 0, timeit(rank_many, &c));
    print_row(name, "clone + union with itself", 0, timeit(union_op, &c));
    buf_free(&blob);
    buf_free(&c.out);
    dv_free(d);
    if (c.sink == 42)
        printf("(sink)\n");
}

int main(int argc, char **argv)
{
    uint64_t rows = 10000000;
    double frac = 0.1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            rows = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--frac") == 0 && i + 1 < argc)
            frac = strtod(argv[++i], NULL);
        else {
            fprintf(stderr, "usage: bench_dv [--runs N] [--rows N] [--frac F]\n");
            return 2;
        }
    }
    if (runs < 1)
        runs = 1;
    printf("bench_dv: strike %s, CRoaring %d.%d.%d, %d runs per row (min / median / max, us)\n",
           STRIKE_VERSION, ROARING_VERSION_MAJOR, ROARING_VERSION_MINOR, ROARING_VERSION_REVISION,
           runs);
    size_t n;
    uint64_t *pos = sample(rows, frac, 12345, &n);
    char name[32];
    snprintf(name, sizeof name, "%g%%", frac * 100);
    bench_set(name, pos, n, rows);
    free(pos);
    uint64_t one = 4242;
    bench_set("one", &one, 1, rows);
    return 0;
}
