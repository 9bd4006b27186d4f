/*
 * cli_client.c - the client commands of `strike` (README "Command line"):
 * tables, scan, delete, plan, dv get, snapshots, compact, expire, erase,
 * erasures, health, all through libstrike (clients/libstrike/), so only
 * the wire contract of docs/API.md. load and changes are in cli_load.c.
 *
 * Data goes to stdout (table on a terminal, else JSON; --output or
 * STRIKE_OUTPUT to choose), notes and errors to stderr. Exit codes: 0 ok,
 * 1 error, 2 usage, 3 not found, 4 conflict, 5 unavailable.
 */
#include "cli_client.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_tables(int argc, char **argv);
int cli_scan(int argc, char **argv);
int cli_delete(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_dvget(int argc, char **argv);
int cli_snapshots(int argc, char **argv);
int cli_compact(int argc, char **argv);
int cli_expire(int argc, char **argv);
int cli_erase(int argc, char **argv);
int cli_erasures(int argc, char **argv);
int cli_health(int argc, char **argv);

/* ---- global options ---- */

static const char GLOBAL_HELP[] =
    "global options (anywhere on the line):\n"
    "  --server URL      the striked to talk to (env STRIKE_SERVER, default "
    "http://127.0.0.1:8080)\n"
    "  --token TOKEN     bearer token (env STRIKE_TOKEN)\n"
    "  --cacert FILE     CA bundle (PEM) for an https server\n"
    "  --timeout SECS    give up on a request after SECS (default: none)\n"
    "  --retries N       retries of 503 and commit conflicts (default 5)\n"
    "  --output FMT      table, json or csv (env STRIKE_OUTPUT; default table on a\n"
    "                    terminal, json otherwise)\n"
    "  -q, --quiet       no notes or progress on stderr\n"
    "exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 conflict, 5 unavailable\n";

static bool parse_output(const char *s, enum cli_output *o)
{
    if (strcmp(s, "table") == 0)
        *o = OUT_TABLE;
    else if (strcmp(s, "json") == 0)
        *o = OUT_JSON;
    else if (strcmp(s, "csv") == 0)
        *o = OUT_CSV;
    else
        return false;
    return true;
}

int cli_ctx_init(struct cli_ctx *x, const char *cmd, int *argc, char **argv)
{
    memset(x, 0, sizeof *x);
    x->cmd = cmd;
    x->opt.base_url = getenv("STRIKE_SERVER");
    if (x->opt.base_url == NULL || x->opt.base_url[0] == 0)
        x->opt.base_url = "http://127.0.0.1:8080";
    x->opt.token = getenv("STRIKE_TOKEN");
    x->opt.max_retries = -1;
    x->out = isatty(STDOUT_FILENO) ? OUT_TABLE : OUT_JSON;
    const char *env_out = getenv("STRIKE_OUTPUT");
    if (env_out != NULL && env_out[0] != 0 && !parse_output(env_out, &x->out)) {
        fprintf(stderr, "strike %s: STRIKE_OUTPUT: table, json or csv (got \"%s\")\n", cmd,
                env_out);
        return CLI_USAGE;
    }
    const char *nc = getenv("NO_COLOR");
    x->color = isatty(STDOUT_FILENO) && (nc == NULL || nc[0] == 0);
    x->err_tty = isatty(STDERR_FILENO);
    int k = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < *argc ? argv[i + 1] : NULL;
        bool takes = strcmp(a, "--server") == 0 || strcmp(a, "--token") == 0 ||
                     strcmp(a, "--cacert") == 0 || strcmp(a, "--output") == 0 ||
                     strcmp(a, "--timeout") == 0 || strcmp(a, "--retries") == 0;
        if (takes && v == NULL) {
            fprintf(stderr, "strike %s: %s needs a value\n", cmd, a);
            return CLI_USAGE;
        }
        if (strcmp(a, "--server") == 0) {
            x->opt.base_url = v;
        } else if (strcmp(a, "--token") == 0) {
            x->opt.token = v;
        } else if (strcmp(a, "--cacert") == 0) {
            x->opt.ca_file = v;
        } else if (strcmp(a, "--output") == 0) {
            if (!parse_output(v, &x->out)) {
                fprintf(stderr, "strike %s: --output: table, json or csv (got \"%s\")\n", cmd, v);
                return CLI_USAGE;
            }
        } else if (strcmp(a, "--timeout") == 0 || strcmp(a, "--retries") == 0) {
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (*end != 0 || errno != 0 || n < 0 || n > 86400) {
                fprintf(stderr, "strike %s: %s: a whole number (got \"%s\")\n", cmd, a, v);
                return CLI_USAGE;
            }
            if (a[2] == 't')
                x->opt.timeout_ms = n * 1000;
            else
                x->opt.max_retries = (int)n;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            x->quiet = true;
            continue;
        } else {
            argv[k++] = argv[i];
            continue;
        }
        i++;
    }
    argv[k] = NULL;
    *argc = k;
    return 0;
}

static int connect_client(struct cli_ctx *x)
{
    struct strike_error e = {0};
    x->client = strike_client_new(&x->opt, &e);
    if (x->client == NULL) {
        fprintf(stderr, "strike %s: %s\n", x->cmd, e.detail);
        return CLI_USAGE;
    }
    return 0;
}

void cli_ctx_free(struct cli_ctx *x)
{
    strike_client_free(x->client);
    x->client = NULL;
}

int cli_fail(const struct cli_ctx *x, int rc, const struct strike_error *e)
{
    if (e->http_status > 0)
        fprintf(stderr, "strike %s: %s (HTTP %ld)\n", x->cmd, e->detail, e->http_status);
    else
        fprintf(stderr, "strike %s: %s\n", x->cmd, e->detail);
    switch (rc) {
    case STRIKE_ENOTFOUND:
        return CLI_NOTFOUND;
    case STRIKE_ECONFLICT:
        return CLI_CONFLICT;
    case STRIKE_EUNAVAIL:
        return CLI_UNAVAILABLE;
    case STRIKE_EINVAL:
        return CLI_USAGE;
    default:
        return CLI_ERROR;
    }
}

