/*
 * jdoc.c - strict JSON into an arena-allocated tree (see jdoc.h).
 *
 * One pass, no recursion: a lexer that reads the text as jansson's does
 * (same tokens, same look-ahead, same first error) and a parser whose open
 * containers are frames over one scratch stack of values. When a container
 * closes, its values are copied from the stack into the arena in one block
 * (an object's members are key/value pairs of adjacent values), so arrays
 * and objects are contiguous and every value is written twice at most.
 * Strings are decoded straight into the arena.
 *
 * Errors: the first one wins, as in jansson, and it is described by where
 * the reader stood (`epos`, bytes) and where the current token began
 * (`etok`): the token's text so far is the "near '...'" of the message, and
 * line and column are counted from the text once, at the end. One quirk of
 * jansson's reader is kept for exact positions: a NUL byte right after a
 * number or a literal is read as look-ahead, pushed back, and then lost
 * (`lost`): it never counts in positions and never starts a token.
 */
#include "common/jdoc.h"

#include <assert.h>
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/debug.h"
#include "common/hex.h"
#include "common/utf8.h"
#include "common/xalloc.h"

_Static_assert(sizeof(struct jdoc_member) == 2 * sizeof(struct jdoc_val),
               "an object's members are pairs of adjacent values");

/* ---- the arena ----------------------------------------------------------------- */

struct jdoc_chunk {
    struct jdoc_chunk *next;
    size_t cap;
    /* cap bytes follow */
};

struct jdoc {
    struct jdoc_val root;
    struct jdoc_chunk *chunks; /* newest first; the document lives in the oldest */
    char *cur, *end;           /* free space of the newest chunk */
    size_t grow;               /* the size of the next chunk */
};

#define ARENA_MIN 4096
#define ARENA_GROW_MAX ((size_t)64 << 20)

/* A new chunk of at least `need` bytes becomes the current one. */
static void arena_chunk(struct jdoc *d, size_t need)
{
    size_t cap = d->grow > need ? d->grow : need;
    if (cap > SIZE_MAX - sizeof(struct jdoc_chunk))
        abort();
    struct jdoc_chunk *c = xmalloc(sizeof *c + cap);
    c->next = d->chunks;
    c->cap = cap;
    d->chunks = c;
    d->cur = (char *)(c + 1);
    d->end = d->cur + cap;
    assert(((uintptr_t)d->cur & 7) == 0); /* malloc's alignment, and the header is 16 bytes */
    if (d->grow < ARENA_GROW_MAX)
        d->grow *= 2;
}

void *jdoc_alloc(struct jdoc *d, size_t n)
{
    size_t pad = (size_t)(-(uintptr_t)d->cur & 7);
    if ((size_t)(d->end - d->cur) < pad || (size_t)(d->end - d->cur) - pad < n) {
        if (n > SIZE_MAX / 2)
            abort(); /* no caller asks this much: sizes are bounded by the text */
        arena_chunk(d, n + 8);
        pad = (size_t)(-(uintptr_t)d->cur & 7);
    }
    char *p = d->cur + pad;
    assert(((uintptr_t)p & 7) == 0 && (size_t)(d->end - p) >= n); /* aligned, in the chunk */
    d->cur = p + n;
    return p;
}

/* A document whose first chunk holds `first` bytes (its own header included). */
static struct jdoc *doc_new(size_t first)
{
    assert(first >= ARENA_MIN);
    struct jdoc_chunk *c = xmalloc(sizeof *c + first);
    c->next = NULL;
    c->cap = first;
    struct jdoc *d = (struct jdoc *)(c + 1);
    memset(d, 0, sizeof *d);
    d->chunks = c;
    d->cur = (char *)(d + 1);
    d->end = (char *)(c + 1) + first;
    d->grow = first;
    assert(d->cur <= d->end);
    return d;
}

struct jdoc *jdoc_new(size_t hint)
{
    struct jdoc *d =
        doc_new((hint < SIZE_MAX / 2 - ARENA_MIN ? hint : SIZE_MAX / 2 - ARENA_MIN) + ARENA_MIN);
    d->root.type = JDOC_NULL;
    return d;
}

void jdoc_free(struct jdoc *d)
{
    if (d == NULL)
        return;
    struct jdoc_chunk *c = d->chunks; /* d lives in the last chunk of the list */
    while (c != NULL) {
        struct jdoc_chunk *next = c->next;
        free(c);
        c = next;
    }
}

const struct jdoc_val *jdoc_root(const struct jdoc *d)
{
    return &d->root;
}

