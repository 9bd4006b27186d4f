/*
 * test_engine_erase.c - erasure (issue 14): a row with a unique marker in a
 * long history (several versions, DVs, a compaction, several snapshots) is
 * erased by key; afterwards no Parquet file under the data directory decodes
 * to the marker, the key index does not hold it, every check of the receipt
 * passed, the history before the purge is expired, and an upsert of the key
 * is a new row. Also: a key that does not exist, the filter form, the
 * Idempotency-Key (replay, another request), and the receipts by id and list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blob/blob.h"
#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"
#include "common/sha256.h"
#include "expr/filter.h"
#include "parquet/parquet.h"
#include "pgtest.h"
#include "s3raw.h"

#include <libpq-fe.h>

#define ROWS 300
#define MARKER "erase-me-7f3a9c"

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_erase", 64);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

/* Upsert (id, name) rows, or delete by key when name is NULL. */
static int put(struct engine_table *t, const int64_t *ids, const char *const *names, size_t n,
               struct engine_change_res *res)
{
    struct engine_change *ch = calloc(n, sizeof *ch);
    struct st_value(*vals)[2] = calloc(n, sizeof *vals);
    for (size_t i = 0; i < n; i++) {
        vals[i][0].v.l = ids[i];
        if (names[i] != NULL) {
            vals[i][1].v.s.p = names[i];
            vals[i][1].v.s.len = strlen(names[i]);
        }
        ch[i] = (struct engine_change){
            names[i] == NULL ? ENGINE_CHANGE_DELETE : ENGINE_CHANGE_UPSERT, vals[i]};
    }
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = n};
    struct st_err err = {0};
    int rc = engine_apply_changes(T.e, &req, res, &err);
    if (rc != ST_OK)
        print_error("put: %s\n", err.msg);
    free(ch);
    free(vals);
    return rc;
}

static void put1(struct engine_table *t, int64_t id, const char *name)
{
    struct engine_change_res res;
    assert_int_equal(put(t, &id, &name, 1, &res), ST_OK);
}

/* Rows of a Parquet file whose string columns contain `needle` (closes r). */
static int64_t reader_holding(struct pq_reader *r, const char *needle)
{
    int64_t hits = 0;
    struct st_err err = {0};
    int nc = pq_ncols(r);
    int cols[16];
    for (int c = 0; c < nc && c < 16; c++)
        cols[c] = c;
    struct pq_batch b = {0};
    for (int rg = 0; rg < pq_num_row_groups(r); rg++) {
        assert_int_equal(pq_read_row_group(r, rg, cols, nc, &b, &err), ST_OK);
        for (int c = 0; c < nc; c++) {
            if (b.cols[c].type != ST_T_STRING)
                continue;
            for (size_t i = 0; i < b.nrows; i++) {
                struct st_value v;
                st_colvec_get(&b.cols[c], i, &v);
                if (!v.null && v.v.s.len >= strlen(needle) &&
                    memmem(v.v.s.p, v.v.s.len, needle, strlen(needle)) != NULL)
                    hits++;
            }
        }
    }
    pq_batch_free(&b);
    pq_reader_close(r);
    return hits;
}

static int64_t file_holding(const char *path, const char *needle)
{
    struct pq_reader *r = NULL;
    struct st_err err = {0};
    if (pq_reader_open(path, &r, &err) != ST_OK)
        fail_msg("%s: %s", path, err.msg);
    return reader_holding(r, needle);
}

struct s3_hold {
    struct blob_store *s;
    const char *needle;
    int64_t hits, files;
};

static int s3_holding(void *ctx, const char *key, const struct blob_info *info)
{
    (void)info;
    struct s3_hold *h = ctx;
    size_t len = strlen(key);
    if (len < 9 || strcmp(key + len - 8, ".parquet") != 0)
        return 0;
    struct buf b = BUF_INIT;
    struct pq_reader *r = NULL;
    struct st_err err = {0};
    if (blob_read_all(h->s, key, 64u << 20, &b, &err) != ST_OK ||
        pq_reader_open_mem(b.data, b.len, &r, &err) != ST_OK)
        fail_msg("%s: %s", key, err.msg);
    h->files++;
    h->hits += reader_holding(r, h->needle);
    buf_free(&b);
    return 0;
}

/* Rows of every Parquet file under dir (recursively) whose string columns contain `needle`. */
static int64_t files_holding(const char *dir, const char *needle, int64_t *files)
{
    int64_t hits = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t len = strlen(de->d_name);
        if (len > 8 && strcmp(de->d_name + len - 8, ".parquet") == 0) {
            (*files)++;
            hits += file_holding(path, needle);
        } else if (de->d_type == DT_DIR) {
            hits += files_holding(path, needle, files);
        }
    }
    closedir(d);
    return hits;
}

