/*
 * strike_client.c - libstrike (strike_client.h): the HTTP API over libcurl.
 *
 * One CURL easy handle per call, all of a client's calls sharing one
 * CURLSH (connections, DNS, TLS sessions) guarded by one mutex per shared
 * kind, so that a loader reuses its connection and threads never share an
 * easy handle. Answers are read into a bounded buffer (errors and JSON
 * answers: 256 MiB; scans are streamed line by line instead).
 */
#include "strike_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define ANSWER_MAX ((size_t)256 << 20)   /* a JSON answer or a DV, at most */
#define SCAN_LINE_MAX ((size_t)64 << 20) /* one scanned row, at most */
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
#define RETRY_AFTER_MAX_S 60

struct strike_client {
    char *base; /* without a trailing '/' */
    char *auth; /* "Authorization: Bearer ..." or NULL */
    char *ca_file;
    char *agent;
    long connect_timeout_ms, timeout_ms;
    int max_retries;
    CURLSH *share;
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
};

/* ---- errors ---- */

const char *strike_strerror(int code)
{
    switch (code) {
    case STRIKE_OK:
        return "ok";
    case STRIKE_EINVAL:
        return "invalid argument";
    case STRIKE_EHTTP:
        return "request failed";
    case STRIKE_ENOTFOUND:
        return "not found";
    case STRIKE_ECONFLICT:
        return "conflict";
    case STRIKE_EUNAVAIL:
        return "unavailable";
    case STRIKE_ETRANSPORT:
        return "transport error";
    case STRIKE_EPROTO:
        return "unexpected answer";
    case STRIKE_EABORTED:
        return "aborted";
    case STRIKE_EAUTH:
        return "not authorized";
    default:
        return "unknown error";
    }
}

