/*
 * cli_parquet.c - `strike parquet`: inspect, print and write Parquet files
 * with strike's own codec (storage/parquet).
 *
 *   strike parquet meta FILE [--scan]
 *   strike parquet cat FILE [--columns a,b] [--limit N]
 *   strike parquet write --schema JSON [options] FILE   (NDJSON rows on stdin)
 *
 * cat prints NDJSON, one object per row, columns in file order (or as
 * listed): null as null, longs as exact integers, doubles in the shortest
 * form that reads back to the same double (non-finite doubles as the strings
 * "NaN", "Infinity", "-Infinity", since JSON has no such numbers),
 * timestamps as RFC 3339 with 6 fraction digits and Z, strings JSON-escaped.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/timeutil.h"
#include "common/types.h"
#include "common/xalloc.h"
#include "parquet/parquet.h"

int cli_parquet(int argc, char **argv);

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: strike parquet meta FILE [--scan]\n"
        "       strike parquet cat FILE [--columns a,b] [--limit N]\n"
        "       strike parquet write --schema JSON [--row-group-rows N] [--compression zstd|none]\n"
        "                            [--zstd-level N] [--no-dictionary] [--kv KEY=VALUE]... FILE\n"
        "\n"
        "meta   the schema (strike type and Parquet types of every column), key/value\n"
        "       metadata, and per row group its rows, and per column chunk its codec,\n"
        "       encodings, sizes, offsets and statistics. --scan also decodes every\n"
        "       readable column and counts the page kinds and encodings met.\n"
        "cat    the rows as NDJSON: one object per row; null is null, longs are exact\n"
        "       integers, doubles the shortest form that reads back to the same double\n"
        "       (NaN and infinities as the strings \"NaN\", \"Infinity\", \"-Infinity\"),\n"
        "       timestamps RFC 3339 with microseconds and Z, strings JSON strings.\n"
        "write  read NDJSON rows from stdin (one object per line; a missing key is null;\n"
        "       timestamps as integer microseconds or RFC 3339 strings; doubles may be the\n"
        "       strings above) and write them to FILE (atomically). The schema is a JSON\n"
        "       array of {\"name\":..,\"type\":..,\"required\":bool} (docs/API.md column\n"
        "       objects) or an object with such a \"columns\" array.\n"
        "\n"
        "Exit status: 0 ok, 1 the file or input is bad, 2 usage.\n");
}

/* ---- JSON output ---- */

void cli_json_string(struct buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *p = (const uint8_t *)s;
    buf_put_u8(b, '"');
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\') {
            buf_put_u8(b, '\\');
            buf_put_u8(b, c);
            i++;
        } else if (c < 0x20) {
            const char *esc = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
            if (esc != NULL) {
                buf_append_str(b, esc);
            } else {
                char u[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
                buf_append(b, u, 6);
            }
            i++;
        } else if (c < 0x80) {
            buf_put_u8(b, c);
            i++;
        } else {
            /* copy a well-formed sequence; replace a bad byte with U+FFFD */
            size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
            bool ok = len > 0 && len <= n - i && c <= 0xf4;
            for (size_t k = 1; ok && k < len; k++)
                ok = (p[i + k] & 0xc0) == 0x80;
            if (ok && len == 3) {
                uint32_t cp = (uint32_t)(c & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6;
                ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
            } else if (ok && len == 4) {
                uint32_t cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3f) << 12;
                ok = cp >= 0x10000 && cp <= 0x10ffff;
            }
            if (ok) {
                buf_append(b, p + i, len);
                i += len;
            } else {
                buf_append_str(b, "\\ufffd");
                i++;
            }
        }
    }
    buf_put_u8(b, '"');
}

/* Shortest of %.15g, %.16g, %.17g that reads back to d. */
void cli_json_double(struct buf *b, double d)
{
    if (isnan(d)) {
        buf_append_str(b, "\"NaN\"");
        return;
    }
    if (isinf(d)) {
        buf_append_str(b, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return;
    }
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (prec == 17 || strtod(tmp, NULL) == d)
            break;
    }
    /* a bare integer form is fine JSON ("1e+20", "-0", "3") */
    buf_append_str(b, tmp);
}