/* The same, over one table's blobs (in the bucket on the S3 run). */
static int64_t table_files_holding(const struct engine_table *t, const char *needle, int64_t *files)
{
    if (T.s3 != NULL) {
        struct s3_hold h = {.needle = needle};
        struct st_err err = {0};
        char prefix[128];
        snprintf(prefix, sizeof prefix, "tables/%s/", t->uuid);
        assert_int_equal(blob_open(T.data_dir, T.s3, &h.s, &err), ST_OK);
        assert_int_equal(blob_list(h.s, prefix, s3_holding, &h, &err), ST_OK);
        blob_close(h.s);
        *files += h.files;
        return h.hits;
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tables/%s", T.data_dir, t->uuid);
    return files_holding(dir, needle, files);
}

/* Does any text of the receipt hold `needle`? (Its other members are numbers.) */
static bool receipt_holds(const struct engine_erasure *r, const char *needle)
{
    bool found = strstr(r->id, needle) || strstr(r->table, needle) || strstr(r->status, needle) ||
                 strstr(r->key_digest, needle);
    for (int i = 0; i < r->nchecks; i++) {
        found |= strstr(r->checks[i].name, needle) != NULL;
        for (int k = 0; k < r->checks[i].nfigures; k++)
            found |= strstr(r->checks[i].figures[k].name, needle) ||
                     strstr(r->checks[i].figures[k].text, needle);
    }
    return found;
}

/* The same receipt, member by member (replayed aside). */
static bool same_receipt(const struct engine_erasure *a, const struct engine_erasure *b)
{
    bool same = a->recorded == b->recorded && strcmp(a->id, b->id) == 0 &&
                strcmp(a->table, b->table) == 0 && strcmp(a->status, b->status) == 0 &&
                strcmp(a->key_digest, b->key_digest) == 0 && a->keys == b->keys &&
                a->rows_erased == b->rows_erased &&
                a->has_row_versions_purged == b->has_row_versions_purged &&
                a->row_versions_purged == b->row_versions_purged &&
                a->delete_seq == b->delete_seq && a->has_rewrite_seq == b->has_rewrite_seq &&
                a->rewrite_seq == b->rewrite_seq && a->expired_snapshots == b->expired_snapshots &&
                a->files_rewritten == b->files_rewritten && a->files_deleted == b->files_deleted &&
                a->bytes_deleted == b->bytes_deleted && a->verified_us == b->verified_us &&
                a->nchecks == b->nchecks;
    for (int i = 0; same && i < a->nchecks; i++) {
        const struct engine_erasure_check *x = &a->checks[i], *y = &b->checks[i];
        same =
            strcmp(x->name, y->name) == 0 && x->passed == y->passed && x->nfigures == y->nfigures;
        for (int k = 0; same && k < x->nfigures; k++)
            same = strcmp(x->figures[k].name, y->figures[k].name) == 0 &&
                   x->figures[k].is_text == y->figures[k].is_text &&
                   x->figures[k].n == y->figures[k].n &&
                   strcmp(x->figures[k].text, y->figures[k].text) == 0;
    }
    return same;
}

/* The check named `name` of a receipt (NULL: none). */
static const struct engine_erasure_check *check_of(const struct engine_erasure *r, const char *name)
{
    for (int i = 0; i < r->nchecks; i++)
        if (strcmp(r->checks[i].name, name) == 0)
            return &r->checks[i];
    return NULL;
}

/* A count of a check (-1: absent). */
static int64_t figure_of(const struct engine_erasure *r, const char *check, const char *name)
{
    const struct engine_erasure_check *c = check_of(r, check);
    for (int k = 0; c != NULL && k < c->nfigures; k++)
        if (strcmp(c->figures[k].name, name) == 0 && !c->figures[k].is_text)
            return c->figures[k].n;
    return -1;
}

static struct engine_table *history(const char *name, int64_t *before_purge)
{
    const char *cols[] = {"id:long!", "name:string"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, name, cols, 2, pk, 1, NULL);
    static int64_t ids[ROWS];
    static const char *names[ROWS];
    static char buf[ROWS][32];
    struct engine_change_res res;
    for (int f = 0; f < 3; f++) {
        for (int i = 0; i < ROWS / 3; i++) {
            ids[i] = f * (ROWS / 3) + i;
            snprintf(buf[i], sizeof buf[i], "name-%lld", (long long)ids[i]);
            names[i] = ids[i] == 42 ? MARKER " v1" : buf[i];
        }
        assert_int_equal(put(t, ids, names, ROWS / 3, &res), ST_OK);
    }
    put1(t, 42, MARKER " v2");    /* the old version stays in its file, deleted */
    put1(t, 7, NULL);             /* another DV */
    struct engine_compact_opts o; /* a compaction: the marker moves to a new file */
    engine_compact_opts_default(&o);
    o.min_deleted_fraction = 0;
    struct engine_compact_res cr;
    struct st_err err = {0};
    assert_int_equal(engine_compact(T.e, t, &o, &cr, &err), ST_OK);
    put1(t, 42, MARKER " v3");
    put1(t, 43, "bystander");
    struct engine_table *now = NULL;
    assert_int_equal(engine_get_table(T.e, name, &now, &err), ST_OK);
    *before_purge = now->seq;
    engine_table_unref(now);
    return t;
}

static void test_erase_by_key(void **state)
{
    (void)state;
    int64_t seq_before;
    struct engine_table *t = history("gdpr", &seq_before);
    int64_t files = 0;
    assert_true(table_files_holding(t, MARKER, &files) >= 3); /* three versions on disk */

    struct st_value key = {.v.l = 42};
    struct engine_erase_req q = {.table = t, .keys = &key, .nkeys = 1};
    struct engine_erasure er;
    struct st_err err = {0};
    int rc = engine_erase(T.e, &q, &er, &err);
    if (rc != ST_OK)
        fail_msg("erase: %s (status %s)", err.msg, er.status);
    assert_true(er.recorded);
    assert_string_equal(er.status, "verified");
    assert_int_equal(er.rows_erased, 1);
    /* v1 and v2 in the files the compaction replaced, v2 (deleted) in its output, v3 */
    assert_int_equal(er.row_versions_purged, 4);
    assert_true(er.files_rewritten >= 1);
    assert_true(er.expired_snapshots >= seq_before);
    assert_true(er.files_deleted >= 1);
    assert_true(er.verified_us > 0);
    const char *digest = er.key_digest;
    assert_int_equal(strncmp(digest, "hmac-sha256:", 12), 0);
    assert_int_equal(strlen(digest), 12 + 64);
    assert_false(receipt_holds(&er, MARKER));
    /* data_files, key_index, column_statistics, orphan_blobs, bucket_versioning and
       iceberg_metadata (the table's Iceberg metadata names no purged file, and metadata/ holds
       nothing else) */
    assert_int_equal(er.nchecks, 6);
    for (int i = 0; i < er.nchecks; i++)
        assert_true(er.checks[i].passed);
    assert_string_equal(er.checks[4].name, "bucket_versioning");
    assert_string_equal(er.checks[5].name, "iceberg_metadata");

    /* no file under the data directory decodes to the marker; the bystander is there */
    files = 0;
    assert_int_equal(table_files_holding(t, MARKER, &files), 0);
    assert_true(files > 0);
    int64_t f2 = 0;
    assert_int_equal(table_files_holding(t, "bystander", &f2), 1);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.key_index_i8 WHERE table_id = %lld AND key = 42",
             (long long)t->id);
    assert_int_equal(et_sql_i64(&T, sql), 0);
    /* the history before the purge is gone: reading it is refused */
    struct et_rows rows;
    assert_int_not_equal(et_scan_rc(&T, t, seq_before, &rows, &err), ST_OK);
    et_scan(&T, t, -1, &rows);
    assert_int_equal((int64_t)rows.n, ROWS - 2 + 0); /* 300 - id 7 - id 42 (43 was there) */
    et_rows_free(&rows);

    /* the receipt by id and in the list */
    struct engine_erasure got;
    assert_int_equal(engine_get_erasure(T.e, t, er.id, &got, &err), ST_OK);
    assert_true(same_receipt(&got, &er));
    engine_erasure_free(&got);
    assert_int_equal(engine_get_erasure(T.e, t, "0190a1b2-0000-7000-8000-000000000000", &got, &err),
                     ST_ENOTFOUND);
    struct engine_erasure *list = NULL;
    size_t n = 0;
    char next[64];
    assert_int_equal(engine_list_erasures(T.e, t, 10, NULL, &list, &n, next, sizeof next, &err),
                     ST_OK);
    assert_int_equal(n, 1);
    assert_string_equal(next, "");
    free(list);

    /* an upsert of the key after the erasure is a new row */
    struct engine_change_res res;
    int64_t id = 42;
    const char *nm = "back again";
    assert_int_equal(put(t, &id, &nm, 1, &res), ST_OK);
    assert_int_equal(res.inserted, 1);
    engine_erasure_free(&er);
    engine_table_unref(t);
}