const struct jdoc_val *jdoc_getn(const struct jdoc_val *obj, const char *key, size_t klen)
{
    if (!jdoc_is(obj, JDOC_OBJECT))
        return NULL;
    for (uint32_t i = 0; i < obj->n; i++) {
        const struct jdoc_member *m = &obj->u.mems[i];
        if (m->key.n == klen && memcmp(m->key.u.s, key, klen) == 0)
            return &m->val;
    }
    return NULL;
}

const struct jdoc_val *jdoc_get(const struct jdoc_val *obj, const char *key)
{
    return jdoc_getn(obj, key, strlen(key));
}

/* ---- process-wide state: the C locale for strtod, the key of the key hash -------- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static locale_t g_c_locale;
static uint64_t g_sipkey[2];

static void init_once(void)
{
    g_c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (getrandom(g_sipkey, sizeof g_sipkey, 0) != (ssize_t)sizeof g_sipkey) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g_sipkey[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
        g_sipkey[1] = (uint64_t)ts.tv_sec * 0xc2b2ae3d27d4eb4full ^ (uint64_t)(uintptr_t)&ts;
    }
}

static inline uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = rotl(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = rotl(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = rotl(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = rotl(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = rotl(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = rotl(v2, 32);                                                                         \
    } while (0)

/*
 * SipHash-1-3 of p[0..n) under the process's random key: keys of a request
 * body are chosen by the client, and a keyed hash keeps them from being
 * chosen to collide (only objects of more than KEYS_LINEAR members use it).
 */
static uint64_t key_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t v0 = g_sipkey[0] ^ 0x736f6d6570736575ull, v1 = g_sipkey[1] ^ 0x646f72616e646f6dull;
    uint64_t v2 = g_sipkey[0] ^ 0x6c7967656e657261ull, v3 = g_sipkey[1] ^ 0x7465646279746573ull;
    uint64_t last = (uint64_t)n << 56;
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t m = 0;
        for (int i = 0; i < 8; i++)
            m |= (uint64_t)b[i] << (8 * i);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    for (size_t i = 0; i < n; i++)
        last |= (uint64_t)b[i] << (8 * i);
    v3 ^= last;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- the reader ------------------------------------------------------------------- */

enum {
    T_INVALID = -1,
    T_EOF = 0,
    /* '{', '}', '[', ']', ':' and ',' are their own characters */
    T_STRING = 256,
    T_INT,
    T_REAL,
    T_TRUE,
    T_FALSE,
    T_NULL,
};

/* What rd() returns besides a byte. */
#define C_EOF (-1)
#define C_ERR (-2)

#define KEYS_LINEAR 16 /* objects up to this many members find duplicate keys by scanning */

struct frame {
    size_t start; /* first value of the container on the stack */
    bool obj;
    uint32_t *set; /* objects past KEYS_LINEAR members: member index + 1, 0 = empty */
    size_t setcap; /* a power of two */
};

struct jp {
    const unsigned char *s;
    size_t len;
    size_t p; /* where reading goes on */
    struct jdoc *d;
    unsigned max_depth;
    /* the current token: s[tok_start..tok_end) */
    int tok;
    size_t tok_start, tok_end;
    bool tnul; /* a string with U+0000 */
    /* values of the open containers, and the containers. The lexer writes a
       token's value into the free slot stk[top] (there always is one), so
       that keeping it is top++ (no copy of a value written a moment ago) */
    struct jdoc_val *stk;
    size_t top, cap;
    struct frame *fr;
    size_t nfr, frcap;
    /* offsets of the NUL bytes jansson's reader loses (see the file's comment) */
    size_t *lost;
    size_t nlost, lostcap;
    /* the first error */
    bool failed;
    bool utf8; /* a decoding error: jansson gives it no "near end of file" */
    size_t epos, etok;
    char emsg[JDOC_ERROR_TEXT];
};

__attribute__((format(printf, 3, 4))) static void fail(struct jp *j, size_t pos, const char *fmt,
                                                       ...)
{
    if (j->failed)
        return;
    j->failed = true;
    j->epos = pos;
    j->etok = j->tok_start < pos ? j->tok_start : pos;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->emsg, sizeof j->emsg, fmt, ap);
    va_end(ap);
}

/* A parser error about the current token. Returns false. */
static bool perr(struct jp *j, const char *msg)
{
    fail(j, j->tok_end, "%s", msg);
    return false;
}

