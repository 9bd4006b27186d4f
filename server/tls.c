/* tls.c - the certificate and key in force, their reload, and GnuTLS's certificate callback. */
#include "tls.h"

#include "common/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHAIN_MAX 16 /* certificates in a chain */

/*
 * One loaded pair. GnuTLS uses what the certificate callback returns for
 * the life of the session without copying it, so a pair is never freed while
 * the server runs: a reload chains the previous one behind the new one
 * (a few kilobytes per reload).
 */
struct pair {
    char *cert_pem, *key_pem;
    gnutls_pcert_st pcert[CHAIN_MAX];
    unsigned npcert;
    gnutls_privkey_t key;
    struct pair *older;
};

struct tls {
    char *cert_file, *key_file;
    pthread_mutex_t mu;
    struct pair *cur; /* under mu */
    uint64_t gen;     /* under mu */
};

static struct tls *g_http; /* the pair the HTTP listener serves (tls_set_http) */

static int read_file(const char *what, const char *path, char **out, struct st_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return st_errf(err, ST_EIO, "%s %s: %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > TLS_PEM_MAX) {
        close(fd);
        return st_errf(err, ST_EINVAL, "%s %s: not a regular file of at most %d bytes", what, path,
                       TLS_PEM_MAX);
    }
    char *buf = xmalloc((size_t)st.st_size + 1);
    size_t len = 0;
    while (len < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    if (len == 0 || strlen(buf) != len) {
        free(buf);
        return st_errf(err, ST_EINVAL, "%s %s: empty, or not PEM text", what, path);
    }
    *out = buf;
    return ST_OK;
}

static void pair_free(struct pair *p)
{
    while (p != NULL) {
        struct pair *o = p->older;
        for (unsigned i = 0; i < p->npcert; i++)
            gnutls_pcert_deinit(&p->pcert[i]);
        if (p->key != NULL)
            gnutls_privkey_deinit(p->key);
        free(p->cert_pem);
        free(p->key_pem);
        free(p);
        p = o;
    }
}

static int load(const struct tls *t, struct pair **out, struct st_err *err)
{
    struct pair *p = xcalloc(1, sizeof *p);
    if (read_file("--tls-cert", t->cert_file, &p->cert_pem, err) != ST_OK ||
        read_file("--tls-key", t->key_file, &p->key_pem, err) != ST_OK)
        goto fail;
    gnutls_datum_t cd = {(unsigned char *)p->cert_pem, (unsigned)strlen(p->cert_pem)};
    gnutls_datum_t kd = {(unsigned char *)p->key_pem, (unsigned)strlen(p->key_pem)};
    /* GnuTLS's own checks: both decode, and the key is the certificate's. */
    gnutls_certificate_credentials_t check;
    if (gnutls_certificate_allocate_credentials(&check) < 0) {
        st_errf(err, ST_EINTERNAL, "tls: out of memory");
        goto fail;
    }
    int rc = gnutls_certificate_set_x509_key_mem2(check, &cd, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
    gnutls_certificate_free_credentials(check);
    if (rc < 0) {
        st_errf(err, ST_EINVAL, "--tls-cert %s / --tls-key %s: %s", t->cert_file, t->key_file,
                gnutls_strerror(rc));
        goto fail;
    }
    p->npcert = CHAIN_MAX;
    rc = gnutls_pcert_list_import_x509_raw(p->pcert, &p->npcert, &cd, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0) {
        p->npcert = 0;
        st_errf(err, ST_EINVAL, "--tls-cert %s: %s (at most %d certificates)", t->cert_file,
                gnutls_strerror(rc), CHAIN_MAX);
        goto fail;
    }
    if (gnutls_privkey_init(&p->key) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(p->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        st_errf(err, ST_EINVAL, "--tls-key %s: %s", t->key_file, gnutls_strerror(rc));
        goto fail;
    }
    *out = p;
    return ST_OK;
fail:
    pair_free(p);
    return err->code;
}

int tls_open(const char *cert_file, const char *key_file, struct tls **out, struct st_err *err)
{
    *out = NULL;
    if ((cert_file == NULL) != (key_file == NULL))
        return st_errf(err, ST_EINVAL, "--tls-cert and --tls-key go together");
    struct tls *t = xcalloc(1, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    if (cert_file != NULL) {
        t->cert_file = xstrdup(cert_file);
        t->key_file = xstrdup(key_file);
        if (load(t, &t->cur, err) != ST_OK) {
            tls_close(t);
            return err->code;
        }
        t->gen = 1;
    }
    *out = t;
    return ST_OK;
}

int tls_reload(struct tls *t, struct st_err *err)
{
    if (!tls_enabled(t))
        return ST_OK;
    struct pair *p;
    if (load(t, &p, err) != ST_OK)
        return err->code;
    pthread_mutex_lock(&t->mu);
    p->older = t->cur;
    t->cur = p;
    t->gen++;
    pthread_mutex_unlock(&t->mu);
    return ST_OK;
}

bool tls_enabled(const struct tls *t)
{
    return t != NULL && t->cert_file != NULL;
}

uint64_t tls_pem(struct tls *t, char **cert, char **key)
{
    pthread_mutex_lock(&t->mu);
    *cert = xstrdup(t->cur->cert_pem);
    *key = xstrdup(t->cur->key_pem);
    uint64_t gen = t->gen;
    pthread_mutex_unlock(&t->mu);
    return gen;
}

void tls_set_http(struct tls *t)
{
    g_http = t;
}

/* gnutls_certificate_retrieve_function2: the pair in force, at every handshake. */
static int cert_callback(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
                         const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                         gnutls_pcert_st **pcert, unsigned int *pcert_length,
                         gnutls_privkey_t *pkey)
{
    (void)s;
    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    struct tls *t = g_http;
    if (t == NULL || t->cur == NULL)
        return -1;
    pthread_mutex_lock(&t->mu);
    *pcert = t->cur->pcert;
    *pcert_length = t->cur->npcert;
    *pkey = t->cur->key;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

tls_fn tls__mhd_cert_callback(void)
{
    return (tls_fn)cert_callback;
}

void tls_close(struct tls *t)
{
    if (t == NULL)
        return;
    if (g_http == t)
        g_http = NULL;
    pair_free(t->cur);
    pthread_mutex_destroy(&t->mu);
    free(t->cert_file);
    free(t->key_file);
    free(t);
}