static void test_erase_missing_key_and_idempotency(void **state)
{
    (void)state;
    int64_t seq;
    struct engine_table *t = history("idem", &seq);
    struct st_value key = {.v.l = 100000};
    struct engine_idem idem = {.key = "erase-1"};
    memset(idem.hash, 7, sizeof idem.hash);
    struct engine_erase_req q = {.table = t, .keys = &key, .nkeys = 1, .idem = &idem};
    struct engine_erasure er, again;
    struct st_err err = {0};
    assert_int_equal(engine_erase(T.e, &q, &er, &err), ST_OK);
    assert_int_equal(er.rows_erased, 0);
    assert_int_equal(er.row_versions_purged, 0);
    assert_string_equal(er.status, "verified");
    assert_false(er.replayed);
    /* the same key and request: the same receipt, replayed */
    assert_int_equal(engine_erase(T.e, &q, &again, &err), ST_OK);
    assert_true(again.replayed);
    assert_string_equal(again.id, er.id);
    engine_erasure_free(&again);
    /* the same key, another request */
    memset(idem.hash, 8, sizeof idem.hash);
    assert_int_equal(engine_erase(T.e, &q, &again, &err), ST_EIDEMPOTENCY);
    engine_erasure_free(&er);

    /* bad requests change nothing */
    struct engine_erase_req none = {.table = t};
    memset(&err, 0, sizeof err);
    assert_int_equal(engine_erase(T.e, &none, &er, &err), ST_EINVAL);
    struct st_value null_key = {.null = true};
    struct engine_erase_req nul = {.table = t, .keys = &null_key, .nkeys = 1};
    memset(&err, 0, sizeof err);
    assert_int_equal(engine_erase(T.e, &nul, &er, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "keys[0]"));
    engine_table_unref(t);
}

static void test_erase_by_filter(void **state)
{
    (void)state;
    int64_t seq;
    struct engine_table *t = history("byfilter", &seq);
    struct filter *f = NULL;
    struct st_err err = {0};
    const char *js = "{\"type\":\"starts-with\",\"term\":\"name\",\"value\":\"" MARKER "\"}";
    if (filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err) != ST_OK)
        fail_msg("filter: %s", err.msg);
    struct engine_erase_req q = {.table = t, .filter = f};
    struct engine_erasure er;
    int rc = engine_erase(T.e, &q, &er, &err);
    if (rc != ST_OK)
        fail_msg("erase: %s", err.msg);
    assert_int_equal(er.rows_erased, 1);
    assert_int_equal(er.row_versions_purged, 4);
    assert_int_equal(er.keys, 1); /* the versions of id 42 */
    int64_t files = 0;
    assert_int_equal(table_files_holding(t, MARKER, &files), 0);
    engine_erasure_free(&er);
    filter_free(f);
    engine_table_unref(t);
}

/*
 * Issue 28 item 1: a value-based erasure of an old version. id 1 and 2 in one commit, then a
 * newer version of id 1: the filter names only the old version (its email), which is already
 * deleted. The erasure purges that row version physically, verifies (the current row of id 1 is
 * legitimate, not a leftover) and says how many row versions it purged.
 */