__attribute__((format(printf, 4, 5))) static int fail(struct strike_error *err, int code,
                                                      long status, const char *fmt, ...)
{
    if (err != NULL) {
        err->code = code;
        err->http_status = status;
        err->title[0] = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->detail, sizeof err->detail, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int code_of_status(long status)
{
    switch (status) {
    case 401:
    case 403:
        return STRIKE_EAUTH;
    case 404:
        return STRIKE_ENOTFOUND;
    case 409:
    case 422:
        return STRIKE_ECONFLICT;
    case 503:
        return STRIKE_EUNAVAIL;
    default:
        return STRIKE_EHTTP;
    }
}

/* An error answer: problem+json's title and detail when it is one, else the
 * start of the body. */
static int fail_answer(struct strike_error *err, long status, const char *body, size_t len)
{
    int code = code_of_status(status);
    if (err == NULL)
        return code;
    err->code = code;
    err->http_status = status;
    err->title[0] = 0;
    err->detail[0] = 0;
    json_t *j = body != NULL && len > 0 ? json_loadb(body, len, 0, NULL) : NULL;
    const char *title = json_string_value(json_object_get(j, "title"));
    const char *detail = json_string_value(json_object_get(j, "detail"));
    if (title != NULL)
        snprintf(err->title, sizeof err->title, "%s", title);
    if (detail != NULL)
        snprintf(err->detail, sizeof err->detail, "%s", detail);
    else if (len > 0)
        snprintf(err->detail, sizeof err->detail, "HTTP %ld: %.*s", status,
                 (int)(len > 200 ? 200 : len), body);
    else
        snprintf(err->detail, sizeof err->detail, "HTTP %ld", status);
    json_decref(j);
    return code;
}

/* ---- setup ---- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_OK;

static void global_init_once(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int strike_global_init(void)
{
    pthread_once(&global_once, global_init_once);
    return global_rc == CURLE_OK ? STRIKE_OK : STRIKE_ETRANSPORT;
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
    (void)h;
    (void)access;
    struct strike_client *c = ud;
    pthread_mutex_lock(&c->locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    (void)h;
    struct strike_client *c = ud;
    pthread_mutex_unlock(&c->locks[data]);
}

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

struct strike_client *strike_client_new(const struct strike_options *o, struct strike_error *err)
{
    if (o == NULL || o->base_url == NULL || o->base_url[0] == 0) {
        fail(err, STRIKE_EINVAL, 0, "no server URL");
        return NULL;
    }
    if (strncmp(o->base_url, "http://", 7) != 0 && strncmp(o->base_url, "https://", 8) != 0) {
        fail(err, STRIKE_EINVAL, 0, "server URL \"%s\": must start with http:// or https://",
             o->base_url);
        return NULL;
    }
    if (o->token != NULL && strpbrk(o->token, "\r\n") != NULL) {
        fail(err, STRIKE_EINVAL, 0, "token: must not contain a line break");
        return NULL;
    }
    if (strike_global_init() != STRIKE_OK) {
        fail(err, STRIKE_ETRANSPORT, 0, "curl_global_init failed");
        return NULL;
    }
    struct strike_client *c = calloc(1, sizeof *c);
    if (c == NULL)
        goto err_oom;
    c->base = strdup(o->base_url);
    if (c->base == NULL)
        goto err_after_client;
    size_t n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/')
        c->base[--n] = 0;
    if (o->token != NULL && o->token[0] != 0) {
        size_t tl = strlen(o->token) + 32;
        c->auth = malloc(tl);
        if (c->auth == NULL)
            goto err_after_client;
        snprintf(c->auth, tl, "Authorization: Bearer %s", o->token);
    }
    c->ca_file = dup_or_null(o->ca_file);
    c->agent = strdup(o->user_agent != NULL ? o->user_agent : "libstrike/" STRIKE_VERSION);
    if ((o->ca_file != NULL && c->ca_file == NULL) || c->agent == NULL)
        goto err_after_client;
    c->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0;
    c->max_retries = o->max_retries < 0 ? 5 : o->max_retries;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->locks[i], NULL);
    c->share = curl_share_init();
    if (c->share == NULL)
        goto err_after_locks;
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    return c;

err_after_locks:
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->locks[i]);
err_after_client:
    free(c->base);
    free(c->auth);
    free(c->ca_file);
    free(c->agent);
    free(c);
err_oom:
    fail(err, STRIKE_EINVAL, 0, "out of memory");
    return NULL;
}

void strike_client_free(struct strike_client *c)
{
    if (c == NULL)
        return;
    curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->locks[i]);
    free(c->base);
    free(c->auth);
    free(c->ca_file);
    free(c->agent);
    free(c);
}

void strike_new_key(char key[37])
{
    uint8_t r[16];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = getrandom(r + got, sizeof r - got, 0);
        if (n > 0) {
            got += (size_t)n;
        } else if (n < 0 && errno != EINTR) {
            /* no entropy source: time and address, still unique per call */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t a = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
            uint64_t b = (uint64_t)(uintptr_t)&ts ^ ((uint64_t)getpid() << 32);
            memcpy(r, &a, 8);
            memcpy(r + 8, &b, 8);
            break;
        }
    }
    r[6] = (uint8_t)((r[6] & 0x0f) | 0x40);
    r[8] = (uint8_t)((r[8] & 0x3f) | 0x80);
    static const char hex[] = "0123456789abcdef";
    int k = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            key[k++] = '-';
        key[k++] = hex[r[i] >> 4];
        key[k++] = hex[r[i] & 15];
    }
    key[k] = 0;
}

/* ---- one call ---- */

struct answer {
    char *data;
    size_t len, cap;
    bool too_big;
    /* streaming (scan): lines go to fn while the status is 2xx */
    CURL *h;
    strike_row_fn fn;
    void *ud;
    bool stopped;
    bool streamed; /* fn saw at least one row */
    /* headers */
    bool replayed;
    int64_t snapshot, cardinality;
    long retry_after_s;
};

static bool answer_append(struct answer *a, const char *p, size_t n, size_t max)
{
    if (a->len + n > max) {
        a->too_big = true;
        return false;
    }
    if (a->len + n + 1 > a->cap) {
        size_t cap = a->cap ? a->cap : 4096;
        while (cap < a->len + n + 1)
            cap *= 2;
        char *d = realloc(a->data, cap);
        if (d == NULL) {
            a->too_big = true;
            return false;
        }
        a->data = d;
        a->cap = cap;
    }
    memcpy(a->data + a->len, p, n);
    a->len += n;
    a->data[a->len] = 0;
    return true;
}

