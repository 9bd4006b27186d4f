/*
 * test_parquet_interop.c - files written by other Parquet implementations:
 *
 *  - Spark / Databricks Runtime (parquet-mr 1.12.3-databricks) files of the
 *    Delta tables in STRIKE_TESTDATA_DIR (its MANIFEST.md, section 5): SNAPPY,
 *    PLAIN and PLAIN_DICTIONARY pages, INT96 timestamps. Rows and positions are
 *    checked against the MANIFEST and the Delta logs (numRecords, min/max).
 *  - arrow-rs (parquet-rs 56.2) files in tests/integration/parquet_fixtures
 *    (gen.mjs): data page v2, RLE_DICTIONARY, DELTA_BINARY_PACKED,
 *    DELTA_BYTE_ARRAY, DELTA_LENGTH_BYTE_ARRAY, BYTE_STREAM_SPLIT, RLE
 *    booleans, SNAPPY/ZSTD/GZIP/none.
 *
 * STRIKE_TESTDATA_DIR (../shared/testdata by default) and STRIKE_SOURCE_DIR
 * come from ctest; without them, or without the files, the test fails (it
 * never skips). ctest runs the test_arrow_* tests as test_parquet_interop and
 * the test_delta_* ones as test_parquet_interop_delta (label `fixtures`, not
 * run when STRIKE_TESTDATA_DIR is absent), through STRIKE_TEST_FILTER.
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

#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/types.h"
#include "common/xalloc.h"
#include "parquet/parquet.h"
#include "test_parquet_util.h"

static char *testdata_path(const char *rel)
{
    return st_path_join(env_dir("STRIKE_TESTDATA_DIR"), rel);
}

/* Open a file and read column `name` of every row group into ints (int or long columns). */
static int64_t *read_ints(const char *path, const char *name, size_t *n)
{
    struct st_err err = {0};
    struct pq_reader *r;
    if (pq_reader_open(path, &r, &err) != ST_OK)
        fail_msg("%s", err.msg);
    int c = pq_find_column(r, name);
    assert_true(c >= 0);
    int64_t *out = xcalloc(pq_num_rows(r) + 1, sizeof *out);
    struct pq_batch b = {0};
    size_t k = 0;
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        if (pq_read_row_group(r, g, &c, 1, &b, &err) != ST_OK)
            fail_msg("%s: %s", path, err.msg);
        assert_int_equal(b.first_row, k);
        for (size_t i = 0; i < b.nrows; i++) {
            struct st_value v;
            st_colvec_get(&b.cols[0], i, &v);
            assert_false(v.null);
            out[k++] = b.cols[0].type == ST_T_INT ? v.v.i : v.v.l;
        }
        /* the row group statistics bound the values */
        struct pq_col_stats st;
        if (pq_row_group_stats(r, g, c, &st) && st.has_minmax) {
            for (size_t i = 0; i < b.nrows; i++) {
                struct st_value v;
                st_colvec_get(&b.cols[0], i, &v);
                assert_true(st_value_cmp(b.cols[0].type, &v, &st.min) >= 0);
                assert_true(st_value_cmp(b.cols[0].type, &v, &st.max) <= 0);
            }
        }
    }
    assert_int_equal(k, pq_num_rows(r));
    *n = k;
    pq_batch_free(&b);
    pq_reader_close(r);
    return out;
}

static void test_delta_dv_small(void **state)
{
    (void)state;
    char *path =
        testdata_path("delta-kernel-rs/table-with-dv-small/"
                      "part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet");
    size_t n;
    int64_t *v = read_ints(path, "value", &n);
    /* MANIFEST: value 0..9, 10 rows; the DV deletes positions 0 and 9 leaving 1..8 */
    assert_int_equal(n, 10);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(v[i], (int64_t)i);
    free(v);
    free(path);
}