void cli_note(const struct cli_ctx *x, const char *fmt, ...)
{
    if (x->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* ---- output ---- */

/* A cell's text: strings as they are, null empty, the rest as compact JSON. */
static char *cell_text(const json_t *v)
{
    if (v == NULL || json_is_null(v))
        return strdup("");
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_real(v)) { /* as the server wrote it: the shortest form, 0 not 0.0 */
        struct buf b = BUF_INIT;
        cli_json_double(&b, json_real_value(v));
        buf_put_u8(&b, 0);
        return (char *)buf_detach(&b, NULL);
    }
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static void csv_field(struct buf *b, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        buf_append_str(b, s);
        return;
    }
    buf_put_u8(b, '"');
    for (; *s; s++) {
        if (*s == '"')
            buf_put_u8(b, '"');
        buf_put_u8(b, (uint8_t)*s);
    }
    buf_put_u8(b, '"');
}

/* Display width in characters (UTF-8 continuation bytes do not count). */
static size_t width_of(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((uint8_t)*s & 0xc0) != 0x80;
    return w;
}

static void write_out(struct buf *b)
{
    if (b->len > 0)
        fwrite(b->data, 1, b->len, stdout);
    buf_reset(b);
}

/*
 * Rows (an array of objects) under the named columns (NULL: the keys of the
 * first row) as a table or CSV; JSON mode prints `whole` as it is.
 */
static void print_rows(const struct cli_ctx *x, const json_t *rows, const char *const *cols,
                       size_t ncols, const json_t *whole)
{
    if (x->out == OUT_JSON) {
        json_dumpf(whole, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
        fputc('\n', stdout);
        return;
    }
    const char **names = NULL;
    size_t n = ncols;
    if (cols == NULL) {
        const json_t *first = json_array_get(rows, 0);
        n = json_object_size(first);
        names = calloc(n + 1, sizeof *names);
        size_t k = 0;
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)first, key, v) names[k++] = key;
    } else {
        names = calloc(n + 1, sizeof *names);
        memcpy(names, cols, n * sizeof *names);
    }
    size_t nrows = json_array_size(rows);
    char **cells = calloc(nrows * n + 1, sizeof *cells);
    size_t *w = calloc(n + 1, sizeof *w);
    bool *num = calloc(n + 1, sizeof *num);
    for (size_t j = 0; j < n; j++) {
        w[j] = width_of(names[j]);
        num[j] = nrows > 0;
    }
    for (size_t i = 0; i < nrows; i++) {
        const json_t *r = json_array_get(rows, i);
        for (size_t j = 0; j < n; j++) {
            const json_t *v = json_object_get(r, names[j]);
            cells[i * n + j] = cell_text(v);
            size_t cw = width_of(cells[i * n + j]);
            if (cw > w[j])
                w[j] = cw;
            if (v != NULL && !json_is_null(v) && !json_is_number(v))
                num[j] = false;
        }
    }
    struct buf b = BUF_INIT;
    if (x->out == OUT_CSV) {
        for (size_t j = 0; j < n; j++) {
            if (j > 0)
                buf_put_u8(&b, ',');
            csv_field(&b, names[j]);
        }
        buf_put_u8(&b, '\n');
        for (size_t i = 0; i < nrows; i++) {
            for (size_t j = 0; j < n; j++) {
                if (j > 0)
                    buf_put_u8(&b, ',');
                csv_field(&b, cells[i * n + j]);
            }
            buf_put_u8(&b, '\n');
            if (b.len > (1u << 20))
                write_out(&b);
        }
    } else {
        if (x->color)
            buf_append_str(&b, "\033[1m");
        /* no padding after the last column */
        for (size_t j = 0; j < n; j++)
            buf_printf(&b, "%s%-*s", j ? "  " : "",
                       j + 1 < n ? (int)(w[j] + strlen(names[j]) - width_of(names[j])) : 0,
                       names[j]);
        if (x->color)
            buf_append_str(&b, "\033[0m");
        buf_put_u8(&b, '\n');
        for (size_t j = 0; j < n; j++) {
            buf_append_str(&b, j ? "  " : "");
            for (size_t k = 0; k < w[j]; k++)
                buf_put_u8(&b, '-');
        }
        buf_put_u8(&b, '\n');
        for (size_t i = 0; i < nrows; i++) {
            for (size_t j = 0; j < n; j++) {
                const char *s = cells[i * n + j];
                int pad = (int)(w[j] + strlen(s) - width_of(s));
                if (j + 1 == n && !num[j])
                    pad = 0;
                buf_printf(&b, num[j] ? "%s%*s" : "%s%-*s", j ? "  " : "", pad, s);
            }
            while (b.len > 0 && b.data[b.len - 1] == ' ') /* an empty last cell */
                b.len--;
            buf_put_u8(&b, '\n');
            if (b.len > (1u << 20))
                write_out(&b);
        }
        buf_printf(&b, "(%zu row%s)\n", nrows, nrows == 1 ? "" : "s");
    }
    write_out(&b);
    buf_free(&b);
    for (size_t i = 0; i < nrows * n; i++)
        free(cells[i]);
    free(cells);
    free(w);
    free(num);
    free(names);
}

/* One object: "key  value" lines (table), a header and a row (CSV), or JSON. */
static void print_object(const struct cli_ctx *x, const json_t *obj)
{
    if (x->out != OUT_TABLE) {
        json_t *rows = json_array();
        json_array_append((json_t *)rows, (json_t *)obj);
        print_rows(x, rows, NULL, 0, obj);
        json_decref(rows);
        return;
    }
    size_t w = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (strlen(key) > w)
            w = strlen(key);
    }
    json_object_foreach((json_t *)obj, key, v)
    {
        char *s = cell_text(v);
        int pad = s[0] != 0 ? (int)w : 0; /* no trailing blanks after an empty value */
        if (x->color)
            printf("\033[1m%-*s\033[0m%s%s\n", pad, key, s[0] ? "  " : "", s);
        else
            printf("%-*s%s%s\n", pad, key, s[0] ? "  " : "", s);
        free(s);
    }
}

/* ---- argument helpers ---- */

struct usage {
    const char *cmd;
    const char *text;
};

