/*
 * hmap.h - a hash map from byte strings to pointer-sized values (open
 * addressing, linear probing). Keys are copied into an arena owned by the
 * map. Not thread-safe: callers lock.
 */
#ifndef STRIKE_HMAP_H
#define STRIKE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hmap_slot {
    uint64_t hash; /* 0 = empty */
    const uint8_t *key;
    uint32_t klen;
    void *val;
};

struct hmap {
    struct hmap_slot *slots;
    size_t cap; /* power of two */
    size_t count;
    size_t tombstones;
    struct hmap_chunk *arena; /* key storage */
};

void hmap_init(struct hmap *m);
void hmap_free(struct hmap *m);
/* Pointer to the value slot for key, or NULL when absent. */
void **hmap_get(const struct hmap *m, const void *key, size_t klen);
/* Pointer to the value slot for key, inserting it (value NULL) when absent; *created says which. */
void **hmap_put(struct hmap *m, const void *key, size_t klen, bool *created);
/* Remove key; returns its value or NULL. */
void *hmap_del(struct hmap *m, const void *key, size_t klen);
/* Iterate: start with *i = 0; returns false at the end. */
bool hmap_next(const struct hmap *m, size_t *i, const uint8_t **key, size_t *klen, void **val);

uint64_t hmap_hash(const void *p, size_t n);

#endif
