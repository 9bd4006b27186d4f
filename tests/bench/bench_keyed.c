/*
 * bench_keyed.c - bench row 2 (single-key delete latency) with each server's
 * own C client: strike over HTTP through libcurl (the library libstrike is
 * built on), PostgreSQL through libpq. Both keep one connection open; each
 * delete is one request (strike: POST /v1/tables/{t}/changes with one delete
 * by key, no Idempotency-Key) or one execution of a prepared statement
 * (PostgreSQL: DELETE FROM t WHERE id = $1, autocommit). The keys are those
 * of tests/bench/keyed_client.mjs delete1: a window of a fixed permutation
 * of 0..N-1 from --offset, so rounds never repeat a key. Prints one JSON
 * line: {"mode":"delete1","target":..,"client":..,"ms":[...]}; every answer
 * is checked (each delete must delete its row). Never asserts a time.
 *
 *   bench_keyed delete1 --target strike --url http://127.0.0.1:P --table tk
 *               --rows N --offset O --samples S [--warmup 2]
 *   bench_keyed delete1 --target pg --conninfo CONNINFO --table t ...
 */
#include <curl/curl.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *arg_target, *arg_url, *arg_conninfo, *arg_table;
static long arg_rows = 1000000, arg_offset, arg_samples = 100, arg_warmup = 2;

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_keyed: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* keyed_client.mjs permKey: (i mod N) * 2654435761 mod N (N < 2^32: no overflow) */
static int64_t perm_key(long i)
{
    uint64_t n = (uint64_t)arg_rows;
    return (int64_t)(((uint64_t)i % n) * 2654435761u % n);
}

/* ---- strike: libcurl, one easy handle (one kept-alive connection) ---- */

struct answer {
    char buf[512];
    size_t len;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct answer *a = ud;
    size_t k = size * n, room = sizeof a->buf - 1 - a->len;
    memcpy(a->buf + a->len, p, k < room ? k : room);
    a->len += k < room ? k : room;
    a->buf[a->len] = '\0';
    return k;
}

struct strike_side {
    CURL *h;
    struct curl_slist *hdr;
    struct answer ans;
    char url[512];
};

static void strike_open(struct strike_side *s)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || (s->h = curl_easy_init()) == NULL)
        die("libcurl", "cannot start");
    if (snprintf(s->url, sizeof s->url, "%s/v1/tables/%s/changes", arg_url, arg_table) >=
        (int)sizeof s->url)
        die("--url", "too long");
    s->hdr = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(s->h, CURLOPT_URL, s->url);
    curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->hdr);
    curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(s->h, CURLOPT_WRITEDATA, &s->ans);
    curl_easy_setopt(s->h, CURLOPT_TCP_NODELAY, 1L);
}

static void strike_delete(struct strike_side *s, int64_t key)
{
    char body[128];
    int n = snprintf(body, sizeof body, "{\"changes\":[{\"op\":\"delete\",\"key\":{\"id\":%lld}}]}",
                     (long long)key);
    s->ans.len = 0;
    s->ans.buf[0] = '\0';
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDSIZE, (long)n);
    CURLcode rc = curl_easy_perform(s->h);
    long status = 0;
    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK)
        die("POST", curl_easy_strerror(rc));
    if (status != 200 || strstr(s->ans.buf, "\"deleted\":1") == NULL) {
        fprintf(stderr, "bench_keyed: delete of key %lld: HTTP %ld %s\n", (long long)key, status,
                s->ans.buf);
        exit(1);
    }
}

static void strike_close(struct strike_side *s)
{
    curl_slist_free_all(s->hdr);
    curl_easy_cleanup(s->h);
    curl_global_cleanup();
}

/* ---- PostgreSQL: libpq, a prepared DELETE ---- */

static PGconn *pg_open(void)
{
    PGconn *c = PQconnectdb(arg_conninfo);
    if (PQstatus(c) != CONNECTION_OK)
        die("PostgreSQL", PQerrorMessage(c));
    char *t = PQescapeIdentifier(c, arg_table, strlen(arg_table));
    char sql[300];
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE id = $1::bigint", t);
    PQfreemem(t);
    PGresult *r = PQprepare(c, "del", sql, 1, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        die("PREPARE", PQerrorMessage(c));
    PQclear(r);
    return c;
}

static void pg_delete(PGconn *c, int64_t key)
{
    char k[24];
    snprintf(k, sizeof k, "%lld", (long long)key);
    const char *v[1] = {k};
    PGresult *r = PQexecPrepared(c, "del", 1, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK || strcmp(PQcmdTuples(r), "1") != 0) {
        fprintf(stderr, "bench_keyed: delete of key %lld: %s %s\n", (long long)key,
                PQresStatus(PQresultStatus(r)), PQcmdTuples(r));
        exit(1);
    }
    PQclear(r);
}

static long num(const char *s, const char *name)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0)
        die(name, "expects a non-negative integer");
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "delete1") != 0)
        die("usage", "bench_keyed delete1 --target strike|pg ... (see the file's header)");
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--target") == 0)
            arg_target = v;
        else if (strcmp(k, "--url") == 0)
            arg_url = v;
        else if (strcmp(k, "--conninfo") == 0)
            arg_conninfo = v;
        else if (strcmp(k, "--table") == 0)
            arg_table = v;
        else if (strcmp(k, "--rows") == 0)
            arg_rows = num(v, k);
        else if (strcmp(k, "--offset") == 0)
            arg_offset = num(v, k);
        else if (strcmp(k, "--samples") == 0)
            arg_samples = num(v, k);
        else if (strcmp(k, "--warmup") == 0)
            arg_warmup = num(v, k);
        else
            die("unknown option", k);
    }
    if (argc % 2 != 0)
        die("usage", "every option takes a value");
    bool strike = arg_target != NULL && strcmp(arg_target, "strike") == 0;
    bool pg = arg_target != NULL && strcmp(arg_target, "pg") == 0;
    if ((!strike && !pg) || arg_table == NULL || (strike && arg_url == NULL) ||
        (pg && arg_conninfo == NULL) || arg_rows < 1 || arg_rows > UINT32_MAX || arg_samples < 1)
        die("usage",
            "--target strike --url URL | --target pg --conninfo C, --table, --rows 1..2^32-1, "
            "--samples >= 1");
    struct strike_side s;
    memset(&s, 0, sizeof s);
    PGconn *c = NULL;
    if (strike)
        strike_open(&s);
    else
        c = pg_open();
    double *ms = calloc((size_t)arg_samples, sizeof *ms);
    if (ms == NULL)
        die("out of memory", NULL);
    for (long i = 0; i < arg_warmup + arg_samples; i++) {
        int64_t key = perm_key(arg_offset + i);
        double t0 = now_ms();
        if (strike)
            strike_delete(&s, key);
        else
            pg_delete(c, key);
        double t = now_ms() - t0;
        if (i >= arg_warmup)
            ms[i - arg_warmup] = t;
    }
    printf(
        "{\"mode\":\"delete1\",\"target\":\"%s\",\"client\":\"%s\",\"rows\":%ld,\"keys_from\":%ld,"
        "\"ms\":[",
        arg_target, strike ? "libcurl" : "libpq", arg_rows, arg_offset);
    for (long i = 0; i < arg_samples; i++)
        printf("%s%.3f", i ? "," : "", ms[i]);
    printf("]}\n");
    free(ms);
    if (strike)
        strike_close(&s);
    else
        PQfinish(c);
    return 0;
}
