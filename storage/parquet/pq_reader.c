/*
 * pq_reader.c - the Parquet reader: footer (pread, then pq_meta.c), schema
 * mapping to strike types, row-group statistics, and page decoding into
 * st_colvec columns.
 *
 * Trust: the footer and every page are untrusted input. The footer is
 * validated whole at open (every chunk's byte range lies inside the file's
 * data area, every row group has one chunk per leaf column of the leaf's
 * type, row counts add up); pages are checked as they are decoded (sizes
 * against the chunk and PQ_PAGE_MAX, decompressed sizes exact, value counts
 * against the row group, levels against the max level, dictionary indices
 * against the dictionary, strings UTF-8 and at most ST_STRING_MAX bytes).
 *
 * Decoding: each projected column chunk is read whole, then page by page the
 * non-null values are decoded densely at the page's first row of the output
 * vector and, when the page has nulls, spread backwards in place to their
 * rows (a value never moves to a lower index, so this needs no scratch).
 */
#include "parquet.h"
#include "pq_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "common/debug.h"
#include "common/fsutil.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Parquet decoder copies little-endian values as they are"
#endif

/* How a physical value becomes the strike value. */
enum conv {
    CV_NONE = 0,
    CV_U32,    /* INT32 holding an unsigned 32-bit value -> long */
    CV_FLOAT,  /* FLOAT -> double */
    CV_MILLIS, /* INT64 milliseconds -> microseconds */
    CV_NANOS,  /* INT64 nanoseconds -> microseconds (floor) */
    CV_INT96,  /* INT96 (nanoseconds of day, Julian day) -> microseconds (floor) */
};

struct rcol {
    struct st_column col;
    char *path; /* dotted, owned */
    const char *unsupported;
    char reason[96];
    int phys;
    int32_t type_length;
    int max_def, max_rep;
    int conv;
    int schema_idx;
    bool signed_order; /* deprecated min/max usable */
};

struct pq__vecmem {
    uint8_t *vals;
    size_t vals_cap;
    uint8_t *nulls;
    size_t nulls_cap;
    uint32_t *offs;
    size_t offs_cap;
    struct buf sdata;
};

/*
 * What decoding needs besides the footer: scratch buffers reused across
 * pages, chunks and row groups, the current chunk's dictionary, the limits
 * and the counters. The caller's thread has one (pq_reader.dec), the
 * read-ahead helper another (pq__ahead.dec).
 */
struct pq__dec {
    uint64_t max_bytes, max_page;
    struct pq_read_counters counters;
    struct buf chunk;
    uint8_t *page;
    size_t page_cap;
    uint8_t *defs;
    size_t defs_cap;
    uint32_t *u32;
    size_t u32_cap;
    int64_t *i64;
    size_t i64_cap;
    /* the current chunk's dictionary */
    size_t dict_n;
    uint8_t *dict_vals;
    size_t dict_vals_cap;
    uint32_t *dict_offs;
    size_t dict_offs_cap;
    struct buf dict_sdata;
    void *zstd;
};

/*
 * Read-ahead: the helper thread decodes row group `rg` (columns cols) into
 * `b` while the caller consumes or decodes another one. The caller reads
 * the chunks' bytes (I/O stays on the caller's thread, whatever the source)
 * and hands them over in `bytes`; the helper only decodes. Owned by the
 * caller while no job runs, by the helper while one does.
 */
struct pq__ahead {
    struct pq__worker *worker;
    const struct pq_reader *r;
    bool active; /* a job was submitted and not yet taken or dropped */
    int rg;
    int *cols;
    int ncols, cols_cap;
    struct buf bytes; /* source readers: the chunks' bytes, one after the other */
    size_t *boff;     /* offset of each projected chunk in bytes */
    size_t boff_cap;
    struct pq_batch b; /* the job's output */
    struct pq__dec dec;
    int rc;
    struct st_err err;
};

struct pq_reader {
    struct pq_source src; /* read_at NULL for memory */
    const uint8_t *mem;
    uint64_t file_size;
    uint64_t data_end; /* where the footer starts */
    uint8_t *footer_owned;
    struct pq__filemeta m;
    struct rcol *cols;
    int ncols;
    uint64_t *rg_first;
    char **kv_keys, **kv_vals;
    char *created_by;
    uint64_t max_rows, max_bytes, max_page;

    struct pq__dec dec; /* the caller's thread */
    int threads;        /* 1: no read-ahead */
    int next_rg;        /* the row group a sequential reader asks for next */
    int ahead_step;     /* 0 adaptive, 1: always the next one (tests) */
    uint64_t ahead_taken;
    uint64_t t_return;  /* when the last call returned (monotonic ns) */
    uint64_t decode_ns; /* how long the caller's last decode took */
    struct pq__ahead ah;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap : 256;
    while (n < need)
        n *= 2;
    *cap = n;
    return xreallocarray(p, n, elem);
}

/* ---- names for messages and meta ---- */

const char *pq_encoding_name(int enc)
{
    static const char *const names[] = {"PLAIN",
                                        "GROUP_VAR_INT",
                                        "PLAIN_DICTIONARY",
                                        "RLE",
                                        "BIT_PACKED",
                                        "DELTA_BINARY_PACKED",
                                        "DELTA_LENGTH_BYTE_ARRAY",
                                        "DELTA_BYTE_ARRAY",
                                        "RLE_DICTIONARY",
                                        "BYTE_STREAM_SPLIT",
                                        "ALP"};
    if (enc < 0 || enc >= (int)(sizeof names / sizeof names[0]))
        return "?";
    return names[enc];
}

const char *pq_codec_name(int codec)
{
    static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                        "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
    if (codec < 0 || codec >= (int)(sizeof names / sizeof names[0]))
        return "?";
    return names[codec];
}

