/*
 * cli_load.c - `strike load` (rows from NDJSON, CSV with a header, or
 * Parquet, sent as upserts) and `strike changes` (NDJSON of strike changes
 * or Debezium events), in chunks of --batch rows (at most 32 MiB each).
 *
 * Every chunk carries a deterministic Idempotency-Key: "ld-" + the first 32
 * hex digits of the SHA-256 of the input (of the whole file; for stdin, of
 * the chunk itself) + the batch size + the chunk index. Re-sending a chunk
 * that committed gets the server's stored answer (Idempotent-Replayed), so
 * `--resume` after a crash re-reads the input and applies each chunk once.
 * Without --resume, a first chunk answered as a replay means the same input
 * was loaded before: the load stops with exit 4 (use --resume to continue
 * it, --new to load it again with fresh keys).
 *
 * Progress on stderr: a bar with rows, MiB, rate and ETA on a terminal,
 * else a line every 5 s; -q for none.
 */
#include "cli_client.h"

#include "common/sha256.h"
#include "parquet/parquet.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define BATCH_DEFAULT 10000
#define BATCH_MAX 1000000
#define CHUNK_BYTES_MAX ((size_t)32 << 20)
#define LINE_MAX_BYTES ((size_t)16 << 20)

enum in_format { IN_NDJSON, IN_CSV, IN_PARQUET };