void cli_json_value(struct buf *b, enum st_type t, const struct st_value *v)
{
    if (v->null) {
        buf_append_str(b, "null");
        return;
    }
    switch (t) {
    case ST_T_BOOLEAN:
        buf_append_str(b, v->v.b ? "true" : "false");
        break;
    case ST_T_INT:
        buf_printf(b, "%" PRId32, v->v.i);
        break;
    case ST_T_LONG:
        buf_printf(b, "%" PRId64, v->v.l);
        break;
    case ST_T_DOUBLE:
        cli_json_double(b, v->v.d);
        break;
    case ST_T_STRING:
        cli_json_string(b, v->v.s.p, v->v.s.len);
        break;
    case ST_T_TIMESTAMP: {
        char ts[ST_RFC3339_MAX];
        st_format_rfc3339(v->v.l, ts);
        buf_put_u8(b, '"');
        buf_append_str(b, ts);
        buf_put_u8(b, '"');
        break;
    }
    }
}

static int flush_stdout(struct buf *b)
{
    if (b->len > 0 && fwrite(b->data, 1, b->len, stdout) != b->len) {
        fprintf(stderr, "strike parquet: cannot write to stdout: %s\n", strerror(errno));
        return 1;
    }
    buf_reset(b);
    return 0;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

/* ---- meta ---- */

static void print_stats(struct buf *b, enum st_type t, const struct pq_col_stats *s)
{
    if (s->has_minmax) {
        buf_append_str(b, " min=");
        cli_json_value(b, t, &s->min);
        buf_append_str(b, " max=");
        cli_json_value(b, t, &s->max);
    }
    if (s->has_null_count)
        buf_printf(b, " nulls=%" PRIu64, s->null_count);
    if (s->has_nan_count)
        buf_printf(b, " nans=%" PRIu64, s->nan_count);
}

/* The FILE operand of a subcommand, opened: 0, or the exit code (usage 2, unreadable 1). */
static int open_file(const char *cmd, const char *path, struct pq_reader **r)
{
    if (path == NULL) {
        usage(stderr);
        return 2;
    }
    struct st_err err = {0};
    if (pq_reader_open(path, r, &err) != ST_OK) {
        fprintf(stderr, "strike parquet %s: %s\n", cmd, err.msg);
        return 1;
    }
    return 0;
}

static int cmd_meta(int argc, char **argv)
{
    const char *path = NULL;
    bool scan = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--scan") == 0)
            scan = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || path != NULL) {
            fprintf(stderr, "strike parquet meta: unexpected argument '%s'\n", argv[i]);
            return 2;
        } else
            path = argv[i];
    }
    struct pq_reader *r;
    int code = open_file("meta", path, &r);
    if (code != 0)
        return code;
    struct st_err err = {0};
    struct buf b = BUF_INIT;
    buf_append_str(&b, "file: ");
    cli_json_string(&b, path, strlen(path));
    buf_printf(&b, "\nsize: %" PRIu64 " bytes\nrows: %" PRIu64 "\nrow groups: %d\n",
               pq_file_size(r), pq_num_rows(r), pq_num_row_groups(r));
    const char *cb = pq_created_by(r);
    buf_append_str(&b, "created_by: ");
    if (cb != NULL)
        cli_json_string(&b, cb, strlen(cb));
    else
        buf_append_str(&b, "(none)");
    buf_printf(&b, "\nkey/value metadata: %d\n", pq_kv_count(r));
    for (int i = 0; i < pq_kv_count(r); i++) {
        const char *k, *v;
        pq_kv_at(r, i, &k, &v);
        buf_append_str(&b, "  ");
        cli_json_string(&b, k, strlen(k));
        buf_append_str(&b, " = ");
        if (v != NULL)
            cli_json_string(&b, v, strlen(v));
        else
            buf_append_str(&b, "(no value)");
        buf_put_u8(&b, '\n');
    }
    int ncols = pq_ncols(r);
    buf_printf(&b, "columns: %d\n", ncols);
    for (int i = 0; i < ncols; i++) {
        const struct st_column *c = pq_column(r, i);
        struct pq_column_info ci;
        pq_column_info(r, i, &ci);
        buf_printf(&b, "  %d ", i);
        cli_json_string(&b, ci.path, strlen(ci.path));
        const char *why = pq_column_unsupported(r, i);
        if (why != NULL)
            buf_printf(&b, ": unsupported (%s)", why);
        else
            buf_printf(&b, ": %s%s", st_type_name(c->type), c->required ? " required" : "");
        buf_printf(&b, "  [%s %s", ci.physical, ci.repetition);
        if (ci.type_length >= 0)
            buf_printf(&b, " length=%d", (int)ci.type_length);
        if (ci.converted != NULL)
            buf_printf(&b, " converted=%s", ci.converted);
        if (ci.logical[0])
            buf_printf(&b, " logical=%s", ci.logical);
        buf_printf(&b, " max_def=%d max_rep=%d]\n", ci.max_def, ci.max_rep);
    }
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        uint64_t first, n;
        pq_row_group(r, g, &first, &n);
        int64_t comp = 0, uncomp = 0;
        for (int i = 0; i < ncols; i++) {
            struct pq_chunk_info ch;
            pq_chunk_info(r, g, i, &ch);
            comp += ch.total_compressed_size;
            uncomp += ch.total_uncompressed_size;
        }
        buf_printf(&b,
                   "row group %d: rows %" PRIu64 " (positions %" PRIu64 "..%" PRIu64 "), %" PRId64
                   " bytes compressed, %" PRId64 " uncompressed\n",
                   g, n, first, n ? first + n - 1 : first, comp, uncomp);
        for (int i = 0; i < ncols; i++) {
            struct pq_chunk_info ch;
            pq_chunk_info(r, g, i, &ch);
            struct pq_column_info ci;
            pq_column_info(r, i, &ci);
            buf_append_str(&b, "  ");
            cli_json_string(&b, ci.path, strlen(ci.path));
            buf_printf(&b,
                       ": %s %s values=%" PRId64 " compressed=%" PRId64 " uncompressed=%" PRId64
                       " data_page=%" PRId64,
                       ch.codec, ch.encodings, ch.num_values, ch.total_compressed_size,
                       ch.total_uncompressed_size, ch.data_page_offset);
            if (ch.dictionary_page_offset >= 0)
                buf_printf(&b, " dictionary_page=%" PRId64, ch.dictionary_page_offset);
            struct pq_col_stats st;
            if (pq_row_group_stats(r, g, i, &st)) {
                buf_append_str(&b, " stats:");
                print_stats(&b, pq_column(r, i)->type, &st);
            }
            buf_put_u8(&b, '\n');
        }
        if (b.len > (1u << 20) && flush_stdout(&b) != 0)
            goto fail;
    }
    int rc = 0;
    if (scan) {
        int *cols = xcalloc((size_t)ncols + 1, sizeof *cols);
        int k = 0;
        for (int i = 0; i < ncols; i++)
            if (pq_column_unsupported(r, i) == NULL)
                cols[k++] = i;
        struct pq_batch batch = {0};
        for (int g = 0; g < pq_num_row_groups(r) && rc == 0; g++) {
            if (pq_read_row_group(r, g, cols, k, &batch, &err) != ST_OK) {
                fprintf(stderr, "strike parquet meta: %s: %s\n", path, err.msg);
                rc = 1;
            }
        }
        pq_batch_free(&batch);
        free(cols);
        struct pq_read_counters cnt;
        pq_reader_counters(r, &cnt);
        buf_printf(&b,
                   "scan: %d columns decoded; pages: v1=%" PRIu64 " v2=%" PRIu64
                   " dictionary=%" PRIu64 "; value encodings:",
                   k, cnt.pages_v1, cnt.pages_v2, cnt.dict_pages);
        for (int e = 0; e < 32; e++)
            if (cnt.encodings_seen & (1u << e))
                buf_printf(&b, " %s", pq_encoding_name(e));
        buf_append_str(&b, "; codecs:");
        for (int e = 0; e < 32; e++)
            if (cnt.codecs_seen & (1u << e))
                buf_printf(&b, " %s", pq_codec_name(e));
        buf_put_u8(&b, '\n');
    }
    if (flush_stdout(&b) != 0)
        goto fail;
    buf_free(&b);
    pq_reader_close(r);
    return rc;