static const struct usage usages[] = {
    {"tables",
     "usage: strike tables [ls | list]\n"
     "       strike tables show TABLE\n"
     "       strike tables create TABLE --columns 'NAME TYPE [not null], ...' [--key C[,C...]]\n"
     "                                  [--version-column C]\n"
     "       strike tables drop TABLE\n"
     "       strike tables alter TABLE [--add NAME:TYPE[:required]] [--drop C] [--rename A:B]\n"
     "                                 [--widen C:long] [--optional C] [--expected-schema-id N]\n"
     "  types: boolean int long double string timestamp; key columns must be not null\n"
     "  alter: the changes in the order given, all or nothing, one commit (each option\n"
     "  repeatable); a new column is optional unless :required; a stale\n"
     "  --expected-schema-id fails with exit status 4 (conflict)\n"
     "example:\n"
     "  strike tables create orders --columns 'order_id long not null, user_id long not null,\n"
     "      amount double, status string, updated_at timestamp' --key order_id \\\n"
     "      --version-column updated_at\n"
     "  strike tables alter orders --add phone:string --rename status:state --widen qty:long\n"},
    {"scan", "usage: strike scan TABLE [--where EXPR | --filter-json JSON] [--columns a,b]\n"
             "                         [--snapshot N] [--limit N]\n"
             "  the live rows (JSON: one object per line). EXPR:\n"
             "    col = 1, col != 'x', col < 2.5, <=, >, >=, col is [not] null,\n"
             "    col [not] in (1, 2), col [not] starts with 'ab', true, false,\n"
             "    combined with not, and, or and parentheses (SQL precedence)\n"
             "example:\n"
             "  strike scan orders --where \"amount < 10 and status in ('NEW','PAID') or not "
             "user_id is null\"\n"},
    {"delete",
     "usage: strike delete TABLE (--where EXPR | --filter-json JSON | --all) [--expected-seq N]\n"
     "  deletes every live row that matches (EXPR as in strike scan --help)\n"
     "example:\n"
     "  strike delete orders --where \"status = 'CANCELLED'\"\n"},
    {"plan", "usage: strike plan TABLE [--where EXPR | --filter-json JSON] [--snapshot N]\n"
             "  the data files and deletion vectors an engine reads\n"
             "example:\n"
             "  strike plan orders --output json\n"},
    {"dv", "usage: strike dv get TABLE FILE_ID [--format roaring64|iceberg-dv|delta-dv]\n"
           "                     [--snapshot N] [-o FILE]\n"
           "  the file's deletion vector bytes (stdout unless -o); the cardinality on stderr\n"
           "  (the offline codec commands: strike dv decode|encode --help)\n"
           "example:\n"
           "  strike dv get orders 5 --format iceberg-dv -o 5.dv && strike dv decode --format "
           "iceberg-dv 5.dv\n"},
    {"snapshots", "usage: strike snapshots TABLE\n"
                  "  the retained commit history, oldest first\n"
                  "example:\n"
                  "  strike snapshots orders --output csv\n"},
    {"compact", "usage: strike compact TABLE [--min-deleted-fraction F] [--target-file-rows N]\n"
                "example:\n"
                "  strike compact orders --min-deleted-fraction 0.2\n"},
    {"expire", "usage: strike expire TABLE [--retain-last N] [--older-than DURATION]\n"
               "example:\n"
               "  strike expire orders --retain-last 10 --older-than 1d\n"},
    {"erase", "usage: strike erase TABLE (--key JSON ... | --where EXPR | --filter-json JSON)\n"
              "                          [--idempotency-key K]\n"
              "  erases rows physically and prints the verified receipt\n"
              "example:\n"
              "  strike erase orders --key '{\"order_id\":7}' --key '{\"order_id\":9}'\n"},
    {"erasures", "usage: strike erasures TABLE [ID]\n"
                 "       strike erasures check TABLE ID --key JSON [--key JSON ...]\n"
                 "  the erasure receipts of a table, or one of them; check (admin): does\n"
                 "  receipt ID's key digest cover exactly these keys? Prints {\"match\":...};\n"
                 "  exit 0 when it does, 1 when it does not\n"
                 "example:\n"
                 "  strike erasures orders\n"
                 "  strike erasures check orders 01a23d1d-29b5-741e-9552-5a6581d3e324 --key "
                 "'{\"order_id\":7}'\n"},
    {"health", "usage: strike health TABLE\n"
               "  totals, maintenance advice and every live file's deleted fraction\n"
               "example:\n"
               "  strike health orders\n"},
    {NULL, NULL},
};

static void print_usage(const char *cmd, FILE *f)
{
    for (const struct usage *u = usages; u->cmd != NULL; u++) {
        if (strcmp(u->cmd, cmd) == 0) {
            fputs(u->text, f);
            fputs(GLOBAL_HELP, f);
            return;
        }
    }
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

__attribute__((format(printf, 2, 3))) static int usage_error(const char *cmd, const char *fmt, ...)
{
    fprintf(stderr, "strike %s: ", cmd);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see strike %s --help)\n", cmd);
    return CLI_USAGE;
}

static bool parse_i64(const char *s, int64_t min, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (s[0] == 0 || *end != 0 || errno != 0 || v < min)
        return false;
    *out = v;
    return true;
}

/* --where EXPR into a filter, with the expression and a caret under the mistake. */
static json_t *where_filter(const char *cmd, const char *text)
{
    char msg[256];
    size_t col;
    json_t *f = cli_where_compile(text, msg, sizeof msg, &col);
    if (f == NULL) {
        size_t n = strlen(text); /* the expression without trailing blanks */
        while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
            n--;
        fprintf(stderr, "strike %s: --where: column %zu: %s\n  %.*s\n  %*s^\n", cmd, col + 1, msg,
                (int)n, text, (int)col, "");
    }
    return f;
}

static json_t *filter_json(const char *cmd, const char *text)
{
    json_error_t je;
    json_t *f = json_loads(text, JSON_DECODE_ANY, &je);
    if (f == NULL)
        fprintf(stderr, "strike %s: --filter-json: %s (column %d)\n", cmd, je.text, je.column);
    return f;
}

/* ---- tables ---- */

/* "A:B" split at its first ':' into a (copied into buf) and b; false when either is empty. */
static bool split_pair(const char *v, char *buf, size_t bufsize, char **a, char **b)
{
    const char *colon = strchr(v, ':');
    if (colon == NULL || colon == v || colon[1] == '\0' || strlen(v) >= bufsize)
        return false;
    memcpy(buf, v, strlen(v) + 1);
    buf[colon - v] = '\0';
    *a = buf;
    *b = buf + (colon - v) + 1;
    return true;
}

/* One option of `strike tables alter` into its change (NULL: a usage error, said). */
static json_t *alter_change(const char *opt, const char *v)
{
    char buf[512];
    char *a, *b;
    if (strcmp(opt, "--drop") == 0)
        return json_pack("{s:s}", "drop", v);
    if (strcmp(opt, "--optional") == 0)
        return json_pack("{s:s}", "optional", v);
    if (!split_pair(v, buf, sizeof buf, &a, &b)) {
        usage_error("tables", "alter: %s \"%s\": expected %s", opt, v,
                    strcmp(opt, "--add") == 0      ? "NAME:TYPE[:required]"
                    : strcmp(opt, "--rename") == 0 ? "FROM:TO"
                                                   : "COLUMN:TYPE");
        return NULL;
    }
    if (strcmp(opt, "--rename") == 0)
        return json_pack("{s:{s:s, s:s}}", "rename", "from", a, "to", b);
    if (strcmp(opt, "--widen") == 0)
        return json_pack("{s:{s:s, s:s}}", "widen", "column", a, "type", b);
    /* --add NAME:TYPE[:required] */
    char *req = strchr(b, ':');
    bool required = false;
    if (req != NULL) {
        *req++ = '\0';
        if (strcmp(req, "required") != 0 && strcmp(req, "optional") != 0) {
            usage_error("tables", "alter: --add \"%s\": expected NAME:TYPE[:required]", v);
            return NULL;
        }
        required = strcmp(req, "required") == 0;
    }
    return json_pack("{s:{s:s, s:s, s:b}}", "add", "name", a, "type", b, "required", required);
}