static const char *physical_name(int t)
{
    static const char *const names[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                        "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    if (t < 0 || t >= (int)(sizeof names / sizeof names[0]))
        return "?";
    return names[t];
}

static const char *converted_name(int c)
{
    static const char *const names[] = {"UTF8",
                                        "MAP",
                                        "MAP_KEY_VALUE",
                                        "LIST",
                                        "ENUM",
                                        "DECIMAL",
                                        "DATE",
                                        "TIME_MILLIS",
                                        "TIME_MICROS",
                                        "TIMESTAMP_MILLIS",
                                        "TIMESTAMP_MICROS",
                                        "UINT_8",
                                        "UINT_16",
                                        "UINT_32",
                                        "UINT_64",
                                        "INT_8",
                                        "INT_16",
                                        "INT_32",
                                        "INT_64",
                                        "JSON",
                                        "BSON",
                                        "INTERVAL"};
    if (c < 0 || c >= (int)(sizeof names / sizeof names[0]))
        return NULL;
    return names[c];
}

static const char *unit_name(int u)
{
    return u == PQ_UNIT_MILLIS   ? "MILLIS"
           : u == PQ_UNIT_MICROS ? "MICROS"
           : u == PQ_UNIT_NANOS  ? "NANOS"
                                 : "?";
}

static void logical_desc(const struct pq__schema_el *e, char *out, size_t n)
{
    out[0] = '\0';
    switch (e->logical) {
    case 0:
        break;
    case PQ_LT_STRING:
        snprintf(out, n, "STRING");
        break;
    case PQ_LT_MAP:
        snprintf(out, n, "MAP");
        break;
    case PQ_LT_LIST:
        snprintf(out, n, "LIST");
        break;
    case PQ_LT_ENUM:
        snprintf(out, n, "ENUM");
        break;
    case PQ_LT_DECIMAL:
        snprintf(out, n, "DECIMAL(%d,%d)", (int)e->dec_precision, (int)e->dec_scale);
        break;
    case PQ_LT_DATE:
        snprintf(out, n, "DATE");
        break;
    case PQ_LT_TIME:
        snprintf(out, n, "TIME(%s,%s)", e->ts_utc ? "UTC" : "local", unit_name(e->unit));
        break;
    case PQ_LT_TIMESTAMP:
        snprintf(out, n, "TIMESTAMP(%s,%s)", e->ts_utc ? "UTC" : "local", unit_name(e->unit));
        break;
    case PQ_LT_INTEGER:
        snprintf(out, n, "INTEGER(%d,%s)", e->int_bits, e->int_signed ? "signed" : "unsigned");
        break;
    case PQ_LT_UNKNOWN:
        snprintf(out, n, "UNKNOWN");
        break;
    case PQ_LT_JSON:
        snprintf(out, n, "JSON");
        break;
    case PQ_LT_BSON:
        snprintf(out, n, "BSON");
        break;
    case PQ_LT_UUID:
        snprintf(out, n, "UUID");
        break;
    case PQ_LT_FLOAT16:
        snprintf(out, n, "FLOAT16");
        break;
    case PQ_LT_VARIANT:
        snprintf(out, n, "VARIANT");
        break;
    case PQ_LT_GEOMETRY:
        snprintf(out, n, "GEOMETRY");
        break;
    case PQ_LT_GEOGRAPHY:
        snprintf(out, n, "GEOGRAPHY");
        break;
    default:
        snprintf(out, n, "logical type %d", e->logical);
    }
}

/* ---- schema ---- */

static void unsupported(struct rcol *c, const char *phys, const char *ann)
{
    snprintf(c->reason, sizeof c->reason, "%s%s%s", phys, ann[0] ? " " : "", ann);
    c->unsupported = c->reason;
}

/* Decide the strike type of a top-level, non-repeated leaf column. */
static void map_type(struct rcol *c, const struct pq__schema_el *e)
{
    const char *phys = physical_name(e->type);
    char lt[64];
    logical_desc(e, lt, sizeof lt);
    const char *ct = converted_name(e->converted);
    const char *ann = lt[0] ? lt : ct ? ct : "";
    int lg = e->logical == PQ_LT_UNKNOWN ? 0 : e->logical;
    c->conv = CV_NONE;
    switch (e->type) {
    case PQ_BOOLEAN:
        c->col.type = ST_T_BOOLEAN;
        c->signed_order = true;
        if (lg != 0)
            unsupported(c, phys, ann);
        return;
    case PQ_INT32:
        c->col.type = ST_T_INT;
        c->signed_order = true;
        if (lg == PQ_LT_INTEGER) {
            if (!e->int_signed && e->int_bits == 32) {
                c->col.type = ST_T_LONG;
                c->conv = CV_U32;
                c->signed_order = false;
            } else if (e->int_bits != 8 && e->int_bits != 16 && e->int_bits != 32) {
                unsupported(c, phys, ann);
            }
            if (!e->int_signed)
                c->signed_order = false;
            return;
        }
        if (lg != 0) {
            unsupported(c, phys, ann);
            return;
        }
        switch (e->converted) {
        case -1:
        case PQ_CT_INT_8:
        case PQ_CT_INT_16:
        case PQ_CT_INT_32:
            return;
        case PQ_CT_UINT_8:
        case PQ_CT_UINT_16:
            c->signed_order = false;
            return;
        case PQ_CT_UINT_32:
            c->col.type = ST_T_LONG;
            c->conv = CV_U32;
            c->signed_order = false;
            return;
        default:
            unsupported(c, phys, ann);
            return;
        }
    case PQ_INT64:
        c->col.type = ST_T_LONG;
        c->signed_order = true;
        if (lg == PQ_LT_TIMESTAMP) {
            c->col.type = ST_T_TIMESTAMP;
            if (e->unit == PQ_UNIT_MILLIS)
                c->conv = CV_MILLIS;
            else if (e->unit == PQ_UNIT_NANOS)
                c->conv = CV_NANOS;
            else if (e->unit != PQ_UNIT_MICROS)
                unsupported(c, phys, ann);
            return;
        }
        if (lg == PQ_LT_INTEGER) {
            if (e->int_bits != 64 || !e->int_signed)
                unsupported(c, phys, ann);
            return;
        }
        if (lg != 0) {
            unsupported(c, phys, ann);
            return;
        }
        switch (e->converted) {
        case -1:
        case PQ_CT_INT_64:
            return;
        case PQ_CT_TIMESTAMP_MICROS:
            c->col.type = ST_T_TIMESTAMP;
            return;
        case PQ_CT_TIMESTAMP_MILLIS:
            c->col.type = ST_T_TIMESTAMP;
            c->conv = CV_MILLIS;
            return;
        default:
            unsupported(c, phys, ann);
            return;
        }
    case PQ_INT96:
        c->col.type = ST_T_TIMESTAMP;
        c->conv = CV_INT96;
        if (lg != 0 || e->converted != -1)
            unsupported(c, phys, ann);
        return;
    case PQ_FLOAT:
        c->col.type = ST_T_DOUBLE;
        c->conv = CV_FLOAT;
        c->signed_order = true;
        if (lg != 0)
            unsupported(c, phys, ann);
        return;
    case PQ_DOUBLE:
        c->col.type = ST_T_DOUBLE;
        c->signed_order = true;
        if (lg != 0)
            unsupported(c, phys, ann);
        return;
    case PQ_BYTE_ARRAY:
        c->col.type = ST_T_STRING;
        if (lg == PQ_LT_STRING || lg == PQ_LT_ENUM || lg == PQ_LT_JSON)
            return;
        if (lg == 0 && (e->converted == PQ_CT_UTF8 || e->converted == PQ_CT_ENUM ||
                        e->converted == PQ_CT_JSON))
            return;
        unsupported(c, phys, ann[0] ? ann : "(binary, not UTF-8 text)");
        return;
    default:
        c->col.type = ST_T_STRING;
        unsupported(c, phys, ann);
        return;
    }
}

struct walk {
    struct pq_reader *r;
    uint32_t next;
    size_t cap;
    struct st_err *err;
};

static int walk_schema(struct walk *w, int depth, const char *prefix, int def, int rep)
{
    struct pq__filemeta *m = &w->r->m;
    if (w->next >= m->nschema)
        return st_errf(w->err, ST_ECORRUPT,
                       "footer: schema has fewer elements than its groups claim");
    if (depth > PQ_SCHEMA_DEPTH_MAX)
        return st_errf(w->err, ST_EUNSUPPORTED, "footer: schema nested deeper than %d",
                       PQ_SCHEMA_DEPTH_MAX);
    uint32_t idx = w->next++;
    const struct pq__schema_el *e = &m->schema[idx];
    if (e->repetition == PQ_OPTIONAL) {
        def++;
    } else if (e->repetition == PQ_REPEATED) {
        def++;
        rep++;
    } else if (e->repetition != PQ_REQUIRED) {
        return st_errf(w->err, ST_ECORRUPT, "footer: schema element %u has repetition %d", idx,
                       (int)e->repetition);
    }
    char name[ST_NAME_MAX + 1];
    size_t nlen = e->name.n;
    bool bad_name = nlen > ST_NAME_MAX || nlen == 0 || memchr(e->name.p, 0, nlen) != NULL;
    if (nlen > ST_NAME_MAX)
        nlen = ST_NAME_MAX;
    memcpy(name, e->name.p, nlen);
    name[nlen] = '\0';
    char *path = prefix[0] ? xasprintf("%s.%.*s", prefix, (int)e->name.n, (const char *)e->name.p)
                           : xasprintf("%.*s", (int)e->name.n, (const char *)e->name.p);

    if (e->type < 0 || e->num_children > 0) {
        if (e->type >= 0) {
            free(path);
            return st_errf(w->err, ST_ECORRUPT, "footer: schema element %u is a typed group", idx);
        }
        int rc = ST_OK;
        for (int32_t i = 0; i < e->num_children && rc == ST_OK; i++)
            rc = walk_schema(w, depth + 1, path, def, rep);
        free(path);
        return rc;
    }
    if (e->type > PQ_FIXED_LEN_BYTE_ARRAY) {
        free(path);
        return st_errf(w->err, ST_ECORRUPT, "footer: schema element %u has physical type %d", idx,
                       (int)e->type);
    }
    struct pq_reader *r = w->r;
    r->cols = grow(r->cols, &w->cap, (size_t)r->ncols + 1, sizeof *r->cols);
    struct rcol *c = &r->cols[r->ncols++];
    memset(c, 0, sizeof *c);
    c->path = path;
    snprintf(c->col.name, sizeof c->col.name, "%s", depth == 1 ? name : path);
    c->col.required = def == 0;
    c->col.field_id = e->field_id > 0 ? e->field_id : 0;
    c->phys = e->type;
    c->type_length = e->type == PQ_FIXED_LEN_BYTE_ARRAY ? e->type_length : -1;
    c->max_def = def;
    c->max_rep = rep;
    c->schema_idx = (int)idx;
    map_type(c, e);
    if (c->unsupported == NULL) {
        if (depth != 1)
            snprintf(c->reason, sizeof c->reason, "nested column (inside group '%s')", prefix);
        else if (rep > 0)
            snprintf(c->reason, sizeof c->reason, "repeated column");
        else if (bad_name)
            snprintf(c->reason, sizeof c->reason,
                     "column name is empty, longer than %d bytes or "
                     "holds NUL",
                     ST_NAME_MAX);
        if (depth != 1 || rep > 0 || bad_name)
            c->unsupported = c->reason;
    }
    if (e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length < 0) {
        return st_errf(w->err, ST_ECORRUPT, "footer: column '%s' has no type_length", c->path);
    }
    return ST_OK;
}

static int chunk_start(const struct pq__chunk *ch, int64_t *start)
{
    int64_t s = ch->data_page_offset;
    if (ch->dict_page_offset > 0 && ch->dict_page_offset < s)
        s = ch->dict_page_offset;
    *start = s;
    return ST_OK;
}

#ifndef NDEBUG
/*
 * What validate() established and the rest of the reader relies on without
 * checking again (debug builds, once per open): every row group has one
 * chunk per leaf column, of the leaf's physical type; a chunk that holds
 * rows lies in the data area; row groups' first rows are the running sums
 * of their counts; a column's levels fit the schema's depth.
 */
static void check_validated(const struct pq_reader *r)
{
    const struct pq__filemeta *m = &r->m;
    assert(r->ncols >= 0 && r->data_end <= r->file_size && r->rg_first != NULL);
    for (int i = 0; i < r->ncols; i++) {
        const struct rcol *c = &r->cols[i];
        assert(c->schema_idx > 0 && (uint32_t)c->schema_idx < m->nschema);
        assert(c->phys >= PQ_BOOLEAN && c->phys <= PQ_FIXED_LEN_BYTE_ARRAY);
        assert(c->max_def >= 0 && c->max_def <= PQ_SCHEMA_DEPTH_MAX + 1 &&
               c->max_rep <= c->max_def);
        assert(c->col.required == (c->max_def == 0));
    }
    uint64_t first = 0;
    for (uint32_t g = 0; g < m->nrgs; g++) {
        const struct pq__rowgroup *rg = &m->rgs[g];
        assert(rg->ncols == (uint32_t)r->ncols && rg->num_rows >= 0 && r->rg_first[g] == first);
        first += (uint64_t)rg->num_rows;
        for (int i = 0; i < r->ncols; i++) {
            const struct pq__chunk *ch = &rg->cols[i];
            assert(ch->has_meta && !ch->has_file_path && ch->type == r->cols[i].phys);
            assert(ch->num_values >= 0 && ch->total_compressed >= 0);
            int64_t start;
            chunk_start(ch, &start);
            assert((rg->num_rows == 0 && ch->total_compressed == 0) ||
                   (start >= 4 && (uint64_t)start <= r->data_end &&
                    (uint64_t)ch->total_compressed <= r->data_end - (uint64_t)start));
        }
    }
    assert(first == (uint64_t)m->num_rows);
}
#endif

static int validate(struct pq_reader *r, struct st_err *err)
{
    struct pq__filemeta *m = &r->m;
    if (m->encrypted)
        return st_errf(err, ST_EUNSUPPORTED, "encrypted Parquet files are not supported");
    if (m->nschema == 0)
        return st_errf(err, ST_ECORRUPT, "footer: empty schema");
    const struct pq__schema_el *root = &m->schema[0];
    if (root->type >= 0 || root->num_children < 0)
        return st_errf(err, ST_ECORRUPT, "footer: the schema root is not a group");
    struct walk w = {r, 1, 0, err};
    for (int32_t i = 0; i < root->num_children; i++) {
        int rc = walk_schema(&w, 1, "", 0, 0);
        if (rc != ST_OK)
            return rc;
    }
    if (w.next != m->nschema)
        return st_errf(err, ST_ECORRUPT, "footer: schema has %u elements, its groups hold %u",
                       m->nschema, w.next);
    if (m->num_rows < 0)
        return st_errf(err, ST_ECORRUPT, "footer: negative num_rows");
    r->rg_first = xcalloc(m->nrgs ? m->nrgs : 1, sizeof *r->rg_first);
    uint64_t total = 0;
    for (uint32_t g = 0; g < m->nrgs; g++) {
        struct pq__rowgroup *rg = &m->rgs[g];
        if (rg->num_rows < 0 || (uint64_t)rg->num_rows > (uint64_t)INT64_MAX - total)
            return st_errf(err, ST_ECORRUPT, "footer: row group %u has a bad row count", g);
        r->rg_first[g] = total;
        total += (uint64_t)rg->num_rows;
        if (rg->ncols != (uint32_t)r->ncols)
            return st_errf(err, ST_ECORRUPT,
                           "footer: row group %u has %u column chunks for %d "
                           "columns",
                           g, rg->ncols, r->ncols);
        for (int i = 0; i < r->ncols; i++) {
            struct pq__chunk *ch = &rg->cols[i];
            struct rcol *c = &r->cols[i];
            if (ch->has_file_path)
                return st_errf(err, ST_EUNSUPPORTED,
                               "column '%s' row group %u: data in another "
                               "file (file_path) is not supported",
                               c->path, g);
            if (!ch->has_meta)
                return st_errf(err, ST_ECORRUPT, "column '%s' row group %u: no column metadata",
                               c->path, g);
            if (ch->type != c->phys)
                return st_errf(err, ST_ECORRUPT,
                               "column '%s' row group %u: chunk type %s, schema "
                               "type %s",
                               c->path, g, physical_name(ch->type), physical_name(c->phys));
            /* path_in_schema must name this leaf */
            const char *p = c->path;
            size_t left = strlen(p);
            bool ok = ch->npath > 0;
            for (uint32_t k = 0; k < ch->npath && ok; k++) {
                size_t n = ch->path[k].n;
                if (n > left || memcmp(p, ch->path[k].p, n) != 0) {
                    ok = false;
                    break;
                }
                p += n;
                left -= n;
                if (k + 1 < ch->npath) {
                    if (left == 0 || *p != '.') {
                        ok = false;
                        break;
                    }
                    p++;
                    left--;
                }
            }
            if (!ok || left != 0)
                return st_errf(err, ST_ECORRUPT,
                               "column '%s' row group %u: path_in_schema does "
                               "not name the column",
                               c->path, g);
            if (ch->num_values < 0 || ch->total_compressed < 0 || ch->total_uncompressed < 0)
                return st_errf(err, ST_ECORRUPT, "column '%s' row group %u: negative size or count",
                               c->path, g);
            int64_t start;
            chunk_start(ch, &start);
            if (rg->num_rows > 0 || ch->total_compressed > 0) {
                if (start < 4 || (uint64_t)start > r->data_end ||
                    (uint64_t)ch->total_compressed > r->data_end - (uint64_t)start)
                    return st_errf(err, ST_ECORRUPT,
                                   "column '%s' row group %u: chunk at offset "
                                   "%lld size %lld lies outside the data (%llu bytes)",
                                   c->path, g, (long long)start, (long long)ch->total_compressed,
                                   (unsigned long long)r->data_end);
            }
        }
    }
    if (total != (uint64_t)m->num_rows)
        return st_errf(err, ST_ECORRUPT, "footer: num_rows is %lld but the row groups hold %llu",
                       (long long)m->num_rows, (unsigned long long)total);
    /* NUL-terminated copies of the key/value metadata and created_by */
    r->kv_keys = xcalloc(m->nkv ? m->nkv : 1, sizeof *r->kv_keys);
    r->kv_vals = xcalloc(m->nkv ? m->nkv : 1, sizeof *r->kv_vals);
    for (uint32_t i = 0; i < m->nkv; i++) {
        r->kv_keys[i] = xstrndup((const char *)m->kv[i].key.p, m->kv[i].key.n);
        r->kv_vals[i] =
            m->kv[i].has_value ? xstrndup((const char *)m->kv[i].value.p, m->kv[i].value.n) : NULL;
    }
    if (m->has_created_by)
        r->created_by = xstrndup((const char *)m->created_by.p, m->created_by.n);
    ST_DEBUG_CHECK(check_validated(r));
    return ST_OK;
}

static int open_common(struct pq_reader *r, const uint8_t *tail8, struct st_err *err)
{
    if (r->file_size < 12)
        return st_errf(err, ST_ECORRUPT, "not a Parquet file: %llu bytes",
                       (unsigned long long)r->file_size);
    if (memcmp(tail8 + 4, "PARE", 4) == 0)
        return st_errf(err, ST_EUNSUPPORTED, "encrypted Parquet files (PARE) are not supported");
    if (memcmp(tail8 + 4, "PAR1", 4) != 0)
        return st_errf(err, ST_ECORRUPT, "not a Parquet file: no PAR1 magic at the end");
    uint32_t flen = ld_u32le(tail8);
    if (flen > PQ_FOOTER_MAX || flen > r->file_size - 12)
        return st_errf(err, ST_ECORRUPT, "footer length %u does not fit in a %llu-byte file", flen,
                       (unsigned long long)r->file_size);
    r->data_end = r->file_size - 8 - flen;
    return ST_OK;
}

static struct pq_reader *reader_new(void)
{
    struct pq_reader *r = xcalloc(1, sizeof *r);
    r->max_rows = PQ_DEFAULT_MAX_BATCH_ROWS;
    r->max_bytes = PQ_DEFAULT_MAX_BATCH_BYTES;
    r->max_page = PQ_PAGE_MAX;
    r->dec.max_bytes = r->max_bytes;
    r->dec.max_page = r->max_page;
    r->threads = pq__threads_default();
    r->ah.r = r;
    return r;
}

int pq_reader_open_mem(const uint8_t *p, size_t n, struct pq_reader **out, struct st_err *err)
{
    *out = NULL;
    struct pq_reader *r = reader_new();
    r->mem = p;
    r->file_size = n;
    int rc = n >= 12 ? open_common(r, p + n - 8, err)
                     : st_errf(err, ST_ECORRUPT, "not a Parquet file: %zu bytes", n);
    if (rc == ST_OK && memcmp(p, "PAR1", 4) != 0)
        rc = st_errf(err, ST_ECORRUPT, "not a Parquet file: no PAR1 magic at the start");
    if (rc == ST_OK)
        rc = pq__filemeta_decode(p + r->data_end, (size_t)(n - 8 - r->data_end), r->data_end, &r->m,
                                 err);
    if (rc == ST_OK)
        rc = validate(r, err);
    if (rc != ST_OK) {
        pq_reader_close(r);
        return rc;
    }
    *out = r;
    return ST_OK;
}

int pq_reader_open_source(const struct pq_source *src, struct pq_reader **out, struct st_err *err)
{
    *out = NULL;
    struct pq_reader *r = reader_new();
    r->src = *src;
    r->file_size = src->size;
    uint8_t tail[8], head[4];
    int rc = ST_OK;
    if (r->file_size < 12)
        rc = st_errf(err, ST_ECORRUPT, "not a Parquet file: %llu bytes",
                     (unsigned long long)r->file_size);
    if (rc == ST_OK)
        rc = src->read_at(src->ctx, tail, 8, r->file_size - 8, err);
    if (rc == ST_OK)
        rc = src->read_at(src->ctx, head, 4, 0, err);
    if (rc == ST_OK)
        rc = open_common(r, tail, err);
    if (rc == ST_OK && memcmp(head, "PAR1", 4) != 0)
        rc = st_errf(err, ST_ECORRUPT, "not a Parquet file: no PAR1 magic at the start");
    if (rc == ST_OK) {
        size_t flen = (size_t)(r->file_size - 8 - r->data_end);
        r->footer_owned = xmalloc(flen ? flen : 1);
        rc = src->read_at(src->ctx, r->footer_owned, flen, r->data_end, err);
        if (rc == ST_OK)
            rc = pq__filemeta_decode(r->footer_owned, flen, r->data_end, &r->m, err);
    }
    if (rc == ST_OK)
        rc = validate(r, err);
    if (rc != ST_OK) {
        pq_reader_close(r);
        return rc;
    }
    *out = r;
    return ST_OK;
}

static int fd_read_at(void *ctx, void *dst, size_t n, uint64_t off, struct st_err *err)
{
    return st_pread_full((int)(intptr_t)ctx, dst, n, off, err);
}

static void fd_close(void *ctx)
{
    close((int)(intptr_t)ctx);
}

int pq_reader_open(const char *path, struct pq_reader **out, struct st_err *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return st_errf(err, errno == ENOENT ? ST_ENOTFOUND : ST_EIO, "cannot open %s: %s", path,
                       strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return st_errf(err, ST_EIO, "cannot stat %s: %s", path, strerror(e));
    }
    struct pq_source src = {.ctx = (void *)(intptr_t)fd,
                            .size = (uint64_t)st.st_size,
                            .read_at = fd_read_at,
                            .close = fd_close};
    int rc = pq_reader_open_source(&src, out, err);
    if (rc != ST_OK)
        st_err_prefix(err, "%s", path);
    return rc;
}

static void dec_free(struct pq__dec *d)
{
    buf_free(&d->chunk);
    free(d->page);
    free(d->defs);
    free(d->u32);
    free(d->i64);
    free(d->dict_vals);
    free(d->dict_offs);
    buf_free(&d->dict_sdata);
    ZSTD_freeDCtx(d->zstd);
}

/* Stop the helper (after its job, if one runs) and free what read-ahead holds. */
static void ahead_free(struct pq__ahead *a)
{
    pq__worker_stop(a->worker);
    a->worker = NULL;
    a->active = false;
    free(a->cols);
    buf_free(&a->bytes);
    free(a->boff);
    pq_batch_free(&a->b);
    dec_free(&a->dec);
}

void pq_reader_close(struct pq_reader *r)
{
    if (r == NULL)
        return;
    /* first the helper: a read-ahead job still running reads the columns,
       the metadata and the mapped file that the rest frees */
    ahead_free(&r->ah);
    if (r->src.close != NULL)
        r->src.close(r->src.ctx);
    for (int i = 0; i < r->ncols; i++)
        free(r->cols[i].path);
    free(r->cols);
    for (uint32_t i = 0; r->kv_keys != NULL && i < r->m.nkv; i++) {
        free(r->kv_keys[i]);
        free(r->kv_vals[i]);
    }
    free(r->kv_keys);
    free(r->kv_vals);
    free(r->created_by);
    free(r->rg_first);
    pq__filemeta_free(&r->m);
    free(r->footer_owned);
    dec_free(&r->dec);
    free(r);
}

void pq__reader_set_limits(struct pq_reader *r, uint64_t max_batch_rows, uint64_t max_batch_bytes,
                           uint64_t max_page)
{
    r->max_rows = max_batch_rows;
    r->max_bytes = max_batch_bytes;
    r->max_page = max_page < PQ_PAGE_MAX ? max_page : PQ_PAGE_MAX;
    r->dec.max_bytes = r->max_bytes;
    r->dec.max_page = r->max_page;
}

void pq__reader_set_ahead_step(struct pq_reader *r, int step)
{
    r->ahead_step = step;
}

uint64_t pq__reader_ahead_taken(const struct pq_reader *r)
{
    return r->ahead_taken;
}

void pq_reader_set_threads(struct pq_reader *r, int threads)
{
    if (threads <= 0)
        threads = pq__threads_default();
    if (threads == 1 && r->ah.worker != NULL) {
        if (r->ah.active)
            pq__worker_wait(r->ah.worker);
        r->ah.active = false;
    }
    r->threads = threads;
}

/* ---- accessors ---- */

uint64_t pq_num_rows(const struct pq_reader *r)
{
    return (uint64_t)r->m.num_rows;
}

uint64_t pq_file_size(const struct pq_reader *r)
{
    return r->file_size;
}

int pq_ncols(const struct pq_reader *r)
{
    return r->ncols;
}

const struct st_column *pq_column(const struct pq_reader *r, int i)
{
    assert(i >= 0 && i < r->ncols);
    return &r->cols[i].col;
}

const char *pq_column_unsupported(const struct pq_reader *r, int i)
{
    assert(i >= 0 && i < r->ncols);
    return r->cols[i].unsupported;
}

int pq_find_column(const struct pq_reader *r, const char *name)
{
    for (int i = 0; i < r->ncols; i++)
        if (strcmp(r->cols[i].path, name) == 0)
            return i;
    return -1;
}

int pq_num_row_groups(const struct pq_reader *r)
{
    return (int)r->m.nrgs;
}

void pq_row_group(const struct pq_reader *r, int rg, uint64_t *first_row, uint64_t *nrows)
{
    assert(rg >= 0 && (uint32_t)rg < r->m.nrgs);
    *first_row = r->rg_first[rg];
    *nrows = (uint64_t)r->m.rgs[rg].num_rows;
}

const char *pq_kv(const struct pq_reader *r, const char *key)
{
    for (uint32_t i = 0; i < r->m.nkv; i++)
        if (strcmp(r->kv_keys[i], key) == 0 && strlen(key) == r->m.kv[i].key.n)
            return r->kv_vals[i];
    return NULL;
}

int pq_kv_count(const struct pq_reader *r)
{
    return (int)r->m.nkv;
}

void pq_kv_at(const struct pq_reader *r, int i, const char **key, const char **value)
{
    assert(i >= 0 && (uint32_t)i < r->m.nkv);
    *key = r->kv_keys[i];
    *value = r->kv_vals[i];
}

const char *pq_created_by(const struct pq_reader *r)
{
    return r->created_by;
}

void pq_reader_counters(const struct pq_reader *r, struct pq_read_counters *out)
{
    *out = r->dec.counters;
}

void pq_column_info(const struct pq_reader *r, int i, struct pq_column_info *out)
{
    assert(i >= 0 && i < r->ncols);
    const struct rcol *c = &r->cols[i];
    const struct pq__schema_el *e = &r->m.schema[c->schema_idx];
    memset(out, 0, sizeof *out);
    out->path = c->path;
    out->physical = physical_name(c->phys);
    out->converted = converted_name(e->converted);
    logical_desc(e, out->logical, sizeof out->logical);
    out->repetition = e->repetition == PQ_REQUIRED   ? "required"
                      : e->repetition == PQ_OPTIONAL ? "optional"
                                                     : "repeated";
    out->max_def = c->max_def;
    out->max_rep = c->max_rep;
    out->type_length = c->type_length;
}

void pq_chunk_info(const struct pq_reader *r, int rg, int col, struct pq_chunk_info *out)
{
    assert(rg >= 0 && (uint32_t)rg < r->m.nrgs && col >= 0 && col < r->ncols);
    const struct pq__chunk *ch = &r->m.rgs[rg].cols[col];
    memset(out, 0, sizeof *out);
    out->codec = pq_codec_name(ch->codec);
    size_t n = 0;
    for (int e = 0; e < 32; e++) {
        if (!(ch->encodings & (1u << e)))
            continue;
        int k = snprintf(out->encodings + n, sizeof out->encodings - n, "%s%s", n ? "," : "",
                         pq_encoding_name(e));
        if (k < 0 || (size_t)k >= sizeof out->encodings - n)
            break;
        n += (size_t)k;
    }
    out->num_values = ch->num_values;
    out->total_compressed_size = ch->total_compressed;
    out->total_uncompressed_size = ch->total_uncompressed;
    out->data_page_offset = ch->data_page_offset;
    out->dictionary_page_offset = ch->dict_page_offset;
}

/* ---- statistics ---- */

static bool conv_i64(int conv, int64_t v, int64_t *out)
{
    switch (conv) {
    case CV_MILLIS:
        return !__builtin_mul_overflow(v, (int64_t)1000, out);
    case CV_NANOS:
        *out = v / 1000 - (v % 1000 < 0);
        return true;
    default:
        *out = v;
        return true;
    }
}

static bool int96_micros(const uint8_t *p, int64_t *out)
{
    int64_t nanos = (int64_t)ld_u64le(p);
    int64_t day = (int32_t)ld_u32le(p + 8);
    int64_t us;
    if (__builtin_mul_overflow(day - 2440588, (int64_t)86400000000, &us))
        return false;
    int64_t nus = nanos / 1000 - (nanos % 1000 < 0);
    return !__builtin_add_overflow(us, nus, out);
}

static bool stat_value(const struct rcol *c, const struct pq__str *s, struct st_value *v)
{
    memset(v, 0, sizeof *v);
    switch (c->phys) {
    case PQ_BOOLEAN:
        if (s->n < 1)
            return false;
        v->v.b = (s->p[0] & 1) != 0;
        return true;
    case PQ_INT32:
        if (s->n != 4)
            return false;
        if (c->conv == CV_U32)
            v->v.l = (int64_t)ld_u32le(s->p);
        else
            v->v.i = (int32_t)ld_u32le(s->p);
        return true;
    case PQ_INT64:
        if (s->n != 8)
            return false;
        return conv_i64(c->conv, (int64_t)ld_u64le(s->p), &v->v.l);
    case PQ_FLOAT: {
        if (s->n != 4)
            return false;
        float f;
        memcpy(&f, s->p, 4);
        v->v.d = f;
        return v->v.d == v->v.d;
    }
    case PQ_DOUBLE:
        if (s->n != 8)
            return false;
        memcpy(&v->v.d, s->p, 8);
        return v->v.d == v->v.d;
    case PQ_BYTE_ARRAY:
        v->v.s.p = (const char *)s->p;
        v->v.s.len = s->n;
        return true;
    default:
        return false;
    }
}

bool pq_row_group_stats(const struct pq_reader *r, int rg, int col, struct pq_col_stats *out)
{
    assert(rg >= 0 && (uint32_t)rg < r->m.nrgs && col >= 0 && col < r->ncols);
    memset(out, 0, sizeof *out);
    const struct pq__chunk *ch = &r->m.rgs[rg].cols[col];
    const struct rcol *c = &r->cols[col];
    if (!ch->has_stats)
        return false;
    const struct pq__stats *s = &ch->stats;
    out->has_null_count = s->has_null_count;
    out->null_count = s->has_null_count ? (uint64_t)s->null_count : 0;
    if (c->phys == PQ_FLOAT || c->phys == PQ_DOUBLE) {
        out->has_nan_count = s->has_nan_count;
        out->nan_count = s->has_nan_count ? (uint64_t)s->nan_count : 0;
    }
    if (c->unsupported != NULL || c->conv == CV_INT96)
        return true;
    int order = r->m.has_orders && (uint32_t)col < r->m.norders ? r->m.orders[col] : 0;
    const struct pq__str *mn = NULL, *mx = NULL;
    if (s->has_min_value && s->has_max_value &&
        (order == PQ_ORDER_TYPE || (!r->m.has_orders && c->col.type != ST_T_STRING))) {
        mn = &s->min_value;
        mx = &s->max_value;
    } else if (s->has_min && s->has_max && c->signed_order) {
        /* deprecated fields: signed order, which is the order of these types */
        mn = &s->min;
        mx = &s->max;
    }
    if (mn == NULL)
        return true;
    struct st_value lo, hi;
    if (!stat_value(c, mn, &lo) || !stat_value(c, mx, &hi))
        return true;
    if (c->col.type == ST_T_DOUBLE) {
        /* a zero bound may stand for either sign */
        if (lo.v.d == 0)
            lo.v.d = -0.0;
        if (hi.v.d == 0)
            hi.v.d = 0.0;
    }
    if (st_value_cmp(c->col.type, &lo, &hi) > 0)
        return true; /* inconsistent: no bounds */
    out->has_minmax = true;
    out->min = lo;
    out->max = hi;
    return true;
}

/* ---- batches ---- */

void pq_batch_free(struct pq_batch *b)
{
    if (b == NULL)
        return;
    for (int i = 0; i < b->mem_cap_; i++) {
        free(b->mem_[i].vals);
        free(b->mem_[i].nulls);
        free(b->mem_[i].offs);
        buf_free(&b->mem_[i].sdata);
    }
    free(b->mem_);
    free(b->cols);
    memset(b, 0, sizeof *b);
}

/* ---- page decoding ---- */

/* What one chunk decode writes into. */
struct target {
    const struct rcol *c;
    struct pq__vecmem *mem;
    size_t nrows; /* rows of the row group */
    size_t row;   /* rows decoded so far */
    bool any_null;
    const char *name;
};

#define CORRUPT(err, ...) st_errf((err), ST_ECORRUPT, __VA_ARGS__)

/* Append one string (checked) to sd; *end is its end offset. */
static inline int put_string(struct pq__dec *r, struct buf *sd, const uint8_t *p, size_t n,
                             uint32_t *end, struct st_err *err)
{
    if (n > ST_STRING_MAX)
        return st_errf(err, ST_EUNSUPPORTED, "string value of %zu bytes (strike allows %u)", n,
                       ST_STRING_MAX);
    if (n > r->max_bytes || sd->len > r->max_bytes - n || sd->len + n > UINT32_MAX)
        return st_errf(err, ST_ETOOBIG, "strings of one column pass %llu bytes in a row group",
                       (unsigned long long)r->max_bytes);
    if (!pq__utf8_valid(p, n))
        return CORRUPT(err, "string value is not UTF-8 or holds U+0000");
    buf_append(sd, p, n);
    *end = (uint32_t)sd->len;
    return ST_OK;
}

/* PLAIN strings: k values into sd, ends[j] the end of value j. */
static int plain_strings(struct pq__dec *r, const uint8_t *p, const uint8_t *end, size_t k,
                         struct buf *sd, uint32_t *ends, struct st_err *err)
{
    for (size_t j = 0; j < k; j++) {
        if (end - p < 4)
            return CORRUPT(err, "PLAIN strings: value %zu of %zu runs past the page", j, k);
        uint32_t n = ld_u32le(p);
        p += 4;
        if (n > (size_t)(end - p))
            return CORRUPT(err, "PLAIN strings: value %zu length %u runs past the page", j, n);
        int rc = put_string(r, sd, p, n, &ends[j], err);
        if (rc != ST_OK)
            return rc;
        p += n;
    }
    return ST_OK;
}

/* PLAIN fixed-width values: k values as the column's strike type into dst. */
static int plain_fixed(const struct rcol *c, const uint8_t *p, const uint8_t *end, size_t k,
                       uint8_t *dst, struct st_err *err)
{
    size_t have = (size_t)(end - p);
    switch (c->phys) {
    case PQ_BOOLEAN: {
        if (have < (k + 7) / 8)
            return CORRUPT(err, "PLAIN booleans: %zu values need %zu bytes, page has %zu", k,
                           (k + 7) / 8, have);
        for (size_t j = 0; j < k; j++)
            dst[j] = (p[j >> 3] >> (j & 7)) & 1;
        return ST_OK;
    }
    case PQ_INT32:
        if (have / 4 < k)
            return CORRUPT(err, "PLAIN INT32: %zu values, page has %zu bytes", k, have);
        if (c->conv == CV_U32) {
            int64_t *o = (int64_t *)(void *)dst;
            for (size_t j = 0; j < k; j++)
                o[j] = (int64_t)ld_u32le(p + 4 * j);
        } else {
            memcpy(dst, p, 4 * k);
        }
        return ST_OK;
    case PQ_INT64:
        if (have / 8 < k)
            return CORRUPT(err, "PLAIN INT64: %zu values, page has %zu bytes", k, have);
        memcpy(dst, p, 8 * k);
        if (c->conv != CV_NONE) {
            int64_t *o = (int64_t *)(void *)dst;
            for (size_t j = 0; j < k; j++)
                if (!conv_i64(c->conv, o[j], &o[j]))
                    return st_errf(err, ST_EUNSUPPORTED, "timestamp %lld ms is out of range",
                                   (long long)o[j]);
        }
        return ST_OK;
    case PQ_INT96: {
        if (have / 12 < k)
            return CORRUPT(err, "PLAIN INT96: %zu values, page has %zu bytes", k, have);
        int64_t *o = (int64_t *)(void *)dst;
        for (size_t j = 0; j < k; j++)
            if (!int96_micros(p + 12 * j, &o[j]))
                return st_errf(err, ST_EUNSUPPORTED, "INT96 timestamp out of range");
        return ST_OK;
    }
    case PQ_FLOAT: {
        if (have / 4 < k)
            return CORRUPT(err, "PLAIN FLOAT: %zu values, page has %zu bytes", k, have);
        double *o = (double *)(void *)dst;
        for (size_t j = 0; j < k; j++) {
            float f;
            memcpy(&f, p + 4 * j, 4);
            o[j] = f;
        }
        return ST_OK;
    }
    case PQ_DOUBLE:
        if (have / 8 < k)
            return CORRUPT(err, "PLAIN DOUBLE: %zu values, page has %zu bytes", k, have);
        memcpy(dst, p, 8 * k);
        return ST_OK;
    default:
        return st_errf(err, ST_EUNSUPPORTED, "PLAIN %s", physical_name(c->phys));
    }
}

/* Convert k int64 values from a delta stream into the column's type. */
static int from_i64(const struct rcol *c, const int64_t *v, size_t k, uint8_t *dst,
                    struct st_err *err)
{
    if (c->phys == PQ_INT32) {
        if (c->conv == CV_U32) {
            int64_t *o = (int64_t *)(void *)dst;
            for (size_t j = 0; j < k; j++)
                o[j] = (int64_t)(uint32_t)v[j];
        } else {
            int32_t *o = (int32_t *)(void *)dst;
            for (size_t j = 0; j < k; j++)
                o[j] = (int32_t)(uint32_t)v[j];
        }
        return ST_OK;
    }
    int64_t *o = (int64_t *)(void *)dst;
    for (size_t j = 0; j < k; j++)
        if (!conv_i64(c->conv, v[j], &o[j]))
            return st_errf(err, ST_EUNSUPPORTED, "timestamp %lld ms is out of range",
                           (long long)v[j]);
    return ST_OK;
}

static int byte_stream_split(const struct rcol *c, const uint8_t *p, size_t have, size_t k,
                             uint8_t *dst, struct st_err *err)
{
    size_t w = c->phys == PQ_INT32 || c->phys == PQ_FLOAT ? 4 : 8;
    if (c->phys != PQ_INT32 && c->phys != PQ_FLOAT && c->phys != PQ_INT64 && c->phys != PQ_DOUBLE)
        return st_errf(err, ST_EUNSUPPORTED, "BYTE_STREAM_SPLIT for %s", physical_name(c->phys));
    if (have != w * k)
        return CORRUPT(err, "BYTE_STREAM_SPLIT: %zu bytes for %zu values of %zu bytes", have, k, w);
    for (size_t j = 0; j < k; j++) {
        uint8_t v[8];
        for (size_t s = 0; s < w; s++)
            v[s] = p[s * k + j];
        switch (c->phys) {
        case PQ_INT32:
            if (c->conv == CV_U32)
                ((int64_t *)(void *)dst)[j] = (int64_t)ld_u32le(v);
            else
                memcpy(dst + 4 * j, v, 4);
            break;
        case PQ_FLOAT: {
            float f;
            memcpy(&f, v, 4);
            ((double *)(void *)dst)[j] = f;
            break;
        }
        case PQ_INT64: {
            int64_t x = (int64_t)ld_u64le(v);
            if (!conv_i64(c->conv, x, &((int64_t *)(void *)dst)[j]))
                return st_errf(err, ST_EUNSUPPORTED, "timestamp %lld ms is out of range",
                               (long long)x);
            break;
        }
        default:
            memcpy(dst + 8 * j, v, 8);
        }
    }
    return ST_OK;
}

/* Load the dictionary page's n values (PLAIN). */
static int load_dict(struct pq__dec *r, const struct rcol *c, const uint8_t *p, const uint8_t *end,
                     size_t n, struct st_err *err)
{
    /* Every value takes bytes of the page: bound n before allocating for it. */
    size_t have = (size_t)(end - p);
    size_t pw = c->phys == PQ_BOOLEAN                        ? 0
                : c->phys == PQ_INT32 || c->phys == PQ_FLOAT ? 4
                : c->phys == PQ_INT96                        ? 12
                : c->phys == PQ_BYTE_ARRAY                   ? 4
                                                             : 8;
    if ((pw == 0 && n > have * 8) || (pw > 0 && n > have / pw))
        return CORRUPT(err, "dictionary of %zu values in a %zu-byte page", n, have);
    r->dict_n = 0;
    if (c->col.type == ST_T_STRING) {
        buf_reset(&r->dict_sdata);
        r->dict_offs = grow(r->dict_offs, &r->dict_offs_cap, n + 1, sizeof *r->dict_offs);
        r->dict_offs[0] = 0;
        int rc = plain_strings(r, p, end, n, &r->dict_sdata, r->dict_offs + 1, err);
        if (rc != ST_OK)
            return st_err_prefix(err, "dictionary page");
    } else {
        size_t w = st_type_width(c->col.type);
        r->dict_vals = grow(r->dict_vals, &r->dict_vals_cap, n * w + 1, 1);
        int rc = plain_fixed(c, p, end, n, r->dict_vals, err);
        if (rc != ST_OK)
            return st_err_prefix(err, "dictionary page");
    }
    r->dict_n = n;
    return ST_OK;
}

/* Dictionary-encoded values: bit width byte, then k RLE/bit-packed indices. */
static int dict_values(struct pq__dec *r, struct target *t, const uint8_t *p, const uint8_t *end,
                       size_t k, uint8_t *dst, uint32_t *ends, bool have_dict, struct st_err *err)
{
    if (!have_dict)
        return CORRUPT(err, "dictionary-encoded page without a dictionary page");
    if (k == 0)
        return ST_OK;
    if (p >= end)
        return CORRUPT(err, "dictionary indices: empty page");
    int bw = *p++;
    if (bw > 32)
        return CORRUPT(err, "dictionary indices: bit width %d", bw);
    r->u32 = grow(r->u32, &r->u32_cap, k, sizeof *r->u32);
    struct pq__rle d;
    pq__rle_init(&d, p, end, bw);
    if (pq__rle_get(&d, r->u32, NULL, k) != ST_OK)
        return CORRUPT(err, "dictionary indices: truncated or corrupt RLE/bit-packed data");
    const uint32_t *ix = r->u32;
    size_t dn = r->dict_n;
    for (size_t j = 0; j < k; j++)
        if (ix[j] >= dn)
            return CORRUPT(err, "dictionary index %u out of range (dictionary has %zu values)",
                           ix[j], dn);
    /* every index is checked: the loops below read the dictionary unchecked */
    assert(t->c->col.type == ST_T_STRING ? r->dict_offs != NULL : r->dict_vals != NULL);
    switch (t->c->col.type) {
    case ST_T_BOOLEAN:
        for (size_t j = 0; j < k; j++)
            dst[j] = r->dict_vals[ix[j]];
        break;
    case ST_T_INT: {
        int32_t *o = (int32_t *)(void *)dst;
        const int32_t *dv = (const int32_t *)(const void *)r->dict_vals;
        for (size_t j = 0; j < k; j++)
            o[j] = dv[ix[j]];
        break;
    }
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
    case ST_T_DOUBLE: {
        uint64_t *o = (uint64_t *)(void *)dst;
        const uint64_t *dv = (const uint64_t *)(const void *)r->dict_vals;
        for (size_t j = 0; j < k; j++)
            o[j] = dv[ix[j]];
        break;
    }
    case ST_T_STRING: {
        struct buf *sd = &t->mem->sdata;
        const uint32_t *doffs = r->dict_offs;
        const uint8_t *ddata = r->dict_sdata.data;
        for (size_t j = 0; j < k; j++) {
            uint32_t a = doffs[ix[j]], n = doffs[ix[j] + 1] - a;
            if (n > r->max_bytes || sd->len > r->max_bytes - n || sd->len + n > UINT32_MAX)
                return st_errf(err, ST_ETOOBIG,
                               "strings of one column pass %llu bytes in a "
                               "row group",
                               (unsigned long long)r->max_bytes);
            buf_append(sd, ddata + a, n);
            ends[j] = (uint32_t)sd->len;
        }
        break;
    }
    }
    return ST_OK;
}

/* DELTA_LENGTH_BYTE_ARRAY: k delta-coded lengths, then the bytes. */
static int delta_length_strings(struct pq__dec *r, struct buf *sd, const uint8_t *p,
                                const uint8_t *end, size_t k, uint32_t *ends, struct st_err *err)
{
    size_t nv, used;
    r->i64 = grow(r->i64, &r->i64_cap, k + 1, sizeof *r->i64);
    if (pq__delta_decode(p, (size_t)(end - p), r->i64, k, &nv, &used, 64) != ST_OK || nv < k)
        return CORRUPT(err, "DELTA_LENGTH_BYTE_ARRAY: corrupt lengths");
    p += used;
    for (size_t j = 0; j < k; j++) {
        int64_t n = r->i64[j];
        if (n < 0 || (uint64_t)n > (uint64_t)(end - p))
            return CORRUPT(err,
                           "DELTA_LENGTH_BYTE_ARRAY: value %zu length %lld runs past the "
                           "page",
                           j, (long long)n);
        int rc = put_string(r, sd, p, (size_t)n, &ends[j], err);
        if (rc != ST_OK)
            return rc;
        p += n;
    }
    return ST_OK;
}

/* DELTA_BYTE_ARRAY: prefix lengths, suffix lengths (both delta), suffix bytes. */
static int delta_strings(struct pq__dec *r, struct buf *sd, const uint8_t *p, const uint8_t *end,
                         size_t k, uint32_t *ends, struct st_err *err)
{
    size_t nv, used;
    r->i64 = grow(r->i64, &r->i64_cap, 2 * k + 2, sizeof *r->i64);
    int64_t *pre = r->i64, *suf = r->i64 + k + 1;
    if (pq__delta_decode(p, (size_t)(end - p), pre, k, &nv, &used, 64) != ST_OK || nv < k)
        return CORRUPT(err, "DELTA_BYTE_ARRAY: corrupt prefix lengths");
    p += used;
    if (pq__delta_decode(p, (size_t)(end - p), suf, k, &nv, &used, 64) != ST_OK || nv < k)
        return CORRUPT(err, "DELTA_BYTE_ARRAY: corrupt suffix lengths");
    p += used;
    size_t prev_start = sd->len, prev_len = 0;
    for (size_t j = 0; j < k; j++) {
        int64_t pl = pre[j], sl = suf[j];
        if (pl < 0 || (uint64_t)pl > prev_len || sl < 0 || (uint64_t)sl > (uint64_t)(end - p))
            return CORRUPT(err, "DELTA_BYTE_ARRAY: value %zu has prefix %lld suffix %lld", j,
                           (long long)pl, (long long)sl);
        size_t n = (size_t)pl + (size_t)sl;
        if (n > ST_STRING_MAX)
            return st_errf(err, ST_EUNSUPPORTED, "string value of %zu bytes (strike allows %u)", n,
                           ST_STRING_MAX);
        if (n > r->max_bytes || sd->len > r->max_bytes - n || sd->len + n > UINT32_MAX)
            return st_errf(err, ST_ETOOBIG, "strings of one column pass %llu bytes in a row group",
                           (unsigned long long)r->max_bytes);
        size_t start = sd->len;
        buf_reserve(sd, n);
        memmove(sd->data + start, sd->data + prev_start, (size_t)pl);
        memcpy(sd->data + start + pl, p, (size_t)sl);
        sd->len += n;
        if (!pq__utf8_valid(sd->data + start, n))
            return CORRUPT(err, "string value is not UTF-8 or holds U+0000");
        ends[j] = (uint32_t)sd->len;
        p += sl;
        prev_start = start;
        prev_len = n;
    }
    return ST_OK;
}

/* Decode k dense values of a data page with encoding `enc` into the target at t->row. */
static int decode_values(struct pq__dec *r, struct target *t, int enc, const uint8_t *p,
                         const uint8_t *end, size_t k, bool have_dict, struct st_err *err)
{
    const struct rcol *c = t->c;
    struct pq__vecmem *m = t->mem;
    size_t w = st_type_width(c->col.type);
    /* decode_chunk bounded the page's values by the rows left: dst has room for k */
    assert(k <= t->nrows - t->row && (w == 0 || (t->row + k) * w <= m->vals_cap));
    assert(c->col.type != ST_T_STRING || t->row + k + 1 <= m->offs_cap);
    uint8_t *dst = w ? m->vals + t->row * w : NULL;
    uint32_t *ends = c->col.type == ST_T_STRING ? m->offs + t->row + 1 : NULL;
    if (enc >= 0 && enc < 32)
        r->counters.encodings_seen |= 1u << enc;
    switch (enc) {
    case PQ_ENC_PLAIN:
        if (c->col.type == ST_T_STRING)
            return plain_strings(r, p, end, k, &m->sdata, ends, err);
        return plain_fixed(c, p, end, k, dst, err);
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
        return dict_values(r, t, p, end, k, dst, ends, have_dict, err);
    case PQ_ENC_RLE: {
        if (c->phys != PQ_BOOLEAN)
            break;
        if (end - p < 4)
            return CORRUPT(err, "RLE booleans: no length");
        uint32_t len = ld_u32le(p);
        p += 4;
        if (len > (size_t)(end - p))
            return CORRUPT(err, "RLE booleans: length %u runs past the page", len);
        struct pq__rle d;
        pq__rle_init(&d, p, p + len, 1);
        if (pq__rle_get(&d, NULL, dst, k) != ST_OK)
            return CORRUPT(err, "RLE booleans: truncated or corrupt");
        return ST_OK;
    }
    case PQ_ENC_DELTA_BINARY_PACKED: {
        if (c->phys != PQ_INT32 && c->phys != PQ_INT64)
            break;
        size_t nv, used;
        r->i64 = grow(r->i64, &r->i64_cap, k + 1, sizeof *r->i64);
        /*
         * Widths up to 64 even for INT32: the spec forbids writers more than 32
         * bits, but DuckDB 1.5 writes 33-bit miniblocks when INT32 deltas span
         * the whole range. Arithmetic wraps, so truncating to 32 bits is exact.
         */
        if (pq__delta_decode(p, (size_t)(end - p), r->i64, k, &nv, &used, 64) != ST_OK)
            return CORRUPT(err, "DELTA_BINARY_PACKED: corrupt");
        if (nv < k)
            return CORRUPT(err, "DELTA_BINARY_PACKED: %zu values for %zu", nv, k);
        return from_i64(c, r->i64, k, dst, err);
    }
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
        if (c->phys != PQ_BYTE_ARRAY)
            break;
        return delta_length_strings(r, &m->sdata, p, end, k, ends, err);
    case PQ_ENC_DELTA_BYTE_ARRAY:
        if (c->phys != PQ_BYTE_ARRAY)
            break;
        return delta_strings(r, &m->sdata, p, end, k, ends, err);
    case PQ_ENC_BYTE_STREAM_SPLIT:
        return byte_stream_split(c, p, (size_t)(end - p), k, dst, err);
    default:
        break;
    }
    return st_errf(err, ST_EUNSUPPORTED, "encoding %s (%d) for %s values is not supported",
                   pq_encoding_name(enc), enc, physical_name(c->phys));
}

/* Spread k dense values of the page's n rows to their rows, per the levels in r->defs. */
static void spread(struct pq__dec *r, struct target *t, size_t n, size_t k)
{
    const struct rcol *c = t->c;
    struct pq__vecmem *m = t->mem;
    /* k values at the max level among n (read_levels counted them), in the row group */
    assert(k <= n && n <= t->nrows - t->row && t->row + n <= m->nulls_cap && n < r->defs_cap);
    const uint8_t *defs = r->defs;
    uint8_t md = (uint8_t)c->max_def;
    uint8_t *nulls = m->nulls + t->row;
    for (size_t i = 0; i < n; i++)
        nulls[i] = defs[i] != md;
    if (k == n)
        return;
    t->any_null = true;
    size_t j = k;
    switch (c->col.type) {
    case ST_T_BOOLEAN: {
        uint8_t *v = m->vals + t->row;
        for (size_t i = n; i-- > 0;)
            v[i] = nulls[i] ? 0 : v[--j];
        break;
    }
    case ST_T_INT: {
        int32_t *v = (int32_t *)(void *)m->vals + t->row;
        for (size_t i = n; i-- > 0;)
            v[i] = nulls[i] ? 0 : v[--j];
        break;
    }
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
    case ST_T_DOUBLE: {
        uint64_t *v = (uint64_t *)(void *)m->vals + t->row;
        for (size_t i = n; i-- > 0;)
            v[i] = nulls[i] ? 0 : v[--j];
        break;
    }
    case ST_T_STRING: {
        uint32_t *o = m->offs + t->row;
        for (size_t i = n; i-- > 0;) {
            if (nulls[i])
                o[1 + i] = o[j];
            else
                j--, o[1 + i] = o[1 + j];
        }
        break;
    }
    }
    assert(j == 0); /* every dense value found its row */
}

/* Definition levels of n values into r->defs; *k counts values at the max level. */
static int read_levels(struct pq__dec *r, const struct rcol *c, int enc, const uint8_t *p,
                       const uint8_t *end, size_t n, size_t *k, struct st_err *err)
{
    int bw = pq__bit_width((uint64_t)c->max_def);
    assert(bw > 0 && bw <= 8); /* an optional column; levels fit a byte (schema depth) */
    r->defs = grow(r->defs, &r->defs_cap, n + 1, 1);
    if (enc == PQ_ENC_RLE) {
        struct pq__rle d;
        pq__rle_init(&d, p, end, bw);
        if (pq__rle_get(&d, NULL, r->defs, n) != ST_OK)
            return CORRUPT(err, "definition levels: truncated or corrupt RLE/bit-packed data");
    } else if (enc == PQ_ENC_BIT_PACKED) {
        /* deprecated: packed from the most significant bit */
        if ((uint64_t)(end - p) * 8 < (uint64_t)n * (uint64_t)bw)
            return CORRUPT(err, "definition levels: BIT_PACKED data too short");
        for (size_t i = 0; i < n; i++) {
            uint32_t v = 0;
            for (int b = 0; b < bw; b++) {
                size_t bit = i * (size_t)bw + (size_t)b;
                v = v << 1 | ((p[bit >> 3] >> (7 - (bit & 7))) & 1u);
            }
            r->defs[i] = (uint8_t)v;
        }
    } else {
        return st_errf(err, ST_EUNSUPPORTED, "definition level encoding %s", pq_encoding_name(enc));
    }
    size_t cnt = 0;
    uint8_t md = (uint8_t)c->max_def;
    for (size_t i = 0; i < n; i++) {
        if (r->defs[i] > md)
            return CORRUPT(err, "definition level %u above the maximum %u", r->defs[i], md);
        cnt += r->defs[i] == md;
    }
    *k = cnt;
    return ST_OK;
}

static int decompress_into_page(struct pq__dec *r, int codec, const uint8_t *src, size_t sn,
                                size_t dn, struct st_err *err)
{
    r->page = grow(r->page, &r->page_cap, dn + 8, 1);
    return pq__decompress(codec, src, sn, r->page, dn, &r->zstd, err);
}

/* Decode chunk ch, whose bytes (ch->total_compressed of them) are at base, into t. */
static int decode_chunk(struct pq__dec *r, const struct pq__chunk *ch, const uint8_t *base,
                        struct target *t, struct st_err *err)
{
    const struct rcol *c = t->c;
    int64_t start;
    chunk_start(ch, &start);
    size_t len = (size_t)ch->total_compressed;
    if (t->nrows == 0)
        return ST_OK;
    if (!pq__codec_supported(ch->codec))
        return st_errf(err, ST_EUNSUPPORTED, "compression codec %s is not supported",
                       pq_codec_name(ch->codec));
    if ((unsigned)ch->codec < 32)
        r->counters.codecs_seen |= 1u << ch->codec;
    bool have_dict = false;
    size_t pos = 0;
    while (t->row < t->nrows) {
        if (pos >= len)
            return CORRUPT(err, "the chunk ends after %zu of %zu values", t->row, t->nrows);
        struct pq__tr tr;
        uint64_t page_off = (uint64_t)start + pos;
        pq__tr_init(&tr, base + pos, len - pos, page_off, "page header", err);
        struct pq__page_header h;
        int rc = pq__page_header_decode(&tr, &h);
        if (rc != ST_OK)
            return rc;
        size_t hlen = (size_t)(tr.p - (base + pos));
        size_t csize = (size_t)h.compressed_size, usize = (size_t)h.uncompressed_size;
        if (csize > len - pos - hlen)
            return CORRUPT(err, "page at offset %llu: %zu bytes run past the chunk",
                           (unsigned long long)page_off, csize);
        if (usize > r->max_page || csize > r->max_page)
            return st_errf(err, ST_ETOOBIG, "page at offset %llu: %zu bytes (limit %llu)",
                           (unsigned long long)page_off, usize, (unsigned long long)r->max_page);
        const uint8_t *body = base + pos + hlen;
        pos += hlen + csize;
        if (h.type == PQ_PAGE_DICTIONARY) {
            if (!h.has_dict)
                return CORRUPT(err, "page at offset %llu: dictionary page without its header",
                               (unsigned long long)page_off);
            if (have_dict || t->row > 0)
                return CORRUPT(err, "page at offset %llu: a second or late dictionary page",
                               (unsigned long long)page_off);
            if (h.encoding != PQ_ENC_PLAIN && h.encoding != PQ_ENC_PLAIN_DICTIONARY)
                return st_errf(err, ST_EUNSUPPORTED, "dictionary page encoding %s",
                               pq_encoding_name(h.encoding));
            if (h.num_values < 0)
                return CORRUPT(err, "dictionary page: negative value count");
            rc = decompress_into_page(r, ch->codec, body, csize, usize, err);
            if (rc == ST_OK)
                rc = load_dict(r, c, r->page, r->page + usize, (size_t)h.num_values, err);
            if (rc != ST_OK)
                return st_err_prefix(err, "page at offset %llu", (unsigned long long)page_off);
            have_dict = true;
            r->counters.dict_pages++;
            continue;
        }
        if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2)
            continue; /* index pages and unknown page types carry no values */
        bool v2 = h.type == PQ_PAGE_DATA_V2;
        if ((v2 && !h.has_dp2) || (!v2 && !h.has_dp))
            return CORRUPT(err, "page at offset %llu: data page without its header",
                           (unsigned long long)page_off);
        if (h.num_values < 0 || (size_t)h.num_values > t->nrows - t->row)
            return CORRUPT(err, "page at offset %llu: %d values, %zu rows left in the row group",
                           (unsigned long long)page_off, (int)h.num_values, t->nrows - t->row);
        size_t n = (size_t)h.num_values, k = n;
        const uint8_t *vp, *vend;
        if (!v2) {
            r->counters.pages_v1++;
            rc = decompress_into_page(r, ch->codec, body, csize, usize, err);
            if (rc != ST_OK)
                return st_err_prefix(err, "page at offset %llu", (unsigned long long)page_off);
            vp = r->page;
            vend = r->page + usize;
            if (c->max_def > 0) {
                if (h.def_encoding == PQ_ENC_RLE) {
                    if (vend - vp < 4)
                        return CORRUPT(err, "page at offset %llu: no definition level length",
                                       (unsigned long long)page_off);
                    uint32_t dl = ld_u32le(vp);
                    vp += 4;
                    if (dl > (size_t)(vend - vp))
                        return CORRUPT(err,
                                       "page at offset %llu: definition levels of %u bytes "
                                       "run past the page",
                                       (unsigned long long)page_off, dl);
                    rc = read_levels(r, c, PQ_ENC_RLE, vp, vp + dl, n, &k, err);
                    vp += dl;
                } else {
                    rc = read_levels(r, c, h.def_encoding, vp, vend, n, &k, err);
                    vp += ((uint64_t)n * (uint64_t)pq__bit_width((uint64_t)c->max_def) + 7) / 8;
                }
                if (rc != ST_OK)
                    return st_err_prefix(err, "page at offset %llu", (unsigned long long)page_off);
            }
        } else {
            r->counters.pages_v2++;
            if (h.def_len < 0 || h.rep_len < 0 || (size_t)h.def_len + (size_t)h.rep_len > csize ||
                (size_t)h.def_len + (size_t)h.rep_len > usize)
                return CORRUPT(err, "page at offset %llu: level lengths %d+%d do not fit",
                               (unsigned long long)page_off, (int)h.rep_len, (int)h.def_len);
            const uint8_t *lv = body + h.rep_len;
            if (c->max_def > 0) {
                rc = read_levels(r, c, PQ_ENC_RLE, lv, lv + h.def_len, n, &k, err);
                if (rc != ST_OK)
                    return st_err_prefix(err, "page at offset %llu", (unsigned long long)page_off);
            }
            if (h.num_nulls < 0 || (size_t)h.num_nulls != n - k)
                return CORRUPT(err, "page at offset %llu: num_nulls %d but levels say %zu",
                               (unsigned long long)page_off, (int)h.num_nulls, n - k);
            size_t lvl = (size_t)h.def_len + (size_t)h.rep_len;
            const uint8_t *vsrc = body + lvl;
            size_t vcn = csize - lvl, vun = usize - lvl;
            if (h.is_compressed && ch->codec != PQ_CODEC_UNCOMPRESSED) {
                rc = decompress_into_page(r, ch->codec, vsrc, vcn, vun, err);
                if (rc != ST_OK)
                    return st_err_prefix(err, "page at offset %llu", (unsigned long long)page_off);
                vp = r->page;
                vend = r->page + vun;
            } else {
                if (vcn != vun)
                    return CORRUPT(err,
                                   "page at offset %llu: uncompressed values of %zu bytes, "
                                   "header says %zu",
                                   (unsigned long long)page_off, vcn, vun);
                vp = vsrc;
                vend = vsrc + vcn;
            }
        }
        if (c->col.type == ST_T_STRING)
            t->mem->offs[t->row] = (uint32_t)t->mem->sdata.len;
        rc = decode_values(r, t, h.encoding, vp, vend, k, have_dict, err);
        if (rc != ST_OK)
            return st_err_prefix(err, "page at offset %llu", (unsigned long long)page_off);
        if (c->max_def > 0)
            spread(r, t, n, k);
        t->row += n;
    }
    assert(t->row == t->nrows && pos <= len);
    return ST_OK;
}

