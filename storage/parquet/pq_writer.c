/*
 * pq_writer.c - the Parquet writer: flat schemas of st_column, one row group
 * buffered at a time (rows are appended to per-column buffers; when the row
 * group is full its column chunks are encoded into pages, the pages
 * compressed and handed to the caller's write function), then the Thrift
 * footer.
 *
 * Both cores: a full row group's pages go to the writer's helper thread,
 * which compresses them while the caller fills the next row group; at the
 * next flush the caller compresses what the helper has not taken yet, then
 * emits them in order. Every page is compressed alone at the same level, so
 * the file is byte for byte the one-thread file (opts.threads = 1, or
 * STRIKE_PQ_THREADS=1), and a row group's bytes reach the write function
 * one flush later than with one thread.
 *
 * Layout of a column chunk: [dictionary page] data page... Data pages are v1:
 * definition levels (optional columns; RLE/bit-packed hybrid, bit width 1,
 * 4-byte length prefix), then values, PLAIN or RLE_DICTIONARY. Pages hold
 * about PQ_PAGE_TARGET bytes of values. Strings are dictionary-encoded while
 * the row group's distinct values stay few (see dict_add) and the dictionary
 * makes the chunk smaller.
 *
 * Statistics follow parquet.thrift's rules for TYPE_ORDER columns:
 * min_value/max_value by signed integer order, unsigned byte order for
 * strings (bounds truncated to PQ_STATS_STRING_MAX bytes, never splitting a
 * character), numeric order for doubles with NaN left out and counted in
 * nan_count (a zero min is written -0.0, a zero max +0.0), false < true. The
 * deprecated min/max are written only for booleans and integers, whose
 * signed order is the type's order.
 */
#include "parquet.h"
#include "pq_int.h"

#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/fsutil.h"
#include "common/hmap.h"
#include "common/xalloc.h"

#define PQ_PAGE_TARGET (1u << 20)
#define PQ_DICT_MAX_ENTRIES 65536u
#define PQ_DICT_MAX_BYTES (1u << 20)
#define PQ_STATS_STRING_MAX 64u
#define PQ_OUT_FLUSH (1u << 20)
#define PQ_RG_BYTES_MAX (2ull << 30)

#define PQ_CREATED_BY "strike version " STRIKE_VERSION " (build strike)"

/* Statistics bytes, as written in the footer (PLAIN, strings unprefixed). */
struct wbound {
    uint8_t b[PQ_STATS_STRING_MAX + 4];
    uint32_t n;
};

struct wchunk {
    int64_t data_off, dict_off; /* dict_off -1: none */
    int64_t total_comp, total_uncomp, num_values;
    bool dict;
    uint32_t data_pages;
    bool has_minmax, min_exact, max_exact;
    struct wbound min, max;
    uint64_t null_count, nan_count;
};

/*
 * One page of the row group being flushed: built (encoded) by the caller in
 * column order, compressed by the caller and the helper in any order, then
 * emitted in order.
 */
struct wpage {
    int type;
    int32_t num_values, encoding;
    int col;
    struct buf raw, comp;
    size_t zerr; /* ZSTD error code, 0 when compressed */
};

/* The pages of one row group, with the row group's index in pq_writer.rgs. */
struct wpageset {
    struct wpage *pages;
    size_t npages, cap;
    atomic_size_t next; /* the next page to compress */
    size_t rg;
};

struct wrowgroup {
    int64_t num_rows, file_offset, total_uncomp, total_comp;
    struct wchunk *cols;
};

/* Running statistics of a row group (or the whole file, for `file`). */
struct wstats {
    bool has;
    union {
        bool b;
        int32_t i;
        int64_t l;
        double d;
    } min, max;
    struct buf smin, smax; /* strings: exact min/max of the row group */
    uint64_t nulls, nans;
};

struct fstats {
    bool has;
    struct st_value min, max;
    struct wbound smin, smax; /* strings: truncated bounds */
    uint64_t nulls, nans;
};

struct wcol {
    struct st_column col;
    uint8_t *defs; /* optional columns: 1 present, 0 null, per row */
    size_t defs_cap;
    size_t nvals;     /* non-null values in the row group */
    struct buf fixed; /* boolean (1 byte), int, long, timestamp, double: raw LE values */
    struct buf sdata; /* strings, plain mode: bytes */
    uint32_t *soffs;  /* plain mode: nvals + 1 offsets into sdata */
    size_t soffs_cap;
    /* strings, dictionary mode */
    bool dict_on;
    struct buf ddata;
    uint32_t *doffs, *dhash; /* nent + 1 offsets; hash of each entry */
    size_t nent, dcap;
    uint32_t *htab; /* entry index + 1; 0 empty */
    size_t hcap;
    uint32_t *idx; /* entry of each value */
    size_t idx_cap;
    struct wstats st;
    struct fstats fs;
};

struct pq_writer {
    struct wcol *cols;
    int ncols;
    struct pq_write_opts o;
    char **kv; /* owned copies, NULL-terminated */
    size_t nkv;
    pq_write_fn write;
    void *ctx;
    int failed; /* sticky error code */
    bool finished;

    uint64_t offset; /* bytes emitted (written or in out) */
    struct buf out;  /* bytes not yet handed to write() */
    uint64_t rows;   /* rows in the file so far */
    uint64_t rg_rows;
    uint64_t rg_bytes;
    struct wrowgroup *rgs;
    size_t nrgs, rgs_cap;

    struct buf page, hdr; /* scratch */
    ZSTD_CCtx *cctx;
    struct st_value *rowtmp;

    /*
     * Pages: `build` receives the pages of the row group being flushed;
     * `pend`, when not NULL, holds the previous row group's, which the helper
     * is compressing while the caller fills the next row group. They are
     * emitted (in order) at the next flush or at finish.
     */
    struct wpageset sets[2];
    struct wpageset *build, *pend;
    int threads;
    struct pq__worker *worker; /* NULL: one thread */
    ZSTD_CCtx *cctx2;          /* the helper's */
};

/* ---- small helpers ---- */

static int phys_type(enum st_type t)
{
    switch (t) {
    case ST_T_BOOLEAN:
        return PQ_BOOLEAN;
    case ST_T_INT:
        return PQ_INT32;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        return PQ_INT64;
    case ST_T_DOUBLE:
        return PQ_DOUBLE;
    case ST_T_STRING:
        return PQ_BYTE_ARRAY;
    }
    return -1;
}

/* Length of the longest prefix of p[0..n) of at most `max` bytes ending on a character boundary. */
static uint32_t utf8_prefix(const uint8_t *p, uint32_t n, uint32_t max)
{
    if (n <= max)
        return n;
    uint32_t k = max;
    while (k > 0 && (p[k] & 0xc0) == 0x80)
        k--;
    return k;
}