/* `strike tables alter TABLE ...` into the request body (NULL: a usage error, said). */
static json_t *alter_request(int argc, char **argv, const char **name)
{
    json_t *changes = json_array();
    json_t *req = json_pack("{s:o}", "changes", changes);
    *name = NULL;
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *o = argv[i];
        if (v != NULL &&
            (strcmp(o, "--add") == 0 || strcmp(o, "--drop") == 0 || strcmp(o, "--rename") == 0 ||
             strcmp(o, "--widen") == 0 || strcmp(o, "--optional") == 0)) {
            json_t *c = alter_change(o, v);
            if (c == NULL) {
                json_decref(req);
                return NULL;
            }
            json_array_append_new(changes, c);
            i++;
        } else if (v != NULL && strcmp(o, "--expected-schema-id") == 0) {
            char *end;
            long long id = strtoll(v, &end, 10);
            if (*v == '\0' || *end != '\0' || id < 0 || id > INT32_MAX) {
                usage_error("tables", "alter: --expected-schema-id \"%s\": expected a schema id",
                            v);
                json_decref(req);
                return NULL;
            }
            json_object_set_new(req, "expected_schema_id", json_integer(id));
            i++;
        } else if (o[0] != '-' && *name == NULL) {
            *name = o;
        } else {
            usage_error("tables", "alter: unexpected or incomplete argument \"%s\"", o);
            json_decref(req);
            return NULL;
        }
    }
    if (*name == NULL || json_array_size(changes) == 0) {
        usage_error("tables", "alter needs TABLE and at least one change%s", "");
        json_decref(req);
        return NULL;
    }
    return req;
}

static const char *const TABLE_COLS[] = {"name", "seq", "primary_key", "columns"};

/* The table objects, with columns shortened to "name type[!]" for display. */
static json_t *tables_for_display(const json_t *tables)
{
    json_t *rows = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tables, i, t)
    {
        json_t *r = json_deep_copy(t);
        json_t *cols = json_object_get(t, "columns");
        struct buf b = BUF_INIT;
        size_t j;
        json_t *c;
        json_array_foreach(cols, j, c)
        {
            buf_printf(&b, "%s%s %s%s", j ? ", " : "",
                       json_string_value(json_object_get(c, "name")),
                       json_string_value(json_object_get(c, "type")),
                       json_is_true(json_object_get(c, "required")) ? " not null" : "");
        }
        json_object_set_new(r, "columns", json_string(buf_cstr(&b)));
        buf_free(&b);
        json_t *pk = json_object_get(t, "primary_key");
        struct buf k = BUF_INIT;
        json_array_foreach(pk, j, c)
        {
            buf_printf(&k, "%s%s", j ? "," : "", json_string_value(c));
        }
        json_object_set_new(r, "primary_key", json_string(buf_cstr(&k)));
        buf_free(&k);
        json_array_append_new(rows, r);
    }
    return rows;
}

/* 'id long not null, name string' into the create body's columns. */
static json_t *parse_columns(const char *spec)
{
    json_t *cols = json_array();
    char *copy = strdup(spec);
    char *save = NULL;
    for (char *part = strtok_r(copy, ",", &save); part != NULL; part = strtok_r(NULL, ",", &save)) {
        char *words[8];
        int n = 0;
        char *ws = NULL;
        for (char *w = strtok_r(part, " \t\n", &ws); w != NULL && n < 8;
             w = strtok_r(NULL, " \t\n", &ws))
            words[n++] = w;
        bool required = false;
        bool ok = n == 2;
        if (n == 3 && strcasecmp(words[2], "required") == 0)
            ok = required = true;
        if (n == 4 && strcasecmp(words[2], "not") == 0 && strcasecmp(words[3], "null") == 0)
            ok = required = true;
        if (!ok) {
            fprintf(stderr, "strike tables: --columns: \"%s ...\": expected NAME TYPE [not null]\n",
                    n > 0 ? words[0] : "");
            free(copy);
            json_decref(cols);
            return NULL;
        }
        json_array_append_new(cols, json_pack("{s:s, s:s, s:b}", "name", words[0], "type", words[1],
                                              "required", required));
    }
    free(copy);
    if (json_array_size(cols) == 0) {
        fprintf(stderr, "strike tables: --columns lists no column\n");
        json_decref(cols);
        return NULL;
    }
    return cols;
}

static void print_table(const struct cli_ctx *x, const json_t *t)
{
    if (x->out == OUT_TABLE) {
        json_t *one = json_array();
        json_array_append((json_t *)one, (json_t *)t);
        json_t *rows = tables_for_display(one);
        json_t *r = json_array_get(rows, 0);
        json_t *stats = json_object_get(t, "stats");
        if (json_is_object(stats))
            json_object_update(r, stats);
        json_object_del(r, "stats");
        print_object(x, r);
        json_decref(rows);
        json_decref(one);
    } else if (x->out == OUT_CSV) {
        json_t *one = json_array();
        json_array_append((json_t *)one, (json_t *)t);
        json_t *rows = tables_for_display(one);
        print_rows(x, rows, NULL, 0, NULL);
        json_decref(rows);
        json_decref(one);
    } else {
        print_object(x, t);
    }
}