/* Hand every complete line in the buffer to fn; keep the partial rest. */
static bool answer_lines(struct answer *a)
{
    size_t start = 0;
    for (;;) {
        char *nl = memchr(a->data + start, '\n', a->len - start);
        if (nl == NULL)
            break;
        size_t n = (size_t)(nl - (a->data + start));
        *nl = 0;
        if (n > 0) {
            a->streamed = true;
            if (a->fn(a->data + start, n, a->ud) != 0) {
                a->stopped = true;
                return false;
            }
        }
        start += n + 1;
    }
    memmove(a->data, a->data + start, a->len - start);
    a->len -= start;
    if (a->data != NULL)
        a->data[a->len] = 0;
    return true;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct answer *a = ud;
    size_t n = size * nmemb;
    long status = 0;
    if (a->fn != NULL)
        curl_easy_getinfo(a->h, CURLINFO_RESPONSE_CODE, &status);
    if (a->fn != NULL && status >= 200 && status < 300) {
        if (!answer_append(a, p, n, SCAN_LINE_MAX) || !answer_lines(a))
            return 0;
        return n;
    }
    return answer_append(a, p, n, ANSWER_MAX) ? n : 0;
}

static bool header_is(const char *line, size_t n, const char *name, const char **value)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return false;
    const char *v = line + k + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    *value = v;
    return true;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    struct answer *a = ud;
    size_t n = size * nmemb;
    char line[256];
    if (n >= sizeof line)
        return n;
    memcpy(line, p, n);
    line[n] = 0;
    if (strncmp(line, "HTTP/", 5) == 0) { /* a new answer (after 100 Continue) */
        a->replayed = false;
        a->snapshot = a->cardinality = -1;
        a->retry_after_s = -1;
        return n;
    }
    const char *v;
    if (header_is(line, n, "Idempotent-Replayed", &v))
        a->replayed = strncasecmp(v, "true", 4) == 0;
    else if (header_is(line, n, "Strike-Snapshot", &v))
        a->snapshot = strtoll(v, NULL, 10);
    else if (header_is(line, n, "Strike-Cardinality", &v))
        a->cardinality = strtoll(v, NULL, 10);
    else if (header_is(line, n, "Retry-After", &v))
        a->retry_after_s = strtol(v, NULL, 10);
    return n;
}

/* A 409 worth retrying: a lost commit race or a running compaction, not a
 * table that exists or an expected_seq that does not match. */