static void test_delta_short_dv(void **state)
{
    (void)state;
    const char *files[2] = {"delta-kernel-rs/with-short-dv/"
                            "part-00000-8029f411-746c-41c1-a0c1-c5eb867c5d05-c000.snappy.parquet",
                            "delta-kernel-rs/with-short-dv/"
                            "part-00001-24db34ab-bdfe-4814-aba8-c1f34d6d8923-c000.snappy.parquet"};
    int live = 0;
    for (int f = 0; f < 2; f++) {
        char *path = testdata_path(files[f]);
        size_t n;
        int64_t *v = read_ints(path, "id", &n);
        /* MANIFEST: part-00000 holds ids 0..4, part-00001 ids 5..9 */
        assert_int_equal(n, 5);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(v[i], (int64_t)(5 * f) + (int64_t)i);
            /* DV {0,1,2} on part-00000: ids 3..9 remain */
            if (!(f == 0 && i <= 2)) {
                assert_true(v[i] >= 3 && v[i] <= 9);
                live++;
            }
        }
        /* every column decodes (string, INT96 timestamp, double) */
        struct st_err err = {0};
        struct pq_reader *r;
        assert_int_equal(pq_reader_open(path, &r, &err), ST_OK);
        assert_int_equal(pq_ncols(r), 4);
        int cols[4] = {0, 1, 2, 3};
        assert_int_equal(pq_column(r, 2)->type, ST_T_TIMESTAMP);
        struct pq_batch b = {0};
        for (int g = 0; g < pq_num_row_groups(r); g++)
            if (pq_read_row_group(r, g, cols, 4, &b, &err) != ST_OK)
                fail_msg("%s", err.msg);
        pq_batch_free(&b);
        pq_reader_close(r);
        free(v);
        free(path);
    }
    assert_int_equal(live, 7);
}

struct dfile {
    char name[256]; /* file name */
    int64_t *vals;
    size_t n;
    int64_t num_records, min, max; /* from the Delta log */
};

static struct dfile *find_file(struct dfile *fs, int nf, const char *prefix)
{
    struct dfile *hit = NULL;
    for (int i = 0; i < nf; i++) {
        if (strncmp(fs[i].name, prefix, strlen(prefix)) == 0) {
            assert_null(hit); /* prefixes are unique */
            hit = &fs[i];
        }
    }
    assert_non_null(hit);
    return hit;
}