static inline bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static inline bool is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static size_t utf8_put(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static void fail_utf8(struct jp *j, size_t q)
{
    fail(j, q, "unable to decode byte 0x%x", j->s[q]);
    j->utf8 = true;
}

/*
 * Read the character at q as jansson's reader does: C_EOF past the end,
 * C_ERR (and the error) for a byte that does not start valid UTF-8, else the
 * byte (a valid multi-byte sequence reads as its first byte).
 */
static int rd(struct jp *j, size_t q)
{
    if (q >= j->len)
        return C_EOF;
    unsigned c = j->s[q];
    if (c >= 0x80 && st_utf8_seq_len(j->s + q, j->len - q) == 0) {
        fail_utf8(j, q);
        return C_ERR;
    }
    return (int)c;
}

static void tok_at(struct jp *j, size_t end)
{
    j->p = j->tok_end = end;
}

/* A number or a literal ended at q where the reader saw `c`: a NUL byte there is lost. */
static void tok_lookahead(struct jp *j, size_t q, int c)
{
    tok_at(j, q);
    if (c != 0)
        return;
    if (j->nlost == j->lostcap) {
        j->lostcap = j->lostcap ? 2 * j->lostcap : 8;
        j->lost = xreallocarray(j->lost, j->lostcap, sizeof *j->lost);
    }
    j->lost[j->nlost++] = q;
    j->p = q + 1;
}

/* The free slot where the lexer puts the current token's value. */
static inline struct jdoc_val *slot(struct jp *j)
{
    return &j->stk[j->top];
}

/* Keep the value in the free slot; a new free slot follows. */
static inline void push_slot(struct jp *j)
{
    assert(j->top < j->cap);
    if (++j->top == j->cap) {
        j->cap *= 2;
        j->stk = xreallocarray(j->stk, j->cap, sizeof *j->stk);
    }
}

static inline void set_value(struct jp *j, enum jdoc_type t, bool b, uint32_t n, uint64_t bits)
{
    struct jdoc_val *v = slot(j);
    v->type = (uint8_t)t;
    v->b = b;
    v->n = n;
    memcpy(&v->u, &bits, sizeof bits);
}

static int lex_word(struct jp *j, size_t p)
{
    size_t q = p;
    while (q < j->len && is_alpha(j->s[q]))
        q++;
    int c = rd(j, q);
    if (c == C_ERR)
        return T_INVALID;
    tok_lookahead(j, q, c);
    const char *w = (const char *)j->s + p;
    size_t n = q - p;
    if (n == 4 && memcmp(w, "true", 4) == 0) {
        set_value(j, JDOC_BOOL, true, 0, 0);
        return T_TRUE;
    }
    if (n == 5 && memcmp(w, "false", 5) == 0) {
        set_value(j, JDOC_BOOL, false, 0, 0);
        return T_FALSE;
    }
    if (n == 4 && memcmp(w, "null", 4) == 0) {
        set_value(j, JDOC_NULL, false, 0, 0);
        return T_NULL;
    }
    return T_INVALID;
}

static int int_token(struct jp *j, size_t p, size_t q)
{
    const unsigned char *s = j->s;
    bool neg = s[p] == '-';
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    for (size_t i = p + neg; i < q; i++) {
        unsigned dg = s[i] - '0';
        if (v > (limit - dg) / 10) {
            fail(j, q, "%s", neg ? "too big negative integer" : "too big integer");
            return T_INVALID;
        }
        v = v * 10 + dg;
    }
    int64_t i = !neg ? (int64_t)v : v > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)v;
    uint64_t bits;
    memcpy(&bits, &i, sizeof bits);
    set_value(j, JDOC_INT, false, 0, bits);
    return T_INT;
}

/*
 * The value of a well-formed JSON number s[0..n) when it needs no more than
 * one correctly rounded operation on exact doubles (at most 19 significant
 * digits below 2^53, a power of ten within 1e22), else false: strtod's job.
 */
static bool fast_real(const unsigned char *s, size_t n, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = 0;
    bool neg = s[0] == '-';
    i += neg;
    uint64_t m = 0;
    int digits = 0;
    long scale = 0;
    for (; i < n && is_digit(s[i]); i++) {
        if (m == 0 && s[i] == '0')
            continue;
        if (++digits > 19)
            return false;
        m = m * 10 + (uint64_t)(s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && is_digit(s[i]); i++) {
            scale--;
            if (m == 0 && s[i] == '0')
                continue;
            if (++digits > 19)
                return false;
            m = m * 10 + (uint64_t)(s[i] - '0');
        }
    }
    if (i < n) { /* 'e' or 'E' */
        i++;
        bool eneg = s[i] == '-';
        if (s[i] == '+' || s[i] == '-')
            i++;
        long e = 0;
        for (; i < n; i++)
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        scale += eneg ? -e : e;
    }
    double v;
    if (m == 0) {
        v = 0.0;
    } else {
        if (m > ((uint64_t)1 << 53) || scale < -22 || scale > 22)
            return false;
        v = scale < 0 ? (double)m / p10[-scale] : (double)m * p10[scale];
    }
    *out = neg ? -v : v;
    return true;
#else
    (void)s, (void)n, (void)out;
    return false;
#endif
}