fail:
    buf_free(&b);
    pq_reader_close(r);
    return 1;
}

/* ---- cat ---- */

static int cmd_cat(int argc, char **argv)
{
    const char *path = NULL, *columns = NULL;
    uint64_t limit = UINT64_MAX;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--columns") == 0 && i + 1 < argc) {
            columns = argv[++i];
        } else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
            if (!parse_u64(argv[++i], &limit)) {
                fprintf(stderr, "strike parquet cat: --limit needs a non-negative integer\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || path != NULL) {
            fprintf(stderr, "strike parquet cat: unexpected argument '%s'\n", argv[i]);
            return 2;
        } else {
            path = argv[i];
        }
    }
    struct pq_reader *r;
    int code = open_file("cat", path, &r);
    if (code != 0)
        return code;
    struct st_err err = {0};
    int ncols = pq_ncols(r);
    int *cols = NULL;
    int k = 0;
    int rc = 0;
    if (columns != NULL) {
        char *list = xstrdup(columns);
        size_t n = 1;
        for (const char *s = list; *s; s++)
            n += *s == ',';
        cols = xcalloc(n, sizeof *cols);
        for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save)) {
            int i = pq_find_column(r, tok);
            if (i < 0) {
                fprintf(stderr, "strike parquet cat: %s has no column '%s'\n", path, tok);
                rc = 2;
                break;
            }
            cols[k++] = i;
        }
        free(list);
        if (rc == 0 && k == 0) {
            fprintf(stderr, "strike parquet cat: --columns lists no column\n");
            rc = 2;
        }
    } else {
        cols = xcalloc((size_t)ncols + 1, sizeof *cols);
        for (int i = 0; i < ncols; i++)
            cols[k++] = i;
    }
    /* JSON keys, escaped once */
    char **keys = xcalloc((size_t)k + 1, sizeof *keys);
    for (int j = 0; j < k && rc == 0; j++) {
        struct buf kb = BUF_INIT;
        struct pq_column_info ci;
        pq_column_info(r, cols[j], &ci);
        cli_json_string(&kb, ci.path, strlen(ci.path));
        buf_put_u8(&kb, ':');
        keys[j] = (char *)buf_detach(&kb, NULL);
    }
    struct buf out = BUF_INIT;
    struct pq_batch batch = {0};
    uint64_t printed = 0;
    for (int g = 0; g < pq_num_row_groups(r) && rc == 0 && printed < limit; g++) {
        if (pq_read_row_group(r, g, cols, k, &batch, &err) != ST_OK) {
            fprintf(stderr, "strike parquet cat: %s: %s\n", path, err.msg);
            rc = 1;
            break;
        }
        for (size_t i = 0; i < batch.nrows && printed < limit; i++, printed++) {
            buf_put_u8(&out, '{');
            for (int j = 0; j < k; j++) {
                if (j > 0)
                    buf_put_u8(&out, ',');
                buf_append_str(&out, keys[j]);
                struct st_value v;
                st_colvec_get(&batch.cols[j], i, &v);
                cli_json_value(&out, batch.cols[j].type, &v);
            }
            buf_append(&out, "}\n", 2);
            if (out.len >= (1u << 20) && flush_stdout(&out) != 0) {
                rc = 1;
                break;
            }
        }
    }
    if (rc == 0 && flush_stdout(&out) != 0)
        rc = 1;
    buf_free(&out);
    pq_batch_free(&batch);
    for (int j = 0; j < k; j++)
        free(keys[j]);
    free(keys);
    free(cols);
    pq_reader_close(r);
    return rc;
}