static bool conflict_retryable(const struct strike_error *e)
{
    return strstr(e->detail, "already exists") == NULL && strstr(e->detail, "expected_seq") == NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static long jitter(long ms)
{
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (uint32_t)clock();
    return ms / 2 + (long)(r % (uint32_t)(ms / 2 + 1));
}

static bool is_mutating(const char *method, const char *path)
{
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
        return false;
    /* scan and plan are reads sent with POST */
    size_t n = strlen(path);
    return !(n >= 5 && strcmp(path + n - 5, "/scan") == 0) &&
           !(n >= 5 && strcmp(path + n - 5, "/plan") == 0);
}

static int call(struct strike_client *c, const char *method, const char *path, const void *body,
                size_t len, const struct strike_call *opts, strike_row_fn fn, void *ud, char **out,
                size_t *out_len, struct strike_meta *meta, struct strike_error *err)
{
    if (out != NULL)
        *out = NULL;
    if (out_len != NULL)
        *out_len = 0;
    if (meta != NULL) {
        memset(meta, 0, sizeof *meta);
        meta->snapshot = meta->cardinality = -1;
    }
    if (c == NULL || method == NULL || path == NULL || path[0] != '/')
        return fail(err, STRIKE_EINVAL, 0, "bad arguments");
    char key[160];
    const char *given = opts != NULL ? opts->idempotency_key : NULL;
    if (given != NULL && (strlen(given) > 128 || strpbrk(given, "\r\n") != NULL))
        return fail(err, STRIKE_EINVAL, 0, "Idempotency-Key: at most 128 characters, one line");
    bool mutating = is_mutating(method, path);
    if (given != NULL) {
        snprintf(key, sizeof key, "Idempotency-Key: %s", given);
    } else if (mutating) {
        char uuid[37];
        strike_new_key(uuid);
        snprintf(key, sizeof key, "Idempotency-Key: %s", uuid);
    } else {
        key[0] = 0;
    }
    size_t urllen = strlen(c->base) + strlen(path) + 1;
    char *url = malloc(urllen);
    if (url == NULL)
        return fail(err, STRIKE_EINVAL, 0, "out of memory");
    snprintf(url, urllen, "%s%s", c->base, path);

    int retries = opts != NULL && opts->no_retry ? 0 : c->max_retries;
    long backoff = BACKOFF_FIRST_MS;
    int rc = STRIKE_OK;
    struct answer a = {0};
    for (int attempt = 0;; attempt++) {
        free(a.data);
        memset(&a, 0, sizeof a);
        a.fn = fn;
        a.ud = ud;
        a.snapshot = a.cardinality = -1;
        a.retry_after_s = -1;
        CURL *h = curl_easy_init();
        if (h == NULL) {
            rc = fail(err, STRIKE_ETRANSPORT, 0, "curl_easy_init failed");
            break;
        }
        a.h = h;
        struct curl_slist *hdrs = NULL;
        if (c->auth != NULL)
            hdrs = curl_slist_append(hdrs, c->auth);
        if (key[0] != 0)
            hdrs = curl_slist_append(hdrs, key);
        if (body != NULL)
            hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_SHARE, c->share);
        curl_easy_setopt(h, CURLOPT_USERAGENT, c->agent);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
        if (c->timeout_ms > 0)
            curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
        if (c->ca_file != NULL)
            curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &a);
        if (strcmp(method, "GET") == 0) {
            curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        } else if (strcmp(method, "HEAD") == 0) {
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        } else {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
            if (body != NULL) {
                curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
            }
        }
        CURLcode cc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(h);
        curl_slist_free_all(hdrs);
        if (meta != NULL) {
            meta->attempts = attempt + 1;
            meta->http_status = status;
            meta->replayed = a.replayed;
            meta->snapshot = a.snapshot;
            meta->cardinality = a.cardinality;
        }
        bool retry = false;
        long wait_ms = 0;
        if (a.stopped) {
            rc = fail(err, STRIKE_EABORTED, status, "stopped by the row callback");
        } else if (a.too_big) {
            rc = fail(err, STRIKE_EPROTO, status, "answer over %zu bytes",
                      fn != NULL ? SCAN_LINE_MAX : ANSWER_MAX);
        } else if (cc != CURLE_OK) {
            rc = fail(err, cc == CURLE_COULDNT_CONNECT ? STRIKE_EUNAVAIL : STRIKE_ETRANSPORT,
                      status, "%s: %s", c->base, curl_easy_strerror(cc));
            /* a lost connection mid-answer could have committed: the same
             * Idempotency-Key makes the retry safe; a scan that streamed rows
             * cannot be retried without repeating them */
            retry = !a.streamed && cc != CURLE_OPERATION_TIMEDOUT;
        } else if (status >= 400) {
            rc = fail_answer(err, status, a.data, a.len);
            retry = status == 503 || (status == 409 && conflict_retryable(err));
            if (a.retry_after_s > 0)
                wait_ms =
                    (a.retry_after_s > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : a.retry_after_s) *
                    1000;
        } else if (fn != NULL && a.len > 0) {
            /* a last row without its newline */
            a.streamed = true;
            rc = fn(a.data, a.len, ud) != 0 ? fail(err, STRIKE_EABORTED, status, "stopped") : 0;
            a.len = 0;
        } else {
            rc = STRIKE_OK;
        }
        if (!retry || attempt >= retries)
            break;
        long b = jitter(backoff);
        if (b > wait_ms)
            wait_ms = b;
        sleep_ms(wait_ms);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    free(url);
    if (rc == STRIKE_OK && out != NULL) {
        if (a.data == NULL)
            a.data = calloc(1, 1);
        if (a.data == NULL)
            return fail(err, STRIKE_EINVAL, 0, "out of memory");
        *out = a.data;
        if (out_len != NULL)
            *out_len = a.len;
        a.data = NULL;
    }
    free(a.data);
    return rc;
}

