/* buf.c - a growable byte buffer. */
#include "buf.h"
#include "xalloc.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* What buf.h promises of every buffer between calls: len <= cap, and memory exactly when cap > 0.
 */
#define BUF_OK(b) assert((b)->len <= (b)->cap && ((b)->cap == 0) == ((b)->data == NULL))

void buf_init(struct buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_free(struct buf *b)
{
    BUF_OK(b);
    free(b->data);
    buf_init(b);
}

void buf_reset(struct buf *b)
{
    BUF_OK(b);
    b->len = 0;
}

void buf_reserve(struct buf *b, size_t extra)
{
    BUF_OK(b);
    if (extra > SIZE_MAX - b->len - 1)
        abort();
    size_t need = b->len + extra + 1; /* +1 keeps room for buf_cstr's NUL */
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
    assert(b->len + extra < b->cap); /* the bytes asked for and buf_cstr's NUL */
}

void buf_append(struct buf *b, const void *p, size_t n)
{
    assert(p != NULL || n == 0);
    if (n == 0)
        return;
    buf_reserve(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

bool buf_append_bounded(struct buf *b, const void *p, size_t n, size_t limit)
{
    BUF_OK(b);
    if (b->len > limit || n > limit - b->len)
        return false;
    buf_append(b, p, n);
    return true;
}

void buf_append_str(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    int m = vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    assert(m == n); /* the same format and arguments: the same length */
    (void)m;
    b->len += (size_t)n;
}

void buf_append_json_escaped(struct buf *b, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        buf_append(b, run, (size_t)(s - run));
        run = s + 1;
        switch (c) {
        case '"':
            buf_append_str(b, "\\\"");
            break;
        case '\\':
            buf_append_str(b, "\\\\");
            break;
        case '\n':
            buf_append_str(b, "\\n");
            break;
        case '\r':
            buf_append_str(b, "\\r");
            break;
        case '\t':
            buf_append_str(b, "\\t");
            break;
        case '\b':
            buf_append_str(b, "\\b");
            break;
        case '\f':
            buf_append_str(b, "\\f");
            break;
        default:
            buf_printf(b, "\\u%04x", c);
        }
    }
    buf_append(b, run, (size_t)(s - run));
}

uint8_t *buf_extend(struct buf *b, size_t n)
{
    buf_reserve(b, n);
    uint8_t *p = b->data + b->len;
    memset(p, 0, n);
    b->len += n;
    return p;
}

uint8_t *buf_detach(struct buf *b, size_t *len)
{
    buf_reserve(b, 0);
    b->data[b->len] = 0;
    uint8_t *p = b->data;
    if (len != NULL)
        *len = b->len;
    buf_init(b);
    return p;
}

const char *buf_cstr(struct buf *b)
{
    buf_reserve(b, 0);
    b->data[b->len] = 0;
    return (const char *)b->data;
}

void buf_put_u8(struct buf *b, uint8_t v)
{
    buf_append(b, &v, 1);
}

void buf_put_u16le(struct buf *b, uint16_t v)
{
    uint8_t t[2];
    st_u16le(t, v);
    buf_append(b, t, 2);
}

void buf_put_u32le(struct buf *b, uint32_t v)
{
    uint8_t t[4];
    st_u32le(t, v);
    buf_append(b, t, 4);
}

void buf_put_u64le(struct buf *b, uint64_t v)
{
    uint8_t t[8];
    st_u64le(t, v);
    buf_append(b, t, 8);
}

void buf_put_u32be(struct buf *b, uint32_t v)
{
    uint8_t t[4];
    st_u32be(t, v);
    buf_append(b, t, 4);
}