static void batch_prepare(struct pq_batch *b, int ncols)
{
    if (ncols > b->mem_cap_) {
        b->mem_ = xreallocarray(b->mem_, (size_t)ncols, sizeof *b->mem_);
        b->cols = xreallocarray(b->cols, (size_t)ncols, sizeof *b->cols);
        memset(b->mem_ + b->mem_cap_, 0, (size_t)(ncols - b->mem_cap_) * sizeof *b->mem_);
        b->mem_cap_ = ncols;
    }
}

/* Where chunk (rg, col) starts and how long it is (validated at open). */
static void chunk_range(const struct pq_reader *r, int rg, int col, uint64_t *start, size_t *len)
{
    assert(rg >= 0 && (uint32_t)rg < r->m.nrgs && col >= 0 && col < r->ncols);
    const struct pq__chunk *ch = &r->m.rgs[rg].cols[col];
    int64_t s;
    chunk_start(ch, &s);
    *start = (uint64_t)s;
    *len = (size_t)ch->total_compressed;
    /* asked for a row group with rows only: validate() put such a chunk in the data */
    assert(r->m.rgs[rg].num_rows > 0 && s >= 4 && *start <= r->data_end &&
           *len <= r->data_end - *start);
}

/*
 * Decode columns cols[0..ncols) of row group rg into b with d's scratch.
 * bases[k] holds column k's chunk bytes, or bases is NULL and the chunks are
 * read here (into d->chunk; memory readers point into the file). Reads the
 * reader's footer and columns only, so that the helper can run it.
 */