static void test_delta_dv_large(void **state)
{
    (void)state;
    char *dir = testdata_path("delta/table-with-dv-large");
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dfile fs[32];
    int nf = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 8, ".parquet") != 0)
            continue;
        assert_true(nf < 32);
        memset(&fs[nf], 0, sizeof fs[nf]);
        snprintf(fs[nf].name, sizeof fs[nf].name, "%s", e->d_name);
        char *path = st_path_join(dir, e->d_name);
        fs[nf].vals = read_ints(path, "value", &fs[nf].n);
        fs[nf].num_records = -1;
        free(path);
        nf++;
    }
    closedir(d);
    assert_int_equal(nf, 22); /* 20 files of v0, one each from v2 and v4 */

    /* the Delta log's numRecords and min/max per file agree with what we decode */
    for (int v = 0; v <= 4; v++) {
        char rel[64];
        snprintf(rel, sizeof rel, "_delta_log/%020d.json", v);
        char *lp = st_path_join(dir, rel);
        struct buf lb = BUF_INIT;
        struct st_err err = {0};
        assert_int_equal(st_read_file(lp, 1u << 20, &lb, &err), ST_OK);
        const char *s = buf_cstr(&lb);
        while (*s) {
            const char *nl = strchr(s, '\n');
            size_t ll = nl ? (size_t)(nl - s) : strlen(s);
            json_t *o = json_loadb(s, ll, 0, NULL);
            json_t *add = json_object_get(o, "add");
            if (add != NULL) {
                const char *p = json_string_value(json_object_get(add, "path"));
                json_t *st = json_loads(json_string_value(json_object_get(add, "stats")), 0, NULL);
                assert_non_null(p);
                assert_non_null(st);
                struct dfile *f = find_file(fs, nf, p);
                f->num_records = json_integer_value(json_object_get(st, "numRecords"));
                f->min =
                    json_integer_value(json_object_get(json_object_get(st, "minValues"), "value"));
                f->max =
                    json_integer_value(json_object_get(json_object_get(st, "maxValues"), "value"));
                json_decref(st);
            }
            json_decref(o);
            s += ll + (nl ? 1 : 0);
        }
        buf_free(&lb);
        free(lp);
    }
    int count[2000] = {0};
    size_t total = 0;
    for (int i = 0; i < nf; i++) {
        assert_int_equal(fs[i].num_records, (int64_t)fs[i].n);
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        for (size_t k = 0; k < fs[i].n; k++) {
            int64_t x = fs[i].vals[k];
            assert_true(x >= 0 && x < 2000);
            count[x]++;
            mn = x < mn ? x : mn;
            mx = x > mx ? x : mx;
        }
        assert_int_equal(mn, fs[i].min);
        assert_int_equal(mx, fs[i].max);
        total += fs[i].n;
    }
    /* v0 holds ids [0,2000); v2 inserts {300,700}; v4 inserts {900,1567} */
    assert_int_equal(total, 2004);
    for (int x = 0; x < 2000; x++)
        assert_int_equal(count[x], (x == 300 || x == 700 || x == 900 || x == 1567) ? 2 : 1);

    /* positions: v1's DVs point at the ids it removes, {0,180,300,700,1800} */
    struct {
        const char *file;
        int pos;
    } v1[] = {{"part-00012-", 26},
              {"part-00015-", 21},
              {"part-00001-", 70},
              {"part-00019-", 6},
              {"part-00003-", 32}};
    int64_t got[8];
    for (int i = 0; i < 5; i++) {
        struct dfile *f = find_file(fs, nf, v1[i].file);
        assert_true((size_t)v1[i].pos < f->n);
        got[i] = f->vals[v1[i].pos];
    }
    const int64_t want1[5] = {0, 180, 300, 700, 1800};
    for (int w = 0; w < 5; w++) {
        int hits = 0;
        for (int i = 0; i < 5; i++)
            hits += got[i] == want1[w];
        assert_int_equal(hits, 1);
    }
    /* v3's new positions: {300 (re-inserted), 250, 350, 900, 1353, 1567} */
    struct {
        const char *file;
        int pos;
    } v3[] = {{"part-00018-", 51}, {"part-00001-", 81},        {"part-00012-", 40},
              {"part-00014-", 19}, {"part-00000-51219d56", 0}, {"part-00019-", 43}};
    for (int i = 0; i < 6; i++) {
        struct dfile *f = find_file(fs, nf, v3[i].file);
        assert_true((size_t)v3[i].pos < f->n);
        got[i] = f->vals[v3[i].pos];
    }
    const int64_t want3[6] = {300, 250, 350, 900, 1353, 1567};
    for (int w = 0; w < 6; w++) {
        int hits = 0;
        for (int i = 0; i < 6; i++)
            hits += got[i] == want3[w];
        assert_int_equal(hits, 1);
    }
    assert_int_equal(find_file(fs, nf, "part-00000-51219d56")->vals[0], 300);
    for (int i = 0; i < nf; i++)
        free(fs[i].vals);
    free(dir);
}

/* ---- arrow-rs fixtures: row i as gen.mjs states it ---- */

static void expect_arrow(int i, int col, struct st_value *v, char tmp[64])
{
    memset(v, 0, sizeof *v);
    switch (col) {
    case 0:
        v->null = i % 11 == 0;
        v->v.b = i % 3 == 0;
        break;
    case 1:
        v->null = i % 5 == 0;
        v->v.i = ((i * 7919) % 100003) - 50000;
        break;
    case 2:
        v->null = i % 7 == 0;
        v->v.l = (int64_t)i * 1000003 - ((int64_t)1 << 40);
        break;
    case 3:
        v->null = i % 4 == 1;
        v->v.d = i / 4.0;
        break;
    case 4: {
        v->null = i % 6 == 0;
        int n = snprintf(tmp, 64, "s%d", i);
        for (int k = 0; k < i % 3; k++)
            n += snprintf(tmp + n, 64 - (size_t)n, "\xc3\xa9");
        v->v.s.p = tmp;
        v->v.s.len = (uint32_t)n;
        break;
    }
    case 5:
        v->v.s.len = (uint32_t)snprintf(tmp, 64, "x%d", i % 5);
        v->v.s.p = tmp;
        break;
    case 6:
        v->null = i % 9 == 0;
        v->v.l = 1700000000000000LL + (int64_t)i * 1000001;
        break;
    }
}

