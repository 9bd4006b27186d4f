/*
 * blob_s3.c - the blob store in an S3-compatible bucket (blob.h), through
 * libcurl, which signs every request (CURLOPT_AWS_SIGV4).
 *
 * - Keys live under the store's prefix: s3://bucket/prefix + "/" + key.
 * - A put is buffered in memory and sent on commit as one PUT with
 *   "If-None-Match: *" (S3 conditional writes: 412 when the key exists, so
 *   nothing is ever overwritten), or, from BLOB_S3_MULTIPART bytes on, as a
 *   multipart upload whose completion carries the same condition; a failed
 *   multipart upload is aborted. A PUT that succeeded is durable: no fsync.
 * - Reads are range GETs; a response shorter than asked is ST_ECORRUPT.
 * - Deletes are DeleteObjects requests of up to 1000 keys.
 * - Unfinished multipart uploads are listed (ListMultipartUploads) and
 *   aborted (AbortMultipartUpload) for the collector and erasures; the
 *   bucket's versioning is read (GetBucketVersioning) for erasures. Their
 *   query strings are written in SigV4's canonical form (names sorted, each
 *   with '=').
 * - Touch copies the object onto itself (server side, same bytes, new
 *   LastModified): gc judges an object's age by LastModified (docs/DESIGN.md).
 * - Every request has a connect and a total timeout; 5xx, 429 and transport
 *   errors are retried with jittered exponential backoff.
 * - Connections are reused: idle curl handles (each with its connection
 *   cache) wait in a pool; a thread takes one per request.
 * - Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
 *   AWS_SESSION_TOKEN at open, and are never logged or put in an error.
 */
#include "blob_int.h"

#include "common/hmap.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#include <assert.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#define BLOB_S3_MULTIPART (16u << 20) /* objects from this size on go up in parts */
#define BLOB_S3_PART (8u << 20)
#define BLOB_S3_ATTEMPTS 5
#define BLOB_S3_LIST_MAX (64u << 20) /* one list page's body */
#define BLOB_S3_BODY_MAX (1u << 20)  /* a response body we parse (errors, XML) */

struct s3_store {
    struct blob_store h; /* first */
    char *bucket;
    char *prefix;    /* "" or ending in '/' */
    char *base;      /* scheme://host[:port] of the endpoint */
    char *host_base; /* the URL up to the bucket's root, ending in '/' */
    char *region;
    char *userpwd; /* key:secret */
    char *token_hdr;
    char *sigv4;
    long timeout_ms;
    pthread_mutex_t mu;
    CURL **idle;
    size_t nidle, cap;
    /* Tails of recently opened objects (objects are immutable and their keys
       unique): a reopen costs no request. Bounded by BLOB_S3_TAIL_CACHE
       bytes, oldest out first; our own deletes drop their entry. Under mu. */
    struct hmap tails; /* key -> struct tail_ent */
    struct tail_ent *fifo_head, *fifo_tail;
    size_t tails_bytes;
    size_t tails_live, tails_puts; /* the map keeps deleted keys' bytes: rebuilt now and then */
};

struct s3_put {
    struct blob_store *s; /* first: see blob.c */
    char *key;
    struct buf body;
};

struct tail_ent {
    char *key;
    uint8_t *bytes;
    size_t len;
    uint64_t size, off;
    bool dead; /* dropped from the map (deleted); freed when it leaves the FIFO */
    struct tail_ent *next;
};
#define BLOB_S3_TAIL_CACHE (32u << 20)
static void tail_free(struct tail_ent *t);
static void tail_put(struct s3_store *s, const char *key, const uint8_t *bytes, size_t len,
                     uint64_t size, uint64_t off);
static bool tail_read(struct s3_store *s, const char *key, uint64_t off, void *dst, size_t n);

/* An open object: its last BLOB_S3_TAIL bytes (all of a small object) came
   with the open, so that a Parquet footer (or a whole small file) costs no
   request more. */
#define BLOB_S3_TAIL (64u << 10)
struct s3_file {
    struct blob_file h; /* first */
    char *key;
    uint8_t *tail;
    uint64_t tail_off; /* of tail[0] in the object; tail holds [tail_off, size) */
};

/* ---- requests -------------------------------------------------------------- */

struct s3_req {
    const char *method;
    const char *key;   /* NULL: the bucket */
    const char *query; /* without '?'; NULL for none */
    struct curl_slist *hdrs;
    const void *body;
    size_t body_len;
    bool head;
    /* response */
    long status;
    struct buf resp;
    size_t resp_max;
    uint8_t *dst; /* range reads land here */
    size_t dst_len, dst_got;
    bool overflow;
    int64_t filetime;
    uint64_t length;
    char etag[128];
    bool has_range; /* Content-Range: bytes first-last/total */
    uint64_t range_first, range_total;
};

static CURL *handle_get(struct s3_store *s)
{
    pthread_mutex_lock(&s->mu);
    CURL *c = s->nidle > 0 ? s->idle[--s->nidle] : NULL;
    pthread_mutex_unlock(&s->mu);
    if (c == NULL) {
        c = curl_easy_init();
        if (c == NULL)
            abort();
    }
    return c;
}

static void handle_put(struct s3_store *s, CURL *c)
{
    pthread_mutex_lock(&s->mu);
    if (s->nidle == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->idle = xrealloc(s->idle, s->cap * sizeof *s->idle);
    }
    s->idle[s->nidle++] = c;
    pthread_mutex_unlock(&s->mu);
}

static size_t on_body(char *p, size_t sz, size_t n, void *ctx)
{
    struct s3_req *q = ctx;
    size_t len = sz * n;
    if (q->dst != NULL && q->status / 100 == 2) {
        if (len > q->dst_len - q->dst_got) {
            q->overflow = true;
            return 0;
        }
        memcpy(q->dst + q->dst_got, p, len);
        q->dst_got += len;
        return len;
    }
    if (!buf_append_bounded(&q->resp, p, len, q->resp_max ? q->resp_max : BLOB_S3_BODY_MAX)) {
        q->overflow = true;
        return 0;
    }
    return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ctx)
{
    struct s3_req *q = ctx;
    /* the status of the final response, before its body arrives */
    size_t len = sz * n;
    if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {
        const char *sp = memchr(p, ' ', len);
        if (sp != NULL)
            q->status = strtol(sp + 1, NULL, 10);
    } else if (len > 14 && strncasecmp(p, "Content-Range:", 14) == 0) {
        char tmp[128];
        snprintf(tmp, sizeof tmp, "%.*s", (int)(len - 14 < 127 ? len - 14 : 127), p + 14);
        unsigned long long a, b, t;
        if (sscanf(tmp, " bytes %llu-%llu/%llu", &a, &b, &t) == 3 && a <= b && b < t) {
            q->has_range = true;
            q->range_first = a;
            q->range_total = t;
        }
    } else if (len > 5 && strncasecmp(p, "ETag:", 5) == 0) {
        size_t a = 5;
        while (a < len && p[a] == ' ')
            a++;
        size_t b = len;
        while (b > a && (p[b - 1] == '\r' || p[b - 1] == '\n' || p[b - 1] == ' '))
            b--;
        snprintf(q->etag, sizeof q->etag, "%.*s", (int)(b - a), p + a);
    }
    return len;
}

