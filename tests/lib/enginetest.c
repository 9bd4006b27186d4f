/* enginetest.c - engine test helpers. */
#include "enginetest.h"
#include "pgtest.h"

#include "blob/blob.h"
#include "common/xalloc.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const struct st_err *err)
{
    fprintf(stderr, "enginetest: %s: %s\n", what, err ? err->msg : "");
    abort();
}

/*
 * The blob store of the tests: a fresh directory, or, when the s3 fixture set
 * STRIKE_TEST_S3 (its directory, holding the endpoint of its moto_server), a
 * fresh prefix in its bucket.
 */
static const struct blob_s3_opts *s3_opts(void)
{
    static char endpoint[128];
    static struct blob_s3_opts o;
    const char *dir = getenv("STRIKE_TEST_S3");
    if (dir == NULL || dir[0] == '\0')
        return NULL;
    if (endpoint[0] == '\0') {
        char path[512];
        snprintf(path, sizeof path, "%s/endpoint", dir);
        FILE *f = fopen(path, "r");
        if (f == NULL || fgets(endpoint, sizeof endpoint, f) == NULL)
            die("reading the s3 fixture's endpoint", NULL);
        fclose(f);
        endpoint[strcspn(endpoint, "\r\n")] = '\0';
        o.endpoint = endpoint;
        o.path_style = true;
        o.region = "us-east-1";
    }
    return &o;
}

void et_open(struct et *t, const char *db, uint32_t row_group_rows)
{
    memset(t, 0, sizeof *t);
    t->row_group_rows = row_group_rows;
    t->s3 = s3_opts();
    /* a database of its own: the S3 run of a test may run next to its local run */
    char name[96];
    snprintf(name, sizeof name, "%s%s", db, t->s3 != NULL ? "_s3" : "");
    t->conninfo = pgtest_create_db(name);
    if (t->s3 != NULL) {
        unsigned r = (unsigned)getpid() ^ (unsigned)time(NULL);
        snprintf(t->data_dir, sizeof t->data_dir, "s3://strike-test/%s-%08x", db, r);
    } else {
        snprintf(t->data_dir, sizeof t->data_dir, "/tmp/strike-et-%s-XXXXXX", db);
        if (mkdtemp(t->data_dir) == NULL)
            die("mkdtemp", NULL);
    }
    struct engine_opts o = {.conninfo = t->conninfo,
                            .data_dir = t->data_dir,
                            .s3 = t->s3,
                            .pool_size = 16,
                            .row_group_rows = row_group_rows};
    struct st_err err = {0};
    if (engine_open(&o, &t->e, &err) != ST_OK)
        die("engine_open", &err);
}

void et_reopen(struct et *t)
{
    engine_close(t->e);
    struct engine_opts o = {.conninfo = t->conninfo,
                            .data_dir = t->data_dir,
                            .s3 = t->s3,
                            .pool_size = 16,
                            .row_group_rows = t->row_group_rows,
                            .dv_inline_max = t->dv_inline_max};
    struct st_err err = {0};
    if (engine_open(&o, &t->e, &err) != ST_OK)
        die("engine_open (reopen)", &err);
}

void et_close(struct et *t, bool remove_dir)
{
    engine_close(t->e);
    if (remove_dir && t->s3 == NULL) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->data_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "enginetest: could not remove %s\n", t->data_dir);
    }
    free(t->conninfo);
}

struct engine_table *et_create(struct et *t, const char *name, const char *const *cols, int ncols,
                               const char *const *pk, int npk, const char *version_col)
{
    struct st_column *c = xcalloc((size_t)ncols, sizeof *c);
    for (int i = 0; i < ncols; i++) {
        const char *colon = strchr(cols[i], ':');
        snprintf(c[i].name, sizeof c[i].name, "%.*s", (int)(colon - cols[i]), cols[i]);
        char type[32];
        snprintf(type, sizeof type, "%s", colon + 1);
        size_t n = strlen(type);
        if (n > 0 && type[n - 1] == '!') {
            c[i].required = true;
            type[n - 1] = '\0';
        }
        if (!st_type_parse(type, &c[i].type))
            die("bad type in spec", NULL);
    }
    struct engine_table_def d = {name, ncols, c, npk, pk, version_col};
    struct engine_table *tab = NULL;
    bool replayed;
    struct st_err err = {0};
    if (engine_create_table(t->e, &d, NULL, &tab, &replayed, &err) != ST_OK)
        die("create table", &err);
    free(c);
    return tab;
}

