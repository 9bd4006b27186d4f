/*
 * fuzz_auth.c - the tokens file (auth_parse) and the Authorization header
 * (auth_bearer, auth_set_find). The input is a tokens file; each of its lines
 * is also tried as an Authorization value against the set it parsed to.
 * Checked: an error always has a message and no set; a parsed set has at
 * most one token per non-comment line; a bearer token lies inside its value,
 * is 1 to AUTH_TOKEN_MAX visible ASCII bytes; the token of "Bearer T" is T.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_err err = {0};
    struct auth_set *s = NULL;
    int rc = auth_parse((const char *)data, size, &s, &err);
    if (rc != ST_OK && (s != NULL || err.msg[0] == '\0'))
        abort();
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (rc == ST_OK && auth_set_tokens(s) > lines)
        abort();
    /* every line as an Authorization value (NUL-terminated copies) */
    char *line = malloc(size + 1);
    const uint8_t *p = data, *end = data + size;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        memcpy(line, p, n);
        line[n] = '\0';
        const char *tok;
        size_t tl;
        if (auth_bearer(line, &tok, &tl)) {
            if (tl == 0 || tl > AUTH_TOKEN_MAX || tok < line || tok + tl > line + strlen(line))
                abort();
            for (size_t i = 0; i < tl; i++)
                if ((unsigned char)tok[i] <= 0x20 || (unsigned char)tok[i] >= 0x7f)
                    abort();
            /* the canonical form names the same token */
            char canon[AUTH_TOKEN_MAX + 16];
            snprintf(canon, sizeof canon, "Bearer %.*s", (int)tl, tok);
            const char *t2;
            size_t l2;
            if (!auth_bearer(canon, &t2, &l2) || l2 != tl || memcmp(t2, tok, tl) != 0)
                abort();
            if (s != NULL && auth_set_find(s, line) != auth_set_find(s, canon))
                abort();
        } else if (s != NULL && auth_set_find(s, line) != NULL) {
            abort();
        }
        p = nl ? nl + 1 : end;
    }
    free(line);
    auth_set_unref(s);
    return 0;
}