/* The unreserved characters stay, '/' too when keep_slash; the rest %XX. */
static void url_encode(struct buf *b, const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            *c == '-' || *c == '_' || *c == '.' || *c == '~' || (keep_slash && *c == '/')) {
            buf_append(b, c, 1);
        } else {
            char e[3] = {'%', hex[*c >> 4], hex[*c & 15]};
            buf_append(b, e, 3);
        }
    }
}

static char *object_url(const struct s3_store *s, const char *key, const char *query)
{
    assert(key == NULL || blob__key_ok(key)); /* blob.c refused any other key */
    struct buf u = BUF_INIT;
    buf_append_str(&u, s->host_base);
    if (key != NULL) {
        url_encode(&u, s->prefix, true);
        url_encode(&u, key, true);
    }
    if (query != NULL) {
        buf_append_str(&u, "?");
        buf_append_str(&u, query);
    }
    buf_append(&u, "", 1);
    return (char *)buf_detach(&u, NULL);
}

static bool retryable(CURLcode cc, long status)
{
    if (cc != CURLE_OK)
        return cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT ||
               cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR || cc == CURLE_GOT_NOTHING ||
               cc == CURLE_PARTIAL_FILE || cc == CURLE_COULDNT_RESOLVE_HOST;
    return status >= 500 || status == 429;
}

static void backoff(int attempt)
{
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (uint32_t)st_mono_ns();
    uint64_t cap_ms = 50ull << attempt; /* 50, 100, 200, 400 ms */
    uint64_t ms = cap_ms / 2 + r % (cap_ms / 2 + 1);
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* One request, retried while it fails in a way worth retrying. Returns ST_OK
   when a response arrived (any status, in q->status). */
static int s3_do(struct s3_store *s, struct s3_req *q, struct st_err *err)
{
    char *url = object_url(s, q->key, q->query);
    struct curl_slist *hdrs = NULL; /* a copy: the caller keeps its own list */
    for (const struct curl_slist *h = q->hdrs; h != NULL; h = h->next)
        hdrs = curl_slist_append(hdrs, h->data);
    if (s->token_hdr != NULL)
        hdrs = curl_slist_append(hdrs, s->token_hdr);
    /* S3 wants the payload hash in a header; libcurl signs with its value. No
       blanked "Expect:" here: libcurl 7.88 signs a blanked header it does not
       send, a signature S3 rejects (test_s3 checks what is sent). */
    hdrs = curl_slist_append(hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    int rc = ST_OK;
    CURL *c = handle_get(s);
    for (int attempt = 0;; attempt++) {
        curl_easy_reset(c);
        buf_reset(&q->resp);
        q->status = 0;
        q->dst_got = 0;
        q->overflow = false;
        q->has_range = false;
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, s->timeout_ms);
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, s->sigv4);
        curl_easy_setopt(c, CURLOPT_USERPWD, s->userpwd);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, q);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, q);
        curl_easy_setopt(c, CURLOPT_FILETIME, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        if (q->head) {
            curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        } else if (q->body != NULL || strcmp(q->method, "PUT") == 0 ||
                   strcmp(q->method, "POST") == 0) {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body != NULL ? q->body : "");
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
        } else if (strcmp(q->method, "GET") != 0) {
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
        }
        CURLcode cc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (cc == CURLE_WRITE_ERROR && q->overflow) {
            rc = st_errf(err, ST_ECORRUPT, "%s %s: the response is longer than asked for",
                         q->method, q->key ? q->key : "(bucket)");
            break;
        }
        if (attempt + 1 < BLOB_S3_ATTEMPTS && retryable(cc, status)) {
            log_warn("s3: %s %s: %s (attempt %d, retrying)", q->method,
                     q->key ? q->key : "(bucket)",
                     cc != CURLE_OK ? curl_easy_strerror(cc) : "server error", attempt + 1);
            backoff(attempt);
            continue;
        }
        if (cc != CURLE_OK) {
            rc = st_errf(err, ST_ESTORE, "object store %s: %s %s: %s", s->h.desc, q->method,
                         q->key ? q->key : "(bucket)", curl_easy_strerror(cc));
            break;
        }
        q->status = status;
        curl_off_t ft = -1;
        curl_easy_getinfo(c, CURLINFO_FILETIME_T, &ft);
        q->filetime = (int64_t)ft;
        curl_off_t cl = -1;
        curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
        q->length = cl >= 0 ? (uint64_t)cl : 0;
        if (status >= 500 || status == 429)
            rc = st_errf(err, ST_ESTORE, "object store %s: %s %s: HTTP %ld", s->h.desc, q->method,
                         q->key ? q->key : "(bucket)", status);
        break;
    }
    handle_put(s, c);
    curl_slist_free_all(hdrs);
    free(url);
    return rc;
}

/* A failed request's error: the S3 error code from the body, never more. */
static int s3_fail(struct s3_store *s, struct s3_req *q, const char *what, struct st_err *err)
{
    char code[64] = "";
    const char *b = buf_cstr(&q->resp);
    const char *c = strstr(b, "<Code>");
    if (c != NULL) {
        c += 6;
        size_t n = strcspn(c, "<");
        snprintf(code, sizeof code, "%.*s", (int)(n < 63 ? n : 63), c);
    }
    int st = q->status == 404                       ? ST_ENOTFOUND
             : q->status == 403 || q->status == 401 ? ST_EIO
                                                    : ST_EIO;
    return st_errf(err, st, "object store %s: %s: HTTP %ld%s%s", s->h.desc, what, q->status,
                   code[0] ? " " : "", code);
}

/* ---- the interface --------------------------------------------------------- */

