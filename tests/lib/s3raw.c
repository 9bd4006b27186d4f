/* s3raw.c - raw requests to the s3 fixture's moto_server (s3raw.h). */
#include "s3raw.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct resp {
    char *p;
    size_t n;
};

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "s3raw: %s: %s\n", what, detail ? detail : "");
    abort();
}

static size_t on_body(char *p, size_t sz, size_t n, void *ctx)
{
    struct resp *r = ctx;
    char *q = realloc(r->p, r->n + sz * n + 1);
    if (q == NULL)
        abort();
    memcpy(q + r->n, p, sz * n);
    r->n += sz * n;
    q[r->n] = '\0';
    r->p = q;
    return sz * n;
}

/* One request; the status, and the body in *out (caller frees) when out is not NULL. */
static long request(const char *method, const char *url, const void *body, size_t n, char **out)
{
    CURL *c = curl_easy_init();
    if (c == NULL)
        die("curl_easy_init", NULL);
    struct resp r = {0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    /* not curl's default form type: moto would read the body as a form, and lose the query */
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    if (body != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    }
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(h);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK)
        die(url, curl_easy_strerror(cc));
    if (out != NULL)
        *out = r.p != NULL ? r.p : strdup("");
    else
        free(r.p);
    return status;
}

/* The text of the first <tag>...</tag> at or after s (caller frees), NULL without one. */
static char *between(const char *s, const char *tag)
{
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *a = strstr(s, open);
    const char *b = a != NULL ? strstr(a, close) : NULL;
    if (b == NULL)
        return NULL;
    a += strlen(open);
    return strndup(a, (size_t)(b - a));
}

char *s3raw_unfinished_upload(const char *endpoint, const char *bucket, const char *key,
                              const void *part, size_t n)
{
    char url[1024], *body = NULL;
    snprintf(url, sizeof url, "%s/%s/%s?uploads", endpoint, bucket, key);
    long st = request("POST", url, "", 0, &body);
    char *id = between(body, "UploadId");
    if (st != 200 || id == NULL)
        die("CreateMultipartUpload", body);
    free(body);
    snprintf(url, sizeof url, "%s/%s/%s?partNumber=1&uploadId=%s", endpoint, bucket, key, id);
    if ((st = request("PUT", url, part, n, NULL)) != 200)
        die("UploadPart", url);
    return id;
}

int s3raw_count_uploads(const char *endpoint, const char *bucket, const char *prefix)
{
    char url[1024], *body = NULL;
    snprintf(url, sizeof url, "%s/%s?uploads&prefix=%s", endpoint, bucket, prefix);
    if (request("GET", url, NULL, 0, &body) != 200)
        die("ListMultipartUploads", body);
    int n = 0;
    for (const char *p = strstr(body, "<Upload>"); p != NULL; p = strstr(p + 1, "<Upload>"))
        n++;
    free(body);
    return n;
}

void s3raw_versioned_bucket(const char *endpoint, const char *bucket, const char *status)
{
    char url[1024], body[256];
    snprintf(url, sizeof url, "%s/%s", endpoint, bucket);
    long st = request("PUT", url, "", 0, NULL);
    if (st != 200 && st != 409)
        die("CreateBucket", url);
    snprintf(url, sizeof url, "%s/%s?versioning", endpoint, bucket);
    snprintf(body, sizeof body,
             "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
             "<Status>%s</Status></VersioningConfiguration>",
             status);
    if ((st = request("PUT", url, body, strlen(body), NULL)) != 200)
        die("PutBucketVersioning", url);
}
