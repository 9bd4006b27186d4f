/*
 * changeset.h - turn changes as received (JSON or protobuf, already split
 * into name/literal pairs) into typed engine changes. HTTP and gRPC both
 * call this, so the two APIs cannot disagree on what a change means.
 *
 * Ops (docs/API.md "Changes"): "upsert" (row), "delete" (key), and Debezium's
 * "c"/"r" (upsert of after), "u" (upsert of after; when before's key
 * differs from after's, a delete of before's key first) and "d" (delete of
 * before's key; `key` is accepted instead). Errors name the change:
 *   row 3: column "amount": expected double, got string
 *   row 4: key: longer than 1024 bytes encoded (1502 bytes)
 * (rows are numbered from 0, as indexes into the `changes` array; the key
 * limit is KEY_ENCODED_MAX, engine/keyenc.h).
 */
#ifndef STRIKE_CHANGESET_H
#define STRIKE_CHANGESET_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "engine/engine.h"
#include "expr/literal.h"

/* An object of a change (row, key, before or after) as name/literal pairs (borrowed). */
struct wire_obj {
    bool present;
    size_t n;
    const char *const *names;
    const struct st_literal *lits;
};

struct wire_change {
    const char *op;
    struct wire_obj row, key, before, after;
};

/* Typed changes for engine_apply_changes; owns the value arrays (strings stay borrowed). */
struct changeset {
    struct engine_change *changes;
    size_t n;
    struct st_value *vals;
};

int changeset_build(const struct engine_table *t, const struct wire_change *in, size_t n,
                    struct changeset *out, struct st_err *err);
void changeset_free(struct changeset *cs);

#endif