struct loader {
    struct cli_ctx x;
    const char *table, *path;
    bool changes; /* strike changes */
    enum in_format fmt;
    int64_t batch;
    bool resume, fresh;
    FILE *in;
    char digest[33]; /* "" for stdin: per chunk */
    char nonce[37];  /* --new */
    uint64_t total_bytes, read_bytes;
    uint64_t line_no;
    /* CSV */
    json_t *csv_types; /* per column: the type name */
    char **csv_names;
    size_t csv_ncols;
    /* Parquet */
    struct pq_reader *pq;
    int pq_group;
    struct pq_batch pq_batch;
    size_t pq_row;
    char **pq_keys;
    int pq_ncols;
    /* counts */
    uint64_t rows, chunks, replayed;
    int64_t inserted, updated, deleted, stale, seq;
    double t0, last_note;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char LOAD_HELP[] =
    "usage: strike load TABLE FILE [--format ndjson|csv|parquet] [--batch N] [--resume | --new]\n"
    "  upserts the rows of FILE ('-': stdin) in chunks of N rows (default 10000).\n"
    "  NDJSON: one row object per line; CSV: a header of column names, empty\n"
    "  unquoted fields are null; Parquet: columns by name. The format comes\n"
    "  from the extension (.csv, .parquet) unless given; stdin is NDJSON.\n"
    "  --resume  continue a load that was interrupted: chunks that committed are\n"
    "            not applied again (use the same FILE and --batch)\n"
    "  --new     load FILE again even though it was loaded before\n"
    "example:\n"
    "  strike load orders orders.ndjson --batch 20000\n";

static const char CHANGES_HELP[] =
    "usage: strike changes TABLE FILE [--batch N] [--resume | --new]\n"
    "  posts the changes of FILE ('-': stdin), one per line: strike changes\n"
    "  ({\"op\":\"upsert\",\"row\":{...}}, {\"op\":\"delete\",\"key\":{...}}) or Debezium\n"
    "  events (op c/r/u/d with before/after, with or without the\n"
    "  {\"schema\",\"payload\"} wrapper), in chunks of N (default 10000).\n"
    "example:\n"
    "  strike changes orders cdc.ndjson --resume\n";

/* ---- input ---- */

static bool digest_file(struct loader *L)
{
    FILE *f = fopen(L->path, "rb");
    if (f == NULL)
        return false;
    struct st_sha256 s;
    st_sha256_init(&s);
    char *b = malloc(1 << 20);
    size_t n;
    while ((n = fread(b, 1, 1 << 20, f)) > 0)
        st_sha256_update(&s, b, n);
    bool ok = !ferror(f);
    free(b);
    fclose(f);
    uint8_t d[32];
    st_sha256_final(&s, d);
    char hex[65];
    st_sha256_hex(d, hex);
    memcpy(L->digest, hex, 32);
    L->digest[32] = 0;
    return ok;
}

/* One line without its newline (and a CR before it) into *line; false at EOF. */
static bool read_line(struct loader *L, char **line, size_t *cap, size_t *len)
{
    ssize_t n = getline(line, cap, L->in);
    if (n < 0)
        return false;
    L->read_bytes += (uint64_t)n;
    L->line_no++;
    while (n > 0 && ((*line)[n - 1] == '\n' || (*line)[n - 1] == '\r'))
        n--;
    (*line)[n] = 0;
    *len = (size_t)n;
    return true;
}

static bool blank(const char *s)
{
    return s[strspn(s, " \t")] == 0;
}

/* ---- CSV ---- */

/* Split one CSV record (RFC 4180; a quoted field may span lines) into
 * fields; quoted[i] tells a quoted field. Returns the count, -1 on error. */
static int csv_record(struct loader *L, char **line, size_t *cap, size_t *len, struct buf *fields,
                      size_t *offs, bool *quoted, size_t max)
{
    buf_reset(fields);
    size_t nf = 0;
    size_t i = 0;
    for (;;) {
        if (nf >= max)
            return -1;
        offs[nf] = fields->len;
        quoted[nf] = false;
        if ((*line)[i] == '"') {
            quoted[nf] = true;
            i++;
            for (;;) {
                char c = (*line)[i];
                if (c == 0) {
                    /* the field goes on on the next line */
                    buf_put_u8(fields, '\n');
                    if (!read_line(L, line, cap, len))
                        return -1;
                    i = 0;
                    continue;
                }
                if (c == '"') {
                    if ((*line)[i + 1] == '"') {
                        buf_put_u8(fields, '"');
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                buf_put_u8(fields, (uint8_t)c);
                i++;
            }
        } else {
            while ((*line)[i] != 0 && (*line)[i] != ',')
                buf_put_u8(fields, (uint8_t)(*line)[i++]);
        }
        buf_put_u8(fields, 0);
        nf++;
        if ((*line)[i] == ',') {
            i++;
            continue;
        }
        if ((*line)[i] != 0)
            return -1;
        return (int)nf;
    }
}

static bool csv_value(struct buf *b, const char *type, const char *s, bool quoted)
{
    if (!quoted && s[0] == 0) {
        buf_append_str(b, "null");
        return true;
    }
    if (strcmp(type, "string") == 0) {
        cli_json_string(b, s, strlen(s));
        return true;
    }
    if (strcmp(type, "long") == 0 || strcmp(type, "int") == 0) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (*end != 0 || errno != 0)
            return false;
        buf_printf(b, "%lld", v);
        return true;
    }
    if (strcmp(type, "double") == 0) {
        char *end;
        double d = strtod(s, &end);
        if (*end != 0 || end == s || d != d || d - d != 0)
            return false;
        cli_json_double(b, d);
        return true;
    }
    if (strcmp(type, "boolean") == 0) {
        if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0 || strcasecmp(s, "t") == 0)
            buf_append_str(b, "true");
        else if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0 || strcasecmp(s, "f") == 0)
            buf_append_str(b, "false");
        else
            return false;
        return true;
    }
    if (strcmp(type, "timestamp") == 0) {
        if (s[strspn(s, "-0123456789")] == 0)
            buf_append_str(b, s); /* microseconds */
        else
            cli_json_string(b, s, strlen(s));
        return true;
    }
    return false;
}

/* ---- rows ---- */

struct rowbuf {
    char *line;
    size_t cap, len;
    struct buf fields;
    size_t offs[4096];
    bool quoted[4096];
};

/* Append the next change (with a leading ',' unless first) to body. 1 row
 * added, 0 end of input, -1 error (printed). */