static void s3_close(struct blob_store *bs)
{
    struct s3_store *s = (struct s3_store *)bs;
    for (size_t i = 0; i < s->nidle; i++)
        curl_easy_cleanup(s->idle[i]);
    free(s->idle);
    for (struct tail_ent *t = s->fifo_head, *next; t != NULL; t = next) {
        next = t->next;
        tail_free(t);
    }
    hmap_free(&s->tails);
    pthread_mutex_destroy(&s->mu);
    free(s->bucket);
    free(s->prefix);
    free(s->base);
    free(s->host_base);
    free(s->region);
    if (s->userpwd != NULL)
        memset(s->userpwd, 0, strlen(s->userpwd));
    free(s->userpwd);
    if (s->token_hdr != NULL)
        memset(s->token_hdr, 0, strlen(s->token_hdr));
    free(s->token_hdr);
    free(s->sigv4);
    free(s->h.desc);
    free(s->h.uri);
    free(s);
}

static int s3_put_begin(struct blob_store *s, const char *key, struct blob_put **out,
                        struct st_err *err)
{
    (void)err;
    struct s3_put *p = xcalloc(1, sizeof *p);
    p->s = s;
    p->key = xstrdup(key);
    buf_init(&p->body);
    *out = (struct blob_put *)p;
    return ST_OK;
}

static int s3_put_write(struct blob_put *bp, const void *d, size_t n, struct st_err *err)
{
    (void)err;
    struct s3_put *p = (struct s3_put *)bp;
    buf_append(&p->body, d, n);
    return ST_OK;
}

static void s3_put_abort(struct blob_put *bp)
{
    struct s3_put *p = (struct s3_put *)bp;
    buf_free(&p->body);
    free(p->key);
    free(p);
}

static int exists_err(struct s3_store *s, const char *key, struct st_err *err)
{
    return st_errf(err, ST_EEXIST,
                   "object %s already exists in %s: the conditional write (If-None-Match: *) "
                   "refused to overwrite it",
                   key, s->h.desc);
}

/* The text between <tag> and </tag> after *pos; advances *pos. */
static char *xml_next(const char *body, const char **pos, const char *tag)
{
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *a = strstr(*pos, open);
    if (a == NULL)
        return NULL;
    a += strlen(open);
    const char *b = strstr(a, close);
    if (b == NULL)
        return NULL;
    *pos = b + strlen(close);
    (void)body;
    return xstrndup(a, (size_t)(b - a));
}

static void xml_unescape(char *s)
{
    static const struct {
        const char *e;
        char c;
    } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    char *w = s;
    for (const char *r = s; *r;) {
        bool done = false;
        for (size_t i = 0; i < sizeof ents / sizeof *ents && !done; i++) {
            size_t n = strlen(ents[i].e);
            if (strncmp(r, ents[i].e, n) == 0) {
                *w++ = ents[i].c;
                r += n;
                done = true;
            }
        }
        if (!done)
            *w++ = *r++;
    }
    *w = '\0';
}

static void xml_escape(struct buf *b, const char *s);

static int multipart(struct s3_store *s, struct s3_put *p, struct st_err *err)
{
    struct s3_req q = {.method = "POST", .key = p->key, .query = "uploads"};
    int rc = s3_do(s, &q, err);
    if (rc == ST_OK && q.status != 200)
        rc = s3_fail(s, &q, "starting a multipart upload", err);
    char *upload = NULL;
    if (rc == ST_OK) {
        const char *pos = buf_cstr(&q.resp);
        upload = xml_next(NULL, &pos, "UploadId");
        if (upload == NULL)
            rc = st_errf(err, ST_EIO, "object store %s: no UploadId in the answer", s->h.desc);
    }
    buf_free(&q.resp);
    if (rc != ST_OK)
        return rc;
    struct buf uid = BUF_INIT;
    url_encode(&uid, upload, false);
    buf_append(&uid, "", 1);
    struct buf done = BUF_INIT;
    buf_append_str(&done, "<CompleteMultipartUpload>");
    size_t nparts = (p->body.len + BLOB_S3_PART - 1) / BLOB_S3_PART;
    for (size_t i = 0; i < nparts && rc == ST_OK; i++) {
        char query[512];
        snprintf(query, sizeof query, "partNumber=%zu&uploadId=%s", i + 1, (char *)uid.data);
        size_t off = i * BLOB_S3_PART;
        size_t len = p->body.len - off < BLOB_S3_PART ? p->body.len - off : BLOB_S3_PART;
        struct s3_req pq = {.method = "PUT",
                            .key = p->key,
                            .query = query,
                            .body = p->body.data + off,
                            .body_len = len};
        struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/octet-stream");
        pq.hdrs = h;
        rc = s3_do(s, &pq, err);
        curl_slist_free_all(h);
        if (rc == ST_OK && pq.status != 200)
            rc = s3_fail(s, &pq, "uploading a part", err);
        buf_free(&pq.resp);
        buf_printf(&done, "<Part><PartNumber>%zu</PartNumber><ETag>", i + 1);
        xml_escape(&done, pq.etag);
        buf_append_str(&done, "</ETag></Part>");
    }
    buf_append_str(&done, "</CompleteMultipartUpload>");
    char query[512];
    snprintf(query, sizeof query, "uploadId=%s", (char *)uid.data);
    if (rc == ST_OK) {
        struct curl_slist *h = curl_slist_append(NULL, "If-None-Match: *");
        h = curl_slist_append(h, "Content-Type: application/xml");
        struct s3_req cq = {.method = "POST",
                            .key = p->key,
                            .query = query,
                            .hdrs = h,
                            .body = done.data,
                            .body_len = done.len};
        rc = s3_do(s, &cq, err);
        if (rc == ST_OK && cq.status == 412)
            rc = exists_err(s, p->key, err);
        else if (rc == ST_OK && (cq.status != 200 || strstr(buf_cstr(&cq.resp), "<Error>")))
            rc = s3_fail(s, &cq, "completing a multipart upload", err);
        curl_slist_free_all(h);
        buf_free(&cq.resp);
    }
    if (rc != ST_OK) {
        struct s3_req aq = {.method = "DELETE", .key = p->key, .query = query};
        struct st_err e2 = {0};
        if (s3_do(s, &aq, &e2) != ST_OK || aq.status / 100 != 2)
            log_warn("s3: aborting the multipart upload of %s failed (HTTP %ld)", p->key,
                     aq.status);
        buf_free(&aq.resp);
    }
    buf_free(&done);
    buf_free(&uid);
    free(upload);
    return rc;
}