static uint32_t utf8_put(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xc0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xe0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (uint8_t)(0xf0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

/* Lower bound of a string for statistics. */
static void bound_min(struct wbound *o, const uint8_t *p, uint32_t n, bool *exact)
{
    uint32_t k = utf8_prefix(p, n, PQ_STATS_STRING_MAX);
    assert(k <= PQ_STATS_STRING_MAX);
    if (k > 0)
        memcpy(o->b, p, k);
    o->n = k;
    *exact = k == n;
}

/*
 * Upper bound of a (valid UTF-8) string: itself when short, else a prefix
 * whose last character is incremented, which sorts after every string that
 * starts with the prefix. False when no such bound exists.
 */
static bool bound_max(struct wbound *o, const uint8_t *p, uint32_t n, bool *exact)
{
    if (n <= PQ_STATS_STRING_MAX) {
        if (n > 0)
            memcpy(o->b, p, n);
        o->n = n;
        *exact = true;
        return true;
    }
    *exact = false;
    uint32_t k = utf8_prefix(p, n, PQ_STATS_STRING_MAX);
    while (k > 0) {
        uint32_t s = k - 1;
        while (s > 0 && (p[s] & 0xc0) == 0x80)
            s--;
        uint32_t cp;
        uint8_t c = p[s];
        if (c < 0x80)
            cp = c;
        else if (c < 0xe0)
            cp = c & 0x1f;
        else if (c < 0xf0)
            cp = c & 0x0f;
        else
            cp = c & 0x07;
        for (uint32_t i = s + 1; i < k; i++)
            cp = cp << 6 | (p[i] & 0x3f);
        if (cp < 0x10ffff) {
            cp = cp + 1 == 0xd800 ? 0xe000 : cp + 1;
            memcpy(o->b, p, s);
            o->n = s + utf8_put(o->b + s, cp);
            assert(o->n <= sizeof o->b); /* a prefix of 63 bytes at most, one character more */
            return true;
        }
        k = s;
    }
    return false;
}

/* ---- options, open ---- */

void pq_write_opts_default(struct pq_write_opts *o)
{
    memset(o, 0, sizeof *o);
    o->compression = PQ_COMPRESS_ZSTD;
    o->zstd_level = 3;
    o->row_group_rows = 131072;
    o->row_group_bytes = 256u << 20;
    o->dictionary = true;
    o->kv = NULL;
    o->threads = 0;
}

static void col_reset(struct wcol *c)
{
    c->nvals = 0;
    buf_reset(&c->fixed);
    buf_reset(&c->sdata);
    buf_reset(&c->ddata);
    c->nent = 0;
    if (c->htab != NULL)
        memset(c->htab, 0, c->hcap * sizeof *c->htab);
    if (c->soffs != NULL)
        c->soffs[0] = 0;
    if (c->doffs != NULL)
        c->doffs[0] = 0;
    c->dict_on = false;
    c->st.has = false;
    c->st.nulls = c->st.nans = 0;
    buf_reset(&c->st.smin);
    buf_reset(&c->st.smax);
}

int pq_writer_open(struct pq_writer **out, const struct st_column *cols, int ncols,
                   const struct pq_write_opts *o, pq_write_fn write, void *ctx, struct st_err *err)
{
    *out = NULL;
    struct pq_write_opts opts;
    if (o == NULL)
        pq_write_opts_default(&opts);
    else
        opts = *o;
    if (ncols < 1 || ncols > ST_COLUMNS_MAX)
        return st_errf(err, ST_EINVAL, "parquet writer: %d columns (1..%d allowed)", ncols,
                       ST_COLUMNS_MAX);
    if (write == NULL)
        return st_errf(err, ST_EINVAL, "parquet writer: no write function");
    for (int i = 0; i < ncols; i++) {
        if (!st_name_valid(cols[i].name))
            return st_errf(err, ST_EINVAL, "parquet writer: column %d: invalid name", i);
        if (st_type_name(cols[i].type) == NULL)
            return st_errf(err, ST_EINVAL, "parquet writer: column '%s': unknown type %d",
                           cols[i].name, (int)cols[i].type);
        for (int j = 0; j < i; j++)
            if (strcmp(cols[i].name, cols[j].name) == 0)
                return st_errf(err, ST_EINVAL, "parquet writer: column '%s' appears twice",
                               cols[i].name);
    }
    if (opts.compression != PQ_COMPRESS_NONE && opts.compression != PQ_COMPRESS_ZSTD)
        return st_errf(err, ST_EINVAL, "parquet writer: unknown compression %d", opts.compression);
    if (opts.compression == PQ_COMPRESS_ZSTD &&
        (opts.zstd_level < ZSTD_minCLevel() || opts.zstd_level > ZSTD_maxCLevel() ||
         opts.zstd_level == 0))
        return st_errf(err, ST_EINVAL, "parquet writer: zstd level %d out of range (%d..%d)",
                       opts.zstd_level, ZSTD_minCLevel(), ZSTD_maxCLevel());
    if (opts.row_group_rows == 0)
        opts.row_group_rows = 131072;
    if (opts.row_group_rows > PQ_DEFAULT_MAX_BATCH_ROWS)
        return st_errf(err, ST_EINVAL,
                       "parquet writer: %u rows per row group (at most %u, what the reader "
                       "decodes at once)",
                       opts.row_group_rows, PQ_DEFAULT_MAX_BATCH_ROWS);
    if (opts.row_group_bytes == 0)
        opts.row_group_bytes = 256u << 20;
    if (opts.row_group_bytes > PQ_RG_BYTES_MAX)
        opts.row_group_bytes = PQ_RG_BYTES_MAX;

    struct pq_writer *w = xcalloc(1, sizeof *w);
    w->o = opts;
    w->ncols = ncols;
    w->cols = xcalloc((size_t)ncols, sizeof *w->cols);
    for (int i = 0; i < ncols; i++) {
        w->cols[i].col = cols[i];
        w->cols[i].col.name[ST_NAME_MAX] = '\0';
    }
    size_t nkv = 0;
    while (opts.kv != NULL && opts.kv[nkv] != NULL)
        nkv++;
    if (nkv % 2 != 0) {
        pq_writer_free(w);
        return st_errf(err, ST_EINVAL,
                       "parquet writer: key/value metadata has a key without a "
                       "value");
    }
    w->kv = xcalloc(nkv + 1, sizeof *w->kv);
    for (size_t i = 0; i < nkv; i++)
        w->kv[i] = xstrdup(opts.kv[i]);
    w->nkv = nkv / 2;
    w->o.kv = NULL;
    w->write = write;
    w->ctx = ctx;
    w->rowtmp = xcalloc((size_t)ncols, sizeof *w->rowtmp);
    w->threads = opts.threads > 0 ? opts.threads : pq__threads_default();
    w->build = &w->sets[0];
    if (opts.compression == PQ_COMPRESS_ZSTD) {
        w->cctx = ZSTD_createCCtx();
        if (w->cctx == NULL) {
            pq_writer_free(w);
            return st_errf(err, ST_EINTERNAL, "parquet writer: cannot create a ZSTD context");
        }
    }
    for (int i = 0; i < ncols; i++)
        col_reset(&w->cols[i]);
    buf_append(&w->out, "PAR1", 4);
    w->offset = 4;
    *out = w;
    return ST_OK;
}

/* ---- output ---- */

static int flush_out(struct pq_writer *w, struct st_err *err)
{
    if (w->out.len == 0)
        return ST_OK;
    int rc = w->write(w->ctx, w->out.data, w->out.len, err);
    if (rc != ST_OK) {
        w->failed = rc;
        return rc;
    }
    buf_reset(&w->out);
    return ST_OK;
}

static int emit(struct pq_writer *w, const void *p, size_t n, struct st_err *err)
{
    buf_append(&w->out, p, n);
    w->offset += n;
    if (w->out.len >= PQ_OUT_FLUSH)
        return flush_out(w, err);
    return ST_OK;
}

/* ---- appending values ---- */

static int check_value(const struct wcol *c, const struct st_value *v, uint64_t row,
                       struct st_err *err)
{
    if (v->null) {
        if (c->col.required)
            return st_errf(err, ST_EINVAL,
                           "row %llu: column '%s' is required but the value is null",
                           (unsigned long long)row, c->col.name);
        return ST_OK;
    }
    if (c->col.type == ST_T_STRING) {
        if (v->v.s.len > ST_STRING_MAX)
            return st_errf(err, ST_ETOOBIG,
                           "row %llu: column '%s': string of %u bytes (at most %u)",
                           (unsigned long long)row, c->col.name, v->v.s.len, ST_STRING_MAX);
        if (v->v.s.len > 0 && v->v.s.p == NULL)
            return st_errf(err, ST_EINVAL, "row %llu: column '%s': string without bytes",
                           (unsigned long long)row, c->col.name);
        if (!pq__utf8_valid((const uint8_t *)v->v.s.p, v->v.s.len))
            return st_errf(err, ST_EINVAL,
                           "row %llu: column '%s': string is not UTF-8 or contains U+0000",
                           (unsigned long long)row, c->col.name);
    }
    return ST_OK;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap : 1024;
    while (n < need)
        n *= 2;
    *cap = n;
    return xreallocarray(p, n, elem);
}

static void update_str_stats(struct wcol *c, const uint8_t *p, uint32_t n)
{
    struct wstats *s = &c->st;
    if (!s->has) {
        buf_append(&s->smin, p, n);
        buf_append(&s->smax, p, n);
        s->has = true;
        return;
    }
    if (st_bytes_cmp(p, n, s->smin.data, s->smin.len) < 0) {
        buf_reset(&s->smin);
        buf_append(&s->smin, p, n);
    } else if (st_bytes_cmp(p, n, s->smax.data, s->smax.len) > 0) {
        buf_reset(&s->smax);
        buf_append(&s->smax, p, n);
    }
}

static void plain_append(struct wcol *c, const uint8_t *p, uint32_t n)
{
    c->soffs = grow(c->soffs, &c->soffs_cap, c->nvals + 2, sizeof *c->soffs);
    if (c->nvals == 0)
        c->soffs[0] = 0;
    buf_append(&c->sdata, p, n);
    assert(c->sdata.len <= UINT32_MAX); /* row groups close before PQ_RG_BYTES_MAX */
    c->soffs[c->nvals + 1] = (uint32_t)c->sdata.len;
}

/* Switch a row group's strings from dictionary to plain. */
static void dict_abandon(struct wcol *c)
{
    c->soffs = grow(c->soffs, &c->soffs_cap, c->nvals + 1, sizeof *c->soffs);
    buf_reset(&c->sdata);
    c->soffs[0] = 0;
    for (size_t j = 0; j < c->nvals; j++) {
        uint32_t e = c->idx[j];
        buf_append(&c->sdata, c->ddata.data + c->doffs[e], c->doffs[e + 1] - c->doffs[e]);
        c->soffs[j + 1] = (uint32_t)c->sdata.len;
    }
    c->dict_on = false;
    buf_reset(&c->ddata);
    c->nent = 0;
    if (c->htab != NULL)
        memset(c->htab, 0, c->hcap * sizeof *c->htab);
}

static void dict_rehash(struct wcol *c, size_t cap)
{
    free(c->htab);
    c->htab = xcalloc(cap, sizeof *c->htab);
    c->hcap = cap;
    for (size_t e = 0; e < c->nent; e++) {
        size_t h = c->dhash[e] & (cap - 1);
        while (c->htab[h] != 0)
            h = (h + 1) & (cap - 1);
        c->htab[h] = (uint32_t)e + 1;
    }
}

/* Add a value in dictionary mode; false when the dictionary gives up (then nothing was added). */
static bool dict_add(struct wcol *c, const uint8_t *p, uint32_t n, bool *is_new)
{
    uint32_t hv = (uint32_t)hmap_hash(p, n);
    if (c->htab == NULL)
        dict_rehash(c, 1024);
    assert(c->nent * 2 <= c->hcap); /* at most half full: the probe meets an empty slot */
    size_t h = hv & (c->hcap - 1);
    for (;;) {
        uint32_t e1 = c->htab[h];
        if (e1 == 0)
            break;
        uint32_t e = e1 - 1;
        if (c->dhash[e] == hv && c->doffs[e + 1] - c->doffs[e] == n &&
            (n == 0 || memcmp(c->ddata.data + c->doffs[e], p, n) == 0)) {
            c->idx = grow(c->idx, &c->idx_cap, c->nvals + 1, sizeof *c->idx);
            c->idx[c->nvals] = e;
            *is_new = false;
            return true;
        }
        h = (h + 1) & (c->hcap - 1);
    }
    /* A new entry: give up when the dictionary grows large or the values look unique. */
    if (c->nent >= PQ_DICT_MAX_ENTRIES || c->ddata.len + n > PQ_DICT_MAX_BYTES ||
        (c->nvals >= 4096 && c->nent > c->nvals / 2))
        return false;
    size_t e = c->nent;
    if (e + 2 > c->dcap) {
        size_t cap = c->dcap ? c->dcap * 2 : 1024;
        c->doffs = xreallocarray(c->doffs, cap, sizeof *c->doffs);
        c->dhash = xreallocarray(c->dhash, cap, sizeof *c->dhash);
        c->dcap = cap;
    }
    if (e == 0)
        c->doffs[0] = 0;
    buf_append(&c->ddata, p, n);
    c->doffs[e + 1] = (uint32_t)c->ddata.len;
    c->dhash[e] = hv;
    c->nent++;
    c->htab[h] = (uint32_t)e + 1;
    if (c->nent * 2 > c->hcap)
        dict_rehash(c, c->hcap * 2);
    c->idx = grow(c->idx, &c->idx_cap, c->nvals + 1, sizeof *c->idx);
    c->idx[c->nvals] = (uint32_t)e;
    *is_new = true;
    return true;
}

static uint64_t append_value(struct pq_writer *w, struct wcol *c, const struct st_value *v,
                             uint64_t row_in_rg)
{
    uint64_t bytes = 0;
    if (!c->col.required) {
        c->defs = grow(c->defs, &c->defs_cap, row_in_rg + 1, 1);
        c->defs[row_in_rg] = v->null ? 0 : 1;
        bytes++;
    }
    if (v->null) {
        c->st.nulls++;
        return bytes;
    }
    struct wstats *s = &c->st;
    switch (c->col.type) {
    case ST_T_BOOLEAN: {
        uint8_t b = v->v.b ? 1 : 0;
        buf_append(&c->fixed, &b, 1);
        if (!s->has) {
            s->min.b = s->max.b = b;
            s->has = true;
        }
        s->min.b = s->min.b && b;
        s->max.b = s->max.b || b;
        bytes += 1;
        break;
    }
    case ST_T_INT: {
        uint8_t *p = buf_extend(&c->fixed, 4);
        st_u32le(p, (uint32_t)v->v.i);
        if (!s->has || v->v.i < s->min.i)
            s->min.i = v->v.i;
        if (!s->has || v->v.i > s->max.i)
            s->max.i = v->v.i;
        s->has = true;
        bytes += 4;
        break;
    }
    case ST_T_LONG:
    case ST_T_TIMESTAMP: {
        uint8_t *p = buf_extend(&c->fixed, 8);
        st_u64le(p, (uint64_t)v->v.l);
        if (!s->has || v->v.l < s->min.l)
            s->min.l = v->v.l;
        if (!s->has || v->v.l > s->max.l)
            s->max.l = v->v.l;
        s->has = true;
        bytes += 8;
        break;
    }
    case ST_T_DOUBLE: {
        uint8_t *p = buf_extend(&c->fixed, 8);
        uint64_t bits;
        memcpy(&bits, &v->v.d, 8);
        st_u64le(p, bits);
        double d = v->v.d;
        if (isnan(d)) {
            s->nans++;
        } else {
            if (!s->has || d < s->min.d)
                s->min.d = d;
            if (!s->has || d > s->max.d)
                s->max.d = d;
            s->has = true;
        }
        bytes += 8;
        break;
    }
    case ST_T_STRING: {
        const uint8_t *p = (const uint8_t *)v->v.s.p;
        uint32_t n = v->v.s.len;
        if (c->nvals == 0 && w->o.dictionary)
            c->dict_on = true;
        bool is_new = true;
        if (c->dict_on && !dict_add(c, p, n, &is_new)) {
            dict_abandon(c);
            is_new = true;
        }
        if (!c->dict_on)
            plain_append(c, p, n);
        if (is_new)
            update_str_stats(c, p, n);
        bytes += (uint64_t)n + (c->dict_on ? 4 : 8);
        break;
    }
    }
    c->nvals++;
    return bytes;
}

static int flush_row_group(struct pq_writer *w, bool last, struct st_err *err);

static int writer_usable(struct pq_writer *w, struct st_err *err)
{
    if (w->finished)
        return st_errf(err, ST_EINTERNAL, "parquet writer: already finished");
    if (w->failed != ST_OK)
        return st_errf(err, w->failed, "parquet writer: an earlier write failed");
    return ST_OK;
}

static int add_checked_row(struct pq_writer *w, const struct st_value *row, struct st_err *err)
{
    uint64_t bytes = 0;
    for (int i = 0; i < w->ncols; i++)
        bytes += append_value(w, &w->cols[i], &row[i], w->rg_rows);
    w->rg_rows++;
    w->rows++;
    w->rg_bytes += bytes;
    if (w->rg_rows >= w->o.row_group_rows || w->rg_bytes >= w->o.row_group_bytes)
        return flush_row_group(w, false, err);
    return ST_OK;
}

int pq_writer_add_row(struct pq_writer *w, const struct st_value *row, struct st_err *err)
{
    int rc = writer_usable(w, err);
    if (rc != ST_OK)
        return rc;
    for (int i = 0; i < w->ncols; i++) {
        rc = check_value(&w->cols[i], &row[i], w->rows, err);
        if (rc != ST_OK)
            return rc;
    }
    return add_checked_row(w, row, err);
}

int pq_writer_add_colvecs(struct pq_writer *w, const struct st_colvec *cols, size_t start, size_t n,
                          struct st_err *err)
{
    int rc = writer_usable(w, err);
    if (rc != ST_OK)
        return rc;
    for (int i = 0; i < w->ncols; i++)
        if (cols[i].type != w->cols[i].col.type)
            return st_errf(err, ST_EINVAL, "parquet writer: column '%s': vector of type %s",
                           w->cols[i].col.name,
                           st_type_name(cols[i].type) ? st_type_name(cols[i].type) : "?");
    for (size_t r = start; r < start + n; r++) {
        for (int i = 0; i < w->ncols; i++) {
            st_colvec_get(&cols[i], r, &w->rowtmp[i]);
            rc = check_value(&w->cols[i], &w->rowtmp[i], w->rows, err);
            if (rc != ST_OK)
                return rc;
        }
        rc = add_checked_row(w, w->rowtmp, err);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

uint64_t pq_writer_rows(const struct pq_writer *w)
{
    return w->rows;
}

/* ---- encoding a row group ---- */

/* Hand w->page over as the next page of the row group (column `col`); w->page is then empty. */
static void queue_page(struct pq_writer *w, int col, int type, int32_t num_values, int32_t encoding)
{
    struct wpageset *ps = w->build;
    if (ps->npages == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 32;
        ps->pages = xreallocarray(ps->pages, cap, sizeof *ps->pages);
        memset(ps->pages + ps->cap, 0, (cap - ps->cap) * sizeof *ps->pages);
        ps->cap = cap;
    }
    struct wpage *pg = &ps->pages[ps->npages++];
    pg->type = type;
    pg->num_values = num_values;
    pg->encoding = encoding;
    pg->col = col;
    pg->zerr = 0;
    struct buf t = pg->raw;
    pg->raw = w->page;
    w->page = t;
    buf_reset(&w->page);
}

/*
 * Compress pages of ps taken in turn from ps->next until none is left (the
 * helper and the caller both run this). Each page is compressed alone at
 * the same level, so the bytes do not depend on which thread took it.
 */
static void compress_pages(const struct pq_writer *w, struct wpageset *ps, ZSTD_CCtx *cctx)
{
    for (;;) {
        size_t i = atomic_fetch_add(&ps->next, 1);
        if (i >= ps->npages)
            return;
        struct wpage *pg = &ps->pages[i];
        size_t bound = ZSTD_compressBound(pg->raw.len);
        buf_reset(&pg->comp);
        buf_reserve(&pg->comp, bound);
        size_t r = ZSTD_compressCCtx(cctx, pg->comp.data, bound, pg->raw.data, pg->raw.len,
                                     w->o.zstd_level);
        if (ZSTD_isError(r))
            pg->zerr = r;
        else
            pg->comp.len = r;
    }
}

static void compress_job(void *arg)
{
    struct pq_writer *w = arg;
    compress_pages(w, w->pend, w->cctx2);
}

/* Emit page i of ps with its header; adds to its chunk's sizes and offsets. */
static int emit_page(struct pq_writer *w, struct wpageset *ps, struct wrowgroup *g, size_t i,
                     struct st_err *err)
{
    struct wpage *pg = &ps->pages[i];
    assert(i < ps->npages && pg->col >= 0 && pg->col < w->ncols);
    struct wchunk *ch = &g->cols[pg->col];
    if (pg->zerr != 0) {
        w->failed = ST_EINTERNAL;
        return st_errf(err, ST_EINTERNAL, "parquet writer: ZSTD compression failed: %s",
                       ZSTD_getErrorName(pg->zerr));
    }
    const struct buf *body = w->o.compression == PQ_COMPRESS_NONE ? &pg->raw : &pg->comp;
    /* a page holds about PQ_PAGE_TARGET bytes and one value more (or a bounded dictionary) */
    assert(pg->raw.len <= INT32_MAX && body->len <= INT32_MAX);
    if (pg->type == PQ_PAGE_DICTIONARY)
        ch->dict_off = (int64_t)w->offset;
    else if (ch->data_off < 0)
        ch->data_off = (int64_t)w->offset;
    struct pq__page_header h;
    memset(&h, 0, sizeof h);
    h.type = pg->type;
    h.uncompressed_size = (int32_t)pg->raw.len;
    h.compressed_size = (int32_t)body->len;
    h.num_values = pg->num_values;
    h.encoding = pg->encoding;
    h.def_encoding = PQ_ENC_RLE;
    h.rep_encoding = PQ_ENC_RLE;
    buf_reset(&w->hdr);
    pq__page_header_encode(&w->hdr, &h);
    ch->total_comp += (int64_t)(w->hdr.len + body->len);
    ch->total_uncomp += (int64_t)(w->hdr.len + pg->raw.len);
    int rc = emit(w, w->hdr.data, w->hdr.len, err);
    if (rc == ST_OK)
        rc = emit(w, body->data, body->len, err);
    return rc;
}

/* Emit the (compressed) pages of ps, its row group's first byte at the current offset. */
static int emit_set(struct pq_writer *w, struct wpageset *ps, struct st_err *err)
{
    struct wrowgroup *g = &w->rgs[ps->rg];
    g->file_offset = (int64_t)w->offset;
    for (size_t p = 0; p < ps->npages; p++) {
        int rc = emit_page(w, ps, g, p, err);
        if (rc != ST_OK) {
            w->failed = rc;
            return st_err_prefix(err, "parquet writer: column '%s'",
                                 w->cols[ps->pages[p].col].col.name);
        }
    }
    for (int i = 0; i < w->ncols; i++) {
        g->total_comp += g->cols[i].total_comp;
        g->total_uncomp += g->cols[i].total_uncomp;
    }
    return flush_out(w, err);
}

/* The pending row group: help the helper compress what is left, wait for it, emit. */
static int drain(struct pq_writer *w, struct st_err *err)
{
    struct wpageset *ps = w->pend;
    if (ps == NULL)
        return ST_OK;
    assert(w->worker != NULL); /* pending pages are a job of the helper */
    compress_pages(w, ps, w->cctx);
    pq__worker_wait(w->worker);
    w->pend = NULL;
    return emit_set(w, ps, err);
}

/* True when the helper can take row groups (started on first use). */
static bool helper_ready(struct pq_writer *w)
{
    if (w->threads <= 1 || w->o.compression == PQ_COMPRESS_NONE)
        return false;
    if (w->worker == NULL && w->cctx2 == NULL) {
        w->cctx2 = ZSTD_createCCtx();
        if (w->cctx2 != NULL)
            w->worker = pq__worker_start();
    }
    return w->worker != NULL;
}

static void pack_bools(struct buf *b, const uint8_t *v, size_t n)
{
    uint8_t *o = buf_extend(b, (n + 7) / 8);
    for (size_t i = 0; i < n; i++)
        o[i / 8] |= (uint8_t)(v[i] << (i % 8));
}

/* Write the statistics of the row group's column into the chunk and merge them into the file's. */
static void finish_stats(struct wcol *c, struct wchunk *ch)
{
    struct wstats *s = &c->st;
    struct fstats *f = &c->fs;
    ch->null_count = s->nulls;
    ch->nan_count = s->nans;
    f->nulls += s->nulls;
    f->nans += s->nans;
    ch->has_minmax = false;
    if (!s->has)
        return;
    ch->min_exact = ch->max_exact = true;
    struct st_value mn, mx;
    memset(&mn, 0, sizeof mn);
    memset(&mx, 0, sizeof mx);
    switch (c->col.type) {
    case ST_T_BOOLEAN:
        ch->min.b[0] = s->min.b;
        ch->max.b[0] = s->max.b;
        ch->min.n = ch->max.n = 1;
        mn.v.b = s->min.b;
        mx.v.b = s->max.b;
        break;
    case ST_T_INT:
        st_u32le(ch->min.b, (uint32_t)s->min.i);
        st_u32le(ch->max.b, (uint32_t)s->max.i);
        ch->min.n = ch->max.n = 4;
        mn.v.i = s->min.i;
        mx.v.i = s->max.i;
        break;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        st_u64le(ch->min.b, (uint64_t)s->min.l);
        st_u64le(ch->max.b, (uint64_t)s->max.l);
        ch->min.n = ch->max.n = 8;
        mn.v.l = s->min.l;
        mx.v.l = s->max.l;
        break;
    case ST_T_DOUBLE: {
        /* parquet.thrift: a zero min is written -0.0, a zero max +0.0. */
        double lo = s->min.d == 0 ? -0.0 : s->min.d;
        double hi = s->max.d == 0 ? 0.0 : s->max.d;
        uint64_t bits;
        memcpy(&bits, &lo, 8);
        st_u64le(ch->min.b, bits);
        memcpy(&bits, &hi, 8);
        st_u64le(ch->max.b, bits);
        ch->min.n = ch->max.n = 8;
        mn.v.d = lo;
        mx.v.d = hi;
        break;
    }
    case ST_T_STRING: {
        bound_min(&ch->min, s->smin.data, (uint32_t)s->smin.len, &ch->min_exact);
        if (!bound_max(&ch->max, s->smax.data, (uint32_t)s->smax.len, &ch->max_exact))
            return; /* no upper bound: no min/max at all */
        break;
    }
    }
    ch->has_minmax = true;
    if (c->col.type == ST_T_STRING) {
        bool first = !f->has;
        if (first || st_bytes_cmp(ch->min.b, ch->min.n, f->smin.b, f->smin.n) < 0)
            f->smin = ch->min;
        if (first || st_bytes_cmp(ch->max.b, ch->max.n, f->smax.b, f->smax.n) > 0)
            f->smax = ch->max;
        f->has = true;
        return;
    }
    if (!f->has || st_value_cmp(c->col.type, &mn, &f->min) < 0)
        f->min = mn;
    if (!f->has || st_value_cmp(c->col.type, &mx, &f->max) > 0)
        f->max = mx;
    f->has = true;
}

static bool value_present(const struct wcol *c, size_t row)
{
    return c->col.required || c->defs[row] != 0;
}

/*
 * Encode column `ci`'s chunk of the row group into pages (queued in w->build,
 * emitted by flush_row_group) and its statistics into ch.
 */
static void write_chunk(struct pq_writer *w, int ci, struct wchunk *ch, size_t nrows)
{
    struct wcol *c = &w->cols[ci];
    memset(ch, 0, sizeof *ch);
    ch->dict_off = -1;
    ch->data_off = -1;
    ch->num_values = (int64_t)nrows;
    finish_stats(c, ch);

    bool dict = false;
    int bw = 1;
    if (c->col.type == ST_T_STRING && c->dict_on && c->nvals > 0) {
        bw = pq__bit_width(c->nent - 1);
        if (bw == 0)
            bw = 1;
        uint64_t plain = (uint64_t)c->nvals * 4;
        for (size_t j = 0; j < c->nvals; j++)
            plain += c->doffs[c->idx[j] + 1] - c->doffs[c->idx[j]];
        uint64_t dsize = c->ddata.len + 4 * (uint64_t)c->nent + 1 + (c->nvals * (uint64_t)bw) / 8;
        if (dsize < plain)
            dict = true;
        else
            dict_abandon(c);
    } else if (c->col.type == ST_T_STRING && c->dict_on) {
        dict_abandon(c);
    }
    ch->dict = dict;

    if (dict) {
        buf_reset(&w->page);
        for (size_t e = 0; e < c->nent; e++) {
            uint32_t n = c->doffs[e + 1] - c->doffs[e];
            buf_put_u32le(&w->page, n);
            buf_append(&w->page, c->ddata.data + c->doffs[e], n);
        }
        queue_page(w, ci, PQ_PAGE_DICTIONARY, (int32_t)c->nent, PQ_ENC_PLAIN);
    }

    size_t width = st_type_width(c->col.type);
    size_t row = 0, val = 0;
    while (row < nrows) {
        size_t r0 = row, v0 = val;
        uint64_t bytes = 0;
        while (row < nrows && bytes < PQ_PAGE_TARGET) {
            if (value_present(c, row)) {
                if (dict)
                    bytes += 1;
                else if (width)
                    bytes += width;
                else
                    bytes += 4 + (uint64_t)(c->soffs[val + 1] - c->soffs[val]);
                val++;
            }
            row++;
        }
        buf_reset(&w->page);
        if (!c->col.required) {
            buf_put_u32le(&w->page, 0);
            size_t at = w->page.len;
            pq__rle_encode_u8(&w->page, c->defs + r0, row - r0, 1);
            st_u32le(w->page.data + at - 4, (uint32_t)(w->page.len - at));
        }
        int32_t enc = PQ_ENC_PLAIN;
        if (dict) {
            enc = PQ_ENC_RLE_DICTIONARY;
            buf_put_u8(&w->page, (uint8_t)bw);
            pq__rle_encode_u32(&w->page, c->idx + v0, val - v0, bw);
        } else if (val == v0) {
            /* an all-null page has no values (and the column maybe no buffer) */
        } else if (c->col.type == ST_T_BOOLEAN) {
            pack_bools(&w->page, c->fixed.data + v0, val - v0);
        } else if (width) {
            buf_append(&w->page, c->fixed.data + v0 * width, (val - v0) * width);
        } else {
            for (size_t j = v0; j < val; j++) {
                uint32_t n = c->soffs[j + 1] - c->soffs[j];
                buf_put_u32le(&w->page, n);
                buf_append(&w->page, c->sdata.data + c->soffs[j], n);
            }
        }
        queue_page(w, ci, PQ_PAGE_DATA, (int32_t)(row - r0), enc);
        ch->data_pages++;
    }
    assert(row == nrows && val == c->nvals); /* every buffered value is in a page */
}

/*
 * Close the row group: encode its pages (the caller), emit the previous
 * row group (drain), then hand this one's pages to the helper to compress
 * while the caller fills the next row group, or, with one thread, compress
 * and emit them here. Memory: the filling row group's values plus at most
 * two row groups of pages. The last row group (pq_writer_finish) starts no
 * helper: a file of one row group, the common small file, is written on the
 * caller's thread alone; a helper already running shares its pages.
 */
static int flush_row_group(struct pq_writer *w, bool last, struct st_err *err)
{
    if (w->rg_rows == 0)
        return ST_OK;
    if (w->nrgs == w->rgs_cap) {
        w->rgs_cap = w->rgs_cap ? w->rgs_cap * 2 : 16;
        w->rgs = xreallocarray(w->rgs, w->rgs_cap, sizeof *w->rgs);
    }
    size_t gi = w->nrgs++;
    struct wrowgroup *g = &w->rgs[gi];
    memset(g, 0, sizeof *g);
    g->num_rows = (int64_t)w->rg_rows;
    g->cols = xcalloc((size_t)w->ncols, sizeof *g->cols);
    struct wpageset *ps = w->build;
    ps->npages = 0;
    ps->rg = gi;
    for (int i = 0; i < w->ncols; i++) {
        write_chunk(w, i, &g->cols[i], (size_t)w->rg_rows);
        col_reset(&w->cols[i]);
    }
    w->rg_rows = 0;
    w->rg_bytes = 0;
    int rc = drain(w, err);
    if (rc != ST_OK)
        return rc;
    assert(w->pend == NULL);
    atomic_store(&ps->next, 0);
    if (!last && helper_ready(w)) {
        w->pend = ps;
        w->build = ps == &w->sets[0] ? &w->sets[1] : &w->sets[0];
        pq__worker_submit(w->worker, compress_job, w);
        return ST_OK;
    }
    if (w->o.compression == PQ_COMPRESS_NONE)
        return emit_set(w, ps, err);
    if (w->worker != NULL && ps->npages > 1) {
        w->pend = ps;
        pq__worker_submit(w->worker, compress_job, w);
        return drain(w, err);
    }
    compress_pages(w, ps, w->cctx);
    return emit_set(w, ps, err);
}

/* ---- footer ---- */

static void write_schema_column(struct pq__tw *t, const struct st_column *c)
{
    pq__tw_elem_struct_begin(t);
    pq__tw_i32(t, 1, phys_type(c->type));
    pq__tw_i32(t, 3, c->required ? PQ_REQUIRED : PQ_OPTIONAL);
    pq__tw_binary(t, 4, c->name, strlen(c->name));
    if (c->type == ST_T_STRING) {
        pq__tw_i32(t, 6, PQ_CT_UTF8);
        if (c->field_id > 0)
            pq__tw_i32(t, 9, c->field_id);    /* field_id: Iceberg's */
        pq__tw_struct_begin(t, 10);           /* LogicalType */
        pq__tw_struct_begin(t, PQ_LT_STRING); /* StringType {} */
        pq__tw_struct_end(t);
        pq__tw_struct_end(t);
    } else if (c->type == ST_T_TIMESTAMP) {
        pq__tw_i32(t, 6, PQ_CT_TIMESTAMP_MICROS);
        if (c->field_id > 0)
            pq__tw_i32(t, 9, c->field_id);
        pq__tw_struct_begin(t, 10);              /* LogicalType */
        pq__tw_struct_begin(t, PQ_LT_TIMESTAMP); /* TimestampType */
        pq__tw_bool(t, 1, true);                 /* isAdjustedToUTC */
        pq__tw_struct_begin(t, 2);               /* unit: TimeUnit */
        pq__tw_struct_begin(t, PQ_UNIT_MICROS);  /* MicroSeconds {} */
        pq__tw_struct_end(t);
        pq__tw_struct_end(t);
        pq__tw_struct_end(t);
        pq__tw_struct_end(t);
    } else if (c->field_id > 0) {
        pq__tw_i32(t, 9, c->field_id);
    }
    pq__tw_struct_end(t);
}

static void write_statistics(struct pq__tw *t, const struct wcol *c, const struct wchunk *ch)
{
    bool signed_order = c->col.type == ST_T_BOOLEAN || c->col.type == ST_T_INT ||
                        c->col.type == ST_T_LONG || c->col.type == ST_T_TIMESTAMP;
    pq__tw_struct_begin(t, 12);
    if (ch->has_minmax && signed_order) {
        pq__tw_binary(t, 1, ch->max.b, ch->max.n);
        pq__tw_binary(t, 2, ch->min.b, ch->min.n);
    }
    pq__tw_i64(t, 3, (int64_t)ch->null_count);
    if (ch->has_minmax) {
        pq__tw_binary(t, 5, ch->max.b, ch->max.n);
        pq__tw_binary(t, 6, ch->min.b, ch->min.n);
        pq__tw_bool(t, 7, ch->max_exact);
        pq__tw_bool(t, 8, ch->min_exact);
    }
    if (c->col.type == ST_T_DOUBLE)
        pq__tw_i64(t, 9, (int64_t)ch->nan_count);
    pq__tw_struct_end(t);
}

static void write_column_chunk(struct pq__tw *t, const struct pq_writer *w, const struct wcol *c,
                               const struct wchunk *ch)
{
    pq__tw_elem_struct_begin(t);
    pq__tw_i64(t, 2, 0); /* file_offset: deprecated, 0 */
    pq__tw_struct_begin(t, 3);
    pq__tw_i32(t, 1, phys_type(c->col.type));
    int encs[3];
    uint32_t nenc = 0;
    encs[nenc++] = PQ_ENC_PLAIN;
    if (!c->col.required)
        encs[nenc++] = PQ_ENC_RLE;
    if (ch->dict)
        encs[nenc++] = PQ_ENC_RLE_DICTIONARY;
    pq__tw_list_begin(t, 2, PQ_TT_I32, nenc);
    for (uint32_t i = 0; i < nenc; i++)
        pq__tw_elem_i32(t, encs[i]);
    pq__tw_list_begin(t, 3, PQ_TT_BINARY, 1);
    pq__tw_elem_binary(t, c->col.name, strlen(c->col.name));
    pq__tw_i32(t, 4, w->o.compression == PQ_COMPRESS_ZSTD ? PQ_CODEC_ZSTD : PQ_CODEC_UNCOMPRESSED);
    pq__tw_i64(t, 5, ch->num_values);
    pq__tw_i64(t, 6, ch->total_uncomp);
    pq__tw_i64(t, 7, ch->total_comp);
    pq__tw_i64(t, 9, ch->data_off);
    if (ch->dict_off >= 0)
        pq__tw_i64(t, 11, ch->dict_off);
    write_statistics(t, c, ch);
    /* encoding_stats: which pages use which encoding */
    pq__tw_list_begin(t, 13, PQ_TT_STRUCT, ch->dict ? 2 : 1);
    if (ch->dict) {
        pq__tw_elem_struct_begin(t);
        pq__tw_i32(t, 1, PQ_PAGE_DICTIONARY);
        pq__tw_i32(t, 2, PQ_ENC_PLAIN);
        pq__tw_i32(t, 3, 1);
        pq__tw_struct_end(t);
    }
    pq__tw_elem_struct_begin(t);
    pq__tw_i32(t, 1, PQ_PAGE_DATA);
    pq__tw_i32(t, 2, ch->dict ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN);
    pq__tw_i32(t, 3, (int32_t)ch->data_pages);
    pq__tw_struct_end(t);
    pq__tw_struct_end(t); /* ColumnMetaData */
    pq__tw_struct_end(t); /* ColumnChunk */
}

static void write_footer(struct pq_writer *w, struct buf *b)
{
    struct pq__tw t;
    pq__tw_init(&t, b);
    pq__tw_root_begin(&t);
    pq__tw_i32(&t, 1, 1); /* version */
    pq__tw_list_begin(&t, 2, PQ_TT_STRUCT, (uint32_t)w->ncols + 1);
    pq__tw_elem_struct_begin(&t);
    pq__tw_binary(&t, 4, "schema", 6);
    pq__tw_i32(&t, 5, w->ncols);
    pq__tw_struct_end(&t);
    for (int i = 0; i < w->ncols; i++)
        write_schema_column(&t, &w->cols[i].col);
    pq__tw_i64(&t, 3, (int64_t)w->rows);
    pq__tw_list_begin(&t, 4, PQ_TT_STRUCT, (uint32_t)w->nrgs);
    for (size_t g = 0; g < w->nrgs; g++) {
        const struct wrowgroup *rg = &w->rgs[g];
        pq__tw_elem_struct_begin(&t);
        pq__tw_list_begin(&t, 1, PQ_TT_STRUCT, (uint32_t)w->ncols);
        for (int i = 0; i < w->ncols; i++)
            write_column_chunk(&t, w, &w->cols[i], &rg->cols[i]);
        pq__tw_i64(&t, 2, rg->total_uncomp);
        pq__tw_i64(&t, 3, rg->num_rows);
        pq__tw_i64(&t, 5, rg->file_offset);
        pq__tw_i64(&t, 6, rg->total_comp);
        if (g <= INT16_MAX)
            pq__tw_i16(&t, 7, (int16_t)g);
        pq__tw_struct_end(&t);
    }
    if (w->nkv > 0) {
        pq__tw_list_begin(&t, 5, PQ_TT_STRUCT, (uint32_t)w->nkv);
        for (size_t i = 0; i < w->nkv; i++) {
            pq__tw_elem_struct_begin(&t);
            pq__tw_binary(&t, 1, w->kv[2 * i], strlen(w->kv[2 * i]));
            pq__tw_binary(&t, 2, w->kv[2 * i + 1], strlen(w->kv[2 * i + 1]));
            pq__tw_struct_end(&t);
        }
    }
    pq__tw_binary(&t, 6, PQ_CREATED_BY, strlen(PQ_CREATED_BY));
    pq__tw_list_begin(&t, 7, PQ_TT_STRUCT, (uint32_t)w->ncols);
    for (int i = 0; i < w->ncols; i++) {
        pq__tw_elem_struct_begin(&t);
        pq__tw_struct_begin(&t, PQ_ORDER_TYPE); /* TypeDefinedOrder {} */
        pq__tw_struct_end(&t);
        pq__tw_struct_end(&t);
    }
    pq__tw_root_end(&t);
}

int pq_writer_finish(struct pq_writer *w, struct pq_file_stats *stats, struct st_err *err)
{
    if (stats != NULL)
        memset(stats, 0, sizeof *stats);
    int rc = writer_usable(w, err);
    if (rc != ST_OK)
        return rc;
    rc = flush_row_group(w, true, err);
    if (rc == ST_OK)
        rc = drain(w, err);
    if (rc != ST_OK)
        return rc;
    struct buf footer = BUF_INIT;
    write_footer(w, &footer);
    uint8_t tail[8];
    st_u32le(tail, (uint32_t)footer.len);
    memcpy(tail + 4, "PAR1", 4);
    rc = emit(w, footer.data, footer.len, err);
    if (rc == ST_OK)
        rc = emit(w, tail, 8, err);
    if (rc == ST_OK)
        rc = flush_out(w, err);
    buf_free(&footer);
    if (rc != ST_OK)
        return rc;
    w->finished = true;
    if (stats != NULL) {
        stats->num_rows = w->rows;
        stats->file_size = w->offset;
        stats->ncols = w->ncols;
        stats->cols = xcalloc((size_t)w->ncols, sizeof *stats->cols);
        size_t sbytes = 0;
        for (int i = 0; i < w->ncols; i++)
            if (w->cols[i].col.type == ST_T_STRING && w->cols[i].fs.has)
                sbytes += w->cols[i].fs.smin.n + w->cols[i].fs.smax.n + 2;
        char *sp = stats->strings_ = sbytes ? xmalloc(sbytes) : NULL;
        for (int i = 0; i < w->ncols; i++) {
            const struct wcol *c = &w->cols[i];
            struct pq_col_stats *s = &stats->cols[i];
            s->null_count = c->fs.nulls;
            s->has_null_count = true;
            if (c->col.type == ST_T_DOUBLE) {
                s->has_nan_count = true;
                s->nan_count = c->fs.nans;
            }
            s->has_minmax = c->fs.has;
            if (!c->fs.has)
                continue;
            if (c->col.type == ST_T_STRING) {
                memcpy(sp, c->fs.smin.b, c->fs.smin.n);
                sp[c->fs.smin.n] = '\0';
                s->min.v.s.p = sp;
                s->min.v.s.len = c->fs.smin.n;
                sp += c->fs.smin.n + 1;
                memcpy(sp, c->fs.smax.b, c->fs.smax.n);
                sp[c->fs.smax.n] = '\0';
                s->max.v.s.p = sp;
                s->max.v.s.len = c->fs.smax.n;
                sp += c->fs.smax.n + 1;
            } else {
                s->min = c->fs.min;
                s->max = c->fs.max;
            }
        }
        assert(sbytes == 0 ? sp == NULL : (size_t)(sp - stats->strings_) == sbytes);
    }
    return ST_OK;
}

void pq_file_stats_free(struct pq_file_stats *s)
{
    if (s == NULL)
        return;
    free(s->cols);
    free(s->strings_);
    s->cols = NULL;
    s->strings_ = NULL;
    s->ncols = 0;
}

void pq_writer_free(struct pq_writer *w)
{
    if (w == NULL)
        return;
    pq__worker_stop(w->worker); /* first: a compression job still running reads the pages */
    for (int i = 0; i < w->ncols; i++) {
        struct wcol *c = &w->cols[i];
        free(c->defs);
        buf_free(&c->fixed);
        buf_free(&c->sdata);
        free(c->soffs);
        buf_free(&c->ddata);
        free(c->doffs);
        free(c->dhash);
        free(c->htab);
        free(c->idx);
        buf_free(&c->st.smin);
        buf_free(&c->st.smax);
    }
    free(w->cols);
    for (size_t i = 0; w->kv != NULL && w->kv[i] != NULL; i++)
        free(w->kv[i]);
    free(w->kv);
    for (size_t g = 0; g < w->nrgs; g++)
        free(w->rgs[g].cols);
    free(w->rgs);
    buf_free(&w->out);
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < w->sets[k].cap; i++) {
            buf_free(&w->sets[k].pages[i].raw);
            buf_free(&w->sets[k].pages[i].comp);
        }
        free(w->sets[k].pages);
    }
    buf_free(&w->page);
    buf_free(&w->hdr);
    ZSTD_freeCCtx(w->cctx);
    ZSTD_freeCCtx(w->cctx2);
    free(w->rowtmp);
    free(w);
}

int pq_write_afile(void *ctx, const void *p, size_t n, struct st_err *err)
{
    return st_afile_write(ctx, p, n, err);
}