static int next_change(struct loader *L, struct rowbuf *rb, struct buf *body, bool first)
{
    if (L->fmt == IN_PARQUET) {
        while (L->pq_row >= L->pq_batch.nrows) {
            if (L->pq_group >= pq_num_row_groups(L->pq))
                return 0;
            struct st_err err = {0};
            int *cols = calloc((size_t)L->pq_ncols + 1, sizeof *cols);
            for (int j = 0; j < L->pq_ncols; j++)
                cols[j] = j;
            int rc = pq_read_row_group(L->pq, L->pq_group++, cols, L->pq_ncols, &L->pq_batch, &err);
            free(cols);
            if (rc != ST_OK) {
                fprintf(stderr, "strike load: %s: %s\n", L->path, err.msg);
                return -1;
            }
            L->pq_row = 0;
        }
        buf_append_str(body,
                       first ? "{\"op\":\"upsert\",\"row\":{" : ",{\"op\":\"upsert\",\"row\":{");
        for (int j = 0; j < L->pq_ncols; j++) {
            if (j > 0)
                buf_put_u8(body, ',');
            buf_append_str(body, L->pq_keys[j]);
            struct st_value v;
            st_colvec_get(&L->pq_batch.cols[j], L->pq_row, &v);
            cli_json_value(body, L->pq_batch.cols[j].type, &v);
        }
        buf_append_str(body, "}}");
        L->pq_row++;
        return 1;
    }
    for (;;) {
        if (!read_line(L, &rb->line, &rb->cap, &rb->len))
            return ferror(L->in) ? (fprintf(stderr, "strike %s: %s: %s\n", L->x.cmd, L->path,
                                            strerror(errno)),
                                    -1)
                                 : 0;
        if (blank(rb->line))
            continue;
        if (rb->len > LINE_MAX_BYTES) {
            fprintf(stderr, "strike %s: %s: line %" PRIu64 ": longer than 16 MiB\n", L->x.cmd,
                    L->path, L->line_no);
            return -1;
        }
        if (!first)
            buf_put_u8(body, ',');
        if (L->fmt == IN_CSV) {
            uint64_t at = L->line_no;
            int nf = csv_record(L, &rb->line, &rb->cap, &rb->len, &rb->fields, rb->offs, rb->quoted,
                                4096);
            if (nf != (int)L->csv_ncols) {
                fprintf(stderr,
                        "strike load: %s: line %" PRIu64 ": %s (%zu columns in the header)\n",
                        L->path, at, nf < 0 ? "malformed CSV record" : "wrong number of fields",
                        L->csv_ncols);
                return -1;
            }
            buf_append_str(body, "{\"op\":\"upsert\",\"row\":{");
            for (size_t j = 0; j < L->csv_ncols; j++) {
                if (j > 0)
                    buf_put_u8(body, ',');
                cli_json_string(body, L->csv_names[j], strlen(L->csv_names[j]));
                buf_put_u8(body, ':');
                const char *type = json_string_value(json_array_get(L->csv_types, j));
                const char *s = (const char *)rb->fields.data + rb->offs[j];
                if (!csv_value(body, type, s, rb->quoted[j])) {
                    fprintf(stderr,
                            "strike load: %s: line %" PRIu64
                            ": column \"%s\": not a %s: \"%.40s\"\n",
                            L->path, at, L->csv_names[j], type, s);
                    return -1;
                }
            }
            buf_append_str(body, "}}");
            return 1;
        }
        /* NDJSON */
        const char *p = rb->line + strspn(rb->line, " \t");
        if (*p != '{') {
            fprintf(stderr, "strike %s: %s: line %" PRIu64 ": not a JSON object\n", L->x.cmd,
                    L->path, L->line_no);
            return -1;
        }
        if (!L->changes) {
            buf_append_str(body, "{\"op\":\"upsert\",\"row\":");
            buf_append(body, p, rb->len - (size_t)(p - rb->line));
            buf_put_u8(body, '}');
            return 1;
        }
        json_error_t je;
        json_t *c = json_loads(p, 0, &je);
        if (!json_is_object(c)) {
            fprintf(stderr, "strike changes: %s: line %" PRIu64 ": %s\n", L->path, L->line_no,
                    c == NULL ? je.text : "not an object");
            json_decref(c);
            return -1;
        }
        json_t *payload = json_object_get(c, "payload");
        const json_t *use = json_is_object(payload) && json_object_get(payload, "op") ? payload : c;
        char *text = json_dumps(use, JSON_COMPACT);
        buf_append_str(body, text);
        free(text);
        json_decref(c);
        return 1;
    }
}

/* ---- progress ---- */

static void human_rate(char *out, size_t cap, double v)
{
    if (v >= 1e6)
        snprintf(out, cap, "%.2fM", v / 1e6);
    else if (v >= 1e3)
        snprintf(out, cap, "%.1fk", v / 1e3);
    else
        snprintf(out, cap, "%.0f", v);
}

