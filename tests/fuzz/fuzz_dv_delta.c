/* fuzz_dv_delta.c - Delta DV files (every entry), inline DVs in Z85, Z85
   itself, UUID paths and deletionVector descriptors. The first byte picks
   what the rest of the input is. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "dv/delta.h"
#include "dv/z85.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void delta_file(const uint8_t *p, size_t n)
{
    struct st_err e = {0};
    struct dv_delta_cursor c;
    if (dv_delta_cursor_init(&c, p, n, &e) != ST_OK)
        return;
    uint64_t off;
    uint32_t sz;
    struct dv *d;
    int rc;
    while ((rc = dv_delta_cursor_next(&c, &off, &sz, &d, &e)) == 1) {
        struct dv *again;
        if (dv_decode_delta_entry(p, n, off, sz, &again, &e) != ST_OK || !dv_equal(again, d))
            abort();
        dv_free(again);
        dv_free(d);
    }
    if (rc < 0 && (d != NULL || e.msg[0] == '\0'))
        abort();
}

static void inline_dv(const uint8_t *p, size_t n)
{
    if (n < 2)
        return;
    size_t size_in_bytes = p[0] | ((size_t)p[1] << 8);
    char *z = xstrndup((const char *)p + 2, n - 2);
    struct st_err e = {0};
    struct dv *d;
    if (dv_decode_delta_inline(z, size_in_bytes, &d, &e) == ST_OK) {
        struct buf b = BUF_INIT;
        size_t sz;
        struct dv *back;
        if (dv_encode_delta_inline(d, &b, &sz) != ST_OK ||
            dv_decode_delta_inline(buf_cstr(&b), sz, &back, &e) != ST_OK || !dv_equal(back, d))
            abort();
        dv_free(back);
        buf_free(&b);
        dv_free(d);
    }
    /* Z85 round trip of whatever decodes */
    struct buf raw = BUF_INIT, txt = BUF_INIT;
    if (z85_decode(z, strlen(z), &raw, &e) == ST_OK) {
        z85_encode(raw.data, raw.len, &txt);
        if (strcmp(buf_cstr(&txt), z) != 0)
            abort();
    }
    buf_free(&raw);
    buf_free(&txt);
    char *rel;
    if (delta_dv_uuid_path(z, NULL, &rel, &e) == ST_OK)
        free(rel);
    free(z);
}

static void descriptor(const uint8_t *p, size_t n)
{
    struct delta_dv_descriptor d;
    struct st_err e = {0};
    if (delta_dv_descriptor_parse((const char *)p, n, &d, &e) != ST_OK)
        return;
    if (d.storage_type == 'i') {
        struct dv *v;
        if (delta_dv_load(&d, "/nonexistent", NULL, &v, &e) == ST_OK)
            dv_free(v);
    }
    delta_dv_descriptor_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    switch (data[0] % 3) {
    case 0:
        delta_file(data + 1, size - 1);
        break;
    case 1:
        inline_dv(data + 1, size - 1);
        break;
    default:
        descriptor(data + 1, size - 1);
        break;
    }
    /* and the whole input as a DV file, as the seeds are */
    delta_file(data, size);
    return 0;
}