int cli_tables(int argc, char **argv)
{
    struct cli_ctx x;
    int code = cli_ctx_init(&x, "tables", &argc, argv);
    if (code)
        return code;
    if (wants_help(argc, argv)) {
        print_usage("tables", stdout);
        return 0;
    }
    const char *sub = argc > 1 ? argv[1] : "ls";
    struct strike_error e = {0};
    json_t *ans = NULL;
    int rc = 0;
    if (strcmp(sub, "ls") == 0 || strcmp(sub, "list") == 0) {
        if (argc > 2)
            return usage_error("tables", "unexpected argument \"%s\"", argv[2]);
        if ((code = connect_client(&x)) != 0)
            return code;
        rc = strike_tables_list(x.client, &ans, &e);
        if (rc == 0) {
            json_t *list = json_object_get(ans, "tables");
            json_t *rows = tables_for_display(list);
            print_rows(&x, rows, TABLE_COLS, 4, x.out == OUT_JSON ? list : rows);
            json_decref(rows);
        }
    } else if (strcmp(sub, "show") == 0 || strcmp(sub, "drop") == 0) {
        if (argc != 3)
            return usage_error("tables", "%s needs exactly one TABLE", sub);
        if ((code = connect_client(&x)) != 0)
            return code;
        if (sub[0] == 's') {
            rc = strike_table_get(x.client, argv[2], &ans, &e);
            if (rc == 0)
                print_table(&x, ans);
        } else {
            rc = strike_table_drop(x.client, argv[2], &e);
            if (rc == 0)
                cli_note(&x, "dropped table %s\n", argv[2]);
        }
    } else if (strcmp(sub, "create") == 0) {
        const char *name = NULL, *columns = NULL, *key = NULL, *version = NULL;
        for (int i = 2; i < argc; i++) {
            const char *v = i + 1 < argc ? argv[i + 1] : NULL;
            if (strcmp(argv[i], "--columns") == 0 && v) {
                columns = argv[++i];
            } else if (strcmp(argv[i], "--key") == 0 && v) {
                key = argv[++i];
            } else if (strcmp(argv[i], "--version-column") == 0 && v) {
                version = argv[++i];
            } else if (argv[i][0] != '-' && name == NULL) {
                name = argv[i];
            } else {
                return usage_error("tables", "create: unexpected or incomplete argument \"%s\"",
                                   argv[i]);
            }
        }
        if (name == NULL || columns == NULL)
            return usage_error("tables", "create needs TABLE and --columns%s", "");
        json_t *cols = parse_columns(columns);
        if (cols == NULL)
            return CLI_USAGE;
        json_t *pk = json_array();
        if (key != NULL) {
            char *copy = strdup(key), *save = NULL;
            for (char *k = strtok_r(copy, ", ", &save); k; k = strtok_r(NULL, ", ", &save))
                json_array_append_new(pk, json_string(k));
            free(copy);
        }
        json_t *spec =
            json_pack("{s:s, s:o, s:o}", "name", name, "columns", cols, "primary_key", pk);
        if (version != NULL)
            json_object_set_new(spec, "version_column", json_string(version));
        if ((code = connect_client(&x)) != 0) {
            json_decref(spec);
            return code;
        }
        rc = strike_table_create(x.client, spec, &ans, &e);
        json_decref(spec);
        if (rc == 0)
            print_table(&x, ans);
    } else if (strcmp(sub, "alter") == 0) {
        const char *name;
        json_t *req = alter_request(argc, argv, &name);
        if (req == NULL)
            return CLI_USAGE;
        if ((code = connect_client(&x)) != 0) {
            json_decref(req);
            return code;
        }
        rc = strike_table_alter(x.client, name, req, &ans, &e);
        json_decref(req);
        if (rc == 0)
            print_table(&x, ans);
    } else {
        return usage_error("tables", "unknown subcommand \"%s\" (ls, show, create, drop, alter)",
                           sub);
    }
    json_decref(ans);
    code = rc ? cli_fail(&x, rc, &e) : 0;
    cli_ctx_free(&x);
    return code;
}

/* ---- scan ---- */

struct scan_out {
    const struct cli_ctx *x;
    json_t *cols; /* names, for table and CSV */
    json_t *rows; /* table mode: collected */
    struct buf b;
    uint64_t n;
    int bad;
};

static int on_row(const char *row, size_t len, void *ud)
{
    struct scan_out *s = ud;
    s->n++;
    if (s->x->out == OUT_JSON) {
        buf_append(&s->b, row, len);
        buf_put_u8(&s->b, '\n');
    } else {
        json_t *r = json_loadb(row, len, 0, NULL);
        if (r == NULL) {
            s->bad++;
            return 1;
        }
        if (s->x->out == OUT_TABLE) {
            json_array_append_new(s->rows, r);
            return 0;
        }
        size_t j;
        json_t *c;
        json_array_foreach(s->cols, j, c)
        {
            if (j > 0)
                buf_put_u8(&s->b, ',');
            char *t = cell_text(json_object_get(r, json_string_value(c)));
            csv_field(&s->b, t);
            free(t);
        }
        buf_put_u8(&s->b, '\n');
        json_decref(r);
    }
    if (s->b.len >= (1u << 20))
        write_out(&s->b);
    return 0;
}

/* Options shared by scan, delete, plan: the filter, snapshot, columns, limit. */
struct read_args {
    const char *table;
    json_t *filter;
    int64_t snapshot, limit, expected_seq;
    const char *columns;
    bool all;
};

static int parse_read_args(const char *cmd, int argc, char **argv, struct read_args *a,
                           bool allow_cols)
{
    memset(a, 0, sizeof *a);
    a->snapshot = a->limit = a->expected_seq = -1;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *o = argv[i];
        if ((strcmp(o, "--where") == 0 || strcmp(o, "--filter-json") == 0) && v) {
            if (a->filter != NULL)
                return usage_error(cmd, "one filter only (%s)", o);
            a->filter = o[2] == 'w' ? where_filter(cmd, v) : filter_json(cmd, v);
            if (a->filter == NULL)
                return CLI_USAGE;
            i++;
        } else if (strcmp(o, "--snapshot") == 0 && v && strcmp(cmd, "delete") != 0) {
            if (!parse_i64(v, 0, &a->snapshot))
                return usage_error(cmd, "--snapshot: a seq >= 0 (got \"%s\")", v);
            i++;
        } else if (strcmp(o, "--limit") == 0 && v && allow_cols) {
            if (!parse_i64(v, 0, &a->limit))
                return usage_error(cmd, "--limit: a count >= 0 (got \"%s\")", v);
            i++;
        } else if (strcmp(o, "--expected-seq") == 0 && v && strcmp(cmd, "delete") == 0) {
            if (!parse_i64(v, 0, &a->expected_seq))
                return usage_error(cmd, "--expected-seq: a seq >= 0 (got \"%s\")", v);
            i++;
        } else if (strcmp(o, "--all") == 0 && strcmp(cmd, "delete") == 0) {
            a->all = true;
        } else if (strcmp(o, "--columns") == 0 && v && allow_cols) {
            a->columns = v;
            i++;
        } else if (o[0] != '-' && a->table == NULL) {
            a->table = o;
        } else {
            return usage_error(cmd, "unexpected or incomplete argument \"%s\"", o);
        }
    }
    if (a->table == NULL)
        return usage_error(cmd, "needs a TABLE%s", "");
    return 0;
}