static void progress(struct loader *L, bool done)
{
    if (L->x.quiet)
        return;
    double t = now_s();
    double el = t - L->t0;
    if (!done && !L->x.err_tty && t - L->last_note < 5.0)
        return;
    L->last_note = t;
    double rate = el > 0 ? (double)L->rows / el : 0;
    char r[32];
    human_rate(r, sizeof r, rate);
    double mib = (double)L->read_bytes / 1048576.0;
    if (L->x.err_tty) {
        char bar[32] = "";
        char eta[32] = "";
        if (L->total_bytes > 0) {
            double frac = (double)L->read_bytes / (double)L->total_bytes;
            if (frac > 1)
                frac = 1;
            int fill = (int)(frac * 24);
            for (int i = 0; i < 24; i++)
                bar[i] = i < fill ? '#' : '.';
            bar[24] = 0;
            double left = frac > 0 ? el / frac - el : 0;
            snprintf(eta, sizeof eta, " ETA %d:%02d", (int)left / 60, (int)left % 60);
            fprintf(stderr, "\r[%s] %3.0f%% %" PRIu64 " rows %.1f MiB %s rows/s%s\033[K", bar,
                    frac * 100, L->rows, mib, r, done ? "" : eta);
        } else {
            fprintf(stderr, "\r%" PRIu64 " rows %.1f MiB %s rows/s\033[K", L->rows, mib, r);
        }
        if (done)
            fputc('\n', stderr);
    } else if (!done) {
        fprintf(stderr, "strike %s: %" PRIu64 " rows, %" PRIu64 " chunks, %.1f MiB, %s rows/s\n",
                L->x.cmd, L->rows, L->chunks, mib, r);
    }
}

/* ---- send ---- */

static int send_chunk(struct loader *L, struct buf *body, uint64_t nrows)
{
    buf_append_str(body, "]}");
    char key[128];
    if (L->digest[0] != 0) {
        snprintf(key, sizeof key, "ld-%s-%s%s%" PRId64 "-%" PRIu64, L->digest,
                 L->fresh ? L->nonce : "", L->fresh ? "-" : "", L->batch, L->chunks);
    } else {
        uint8_t d[32];
        char hex[65];
        st_sha256(body->data, body->len, d);
        st_sha256_hex(d, hex);
        hex[32] = 0;
        snprintf(key, sizeof key, "ld-%s-%s%s%" PRId64 "-%" PRIu64, hex, L->fresh ? L->nonce : "",
                 L->fresh ? "-" : "", L->batch, L->chunks);
    }
    struct strike_call call = {.idempotency_key = key};
    struct strike_meta meta;
    struct strike_error e = {0};
    json_t *ans = NULL;
    int rc =
        strike_changes_raw(L->x.client, L->table, body->data, body->len, &call, &ans, &meta, &e);
    if (rc != STRIKE_OK) {
        if (L->x.err_tty && !L->x.quiet)
            fputc('\n', stderr);
        fprintf(stderr, "strike %s: chunk %" PRIu64 " (rows %" PRIu64 "-%" PRIu64 "): ", L->x.cmd,
                L->chunks, L->rows, L->rows + nrows - 1);
        return cli_fail(&L->x, rc, &e);
    }
    if (meta.replayed && meta.attempts == 1 && !L->resume) {
        if (L->x.err_tty && !L->x.quiet)
            fputc('\n', stderr);
        fprintf(stderr,
                "strike %s: chunk %" PRIu64 " of %s was already applied to %s (same input, same "
                "--batch): --resume continues an interrupted load, --new loads it again\n",
                L->x.cmd, L->chunks, L->path, L->table);
        json_decref(ans);
        return CLI_CONFLICT;
    }
    if (meta.replayed)
        L->replayed++;
    else {
        L->inserted += json_integer_value(json_object_get(ans, "inserted"));
        L->updated += json_integer_value(json_object_get(ans, "updated"));
        L->deleted += json_integer_value(json_object_get(ans, "deleted"));
        L->stale += json_integer_value(json_object_get(ans, "stale"));
    }
    L->seq = json_integer_value(json_object_get(ans, "seq"));
    json_decref(ans);
    L->chunks++;
    L->rows += nrows;
    progress(L, false);
    return 0;
}