int et_scan_rc(struct et *t, struct engine_table *tab, int64_t snapshot, struct et_rows *out,
               struct st_err *err)
{
    memset(out, 0, sizeof *out);
    struct engine_scan_req req = {.has_snapshot = snapshot >= 0, .snapshot = snapshot};
    struct engine_scan *s;
    int rc = engine_scan_open(t->e, tab, &req, &s, err);
    if (rc != ST_OK)
        return rc;
    out->snapshot = engine_scan_snapshot(s);
    size_t cap = 0;
    for (;;) {
        struct engine_scan_batch b;
        bool done;
        if ((rc = engine_scan_next(s, &b, &done, err)) != ST_OK)
            break;
        if (done)
            break;
        for (size_t i = 0; i < b.nrows; i++) {
            if (out->n == cap) {
                cap = cap ? cap * 2 : 64;
                out->rows = xreallocarray(out->rows, cap, sizeof *out->rows);
            }
            struct et_row *r = &out->rows[out->n++];
            r->ncols = tab->ncols;
            r->v = xcalloc((size_t)tab->ncols, sizeof *r->v);
            r->strs = xcalloc((size_t)tab->ncols, sizeof *r->strs);
            for (int k = 0; k < tab->ncols; k++) {
                st_colvec_get(b.vecs[k], b.rows[i], &r->v[k]);
                if (tab->cols[k].type == ST_T_STRING && !r->v[k].null) {
                    r->strs[k] = xstrndup(r->v[k].v.s.p, r->v[k].v.s.len);
                    r->v[k].v.s.p = r->strs[k];
                }
            }
        }
    }
    engine_scan_close(s);
    return rc;
}

void et_scan(struct et *t, struct engine_table *tab, int64_t snapshot, struct et_rows *out)
{
    struct st_err err = {0};
    if (et_scan_rc(t, tab, snapshot, out, &err) != ST_OK)
        die("scan", &err);
}

void et_rows_free(struct et_rows *r)
{
    for (size_t i = 0; i < r->n; i++) {
        for (int k = 0; k < r->rows[i].ncols; k++)
            free(r->rows[i].strs[k]);
        free(r->rows[i].strs);
        free(r->rows[i].v);
    }
    free(r->rows);
    memset(r, 0, sizeof *r);
}

int64_t et_value_of(struct et *t, struct engine_table *tab, int64_t id, int *count)
{
    struct et_rows rows;
    et_scan(t, tab, -1, &rows);
    int64_t v = -1;
    *count = 0;
    for (size_t i = 0; i < rows.n; i++)
        if (rows.rows[i].v[0].v.l == id) {
            v = rows.rows[i].v[1].v.l;
            (*count)++;
        }
    et_rows_free(&rows);
    return v;
}

static void sql_die(PGconn *c, const char *sql)
{
    fprintf(stderr, "enginetest: %s: %s", sql, PQerrorMessage(c));
    abort();
}

void et_exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        sql_die(c, sql);
    PQclear(r);
}

int64_t et_query_i64(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        sql_die(c, sql);
    int64_t v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

static PGconn *connect_or_die(struct et *t)
{
    PGconn *c = PQconnectdb(t->conninfo);
    if (PQstatus(c) != CONNECTION_OK)
        sql_die(c, "connect");
    return c;
}

void et_sql(struct et *t, const char *sql)
{
    PGconn *c = connect_or_die(t);
    et_exec(c, sql);
    PQfinish(c);
}

int64_t et_sql_i64(struct et *t, const char *sql)
{
    PGconn *c = connect_or_die(t);
    int64_t v = et_query_i64(c, sql);
    PQfinish(c);
    return v;
}

PGconn *et_hold_table_row(struct et *t, int64_t table_id)
{
    PGconn *c = connect_or_die(t);
    char q[128];
    snprintf(q, sizeof q, "SELECT 1 FROM strike.tables WHERE id = %lld FOR UPDATE",
             (long long)table_id);
    et_exec(c, "BEGIN");
    et_exec(c, q);
    return c;
}

int et_put(struct et *t, struct engine_table *tab, const int64_t *ids, const int64_t *vs, size_t n,
           struct engine_change_res *res)
{
    struct engine_change *ch = calloc(n ? n : 1, sizeof *ch);
    struct st_value(*vals)[2] = calloc(n ? n : 1, sizeof *vals);
    for (size_t i = 0; i < n; i++) {
        vals[i][0].v.l = ids[i];
        vals[i][1].v.l = vs[i] < 0 ? 0 : vs[i];
        ch[i] = (struct engine_change){vs[i] < 0 ? ENGINE_CHANGE_DELETE : ENGINE_CHANGE_UPSERT,
                                       vals[i]};
    }
    struct engine_change_req req = {.table = tab, .changes = ch, .nchanges = n};
    struct st_err err = {0};
    int rc = engine_apply_changes(t->e, &req, res, &err);
    if (rc != ST_OK)
        fprintf(stderr, "et_put: %s\n", err.msg);
    free(ch);
    free(vals);
    return rc;
}

int et_put_range(struct et *t, struct engine_table *tab, int64_t from, size_t n, int64_t mult,
                 struct engine_change_res *res)
{
    int64_t *ids = calloc(n ? n : 1, sizeof *ids), *vs = calloc(n ? n : 1, sizeof *vs);
    for (size_t i = 0; i < n; i++) {
        ids[i] = from + (int64_t)i;
        vs[i] = ids[i] * mult;
    }
    int rc = et_put(t, tab, ids, vs, n, res);
    free(ids);
    free(vs);
    return rc;
}