int strike_request(struct strike_client *c, const char *method, const char *path, const void *body,
                   size_t len, const struct strike_call *opts, char **out, size_t *out_len,
                   struct strike_meta *meta, struct strike_error *err)
{
    return call(c, method, path, body, len, opts, NULL, NULL, out, out_len, meta, err);
}

int strike_request_json(struct strike_client *c, const char *method, const char *path,
                        const json_t *body, const struct strike_call *opts, json_t **out,
                        struct strike_meta *meta, struct strike_error *err)
{
    if (out != NULL)
        *out = NULL;
    char *text = NULL;
    if (body != NULL) {
        text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
        if (text == NULL)
            return fail(err, STRIKE_EINVAL, 0, "cannot encode the request");
    }
    char *ans = NULL;
    size_t n = 0;
    int rc = call(c, method, path, text, text != NULL ? strlen(text) : 0, opts, NULL, NULL, &ans,
                  &n, meta, err);
    free(text);
    if (rc != STRIKE_OK)
        return rc;
    if (n > 0 && out != NULL) {
        json_error_t je;
        *out = json_loadb(ans, n, JSON_DECODE_ANY, &je);
        if (*out == NULL)
            rc = fail(err, STRIKE_EPROTO, 200, "%s %s: answer is not JSON: %s", method, path,
                      je.text);
    }
    free(ans);
    return rc;
}

/* ---- paths ---- */

/* "/v1/tables/<escaped table><suffix>" into p (a name that needs more than
 * the buffer is refused: names are at most 128 characters). */
static int table_path(char *p, size_t cap, const char *table, const char *suffix,
                      struct strike_error *err)
{
    if (table == NULL || table[0] == 0)
        return fail(err, STRIKE_EINVAL, 0, "no table name");
    size_t k = (size_t)snprintf(p, cap, "/v1/tables/");
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *s = (const unsigned char *)table; *s; s++) {
        if (k + 4 >= cap)
            return fail(err, STRIKE_EINVAL, 0, "table name too long");
        bool plain = (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
                     (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.';
        if (plain) {
            p[k++] = (char)*s;
        } else {
            p[k++] = '%';
            p[k++] = hex[*s >> 4];
            p[k++] = hex[*s & 15];
        }
    }
    p[k] = 0;
    if (k + strlen(suffix) >= cap)
        return fail(err, STRIKE_EINVAL, 0, "path too long");
    strcat(p, suffix);
    return STRIKE_OK;
}

#define PATH_MAX_LEN 1024

/* ---- operations ---- */

int strike_tables_list(struct strike_client *c, json_t **out, struct strike_error *err)
{
    return strike_request_json(c, "GET", "/v1/tables", NULL, NULL, out, NULL, err);
}

int strike_table_get(struct strike_client *c, const char *table, json_t **out,
                     struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "", err);
    return rc ? rc : strike_request_json(c, "GET", p, NULL, NULL, out, NULL, err);
}

int strike_table_create(struct strike_client *c, const json_t *spec, json_t **out,
                        struct strike_error *err)
{
    if (!json_is_object(spec))
        return fail(err, STRIKE_EINVAL, 0, "the table spec must be an object");
    return strike_request_json(c, "POST", "/v1/tables", spec, NULL, out, NULL, err);
}

int strike_table_drop(struct strike_client *c, const char *table, struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "", err);
    return rc ? rc : strike_request_json(c, "DELETE", p, NULL, NULL, NULL, NULL, err);
}

int strike_table_alter(struct strike_client *c, const char *table, const json_t *request,
                       json_t **out, struct strike_error *err)
{
    if (!json_is_object(request))
        return fail(err, STRIKE_EINVAL, 0, "a schema change request must be an object");
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "/schema", err);
    return rc ? rc : strike_request_json(c, "POST", p, request, NULL, out, NULL, err);
}

int strike_changes_raw(struct strike_client *c, const char *table, const void *body, size_t len,
                       const struct strike_call *opts, json_t **out, struct strike_meta *meta,
                       struct strike_error *err)
{
    if (out != NULL)
        *out = NULL;
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "/changes", err);
    if (rc)
        return rc;
    char *ans = NULL;
    size_t n = 0;
    rc = call(c, "POST", p, body, len, opts, NULL, NULL, &ans, &n, meta, err);
    if (rc == STRIKE_OK && out != NULL) {
        *out = json_loadb(ans, n, 0, NULL);
        if (*out == NULL)
            rc = fail(err, STRIKE_EPROTO, 200, "changes: answer is not JSON");
    }
    free(ans);
    return rc;
}

