/*
 * dv_set.c - the in-memory deletion vector: buckets of CRoaring 32-bit
 * bitmaps keyed by the high 32 bits of a position; iteration and mask fill
 * at container level.
 */
#include "dv_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* The container walk reads 0.2.x's roaring_array_t and container structs. */
_Static_assert(ROARING_VERSION_MAJOR == 0 && ROARING_VERSION_MINOR == 2,
               "dv/ reads CRoaring 0.2.x internals; check dv_set.c and dv_roaring.c");

static roaring_bitmap_t *bitmap_new(void)
{
    roaring_bitmap_t *bm = roaring_bitmap_create();
    if (bm == NULL)
        abort(); /* out of memory, as xmalloc */
    return bm;
}

struct dv *dv_new(void)
{
    return xcalloc(1, sizeof(struct dv));
}

void dv_free(struct dv *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->n; i++)
        roaring_bitmap_free(d->b[i].bm);
    free(d->b);
    free(d);
}

struct dv *dv_clone(const struct dv *d)
{
    struct dv *c = dv_new();
    if (d->n > 0) {
        c->b = xreallocarray(NULL, d->n, sizeof *c->b);
        c->cap = d->n;
    }
    for (size_t i = 0; i < d->n; i++) {
        roaring_bitmap_t *bm = roaring_bitmap_copy(d->b[i].bm);
        if (bm == NULL)
            abort();
        c->b[i].key = d->b[i].key;
        c->b[i].bm = bm;
        c->n++;
    }
    ST_DEBUG_CHECK(dv__check(c));
    return c;
}