int cli_scan(int argc, char **argv)
{
    struct cli_ctx x;
    int code = cli_ctx_init(&x, "scan", &argc, argv);
    if (code)
        return code;
    if (wants_help(argc, argv)) {
        print_usage("scan", stdout);
        return 0;
    }
    struct read_args a;
    if ((code = parse_read_args("scan", argc, argv, &a, true)) != 0) {
        json_decref(a.filter);
        return code;
    }
    if ((code = connect_client(&x)) != 0) {
        json_decref(a.filter);
        return code;
    }
    json_t *req = json_object();
    if (a.filter != NULL)
        json_object_set_new(req, "filter", a.filter);
    if (a.snapshot >= 0)
        json_object_set_new(req, "snapshot", json_integer(a.snapshot));
    if (a.limit >= 0)
        json_object_set_new(req, "limit", json_integer(a.limit));
    struct scan_out s = {.x = &x, .b = BUF_INIT};
    struct strike_error e = {0};
    int rc = 0;
    s.cols = json_array();
    if (a.columns != NULL) {
        char *copy = strdup(a.columns), *save = NULL;
        for (char *c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save))
            json_array_append_new(s.cols, json_string(c));
        free(copy);
        json_object_set(req, "columns", s.cols);
    } else if (x.out != OUT_JSON) {
        json_t *t = NULL;
        rc = strike_table_get(x.client, a.table, &t, &e);
        size_t j;
        json_t *c;
        json_array_foreach(json_object_get(t, "columns"), j, c)
        {
            json_array_append(s.cols, json_object_get(c, "name"));
        }
        json_decref(t);
    }
    if (rc == 0 && x.out == OUT_CSV) {
        size_t j;
        json_t *c;
        json_array_foreach(s.cols, j, c)
        {
            if (j > 0)
                buf_put_u8(&s.b, ',');
            csv_field(&s.b, json_string_value(c));
        }
        buf_put_u8(&s.b, '\n');
    }
    s.rows = json_array();
    struct strike_meta meta;
    if (rc == 0)
        rc = strike_scan(x.client, a.table, req, on_row, &s, &meta, &e);
    if (rc == STRIKE_EABORTED && s.bad > 0)
        snprintf(e.detail, sizeof e.detail, "a scanned row is not JSON");
    write_out(&s.b);
    if (rc == 0 && x.out == OUT_TABLE) {
        size_t n = json_array_size(s.cols);
        const char **names = calloc(n + 1, sizeof *names);
        for (size_t j = 0; j < n; j++)
            names[j] = json_string_value(json_array_get(s.cols, j));
        print_rows(&x, s.rows, names, n, NULL);
        free(names);
    }
    if (rc == 0 && x.out != OUT_TABLE)
        cli_note(&x, "%" PRIu64 " rows at snapshot %" PRId64 "\n", s.n, meta.snapshot);
    buf_free(&s.b);
    json_decref(s.rows);
    json_decref(s.cols);
    json_decref(req);
    code = rc ? cli_fail(&x, rc, &e) : 0;
    cli_ctx_free(&x);
    return code;
}

/* ---- delete, plan ---- */

int cli_delete(int argc, char **argv)
{
    struct cli_ctx x;
    int code = cli_ctx_init(&x, "delete", &argc, argv);
    if (code)
        return code;
    if (wants_help(argc, argv)) {
        print_usage("delete", stdout);
        return 0;
    }
    struct read_args a;
    if ((code = parse_read_args("delete", argc, argv, &a, false)) != 0) {
        json_decref(a.filter);
        return code;
    }
    if (a.all && a.filter == NULL)
        a.filter = json_true();
    if (a.filter == NULL || (a.all && !json_is_true(a.filter)))
        return usage_error("delete", "needs exactly one of --where, --filter-json, --all%s", "");
    if ((code = connect_client(&x)) != 0) {
        json_decref(a.filter);
        return code;
    }
    json_t *ans = NULL;
    struct strike_error e = {0};
    int rc = strike_delete_where(x.client, a.table, a.filter, a.expected_seq, NULL, &ans, &e);
    if (rc == 0)
        print_object(&x, ans);
    json_decref(ans);
    json_decref(a.filter);
    code = rc ? cli_fail(&x, rc, &e) : 0;
    cli_ctx_free(&x);
    return code;
}

int cli_plan(int argc, char **argv)
{
    struct cli_ctx x;
    int code = cli_ctx_init(&x, "plan", &argc, argv);
    if (code)
        return code;
    if (wants_help(argc, argv)) {
        print_usage("plan", stdout);
        return 0;
    }
    struct read_args a;
    if ((code = parse_read_args("plan", argc, argv, &a, false)) != 0) {
        json_decref(a.filter);
        return code;
    }
    if ((code = connect_client(&x)) != 0) {
        json_decref(a.filter);
        return code;
    }
    json_t *req = json_object();
    if (a.filter != NULL)
        json_object_set_new(req, "filter", a.filter);
    if (a.snapshot >= 0)
        json_object_set_new(req, "snapshot", json_integer(a.snapshot));
    json_t *ans = NULL;
    struct strike_error e = {0};
    int rc = strike_plan(x.client, a.table, req, &ans, &e);
    if (rc == 0) {
        json_t *rows = json_array();
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(ans, "files"), i, f)
        {
            json_t *dv = json_object_get(f, "dv");
            json_array_append_new(
                rows, json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "id",
                                json_object_get(f, "id"), "record_count",
                                json_object_get(f, "record_count"), "deleted_count",
                                json_object_get(f, "deleted_count"), "file_size",
                                json_object_get(f, "file_size"), "data_seq",
                                json_object_get(f, "data_seq"), "dv_length",
                                json_object_get(dv, "length"), "path", json_object_get(f, "path")));
        }
        static const char *const cols[] = {"id",       "record_count", "deleted_count", "file_size",
                                           "data_seq", "dv_length",    "path"};
        print_rows(&x, rows, cols, 7, ans);
        if (x.out != OUT_JSON)
            cli_note(&x, "seq %" JSON_INTEGER_FORMAT "\n",
                     json_integer_value(json_object_get(ans, "seq")));
        json_decref(rows);
    }
    json_decref(ans);
    json_decref(req);
    code = rc ? cli_fail(&x, rc, &e) : 0;
    cli_ctx_free(&x);
    return code;
}

/* ---- dv get ---- */