int strike_changes(struct strike_client *c, const char *table, const json_t *body,
                   const struct strike_call *opts, json_t **out, struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "/changes", err);
    return rc ? rc : strike_request_json(c, "POST", p, body, opts, out, NULL, err);
}

int strike_delete_where(struct strike_client *c, const char *table, const json_t *filter,
                        int64_t expected_seq, const struct strike_call *opts, json_t **out,
                        struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "/delete", err);
    if (rc)
        return rc;
    if (filter == NULL)
        return fail(err, STRIKE_EINVAL, 0, "delete needs a filter");
    json_t *body = json_object();
    json_object_set(body, "filter", (json_t *)filter);
    if (expected_seq >= 0)
        json_object_set_new(body, "expected_seq", json_integer(expected_seq));
    rc = strike_request_json(c, "POST", p, body, opts, out, NULL, err);
    json_decref(body);
    return rc;
}

int strike_scan(struct strike_client *c, const char *table, const json_t *request, strike_row_fn fn,
                void *ud, struct strike_meta *meta, struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "/scan", err);
    if (rc)
        return rc;
    if (fn == NULL)
        return fail(err, STRIKE_EINVAL, 0, "scan needs a row callback");
    char *text = request != NULL ? json_dumps(request, JSON_COMPACT) : strdup("{}");
    if (text == NULL)
        return fail(err, STRIKE_EINVAL, 0, "cannot encode the request");
    rc = call(c, "POST", p, text, strlen(text), NULL, fn, ud, NULL, NULL, meta, err);
    free(text);
    return rc;
}

int strike_plan(struct strike_client *c, const char *table, const json_t *request, json_t **out,
                struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "/plan", err);
    if (rc)
        return rc;
    json_t *empty = request == NULL ? json_object() : NULL;
    rc = strike_request_json(c, "POST", p, request != NULL ? request : empty, NULL, out, NULL, err);
    json_decref(empty);
    return rc;
}

int strike_dv_get(struct strike_client *c, const char *table, int64_t file_id, int64_t snapshot,
                  const char *format, uint8_t **out, size_t *out_len, struct strike_meta *meta,
                  struct strike_error *err)
{
    *out = NULL;
    *out_len = 0;
    if (format != NULL && strspn(format, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(format))
        return fail(err, STRIKE_EINVAL, 0, "format \"%s\": letters, digits and '-' only", format);
    char suffix[256];
    int k = snprintf(suffix, sizeof suffix, "/files/%" PRId64 "/dv", file_id);
    char sep = '?';
    if (snapshot >= 0) {
        k += snprintf(suffix + k, sizeof suffix - (size_t)k, "%csnapshot=%" PRId64, sep, snapshot);
        sep = '&';
    }
    if (format != NULL)
        snprintf(suffix + k, sizeof suffix - (size_t)k, "%cformat=%.64s", sep, format);
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, suffix, err);
    if (rc)
        return rc;
    char *ans = NULL;
    rc = call(c, "GET", p, NULL, 0, NULL, NULL, NULL, &ans, out_len, meta, err);
    *out = (uint8_t *)ans;
    return rc;
}

/* GET every page of a list that answers {"<member>":[...],"next":k|null}
 * (after=k for the next page), into one {"<member>":[...]}; the first
 * page's other members are kept. */