static void test_erase_old_version_by_filter(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "email:string"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "users2", cols, 2, pk, 1, NULL);
    int64_t ids[2] = {1, 2};
    const char *emails[2] = {"old@x", "two@x"};
    struct engine_change_res res;
    assert_int_equal(put(t, ids, emails, 2, &res), ST_OK);
    put1(t, 1, "new@x");
    int64_t files = 0;
    assert_int_equal(table_files_holding(t, "old@x", &files), 1);

    struct filter *f = NULL;
    struct st_err err = {0};
    const char *js = "{\"type\":\"eq\",\"term\":\"email\",\"value\":\"old@x\"}";
    if (filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err) != ST_OK)
        fail_msg("filter: %s", err.msg);
    struct engine_erase_req q = {.table = t, .filter = f};
    struct engine_erasure er;
    int rc = engine_erase(T.e, &q, &er, &err);
    for (int i = 0; i < er.nchecks; i++)
        if (!er.checks[i].passed)
            print_error("check %s failed\n", er.checks[i].name);
    if (rc != ST_OK)
        fail_msg("erase: %s (status %s)", err.msg, er.status);
    assert_string_equal(er.status, "verified");
    for (int i = 0; i < er.nchecks; i++)
        assert_true(er.checks[i].passed);
    assert_int_equal(er.rows_erased, 0); /* nothing live matched: the version was deleted */
    assert_true(er.has_row_versions_purged);
    assert_int_equal(er.row_versions_purged, 1); /* that version, physically */
    assert_int_equal(er.keys, 1);                /* id 1 */
    assert_int_equal(er.files_rewritten, 1);
    /* id 1's current row is watched for (the key index points at it): its file is decoded
       although the filter's statistics exclude it; the rewrite of the other one is excluded */
    assert_int_equal(figure_of(&er, "data_files", "files_decoded"), 1);
    assert_int_equal(figure_of(&er, "data_files", "files_excluded_by_statistics"), 1);
    /* the key index's entry of id 1 (one probe) is at that current row */
    assert_int_equal(figure_of(&er, "key_index", "keys_at_erased_rows"), 0);
    assert_int_equal(figure_of(&er, "key_index", "keys_at_other_versions"), 1);
    /* the old version is gone from every file; the current rows stay */
    files = 0;
    assert_int_equal(table_files_holding(t, "old@x", &files), 0);
    assert_true(files > 0);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, 2);
    for (size_t i = 0; i < rows.n; i++) {
        const char *want = rows.rows[i].v[0].v.l == 1 ? "new@x" : "two@x";
        assert_string_equal(rows.rows[i].strs[1], want);
    }
    et_rows_free(&rows);
    /* the key still finds its row */
    int64_t one = 1;
    const char *gone = NULL;
    assert_int_equal(put(t, &one, &gone, 1, &res), ST_OK);
    assert_int_equal(res.deleted, 1);
    engine_erasure_free(&er);
    filter_free(f);
    engine_table_unref(t);
}

/* A query's only value as text (caller frees). */
static char *sql_text(const char *sql)
{
    PGconn *c = PQconnectdb(T.conninfo);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    char *out = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return out;
}

static int check_keys(const struct engine_table *t, const char *id, const int64_t *ids, size_t n,
                      bool *match)
{
    struct st_value *k = calloc(n ? n : 1, sizeof *k);
    for (size_t i = 0; i < n; i++)
        k[i].v.l = ids[i];
    struct engine_erasure_check_req q = {.table = t, .id = id, .keys = k, .nkeys = n};
    struct st_err err = {0};
    int rc = engine_check_erasure(T.e, &q, match, &err);
    free(k);
    return rc;
}

/*
 * Issue 28 item 2: the receipt's key digest is an HMAC keyed with the catalog's secret, not the
 * SHA-256 anyone could recompute from a guessed key; an admin checks keys against it. A receipt
 * stored before (a "sha256:" digest, no count of purged versions) is still read and checked.
 */
static void test_receipt_digest_keyed(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "name:string"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "digest", cols, 2, pk, 1, NULL);
    put1(t, 42, "subject");
    put1(t, 43, "other");
    struct st_value key = {.v.l = 42};
    struct engine_erase_req q = {.table = t, .keys = &key, .nkeys = 1};
    struct engine_erasure er;
    struct st_err err = {0};
    assert_int_equal(engine_erase(T.e, &q, &er, &err), ST_OK);
    assert_int_equal(strncmp(er.key_digest, "hmac-sha256:", 12), 0);
    assert_int_equal(strlen(er.key_digest), 12 + 64);

    /* what the digest is over: key 42's encoding (a long: 8 bytes, sign bit flipped) with its
       length; unkeyed, anyone could try ids against it */
    const uint8_t msg[12] = {0, 0, 0, 8, 0x80, 0, 0, 0, 0, 0, 0, 42};
    uint8_t d[32];
    char plain[65], keyed[65];
    st_sha256(msg, sizeof msg, d);
    st_sha256_hex(d, plain);
    assert_null(strstr(er.key_digest, plain));
    char *secret_hex =
        sql_text("SELECT encode(secret, 'hex') FROM strike.secrets WHERE name = 'erasure_digest'");
    assert_int_equal(strlen(secret_hex), 64);
    uint8_t secret[32];
    for (int i = 0; i < 32; i++)
        assert_int_equal(sscanf(secret_hex + 2 * i, "%2hhx", &secret[i]), 1);
    free(secret_hex);
    st_hmac_sha256(secret, sizeof secret, msg, sizeof msg, d);
    st_sha256_hex(d, keyed);
    assert_string_equal(er.key_digest + 12, keyed);

    /* the check: exactly the erased keys, in any order, repeats aside */
    bool match = false;
    int64_t k42[] = {42}, k43[] = {43}, both[] = {43, 42}, twice[] = {42, 42};
    assert_int_equal(check_keys(t, er.id, k42, 1, &match), ST_OK);
    assert_true(match);
    assert_int_equal(check_keys(t, er.id, twice, 2, &match), ST_OK);
    assert_true(match);
    assert_int_equal(check_keys(t, er.id, k43, 1, &match), ST_OK);
    assert_false(match);
    assert_int_equal(check_keys(t, er.id, both, 2, &match), ST_OK);
    assert_false(match);
    assert_int_equal(check_keys(t, er.id, k42, 0, &match), ST_EINVAL);
    assert_int_equal(check_keys(t, "01a23d1d-0000-7000-8000-000000000000", k42, 1, &match),
                     ST_ENOTFOUND);
    struct st_value null_key = {.null = true};
    struct engine_erasure_check_req nul = {.table = t, .id = er.id, .keys = &null_key, .nkeys = 1};
    assert_int_equal(engine_check_erasure(T.e, &nul, &match, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "keys[0]"));

    /* a filter's digest, its keys read back from the catalog's temporary table a chunk at a
       time, is over the same bytes: id 43 erased by filter has the HMAC above of id 43 */
    struct filter *f = NULL;
    const char *js = "{\"type\":\"eq\",\"term\":\"name\",\"value\":\"other\"}";
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err), ST_OK);
    struct engine_erase_req fq = {.table = t, .filter = f};
    struct engine_erasure fr;
    assert_int_equal(engine_erase(T.e, &fq, &fr, &err), ST_OK);
    assert_int_equal(fr.keys, 1);
    const uint8_t msg43[12] = {0, 0, 0, 8, 0x80, 0, 0, 0, 0, 0, 0, 43};
    st_hmac_sha256(secret, sizeof secret, msg43, sizeof msg43, d);
    st_sha256_hex(d, keyed);
    assert_string_equal(fr.key_digest + 12, keyed);
    engine_erasure_free(&fr);
    filter_free(f);
    /* more keys than a chunk (8,192): the streamed digest is the one of all the keys at once */
    enum { BULK = 10000 };
    int64_t *ids = calloc(BULK, sizeof *ids);
    const char **names = calloc(BULK, sizeof *names);
    for (int i = 0; i < BULK; i++) {
        ids[i] = 1000 + (int64_t)(BULK - i) * 7; /* not in order */
        names[i] = "bulk";
    }
    struct engine_change_res res;
    assert_int_equal(put(t, ids, names, BULK, &res), ST_OK);
    js = "{\"type\":\"eq\",\"term\":\"name\",\"value\":\"bulk\"}";
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err), ST_OK);
    fq.filter = f;
    assert_int_equal(engine_erase(T.e, &fq, &fr, &err), ST_OK);
    assert_string_equal(fr.status, "verified");
    assert_int_equal(fr.keys, BULK);
    assert_int_equal(check_keys(t, fr.id, ids, BULK, &match), ST_OK);
    assert_true(match);
    assert_int_equal(check_keys(t, fr.id, ids, BULK - 1, &match), ST_OK);
    assert_false(match);
    engine_erasure_free(&fr);
    filter_free(f);
    free(names);
    free(ids);

    /* a receipt stored before: its SHA-256 digest, as it was answered (no "v") */
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.erasures (id, table_id, receipt, status) VALUES "
             "('01a23d1d-29b5-741e-9552-5a6581d3e324', %lld, '{\"id\":\"01a23d1d-29b5-741e-9552-"
             "5a6581d3e324\",\"table\":\"digest\",\"status\":\"verified\",\"key_digest\":\"sha256:"
             "%s\",\"keys\":1,\"rows_erased\":1,\"delete_seq\":2,\"rewrite_seq\":3,"
             "\"expired_snapshots\":2,\"files_rewritten\":1,\"files_deleted\":1,\"bytes_deleted\":"
             "400,\"checks\":[],\"verified_at\":\"2026-01-02T03:04:05Z\"}', 'verified')",
             (long long)t->id, plain);
    et_sql(&T, sql);
    struct engine_erasure old;
    assert_int_equal(engine_get_erasure(T.e, t, "01a23d1d-29b5-741e-9552-5a6581d3e324", &old, &err),
                     ST_OK);
    assert_int_equal(strncmp(old.key_digest, "sha256:", 7), 0);
    assert_false(old.has_row_versions_purged);
    assert_int_equal(check_keys(t, old.id, k42, 1, &match), ST_OK);
    assert_true(match);
    assert_int_equal(check_keys(t, old.id, k43, 1, &match), ST_OK);
    assert_false(match);
    engine_erasure_free(&old);
    engine_erasure_free(&er);
    engine_table_unref(t);
}