int cli_dvget(int argc, char **argv)
{
    struct cli_ctx x;
    int code = cli_ctx_init(&x, "dv get", &argc, argv);
    if (code)
        return code;
    if (wants_help(argc, argv)) {
        print_usage("dv", stdout);
        return 0;
    }
    const char *table = NULL, *format = NULL, *outpath = NULL;
    int64_t file_id = -1, snapshot = -1;
    for (int i = 2; i < argc; i++) { /* argv[1] is "get" */
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--format") == 0 && v) {
            format = argv[++i];
        } else if (strcmp(argv[i], "-o") == 0 && v) {
            outpath = argv[++i];
        } else if (strcmp(argv[i], "--snapshot") == 0 && v) {
            if (!parse_i64(v, 0, &snapshot))
                return usage_error("dv get", "--snapshot: a seq >= 0 (got \"%s\")", v);
            i++;
        } else if (argv[i][0] != '-' && table == NULL) {
            table = argv[i];
        } else if (argv[i][0] != '-' && file_id < 0) {
            if (!parse_i64(argv[i], 0, &file_id))
                return usage_error("dv get", "FILE_ID: a file id (got \"%s\")", argv[i]);
        } else {
            return usage_error("dv get", "unexpected or incomplete argument \"%s\"", argv[i]);
        }
    }
    if (table == NULL || file_id < 0)
        return usage_error("dv get", "needs TABLE and FILE_ID%s", "");
    if ((code = connect_client(&x)) != 0)
        return code;
    uint8_t *bytes = NULL;
    size_t n = 0;
    struct strike_meta meta;
    struct strike_error e = {0};
    int rc = strike_dv_get(x.client, table, file_id, snapshot, format, &bytes, &n, &meta, &e);
    if (rc == 0) {
        FILE *f = outpath != NULL ? fopen(outpath, "wb") : stdout;
        if (f == NULL || fwrite(bytes, 1, n, f) != n || (f != stdout && fclose(f) != 0)) {
            fprintf(stderr, "strike dv get: cannot write %s: %s\n", outpath ? outpath : "stdout",
                    strerror(errno));
            code = CLI_ERROR;
        }
        cli_note(&x, "%zu bytes, cardinality %" PRId64 "\n", n, meta.cardinality);
    } else {
        code = cli_fail(&x, rc, &e);
    }
    free(bytes);
    cli_ctx_free(&x);
    return code;
}

/* ---- snapshots, compact, expire, erase, erasures, health ---- */

/* The common shape: TABLE then options into a request object. */
typedef bool (*opt_fn)(const char *opt, const char *val, json_t *req, const char *cmd, int *code);

static int table_command(const char *cmd, int argc, char **argv, opt_fn fn, const char **table,
                         const char **extra, json_t **req, struct cli_ctx *x)
{
    int code = cli_ctx_init(x, cmd, &argc, argv);
    if (code)
        return code;
    if (wants_help(argc, argv)) {
        print_usage(cmd, stdout);
        return -1;
    }
    *table = NULL;
    if (extra != NULL)
        *extra = NULL;
    *req = json_object();
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (argv[i][0] == '-' && fn != NULL) {
            code = 0;
            if (v == NULL || !fn(argv[i], v, *req, cmd, &code)) {
                json_decref(*req);
                return code ? code
                            : usage_error(cmd, "unexpected or incomplete argument \"%s\"", argv[i]);
            }
            i++;
        } else if (argv[i][0] != '-' && *table == NULL) {
            *table = argv[i];
        } else if (argv[i][0] != '-' && extra != NULL && *extra == NULL) {
            *extra = argv[i];
        } else {
            json_decref(*req);
            return usage_error(cmd, "unexpected argument \"%s\"", argv[i]);
        }
    }
    if (*table == NULL) {
        json_decref(*req);
        return usage_error(cmd, "needs a TABLE%s", "");
    }
    if ((code = connect_client(x)) != 0) {
        json_decref(*req);
        return code;
    }
    return 0;
}

static int finish(struct cli_ctx *x, int rc, struct strike_error *e, json_t *req, json_t *ans)
{
    json_decref(req);
    json_decref(ans);
    int code = rc ? cli_fail(x, rc, e) : 0;
    cli_ctx_free(x);
    return code;
}

int cli_snapshots(int argc, char **argv)
{
    struct cli_ctx x;
    const char *table;
    json_t *req, *ans = NULL;
    int code = table_command("snapshots", argc, argv, NULL, &table, NULL, &req, &x);
    if (code)
        return code < 0 ? 0 : code;
    struct strike_error e = {0};
    int rc = strike_snapshots(x.client, table, &ans, &e);
    if (rc == 0) {
        static const char *const cols[] = {"seq", "committed_at", "operation", "summary"};
        print_rows(&x, json_object_get(ans, "snapshots"), cols, 4, ans);
    }
    return finish(&x, rc, &e, req, ans);
}

static bool compact_opt(const char *o, const char *v, json_t *req, const char *cmd, int *code)
{
    char *end;
    if (strcmp(o, "--min-deleted-fraction") == 0) {
        double d = strtod(v, &end);
        if (*end != 0 || !(d >= 0 && d <= 1)) {
            *code = usage_error(cmd, "--min-deleted-fraction: 0 to 1 (got \"%s\")", v);
            return false;
        }
        json_object_set_new(req, "min_deleted_fraction", json_real(d));
        return true;
    }
    if (strcmp(o, "--target-file-rows") == 0) {
        int64_t n;
        if (!parse_i64(v, 1, &n)) {
            *code = usage_error(cmd, "--target-file-rows: a count >= 1 (got \"%s\")", v);
            return false;
        }
        json_object_set_new(req, "target_file_rows", json_integer(n));
        return true;
    }
    return false;
}

int cli_compact(int argc, char **argv)
{
    struct cli_ctx x;
    const char *table;
    json_t *req, *ans = NULL;
    int code = table_command("compact", argc, argv, compact_opt, &table, NULL, &req, &x);
    if (code)
        return code < 0 ? 0 : code;
    struct strike_error e = {0};
    int rc = strike_compact(x.client, table, req, &ans, &e);
    if (rc == 0)
        print_object(&x, ans);
    return finish(&x, rc, &e, req, ans);
}

static bool expire_opt(const char *o, const char *v, json_t *req, const char *cmd, int *code)
{
    if (strcmp(o, "--retain-last") == 0) {
        int64_t n;
        if (!parse_i64(v, 1, &n)) {
            *code = usage_error(cmd, "--retain-last: a count >= 1 (got \"%s\")", v);
            return false;
        }
        json_object_set_new(req, "retain_last", json_integer(n));
        return true;
    }
    if (strcmp(o, "--older-than") == 0) {
        json_object_set_new(req, "older_than", json_string(v));
        return true;
    }
    return false;
}