static int real_token(struct jp *j, size_t p, size_t q)
{
    double v;
    if (!fast_real(j->s + p, q - p, &v)) {
        char small[64];
        size_t n = q - p;
        char *t = n < sizeof small ? small : xmalloc(n + 1);
        memcpy(t, j->s + p, n);
        t[n] = '\0';
        errno = 0;
        v = g_c_locale != (locale_t)0 ? strtod_l(t, NULL, g_c_locale) : strtod(t, NULL);
        int e = errno;
        if (t != small)
            free(t);
        if ((v == HUGE_VAL || v == -HUGE_VAL) && e == ERANGE) {
            fail(j, q, "real number overflow");
            return T_INVALID;
        }
    }
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    set_value(j, JDOC_REAL, false, 0, bits);
    return T_REAL;
}

/* The end of the run of digits from q (ASCII: nothing there for rd() to check). */
static inline size_t digits(const struct jp *j, size_t q)
{
    while (q < j->len && is_digit(j->s[q]))
        q++;
    return q;
}

/* A number at s[p] ('-' or a digit), read as jansson's lex_scan_number does. */
static int lex_number(struct jp *j, size_t p)
{
    size_t q = p;
    int c = j->s[q];
    if (c == '-')
        c = rd(j, ++q);
    if (c == '0') {
        c = rd(j, ++q);
        if (is_digit(c)) { /* a leading zero: the token is "0" or "-0", and invalid */
            tok_at(j, q);
            return T_INVALID;
        }
    } else if (is_digit(c)) {
        q = digits(j, q + 1);
        c = rd(j, q);
    } else { /* '-' without a digit */
        tok_at(j, q);
        return T_INVALID;
    }
    if (c == C_ERR)
        return T_INVALID;
    if (c != '.' && c != 'e' && c != 'E') {
        tok_lookahead(j, q, c);
        return int_token(j, p, q);
    }
    if (c == '.') {
        c = rd(j, ++q);
        if (!is_digit(c)) {
            tok_at(j, q);
            return T_INVALID;
        }
        q = digits(j, q + 1);
        c = rd(j, q);
    }
    if (c == 'e' || c == 'E') {
        c = rd(j, ++q);
        if (c == '+' || c == '-')
            c = rd(j, ++q);
        if (!is_digit(c)) {
            tok_at(j, q);
            return T_INVALID;
        }
        q = digits(j, q + 1);
        c = rd(j, q);
    }
    if (c == C_ERR)
        return T_INVALID;
    tok_lookahead(j, q, c);
    return real_token(j, p, q);
}

/*
 * The bytes of w (little-endian) that are '"', '\\', below 0x20 or above
 * 0x7F, as their high bits. Above the first such byte there may be false
 * marks (borrows), but the lowest mark is always exact.
 */
static inline uint64_t special8(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, high = ones * 0x80;
    uint64_t xq = w ^ (ones * '"'), xb = w ^ (ones * '\\');
    return (((w - ones * 0x20) & ~w) | ((xq - ones) & ~xq) | ((xb - ones) & ~xb) | w) & high;
}

/*
 * Room for `need` more bytes after o for the string being decoded at
 * *base: when the chunk is full, the string so far moves to a new one.
 */
static char *str_room(struct jdoc *d, char **base, char *o, size_t need)
{
    if ((size_t)(d->end - o) >= need)
        return o;
    size_t used = (size_t)(o - *base);
    arena_chunk(d, 2 * used + need + 64);
    memcpy(d->cur, *base, used);
    *base = d->cur;
    assert((size_t)(d->end - (d->cur + used)) >= need);
    return d->cur + used;
}

/* Four hex digits at s[q..], read as jansson's reader does; false after the error. */
static bool hex4(struct jp *j, size_t q, uint32_t *v)
{
    *v = 0;
    for (size_t i = 0; i < 4; i++) {
        int c = rd(j, q + i);
        if (c == C_ERR)
            return false;
        int h = st_hex_value(c);
        if (h < 0) { /* the character is part of the token, the end of the text is not */
            fail(j, c == C_EOF ? j->len : q + i + 1, "invalid escape");
            return false;
        }
        *v = (*v << 4) | (uint32_t)h;
    }
    return true;
}

/* \uXXXX at s[q] (no error: the caller reads it again when this says no). */
static bool peek_u(const struct jp *j, size_t q, uint32_t *v)
{
    if (q + 6 > j->len || j->s[q] != '\\' || j->s[q + 1] != 'u')
        return false;
    *v = 0;
    for (size_t i = 2; i < 6; i++) {
        int h = st_hex_value(j->s[q + i]);
        if (h < 0)
            return false;
        *v = (*v << 4) | (uint32_t)h;
    }
    return true;
}