static int decode_group(const struct pq_reader *r, struct pq__dec *d, int rg, const int *cols,
                        int ncols, struct pq_batch *b, const uint8_t *const *bases,
                        struct st_err *err)
{
    uint64_t nrows64 = (uint64_t)r->m.rgs[rg].num_rows;
    if (nrows64 > r->max_rows)
        return st_errf(err, ST_ETOOBIG,
                       "row group %d has %llu rows (the reader decodes at most "
                       "%llu at once)",
                       rg, (unsigned long long)nrows64, (unsigned long long)r->max_rows);
    size_t nrows = (size_t)nrows64;
    assert(rg >= 0 && (uint32_t)rg < r->m.nrgs && ncols >= 0);
    batch_prepare(b, ncols);
    b->first_row = r->rg_first[rg];
    b->nrows = nrows;
    b->ncols = ncols;
    for (int k = 0; k < ncols; k++) {
        /* pq_read_row_group checked the projection */
        assert(cols[k] >= 0 && cols[k] < r->ncols && r->cols[cols[k]].unsupported == NULL);
        const struct rcol *c = &r->cols[cols[k]];
        struct pq__vecmem *m = &b->mem_[k];
        struct st_colvec *v = &b->cols[k];
        size_t w = st_type_width(c->col.type);
        if (w > 0)
            m->vals = grow(m->vals, &m->vals_cap, w * nrows + 8, 1);
        if (c->max_def > 0)
            m->nulls = grow(m->nulls, &m->nulls_cap, nrows + 1, 1);
        if (c->col.type == ST_T_STRING) {
            m->offs = grow(m->offs, &m->offs_cap, nrows + 1, sizeof *m->offs);
            m->offs[0] = 0;
            buf_reset(&m->sdata);
            buf_reserve(&m->sdata, 0);
        }
        struct target t = {c, m, nrows, 0, false, c->path};
        d->dict_n = 0;
        const uint8_t *base = NULL;
        int rc = ST_OK;
        if (bases != NULL) {
            base = bases[k];
        } else if (nrows > 0) {
            uint64_t start;
            size_t len;
            chunk_range(r, rg, cols[k], &start, &len);
            if (r->mem != NULL) {
                base = r->mem + start;
            } else {
                buf_reset(&d->chunk);
                buf_reserve(&d->chunk, len);
                rc = r->src.read_at(r->src.ctx, d->chunk.data, len, start, err);
                base = d->chunk.data;
            }
        }
        if (rc == ST_OK)
            rc = decode_chunk(d, &r->m.rgs[rg].cols[cols[k]], base, &t, err);
        if (rc != ST_OK)
            return st_err_prefix(err, "column '%s' row group %d", c->path, rg);
        memset(v, 0, sizeof *v);
        v->type = c->col.type;
        v->n = nrows;
        v->nulls = t.any_null ? m->nulls : NULL;
        v->v.b = m->vals;
        if (c->col.type == ST_T_STRING) {
            v->offs = m->offs;
            v->sdata = m->sdata.data;
        }
    }
    return ST_OK;
}

