/* admit.c - admission control by bytes in flight (admit.h). */
#include "admit.h"

#include <assert.h>

void admit_init(struct admit *a, uint64_t limit)
{
    a->limit = limit;
    atomic_init(&a->used, 0);
    atomic_init(&a->refused, 0);
}

uint64_t admit_charge(uint64_t body_bytes, uint32_t x)
{
    assert(x >= 1 && x <= ADMIT_X_MAX); /* the route tables declare it (checked at start) */
    if (body_bytes > UINT64_MAX / x)
        return UINT64_MAX;
    return body_bytes * x;
}

bool admit_take(struct admit *a, uint64_t held, uint64_t add)
{
    if (add == 0)
        return true;
    uint_fast64_t cur = atomic_load(&a->used);
    for (;;) {
        /* Alone (what is in flight is this request's own): always admitted. */
        bool alone = cur == held;
        if (!alone && (cur > a->limit || add > a->limit - cur)) {
            atomic_fetch_add(&a->refused, 1);
            return false;
        }
        /* No overflow: a charge is at most 2G (--max-body) * ADMIT_X_MAX. */
        if (atomic_compare_exchange_weak(&a->used, &cur, cur + add))
            return true;
    }
}

void admit_release(struct admit *a, uint64_t n)
{
    if (n != 0)
        atomic_fetch_sub(&a->used, n);
}

uint64_t admit_used(struct admit *a)
{
    return atomic_load(&a->used);
}