static int s3_put_commit(struct blob_put *bp, struct st_err *err)
{
    struct s3_put *p = (struct s3_put *)bp;
    struct s3_store *s = (struct s3_store *)p->s;
    int rc;
    if (p->body.len >= BLOB_S3_MULTIPART) {
        rc = multipart(s, p, err);
    } else {
        struct curl_slist *h = curl_slist_append(NULL, "If-None-Match: *");
        h = curl_slist_append(h, "Content-Type: application/octet-stream");
        struct s3_req q = {.method = "PUT",
                           .key = p->key,
                           .hdrs = h,
                           .body = p->body.data != NULL ? (const void *)p->body.data : "",
                           .body_len = p->body.len};
        rc = s3_do(s, &q, err);
        if (rc == ST_OK && q.status == 412)
            rc = exists_err(s, p->key, err);
        else if (rc == ST_OK && q.status == 409) /* a concurrent conditional write won */
            rc = exists_err(s, p->key, err);
        else if (rc == ST_OK && q.status != 200)
            rc = s3_fail(s, &q, "writing an object", err);
        curl_slist_free_all(h);
        buf_free(&q.resp);
    }
    if (rc == ST_OK) { /* what a reader opens first is at hand: no request for it */
        size_t tl = p->body.len < BLOB_S3_TAIL ? p->body.len : BLOB_S3_TAIL;
        const uint8_t *bd = p->body.data != NULL ? p->body.data : (const uint8_t *)"";
        tail_put(s, p->key, bd + (p->body.len - tl), tl, p->body.len, p->body.len - tl);
    }
    s3_put_abort(bp);
    return rc;
}

static int s3_head(struct blob_store *bs, const char *key, struct blob_info *out,
                   struct st_err *err)
{
    struct s3_store *s = (struct s3_store *)bs;
    struct s3_req q = {.method = "HEAD", .key = key, .head = true};
    int rc = s3_do(s, &q, err);
    if (rc == ST_OK && q.status == 404)
        rc = st_errf(err, ST_ENOTFOUND, "no object %s in %s", key, s->h.desc);
    else if (rc == ST_OK && q.status != 200)
        rc = s3_fail(s, &q, key, err);
    if (rc == ST_OK) {
        out->size = q.length;
        out->mtime_us = q.filetime > 0 ? q.filetime * 1000000 : 0;
    }
    buf_free(&q.resp);
    return rc;
}

static int s3_read(struct blob_store *bs, const char *key, uint64_t off, void *dst, size_t n,
                   struct st_err *err)
{
    struct s3_store *s = (struct s3_store *)bs;
    if (n == 0 || tail_read(s, key, off, dst, n))
        return ST_OK;
    char range[96];
    snprintf(range, sizeof range, "Range: bytes=%llu-%llu", (unsigned long long)off,
             (unsigned long long)(off + n - 1));
    struct curl_slist *h = curl_slist_append(NULL, range);
    struct s3_req q = {.method = "GET", .key = key, .hdrs = h, .dst = dst, .dst_len = n};
    int rc = s3_do(s, &q, err);
    curl_slist_free_all(h);
    if (rc == ST_OK && q.status == 404)
        rc = st_errf(err, ST_ENOTFOUND, "no object %s in %s", key, s->h.desc);
    else if (rc == ST_OK && q.status == 416)
        rc = st_errf(err, ST_ECORRUPT, "%s ends before offset %llu", key,
                     (unsigned long long)(off + n));
    else if (rc == ST_OK && q.status != 206 && !(q.status == 200 && off == 0))
        rc = s3_fail(s, &q, key, err);
    else if (rc == ST_OK && q.dst_got != n)
        rc = st_errf(err, ST_ECORRUPT,
                     "%s: the range response at %llu has %zu bytes, not %zu (truncated)", key,
                     (unsigned long long)off, q.dst_got, n);
    buf_free(&q.resp);
    return rc;
}

static void tail_free(struct tail_ent *t)
{
    free(t->key);
    free(t->bytes);
    free(t);
}

/* A copy of the cached tail of key, if there is one. */
static bool tail_get(struct s3_store *s, const char *key, uint8_t **bytes, uint64_t *size,
                     uint64_t *off)
{
    bool hit = false;
    pthread_mutex_lock(&s->mu);
    void **v = hmap_get(&s->tails, key, strlen(key));
    if (v != NULL) {
        struct tail_ent *t = *v;
        *bytes = xmalloc(t->len ? t->len : 1);
        memcpy(*bytes, t->bytes, t->len);
        *size = t->size;
        *off = t->off;
        hit = true;
    }
    pthread_mutex_unlock(&s->mu);
    return hit;
}

static void tail_put(struct s3_store *s, const char *key, const uint8_t *bytes, size_t len,
                     uint64_t size, uint64_t off)
{
    assert(off <= size && size - off == len); /* a tail: the object's bytes [off, size) */
    struct tail_ent *t = xcalloc(1, sizeof *t);
    t->key = xstrdup(key);
    t->bytes = xmalloc(len ? len : 1);
    memcpy(t->bytes, bytes, len);
    t->len = len;
    t->size = size;
    t->off = off;
    pthread_mutex_lock(&s->mu);
    bool created;
    void **v = hmap_put(&s->tails, t->key, strlen(t->key), &created);
    if (!created) { /* another thread cached it first */
        pthread_mutex_unlock(&s->mu);
        tail_free(t);
        return;
    }
    *v = t;
    s->tails_live++;
    s->tails_puts++;
    if (s->fifo_tail != NULL)
        s->fifo_tail->next = t;
    else
        s->fifo_head = t;
    s->fifo_tail = t;
    s->tails_bytes += len + strlen(key);
    while (s->tails_bytes > BLOB_S3_TAIL_CACHE && s->fifo_head != NULL) {
        struct tail_ent *o = s->fifo_head;
        s->fifo_head = o->next;
        if (s->fifo_head == NULL)
            s->fifo_tail = NULL;
        if (!o->dead) {
            void *gone = hmap_del(&s->tails, o->key, strlen(o->key));
            assert(gone == o && s->tails_live > 0 && s->tails_bytes >= o->len + strlen(o->key));
            (void)gone;
            s->tails_bytes -= o->len + strlen(o->key);
            s->tails_live--;
        }
        tail_free(o);
    }
    /* hmap keeps the key bytes of deleted entries until it is freed: rebuild
       it from the live entries once most of what it holds is dead */
    if (s->tails_puts > 4096 && s->tails_puts > 4 * s->tails_live) {
        hmap_free(&s->tails);
        hmap_init(&s->tails);
        for (struct tail_ent *e = s->fifo_head; e != NULL; e = e->next)
            if (!e->dead)
                *hmap_put(&s->tails, e->key, strlen(e->key), NULL) = e;
        s->tails_puts = s->tails_live;
    }
    /* the bound holds, what it counts is what the map holds */
    assert(s->tails_bytes <= BLOB_S3_TAIL_CACHE || s->fifo_head == NULL);
    assert(s->tails_live == s->tails.count && s->tails_live <= s->tails_puts);
    pthread_mutex_unlock(&s->mu);
}