/* ---- read-ahead ---- */

static void ahead_job(void *arg)
{
    struct pq__ahead *a = arg;
    const struct pq_reader *r = a->r;
    const uint8_t *bases[ST_COLUMNS_MAX + 1];
    const uint8_t *const *bp = NULL;
    if (r->mem == NULL && r->m.rgs[a->rg].num_rows > 0) {
        for (int k = 0; k < a->ncols; k++)
            bases[k] = a->bytes.data + a->boff[k];
        bp = bases;
    }
    a->rc = decode_group(r, &a->dec, a->rg, a->cols, a->ncols, &a->b, bp, &a->err);
}

static bool ahead_is(const struct pq__ahead *a, int rg, const int *cols, int ncols)
{
    return a->active && a->rg == rg && a->ncols == ncols &&
           memcmp(a->cols, cols, (size_t)ncols * sizeof *cols) == 0;
}

/*
 * Start decoding row group rg on the helper: read its chunks here (the
 * source is only ever called from the caller's thread), then submit. An I/O
 * error becomes the job's result, reported when rg is asked for.
 */
static void ahead_start(struct pq_reader *r, int rg, const int *cols, int ncols)
{
    struct pq__ahead *a = &r->ah;
    assert(rg >= 0 && (uint32_t)rg < r->m.nrgs && r->threads > 1);
    if (ncols > ST_COLUMNS_MAX)
        return;
    if (a->worker == NULL) {
        a->worker = pq__worker_start();
        if (a->worker == NULL) {
            r->threads = 1;
            return;
        }
    }
    pq__worker_wait(a->worker); /* a dropped job may still run */
    if (ncols > a->cols_cap) {
        a->cols = xreallocarray(a->cols, (size_t)ncols, sizeof *a->cols);
        a->cols_cap = ncols;
    }
    memcpy(a->cols, cols, (size_t)ncols * sizeof *cols);
    a->ncols = ncols;
    a->rg = rg;
    a->active = true;
    a->rc = ST_OK;
    a->err.code = 0;
    a->err.msg[0] = '\0';
    memset(&a->dec.counters, 0, sizeof a->dec.counters);
    a->dec.max_bytes = r->max_bytes;
    a->dec.max_page = r->max_page;
    if (r->mem == NULL && r->m.rgs[rg].num_rows > 0) {
        a->boff = grow(a->boff, &a->boff_cap, (size_t)ncols, sizeof *a->boff);
        buf_reset(&a->bytes);
        for (int k = 0; k < ncols; k++) {
            uint64_t start;
            size_t len;
            chunk_range(r, rg, cols[k], &start, &len);
            a->boff[k] = a->bytes.len;
            buf_reserve(&a->bytes, len);
            int rc = r->src.read_at(r->src.ctx, a->bytes.data + a->bytes.len, len, start, &a->err);
            if (rc != ST_OK) {
                a->rc =
                    st_err_prefix(&a->err, "column '%s' row group %d", r->cols[cols[k]].path, rg);
                return;
            }
            a->bytes.len += len;
        }
    }
    pq__worker_submit(a->worker, ahead_job, a);
}

