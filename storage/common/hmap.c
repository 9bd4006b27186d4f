/* hmap.c - byte-string hash map with linear probing. */
#include "hmap.h"
#include "xalloc.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TOMBSTONE ((const uint8_t *)&tombstone_marker)
static const char tombstone_marker = 0;

/*
 * What hmap.h's map keeps true between calls: cap is 0 or a power of two,
 * and live plus dead slots stay at or under 3/4 of it, so that every probe
 * meets an empty slot (hash 0) and ends. O(1), checked on every call.
 */
#define HMAP_OK(m)                                                                                 \
    assert(((m)->cap == 0 && (m)->slots == NULL && (m)->count == 0 && (m)->tombstones == 0) ||     \
           ((m)->cap >= 64 && ((m)->cap & ((m)->cap - 1)) == 0 &&                                  \
            ((m)->count + (m)->tombstones) * 4 <= (m)->cap * 3))

struct hmap_chunk {
    struct hmap_chunk *next;
    size_t used, cap;
    uint8_t data[];
};

uint64_t hmap_hash(const void *p, size_t n)
{
    /* FNV-1a over 8-byte words with a final avalanche: fast, and good enough
       for keys that are not chosen by an adversary to collide (table data). */
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull ^ (n * 0x9e3779b97f4a7c15ull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
        b += 8;
        n -= 8;
    }
    while (n-- > 0)
        h = (h ^ *b++) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h ? h : 1;
}

void hmap_init(struct hmap *m)
{
    memset(m, 0, sizeof *m);
}

void hmap_free(struct hmap *m)
{
    free(m->slots);
    for (struct hmap_chunk *c = m->arena, *n; c != NULL; c = n) {
        n = c->next;
        free(c);
    }
    memset(m, 0, sizeof *m);
}

static const uint8_t *arena_copy(struct hmap *m, const void *key, size_t n)
{
    assert(m->arena == NULL || m->arena->used <= m->arena->cap);
    if (m->arena == NULL || m->arena->cap - m->arena->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        struct hmap_chunk *c = xmalloc(sizeof *c + cap);
        c->next = m->arena;
        c->used = 0;
        c->cap = cap;
        m->arena = c;
    }
    assert(m->arena->cap - m->arena->used >= n);
    uint8_t *p = m->arena->data + m->arena->used;
    if (n)
        memcpy(p, key, n);
    m->arena->used += n;
    return p;
}

static void grow(struct hmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    if (m->count * 4 < m->cap * 3 / 2 && m->cap)
        cap = m->cap; /* mostly tombstones: rehash in place size */
    struct hmap_slot *old = m->slots;
    size_t oldcap = m->cap;
    m->slots = xcalloc(cap, sizeof *m->slots);
    m->cap = cap;
    m->tombstones = 0;
    size_t moved = 0;
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].hash == 0 || old[i].key == TOMBSTONE)
            continue;
        size_t j = old[i].hash & (cap - 1);
        while (m->slots[j].hash != 0)
            j = (j + 1) & (cap - 1);
        m->slots[j] = old[i];
        moved++;
    }
    assert(moved == m->count); /* every live key, once; the tombstones are gone */
    free(old);
    HMAP_OK(m);
}

static struct hmap_slot *find(const struct hmap *m, const void *key, size_t klen, uint64_t h)
{
    HMAP_OK(m);
    assert(h != 0); /* hmap_hash never returns 0: it marks an empty slot */
    if (m->cap == 0)
        return NULL;
    size_t j = h & (m->cap - 1);
    for (;;) {
        struct hmap_slot *s = &m->slots[j];
        if (s->hash == 0)
            return NULL;
        if (s->hash == h && s->key != TOMBSTONE && s->klen == klen &&
            (klen == 0 || memcmp(s->key, key, klen) == 0))
            return s;
        j = (j + 1) & (m->cap - 1);
    }
}

void **hmap_get(const struct hmap *m, const void *key, size_t klen)
{
    struct hmap_slot *s = find(m, key, klen, hmap_hash(key, klen));
    return s ? &s->val : NULL;
}

void **hmap_put(struct hmap *m, const void *key, size_t klen, bool *created)
{
    assert(klen <= UINT32_MAX); /* slots keep 32-bit lengths */
    uint64_t h = hmap_hash(key, klen);
    struct hmap_slot *s = find(m, key, klen, h);
    if (s != NULL) {
        if (created)
            *created = false;
        return &s->val;
    }
    if ((m->count + m->tombstones + 1) * 4 > m->cap * 3)
        grow(m);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].hash != 0 && m->slots[j].key != TOMBSTONE)
        j = (j + 1) & (m->cap - 1);
    s = &m->slots[j];
    if (s->key == TOMBSTONE)
        m->tombstones--;
    s->hash = h;
    s->key = arena_copy(m, key, klen);
    s->klen = (uint32_t)klen;
    s->val = NULL;
    m->count++;
    if (created)
        *created = true;
    HMAP_OK(m);
    return &s->val;
}

void *hmap_del(struct hmap *m, const void *key, size_t klen)
{
    struct hmap_slot *s = find(m, key, klen, hmap_hash(key, klen));
    if (s == NULL)
        return NULL;
    assert(m->count > 0);
    void *v = s->val;
    s->key = TOMBSTONE; /* keeps the probe chain; the key bytes stay in the arena */
    s->val = NULL;
    m->count--;
    m->tombstones++;
    return v;
}

bool hmap_next(const struct hmap *m, size_t *i, const uint8_t **key, size_t *klen, void **val)
{
    HMAP_OK(m);
    while (*i < m->cap) {
        struct hmap_slot *s = &m->slots[(*i)++];
        if (s->hash != 0 && s->key != TOMBSTONE) {
            if (key)
                *key = s->key;
            if (klen)
                *klen = s->klen;
            if (val)
                *val = s->val;
            return true;
        }
    }
    return false;
}