/*
 * A string at s[p] ('"'), decoded into the arena. jansson checks a string
 * in two passes, characters and escapes first, surrogate pairs after; the
 * first surrogate error is kept aside until the closing quote accordingly.
 */
static int lex_string(struct jp *j, size_t p)
{
    const unsigned char *s = j->s;
    size_t len = j->len, q = p + 1;
    struct jdoc *d = j->d;
    char *base = d->cur, *o = base;
    bool nul = false, pend = false, pair = false;
    uint32_t pv1 = 0, pv2 = 0;
    for (;;) {
        /* plain bytes 8 at a time, up to the first byte that needs a look */
        o = str_room(d, &base, o, 16);
        while (q + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + q, 8);
            memcpy(o, &w, 8); /* all 8 bytes: the room is there, only the plain ones count */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            w = __builtin_bswap64(w); /* the first byte in the low bits */
#endif
            uint64_t m = special8(w);
            if (m != 0) {
                size_t k = (size_t)__builtin_ctzll(m) >> 3;
                o += k;
                q += k;
                break;
            }
            o += 8;
            q += 8;
            o = str_room(d, &base, o, 16);
        }
        if (q >= len) {
            fail(j, len, "premature end of input");
            return T_INVALID;
        }
        unsigned c = s[q];
        if (c == '"')
            break;
        if (c >= 0x20 && c < 0x80 && c != '\\') {
            *o++ = (char)c;
            q++;
        } else if (c >= 0x80) {
            size_t n = st_utf8_seq_len(s + q, len - q);
            if (n == 0) {
                fail_utf8(j, q);
                return T_INVALID;
            }
            memcpy(o, s + q, n);
            o += n;
            q += n;
        } else if (c == '\n') {
            fail(j, q, "unexpected newline");
            return T_INVALID;
        } else if (c < 0x20) {
            fail(j, q, "control character 0x%x", c);
            return T_INVALID;
        } else { /* a backslash */
            int e = rd(j, q + 1);
            if (e == C_ERR)
                return T_INVALID;
            char out;
            switch (e) {
            case '"':
            case '\\':
            case '/':
                out = (char)e;
                break;
            case 'b':
                out = '\b';
                break;
            case 'f':
                out = '\f';
                break;
            case 'n':
                out = '\n';
                break;
            case 'r':
                out = '\r';
                break;
            case 't':
                out = '\t';
                break;
            case 'u': {
                uint32_t v, v2;
                if (!hex4(j, q + 2, &v))
                    return T_INVALID;
                q += 6;
                if (v >= 0xD800 && v <= 0xDBFF && !pend) {
                    if (!peek_u(j, q, &v2)) {
                        pend = true, pair = false, pv1 = v;
                    } else if (v2 >= 0xDC00 && v2 <= 0xDFFF) {
                        v = 0x10000 + ((v - 0xD800) << 10) + (v2 - 0xDC00);
                        q += 6;
                    } else {
                        pend = true, pair = true, pv1 = v, pv2 = v2;
                    }
                } else if (v >= 0xDC00 && v <= 0xDFFF && !pend) {
                    pend = true, pair = false, pv1 = v;
                }
                nul |= v == 0;
                o += utf8_put(o, v);
                continue;
            }
            default: /* the character after the backslash is part of the token */
                fail(j, e == C_EOF ? len : q + 2, "invalid escape");
                return T_INVALID;
            }
            *o++ = out;
            q += 2;
        }
    }
    q++; /* the closing quote */
    tok_at(j, q);
    if (pend) {
        if (pair)
            fail(j, q, "invalid Unicode '\\u%04X\\u%04X'", pv1, pv2);
        else
            fail(j, q, "invalid Unicode '\\u%04X'", pv1);
        return T_INVALID;
    }
    assert(o < d->end); /* str_room left the NUL its room */
    *o = '\0';
    d->cur = o + 1;
    uint64_t bits = (uint64_t)(uintptr_t)base;
    set_value(j, JDOC_STRING, false, (uint32_t)(o - base), bits);
    j->tnul = nul;
    return T_STRING;
}