/* ---- write ---- */

static int parse_schema(const char *text, struct st_column **out, int *n)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (root == NULL) {
        fprintf(stderr, "strike parquet write: --schema: %s (column %d)\n", je.text, je.column);
        return 2;
    }
    json_t *arr = json_is_object(root) ? json_object_get(root, "columns") : root;
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > ST_COLUMNS_MAX) {
        fprintf(stderr, "strike parquet write: --schema must be a non-empty array of columns\n");
        json_decref(root);
        return 2;
    }
    size_t cnt = json_array_size(arr);
    struct st_column *cols = xcalloc(cnt, sizeof *cols);
    for (size_t i = 0; i < cnt; i++) {
        json_t *c = json_array_get(arr, i);
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *type = json_string_value(json_object_get(c, "type"));
        json_t *req = json_object_get(c, "required");
        if (name == NULL || type == NULL || !st_name_valid(name) ||
            !st_type_parse(type, &cols[i].type) || (req != NULL && !json_is_boolean(req))) {
            fprintf(stderr,
                    "strike parquet write: --schema column %zu: needs a valid \"name\", a "
                    "\"type\" (boolean, int, long, double, string, timestamp) and an optional "
                    "boolean \"required\"\n",
                    i);
            free(cols);
            json_decref(root);
            return 2;
        }
        snprintf(cols[i].name, sizeof cols[i].name, "%s", name);
        cols[i].required = json_is_true(req);
    }
    json_decref(root);
    *out = cols;
    *n = (int)cnt;
    return 0;
}

