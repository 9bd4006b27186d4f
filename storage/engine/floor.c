/*
 * floor.c - each table's floor, its oldest retained snapshot as this
 * process last saw it (a read of the catalog, or an expiry of its own):
 * what a read of a cached DV checks before it answers for an old snapshot
 * (dvcache.c, scan.c), and the error a read of an expired one gets.
 */
#include "engine_int.h"

#include "common/hmap.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#include <stdlib.h>

/*
 * How long a floor learned from the catalog is trusted without asking again
 * (reads of cached DVs). A table definition read from the catalog refreshes
 * it too (engine.c fetch_table), so that it follows the definition cache,
 * which a front end refreshes in the background: another server's
 * expiry shows within about 2 s, as another server's drop does.
 */
#define FLOOR_TTL_NS (2000ull * 1000 * 1000)

struct floor_ent {
    int64_t oldest;
    uint64_t seen_ns;
};

void eng__floor_note(struct engine *e, int64_t table_id, int64_t oldest)
{
    pthread_mutex_lock(&e->floor_mu);
    bool created;
    void **slot = hmap_put(&e->floors, &table_id, sizeof table_id, &created);
    if (created)
        *slot = xcalloc(1, sizeof(struct floor_ent));
    struct floor_ent *f = *slot;
    /* floors only rise: a read that began before an expiry must not lower it */
    if (created || oldest > f->oldest)
        f->oldest = oldest;
    f->seen_ns = st_mono_ns();
    pthread_mutex_unlock(&e->floor_mu);
}

bool eng__floor_get(struct engine *e, int64_t table_id, int64_t *oldest)
{
    pthread_mutex_lock(&e->floor_mu);
    void **slot = hmap_get(&e->floors, &table_id, sizeof table_id);
    bool fresh = false;
    if (slot != NULL) {
        const struct floor_ent *f = *slot;
        *oldest = f->oldest;
        fresh = st_mono_ns() - f->seen_ns < FLOOR_TTL_NS;
    }
    pthread_mutex_unlock(&e->floor_mu);
    return fresh;
}

bool engine_peek_snapshot_retained(struct engine *e, const struct engine_table *t, int64_t snapshot)
{
    int64_t oldest = 0;
    return eng__floor_get(e, t->id, &oldest) && snapshot >= oldest;
}

void eng__floors_free(struct engine *e)
{
    size_t i = 0;
    const uint8_t *k;
    size_t kl;
    void *v;
    while (hmap_next(&e->floors, &i, &k, &kl, &v))
        free(v);
    hmap_free(&e->floors);
}

int eng__expired_err(const struct engine_table *t, int64_t snapshot, int64_t oldest,
                     struct st_err *err)
{
    return st_errf(err, ST_ENOTFOUND,
                   "snapshot %lld of table \"%s\" expired (the oldest retained snapshot is %lld)",
                   (long long)snapshot, t->name, (long long)oldest);
}