/* The next token (jansson's lex_scan). */
static int lex(struct jp *j)
{
    const unsigned char *s = j->s;
    size_t p = j->p, len = j->len;
    while (p < len && (s[p] == ' ' || s[p] == '\n' || s[p] == '\t' || s[p] == '\r'))
        p++;
    j->tok_start = p;
    if (p >= len) {
        tok_at(j, p);
        return j->tok = T_EOF;
    }
    int c = s[p];
    switch (c) {
    case '{':
    case '}':
    case '[':
    case ']':
    case ':':
    case ',':
        tok_at(j, p + 1);
        return j->tok = c;
    case '"':
        return j->tok = lex_string(j, p);
    case '-':
        return j->tok = lex_number(j, p);
    default:
        break;
    }
    if (is_digit(c))
        return j->tok = lex_number(j, p);
    if (is_alpha(c))
        return j->tok = lex_word(j, p);
    if (c >= 0x80) { /* a character that starts no token, read whole */
        size_t n = st_utf8_seq_len(s + p, len - p);
        if (n == 0) {
            fail_utf8(j, p);
            return j->tok = T_INVALID;
        }
        tok_at(j, p + n);
        return j->tok = T_INVALID;
    }
    tok_at(j, p + 1); /* a NUL byte here reads as the end of the text in messages */
    return j->tok = T_INVALID;
}

/* ---- the parser --------------------------------------------------------------------- */

static void open_frame(struct jp *j, bool obj)
{
    if (j->nfr == j->frcap) {
        j->frcap = j->frcap ? 2 * j->frcap : 16;
        j->fr = xreallocarray(j->fr, j->frcap, sizeof *j->fr);
    }
    j->fr[j->nfr++] = (struct frame){.start = j->top, .obj = obj};
}

/* The innermost container is complete: its values move to the arena, and it becomes one value. */
static void close_frame(struct jp *j)
{
    assert(j->nfr > 0);
    struct frame *f = &j->fr[--j->nfr];
    assert(f->start <= j->top);
    size_t n = j->top - f->start;
    /* an object holds key/value pairs; every value took a byte of a text below 4 GiB */
    assert((!f->obj || n % 2 == 0) && n < UINT32_MAX);
    struct jdoc_val v = {.type = f->obj ? JDOC_OBJECT : JDOC_ARRAY};
    v.n = (uint32_t)(f->obj ? n / 2 : n);
    if (n > 0) {
        struct jdoc_val *a = jdoc_alloc(j->d, n * sizeof *a);
        memcpy(a, j->stk + f->start, n * sizeof *a);
        if (f->obj)
            v.u.mems = (const struct jdoc_member *)a;
        else
            v.u.elems = a;
    }
    free(f->set);
    j->top = f->start;
    *slot(j) = v;
    push_slot(j);
}

/* Add member index i (key k) to the frame's set; false when the key is there already. */
static bool set_add(struct jp *j, struct frame *f, size_t i, const struct jdoc_val *k)
{
    const struct jdoc_val *vals = j->stk + f->start;
    assert(f->setcap > 0 && (f->setcap & (f->setcap - 1)) == 0 && i < UINT32_MAX);
    size_t mask = f->setcap - 1;
    for (size_t h = key_hash(k->u.s, k->n) & mask;; h = (h + 1) & mask) {
        uint32_t e = f->set[h];
        if (e == 0) {
            f->set[h] = (uint32_t)i + 1;
            return true;
        }
        const struct jdoc_val *o = &vals[2 * (e - 1)];
        if (o->n == k->n && memcmp(o->u.s, k->u.s, k->n) == 0)
            return false;
    }
}

/* Whether the object being read has key k already (and if not, k is recorded). */
static bool key_seen(struct jp *j, struct frame *f, const struct jdoc_val *k)
{
    size_t nk = (j->top - f->start) / 2;
    const struct jdoc_val *vals = j->stk + f->start;
    if (nk < KEYS_LINEAR) {
        for (size_t i = 0; i < nk; i++) {
            const struct jdoc_val *o = &vals[2 * i];
            if (o->n == k->n && o->u.s[0] == k->u.s[0] && memcmp(o->u.s, k->u.s, k->n) == 0)
                return true;
        }
        return false;
    }
    if ((nk + 1) * 2 > f->setcap) { /* (re)build at most half full */
        free(f->set);
        f->setcap = 64;
        while (f->setcap < 4 * (nk + 1))
            f->setcap *= 2;
        f->set = xcalloc(f->setcap, sizeof *f->set);
        for (size_t i = 0; i < nk; i++)
            set_add(j, f, i, &vals[2 * i]);
    }
    assert((nk + 1) * 2 <= f->setcap); /* at most half full: every probe meets an empty slot */
    return !set_add(j, f, nk, k);
}

/* The current token starts a member: its key, the ':' and the token starting its value. */
static bool member_key(struct jp *j)
{
    assert(j->nfr > 0 && j->fr[j->nfr - 1].obj);
    if (j->tok != T_STRING)
        return perr(j, "string or '}' expected");
    if (j->tnul)
        return perr(j, "NUL byte in object key not supported");
    if (key_seen(j, &j->fr[j->nfr - 1], slot(j)))
        return perr(j, "duplicate object key");
    push_slot(j);
    if (lex(j) != ':')
        return j->failed ? false : perr(j, "':' expected");
    lex(j);
    return !j->failed;
}