static void check_arrow_file(const char *name, uint32_t want_pages_v2, uint32_t want_enc)
{
    char rel[256];
    snprintf(rel, sizeof rel, "tests/integration/parquet_fixtures/%s", name);
    char *path = st_path_join(env_dir("STRIKE_SOURCE_DIR"), rel);
    struct st_err err = {0};
    struct pq_reader *r;
    if (pq_reader_open(path, &r, &err) != ST_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(pq_num_rows(r), 3000);
    assert_int_equal(pq_ncols(r), 7);
    static const enum st_type types[7] = {ST_T_BOOLEAN, ST_T_INT,    ST_T_LONG,     ST_T_DOUBLE,
                                          ST_T_STRING,  ST_T_STRING, ST_T_TIMESTAMP};
    for (int c = 0; c < 7; c++)
        assert_int_equal(pq_column(r, c)->type, types[c]);
    int cols[7] = {0, 1, 2, 3, 4, 5, 6};
    struct pq_batch b = {0};
    char tmp[64];
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        if (pq_read_row_group(r, g, cols, 7, &b, &err) != ST_OK)
            fail_msg("%s: %s", name, err.msg);
        for (int c = 0; c < 7; c++) {
            uint64_t nulls = 0;
            for (size_t k = 0; k < b.nrows; k++) {
                struct st_value want, got;
                int i = (int)(b.first_row + k);
                expect_arrow(i, c, &want, tmp);
                st_colvec_get(&b.cols[c], k, &got);
                assert_int_equal(got.null, want.null);
                nulls += got.null;
                if (!want.null && st_value_cmp(types[c], &want, &got) != 0)
                    fail_msg("%s row %d column %d differs", name, i, c);
            }
            struct pq_col_stats st;
            assert_true(pq_row_group_stats(r, g, c, &st));
            assert_true(st.has_null_count);
            assert_int_equal(st.null_count, nulls);
            assert_true(st.has_minmax);
            for (size_t k = 0; k < b.nrows; k++) {
                struct st_value v;
                st_colvec_get(&b.cols[c], k, &v);
                if (!v.null) {
                    assert_true(st_value_cmp(types[c], &v, &st.min) >= 0);
                    assert_true(st_value_cmp(types[c], &v, &st.max) <= 0);
                }
            }
        }
    }
    struct pq_read_counters cnt;
    pq_reader_counters(r, &cnt);
    assert_int_equal(cnt.pages_v2 > 0, want_pages_v2 > 0);
    assert_int_equal(cnt.encodings_seen & want_enc, want_enc);
    pq_batch_free(&b);
    pq_reader_close(r);
    free(path);
}

#define ENC(e) (1u << (e))

static void test_arrow_fixtures(void **state)
{
    (void)state;
    check_arrow_file("arrow_v2_snappy.parquet", 1, ENC(8) | ENC(3));
    check_arrow_file("arrow_v2_zstd_nodict.parquet", 1, ENC(5) | ENC(7) | ENC(3));
    check_arrow_file("arrow_v2_dlba.parquet", 1, ENC(6) | ENC(9) | ENC(5));
    check_arrow_file("arrow_v1_gzip.parquet", 0, ENC(8));
}

int main(void)
{
    const char *filter = getenv("STRIKE_TEST_FILTER");
    if (filter != NULL && filter[0] != '\0')
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delta_dv_small),
        cmocka_unit_test(test_delta_short_dv),
        cmocka_unit_test(test_delta_dv_large),
        cmocka_unit_test(test_arrow_fixtures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