static int open_input(struct loader *L)
{
    if (strcmp(L->path, "-") == 0) {
        if (L->fmt == IN_PARQUET) {
            fprintf(stderr,
                    "strike load: Parquet cannot be read from stdin (it is read from its end)\n");
            return CLI_USAGE;
        }
        L->in = stdin;
        return 0;
    }
    struct stat st;
    if (stat(L->path, &st) != 0 || !digest_file(L)) {
        fprintf(stderr, "strike %s: %s: %s\n", L->x.cmd, L->path, strerror(errno));
        return CLI_ERROR;
    }
    L->total_bytes = (uint64_t)st.st_size;
    if (L->fmt == IN_PARQUET) {
        struct st_err err = {0};
        if (pq_reader_open(L->path, &L->pq, &err) != ST_OK) {
            fprintf(stderr, "strike load: %s: %s\n", L->path, err.msg);
            return CLI_ERROR;
        }
        L->pq_ncols = pq_ncols(L->pq);
        L->pq_keys = calloc((size_t)L->pq_ncols + 1, sizeof *L->pq_keys);
        for (int j = 0; j < L->pq_ncols; j++) {
            struct buf kb = BUF_INIT;
            struct pq_column_info ci;
            pq_column_info(L->pq, j, &ci);
            cli_json_string(&kb, ci.path, strlen(ci.path));
            buf_put_u8(&kb, ':');
            L->pq_keys[j] = (char *)buf_detach(&kb, NULL);
        }
        return 0;
    }
    L->in = fopen(L->path, "rb");
    if (L->in == NULL) {
        fprintf(stderr, "strike %s: %s: %s\n", L->x.cmd, L->path, strerror(errno));
        return CLI_ERROR;
    }
    return 0;
}

/* The CSV header, checked against the table's columns. */
static int csv_header(struct loader *L, struct rowbuf *rb)
{
    json_t *t = NULL;
    struct strike_error e = {0};
    int rc = strike_table_get(L->x.client, L->table, &t, &e);
    if (rc != STRIKE_OK)
        return cli_fail(&L->x, rc, &e);
    int code = 0;
    if (!read_line(L, &rb->line, &rb->cap, &rb->len)) {
        fprintf(stderr, "strike load: %s: no header line\n", L->path);
        json_decref(t);
        return CLI_ERROR;
    }
    int nf = csv_record(L, &rb->line, &rb->cap, &rb->len, &rb->fields, rb->offs, rb->quoted, 4096);
    if (nf <= 0) {
        fprintf(stderr, "strike load: %s: line 1: malformed CSV header\n", L->path);
        json_decref(t);
        return CLI_ERROR;
    }
    L->csv_ncols = (size_t)nf;
    L->csv_names = calloc((size_t)nf + 1, sizeof *L->csv_names);
    L->csv_types = json_array();
    for (int j = 0; j < nf; j++) {
        const char *name = (const char *)rb->fields.data + rb->offs[j];
        L->csv_names[j] = strdup(name);
        const char *type = NULL;
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(t, "columns"), i, c)
        {
            if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
                type = json_string_value(json_object_get(c, "type"));
        }
        if (type == NULL) {
            fprintf(stderr, "strike load: %s: header: table %s has no column \"%s\"\n", L->path,
                    L->table, name);
            code = CLI_ERROR;
            break;
        }
        json_array_append_new(L->csv_types, json_string(type));
    }
    json_decref(t);
    return code;
}