/* ---- leftovers: temp files, unfinished uploads, orphans, versions (issue 28 items 3, 4) ---- */

/* S3 run: the bucket key prefix of the engine's store ("" locally). */
static const char *s3_prefix(void)
{
    return T.s3 != NULL ? T.data_dir + strlen("s3://strike-test/") : "";
}

/* Local run: the path of the table's only live data file holding `needle` (caller frees). */
static char *data_file_holding(const struct engine_table *t, const char *needle)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tables/%s/data", T.data_dir, t->uuid);
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *found = NULL;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 9 || strcmp(de->d_name + len - 8, ".parquet") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (found == NULL && file_holding(path, needle) > 0)
            found = strdup(path);
    }
    closedir(d);
    assert_non_null(found);
    return found;
}

/* Copy a file to `to` and set its mtime `age_s` seconds in the past. */
static void plant(const char *from, const char *to, int age_s)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char b[65536];
    size_t n;
    while ((n = fread(b, 1, sizeof b, in)) > 0)
        assert_int_equal(fwrite(b, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= age_s;
    ts[1] = ts[0];
    assert_int_equal(utimensat(AT_FDCWD, to, ts, 0), 0);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static struct engine_table *three_rows(const char *name)
{
    const char *cols[] = {"id:long!", "name:string"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, name, cols, 2, pk, 1, NULL);
    int64_t ids[3] = {1, 2, 3};
    const char *names[3] = {"keep-1", MARKER " leftover", "keep-3"};
    struct engine_change_res res;
    assert_int_equal(put(t, ids, names, 3, &res), ST_OK);
    return t;
}

/*
 * Item 3: a temporary file of a write (a crash mid-write, a compaction's
 * full copy of a file) and, on S3, an upload begun and never completed,
 * hold rows that no listing of Parquet files shows: the erasure's orphan
 * step examines and removes them, and so does the collector.
 */
static void test_leftovers_of_writes(void **state)
{
    (void)state;
    struct engine_table *t = three_rows("leftovers");
    struct st_err err = {0};
    char tmp[1024] = "", key[512] = "";
    if (T.s3 == NULL) {
        char *file = data_file_holding(t, MARKER);
        snprintf(tmp, sizeof tmp, "%s.tmp.0123456789abcdef", file);
        plant(file, tmp, ENGINE_COMMIT_MAX_AGE_S + 60); /* a crash's leftover, long dead */
        free(file);
    } else {
        snprintf(key, sizeof key, "%s/tables/%s/data/01a23d1d-0000-7000-8000-00000000000a.parquet",
                 s3_prefix(), t->uuid);
        char *id = s3raw_unfinished_upload(T.s3->endpoint, "strike-test", key,
                                           "PAR1 " MARKER " PAR1", strlen(MARKER) + 10);
        free(id);
    }
    struct st_value k = {.v.l = 2};
    struct engine_erase_req q = {.table = t, .keys = &k, .nkeys = 1};
    struct engine_erasure er;
    int rc = engine_erase(T.e, &q, &er, &err);
    if (rc != ST_OK)
        fail_msg("erase: %s", err.msg);
    assert_string_equal(er.status, "verified");
    assert_true(figure_of(&er, "orphan_blobs", "orphans_examined") >= 1);
    assert_true(figure_of(&er, "orphan_blobs", "orphans_deleted") >= 1);
    if (T.s3 == NULL)
        assert_false(exists(tmp));
    else
        assert_int_equal(s3raw_count_uploads(T.s3->endpoint, "strike-test", key), 0);
    engine_erasure_free(&er);

    /* the collector: a leftover older than its grace goes, a young one stays */
    struct engine_gc_report rep;
    if (T.s3 == NULL) {
        char *file = data_file_holding(t, "keep-1");
        char young[1100];
        snprintf(tmp, sizeof tmp, "%s.tmp.00000000000000aa", file);
        snprintf(young, sizeof young, "%s.tmp.00000000000000bb", file);
        plant(file, tmp, ENGINE_GC_GRACE_MIN_S + 60);
        plant(file, young, 0);
        free(file);
        assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
        assert_false(exists(tmp));
        assert_true(exists(young));
        assert_int_equal(unlink(young), 0);
    } else {
        snprintf(key, sizeof key, "%s/tables/%s/data/01a23d1d-0000-7000-8000-00000000000b.parquet",
                 s3_prefix(), t->uuid);
        char *id =
            s3raw_unfinished_upload(T.s3->endpoint, "strike-test", key, "PAR1 rows PAR1", 14);
        free(id);
        assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, true, &rep, &err), ST_OK);
        assert_true(rep.uploads >= 1);
        assert_int_equal(rep.uploads_aborted, 0); /* a dry run */
        assert_int_equal(s3raw_count_uploads(T.s3->endpoint, "strike-test", key), 1);
        /* moto says every upload began in 2010: older than any grace */
        assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
        assert_true(rep.uploads_aborted >= 1);
        assert_int_equal(s3raw_count_uploads(T.s3->endpoint, "strike-test", key), 0);
    }
    engine_table_unref(t);
}