/* [off, off + n) of key from its cached tail, when the tail holds it all. */
static bool tail_read(struct s3_store *s, const char *key, uint64_t off, void *dst, size_t n)
{
    bool hit = false;
    pthread_mutex_lock(&s->mu);
    void **v = hmap_get(&s->tails, key, strlen(key));
    if (v != NULL) {
        struct tail_ent *t = *v;
        if (off >= t->off && off <= t->size && n <= t->size - off) {
            memcpy(dst, t->bytes + (off - t->off), n);
            hit = true;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return hit;
}

static void tail_drop(struct s3_store *s, const char *key)
{
    pthread_mutex_lock(&s->mu);
    struct tail_ent *t = hmap_del(&s->tails, key, strlen(key));
    if (t != NULL) {
        assert(!t->dead && s->tails_live > 0 && s->tails_bytes >= t->len + strlen(t->key));
        t->dead = true;
        s->tails_bytes -= t->len + strlen(t->key);
        s->tails_live--;
    }
    pthread_mutex_unlock(&s->mu);
}

/* One suffix range GET: the object's size (Content-Range) and its tail. */
static int s3_file_open(struct blob_store *bs, const char *key, struct blob_file **out,
                        struct st_err *err)
{
    struct s3_store *s = (struct s3_store *)bs;
    uint8_t *cached;
    uint64_t csize, coff;
    if (tail_get(s, key, &cached, &csize, &coff)) {
        struct s3_file *f = xcalloc(1, sizeof *f);
        f->h.s = bs;
        f->h.size = csize;
        f->key = xstrdup(key);
        f->tail_off = coff;
        f->tail = cached;
        *out = &f->h;
        return ST_OK;
    }
    char range[64];
    snprintf(range, sizeof range, "Range: bytes=-%u", BLOB_S3_TAIL);
    struct curl_slist *h = curl_slist_append(NULL, range);
    struct s3_req q = {.method = "GET", .key = key, .hdrs = h, .resp_max = BLOB_S3_TAIL};
    int rc = s3_do(s, &q, err);
    curl_slist_free_all(h);
    uint64_t size = 0, first = 0;
    if (rc == ST_OK && q.status == 404) {
        rc = st_errf(err, ST_ENOTFOUND, "no object %s in %s", key, s->h.desc);
    } else if (rc == ST_OK && q.status == 416) {
        buf_reset(&q.resp); /* an empty object has no suffix to give */
    } else if (rc == ST_OK && q.status == 206 && q.has_range) {
        size = q.range_total;
        first = q.range_first;
        if (first + q.resp.len != size)
            rc = st_errf(err, ST_ECORRUPT,
                         "%s: the range response has %zu bytes, not %llu (truncated)", key,
                         q.resp.len, (unsigned long long)(size - first));
    } else if (rc == ST_OK && q.status == 200) {
        size = q.resp.len; /* the store ignored the range: the whole (small) object */
    } else if (rc == ST_OK) {
        rc = s3_fail(s, &q, key, err);
    }
    if (rc != ST_OK) {
        buf_free(&q.resp);
        return rc;
    }
    struct s3_file *f = xcalloc(1, sizeof *f);
    f->h.s = bs;
    f->h.size = size;
    f->key = xstrdup(key);
    f->tail_off = first;
    size_t tl = q.resp.len;
    f->tail = buf_detach(&q.resp, NULL);
    tail_put(s, key, f->tail, tl, size, first);
    *out = &f->h;
    return ST_OK;
}

static int s3_file_read(struct blob_file *bf, void *dst, size_t n, uint64_t off, struct st_err *err)
{
    struct s3_file *f = (struct s3_file *)bf;
    assert(off <= bf->size && n <= bf->size - off && f->tail_off <= bf->size);
    if (off >= f->tail_off) {
        memcpy(dst, f->tail + (off - f->tail_off), n); /* blob.c checked off + n <= size */
        return ST_OK;
    }
    return s3_read(bf->s, f->key, off, dst, n, err);
}

static void s3_file_close(struct blob_file *bf)
{
    struct s3_file *f = (struct s3_file *)bf;
    free(f->tail);
    free(f->key);
    free(f);
}

static void xml_escape(struct buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            buf_append_str(b, "&amp;");
            break;
        case '<':
            buf_append_str(b, "&lt;");
            break;
        case '>':
            buf_append_str(b, "&gt;");
            break;
        default:
            buf_append(b, s, 1);
        }
    }
}

static void base64(const uint8_t *p, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        out[o++] = a[(v >> 18) & 63];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = i + 1 < n ? a[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? a[v & 63] : '=';
    }
    out[o] = '\0';
}

/* DeleteObjects of up to 1000 keys; gone[i] is set for each key the store
   reports as deleted (S3 reports a missing key as deleted too). */
static int s3_del(struct blob_store *bs, const char *const *keys, size_t n, bool *gone,
                  struct st_err *err)
{
    struct s3_store *s = (struct s3_store *)bs;
    for (size_t i = 0; i < n; i++)
        tail_drop(s, keys[i]);
    int first = ST_OK;
    for (size_t at = 0; at < n; at += 1000) {
        size_t m = n - at < 1000 ? n - at : 1000;
        struct buf x = BUF_INIT;
        buf_append_str(&x, "<Delete><Quiet>false</Quiet>");
        for (size_t i = 0; i < m; i++) {
            buf_append_str(&x, "<Object><Key>");
            xml_escape(&x, s->prefix);
            xml_escape(&x, keys[at + i]);
            buf_append_str(&x, "</Key></Object>");
        }
        buf_append_str(&x, "</Delete>");
        uint8_t d[32];
        st_sha256(x.data, x.len, d);
        char b64[48], hdr[96];
        base64(d, 32, b64);
        snprintf(hdr, sizeof hdr, "x-amz-checksum-sha256: %s", b64);
        struct curl_slist *h = curl_slist_append(NULL, hdr);
        h = curl_slist_append(h, "Content-Type: application/xml");
        struct s3_req q = {.method = "POST",
                           .key = NULL,
                           .query = "delete",
                           .hdrs = h,
                           .body = x.data,
                           .body_len = x.len,
                           .resp_max = 4u << 20};
        int rc = s3_do(s, &q, err);
        if (rc == ST_OK && q.status != 200)
            rc = s3_fail(s, &q, "deleting objects", err);
        if (rc == ST_OK) {
            const char *pos = buf_cstr(&q.resp);
            char *del;
            while ((del = xml_next(NULL, &pos, "Deleted")) != NULL) {
                const char *dp = del;
                char *k = xml_next(NULL, &dp, "Key");
                if (k != NULL) {
                    xml_unescape(k);
                    size_t pl = strlen(s->prefix);
                    for (size_t i = 0; gone != NULL && i < m; i++)
                        if (strncmp(k, s->prefix, pl) == 0 && strcmp(k + pl, keys[at + i]) == 0)
                            gone[at + i] = true;
                }
                free(k);
                free(del);
            }
            if (strstr(buf_cstr(&q.resp), "<Error>") != NULL)
                rc = st_errf(err, ST_EIO, "object store %s: some objects were not deleted",
                             s->h.desc);
        }
        if (rc != ST_OK && first == ST_OK)
            first = rc;
        curl_slist_free_all(h);
        buf_free(&q.resp);
        buf_free(&x);
    }
    return first;
}