/* Convert a JSON value to a column value; *msg says why not. */
static bool json_to_value(const struct st_column *c, json_t *j, struct st_value *v,
                          const char **msg)
{
    memset(v, 0, sizeof *v);
    if (j == NULL || json_is_null(j)) {
        v->null = true;
        return true;
    }
    switch (c->type) {
    case ST_T_BOOLEAN:
        if (!json_is_boolean(j))
            break;
        v->v.b = json_is_true(j);
        return true;
    case ST_T_INT:
        if (!json_is_integer(j) || json_integer_value(j) < INT32_MIN ||
            json_integer_value(j) > INT32_MAX)
            break;
        v->v.i = (int32_t)json_integer_value(j);
        return true;
    case ST_T_LONG:
        if (!json_is_integer(j))
            break;
        v->v.l = (int64_t)json_integer_value(j);
        return true;
    case ST_T_DOUBLE:
        if (json_is_real(j)) {
            v->v.d = json_real_value(j);
            return true;
        }
        if (json_is_integer(j)) {
            v->v.d = (double)json_integer_value(j);
            return true;
        }
        if (json_is_string(j)) {
            const char *s = json_string_value(j);
            if (strcmp(s, "NaN") == 0)
                v->v.d = NAN;
            else if (strcmp(s, "Infinity") == 0)
                v->v.d = INFINITY;
            else if (strcmp(s, "-Infinity") == 0)
                v->v.d = -INFINITY;
            else
                break;
            return true;
        }
        break;
    case ST_T_STRING:
        if (!json_is_string(j))
            break;
        v->v.s.p = json_string_value(j);
        v->v.s.len = (uint32_t)json_string_length(j);
        if (json_string_length(j) > ST_STRING_MAX) {
            *msg = "string longer than 1 MiB";
            return false;
        }
        return true;
    case ST_T_TIMESTAMP:
        if (json_is_integer(j)) {
            v->v.l = (int64_t)json_integer_value(j);
            return true;
        }
        if (json_is_string(j) && st_parse_rfc3339(json_string_value(j), &v->v.l))
            return true;
        break;
    }
    *msg = "value does not match the column type";
    return false;
}

