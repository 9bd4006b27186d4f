/*
 * test_blob.c - the blob store (storage/blob) through its interface: puts
 * that never overwrite, exact range reads, head, list, batched delete, touch,
 * key checks, and a Parquet file read by ranges (footer first, then one
 * range per projected column chunk of the row groups read).
 *
 * The store is a fresh local directory, or, when the s3 fixture set
 * STRIKE_TEST_S3 (ctest's test_blob_s3), a fresh prefix in the fixture's
 * bucket on its moto_server: the same tests against both.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blob/blob.h"
#include "blob/blob_int.h"
#include "common/sha256.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "parquet/parquet.h"
#include "s3raw.h"

static struct blob_store *S;
static char Prefix[96]; /* S3: the store's prefix in the bucket strike-test */
static char Dir[] = "/tmp/strike-blob-XXXXXX";

static char Endpoint[128];
static struct blob_s3_opts S3o;

static int setup(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *fx = getenv("STRIKE_TEST_S3");
    if (fx != NULL && fx[0] != '\0') {
        char *path = xasprintf("%s/endpoint", fx);
        FILE *f = fopen(path, "r");
        free(path);
        assert_non_null(f);
        assert_non_null(fgets(Endpoint, sizeof Endpoint, f));
        fclose(f);
        Endpoint[strcspn(Endpoint, "\n")] = '\0';
        S3o = (struct blob_s3_opts){.endpoint = Endpoint, .path_style = true};
        snprintf(Prefix, sizeof Prefix, "test-blob-%d-%lld", (int)getpid(), (long long)time(NULL));
        char *url = xasprintf("s3://strike-test/%s", Prefix);
        int rc = blob_open_s3(url, &S3o, &S, &err);
        free(url);
        assert_int_equal(rc, ST_OK);
        return 0;
    }
    assert_non_null(mkdtemp(Dir));
    char *dir = xasprintf("%s/store", Dir); /* not there yet: the store creates it */
    int rc = blob_open_local(dir, &S, &err);
    free(dir);
    assert_int_equal(rc, ST_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (blob_local_root(S) != NULL) {
        char *cmd = xasprintf("rm -rf '%s'", Dir);
        assert_int_equal(system(cmd), 0);
        free(cmd);
    }
    blob_close(S);
    return 0;
}

static void test_put_get_head(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *key = "tables/t1/data/a.parquet";
    assert_int_equal(blob_put_all(S, key, "0123456789", 10, &err), ST_OK);
    struct blob_info bi;
    assert_int_equal(blob_head(S, key, &bi, &err), ST_OK);
    assert_int_equal(bi.size, 10);
    assert_true(bi.mtime_us > 0);
    char b[8] = {0};
    assert_int_equal(blob_read(S, key, 3, b, 4, &err), ST_OK);
    assert_memory_equal(b, "3456", 4);
    struct buf all = BUF_INIT;
    assert_int_equal(blob_read_all(S, key, 10, &all, &err), ST_OK);
    assert_int_equal(all.len, 10);
    assert_memory_equal(all.data, "0123456789", 10);
    assert_int_equal(blob_read_all(S, key, 9, &all, &err), ST_ETOOBIG);
    buf_free(&all);
}

/* The conditional write: an existing object is refused, not replaced. */
static void test_put_never_overwrites(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *key = "tables/t1/dv/b.puffin";
    assert_int_equal(blob_put_all(S, key, "first", 5, &err), ST_OK);
    assert_int_equal(blob_put_all(S, key, "second!", 7, &err), ST_EEXIST);
    assert_non_null(strstr(err.msg, "already exists"));
    char b[5];
    assert_int_equal(blob_read(S, key, 0, b, 5, &err), ST_OK);
    assert_memory_equal(b, "first", 5);
    struct blob_info bi;
    assert_int_equal(blob_head(S, key, &bi, &err), ST_OK);
    assert_int_equal(bi.size, 5);
    if (blob_local_root(S) == NULL)
        return;
    /* the refused put left no temporary file behind */
    char *cmd = xasprintf("test $(ls -a '%s/tables/t1/dv' | wc -l) -eq 3", blob_local_root(S));
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void test_short_and_missing_reads(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *key = "tables/t1/data/c.parquet";
    assert_int_equal(blob_put_all(S, key, "abc", 3, &err), ST_OK);
    char b[8];
    assert_int_equal(blob_read(S, key, 1, b, 3, &err), ST_ECORRUPT);
    assert_int_equal(blob_read(S, key, 4, b, 1, &err), ST_ECORRUPT);
    assert_int_equal(blob_read(S, "tables/t1/data/none", 0, b, 1, &err), ST_ENOTFOUND);
    struct blob_info bi;
    assert_int_equal(blob_head(S, "tables/t1/data/none", &bi, &err), ST_ENOTFOUND);
    struct blob_file *f;
    assert_int_equal(blob_file_open(S, "tables/t1/data/none", &f, &err), ST_ENOTFOUND);
}

static void test_key_checks(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *bad[] = {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "a/"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct blob_info bi;
        assert_int_equal(blob_head(S, bad[i], &bi, &err), ST_EINVAL);
        assert_int_equal(blob_put_all(S, bad[i], "x", 1, &err), ST_EINVAL);
        assert_int_equal(blob_delete(S, &bad[i], 1, NULL, &err), ST_EINVAL);
    }
    assert_int_equal(blob_list(S, "../", NULL, NULL, &err), ST_EINVAL);
    assert_int_equal(blob_list(S, "tables", NULL, NULL, &err), ST_EINVAL);
}

static void test_abort_leaves_nothing(void **state)
{
    (void)state;
    struct st_err err = {0};
    struct blob_put *p;
    const char *key = "tables/t2/data/aborted.parquet";
    assert_int_equal(blob_put_begin(S, key, &p, &err), ST_OK);
    assert_int_equal(blob_put_write(p, "partial", 7, &err), ST_OK);
    blob_put_abort(p);
    struct blob_info bi;
    assert_int_equal(blob_head(S, key, &bi, &err), ST_ENOTFOUND);
}

struct seen {
    char keys[16][64];
    uint64_t sizes[16];
    int n;
};

static int note(void *ctx, const char *key, const struct blob_info *info)
{
    struct seen *s = ctx;
    if (s->n < 16) {
        snprintf(s->keys[s->n], sizeof s->keys[0], "%s", key);
        s->sizes[s->n] = info->size;
    }
    s->n++;
    return 0;
}

static int find(const struct seen *s, const char *key)
{
    for (int i = 0; i < s->n && i < 16; i++)
        if (strcmp(s->keys[i], key) == 0)
            return i;
    return -1;
}

static void test_list_and_batch_delete(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *keys[] = {"tables/t3/data/1.parquet", "tables/t3/data/2.parquet",
                          "tables/t3/dv/3.puffin", "tables/t4/data/4.parquet"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(blob_put_all(S, keys[i], "xyz", i + 1, &err), ST_OK);
    struct seen s = {0};
    assert_int_equal(blob_list(S, "tables/t3/", note, &s, &err), ST_OK);
    assert_int_equal(s.n, 3);
    int i2 = find(&s, "tables/t3/data/2.parquet");
    assert_true(i2 >= 0);
    assert_int_equal(s.sizes[i2], 2);
    assert_true(find(&s, "tables/t3/dv/3.puffin") >= 0);
    memset(&s, 0, sizeof s);
    assert_int_equal(blob_list(S, "tables/none/", note, &s, &err), ST_OK);
    assert_int_equal(s.n, 0);

    const char *doomed[] = {keys[0], "tables/t3/data/never.parquet", keys[2]};
    bool gone[3];
    assert_int_equal(blob_delete(S, doomed, 3, gone, &err), ST_OK);
    assert_true(gone[0]);
    if (blob_local_root(S) != NULL)
        assert_false(gone[1]); /* S3 reports a key that was not there as deleted too */
    assert_true(gone[2]);
    memset(&s, 0, sizeof s);
    assert_int_equal(blob_list(S, "tables/t3/", note, &s, &err), ST_OK);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.keys[0], "tables/t3/data/2.parquet");
    /* deleting again: nothing left to delete, not an error */
    assert_int_equal(blob_delete(S, doomed, 3, gone, &err), ST_OK);
    if (blob_local_root(S) != NULL)
        assert_false(gone[0] || gone[1] || gone[2]);
    memset(&s, 0, sizeof s);
    assert_int_equal(blob_list(S, "tables/t3/", note, &s, &err), ST_OK);
    assert_int_equal(s.n, 1);
}

static void test_touch_makes_young(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *key = "tables/t5/data/old.parquet";
    assert_int_equal(blob_put_all(S, key, "old", 3, &err), ST_OK);
    if (blob_local_root(S) == NULL) {
        /* an object's age is its LastModified, which a copy onto itself renews */
        struct blob_info before, after;
        assert_int_equal(blob_head(S, key, &before, &err), ST_OK);
        assert_int_equal(blob_touch(S, key, &err), ST_OK);
        assert_int_equal(blob_head(S, key, &after, &err), ST_OK);
        assert_true(after.mtime_us >= before.mtime_us);
        assert_int_equal(after.size, 3);
        char b[3];
        assert_int_equal(blob_read(S, key, 0, b, 3, &err), ST_OK);
        assert_memory_equal(b, "old", 3);
        assert_int_equal(blob_touch(S, "tables/t5/data/none", &err), ST_EIO);
        return;
    }
    /* age it by an hour behind the interface's back (local store only) */
    char *abs = xasprintf("%s/%s", blob_local_root(S), key);
    struct timespec ts[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    assert_int_equal(utimensat(AT_FDCWD, abs, ts, 0), 0);
    free(abs);
    struct blob_info before, after;
    assert_int_equal(blob_head(S, key, &before, &err), ST_OK);
    assert_int_equal(blob_touch(S, key, &err), ST_OK);
    assert_int_equal(blob_head(S, key, &after, &err), ST_OK);
    assert_true(after.mtime_us >= before.mtime_us + 3000 * (int64_t)1000000);
    assert_int_equal(blob_touch(S, "tables/t5/data/none", &err), ST_EIO);
}

/* ---- Parquet over byte ranges ---------------------------------------------- */

struct counting {
    struct blob_file *f;
    int reads;
    uint64_t first_off; /* of the first read: the file's tail */
};

static int counting_read(void *ctx, void *dst, size_t n, uint64_t off, struct st_err *err)
{
    struct counting *c = ctx;
    if (c->reads++ == 0)
        c->first_off = off;
    return blob_file_read(c->f, dst, n, off, err);
}

static void test_parquet_by_ranges(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *key = "tables/t6/data/p.parquet";
    struct st_column cols[3] = {{.name = "id", .type = ST_T_LONG, .required = true},
                                {.name = "v", .type = ST_T_INT},
                                {.name = "s", .type = ST_T_STRING}};
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.row_group_rows = 100;
    struct blob_put *p;
    assert_int_equal(blob_put_begin(S, key, &p, &err), ST_OK);
    struct pq_writer *w;
    assert_int_equal(pq_writer_open(&w, cols, 3, &o, blob_put_write_fn, p, &err), ST_OK);
    for (int i = 0; i < 350; i++) {
        struct st_value row[3] = {{.v.l = i}, {.v.i = i * 2}, {.null = true}};
        assert_int_equal(pq_writer_add_row(w, row, &err), ST_OK);
    }
    struct pq_file_stats stats;
    memset(&stats, 0, sizeof stats);
    assert_int_equal(pq_writer_finish(w, &stats, &err), ST_OK);
    pq_writer_free(w);
    assert_int_equal(blob_put_commit(p, &err), ST_OK);

    struct counting c = {0};
    assert_int_equal(blob_file_open(S, key, &c.f, &err), ST_OK);
    assert_int_equal(blob_file_size(c.f), stats.file_size);
    pq_file_stats_free(&stats);
    struct pq_source src = {.ctx = &c, .size = blob_file_size(c.f), .read_at = counting_read};
    struct pq_reader *r;
    assert_int_equal(pq_reader_open_source(&src, &r, &err), ST_OK);
    /* tail (length + magic), head magic, footer */
    assert_int_equal(c.reads, 3);
    assert_int_equal(c.first_off, blob_file_size(c.f) - 8);
    assert_int_equal(pq_num_row_groups(r), 4);
    struct pq_batch b = {0};
    const int proj[2] = {0, 1};
    assert_int_equal(pq_read_row_group(r, 2, proj, 2, &b, &err), ST_OK);
    assert_int_equal(b.nrows, 100);
    assert_int_equal(b.first_row, 200);
    /* one range per projected column chunk */
    assert_int_equal(c.reads, 5);
    pq_batch_free(&b);
    pq_reader_close(r);
    blob_file_close(c.f);
}

/* A source that ends early (a truncated object) is an error, not a short file. */
static void test_parquet_truncated(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *key = "tables/t6/data/p.parquet";
    struct blob_file *f;
    assert_int_equal(blob_file_open(S, key, &f, &err), ST_OK);
    struct counting c = {.f = f};
    /* claim a larger size than the object has: the tail read runs past the end */
    struct pq_source src = {.ctx = &c, .size = blob_file_size(f) + 100, .read_at = counting_read};
    struct pq_reader *r = NULL;
    assert_int_equal(pq_reader_open_source(&src, &r, &err), ST_ECORRUPT);
    assert_null(r);
    blob_file_close(f);
}

/* Large objects go up in parts; the completion is conditional too. */
static void test_large_object(void **state)
{
    (void)state;
    struct st_err err = {0};
    size_t n = (20u << 20) + 12345;
    uint8_t *big = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (uint8_t)(i * 7 + (i >> 13));
    const char *key = "tables/t7/data/big.parquet";
    struct blob_put *p;
    assert_int_equal(blob_put_begin(S, key, &p, &err), ST_OK);
    for (size_t off = 0; off < n; off += 1u << 20)
        assert_int_equal(
            blob_put_write(p, big + off, n - off < (1u << 20) ? n - off : 1u << 20, &err), ST_OK);
    assert_int_equal(blob_put_commit(p, &err), ST_OK);
    struct blob_info bi;
    assert_int_equal(blob_head(S, key, &bi, &err), ST_OK);
    assert_int_equal(bi.size, n);
    uint8_t b[64];
    uint64_t at = (8u << 20) - 32; /* across the first part boundary */
    assert_int_equal(blob_read(S, key, at, b, 64, &err), ST_OK);
    assert_memory_equal(b, big + at, 64);
    assert_int_equal(blob_read(S, key, n - 64, b, 64, &err), ST_OK);
    assert_memory_equal(b, big + n - 64, 64);
    /* a second large put of the key is refused and changes nothing */
    big[0] ^= 0xff;
    assert_int_equal(blob_put_all(S, key, big, n, &err), ST_EEXIST);
    assert_int_equal(blob_read(S, key, 0, b, 1, &err), ST_OK);
    assert_int_equal(b[0], (uint8_t)(big[0] ^ 0xff));
    free(big);
}

/* On S3, a range answer shorter than asked (the object was replaced by a
   shorter one under the reader's feet) is ST_ECORRUPT, never a short read. */
static void test_truncated_range(void **state)
{
    (void)state;
    struct st_err err = {0};
    const char *key = "tables/t8/data/shrinks.parquet";
    size_t n = 200u << 10;
    uint8_t *d = xcalloc(1, n);
    assert_int_equal(blob_put_all(S, key, d, n, &err), ST_OK);
    struct blob_file *f;
    assert_int_equal(blob_file_open(S, key, &f, &err), ST_OK);
    assert_int_equal(blob_file_size(f), n);
    struct blob_file *again;
    assert_int_equal(blob_file_open(S, key, &again, &err), ST_OK); /* S3: from its tail cache */
    assert_int_equal(blob_file_size(again), n);
    blob_file_close(again);
    assert_int_equal(blob_delete(S, &key, 1, NULL, &err), ST_OK);
    /* a delete drops the cached tail: the object is gone for an open too */
    assert_int_equal(blob_file_open(S, key, &again, &err), ST_ENOTFOUND);
    assert_int_equal(blob_put_all(S, key, d, 100u << 10, &err), ST_OK);
    uint8_t b[20u << 10];
    /* a local open file keeps its bytes (the unlinked inode); S3 answers with the new object */
    int want = blob_local_root(S) != NULL ? ST_OK : ST_ECORRUPT;
    assert_int_equal(blob_file_read(f, b, sizeof b, 90u << 10, &err), want);
    assert_int_equal(blob_file_read(f, b, sizeof b, 110u << 10, &err), want);
    blob_file_close(f);
    free(d);
}

static void test_s3_urls(void **state)
{
    (void)state;
    struct st_err err = {0};
    struct blob_store *s = NULL;
    struct blob_s3_opts o = {.endpoint = "http://127.0.0.1:1", .path_style = true};
    assert_int_equal(blob_open_s3("s3://", &o, &s, &err), ST_EINVAL);
    assert_int_equal(blob_open_s3("s3://Bad_Bucket/x", &o, &s, &err), ST_EINVAL);
    assert_int_equal(blob_open_s3("s3://b/../x", &o, &s, &err), ST_EINVAL);
    struct blob_s3_opts bad = {.endpoint = "ftp://x", .path_style = true};
    const char *id = getenv("AWS_ACCESS_KEY_ID");
    if (id != NULL) {
        assert_int_equal(blob_open_s3("s3://b/x", &bad, &s, &err), ST_EINVAL);
        struct blob_s3_opts r = {.region = "us-east-1;x", .endpoint = "http://h"};
        assert_int_equal(blob_open_s3("s3://b/x", &r, &s, &err), ST_EINVAL);
        assert_int_equal(blob_open_s3("s3://b/p/", &o, &s, &err), ST_OK);
        assert_string_equal(blob_describe(s), "s3://b/p/");
        assert_null(strstr(blob_describe(s), id));
        blob_close(s);
        /* nothing listens on port 1: a clear "unavailable", after the retries */
        s = NULL;
        assert_int_equal(blob_open_s3("s3://b/p", &o, &s, &err), ST_OK);
        struct blob_info bi;
        assert_int_equal(blob_head(s, "k", &bi, &err), ST_ESTORE);
        assert_null(strstr(err.msg, getenv("AWS_SECRET_ACCESS_KEY")));
        blob_close(s);
    }
}

/* RFC 4231 test cases 2 and 6 (a key longer than the block). */
static void test_hmac_sha256(void **state)
{
    (void)state;
    uint8_t d[32];
    char hex[65];
    const char *m = "what do ya want for nothing?";
    st_hmac_sha256("Jefe", 4, m, strlen(m), d);
    st_sha256_hex(d, hex);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    uint8_t key[131];
    memset(key, 0xaa, sizeof key);
    m = "Test Using Larger Than Block-Size Key - Hash Key First";
    st_hmac_sha256(key, sizeof key, m, strlen(m), d);
    st_sha256_hex(d, hex);
    assert_string_equal(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* The presigned URL of AWS's S3 documentation ("Authenticating Requests: Using
   Query Parameters"), and the same object on the dual-stack endpoint. */
static void test_presign_vectors(void **state)
{
    (void)state;
    const char *ak = "AKIAIOSFODNN7EXAMPLE", *sk = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const int64_t t = 1369353600; /* 2013-05-24T00:00:00Z */
    char *url = NULL;
    assert_int_equal(blob__s3_presign(ak, sk, NULL, "us-east-1",
                                      "https://examplebucket.s3.amazonaws.com/", "/test.txt", t,
                                      86400, &url),
                     ST_OK);
    assert_string_equal(url, "https://examplebucket.s3.amazonaws.com/test.txt"
                             "?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                             "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2F"
                             "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
                             "&X-Amz-SignedHeaders=host&X-Amz-Signature="
                             "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
    free(url);
    assert_int_equal(blob__s3_presign(ak, sk, NULL, "us-east-1",
                                      "https://examplebucket.s3.dualstack.us-east-1.amazonaws.com/",
                                      "/test.txt", t, 86400, &url),
                     ST_OK);
    assert_non_null(
        strstr(url, "Signature=50aa6c33627b0c01d6ca9ff2fd27a2855bbe9ceb5d2624f3c8c6a0e1a509b4de"));
    free(url);
    /* a local store cannot presign; expiry bounds */
    struct st_err err = {0};
    if (blob_local_root(S) != NULL) {
        assert_int_equal(blob_presign_get(S, "tables/x", t, 60, &url, &err), ST_EUNSUPPORTED);
    } else {
        assert_int_equal(blob_presign_get(S, "tables/x", t, 0, &url, &err), ST_EINVAL);
        assert_int_equal(blob_presign_get(S, "tables/x", t, 604801, &url, &err), ST_EINVAL);
        assert_int_equal(blob_presign_get(S, "tables/x", t, 60, &url, &err), ST_OK);
        assert_non_null(strstr(url, "/strike-test/"));
        assert_non_null(strstr(url, "/tables/x?X-Amz-Algorithm=AWS4-HMAC-SHA256"));
        assert_non_null(strstr(url, "X-Amz-Expires=60&"));
        assert_null(strstr(url, getenv("AWS_SECRET_ACCESS_KEY")));
        free(url);
    }
}

struct uploads {
    int n;
    char key[128], id[128];
    int64_t initiated_us;
};

static int count_upload(void *ctx, const struct blob_upload *u)
{
    struct uploads *up = ctx;
    up->n++;
    snprintf(up->key, sizeof up->key, "%s", u->key);
    snprintf(up->id, sizeof up->id, "%s", u->upload_id);
    up->initiated_us = u->initiated_us;
    return 0;
}

/*
 * What a store keeps besides its objects (issue 28 item 3): an upload begun
 * and never completed holds bytes no listing of objects shows; a versioned
 * bucket keeps what is deleted. A local store has neither.
 */
static void test_unfinished_uploads_and_versioning(void **state)
{
    (void)state;
    struct st_err err = {0};
    struct uploads up = {0};
    enum blob_versioning v = BLOB_VERSIONING_ENABLED;
    if (blob_local_root(S) != NULL) {
        assert_int_equal(blob_list_uploads(S, "tables/", count_upload, &up, &err), ST_OK);
        assert_int_equal(up.n, 0);
        assert_int_equal(blob_versioning(S, &v, &err), ST_OK);
        assert_int_equal(v, BLOB_UNVERSIONED);
        assert_int_equal(blob_abort_upload(S, "tables/t9/data/x.parquet", "id", &err),
                         ST_EUNSUPPORTED);
        return;
    }
    char key[256], prefix[256];
    snprintf(key, sizeof key, "%s/tables/t9/data/big.parquet", Prefix);
    snprintf(prefix, sizeof prefix, "%s/tables/", Prefix);
    char *id = s3raw_unfinished_upload(Endpoint, "strike-test", key, "PAR1 rows PAR1", 14);
    /* invisible to a listing of objects, listed as an unfinished upload */
    struct seen s = {0};
    assert_int_equal(blob_list(S, "tables/t9/", note, &s, &err), ST_OK);
    assert_int_equal(s.n, 0);
    assert_int_equal(blob_list_uploads(S, "tables/", count_upload, &up, &err), ST_OK);
    assert_int_equal(up.n, 1);
    assert_string_equal(up.key, "tables/t9/data/big.parquet");
    assert_string_equal(up.id, id);
    assert_true(up.initiated_us > 0);
    memset(&up, 0, sizeof up);
    assert_int_equal(blob_list_uploads(S, "tables/t8/", count_upload, &up, &err), ST_OK);
    assert_int_equal(up.n, 0);
    assert_int_equal(blob_list_uploads(S, "tables", count_upload, &up, &err), ST_EINVAL);
    /* aborted: gone; aborting again is not an error */
    assert_int_equal(blob_abort_upload(S, "tables/t9/data/big.parquet", id, &err), ST_OK);
    assert_int_equal(s3raw_count_uploads(Endpoint, "strike-test", prefix), 0);
    assert_int_equal(blob_list_uploads(S, "tables/", count_upload, &up, &err), ST_OK);
    assert_int_equal(up.n, 0);
    assert_int_equal(blob_abort_upload(S, "tables/t9/data/big.parquet", id, &err), ST_OK);
    assert_int_equal(blob_abort_upload(S, "../x", id, &err), ST_EINVAL);
    free(id);

    /* the fixture's bucket keeps no versions; one with versioning does */
    assert_int_equal(blob_versioning(S, &v, &err), ST_OK);
    assert_int_equal(v, BLOB_UNVERSIONED);
    char bucket[64];
    snprintf(bucket, sizeof bucket, "strike-versioned-%d", (int)getpid());
    s3raw_versioned_bucket(Endpoint, bucket, "Enabled");
    char *url = xasprintf("s3://%s/p", bucket);
    struct blob_store *vs = NULL;
    assert_int_equal(blob_open_s3(url, &S3o, &vs, &err), ST_OK);
    assert_int_equal(blob_versioning(vs, &v, &err), ST_OK);
    assert_int_equal(v, BLOB_VERSIONING_ENABLED);
    s3raw_versioned_bucket(Endpoint, bucket, "Suspended");
    assert_int_equal(blob_versioning(vs, &v, &err), ST_OK);
    assert_int_equal(v, BLOB_VERSIONING_SUSPENDED);
    blob_close(vs);
    free(url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_head),
        cmocka_unit_test(test_put_never_overwrites),
        cmocka_unit_test(test_short_and_missing_reads),
        cmocka_unit_test(test_key_checks),
        cmocka_unit_test(test_abort_leaves_nothing),
        cmocka_unit_test(test_list_and_batch_delete),
        cmocka_unit_test(test_touch_makes_young),
        cmocka_unit_test(test_parquet_by_ranges),
        cmocka_unit_test(test_parquet_truncated),
        cmocka_unit_test(test_large_object),
        cmocka_unit_test(test_truncated_range),
        cmocka_unit_test(test_s3_urls),
        cmocka_unit_test(test_hmac_sha256),
        cmocka_unit_test(test_presign_vectors),
        cmocka_unit_test(test_unfinished_uploads_and_versioning),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