/* Index of the first bucket whose key is >= key. */
static size_t lower_bound(const struct dv *d, uint32_t key)
{
    assert(d->n <= d->cap && (d->n == 0 || d->b != NULL));
    if (d->n > 0 && d->b[d->n - 1].key < key)
        return d->n;
    size_t lo = 0, hi = d->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->b[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const roaring_bitmap_t *find_bucket(const struct dv *d, uint32_t key)
{
    size_t i = lower_bound(d, key);
    return i < d->n && d->b[i].key == key ? d->b[i].bm : NULL;
}

static void reserve(struct dv *d, size_t extra)
{
    if (d->n + extra <= d->cap)
        return;
    size_t cap = d->cap ? d->cap * 2 : 4;
    while (cap < d->n + extra)
        cap *= 2;
    d->b = xreallocarray(d->b, cap, sizeof *d->b);
    d->cap = cap;
    assert(d->n + extra <= d->cap);
}

static roaring_bitmap_t *get_or_add(struct dv *d, uint32_t key)
{
    size_t i = lower_bound(d, key);
    if (i < d->n && d->b[i].key == key)
        return d->b[i].bm;
    reserve(d, 1);
    memmove(d->b + i + 1, d->b + i, (d->n - i) * sizeof *d->b);
    d->b[i].key = key;
    d->b[i].bm = bitmap_new();
    d->n++;
    /* keys stay strictly ascending around the new bucket, which the caller fills at once */
    assert((i == 0 || d->b[i - 1].key < key) && (i + 1 == d->n || key < d->b[i + 1].key));
    return d->b[i].bm;
}

void dv__push_bucket(struct dv *d, uint32_t key, roaring_bitmap_t *bm)
{
    /* decoders push what they validated: ascending keys, non-empty bitmaps */
    assert(d->n == 0 || d->b[d->n - 1].key < key);
    assert(bm != NULL && !roaring_bitmap_is_empty(bm));
    reserve(d, 1);
    d->b[d->n].key = key;
    d->b[d->n].bm = bm;
    d->n++;
}

void dv_add(struct dv *d, uint64_t pos)
{
    roaring_bitmap_add(get_or_add(d, (uint32_t)(pos >> 32)), (uint32_t)pos);
}

void dv_add_many(struct dv *d, const uint64_t *pos, size_t n)
{
    uint32_t low[1024];
    size_t i = 0;
    while (i < n) {
        uint32_t key = (uint32_t)(pos[i] >> 32);
        roaring_bitmap_t *bm = get_or_add(d, key);
        size_t k = 0;
        while (i < n && k < 1024 && (uint32_t)(pos[i] >> 32) == key)
            low[k++] = (uint32_t)pos[i++];
        roaring_bitmap_add_many(bm, k, low);
    }
}

void dv_add_range(struct dv *d, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return;
    uint64_t last = hi - 1;
    uint32_t first_key = (uint32_t)(lo >> 32), last_key = (uint32_t)(last >> 32);
    for (uint32_t key = first_key;; key++) {
        uint32_t a = key == first_key ? (uint32_t)lo : 0;
        uint32_t b = key == last_key ? (uint32_t)last : UINT32_MAX;
        roaring_bitmap_add_range_closed(get_or_add(d, key), a, b);
        if (key == last_key)
            break;
    }
}

bool dv_contains(const struct dv *d, uint64_t pos)
{
    const roaring_bitmap_t *bm = find_bucket(d, (uint32_t)(pos >> 32));
    return bm != NULL && roaring_bitmap_contains(bm, (uint32_t)pos);
}

uint64_t dv_cardinality(const struct dv *d)
{
    uint64_t c = 0;
    for (size_t i = 0; i < d->n; i++)
        c += roaring_bitmap_get_cardinality(d->b[i].bm);
    return c;
}

bool dv_is_empty(const struct dv *d)
{
    return d->n == 0;
}

bool dv_max(const struct dv *d, uint64_t *out)
{
    if (d->n == 0)
        return false;
    const struct dv_bucket *b = &d->b[d->n - 1];
    assert(!roaring_bitmap_is_empty(b->bm)); /* else its maximum would be 0, a wrong answer */
    *out = ((uint64_t)b->key << 32) | roaring_bitmap_maximum(b->bm);
    return true;
}

bool dv_min(const struct dv *d, uint64_t *out)
{
    if (d->n == 0)
        return false;
    assert(!roaring_bitmap_is_empty(d->b[0].bm));
    *out = ((uint64_t)d->b[0].key << 32) | roaring_bitmap_minimum(d->b[0].bm);
    return true;
}

/* Cardinality of one container. */
static uint64_t cont_card(const struct dv__cont *c)
{
    if (c->type == ARRAY_CONTAINER_TYPE_CODE)
        return (uint64_t)((const array_container_t *)c->c)->cardinality;
    if (c->type == BITSET_CONTAINER_TYPE_CODE) {
        const bitset_container_t *b = c->c;
        if (b->cardinality >= 0)
            return (uint64_t)b->cardinality;
        return dv__popcount((const uint8_t *)b->array, 1024); /* unknown (lazy ops) */
    }
    const run_container_t *r = c->c;
    uint64_t n = 0;
    for (int32_t i = 0; i < r->n_runs; i++)
        n += (uint64_t)r->runs[i].length + 1;
    return n;
}

/* Values <= v in one container. */
static uint64_t cont_rank(const struct dv__cont *c, uint32_t v)
{
    if (c->type == ARRAY_CONTAINER_TYPE_CODE) {
        const array_container_t *a = c->c;
        int32_t lo = 0, hi = a->cardinality;
        while (lo < hi) {
            int32_t mid = lo + (hi - lo) / 2;
            if (a->array[mid] <= v)
                lo = mid + 1;
            else
                hi = mid;
        }
        return (uint64_t)lo;
    }
    if (c->type == RUN_CONTAINER_TYPE_CODE) {
        const run_container_t *r = c->c;
        uint64_t n = 0;
        for (int32_t i = 0; i < r->n_runs && r->runs[i].value <= v; i++) {
            uint32_t e = (uint32_t)r->runs[i].value + r->runs[i].length;
            n += (e < v ? e : v) - r->runs[i].value + 1;
        }
        return n;
    }
    const uint64_t *w = ((const bitset_container_t *)c->c)->array;
    uint64_t last = w[v / 64];
    if (v % 64 != 63)
        last &= (2ull << (v % 64)) - 1;
    return dv__popcount((const uint8_t *)w, v / 64) + (uint64_t)__builtin_popcountll(last);
}

uint64_t dv_rank(const struct dv *d, uint64_t pos)
{
    uint32_t key = (uint32_t)(pos >> 32), low = (uint32_t)pos;
    uint64_t r = 0;
    for (size_t i = 0; i < d->n && d->b[i].key <= key; i++) {
        const roaring_array_t *ra = &d->b[i].bm->high_low_container;
        for (int32_t k = 0; k < ra->size; k++) {
            struct dv__cont c;
            if (d->b[i].key == key && ra->keys[k] > (low >> 16))
                break;
            dv__container(d->b[i].bm, k, &c);
            if (d->b[i].key == key && ra->keys[k] == (low >> 16))
                r += cont_rank(&c, low & 0xFFFF);
            else
                r += cont_card(&c);
        }
    }
    return r;
}

void dv_rank_many(const struct dv *d, const uint64_t *pos, size_t n, uint64_t *out)
{
    if (n == 0)
        return;
    struct dv_iter it;
    uint64_t buf[256];
    uint64_t hi = pos[0]; /* the largest query merged so far */
    uint64_t count = pos[0] > 0 ? dv_rank(d, pos[0] - 1) : 0;
    size_t bn = 0, bi = 0;
    bool done = false;
    dv_iter_init(&it, d);
    dv_iter_seek(&it, pos[0]);
    for (size_t i = 0; i < n; i++) {
        if (pos[i] < hi) {
            out[i] = dv_rank(d, pos[i]); /* out of order: one lookup */
            continue;
        }
        hi = pos[i];
        for (;;) {
            if (bi == bn) {
                if (done)
                    break;
                bn = dv_iter_next_many(&it, buf, 256);
                bi = 0;
                if (bn == 0) {
                    done = true;
                    break;
                }
            }
            if (buf[bi] > pos[i])
                break;
            count++;
            bi++;
        }
        out[i] = count;
    }
}

void dv_union(struct dv *dst, const struct dv *src)
{
    if (dst == src || src->n == 0)
        return;
    /* Merge the two sorted bucket arrays into a new one. */
    size_t cap = dst->n + src->n;
    struct dv_bucket *m = xreallocarray(NULL, cap, sizeof *m);
    size_t i = 0, j = 0, k = 0;
    while (i < dst->n || j < src->n) {
        if (j == src->n || (i < dst->n && dst->b[i].key < src->b[j].key)) {
            m[k++] = dst->b[i++];
        } else if (i == dst->n || src->b[j].key < dst->b[i].key) {
            roaring_bitmap_t *bm = roaring_bitmap_copy(src->b[j].bm);
            if (bm == NULL)
                abort();
            m[k].key = src->b[j++].key;
            m[k++].bm = bm;
        } else {
            roaring_bitmap_or_inplace(dst->b[i].bm, src->b[j++].bm);
            m[k++] = dst->b[i++];
        }
    }
    free(dst->b);
    dst->b = m;
    dst->n = k;
    dst->cap = cap;
    assert(k <= cap);
    ST_DEBUG_CHECK(dv__check(dst));
}

bool dv_equal(const struct dv *a, const struct dv *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        const roaring_bitmap_t *x = a->b[i].bm, *y = b->b[i].bm;
        if (a->b[i].key != b->b[i].key)
            return false;
        uint64_t cx = roaring_bitmap_get_cardinality(x);
        if (cx != roaring_bitmap_get_cardinality(y))
            return false;
        /* equals() compares run containers run by run, so a decoded bitmap
           with adjacent (unmerged) runs needs the set-semantic check. */
        if (!roaring_bitmap_equals(x, y) && roaring_bitmap_and_cardinality(x, y) != cx)
            return false;
    }
    return true;
}

/* ------------------------------------------------------ container walk */

void dv__container(const roaring_bitmap_t *bm, int32_t i, struct dv__cont *out)
{
    const roaring_array_t *ra = &bm->high_low_container;
    assert(i >= 0 && i < ra->size);
    uint8_t type = ra->typecodes[i];
    const void *c = ra->containers[i];
    if (type == SHARED_CONTAINER_TYPE_CODE) {
        const shared_container_t *s = c;
        type = s->typecode;
        c = s->container;
    }
    /* the walks know these three (a shared container never wraps another) */
    assert(type == ARRAY_CONTAINER_TYPE_CODE || type == BITSET_CONTAINER_TYPE_CODE ||
           type == RUN_CONTAINER_TYPE_CODE);
    out->type = type;
    out->key = ra->keys[i];
    out->c = c;
}

/* Index of the first container whose key is >= key. */
static int32_t container_lower_bound(const roaring_array_t *ra, uint16_t key)
{
    int32_t lo = 0, hi = ra->size;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (ra->keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* m[v - lo] = 1 for every v of bm in [lo, hi] (inclusive). */
static void fill_bucket(const roaring_bitmap_t *bm, uint32_t lo, uint32_t hi, uint8_t *m)
{
    const roaring_array_t *ra = &bm->high_low_container;
    for (int32_t i = container_lower_bound(ra, (uint16_t)(lo >> 16));
         i < ra->size && ra->keys[i] <= (hi >> 16); i++) {
        struct dv__cont c;
        dv__container(bm, i, &c);
        uint32_t cbase = (uint32_t)c.key << 16;
        uint32_t clo = (lo > cbase ? lo : cbase) - cbase;
        uint32_t chi = (hi < cbase + 0xFFFFu ? hi : cbase + 0xFFFFu) - cbase;
        uint8_t *cm = m + (cbase + clo - lo); /* cm[v - clo] is value cbase + v */
        if (c.type == ARRAY_CONTAINER_TYPE_CODE) {
            const array_container_t *a = c.c;
            int32_t l = 0, h = a->cardinality;
            while (l < h) {
                int32_t mid = l + (h - l) / 2;
                if (a->array[mid] < clo)
                    l = mid + 1;
                else
                    h = mid;
            }
            for (int32_t j = l; j < a->cardinality && a->array[j] <= chi; j++)
                cm[a->array[j] - clo] = 1;
        } else if (c.type == RUN_CONTAINER_TYPE_CODE) {
            const run_container_t *r = c.c;
            for (int32_t j = 0; j < r->n_runs; j++) {
                uint32_t s = r->runs[j].value, e = s + r->runs[j].length;
                if (e < clo)
                    continue;
                if (s > chi)
                    break;
                if (s < clo)
                    s = clo;
                if (e > chi)
                    e = chi;
                memset(cm + (s - clo), 1, e - s + 1);
            }
        } else {
            const bitset_container_t *b = c.c;
            for (uint32_t w = clo >> 6; w <= (chi >> 6); w++) {
                uint64_t word = b->array[w];
                if (w == (clo >> 6))
                    word &= ~0ull << (clo & 63);
                if (w == (chi >> 6) && (chi & 63) != 63)
                    word &= (2ull << (chi & 63)) - 1;
                while (word != 0) {
                    uint32_t v = w * 64 + (uint32_t)__builtin_ctzll(word);
                    cm[v - clo] = 1;
                    word &= word - 1;
                }
            }
        }
    }
}

void dv_fill_mask(const struct dv *d, uint64_t start, size_t n, uint8_t *mask)
{
    if (n == 0)
        return;
    memset(mask, 0, n);
    uint64_t last = (uint64_t)(n - 1) > UINT64_MAX - start ? UINT64_MAX : start + (n - 1);
    uint32_t first_key = (uint32_t)(start >> 32), last_key = (uint32_t)(last >> 32);
    for (size_t i = lower_bound(d, first_key); i < d->n && d->b[i].key <= last_key; i++) {
        uint32_t key = d->b[i].key;
        uint32_t lo = key == first_key ? (uint32_t)start : 0;
        uint32_t hi = key == last_key ? (uint32_t)last : UINT32_MAX;
        uint64_t off = ((uint64_t)key << 32) + lo - start;
        assert(off < n && (uint64_t)hi - lo < n - off); /* the bucket's part lies in mask[] */
        fill_bucket(d->b[i].bm, lo, hi, mask + off);
    }
}

/* ----------------------------------------------------------- iteration */

void dv_iter_init(struct dv_iter *it, const struct dv *d)
{
    memset(it, 0, sizeof *it);
    it->d = d;
}

void dv_iter_seek(struct dv_iter *it, uint64_t pos)
{
    const struct dv *d = it->d;
    uint32_t key = (uint32_t)(pos >> 32), low = (uint32_t)pos;
    it->bucket = lower_bound(d, key);
    it->container = 0;
    it->idx = 0;
    it->sub = 0;
    it->word = 0;
    if (it->bucket >= d->n || d->b[it->bucket].key != key)
        return; /* every position of this bucket is above pos */
    const roaring_bitmap_t *bm = d->b[it->bucket].bm;
    const roaring_array_t *ra = &bm->high_low_container;
    it->container = container_lower_bound(ra, (uint16_t)(low >> 16));
    if (it->container >= ra->size || ra->keys[it->container] != (low >> 16))
        return;
    uint32_t v = low & 0xFFFF;
    struct dv__cont c;
    dv__container(bm, it->container, &c);
    if (c.type == ARRAY_CONTAINER_TYPE_CODE) {
        const array_container_t *a = c.c;
        uint32_t lo = 0, hi = (uint32_t)a->cardinality;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (a->array[mid] < v)
                lo = mid + 1;
            else
                hi = mid;
        }
        it->idx = lo;
    } else if (c.type == RUN_CONTAINER_TYPE_CODE) {
        const run_container_t *r = c.c;
        uint32_t i = 0;
        while (i < (uint32_t)r->n_runs && (uint32_t)r->runs[i].value + r->runs[i].length < v)
            i++;
        it->idx = i;
        if (i < (uint32_t)r->n_runs && r->runs[i].value < v)
            it->sub = v - r->runs[i].value;
    } else {
        const bitset_container_t *b = c.c;
        it->idx = v / 64;
        it->word = b->array[v / 64] & (~0ull << (v % 64));
        it->sub = 1; /* `word` holds word idx */
    }
}

static void next_container(struct dv_iter *it)
{
    it->container++;
    it->idx = 0;
    it->sub = 0;
    it->word = 0;
}

size_t dv_iter_next_many(struct dv_iter *it, uint64_t *out, size_t max)
{
    size_t k = 0;
    const struct dv *d = it->d;
    while (k < max && it->bucket < d->n) {
        const roaring_bitmap_t *bm = d->b[it->bucket].bm;
        if (it->container >= bm->high_low_container.size) {
            it->bucket++;
            it->container = -1;
            next_container(it);
            continue;
        }
        struct dv__cont c;
        dv__container(bm, it->container, &c);
        uint64_t base = ((uint64_t)d->b[it->bucket].key << 32) | ((uint64_t)c.key << 16);
        if (c.type == ARRAY_CONTAINER_TYPE_CODE) {
            const array_container_t *a = c.c;
            uint32_t card = (uint32_t)a->cardinality;
            assert(it->idx <= card);
            while (k < max && it->idx < card)
                out[k++] = base | a->array[it->idx++];
            if (it->idx >= card)
                next_container(it);
        } else if (c.type == RUN_CONTAINER_TYPE_CODE) {
            const run_container_t *r = c.c;
            uint32_t nr = (uint32_t)r->n_runs;
            while (k < max && it->idx < nr) {
                uint32_t s = r->runs[it->idx].value, len = r->runs[it->idx].length;
                while (k < max && it->sub <= len)
                    out[k++] = base | (s + it->sub++);
                if (it->sub > len) {
                    it->idx++;
                    it->sub = 0;
                }
            }
            if (it->idx >= nr)
                next_container(it);
        } else {
            /* sub == 1 once `word` holds the unreturned bits of word idx. */
            const bitset_container_t *b = c.c;
            assert(it->idx <= 1024 && (it->sub == 0 || it->sub == 1));
            while (k < max && it->idx < 1024) {
                if (!it->sub) {
                    it->word = b->array[it->idx];
                    it->sub = 1;
                }
                while (k < max && it->word != 0) {
                    out[k++] = base | (it->idx * 64 + (uint32_t)__builtin_ctzll(it->word));
                    it->word &= it->word - 1;
                }
                if (it->word == 0) {
                    it->idx++;
                    it->sub = 0;
                }
            }
            if (it->idx >= 1024)
                next_container(it);
        }
    }
    return k;
}

bool dv_iter_next(struct dv_iter *it, uint64_t *pos)
{
    return dv_iter_next_many(it, pos, 1) == 1;
}

/* ---------------------------------------------------------- invariants */

#ifndef NDEBUG
static void check_bitmap(const roaring_bitmap_t *bm)
{
    const roaring_array_t *ra = &bm->high_low_container;
    assert(ra->size > 0 && ra->size <= 65536);
    for (int32_t i = 0; i < ra->size; i++) {
        assert(i == 0 || ra->keys[i - 1] < ra->keys[i]);
        struct dv__cont c;
        dv__container(bm, i, &c);
        if (c.type == ARRAY_CONTAINER_TYPE_CODE) {
            const array_container_t *a = c.c;
            assert(a->cardinality >= 0 && a->cardinality <= a->capacity);
            for (int32_t j = 1; j < a->cardinality; j++)
                assert(a->array[j - 1] < a->array[j]);
        } else if (c.type == RUN_CONTAINER_TYPE_CODE) {
            const run_container_t *r = c.c;
            assert(r->n_runs >= 0 && r->n_runs <= r->capacity);
            int32_t prev_end = -1;
            for (int32_t j = 0; j < r->n_runs; j++) {
                uint32_t s = r->runs[j].value, e = s + r->runs[j].length;
                assert(e <= 0xFFFF && (int32_t)s > prev_end);
                prev_end = (int32_t)e;
            }
        } else {
            const bitset_container_t *b = c.c;
            assert(b->cardinality < 0 ||
                   (uint32_t)b->cardinality == dv__popcount((const uint8_t *)b->array, 1024));
        }
    }
}

void dv__check(const struct dv *d)
{
    assert(d->n <= d->cap && (d->n == 0 || d->b != NULL));
    for (size_t i = 0; i < d->n; i++) {
        assert(i == 0 || d->b[i - 1].key < d->b[i].key);
        assert(d->b[i].bm != NULL && !roaring_bitmap_is_empty(d->b[i].bm));
        check_bitmap(d->b[i].bm);
    }
}
#endif
