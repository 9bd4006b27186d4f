/*
 * cli_dv.c - `strike dv decode|encode`: deletion vectors in every format
 * strike reads and writes, for people and for scripts (docs/API.md "CLI").
 *
 * Output of decode: positions one per line, ascending, runs of two or more
 * consecutive positions as `a-b`. Files that hold several vectors print
 * `# <id> cardinality=N` before each one. Errors: exit 1 and one line on
 * stderr naming the problem and its byte offset; usage errors exit 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "dv/paimon.h"
#include "dv/puffin.h"

int cli_dv(int argc, char **argv);

#define MAX_INPUT ((size_t)1 << 30) /* largest file decode reads */

static const char USAGE[] =
    "usage: strike dv decode --format FORMAT FILE [--offset N [--length N]] [--count]\n"
    "       strike dv encode --format FORMAT [--referenced-file NAME] [--bitmap64] < positions\n"
    "\n"
    "FORMAT is one of:\n"
    "  roaring32   32-bit portable Roaring bitmap (RoaringFormatSpec)\n"
    "  roaring64   64-bit portable Roaring; decode applies the DV rule (keys < 2^31)\n"
    "  iceberg-dv  one Iceberg deletion-vector-v1 blob (length, magic, vector, CRC)\n"
    "  puffin      an Iceberg Puffin file of deletion-vector-v1 blobs\n"
    "  delta-dv    a Delta Lake DV file (version byte 1, then one or more entries)\n"
    "  paimon-dv   a Paimon dvindex file (32-bit or 64-bit entries)\n"
    "\n"
    "decode prints the positions one per line, ascending, with runs of two or more\n"
    "consecutive positions as a-b. For puffin, delta-dv and paimon-dv every vector is\n"
    "preceded by a line '# <id> cardinality=N', where <id> is the blob's\n"
    "referenced-data-file (puffin) or 'offset=<byte offset of the entry>' (delta-dv,\n"
    "paimon-dv); Puffin blobs of other types are noted on stderr, never on stdout.\n"
    "  --offset N   decode only the vector at byte N: the blob's offset (puffin; it must\n"
    "               be in the footer), the entry's offset (delta-dv, paimon-dv), or the\n"
    "               start of the bytes to decode (roaring32, roaring64, iceberg-dv)\n"
    "  --length N   with --offset: the blob's length (puffin, iceberg-dv; Iceberg\n"
    "               content_size_in_bytes), sizeInBytes (delta-dv), the manifest length\n"
    "               (paimon-dv) or the byte count (roaring32, roaring64); checked\n"
    "  --count      print the cardinality instead of the positions\n"
    "Invalid input exits 1 with one line naming the problem and its byte offset.\n"
    "\n"
    "encode reads positions from stdin, one per line or as a-b ranges (decode's output\n"
    "is valid input), in any order, and writes the bytes to stdout. For puffin,\n"
    "delta-dv and paimon-dv a line '# <id> ...' starts another vector; for puffin <id>\n"
    "is the referenced data file.\n"
    "  --referenced-file NAME  puffin: the referenced-data-file of a vector with no\n"
    "                          '# <id>' line\n"
    "  --bitmap64              paimon-dv: write 64-bit entries (default 32-bit, as Paimon)\n"
    "\n"
    "Exit status: 0 success, 1 invalid input, 2 usage error.\n";

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "strike dv: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see strike dv --help)\n");
    va_end(ap);
    return 2;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

/* ---------------------------------------------------------------- output */

struct out {
    char buf[1 << 16];
    size_t len;
};

static void out_flush(struct out *o)
{
    fwrite(o->buf, 1, o->len, stdout);
    o->len = 0;
}

