/*
 * jdoc.h - a strict JSON (RFC 8259) parser into a read-only tree that lives
 * in one arena per document, freed in one call.
 *
 * Built for request bodies on the hot path (POST .../changes): one pass over
 * the text, no allocation per value, strings decoded once into the arena
 * (NUL-terminated, so keys serve as C strings) and never copied again.
 *
 * It accepts and refuses exactly what jansson 2.14's json_loadb() does with
 * JSON_REJECT_DUPLICATES (and, with JDOC_ANY_ROOT, JSON_DECODE_ANY), and
 * words its refusals the same way, with the same line, column and position,
 * so that the front ends answer malformed JSON alike whichever parser read
 * it (tests/fuzz/fuzz_jdoc.c cross-checks both on the same bytes):
 *
 *   - the text is UTF-8 (RFC 3629: no overlongs, no surrogates, nothing
 *     above U+10FFFF); escapes are exact, surrogates only in valid pairs;
 *     U+0000 is refused in every string ("\u0000 is not allowed without
 *     JSON_ALLOW_NUL", "NUL byte in object key not supported")
 *   - no comments, trailing commas, NaN/Infinity, leading zeros or '+'
 *   - integers are kept exact when they fit int64 and refused otherwise
 *     ("too big integer", "too big negative integer"); -0 is the integer 0;
 *     numbers with a fraction or an exponent are doubles, refused when
 *     they overflow ("real number overflow") and rounded to 0 when they
 *     underflow
 *   - duplicate object keys are refused ("duplicate object key")
 *   - without JDOC_ANY_ROOT the top level is an object or an array
 *
 * Two differences, both limits: nesting deeper than `max_depth` (default 64;
 * jansson's is 2048) is refused with jansson's "maximum parsing depth
 * reached", and texts of 4 GiB or more are refused.
 *
 * Messages read "<what> near '<text of the token so far>'" (or "near end of
 * file"); line and column count from 1 and 0 in characters, as jansson's.
 */
#ifndef STRIKE_JDOC_H
#define STRIKE_JDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jdoc_type {
    JDOC_NULL,
    JDOC_BOOL,
    JDOC_INT,    /* an integer without fraction or exponent, within int64 */
    JDOC_REAL,   /* any other number (finite) */
    JDOC_STRING, /* UTF-8 without U+0000 */
    JDOC_ARRAY,
    JDOC_OBJECT,
};

struct jdoc_member;

/* One value. Everything it points to lives in its document's arena. */
struct jdoc_val {
    uint8_t type; /* enum jdoc_type */
    bool b;       /* JDOC_BOOL */
    uint32_t n;   /* string: bytes (without the NUL); array: elements; object: members */
    union {
        int64_t i;                      /* JDOC_INT */
        double d;                       /* JDOC_REAL */
        const char *s;                  /* JDOC_STRING: n bytes and a NUL */
        const struct jdoc_val *elems;   /* JDOC_ARRAY: n values */
        const struct jdoc_member *mems; /* JDOC_OBJECT: n members, in document order */
    } u;
};

struct jdoc_member {
    struct jdoc_val key; /* JDOC_STRING, unique within its object */
    struct jdoc_val val;
};

#define JDOC_DEPTH_DEFAULT 64
#define JDOC_ERROR_TEXT 160 /* jansson's JSON_ERROR_TEXT_LENGTH: longer messages are cut */

enum jdoc_flags {
    JDOC_ANY_ROOT = 1, /* any value at the top level (jansson's JSON_DECODE_ANY) */
};

struct jdoc_opts {
    unsigned max_depth; /* values nested deeper are refused; 0: JDOC_DEPTH_DEFAULT */
    unsigned flags;     /* enum jdoc_flags */
};

struct jdoc_error {
    int line;        /* from 1 */
    int column;      /* characters before the error on its line */
    size_t position; /* bytes before the error */
    char text[JDOC_ERROR_TEXT];
};