int cli_expire(int argc, char **argv)
{
    struct cli_ctx x;
    const char *table;
    json_t *req, *ans = NULL;
    int code = table_command("expire", argc, argv, expire_opt, &table, NULL, &req, &x);
    if (code)
        return code < 0 ? 0 : code;
    struct strike_error e = {0};
    int rc = strike_expire(x.client, table, req, &ans, &e);
    if (rc == 0)
        print_object(&x, ans);
    return finish(&x, rc, &e, req, ans);
}

static char erase_key[160];

static bool erase_opt(const char *o, const char *v, json_t *req, const char *cmd, int *code)
{
    if (strcmp(o, "--key") == 0) {
        json_error_t je;
        json_t *k = json_loads(v, 0, &je);
        if (!json_is_object(k)) {
            json_decref(k);
            *code = usage_error(cmd, "--key: a JSON object of the key columns (got %s)", v);
            return false;
        }
        json_t *keys = json_object_get(req, "keys");
        if (keys == NULL) {
            keys = json_array();
            json_object_set_new(req, "keys", keys);
        }
        json_array_append_new(keys, k);
        return true;
    }
    if (strcmp(o, "--where") == 0 || strcmp(o, "--filter-json") == 0) {
        json_t *f = o[2] == 'w' ? where_filter(cmd, v) : filter_json(cmd, v);
        if (f == NULL) {
            *code = CLI_USAGE;
            return false;
        }
        json_object_set_new(req, "filter", f);
        return true;
    }
    if (strcmp(o, "--idempotency-key") == 0) {
        snprintf(erase_key, sizeof erase_key, "%s", v);
        return true;
    }
    return false;
}

int cli_erase(int argc, char **argv)
{
    struct cli_ctx x;
    const char *table;
    json_t *req, *ans = NULL;
    erase_key[0] = 0;
    int code = table_command("erase", argc, argv, erase_opt, &table, NULL, &req, &x);
    if (code)
        return code < 0 ? 0 : code;
    if ((json_object_get(req, "keys") != NULL) == (json_object_get(req, "filter") != NULL)) {
        cli_ctx_free(&x);
        json_decref(req);
        return usage_error("erase", "needs --key ... or one filter (--where, --filter-json)%s", "");
    }
    struct strike_error e = {0};
    struct strike_call call = {.idempotency_key = erase_key[0] ? erase_key : NULL};
    int rc = strike_erase(x.client, table, req, &call, &ans, &e);
    if (rc == 0)
        print_object(&x, ans);
    return finish(&x, rc, &e, req, ans);
}

static bool check_opt(const char *o, const char *v, json_t *req, const char *cmd, int *code)
{
    return strcmp(o, "--key") == 0 && erase_opt(o, v, req, cmd, code);
}

/* strike erasures check TABLE ID --key JSON ...: argv[1] is "check". */
static int erasures_check(int argc, char **argv)
{
    struct cli_ctx x;
    const char *table, *id;
    json_t *req, *ans = NULL;
    int code = table_command("erasures", argc - 1, argv + 1, check_opt, &table, &id, &req, &x);
    if (code)
        return code < 0 ? 0 : code;
    if (id == NULL || json_object_get(req, "keys") == NULL) {
        cli_ctx_free(&x);
        json_decref(req);
        return usage_error("erasures", "check needs TABLE, ID and --key JSON ...%s", "");
    }
    struct strike_error e = {0};
    int rc = strike_erasure_check(x.client, table, id, req, &ans, &e);
    bool match = rc == 0 && json_is_true(json_object_get(ans, "match"));
    if (rc == 0)
        print_object(&x, ans);
    code = finish(&x, rc, &e, req, ans);
    return code != 0 ? code : match ? 0 : 1;
}

/* "check" first, then a --key or TABLE and ID: the check (else "check" is a table's name). */
static bool is_check(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "check") != 0)
        return false;
    int words = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--key") == 0)
            return true;
        if (argv[i][0] != '-')
            words++;
        else if (strcmp(argv[i], "-q") != 0 && strcmp(argv[i], "--quiet") != 0 &&
                 strcmp(argv[i], "--help") != 0 && strcmp(argv[i], "-h") != 0)
            i++; /* an option's value */
    }
    return words >= 2;
}

int cli_erasures(int argc, char **argv)
{
    if (is_check(argc, argv))
        return erasures_check(argc, argv);
    struct cli_ctx x;
    const char *table, *id;
    json_t *req, *ans = NULL;
    int code = table_command("erasures", argc, argv, NULL, &table, &id, &req, &x);
    if (code)
        return code < 0 ? 0 : code;
    struct strike_error e = {0};
    int rc = strike_erasures(x.client, table, id, &ans, &e);
    if (rc == 0 && id != NULL) {
        print_object(&x, ans);
    } else if (rc == 0) {
        static const char *const cols[] = {"id",         "status",      "rows_erased",
                                           "delete_seq", "rewrite_seq", "verified_at",
                                           "key_digest"};
        print_rows(&x, json_object_get(ans, "erasures"), cols, 7, ans);
    }
    return finish(&x, rc, &e, req, ans);
}

int cli_health(int argc, char **argv)
{
    struct cli_ctx x;
    const char *table;
    json_t *req, *ans = NULL;
    int code = table_command("health", argc, argv, NULL, &table, NULL, &req, &x);
    if (code)
        return code < 0 ? 0 : code;
    struct strike_error e = {0};
    int rc = strike_health(x.client, table, &ans, &e);
    if (rc == 0 && x.out == OUT_JSON) {
        print_object(&x, ans);
    } else if (rc == 0) {
        json_t *totals = json_deep_copy(ans);
        json_object_del(totals, "files");
        json_object_del(totals, "advice");
        if (x.out == OUT_TABLE) {
            print_object(&x, totals);
            size_t i;
            json_t *a;
            json_array_foreach(json_object_get(ans, "advice"), i, a)
            {
                printf("advice  %s: %s\n", json_string_value(json_object_get(a, "action")),
                       json_string_value(json_object_get(a, "reason")));
            }
            printf("\n");
        }
        static const char *const cols[] = {"id",    "rows",     "deleted", "deleted_fraction",
                                           "bytes", "dv_bytes", "data_seq"};
        print_rows(&x, json_object_get(ans, "files"), cols, 7, NULL);
        json_decref(totals);
    }
    return finish(&x, rc, &e, req, ans);
}