/*
 * Item 4: a failed commit's Parquet file holding an erased row, 125 s old:
 * past ENGINE_COMMIT_MAX_AGE_S on striked's clock, but a commit is only
 * refused once that age passed on the catalog's clock, which may run behind,
 * and its COMMIT lands after its last check. The erasure deletes it only once
 * it is as old as the collector's grace on the catalog's clock; until then
 * it keeps it (here: after a short wait, a failed check), then deletes it.
 */
static void test_orphan_age_on_the_catalog_clock(void **state)
{
    (void)state;
    if (T.s3 != NULL) {
        /* an object's LastModified cannot be set back: the local run covers the ages */
        struct engine_table *t = three_rows("young_s3");
        engine_table_unref(t);
        return;
    }
    struct engine_table *t = three_rows("young");
    char *file = data_file_holding(t, MARKER);
    char orphan[1024];
    snprintf(orphan, sizeof orphan,
             "%s/tables/%s/data/01a23d1d-0000-7000-8000-0000000000c1.parquet", T.data_dir, t->uuid);
    plant(file, orphan, ENGINE_COMMIT_MAX_AGE_S + 5);
    free(file);
    engine_test_erase_orphan_wait(T.e, 1500);
    struct st_value k = {.v.l = 2};
    struct engine_erase_req q = {.table = t, .keys = &k, .nkeys = 1};
    struct engine_erasure er;
    struct st_err err = {0};
    assert_int_equal(engine_erase(T.e, &q, &er, &err), ST_EINTERNAL);
    assert_string_equal(er.status, "failed");
    assert_true(exists(orphan)); /* not deleted while a commit could still take it */
    assert_false(check_of(&er, "orphan_blobs")->passed);
    assert_int_equal(figure_of(&er, "orphan_blobs", "orphans_kept"), 1);
    assert_true(check_of(&er, "data_files")->passed);
    engine_erasure_free(&er);
    /* as old as the collector's grace: no commit can take it any more */
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= ENGINE_GC_GRACE_MIN_S + 5;
    ts[1] = ts[0];
    assert_int_equal(utimensat(AT_FDCWD, orphan, ts, 0), 0);
    memset(&err, 0, sizeof err);
    if (engine_erase(T.e, &q, &er, &err) != ST_OK)
        fail_msg("erase: %s", err.msg);
    assert_string_equal(er.status, "verified");
    assert_false(exists(orphan));
    assert_int_equal(figure_of(&er, "orphan_blobs", "orphans_deleted"), 1);
    engine_test_erase_orphan_wait(T.e, 0);
    engine_erasure_free(&er);
    engine_table_unref(t);
}

/*
 * Item 3: on a bucket that keeps versions, a deleted file stays as a
 * noncurrent version: the erasure is not verified (check bucket_versioning).
 * A local store keeps none: the check passes.
 */