static void out_str(struct out *o, const char *s)
{
    size_t n = strlen(s);
    if (o->len + n > sizeof o->buf)
        out_flush(o);
    if (n > sizeof o->buf) {
        fwrite(s, 1, n, stdout);
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void out_u64(struct out *o, uint64_t v)
{
    char tmp[20];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    if (o->len + (size_t)k + 2 > sizeof o->buf)
        out_flush(o);
    while (k > 0)
        o->buf[o->len++] = tmp[--k];
}

static void out_char(struct out *o, char c)
{
    if (o->len + 1 > sizeof o->buf)
        out_flush(o);
    o->buf[o->len++] = c;
}

static void print_run(struct out *o, uint64_t a, uint64_t b)
{
    out_u64(o, a);
    if (b != a) {
        out_char(o, '-');
        out_u64(o, b);
    }
    out_char(o, '\n');
}

static void print_positions(struct out *o, const struct dv *d)
{
    struct dv_iter it;
    uint64_t pos[4096];
    uint64_t a = 0, b = 0;
    bool have = false;
    size_t n;
    dv_iter_init(&it, d);
    while ((n = dv_iter_next_many(&it, pos, 4096)) > 0) {
        for (size_t i = 0; i < n; i++) {
            if (have && pos[i] == b + 1) {
                b = pos[i];
                continue;
            }
            if (have)
                print_run(o, a, b);
            a = b = pos[i];
            have = true;
        }
    }
    if (have)
        print_run(o, a, b);
}

/* One decoded vector with its header (NULL header: a single-vector file). */
struct vec {
    char *header; /* owned */
    struct dv *d; /* owned; NULL for a skipped blob (its header is a note for stderr) */
};

struct vecs {
    struct vec *v;
    size_t n, cap;
};

static void vecs_push(struct vecs *vs, char *header, struct dv *d)
{
    if (vs->n == vs->cap) {
        vs->cap = vs->cap ? vs->cap * 2 : 8;
        vs->v = xreallocarray(vs->v, vs->cap, sizeof *vs->v);
    }
    vs->v[vs->n].header = header;
    vs->v[vs->n].d = d;
    vs->n++;
}

static void vecs_free(struct vecs *vs)
{
    for (size_t i = 0; i < vs->n; i++) {
        free(vs->v[i].header);
        dv_free(vs->v[i].d);
    }
    free(vs->v);
}

static void print_vecs(const struct vecs *vs, bool count)
{
    struct out *o = xmalloc(sizeof *o);
    o->len = 0;
    for (size_t i = 0; i < vs->n; i++) {
        const struct vec *v = &vs->v[i];
        if (v->d == NULL) { /* a note, not data: stdout holds positions only */
            fprintf(stderr, "strike dv: %s\n", v->header);
            continue;
        }
        if (v->header != NULL) {
            out_str(o, "# ");
            out_str(o, v->header);
            out_str(o, " cardinality=");
            out_u64(o, dv_cardinality(v->d));
            out_char(o, '\n');
        }
        if (count) {
            out_u64(o, dv_cardinality(v->d));
            out_char(o, '\n');
        } else {
            print_positions(o, v->d);
        }
    }
    out_flush(o);
    free(o);
}

/* ---------------------------------------------------------------- decode */

struct opts {
    enum dv_format fmt;
    bool have_fmt;
    const char *file;
    bool have_offset, have_length, count, bitmap64;
    uint64_t offset, length;
    const char *referenced;
};

static int decode_puffin(const uint8_t *p, size_t n, const struct opts *o, struct vecs *vs,
                         struct st_err *err)
{
    struct puffin_footer f;
    int rc = puffin_read_footer(p, n, &f, err);
    if (rc != ST_OK)
        return rc;
    if (o->have_offset) {
        const struct puffin_blob *b = NULL;
        for (size_t i = 0; i < f.n_blobs && b == NULL; i++)
            if (f.blobs[i].offset == o->offset &&
                (!o->have_length || f.blobs[i].length == o->length))
                b = &f.blobs[i];
        if (b == NULL) {
            rc = st_errf(err, ST_ECORRUPT, "the footer lists no blob at byte %" PRIu64 "%s",
                         o->offset, o->have_length ? " with that length" : "");
        } else {
            struct dv *d;
            rc = puffin_decode_dv(p, n, b, &d, err);
            if (rc == ST_OK)
                vecs_push(vs, NULL, d);
        }
        puffin_footer_free(&f);
        return rc;
    }
    for (size_t i = 0; i < f.n_blobs && rc == ST_OK; i++) {
        const struct puffin_blob *b = &f.blobs[i];
        if (strcmp(b->type, DV_BLOB_TYPE) != 0) {
            vecs_push(vs,
                      xasprintf("blob %zu type=%s offset=%" PRIu64 " length=%" PRIu64
                                ": not a deletion vector, skipped",
                                i, b->type, b->offset, b->length),
                      NULL);
            continue;
        }
        struct dv *d;
        rc = puffin_decode_dv(p, n, b, &d, err);
        if (rc == ST_OK)
            vecs_push(vs, xstrdup(b->referenced_data_file), d);
    }
    puffin_footer_free(&f);
    return rc;
}

static int decode_delta(const uint8_t *p, size_t n, const struct opts *o, struct vecs *vs,
                        struct st_err *err)
{
    struct dv *d;
    int rc;
    if (o->have_offset) {
        rc = dv_decode_delta_entry(p, n, o->offset, o->have_length ? (int64_t)o->length : -1, &d,
                                   err);
        if (rc == ST_OK)
            vecs_push(vs, NULL, d);
        return rc;
    }
    struct dv_delta_cursor c;
    if ((rc = dv_delta_cursor_init(&c, p, n, err)) != ST_OK)
        return rc;
    uint64_t off;
    uint32_t size;
    while ((rc = dv_delta_cursor_next(&c, &off, &size, &d, err)) == 1)
        vecs_push(vs, xasprintf("offset=%" PRIu64, off), d);
    return rc;
}

static int decode_paimon(const uint8_t *p, size_t n, const struct opts *o, struct vecs *vs,
                         struct st_err *err)
{
    struct dv *d;
    int rc;
    if (o->have_offset) {
        rc = paimon_decode_dv(p, n, o->offset, o->have_length ? (int64_t)o->length : -1, NULL, &d,
                              err);
        if (rc == ST_OK)
            vecs_push(vs, NULL, d);
        return rc;
    }
    struct paimon_cursor c;
    if ((rc = paimon_cursor_init(&c, p, n, err)) != ST_OK)
        return rc;
    struct paimon_dv_entry e;
    while ((rc = paimon_cursor_next(&c, &e, &d, err)) == 1)
        vecs_push(vs, xasprintf("offset=%" PRIu64, e.offset), d);
    return rc;
}

static int decode_single(const uint8_t *p, size_t n, const struct opts *o, struct vecs *vs,
                         struct st_err *err)
{
    uint64_t off = o->have_offset ? o->offset : 0;
    uint64_t len = 0;
    if (off > n)
        return st_errf(err, ST_ECORRUPT,
                       "--offset %" PRIu64 " is past the end of the %zu-byte file", off, n);
    if (o->have_length)
        len = o->length;
    else if (o->fmt == DV_FMT_ICEBERG && o->have_offset && n - off >= 4)
        len = (uint64_t)ld_u32be(p + off) + 8; /* the blob's own length field */
    else
        len = n - off;
    struct dv *d;
    int rc;
    switch (o->fmt) {
    case DV_FMT_ROARING32:
        rc = dv_decode_roaring32_at(p, n, off, len, &d, err);
        break;
    case DV_FMT_ROARING64:
        rc = dv_decode_roaring64_at(p, n, off, len, DV_RULE, &d, err);
        break;
    default:
        rc = dv_decode_iceberg_at(p, n, off, len, -1, &d, err);
        break;
    }
    if (rc == ST_OK)
        vecs_push(vs, NULL, d);
    return rc;
}

static int run_decode(const struct opts *o)
{
    struct st_err err = {0};
    struct buf file = BUF_INIT;
    struct vecs vs = {0};
    int rc = st_read_file(o->file, MAX_INPUT, &file, &err);
    if (rc == ST_OK) {
        const uint8_t *p = file.data ? file.data : (const uint8_t *)"";
        switch (o->fmt) {
        case DV_FMT_PUFFIN:
            rc = decode_puffin(p, file.len, o, &vs, &err);
            break;
        case DV_FMT_DELTA:
            rc = decode_delta(p, file.len, o, &vs, &err);
            break;
        case DV_FMT_PAIMON:
            rc = decode_paimon(p, file.len, o, &vs, &err);
            break;
        default:
            rc = decode_single(p, file.len, o, &vs, &err);
            break;
        }
    }
    if (rc < 0) {
        fprintf(stderr, "strike dv: %s: %s\n", o->file, err.msg);
    } else {
        print_vecs(&vs, o->count);
        rc = fflush(stdout) == 0 ? 0 : -1;
        if (rc != 0)
            fprintf(stderr, "strike dv: writing the output: %s\n", strerror(errno));
    }
    vecs_free(&vs);
    buf_free(&file);
    return rc == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------- encode */

static bool multi_vector(enum dv_format f)
{
    return f == DV_FMT_PUFFIN || f == DV_FMT_DELTA || f == DV_FMT_PAIMON;
}

/* Read stdin into vectors: '# id ...' lines start a vector. */
static int read_positions(const struct opts *o, struct vecs *vs, struct st_err *err)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t lineno = 0;
    uint64_t run[2] = {0, 0};
    struct dv *cur = NULL;
    int rc = ST_OK;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
            line[--len] = '\0';
        if (len == 0)
            continue;
        if (line[0] == '#') {
            const char *id = line + 1;
            while (*id == ' ')
                id++;
            char *cut = strstr(id, " cardinality=");
            size_t idlen = cut ? (size_t)(cut - id) : strlen(id);
            if (!multi_vector(o->fmt) && vs->n > 0) {
                rc = st_errf(err, ST_EINVAL,
                             "line %" PRIu64 ": a second '#' vector, but %s holds one vector",
                             lineno, dv_format_name(o->fmt));
                break;
            }
            cur = dv_new();
            vecs_push(vs, xstrndup(id, idlen), cur);
            continue;
        }
        char *dash = strchr(line + 1, '-');
        if (dash != NULL)
            *dash = '\0';
        if (!parse_u64(line, &run[0]) || (dash != NULL && !parse_u64(dash + 1, &run[1])) ||
            (dash != NULL && run[1] < run[0])) {
            rc = st_errf(err, ST_EINVAL,
                         "line %" PRIu64 ": expected a position or a range a-b (a <= b) of "
                         "non-negative integers",
                         lineno);
            break;
        }
        if (cur == NULL) {
            cur = dv_new();
            vecs_push(vs, NULL, cur);
        }
        if (dash == NULL)
            dv_add(cur, run[0]);
        else if (run[1] == UINT64_MAX)
            dv_add_range(cur, run[0], run[1]), dv_add(cur, run[1]);
        else
            dv_add_range(cur, run[0], run[1] + 1);
    }
    free(line);
    if (rc == ST_OK && ferror(stdin))
        rc = st_errf(err, ST_EIO, "reading stdin: %s", strerror(errno));
    if (rc == ST_OK && vs->n == 0)
        vecs_push(vs, NULL, dv_new()); /* no input: one empty vector */
    return rc;
}

static int too_big(const struct dv *d, struct st_err *err)
{
    uint64_t max = 0;
    dv_max(d, &max);
    return st_errf(err, ST_EINVAL,
                   "position %" PRIu64 " is >= 2^63: not valid in a deletion vector", max);
}

static int encode_vecs(const struct opts *o, const struct vecs *vs, struct buf *out,
                       struct st_err *err)
{
    switch (o->fmt) {
    case DV_FMT_ROARING32:
        return dv_encode_roaring32(vs->v[0].d, out, err);
    case DV_FMT_ROARING64:
        return dv_encode_roaring64(vs->v[0].d, out);
    case DV_FMT_ICEBERG:
        if (dv_encode_iceberg(vs->v[0].d, out) != ST_OK)
            return too_big(vs->v[0].d, err);
        return ST_OK;
    case DV_FMT_DELTA:
        buf_put_u8(out, DV_DELTA_FILE_VERSION);
        for (size_t i = 0; i < vs->n; i++)
            if (dv_encode_iceberg(vs->v[i].d, out) != ST_OK)
                return too_big(vs->v[i].d, err);
        return ST_OK;
    case DV_FMT_PAIMON:
        paimon_dvindex_begin(out);
        for (size_t i = 0; i < vs->n; i++) {
            int rc = paimon_dvindex_add(out, vs->v[i].d, o->bitmap64, NULL, err);
            if (rc != ST_OK)
                return rc;
        }
        return ST_OK;
    case DV_FMT_PUFFIN: {
        struct puffin_writer *w = puffin_writer_new(NULL);
        int rc = ST_OK;
        for (size_t i = 0; i < vs->n && rc == ST_OK; i++) {
            const char *ref = vs->v[i].header ? vs->v[i].header : o->referenced;
            uint64_t off, len;
            if (ref == NULL)
                rc = st_errf(err, ST_EINVAL,
                             "puffin: a vector has no referenced data file (give "
                             "--referenced-file or a '# <file>' line)");
            else
                rc = puffin_writer_add_dv(w, ref, vs->v[i].d, &off, &len, err);
        }
        if (rc == ST_OK)
            rc = puffin_writer_finish(w, out, err);
        puffin_writer_free(w);
        return rc;
    }
    }
    return st_errf(err, ST_EINTERNAL, "unknown format");
}

static int run_encode(const struct opts *o)
{
    struct st_err err = {0};
    struct vecs vs = {0};
    struct buf out = BUF_INIT;
    int rc = read_positions(o, &vs, &err);
    if (rc == ST_OK)
        rc = encode_vecs(o, &vs, &out, &err);
    if (rc != ST_OK) {
        fprintf(stderr, "strike dv encode: %s\n", err.msg);
    } else if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
        fprintf(stderr, "strike dv encode: writing the output: %s\n", strerror(errno));
        rc = ST_EIO;
    }
    buf_free(&out);
    vecs_free(&vs);
    return rc == ST_OK ? 0 : 1;
}

