/*
 * tls.h - the server's certificate and key (--tls-cert, --tls-key: PEM), for
 * both listeners, re-read on SIGHUP.
 *
 * HTTP (libmicrohttpd on GnuTLS) asks for the certificate at every handshake
 * (tls__mhd_cert_callback, MHD_OPTION_HTTPS_CERT_CALLBACK), gRPC through its
 * certificate-config fetcher (grpc.c, which calls tls_pem); so after a reload
 * new connections get the new certificate on both listeners, and connections
 * already open keep theirs. Versions: TLS 1.2 and 1.3 only
 * (TLS_GNUTLS_PRIORITIES; gRPC's own minimum is TLS 1.2).
 *
 * A pair that cannot be read, is not PEM, or whose key does not match the
 * certificate is refused: at start (exit 2) or on reload (the pair in force
 * stays, and err says why). Thread-safe.
 */
#ifndef STRIKE_TLS_H
#define STRIKE_TLS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define TLS_GNUTLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define TLS_PEM_MAX (1 << 20) /* bytes of a certificate chain or key file */

struct tls;

/* Load the pair (both NULL: TLS off). Caller frees with tls_close(). */
int tls_open(const char *cert_file, const char *key_file, struct tls **out, struct st_err *err);
/* Read both files again; on failure the pair in force stays. */
int tls_reload(struct tls *t, struct st_err *err);
bool tls_enabled(const struct tls *t);
/*
 * The PEM texts in force (copies: caller frees both) and their generation,
 * which changes with every successful reload.
 */
uint64_t tls_pem(struct tls *t, char **cert, char **key);
/*
 * The certificate callback for MHD_OPTION_HTTPS_CERT_CALLBACK
 * (gnutls_certificate_retrieve_function2, which has no user pointer: it
 * serves the one struct tls given to tls_set_http()).
 */
void tls_set_http(struct tls *t);
typedef void (*tls_fn)(void); /* cast back to gnutls_certificate_retrieve_function2 * */
tls_fn tls__mhd_cert_callback(void);
void tls_close(struct tls *t); /* NULL ok */

#endif