struct jdoc;

/*
 * Parse text[0..len) (not NUL-terminated). Returns the document (caller
 * frees with jdoc_free), or NULL with `err` (may be NULL) filled in. `opts`
 * may be NULL (defaults). The text is not referenced after the call.
 */
struct jdoc *jdoc_parse(const void *text, size_t len, const struct jdoc_opts *opts,
                        struct jdoc_error *err);
/*
 * An empty document (its root is null) whose arena starts with room for
 * about `hint` bytes, for jdoc_parse_into and jdoc_alloc (caller frees with
 * jdoc_free).
 */
struct jdoc *jdoc_new(size_t hint);
/*
 * Parse text[0..len) as jdoc_parse does, into d's arena: many texts (the
 * lines of NDJSON, the elements of a batch) share one arena instead of a
 * document each. Returns the text's value, which lives until jdoc_free(d),
 * or NULL with `err` (may be NULL) filled in; d is not freed on failure
 * (what the failed parse took of its arena stays there until then).
 */
const struct jdoc_val *jdoc_parse_into(struct jdoc *d, const void *text, size_t len,
                                       const struct jdoc_opts *opts, struct jdoc_error *err);
/* Free the document and everything in it. NULL is a no-op. */
void jdoc_free(struct jdoc *d);
/* The top-level value (valid until jdoc_free). */
const struct jdoc_val *jdoc_root(const struct jdoc *d);
/*
 * `n` bytes (8-aligned, uninitialised) from the document's arena, freed with
 * it: for what a caller derives from the tree and needs as long as the tree.
 */
void *jdoc_alloc(struct jdoc *d, size_t n);

/* The member `key` of an object, or NULL (absent, or `obj` is not an object or NULL). */
const struct jdoc_val *jdoc_get(const struct jdoc_val *obj, const char *key);
const struct jdoc_val *jdoc_getn(const struct jdoc_val *obj, const char *key, size_t klen);

/* Accessors; all accept NULL. */
static inline bool jdoc_is(const struct jdoc_val *v, enum jdoc_type t)
{
    return v != NULL && v->type == t;
}

/* Elements of an array, members of an object, 0 for anything else. */
static inline size_t jdoc_size(const struct jdoc_val *v)
{
    return v != NULL && (v->type == JDOC_ARRAY || v->type == JDOC_OBJECT) ? v->n : 0;
}

/* Element i of an array, NULL when out of range or not an array. */
static inline const struct jdoc_val *jdoc_at(const struct jdoc_val *arr, size_t i)
{
    return jdoc_is(arr, JDOC_ARRAY) && i < arr->n ? &arr->u.elems[i] : NULL;
}

/* Member i of an object in document order, NULL when out of range or not an object. */
static inline const struct jdoc_member *jdoc_member(const struct jdoc_val *obj, size_t i)
{
    return jdoc_is(obj, JDOC_OBJECT) && i < obj->n ? &obj->u.mems[i] : NULL;
}

/* A string's bytes (NUL-terminated) and length, or NULL when not a string. */
static inline const char *jdoc_str(const struct jdoc_val *v, size_t *len)
{
    if (!jdoc_is(v, JDOC_STRING))
        return NULL;
    if (len != NULL)
        *len = v->n;
    return v->u.s;
}

/* An integer's value; 0 for anything else. */
static inline int64_t jdoc_int(const struct jdoc_val *v)
{
    return jdoc_is(v, JDOC_INT) ? v->u.i : 0;
}

/* A real's value; 0.0 for anything else (integers included). */
static inline double jdoc_real(const struct jdoc_val *v)
{
    return jdoc_is(v, JDOC_REAL) ? v->u.d : 0.0;
}

/* True only for `true`. */
static inline bool jdoc_true(const struct jdoc_val *v)
{
    return jdoc_is(v, JDOC_BOOL) && v->b;
}

#endif
