/*
 * cli_token.c - `strike token new --scope read|write|admin --tables GLOB`
 * (docs/API.md "Auth"): a fresh bearer token and its tokens-file line.
 *
 * The token is 32 bytes from getrandom(2) (256 bits), base64url without
 * padding, after the prefix "stk_" (so that secret scanners can spot it).
 * Output, one item per line:
 *     stk_...                                  the token: give it to the client
 *     SHA256HEX SCOPE GLOB                     append it to the --tokens file
 * The server keeps only the digest; nothing here is stored anywhere.
 */
#include "cli.h"

#include "common/sha256.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

int cli_token(int argc, char **argv);

#define TOKEN_BYTES 32

static void usage(FILE *out)
{
    fprintf(out, "usage: strike token new --scope read|write|admin --tables GLOB\n"
                 "  print a fresh random bearer token (line 1) and the line to add to the\n"
                 "  striked --tokens file (line 2: its SHA-256, the scope, the table glob)\n");
}

static void base64url(const uint8_t *p, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        out[o++] = a[(v >> 18) & 63];
        out[o++] = a[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = a[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = a[v & 63];
    }
    out[o] = '\0';
}

int cli_token(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) { /* strike token --help, strike token new --help */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    }
    if (argc < 2 || strcmp(argv[1], "new") != 0) {
        usage(stderr);
        return 2;
    }
    const char *scope = NULL, *glob = NULL;
    for (int i = 2; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--scope") == 0 && val) {
            scope = val;
            i++;
        } else if (strcmp(argv[i], "--tables") == 0 && val) {
            glob = val;
            i++;
        } else {
            fprintf(stderr, "strike token new: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (scope == NULL || (strcmp(scope, "read") != 0 && strcmp(scope, "write") != 0 &&
                          strcmp(scope, "admin") != 0)) {
        fprintf(stderr, "strike token new: --scope read, write or admin\n");
        return 2;
    }
    size_t gl = glob ? strlen(glob) : 0;
    bool ok = gl > 0 && gl < 256;
    for (size_t i = 0; ok && i < gl; i++)
        ok = (unsigned char)glob[i] > 0x20 && (unsigned char)glob[i] < 0x7f;
    if (!ok) {
        fprintf(stderr, "strike token new: --tables: a table glob of 1 to 255 visible ASCII "
                        "characters without spaces (e.g. 'orders*', '*')\n");
        return 2;
    }
    uint8_t rnd[TOKEN_BYTES];
    size_t got = 0;
    while (got < sizeof rnd) {
        ssize_t n = getrandom(rnd + got, sizeof rnd - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "strike token new: getrandom: %s\n", strerror(errno));
            return 1;
        }
        got += (size_t)n;
    }
    char token[4 + (TOKEN_BYTES * 4 + 2) / 3 + 1] = "stk_";
    base64url(rnd, sizeof rnd, token + 4);
    uint8_t d[32];
    st_sha256(token, strlen(token), d);
    char hex[65];
    st_sha256_hex(d, hex);
    printf("%s\n%s %s %s\n", token, hex, scope, glob);
    memset(rnd, 0, sizeof rnd);
    return fflush(stdout) == 0 ? 0 : 1;
}
