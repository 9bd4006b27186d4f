/*
 * fuzz_where.c - any text -> cli_where_compile (clients/cli_where.c, the
 * `strike --where` language). Every text either compiles to an expression
 * that encodes as JSON, or fails with a message and a column inside the
 * text; never both, never a crash or a leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    size_t len = strlen(text); /* the language stops at a NUL, as a C string does */
    char msg[256];
    size_t col = 0;
    json_t *e = cli_where_compile(text, msg, sizeof msg, &col);
    if (e != NULL) {
        char *s = json_dumps(e, JSON_COMPACT);
        if (s == NULL || !json_is_object(e) || json_object_get(e, "type") == NULL)
            abort();
        free(s);
        json_decref(e);
    } else if (msg[0] == 0 || col > len) {
        abort();
    }
    free(text);
    return 0;
}
