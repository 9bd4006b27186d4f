/* keyenc.c - order-preserving key encoding. */
#include "keyenc.h"
#include "engine.h"

#include <string.h>

void key_encode_value(enum st_type type, const struct st_value *v, struct buf *out)
{
    uint8_t b[8];
    switch (type) {
    case ST_T_BOOLEAN:
        buf_put_u8(out, v->v.b ? 1 : 0);
        return;
    case ST_T_INT:
        st_u32be(b, (uint32_t)v->v.i ^ 0x80000000u);
        buf_append(out, b, 4);
        return;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        st_u64be(b, (uint64_t)v->v.l ^ 0x8000000000000000ull);
        buf_append(out, b, 8);
        return;
    case ST_T_DOUBLE: {
        double d = v->v.d;
        uint64_t bits;
        if (d == 0.0)
            d = 0.0; /* -0.0 == +0.0 */
        if (d != d)
            bits = 0x7ff8000000000000ull; /* one NaN, sorting after +inf */
        else
            memcpy(&bits, &d, 8);
        bits = (bits >> 63) ? ~bits : bits ^ 0x8000000000000000ull;
        st_u64be(b, bits);
        buf_append(out, b, 8);
        return;
    }
    case ST_T_STRING: {
        const uint8_t *p = (const uint8_t *)v->v.s.p;
        size_t start = 0;
        for (size_t i = 0; i < v->v.s.len; i++) {
            if (p[i] == 0) {
                buf_append(out, p + start, i - start);
                buf_put_u8(out, 0x00);
                buf_put_u8(out, 0xff);
                start = i + 1;
            }
        }
        buf_append(out, p + start, v->v.s.len - start);
        buf_put_u8(out, 0x00);
        buf_put_u8(out, 0x01);
        return;
    }
    }
}

void key_encode(const struct engine_table *t, const struct st_value *keyvals, struct buf *out)
{
    for (int i = 0; i < t->npk; i++)
        key_encode_value(t->cols[t->pk[i]].type, &keyvals[i], out);
}

void key_encode_row(const struct engine_table *t, const struct st_value *row, struct buf *out)
{
    for (int i = 0; i < t->npk; i++)
        key_encode_value(t->cols[t->pk[i]].type, &row[t->pk[i]], out);
}

static size_t value_len(enum st_type type, const struct st_value *v)
{
    if (v->null)
        return 0;
    if (type != ST_T_STRING)
        return st_type_width(type); /* fixed-width values encode to their width */
    size_t n = v->v.s.len + 2;      /* terminator 00 01 */
    const char *p = v->v.s.p, *end = p + v->v.s.len;
    while (p < end && (p = memchr(p, 0, (size_t)(end - p))) != NULL) {
        n++; /* 00 -> 00 FF */
        p++;
    }
    return n;
}

size_t key_encoded_len(const struct engine_table *t, const struct st_value *vals, bool row)
{
    size_t n = 0;
    for (int i = 0; i < t->npk; i++)
        n += value_len(t->cols[t->pk[i]].type, &vals[row ? t->pk[i] : i]);
    return n;
}

bool key_is_i8(const struct engine_table *t)
{
    if (t->npk != 1)
        return false;
    enum st_type ty = t->cols[t->pk[0]].type;
    return ty == ST_T_LONG || ty == ST_T_INT || ty == ST_T_TIMESTAMP;
}

int64_t key_i8(const uint8_t *enc, size_t len)
{
    if (len == 4)
        return (int32_t)(ld_u32be(enc) ^ 0x80000000u);
    return (int64_t)(ld_u64be(enc) ^ 0x8000000000000000ull);
}

const char *key_index_table(const struct engine_table *t)
{
    return key_is_i8(t) ? "strike.key_index_i8" : "strike.key_index";
}