/* jansson's parse_json, parse_value, parse_object and parse_array, without recursion. */
static bool parse(struct jp *j, unsigned flags)
{
    lex(j);
    if (j->failed)
        return false;
    if (!(flags & JDOC_ANY_ROOT) && j->tok != '[' && j->tok != '{')
        return perr(j, "'[' or '{' expected");
    for (;;) {
        /* a value starts at the current token */
        if (j->nfr + 1 > j->max_depth)
            return perr(j, "maximum parsing depth reached");
        switch (j->tok) {
        case T_STRING:
            if (j->tnul)
                return perr(j, "\\u0000 is not allowed without JSON_ALLOW_NUL");
            push_slot(j);
            break;
        case T_INT:
        case T_REAL:
        case T_TRUE:
        case T_FALSE:
        case T_NULL:
            push_slot(j);
            break;
        case '{':
            open_frame(j, true);
            if (lex(j) == '}') {
                close_frame(j);
                break;
            }
            if (j->failed || !member_key(j))
                return false;
            continue;
        case '[':
            open_frame(j, false);
            if (lex(j) == ']') {
                close_frame(j);
                break;
            }
            if (j->failed)
                return false;
            if (j->tok == T_EOF)
                return perr(j, "']' expected");
            continue;
        case T_INVALID:
            return perr(j, "invalid token");
        default:
            return perr(j, "unexpected token");
        }
        /* a value is complete: close the containers it completes, up to the next value */
        for (;;) {
            lex(j);
            if (j->failed)
                return false;
            if (j->nfr == 0) {
                if (j->tok != T_EOF)
                    return perr(j, "end of file expected");
                return true;
            }
            bool obj = j->fr[j->nfr - 1].obj;
            if (j->tok == ',') {
                lex(j);
                if (j->failed)
                    return false;
                if (obj && !member_key(j))
                    return false;
                if (!obj && j->tok == T_EOF)
                    return perr(j, "']' expected");
                break;
            }
            if (j->tok != (obj ? '}' : ']'))
                return perr(j, obj ? "'}' expected" : "']' expected");
            close_frame(j);
        }
    }
}

/* Write err->text, cut to its size as jansson cuts its messages. */
__attribute__((format(printf, 2, 3))) static void set_text(struct jdoc_error *err, const char *fmt,
                                                           ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
}

/* Line, column, position and text of the error, as jansson words them. */
static void describe(const struct jp *j, struct jdoc_error *err)
{
    const unsigned char *s = j->s;
    size_t epos = j->epos, nl = 0, line_start = 0, li = 0, lost_before = 0;
    for (const unsigned char *x = s; epos > 0 && (x = memchr(x, '\n', epos - (size_t)(x - s)));) {
        nl++;
        x++;
        line_start = (size_t)(x - s);
        if (line_start >= epos)
            break;
    }
    size_t col = 0;
    for (size_t i = line_start; i < epos; i++)
        col += (s[i] & 0xC0) != 0x80;
    for (; li < j->nlost && j->lost[li] < epos; li++) {
        lost_before++;
        col -= j->lost[li] >= line_start;
    }
    err->line = (int)(nl + 1);
    err->column = (int)col;
    err->position = epos - lost_before;
    const unsigned char *ctx = s + j->etok;
    size_t clen = epos - j->etok;
    if (clen > 0 && ctx[0] != '\0') {
        if (clen <= 20)
            set_text(err, "%s near '%.*s'", j->emsg, (int)clen, (const char *)ctx);
        else
            set_text(err, "%s", j->emsg);
    } else if (j->utf8) {
        set_text(err, "%s", j->emsg);
    } else {
        set_text(err, "%s near end of file", j->emsg);
    }
}

#ifndef NDEBUG
/* Whether p[0..n) lies inside one chunk of d's arena. */
static bool in_arena(const struct jdoc *d, const void *p, size_t n)
{
    const char *q = p;
    for (const struct jdoc_chunk *c = d->chunks; c != NULL; c = c->next) {
        const char *lo = (const char *)(c + 1), *hi = lo + c->cap;
        if (q >= lo && q <= hi && n <= (size_t)(hi - q))
            return true;
    }
    return false;
}

/*
 * What jdoc.h promises of a parsed tree, checked value by value (debug
 * builds; one pass, as long as the parse): every container and string lies
 * in the document's arena, 8-aligned where it holds values; a string is n
 * bytes without U+0000 and a NUL; a real is finite; object keys are strings.
 * Iterative: the tree may be as deep as the caller allowed.
 */