static void counters_add(struct pq_read_counters *to, const struct pq_read_counters *c)
{
    to->pages_v1 += c->pages_v1;
    to->pages_v2 += c->pages_v2;
    to->dict_pages += c->dict_pages;
    to->encodings_seen |= c->encodings_seen;
    to->codecs_seen |= c->codecs_seen;
}

int pq_read_row_group(struct pq_reader *r, int rg, const int *cols, int ncols, struct pq_batch *b,
                      struct st_err *err)
{
    if (rg < 0 || (uint32_t)rg >= r->m.nrgs)
        return st_errf(err, ST_EINVAL, "row group %d does not exist (%u row groups)", rg,
                       r->m.nrgs);
    if (ncols < 0)
        return st_errf(err, ST_EINVAL, "negative column count");
    for (int k = 0; k < ncols; k++) {
        if (cols[k] < 0 || cols[k] >= r->ncols)
            return st_errf(err, ST_EINVAL, "column %d does not exist (%d columns)", cols[k],
                           r->ncols);
        const struct rcol *c = &r->cols[cols[k]];
        if (c->unsupported != NULL)
            return st_errf(err, ST_EUNSUPPORTED, "column '%s': unsupported type %s", c->path,
                           c->unsupported);
    }
    struct pq__ahead *a = &r->ah;
    bool sequential = rg == r->next_rg;
    r->next_rg = rg + 1;
    int nrgs = (int)r->m.nrgs;
    uint64_t now = st_mono_ns();
    uint64_t gap = r->t_return != 0 ? now - r->t_return : 0;
    if (ahead_is(a, rg, cols, ncols)) {
        /* The helper decoded (or is decoding) this one: take its batch. */
        assert(a->worker != NULL); /* a job is only ever submitted to a started helper */
        pq__worker_wait(a->worker);
        a->active = false;
        struct pq_batch t = *b;
        *b = a->b;
        a->b = t;
        counters_add(&r->dec.counters, &a->dec.counters);
        r->ahead_taken++;
        int rc = a->rc;
        if (rc != ST_OK)
            *err = a->err;
        /*
         * Next: when the caller's work between two calls (gap) is less than
         * half a decode, decoding is the bottleneck: the caller decodes rg + 1
         * itself next time, in parallel with the helper on rg + 2. Else the
         * helper decodes rg + 1 while the caller works on this batch.
         */
        int next = gap < r->decode_ns / 2 && r->ahead_step != 1 ? rg + 2 : rg + 1;
        if (r->threads > 1 && next < nrgs)
            ahead_start(r, next, cols, ncols);
        r->t_return = st_mono_ns();
        return rc;
    }
    if (a->active && !ahead_is(a, rg + 1, cols, ncols))
        a->active = false; /* not what is read next: dropped (ahead_start waits for it) */
    if (!a->active && sequential && r->threads > 1 && rg + 1 < nrgs)
        ahead_start(r, rg + 1, cols, ncols);
    uint64_t t0 = st_mono_ns();
    int rc = decode_group(r, &r->dec, rg, cols, ncols, b, NULL, err);
    r->t_return = st_mono_ns();
    r->decode_ns = r->t_return - t0;
    return rc;
}