static int cmd_write(int argc, char **argv)
{
    const char *path = NULL, *schema = NULL;
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    const char **kv = xcalloc((size_t)argc * 2 + 1, sizeof *kv);
    size_t nkv = 0;
    char **kvbufs = xcalloc((size_t)argc + 1, sizeof *kvbufs);
    size_t nkvbufs = 0;
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        uint64_t v = 0;
        if (strcmp(argv[i], "--schema") == 0 && i + 1 < argc) {
            schema = argv[++i];
        } else if (strcmp(argv[i], "--row-group-rows") == 0 && i + 1 < argc) {
            if (!parse_u64(argv[++i], &v) || v == 0 || v > UINT32_MAX)
                rc = 2;
            o.row_group_rows = (uint32_t)v;
        } else if (strcmp(argv[i], "--zstd-level") == 0 && i + 1 < argc) {
            if (!parse_u64(argv[++i], &v) || v == 0 || v > 22)
                rc = 2;
            o.zstd_level = (int)v;
        } else if (strcmp(argv[i], "--compression") == 0 && i + 1 < argc) {
            i++;
            if (strcmp(argv[i], "zstd") == 0)
                o.compression = PQ_COMPRESS_ZSTD;
            else if (strcmp(argv[i], "none") == 0)
                o.compression = PQ_COMPRESS_NONE;
            else
                rc = 2;
        } else if (strcmp(argv[i], "--no-dictionary") == 0) {
            o.dictionary = false;
        } else if (strcmp(argv[i], "--kv") == 0 && i + 1 < argc) {
            char *s = kvbufs[nkvbufs++] = xstrdup(argv[++i]);
            char *eq = strchr(s, '=');
            if (eq == NULL) {
                rc = 2;
            } else {
                *eq = '\0';
                kv[nkv++] = s;
                kv[nkv++] = eq + 1;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            goto out;
        } else if (argv[i][0] == '-' || path != NULL) {
            rc = 2;
        } else {
            path = argv[i];
        }
        if (rc != 0)
            fprintf(stderr, "strike parquet write: bad argument '%s'\n", argv[i]);
    }
    if (rc == 0 && (path == NULL || schema == NULL)) {
        usage(stderr);
        rc = 2;
    }
    struct st_column *cols = NULL;
    int ncols = 0;
    if (rc == 0)
        rc = parse_schema(schema, &cols, &ncols);
    if (rc != 0)
        goto out;
    o.kv = kv;
    struct st_err err = {0};
    struct st_afile af;
    struct pq_writer *w = NULL;
    if (st_afile_open(&af, path, &err) != ST_OK) {
        fprintf(stderr, "strike parquet write: %s\n", err.msg);
        free(cols);
        rc = 1;
        goto out;
    }
    if (pq_writer_open(&w, cols, ncols, &o, pq_write_afile, &af, &err) != ST_OK) {
        fprintf(stderr, "strike parquet write: %s\n", err.msg);
        rc = 1;
    }
    struct st_value *row = xcalloc((size_t)ncols, sizeof *row);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t lineno = 0;
    while (rc == 0 && (len = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        if (len == 0 || (len == 1 && line[0] == '\n'))
            continue;
        json_error_t je;
        json_t *obj = json_loadb(line, (size_t)len, 0, &je);
        if (obj == NULL || !json_is_object(obj)) {
            fprintf(stderr, "strike parquet write: stdin line %" PRIu64 ": %s\n", lineno,
                    obj == NULL ? je.text : "not a JSON object");
            json_decref(obj);
            rc = 1;
            break;
        }
        const char *key;
        json_t *val;
        json_object_foreach(obj, key, val)
        {
            bool known = false;
            for (int c = 0; c < ncols && !known; c++)
                known = strcmp(cols[c].name, key) == 0;
            if (!known) {
                fprintf(stderr,
                        "strike parquet write: stdin line %" PRIu64 ": unknown column '%s'\n",
                        lineno, key);
                rc = 1;
            }
        }
        for (int c = 0; c < ncols && rc == 0; c++) {
            const char *msg = NULL;
            if (!json_to_value(&cols[c], json_object_get(obj, cols[c].name), &row[c], &msg)) {
                fprintf(stderr, "strike parquet write: stdin line %" PRIu64 ": column '%s': %s\n",
                        lineno, cols[c].name, msg);
                rc = 1;
            }
        }
        if (rc == 0 && pq_writer_add_row(w, row, &err) != ST_OK) {
            fprintf(stderr, "strike parquet write: stdin line %" PRIu64 ": %s\n", lineno, err.msg);
            rc = 1;
        }
        json_decref(obj);
    }
    free(line);
    free(row);
    struct pq_file_stats st = {0};
    if (rc == 0 && pq_writer_finish(w, &st, &err) != ST_OK) {
        fprintf(stderr, "strike parquet write: %s\n", err.msg);
        rc = 1;
    }
    pq_writer_free(w);
    if (rc == 0 && st_afile_commit(&af, &err) != ST_OK) {
        fprintf(stderr, "strike parquet write: %s\n", err.msg);
        rc = 1;
    } else if (rc != 0) {
        st_afile_abort(&af);
    }
    if (rc == 0)
        fprintf(stderr, "wrote %" PRIu64 " rows, %" PRIu64 " bytes to %s\n", st.num_rows,
                st.file_size, path);
    pq_file_stats_free(&st);
    free(cols);
out:
    for (size_t i = 0; i < nkvbufs; i++)
        free(kvbufs[i]);
    free(kvbufs);
    free(kv);
    return rc;
}

int cli_parquet(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "meta") == 0)
        return cmd_meta(argc - 1, argv + 1);
    if (strcmp(argv[1], "cat") == 0)
        return cmd_cat(argc - 1, argv + 1);
    if (strcmp(argv[1], "write") == 0)
        return cmd_write(argc - 1, argv + 1);
    fprintf(stderr, "strike parquet: unknown subcommand '%s' (see strike parquet --help)\n",
            argv[1]);
    return 2;
}