static void check_tree(const struct jdoc *d, const struct jdoc_val *root)
{
    struct span {
        const struct jdoc_val *v;
        size_t n;
    } *stk = xmalloc(16 * sizeof *stk);
    size_t top = 0, cap = 16;
    stk[top++] = (struct span){root, 1};
    while (top > 0) {
        struct span *sp = &stk[top - 1];
        if (sp->n == 0) {
            top--;
            continue;
        }
        const struct jdoc_val *v = sp->v++;
        sp->n--;
        switch ((enum jdoc_type)v->type) {
        case JDOC_NULL:
        case JDOC_BOOL:
        case JDOC_INT:
            assert(v->n == 0);
            break;
        case JDOC_REAL:
            assert(v->n == 0 && isfinite(v->u.d));
            break;
        case JDOC_STRING:
            assert(v->u.s != NULL && in_arena(d, v->u.s, (size_t)v->n + 1));
            assert(v->u.s[v->n] == '\0' && memchr(v->u.s, '\0', v->n) == NULL);
            break;
        case JDOC_ARRAY:
        case JDOC_OBJECT: {
            bool obj = v->type == JDOC_OBJECT;
            size_t nv = obj ? 2 * (size_t)v->n : v->n;
            if (nv == 0)
                break;
            const struct jdoc_val *a = obj ? &v->u.mems[0].key : v->u.elems;
            assert(((uintptr_t)a & 7) == 0 && in_arena(d, a, nv * sizeof *a));
            for (size_t i = 0; obj && i < v->n; i++)
                assert(v->u.mems[i].key.type == JDOC_STRING);
            if (top == cap) {
                cap *= 2;
                stk = xreallocarray(stk, cap, sizeof *stk);
            }
            stk[top++] = (struct span){a, nv};
            break;
        }
        default:
            assert(!"a value of no jdoc_type");
        }
    }
    free(stk);
}
#endif

/* Parse text into d's arena: the root into *root, or false with err. d is kept either way. */
static bool parse_in(struct jdoc *d, const void *text, size_t len, const struct jdoc_opts *opts,
                     struct jdoc_error *err, struct jdoc_val *root)
{
    assert(len < UINT32_MAX); /* the callers refuse longer texts */
    struct jp j = {
        .s = len > 0 ? text : (const unsigned char *)"",
        .len = len,
        .d = d,
        .max_depth = opts != NULL && opts->max_depth > 0 ? opts->max_depth : JDOC_DEPTH_DEFAULT,
        .cap = 64,
    };
    j.stk = xmalloc(j.cap * sizeof *j.stk);
    bool ok = parse(&j, opts != NULL ? opts->flags : 0);
    assert(!ok || (j.top == 1 && j.nfr == 0)); /* one value left: the root */
    if (ok)
        *root = j.stk[0];
    else if (err != NULL)
        describe(&j, err);
    for (size_t i = 0; i < j.nfr; i++)
        free(j.fr[i].set);
    free(j.fr);
    free(j.stk);
    free(j.lost);
    return ok;
}

/* The start of jdoc_parse and jdoc_parse_into: false (err filled) for a text too long. */
static bool parse_start(size_t len, struct jdoc_error *err)
{
    pthread_once(&g_once, init_once);
    if (err != NULL)
        memset(err, 0, sizeof *err);
    if (len < UINT32_MAX)
        return true;
    if (err != NULL) {
        err->line = 1;
        set_text(err, "the text is too long (%zu bytes, at most %u)", len, UINT32_MAX - 1);
    }
    return false;
}

struct jdoc *jdoc_parse(const void *text, size_t len, const struct jdoc_opts *opts,
                        struct jdoc_error *err)
{
    if (!parse_start(len, err))
        return NULL;
    struct jdoc *d = doc_new(len * 2 + ARENA_MIN); /* fits a typical tree for len bytes */
    if (!parse_in(d, text, len, opts, err, &d->root)) {
        jdoc_free(d);
        return NULL;
    }
    ST_DEBUG_CHECK(check_tree(d, &d->root));
    return d;
}

const struct jdoc_val *jdoc_parse_into(struct jdoc *d, const void *text, size_t len,
                                       const struct jdoc_opts *opts, struct jdoc_error *err)
{
    assert(d != NULL);
    if (!parse_start(len, err))
        return NULL;
    struct jdoc_val root;
    if (!parse_in(d, text, len, opts, err, &root))
        return NULL;
    struct jdoc_val *v = jdoc_alloc(d, sizeof *v);
    *v = root;
    ST_DEBUG_CHECK(check_tree(d, v));
    return v;
}
