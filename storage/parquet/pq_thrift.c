/*
 * pq_thrift.c - the Thrift compact protocol, as Parquet uses it for its
 * footer (FileMetaData) and page headers: a bounds-checked reader over
 * untrusted bytes and a writer into a buffer.
 *
 * Wire format (Thrift's compact protocol spec): a struct is a sequence of
 * fields ended by a 0 byte; a field header is one byte (id delta << 4 | type)
 * when the id grows by 1..15, else the type byte and a zigzag varint id.
 * Integers are zigzag ULEB128, binary is a ULEB128 length and the bytes, a
 * list is (size << 4 | element type) or 0xF0 | type and a varint size. Bool
 * fields carry their value in the type (1 true, 2 false); bool list elements
 * are one byte.
 */
#include "pq_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void pq__tr_init(struct pq__tr *t, const uint8_t *p, size_t n, uint64_t base, const char *what,
                 struct st_err *err)
{
    assert(p != NULL || n == 0);
    t->start = p;
    t->p = p;
    t->end = p + n;
    t->base = base;
    t->what = what;
    t->depth = 0;
    t->err = err;
}

int pq__tr_fail(struct pq__tr *t, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_errf(t->err, ST_ECORRUPT, "%s: %s at byte offset %llu", t->what, msg,
                   (unsigned long long)(t->base + (uint64_t)(t->p - t->start)));
}