static void test_bucket_versioning(void **state)
{
    (void)state;
    struct st_err err = {0};
    struct engine_erasure er;
    if (T.s3 == NULL) {
        struct engine_table *t = three_rows("unversioned");
        struct st_value k = {.v.l = 2};
        struct engine_erase_req q = {.table = t, .keys = &k, .nkeys = 1};
        assert_int_equal(engine_erase(T.e, &q, &er, &err), ST_OK);
        assert_non_null(check_of(&er, "bucket_versioning"));
        assert_true(check_of(&er, "bucket_versioning")->passed);
        engine_erasure_free(&er);
        engine_table_unref(t);
        return;
    }
    char bucket[64], url[128];
    snprintf(bucket, sizeof bucket, "strike-versioned-%d", (int)getpid());
    s3raw_versioned_bucket(T.s3->endpoint, bucket, "Enabled");
    snprintf(url, sizeof url, "s3://%s/erase", bucket);
    char *conninfo = pgtest_create_db("strike_test_erase_versioned");
    struct engine_opts o = {.conninfo = conninfo, .data_dir = url, .s3 = T.s3, .pool_size = 4};
    struct engine *e = NULL;
    assert_int_equal(engine_open(&o, &e, &err), ST_OK);
    struct et saved = T;
    T.e = e;
    struct engine_table *t = three_rows("versioned");
    struct st_value k = {.v.l = 2};
    struct engine_erase_req q = {.table = t, .keys = &k, .nkeys = 1};
    assert_int_equal(engine_erase(e, &q, &er, &err), ST_EINTERNAL);
    assert_string_equal(er.status, "failed");
    const struct engine_erasure_check *v = check_of(&er, "bucket_versioning");
    assert_non_null(v);
    assert_false(v->passed);
    for (int i = 0; i < er.nchecks; i++)
        if (&er.checks[i] != v)
            assert_true(er.checks[i].passed);
    engine_erasure_free(&er);
    engine_table_unref(t);
    T = saved;
    engine_close(e);
    free(conninfo);
}

/* ---- files excluded by statistics (issue 31, row i14c) ---------------------------------- */

/* Upsert ids [from, from + n) named "name-<id>" (the one id `marked` named MARKER), one commit. */
static void put_range(struct engine_table *t, int64_t from, int n, int64_t marked)
{
    int64_t *ids = calloc((size_t)n, sizeof *ids);
    const char **names = calloc((size_t)n, sizeof *names);
    char(*buf)[32] = calloc((size_t)n, sizeof *buf);
    for (int i = 0; i < n; i++) {
        ids[i] = from + i;
        snprintf(buf[i], sizeof buf[i], "name-%lld", (long long)ids[i]);
        names[i] = ids[i] == marked ? MARKER : buf[i];
    }
    struct engine_change_res res;
    assert_int_equal(put(t, ids, names, (size_t)n, &res), ST_OK);
    free(buf);
    free(names);
    free(ids);
}

/* Every check of the receipt passed (the failed ones printed). */
static void all_passed(const struct engine_erasure *er)
{
    for (int i = 0; i < er->nchecks; i++)
        if (!er->checks[i].passed)
            print_error("check %s failed\n", er->checks[i].name);
    for (int i = 0; i < er->nchecks; i++)
        assert_true(er->checks[i].passed);
}

/*
 * Verification decodes only the files whose own footer statistics could hold
 * an erased key: four files, ids 0..99 (A), 100..199 (B, holding 150), -5
 * and 1250 (C: its range covers 150, it does not hold it) and 500..599 (D).
 * Erasing 150 rewrites B; verification decodes its rewrite B' (its range
 * still covers 150) and C, and A and D are excluded by statistics. The
 * same by a filter on the key (the scans' pruning of the filter), and the
 * receipt as stored: the fourth figure goes to "checks_more", which a
 * striked of before skips, and a receipt of before reads as it was.
 */
static void test_excluded_by_statistics(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "name:string"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "disjoint", cols, 2, pk, 1, NULL);
    put_range(t, 0, 100, -1);
    put_range(t, 100, 100, 150);
    int64_t wide[2] = {-5, 1250};
    const char *wide_names[2] = {"wide-lo", "wide-hi"};
    struct engine_change_res res;
    assert_int_equal(put(t, wide, wide_names, 2, &res), ST_OK);
    put_range(t, 500, 100, -1);

    struct st_value key = {.v.l = 150};
    struct engine_erase_req q = {.table = t, .keys = &key, .nkeys = 1};
    struct engine_erasure er;
    struct st_err err = {0};
    int rc = engine_erase(T.e, &q, &er, &err);
    if (rc != ST_OK)
        fail_msg("erase: %s (status %s)", err.msg, er.status);
    assert_string_equal(er.status, "verified");
    all_passed(&er);
    assert_int_equal(er.rows_erased, 1);
    assert_int_equal(er.row_versions_purged, 1); /* the purge found it in B, excluding A, C, D */
    assert_int_equal(er.files_rewritten, 1);
    assert_int_equal(figure_of(&er, "data_files", "files_decoded"), 2); /* B' and C */
    assert_int_equal(figure_of(&er, "data_files", "files_excluded_by_statistics"), 2);
    assert_int_equal(figure_of(&er, "data_files", "files_holding_erased"), 0);
    assert_int_equal(figure_of(&er, "key_index", "keys_checked"), 1);
    assert_int_equal(figure_of(&er, "key_index", "keys_from_before_delete"), 0);
    const struct engine_erasure_check *df = check_of(&er, "data_files");
    assert_int_equal(df->nfigures, 4); /* added after the three of before, which keep their place */
    assert_string_equal(df->figures[0].name, "files_decoded");
    assert_string_equal(df->figures[3].name, "files_excluded_by_statistics");
    int64_t files = 0;
    assert_int_equal(table_files_holding(t, MARKER, &files), 0);

    /* stored: three figures in the check (what a striked of before reads), the fourth after */
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM jsonb_object_keys((SELECT receipt::jsonb -> 'checks' -> 0 FROM "
             "strike.erasures WHERE id = '%s'))",
             er.id);
    assert_int_equal(et_sql_i64(&T, sql), 5); /* check, passed and three figures */
    snprintf(
        sql, sizeof sql,
        "SELECT (receipt::jsonb -> 'checks_more' -> 0 ->> 'files_excluded_by_statistics')::int "
        "FROM strike.erasures WHERE id = '%s'",
        er.id);
    assert_int_equal(et_sql_i64(&T, sql), 2);
    struct engine_erasure got;
    assert_int_equal(engine_get_erasure(T.e, t, er.id, &got, &err), ST_OK);
    assert_true(same_receipt(&got, &er));
    engine_erasure_free(&got);
    engine_erasure_free(&er);

    /* a receipt of before: three figures, no checks_more; and a checks_more that does not fit */
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.erasures (id, table_id, receipt, status) VALUES "
             "('01a23d1d-29b5-741e-9552-5a6581d3e3a1', %lld, '{\"v\":1,\"id\":\"x\",\"table\":"
             "\"disjoint\",\"status\":\"verified\",\"key_digest\":\"sha256:00\",\"keys\":1,"
             "\"rows_erased\":1,\"delete_seq\":2,\"rewrite_seq\":null,\"expired_snapshots\":1,"
             "\"files_rewritten\":0,\"files_deleted\":0,\"bytes_deleted\":0,\"checks\":[{\"check\":"
             "\"data_files\",\"passed\":true,\"files_decoded\":9,\"files_holding_erased\":0,"
             "\"rows_written_after_delete\":0}],\"verified_us\":1}', 'verified'), "
             "('01a23d1d-29b5-741e-9552-5a6581d3e3a2', %lld, '{\"v\":1,\"id\":\"x\",\"table\":"
             "\"disjoint\",\"status\":\"verified\",\"key_digest\":\"sha256:00\",\"keys\":1,"
             "\"rows_erased\":1,\"delete_seq\":2,\"rewrite_seq\":null,\"expired_snapshots\":1,"
             "\"files_rewritten\":0,\"files_deleted\":0,\"bytes_deleted\":0,\"checks\":[{\"check\":"
             "\"data_files\",\"passed\":true,\"a\":1,\"b\":2,\"c\":3}],\"checks_more\":[{\"d\":4,"
             "\"e\":5}],\"verified_us\":1}', 'verified')",
             (long long)t->id, (long long)t->id);
    et_sql(&T, sql);
    assert_int_equal(engine_get_erasure(T.e, t, "01a23d1d-29b5-741e-9552-5a6581d3e3a1", &got, &err),
                     ST_OK);
    assert_int_equal(got.nchecks, 1);
    assert_int_equal(got.checks[0].nfigures, 3);
    assert_int_equal(figure_of(&got, "data_files", "files_decoded"), 9);
    assert_int_equal(figure_of(&got, "data_files", "files_excluded_by_statistics"), -1);
    engine_erasure_free(&got);
    assert_int_equal(engine_get_erasure(T.e, t, "01a23d1d-29b5-741e-9552-5a6581d3e3a2", &got, &err),
                     ST_EINTERNAL); /* five figures: more than a check holds */

    /* by a filter on the key: 550, in D; C's range covers it too */
    struct filter *f = NULL;
    const char *js = "{\"type\":\"eq\",\"term\":\"id\",\"value\":550}";
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err), ST_OK);
    struct engine_erase_req fq = {.table = t, .filter = f};
    if ((rc = engine_erase(T.e, &fq, &er, &err)) != ST_OK)
        fail_msg("erase: %s (status %s)", err.msg, er.status);
    all_passed(&er);
    assert_int_equal(er.rows_erased, 1);
    assert_int_equal(er.row_versions_purged, 1);
    assert_int_equal(figure_of(&er, "data_files", "files_decoded"), 2); /* D' and C */
    assert_int_equal(figure_of(&er, "data_files", "files_excluded_by_statistics"), 2);
    engine_erasure_free(&er);
    filter_free(f);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, 300);
    et_rows_free(&rows);
    engine_table_unref(t);
}