static int run_load(int argc, char **argv, bool changes)
{
    struct loader L = {.changes = changes, .batch = BATCH_DEFAULT, .pq_group = 0};
    const char *cmd = changes ? "changes" : "load";
    int code = cli_ctx_init(&L.x, cmd, &argc, argv);
    if (code)
        return code;
    const char *format = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(changes ? CHANGES_HELP : LOAD_HELP, stdout);
            return 0;
        } else if (strcmp(argv[i], "--batch") == 0 && v) {
            char *end;
            errno = 0;
            long long n = strtoll(v, &end, 10);
            if (*end != 0 || errno != 0 || n < 1 || n > BATCH_MAX) {
                fprintf(stderr, "strike %s: --batch: 1 to %d rows (got \"%s\")\n", cmd, BATCH_MAX,
                        v);
                return CLI_USAGE;
            }
            L.batch = n;
            i++;
        } else if (strcmp(argv[i], "--format") == 0 && v && !changes) {
            format = argv[++i];
        } else if (strcmp(argv[i], "--resume") == 0) {
            L.resume = true;
        } else if (strcmp(argv[i], "--new") == 0) {
            L.fresh = true;
        } else if ((argv[i][0] != '-' || strcmp(argv[i], "-") == 0) && L.table == NULL) {
            L.table = argv[i];
        } else if ((argv[i][0] != '-' || strcmp(argv[i], "-") == 0) && L.path == NULL) {
            L.path = argv[i];
        } else {
            fprintf(stderr, "strike %s: unexpected or incomplete argument \"%s\" (see --help)\n",
                    cmd, argv[i]);
            return CLI_USAGE;
        }
    }
    if (L.table == NULL || L.path == NULL) {
        fprintf(stderr, "strike %s: needs TABLE and FILE (see --help)\n", cmd);
        return CLI_USAGE;
    }
    if (L.resume && L.fresh) {
        fprintf(stderr, "strike %s: --resume and --new exclude each other\n", cmd);
        return CLI_USAGE;
    }
    size_t pl = strlen(L.path);
    L.fmt = IN_NDJSON;
    if (format != NULL) {
        if (strcmp(format, "csv") == 0)
            L.fmt = IN_CSV;
        else if (strcmp(format, "parquet") == 0)
            L.fmt = IN_PARQUET;
        else if (strcmp(format, "ndjson") != 0) {
            fprintf(stderr, "strike load: --format: ndjson, csv or parquet (got \"%s\")\n", format);
            return CLI_USAGE;
        }
    } else if (!changes && pl > 4 && strcmp(L.path + pl - 4, ".csv") == 0) {
        L.fmt = IN_CSV;
    } else if (!changes && pl > 8 && strcmp(L.path + pl - 8, ".parquet") == 0) {
        L.fmt = IN_PARQUET;
    }
    if (L.fresh)
        strike_new_key(L.nonce);
    struct strike_error e = {0};
    L.x.client = strike_client_new(&L.x.opt, &e);
    if (L.x.client == NULL) {
        fprintf(stderr, "strike %s: %s\n", cmd, e.detail);
        return CLI_USAGE;
    }
    struct rowbuf *rb = calloc(1, sizeof *rb);
    struct buf body = BUF_INIT;
    code = open_input(&L);
    if (code == 0 && L.fmt == IN_CSV)
        code = csv_header(&L, rb);
    L.t0 = L.last_note = now_s();
    while (code == 0) {
        buf_reset(&body);
        buf_append_str(&body, "{\"changes\":[");
        uint64_t n = 0;
        int r = 0;
        while (n < (uint64_t)L.batch && body.len < CHUNK_BYTES_MAX &&
               (r = next_change(&L, rb, &body, n == 0)) == 1)
            n++;
        if (r < 0) {
            code = CLI_ERROR;
            break;
        }
        if (n > 0)
            code = send_chunk(&L, &body, n);
        if (r == 0)
            break;
    }
    if (code == 0) {
        progress(&L, true);
        double el = now_s() - L.t0;
        cli_note(&L.x,
                 "%" PRIu64 " rows in %" PRIu64 " chunks (%" PRIu64
                 " already applied) in %.1f s: %" PRId64 " inserted, %" PRId64 " updated, %" PRId64
                 " deleted, %" PRId64 " stale; table at seq %" PRId64 "\n",
                 L.rows, L.chunks, L.replayed, el, L.inserted, L.updated, L.deleted, L.stale,
                 L.seq);
        json_t *sum = json_pack(
            "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "rows", (json_int_t)L.rows, "chunks",
            (json_int_t)L.chunks, "replayed_chunks", (json_int_t)L.replayed, "inserted",
            (json_int_t)L.inserted, "updated", (json_int_t)L.updated, "deleted",
            (json_int_t)L.deleted, "stale", (json_int_t)L.stale, "seq", (json_int_t)L.seq);
        if (L.x.out == OUT_JSON) {
            json_dumpf(sum, stdout, JSON_COMPACT);
            fputc('\n', stdout);
        }
        json_decref(sum);
    }
    buf_free(&body);
    buf_free(&rb->fields);
    free(rb->line);
    free(rb);
    if (L.in != NULL && L.in != stdin)
        fclose(L.in);
    if (L.pq != NULL)
        pq_reader_close(L.pq);
    pq_batch_free(&L.pq_batch);
    for (int j = 0; j < L.pq_ncols; j++)
        free(L.pq_keys[j]);
    free(L.pq_keys);
    for (size_t j = 0; j < L.csv_ncols; j++)
        free(L.csv_names[j]);
    free(L.csv_names);
    json_decref(L.csv_types);
    cli_ctx_free(&L.x);
    return code;
}

int cli_load(int argc, char **argv)
{
    return run_load(argc, argv, false);
}

int cli_changes(int argc, char **argv)
{
    return run_load(argc, argv, true);
}