static int uvarint(struct pq__tr *t, uint64_t *v)
{
    if (!pq__get_uvarint(&t->p, t->end, v))
        return pq__tr_fail(t, "truncated or overlong varint");
    return ST_OK;
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int pq__tr_field(struct pq__tr *t, int16_t *last_id, int *type, int16_t *id)
{
    if (t->p >= t->end)
        return pq__tr_fail(t, "truncated struct (no stop byte)");
    uint8_t b = *t->p++;
    if (b == 0) {
        *type = PQ_TT_STOP;
        *id = 0;
        return ST_OK;
    }
    int ty = b & 0x0f;
    int delta = b >> 4;
    if (ty > PQ_TT_UUID)
        return pq__tr_fail(t, "unknown field type %d", ty);
    int32_t fid;
    if (delta != 0) {
        fid = (int32_t)*last_id + delta;
    } else {
        uint64_t z;
        int rc = uvarint(t, &z);
        if (rc != ST_OK)
            return rc;
        int64_t s = unzigzag(z);
        if (s < INT16_MIN || s > INT16_MAX)
            return pq__tr_fail(t, "field id %lld out of range", (long long)s);
        fid = (int32_t)s;
    }
    if (fid > INT16_MAX)
        return pq__tr_fail(t, "field id %ld out of range", (long)fid);
    *type = ty;
    *id = (int16_t)fid;
    *last_id = (int16_t)fid;
    return ST_OK;
}

int pq__tr_i64(struct pq__tr *t, int type, int64_t *v)
{
    if (type == PQ_TT_I8) {
        if (t->p >= t->end)
            return pq__tr_fail(t, "truncated i8");
        *v = (int8_t)*t->p++;
        return ST_OK;
    }
    if (type != PQ_TT_I16 && type != PQ_TT_I32 && type != PQ_TT_I64)
        return pq__tr_fail(t, "expected an integer, found wire type %d", type);
    uint64_t z;
    int rc = uvarint(t, &z);
    if (rc != ST_OK)
        return rc;
    *v = unzigzag(z);
    return ST_OK;
}

int pq__tr_i32(struct pq__tr *t, int type, int32_t *v)
{
    int64_t x = 0;
    int rc = pq__tr_i64(t, type, &x);
    if (rc != ST_OK)
        return rc;
    if (x < INT32_MIN || x > INT32_MAX)
        return pq__tr_fail(t, "i32 value %lld out of range", (long long)x);
    *v = (int32_t)x;
    return ST_OK;
}

int pq__tr_bool(struct pq__tr *t, int type, bool *v)
{
    if (type == PQ_TT_TRUE) {
        *v = true;
        return ST_OK;
    }
    if (type == PQ_TT_FALSE) {
        *v = false;
        return ST_OK;
    }
    return pq__tr_fail(t, "expected a bool, found wire type %d", type);
}

int pq__tr_elem_bool(struct pq__tr *t, bool *v)
{
    if (t->p >= t->end)
        return pq__tr_fail(t, "truncated bool");
    uint8_t b = *t->p++;
    /* The spec says 1/0; some writers use the field encoding 1/2. */
    if (b > 2)
        return pq__tr_fail(t, "bad bool element %u", b);
    *v = b == 1;
    return ST_OK;
}

int pq__tr_binary(struct pq__tr *t, int type, const uint8_t **p, uint32_t *n)
{
    if (type != PQ_TT_BINARY)
        return pq__tr_fail(t, "expected binary, found wire type %d", type);
    uint64_t len;
    int rc = uvarint(t, &len);
    if (rc != ST_OK)
        return rc;
    if (len > (uint64_t)(t->end - t->p))
        return pq__tr_fail(t, "binary of %llu bytes runs past the end (%zu left)",
                           (unsigned long long)len, (size_t)(t->end - t->p));
    *p = t->p;
    *n = (uint32_t)len;
    t->p += len;
    assert(t->p <= t->end);
    return ST_OK;
}

int pq__tr_list(struct pq__tr *t, int type, int *etype, uint32_t *n)
{
    if (type != PQ_TT_LIST && type != PQ_TT_SET)
        return pq__tr_fail(t, "expected a list, found wire type %d", type);
    if (t->p >= t->end)
        return pq__tr_fail(t, "truncated list header");
    uint8_t b = *t->p++;
    uint64_t size = b >> 4;
    *etype = b & 0x0f;
    if (size == 15) {
        int rc = uvarint(t, &size);
        if (rc != ST_OK)
            return rc;
    }
    if (*etype == PQ_TT_STOP || *etype > PQ_TT_UUID)
        return pq__tr_fail(t, "bad list element type %d", *etype);
    /* Every element takes at least one byte. */
    if (size > (uint64_t)(t->end - t->p))
        return pq__tr_fail(t, "list of %llu elements cannot fit in %zu bytes",
                           (unsigned long long)size, (size_t)(t->end - t->p));
    *n = (uint32_t)size;
    return ST_OK;
}

int pq__tr_struct_begin(struct pq__tr *t, int type)
{
    if (type != PQ_TT_STRUCT)
        return pq__tr_fail(t, "expected a struct, found wire type %d", type);
    if (++t->depth > PQ_THRIFT_DEPTH_MAX)
        return pq__tr_fail(t, "structs nested deeper than %d", PQ_THRIFT_DEPTH_MAX);
    return ST_OK;
}

void pq__tr_struct_end(struct pq__tr *t)
{
    assert(t->depth > 0); /* a pq__tr_struct_begin that succeeded */
    t->depth--;
}

int pq__tr_skip_struct_rest(struct pq__tr *t, int16_t *last_id)
{
    for (;;) {
        int ty = 0;
        int16_t id = 0;
        int rc = pq__tr_field(t, last_id, &ty, &id);
        if (rc != ST_OK)
            return rc;
        if (ty == PQ_TT_STOP)
            return ST_OK;
        rc = pq__tr_skip(t, ty);
        if (rc != ST_OK)
            return rc;
    }
}

static int skip_elem(struct pq__tr *t, int etype)
{
    if (etype == PQ_TT_TRUE || etype == PQ_TT_FALSE) {
        bool b;
        return pq__tr_elem_bool(t, &b);
    }
    return pq__tr_skip(t, etype);
}

int pq__tr_skip(struct pq__tr *t, int type)
{
    switch (type) {
    case PQ_TT_TRUE:
    case PQ_TT_FALSE:
        return ST_OK;
    case PQ_TT_I8:
    case PQ_TT_I16:
    case PQ_TT_I32:
    case PQ_TT_I64: {
        int64_t v;
        return pq__tr_i64(t, type, &v);
    }
    case PQ_TT_DOUBLE:
        if (t->end - t->p < 8)
            return pq__tr_fail(t, "truncated double");
        t->p += 8;
        return ST_OK;
    case PQ_TT_UUID:
        if (t->end - t->p < 16)
            return pq__tr_fail(t, "truncated uuid");
        t->p += 16;
        return ST_OK;
    case PQ_TT_BINARY: {
        const uint8_t *p;
        uint32_t n = 0;
        return pq__tr_binary(t, type, &p, &n);
    }
    case PQ_TT_LIST:
    case PQ_TT_SET: {
        int et = 0;
        uint32_t n = 0;
        int rc = pq__tr_list(t, type, &et, &n);
        if (rc != ST_OK)
            return rc;
        if (++t->depth > PQ_THRIFT_DEPTH_MAX)
            return pq__tr_fail(t, "values nested deeper than %d", PQ_THRIFT_DEPTH_MAX);
        for (uint32_t i = 0; i < n && rc == ST_OK; i++)
            rc = skip_elem(t, et);
        t->depth--;
        return rc;
    }
    case PQ_TT_MAP: {
        uint64_t n;
        int rc = uvarint(t, &n);
        if (rc != ST_OK)
            return rc;
        if (n == 0)
            return ST_OK;
        if (t->p >= t->end)
            return pq__tr_fail(t, "truncated map header");
        uint8_t kv = *t->p++;
        int kt = kv >> 4, vt = kv & 0x0f;
        if (kt == 0 || kt > PQ_TT_UUID || vt == 0 || vt > PQ_TT_UUID)
            return pq__tr_fail(t, "bad map element types");
        if (n > (uint64_t)(t->end - t->p) / 2)
            return pq__tr_fail(t, "map of %llu entries cannot fit", (unsigned long long)n);
        if (++t->depth > PQ_THRIFT_DEPTH_MAX)
            return pq__tr_fail(t, "values nested deeper than %d", PQ_THRIFT_DEPTH_MAX);
        for (uint64_t i = 0; i < n && rc == ST_OK; i++) {
            rc = skip_elem(t, kt);
            if (rc == ST_OK)
                rc = skip_elem(t, vt);
        }
        t->depth--;
        return rc;
    }
    case PQ_TT_STRUCT: {
        int rc = pq__tr_struct_begin(t, type);
        if (rc != ST_OK)
            return rc;
        int16_t last = 0;
        rc = pq__tr_skip_struct_rest(t, &last);
        pq__tr_struct_end(t);
        return rc;
    }
    default:
        return pq__tr_fail(t, "cannot skip wire type %d", type);
    }
}

/* ---- writer ---- */

void pq__put_uvarint(struct buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    buf_append(b, tmp, n);
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void pq__tw_init(struct pq__tw *w, struct buf *b)
{
    w->b = b;
    w->depth = 0;
    w->last[0] = 0;
}

static void field_header(struct pq__tw *w, int16_t id, int type)
{
    assert(type > PQ_TT_STOP && type <= PQ_TT_UUID);
    assert(w->depth >= 0 && w->depth < PQ_THRIFT_DEPTH_MAX);
    int16_t last = w->last[w->depth];
    int delta = id - last;
    if (delta > 0 && delta <= 15) {
        buf_put_u8(w->b, (uint8_t)(delta << 4 | type));
    } else {
        buf_put_u8(w->b, (uint8_t)type);
        pq__put_uvarint(w->b, zigzag(id));
    }
    w->last[w->depth] = id;
}

void pq__tw_i32(struct pq__tw *w, int16_t id, int32_t v)
{
    field_header(w, id, PQ_TT_I32);
    pq__put_uvarint(w->b, zigzag(v));
}

void pq__tw_i16(struct pq__tw *w, int16_t id, int16_t v)
{
    field_header(w, id, PQ_TT_I16);
    pq__put_uvarint(w->b, zigzag(v));
}

void pq__tw_i64(struct pq__tw *w, int16_t id, int64_t v)
{
    field_header(w, id, PQ_TT_I64);
    pq__put_uvarint(w->b, zigzag(v));
}

void pq__tw_bool(struct pq__tw *w, int16_t id, bool v)
{
    field_header(w, id, v ? PQ_TT_TRUE : PQ_TT_FALSE);
}

void pq__tw_binary(struct pq__tw *w, int16_t id, const void *p, size_t n)
{
    field_header(w, id, PQ_TT_BINARY);
    pq__tw_elem_binary(w, p, n);
}

static void push(struct pq__tw *w)
{
    /* Our own structures nest a few levels; overflowing is a bug. */
    if (w->depth + 1 >= PQ_THRIFT_DEPTH_MAX)
        __builtin_trap();
    w->last[++w->depth] = 0;
}

void pq__tw_struct_begin(struct pq__tw *w, int16_t id)
{
    field_header(w, id, PQ_TT_STRUCT);
    push(w);
}

void pq__tw_struct_end(struct pq__tw *w)
{
    assert(w->depth > 0); /* a struct was begun */
    buf_put_u8(w->b, 0);
    w->depth--;
}

void pq__tw_list_begin(struct pq__tw *w, int16_t id, int etype, uint32_t n)
{
    assert(etype > PQ_TT_STOP && etype <= PQ_TT_UUID);
    field_header(w, id, PQ_TT_LIST);
    if (n < 15) {
        buf_put_u8(w->b, (uint8_t)(n << 4 | (uint32_t)etype));
    } else {
        buf_put_u8(w->b, (uint8_t)(0xf0 | etype));
        pq__put_uvarint(w->b, n);
    }
}

void pq__tw_elem_i32(struct pq__tw *w, int32_t v)
{
    pq__put_uvarint(w->b, zigzag(v));
}

void pq__tw_elem_binary(struct pq__tw *w, const void *p, size_t n)
{
    pq__put_uvarint(w->b, n);
    buf_append(w->b, p, n);
}

void pq__tw_elem_struct_begin(struct pq__tw *w)
{
    push(w);
}

void pq__tw_root_begin(struct pq__tw *w)
{
    w->depth = 0;
    w->last[0] = 0;
}

void pq__tw_root_end(struct pq__tw *w)
{
    assert(w->depth == 0); /* every struct begun was ended */
    buf_put_u8(w->b, 0);
}
