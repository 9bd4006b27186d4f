/*
 * buf.h - a growable byte buffer, and little/big-endian load and store.
 *
 * `struct buf` owns its bytes. Appends never fail (they abort on OOM), so
 * callers that fill a buffer from the network must check their own bound
 * first; buf_append_bounded() does that for the common case.
 */
#ifndef STRIKE_BUF_H
#define STRIKE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct buf {
    uint8_t *data;
    size_t len;
    size_t cap;
};

#define BUF_INIT                                                                                   \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

void buf_init(struct buf *b);
void buf_free(struct buf *b);                  /* frees the bytes; b is reusable */
void buf_reset(struct buf *b);                 /* len = 0, keeps the memory */
void buf_reserve(struct buf *b, size_t extra); /* room for `extra` more bytes */
void buf_append(struct buf *b, const void *p, size_t n);
/* Append unless the result would pass `limit` bytes; then return false. */
bool buf_append_bounded(struct buf *b, const void *p, size_t n, size_t limit);
void buf_append_str(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s escaped as the inside of a JSON string (RFC 8259: `"` and `\\` escaped, control
   characters as \n, \t, ... or \u00XX; other bytes as they are), without the quotes. */
void buf_append_json_escaped(struct buf *b, const char *s);
/* Append n zero bytes and return a pointer to them (valid until the next append). */
uint8_t *buf_extend(struct buf *b, size_t n);
/* Take ownership of the bytes (NUL-terminated past len); b becomes empty. */
uint8_t *buf_detach(struct buf *b, size_t *len);
/* Ensure data[len] == '\0' without changing len, and return data as a string. */
const char *buf_cstr(struct buf *b);

void buf_put_u8(struct buf *b, uint8_t v);
void buf_put_u16le(struct buf *b, uint16_t v);
void buf_put_u32le(struct buf *b, uint32_t v);
void buf_put_u64le(struct buf *b, uint64_t v);
void buf_put_u32be(struct buf *b, uint32_t v);

/* Compare two byte strings in memcmp order, the shorter first on a tie: -1, 0 or 1. */
static inline int st_bytes_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c != 0)
        return c < 0 ? -1 : 1;
    return (alen > blen) - (alen < blen);
}

static inline uint16_t ld_u16le(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t ld_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t ld_u64le(const uint8_t *p)
{
    return (uint64_t)ld_u32le(p) | ((uint64_t)ld_u32le(p + 4) << 32);
}
static inline uint32_t ld_u32be(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline uint64_t ld_u64be(const uint8_t *p)
{
    return ((uint64_t)ld_u32be(p) << 32) | (uint64_t)ld_u32be(p + 4);
}
static inline void st_u16le(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void st_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void st_u64le(uint8_t *p, uint64_t v)
{
    st_u32le(p, (uint32_t)v);
    st_u32le(p + 4, (uint32_t)(v >> 32));
}
static inline void st_u32be(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void st_u64be(uint8_t *p, uint64_t v)
{
    st_u32be(p, (uint32_t)(v >> 32));
    st_u32be(p + 4, (uint32_t)v);
}

#endif