/* "2026-12-01T18:00:00.000Z" -> microseconds since the epoch. */
static int64_t iso8601_us(const char *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int ms = 0;
    if (sscanf(t, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &ms) < 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000000 + (int64_t)ms * 1000;
}

/* The first child element `tag` of an element's text (xml_next from its start), or NULL. */
static char *xml_child(const char *elem, const char *tag)
{
    const char *pos = elem;
    return xml_next(NULL, &pos, tag);
}

/* The store's key prefix of a listing of `prefix` ("" or a blob directory ending in '/'), or
   NULL and ST_EINVAL in err. Caller frees. */
static char *list_prefix(const struct s3_store *s, const char *prefix, struct st_err *err)
{
    size_t pl = strlen(prefix);
    if (pl > 0) {
        char *dir_key = xstrndup(prefix, pl - 1);
        bool ok = prefix[pl - 1] == '/' && blob__key_ok(dir_key);
        free(dir_key);
        if (!ok) {
            st_errf(err, ST_EINVAL, "not a blob prefix: \"%s\"", prefix);
            return NULL;
        }
    }
    return xasprintf("%s%s", s->prefix, prefix);
}

static int s3_list(struct blob_store *bs, const char *prefix, blob_list_fn fn, void *ctx,
                   struct st_err *err)
{
    struct s3_store *s = (struct s3_store *)bs;
    char *full = list_prefix(s, prefix, err);
    if (full == NULL)
        return ST_EINVAL;
    char *token = NULL;
    int rc = ST_OK;
    do {
        struct buf qs = BUF_INIT;
        buf_append_str(&qs, "list-type=2&prefix=");
        url_encode(&qs, full, false);
        if (token != NULL) {
            buf_append_str(&qs, "&continuation-token=");
            url_encode(&qs, token, false);
        }
        buf_append(&qs, "", 1);
        free(token);
        token = NULL;
        struct s3_req q = {.method = "GET",
                           .key = NULL,
                           .query = (const char *)qs.data,
                           .resp_max = BLOB_S3_LIST_MAX};
        rc = s3_do(s, &q, err);
        if (rc == ST_OK && q.status != 200)
            rc = s3_fail(s, &q, "listing objects", err);
        const char *body = buf_cstr(&q.resp);
        const char *pos = body;
        char *c;
        while (rc == ST_OK && (c = xml_next(NULL, &pos, "Contents")) != NULL) {
            char *k = xml_child(c, "Key"), *lm = xml_child(c, "LastModified"),
                 *sz = xml_child(c, "Size");
            if (k != NULL) {
                xml_unescape(k);
                size_t fl = strlen(s->prefix);
                if (strncmp(k, s->prefix, fl) == 0) {
                    struct blob_info bi = {.size = sz ? strtoull(sz, NULL, 10) : 0,
                                           .mtime_us = lm ? iso8601_us(lm) : 0};
                    int r = fn(ctx, k + fl, &bi);
                    if (r != 0)
                        rc = r;
                }
            }
            free(k);
            free(lm);
            free(sz);
            free(c);
        }
        if (rc == ST_OK && strstr(body, "<IsTruncated>true</IsTruncated>") != NULL) {
            pos = body;
            token = xml_next(NULL, &pos, "NextContinuationToken");
            if (token != NULL)
                xml_unescape(token);
        }
        buf_free(&q.resp);
        buf_free(&qs);
    } while (rc == ST_OK && token != NULL);
    free(token);
    free(full);
    return rc;
}

/* ListMultipartUploads of the keys under prefix, page after page. */
static int s3_list_uploads(struct blob_store *bs, const char *prefix, blob_upload_fn fn, void *ctx,
                           struct st_err *err)
{
    struct s3_store *s = (struct s3_store *)bs;
    char *full = list_prefix(s, prefix, err);
    if (full == NULL)
        return ST_EINVAL;
    char *key_marker = NULL, *id_marker = NULL;
    int rc = ST_OK;
    do {
        struct buf qs = BUF_INIT; /* canonical: names in order, each with '=' */
        if (key_marker != NULL) {
            buf_append_str(&qs, "key-marker=");
            url_encode(&qs, key_marker, false);
            buf_append_str(&qs, "&");
        }
        buf_append_str(&qs, "prefix=");
        url_encode(&qs, full, false);
        if (id_marker != NULL) {
            buf_append_str(&qs, "&upload-id-marker=");
            url_encode(&qs, id_marker, false);
        }
        buf_append_str(&qs, "&uploads=");
        buf_append(&qs, "", 1);
        free(key_marker);
        free(id_marker);
        key_marker = id_marker = NULL;
        struct s3_req q = {.method = "GET",
                           .key = NULL,
                           .query = (const char *)qs.data,
                           .resp_max = BLOB_S3_LIST_MAX};
        rc = s3_do(s, &q, err);
        if (rc == ST_OK && q.status != 200)
            rc = s3_fail(s, &q, "listing unfinished uploads", err);
        const char *body = buf_cstr(&q.resp);
        const char *pos = body;
        char *up;
        while (rc == ST_OK && (up = xml_next(NULL, &pos, "Upload")) != NULL) {
            char *k = xml_child(up, "Key"), *id = xml_child(up, "UploadId"),
                 *at = xml_child(up, "Initiated");
            if (k != NULL && id != NULL) {
                xml_unescape(k);
                xml_unescape(id);
                size_t fl = strlen(s->prefix);
                /* an upload of a key the engine could not name is not one of its own */
                if (strncmp(k, s->prefix, fl) == 0 && blob__key_ok(k + fl)) {
                    struct blob_upload u = {.key = k + fl,
                                            .upload_id = id,
                                            .initiated_us = at != NULL ? iso8601_us(at) : 0};
                    int r = fn(ctx, &u);
                    if (r != 0)
                        rc = r;
                }
            }
            free(k);
            free(id);
            free(at);
            free(up);
        }
        if (rc == ST_OK && strstr(body, "<IsTruncated>true</IsTruncated>") != NULL) {
            pos = body;
            key_marker = xml_next(NULL, &pos, "NextKeyMarker");
            pos = body;
            id_marker = xml_next(NULL, &pos, "NextUploadIdMarker");
            if (key_marker == NULL || id_marker == NULL) {
                rc = st_errf(err, ST_EIO,
                             "object store %s: a truncated list of uploads without its markers",
                             s->h.desc);
            } else {
                xml_unescape(key_marker);
                xml_unescape(id_marker);
            }
        }
        buf_free(&q.resp);
        buf_free(&qs);
    } while (rc == ST_OK && key_marker != NULL);
    free(key_marker);
    free(id_marker);
    free(full);
    return rc;
}

/* AbortMultipartUpload: 204; an upload already gone (404 NoSuchUpload) is fine too. */
static int s3_abort_upload(struct blob_store *bs, const char *key, const char *upload_id,
                           struct st_err *err)
{
    struct s3_store *s = (struct s3_store *)bs;
    struct buf qs = BUF_INIT;
    buf_append_str(&qs, "uploadId=");
    url_encode(&qs, upload_id, false);
    buf_append(&qs, "", 1);
    struct s3_req q = {.method = "DELETE", .key = key, .query = (const char *)qs.data};
    int rc = s3_do(s, &q, err);
    if (rc == ST_OK && q.status != 204 && q.status != 200 && q.status != 404)
        rc = s3_fail(s, &q, "aborting an unfinished upload", err);
    buf_free(&q.resp);
    buf_free(&qs);
    return rc;
}

/* GetBucketVersioning: <Status> Enabled or Suspended; none when it never was enabled. */
static int s3_versioning(struct blob_store *bs, enum blob_versioning *out, struct st_err *err)
{
    struct s3_store *s = (struct s3_store *)bs;
    struct s3_req q = {.method = "GET", .key = NULL, .query = "versioning="};
    int rc = s3_do(s, &q, err);
    if (rc == ST_OK && q.status != 200)
        rc = s3_fail(s, &q, "reading the bucket's versioning", err);
    if (rc == ST_OK) {
        const char *pos = buf_cstr(&q.resp);
        char *st = xml_next(NULL, &pos, "Status");
        *out = st == NULL                     ? BLOB_UNVERSIONED
               : strcmp(st, "Enabled") == 0   ? BLOB_VERSIONING_ENABLED
               : strcmp(st, "Suspended") == 0 ? BLOB_VERSIONING_SUSPENDED
                                              : BLOB_VERSIONING_ENABLED; /* unknown: the worst */
        free(st);
    }
    buf_free(&q.resp);
    return rc;
}

/* A server-side copy onto itself: same bytes, LastModified now. */
static int s3_touch(struct blob_store *bs, const char *key, struct st_err *err)
{
    struct s3_store *s = (struct s3_store *)bs;
    assert(blob__key_ok(key));
    struct buf src = BUF_INIT;
    buf_append_str(&src, "x-amz-copy-source: /");
    url_encode(&src, s->bucket, false);
    buf_append_str(&src, "/");
    url_encode(&src, s->prefix, true);
    url_encode(&src, key, true);
    struct curl_slist *h = curl_slist_append(NULL, buf_cstr(&src));
    h = curl_slist_append(h, "x-amz-metadata-directive: REPLACE");
    h = curl_slist_append(h, "Content-Type: application/octet-stream");
    struct s3_req q = {.method = "PUT", .key = key, .hdrs = h, .body = "", .body_len = 0};
    int rc = s3_do(s, &q, err);
    if (rc == ST_OK && (q.status == 404 || (q.status != 200)))
        rc = s3_fail(s, &q, "touching an object", err);
    if (rc == ST_OK && strstr(buf_cstr(&q.resp), "<Error>") != NULL)
        rc = s3_fail(s, &q, "touching an object", err);
    if (rc == ST_ENOTFOUND)
        err->code = rc = ST_EIO;
    curl_slist_free_all(h);
    buf_free(&q.resp);
    buf_free(&src);
    return rc;
}

/*
 * SigV4 query signing (libcurl signs requests, it does not presign): the
 * canonical request of a GET with only the host header signed and an
 * unsigned payload, the string to sign, the key derived from the secret by
 * the HMAC chain date, region, "s3", "aws4_request".
 */
int blob__s3_presign(const char *access_key, const char *secret, const char *token,
                     const char *region, const char *url_base, const char *path, int64_t now_s,
                     int64_t expires_s, char **out)
{
    time_t t = (time_t)now_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    char date[9], stamp[17];
    strftime(date, sizeof date, "%Y%m%d", &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    /* host: between "://" and the next '/' of the base */
    const char *h = strstr(url_base, "://");
    h = h != NULL ? h + 3 : url_base;
    size_t hl = strcspn(h, "/");
    struct buf q = BUF_INIT;
    buf_append_str(&q, "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=");
    char *cred = xasprintf("%s/%s/%s/s3/aws4_request", access_key, date, region);
    url_encode(&q, cred, false);
    free(cred);
    buf_printf(&q, "&X-Amz-Date=%s&X-Amz-Expires=%lld", stamp, (long long)expires_s);
    if (token != NULL) {
        buf_append_str(&q, "&X-Amz-Security-Token=");
        url_encode(&q, token, false);
    }
    buf_append_str(&q, "&X-Amz-SignedHeaders=host");
    struct buf c = BUF_INIT;
    buf_append_str(&c, "GET\n");
    buf_append_str(&c, path);
    buf_append_str(&c, "\n");
    buf_append(&c, q.data, q.len);
    buf_printf(&c, "\nhost:%.*s\n\nhost\nUNSIGNED-PAYLOAD", (int)hl, h);
    uint8_t d[32];
    char hex[65];
    st_sha256(c.data, c.len, d);
    st_sha256_hex(d, hex);
    char *sts =
        xasprintf("AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", stamp, date, region, hex);
    char *k0 = xasprintf("AWS4%s", secret);
    uint8_t k[32];
    st_hmac_sha256(k0, strlen(k0), date, strlen(date), k);
    memset(k0, 0, strlen(k0));
    free(k0);
    st_hmac_sha256(k, 32, region, strlen(region), k);
    st_hmac_sha256(k, 32, "s3", 2, k);
    st_hmac_sha256(k, 32, "aws4_request", 12, k);
    st_hmac_sha256(k, 32, sts, strlen(sts), d);
    memset(k, 0, sizeof k);
    st_sha256_hex(d, hex);
    *out = xasprintf("%.*s%s?%.*s&X-Amz-Signature=%s", (int)(h + hl - url_base), url_base, path,
                     (int)q.len, (const char *)q.data, hex);
    free(sts);
    buf_free(&c);
    buf_free(&q);
    return ST_OK;
}

static int s3_presign(struct blob_store *bs, const char *key, int64_t now_s, int64_t expires_s,
                      char **url, struct st_err *err)
{
    (void)err;
    struct s3_store *s = (struct s3_store *)bs;
    /* the object's path on its host, encoded once (S3 does not encode twice) */
    assert(blob__key_ok(key) && strstr(s->host_base, "://") != NULL);
    const char *h = strstr(s->host_base, "://") + 3;
    struct buf p = BUF_INIT;
    buf_append_str(&p, h + strcspn(h, "/"));
    url_encode(&p, s->prefix, true);
    url_encode(&p, key, true);
    buf_append(&p, "", 1);
    const char *colon = strchr(s->userpwd, ':');
    char *ak = xstrndup(s->userpwd, (size_t)(colon - s->userpwd));
    const char *token =
        s->token_hdr != NULL ? s->token_hdr + strlen("x-amz-security-token: ") : NULL;
    int rc = blob__s3_presign(ak, colon + 1, token, s->region, s->host_base, (const char *)p.data,
                              now_s, expires_s, url);
    free(ak);
    buf_free(&p);
    return rc;
}

static const struct blob_ops s3_ops = {
    .close = s3_close,
    .put_begin = s3_put_begin,
    .put_write = s3_put_write,
    .put_commit = s3_put_commit,
    .put_abort = s3_put_abort,
    .head = s3_head,
    .read = s3_read,
    .file_open = s3_file_open,
    .file_read = s3_file_read,
    .file_close = s3_file_close,
    .del = s3_del,
    .list = s3_list,
    .touch = s3_touch,
    .presign = s3_presign,
    .list_uploads = s3_list_uploads,
    .abort_upload = s3_abort_upload,
    .versioning = s3_versioning,
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int blob_open_s3(const char *url, const struct blob_s3_opts *o, struct blob_store **out,
                 struct st_err *err)
{
    *out = NULL;
    if (strncmp(url, "s3://", 5) != 0)
        return st_errf(err, ST_EINVAL, "data: not an s3:// URL");
    const char *b = url + 5;
    size_t bl = strcspn(b, "/");
    if (bl == 0 || bl > 63)
        return st_errf(err, ST_EINVAL, "data: s3://BUCKET/prefix needs a bucket name");
    for (size_t i = 0; i < bl; i++)
        if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-' ||
              b[i] == '.'))
            return st_errf(err, ST_EINVAL, "data: bucket name \"%.*s\" is not valid", (int)bl, b);
    const char *pre = b[bl] == '/' ? b + bl + 1 : "";
    size_t prl = strlen(pre);
    while (prl > 0 && pre[prl - 1] == '/')
        prl--;
    char *prefix = xstrndup(pre, prl);
    if (prl > 0 && !blob__key_ok(prefix)) {
        free(prefix);
        return st_errf(err, ST_EINVAL, "data: \"%s\" is not a valid prefix", pre);
    }
    const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
    if (id == NULL || secret == NULL || id[0] == '\0' || secret[0] == '\0') {
        free(prefix);
        return st_errf(err, ST_EINVAL,
                       "data: s3:// needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the "
                       "environment");
    }
    const char *region = o != NULL && o->region != NULL && o->region[0] ? o->region : "us-east-1";
    for (const char *c = region; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-')) {
            free(prefix);
            return st_errf(err, ST_EINVAL, "s3-region: \"%s\" is not a region name", region);
        }
    pthread_once(&curl_once, curl_init_once);
    struct s3_store *s = xcalloc(1, sizeof *s);
    s->h.ops = &s3_ops;
    s->bucket = xstrndup(b, bl);
    s->prefix = prl > 0 ? xasprintf("%s/", prefix) : xstrdup("");
    free(prefix);
    s->region = xstrdup(region);
    bool path_style = o != NULL && o->path_style;
    const char *ep = o != NULL && o->endpoint != NULL && o->endpoint[0] ? o->endpoint : NULL;
    char *def = NULL;
    if (ep == NULL)
        ep = def = xasprintf("https://s3.%s.amazonaws.com", region);
    size_t el = strlen(ep);
    while (el > 0 && ep[el - 1] == '/')
        el--;
    s->base = xstrndup(ep, el);
    free(def);
    const char *scheme_end = strstr(s->base, "://");
    if (scheme_end == NULL ||
        (strncmp(s->base, "http://", 7) != 0 && strncmp(s->base, "https://", 8) != 0)) {
        s3_close(&s->h);
        return st_errf(err, ST_EINVAL, "s3-endpoint: give an http:// or https:// URL");
    }
    if (path_style)
        s->host_base = xasprintf("%s/%s/", s->base, s->bucket);
    else
        s->host_base = xasprintf("%.*s%s.%s/", (int)(scheme_end + 3 - s->base), s->base, s->bucket,
                                 scheme_end + 3);
    s->userpwd = xasprintf("%s:%s", id, secret);
    const char *token = getenv("AWS_SESSION_TOKEN");
    if (token != NULL && token[0] != '\0')
        s->token_hdr = xasprintf("x-amz-security-token: %s", token);
    s->sigv4 = xasprintf("aws:amz:%s:s3", s->region);
    s->timeout_ms = o != NULL && o->timeout_ms > 0 ? o->timeout_ms : 60000;
    pthread_mutex_init(&s->mu, NULL);
    hmap_init(&s->tails);
    s->h.desc = xasprintf("s3://%s/%s", s->bucket, s->prefix);
    s->h.uri = xasprintf("s3://%s/%s", s->bucket, s->prefix); /* the prefix is "" or ends in '/' */
    *out = &s->h;
    return ST_OK;
}