static int get_pages(struct strike_client *c, const char *base, const char *member, json_t **out,
                     struct strike_error *err)
{
    *out = NULL;
    json_t *all = NULL;
    json_t *next = NULL;
    for (int page = 0;; page++) {
        char p[PATH_MAX_LEN + 64];
        if (next == NULL)
            snprintf(p, sizeof p, "%s", base);
        else if (json_is_integer(next))
            snprintf(p, sizeof p, "%s?after=%" JSON_INTEGER_FORMAT, base, json_integer_value(next));
        else
            snprintf(p, sizeof p, "%s?after=%.64s", base, json_string_value(next));
        json_decref(next);
        next = NULL;
        json_t *j = NULL;
        int rc = strike_request_json(c, "GET", p, NULL, NULL, &j, NULL, err);
        if (rc != STRIKE_OK) {
            json_decref(all);
            return rc;
        }
        json_t *items = json_object_get(j, member);
        if (!json_is_array(items)) {
            json_decref(j);
            json_decref(all);
            return fail(err, STRIKE_EPROTO, 200, "%s: no \"%s\" list in the answer", base, member);
        }
        next = json_object_get(j, "next");
        next = json_is_integer(next) || json_is_string(next) ? json_incref(next) : NULL;
        if (all == NULL) {
            all = j;
        } else {
            json_array_extend(json_object_get(all, member), items);
            json_decref(j);
        }
        if (next == NULL || page > 100000)
            break;
    }
    json_decref(next);
    json_object_del(all, "next");
    *out = all;
    return STRIKE_OK;
}

int strike_snapshots(struct strike_client *c, const char *table, json_t **out,
                     struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "/snapshots", err);
    return rc ? rc : get_pages(c, p, "snapshots", out, err);
}

static int post_maint(struct strike_client *c, const char *table, const char *suffix,
                      const json_t *request, const struct strike_call *opts, json_t **out,
                      struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, suffix, err);
    if (rc)
        return rc;
    json_t *empty = request == NULL ? json_object() : NULL;
    rc = strike_request_json(c, "POST", p, request != NULL ? request : empty, opts, out, NULL, err);
    json_decref(empty);
    return rc;
}

int strike_compact(struct strike_client *c, const char *table, const json_t *request, json_t **out,
                   struct strike_error *err)
{
    return post_maint(c, table, "/compact", request, NULL, out, err);
}

int strike_expire(struct strike_client *c, const char *table, const json_t *request, json_t **out,
                  struct strike_error *err)
{
    return post_maint(c, table, "/expire", request, NULL, out, err);
}

int strike_erase(struct strike_client *c, const char *table, const json_t *request,
                 const struct strike_call *opts, json_t **out, struct strike_error *err)
{
    if (request == NULL)
        return fail(err, STRIKE_EINVAL, 0, "erase needs keys or a filter");
    return post_maint(c, table, "/erasures", request, opts, out, err);
}

/* An erasure id as it may go into a path: hex digits and dashes. */
static int erasure_id_ok(const char *id, struct strike_error *err)
{
    if (id == NULL || id[0] == 0 || strlen(id) > 64 ||
        strspn(id, "0123456789abcdefABCDEF-") != strlen(id))
        return fail(err, STRIKE_EINVAL, 0, "erasure id \"%.64s\": not an id", id ? id : "");
    return STRIKE_OK;
}

int strike_erasure_check(struct strike_client *c, const char *table, const char *id,
                         const json_t *request, json_t **out, struct strike_error *err)
{
    if (request == NULL)
        return fail(err, STRIKE_EINVAL, 0, "a check needs keys");
    int rc = erasure_id_ok(id, err);
    if (rc)
        return rc;
    char suffix[128];
    snprintf(suffix, sizeof suffix, "/erasures/%s/check", id);
    return post_maint(c, table, suffix, request, NULL, out, err);
}

int strike_erasures(struct strike_client *c, const char *table, const char *id, json_t **out,
                    struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    if (id != NULL) {
        if (erasure_id_ok(id, err))
            return STRIKE_EINVAL;
        char suffix[128];
        snprintf(suffix, sizeof suffix, "/erasures/%s", id);
        int rc = table_path(p, sizeof p, table, suffix, err);
        return rc ? rc : strike_request_json(c, "GET", p, NULL, NULL, out, NULL, err);
    }
    int rc = table_path(p, sizeof p, table, "/erasures", err);
    return rc ? rc : get_pages(c, p, "erasures", out, err);
}

int strike_health(struct strike_client *c, const char *table, json_t **out,
                  struct strike_error *err)
{
    char p[PATH_MAX_LEN];
    int rc = table_path(p, sizeof p, table, "/health", err);
    return rc ? rc : get_pages(c, p, "files", out, err);
}