/* ------------------------------------------------------------------ main */

int cli_dv(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(USAGE, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    bool decode = strcmp(argv[1], "decode") == 0;
    if (!decode && strcmp(argv[1], "encode") != 0)
        return usage_error("unknown dv command '%s' (decode or encode)", argv[1]);
    struct opts o = {0};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        } else if (strcmp(a, "--format") == 0) {
            if (v == NULL || !dv_format_parse(v, &o.fmt))
                return usage_error("--format needs one of roaring32, roaring64, iceberg-dv, "
                                   "puffin, delta-dv, paimon-dv (got '%s')",
                                   v ? v : "");
            o.have_fmt = true;
            i++;
        } else if (decode && strcmp(a, "--offset") == 0) {
            if (!parse_u64(v, &o.offset))
                return usage_error("--offset needs a non-negative integer (got '%s')", v ? v : "");
            o.have_offset = true;
            i++;
        } else if (decode && strcmp(a, "--length") == 0) {
            if (!parse_u64(v, &o.length))
                return usage_error("--length needs a non-negative integer (got '%s')", v ? v : "");
            o.have_length = true;
            i++;
        } else if (decode && strcmp(a, "--count") == 0) {
            o.count = true;
        } else if (!decode && strcmp(a, "--referenced-file") == 0) {
            if (v == NULL)
                return usage_error("--referenced-file needs a name");
            o.referenced = v;
            i++;
        } else if (!decode && strcmp(a, "--bitmap64") == 0) {
            o.bitmap64 = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option '%s'", a);
        } else if (decode && o.file == NULL) {
            o.file = a;
        } else {
            return usage_error("unexpected argument '%s'", a);
        }
    }
    if (!o.have_fmt)
        return usage_error("--format is required");
    if (!decode)
        return run_encode(&o);
    if (o.file == NULL)
        return usage_error("decode needs a FILE");
    if (o.have_length && !o.have_offset)
        return usage_error("--length needs --offset");
    return run_decode(&o);
}
