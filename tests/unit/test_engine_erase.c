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
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"
#include "expr/filter.h"
#include "parquet/parquet.h"

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
            struct pq_reader *r = NULL;
            struct st_err err = {0};
            if (pq_reader_open(path, &r, &err) != ST_OK)
                fail_msg("%s: %s", path, err.msg);
            (*files)++;
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
        } else if (de->d_type == DT_DIR) {
            hits += files_holding(path, needle, files);
        }
    }
    closedir(d);
    return hits;
}

/* The same, over one table's blobs. */
static int64_t table_files_holding(const struct engine_table *t, const char *needle, int64_t *files)
{
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
                a->rows_erased == b->rows_erased && a->delete_seq == b->delete_seq &&
                a->has_rewrite_seq == b->has_rewrite_seq && a->rewrite_seq == b->rewrite_seq &&
                a->expired_snapshots == b->expired_snapshots &&
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
    assert_true(er.files_rewritten >= 1);
    assert_true(er.expired_snapshots >= seq_before);
    assert_true(er.files_deleted >= 1);
    assert_true(er.verified_us > 0);
    const char *digest = er.key_digest;
    assert_int_equal(strncmp(digest, "sha256:", 7), 0);
    assert_int_equal(strlen(digest), 7 + 64);
    assert_false(receipt_holds(&er, MARKER));
    /* data_files, key_index, column_statistics, orphan_blobs and iceberg_metadata (the
       table's Iceberg metadata names no purged file, and metadata/ holds nothing else) */
    assert_int_equal(er.nchecks, 5);
    for (int i = 0; i < er.nchecks; i++)
        assert_true(er.checks[i].passed);
    assert_string_equal(er.checks[4].name, "iceberg_metadata");

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
    assert_int_equal(er.keys, 1); /* the versions of id 42 */
    int64_t files = 0;
    assert_int_equal(table_files_holding(t, MARKER, &files), 0);
    engine_erasure_free(&er);
    filter_free(f);
    engine_table_unref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_erase_by_key),
        cmocka_unit_test(test_erase_missing_key_and_idempotency),
        cmocka_unit_test(test_erase_by_filter),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