/*
 * A key of two columns: a file is excluded when, for every erased key, one
 * of its columns lies outside that column's range. Files ("eu", 0..9),
 * ("us", 0..9) and ("eu", 100..109); erasing ("us", 5) and ("eu", 50)
 * decodes only the rewrite of the second.
 */
static void test_excluded_composite_key(void **state)
{
    (void)state;
    const char *cols[] = {"region:string!", "id:long!", "name:string"};
    const char *pk[] = {"region", "id"};
    struct engine_table *t = et_create(&T, "twokeys", cols, 3, pk, 2, NULL);
    struct {
        const char *region;
        int64_t from;
    } files[3] = {{"eu", 0}, {"us", 0}, {"eu", 100}};
    for (int f = 0; f < 3; f++) {
        struct engine_change ch[10];
        struct st_value vals[10][3];
        memset(vals, 0, sizeof vals);
        for (int i = 0; i < 10; i++) {
            const char *nm = f == 1 && i == 5 ? MARKER : "someone";
            vals[i][0].v.s.p = files[f].region;
            vals[i][0].v.s.len = 2;
            vals[i][1].v.l = files[f].from + i;
            vals[i][2].v.s.p = nm;
            vals[i][2].v.s.len = (uint32_t)strlen(nm);
            ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, vals[i]};
        }
        struct engine_change_req req = {.table = t, .changes = ch, .nchanges = 10};
        struct engine_change_res res;
        struct st_err err = {0};
        assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    }
    struct st_value keys[4] = {{.v.s = {"us", 2}}, {.v.l = 5}, {.v.s = {"eu", 2}}, {.v.l = 50}};
    struct engine_erase_req q = {.table = t, .keys = keys, .nkeys = 2};
    struct engine_erasure er;
    struct st_err err = {0};
    int rc = engine_erase(T.e, &q, &er, &err);
    if (rc != ST_OK)
        fail_msg("erase: %s (status %s)", err.msg, er.status);
    all_passed(&er);
    assert_int_equal(er.rows_erased, 1);
    assert_int_equal(er.files_rewritten, 1);
    assert_int_equal(figure_of(&er, "data_files", "files_decoded"), 1);
    assert_int_equal(figure_of(&er, "data_files", "files_excluded_by_statistics"), 2);
    int64_t n = 0;
    assert_int_equal(table_files_holding(t, MARKER, &n), 0);
    engine_erasure_free(&er);
    engine_table_unref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_erase_by_key),
        cmocka_unit_test(test_erase_missing_key_and_idempotency),
        cmocka_unit_test(test_erase_by_filter),
        cmocka_unit_test(test_erase_old_version_by_filter),
        cmocka_unit_test(test_receipt_digest_keyed),
        cmocka_unit_test(test_leftovers_of_writes),
        cmocka_unit_test(test_orphan_age_on_the_catalog_clock),
        cmocka_unit_test(test_bucket_versioning),
        cmocka_unit_test(test_excluded_by_statistics),
        cmocka_unit_test(test_excluded_composite_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
