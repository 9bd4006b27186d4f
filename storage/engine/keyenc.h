/*
 * keyenc.h - primary keys and versions as order-preserving bytes.
 *
 * The key index stores each key as a bytea whose memcmp order equals the
 * order of the key values, column by column (docs/DESIGN.md "Data model"), so
 * composite keys of long, int, string, timestamp and boolean index and
 * compare correctly in a btree:
 *   boolean    1 byte, 0 or 1
 *   int        4 bytes big-endian, sign bit flipped
 *   long, ts   8 bytes big-endian, sign bit flipped
 *   double     8 bytes: IEEE bits, all flipped if negative, else sign flipped
 *              (-0.0 is encoded as +0.0; NaN sorts last)
 *   string     the bytes with 0x00 escaped as 00 FF, then terminator 00 01
 */
#ifndef STRIKE_KEYENC_H
#define STRIKE_KEYENC_H

#include <stdbool.h>

#include "common/buf.h"
#include "common/types.h"

struct engine_table;

/*
 * The longest key the key index takes, encoded (docs/API.md "Changes"). A
 * btree entry must fit in a third of a PostgreSQL page (about 2.7 KB with
 * its row), so a longer key would fail the whole commit it is part of; the
 * engine and the front ends refuse it before it joins a batch.
 */
#define KEY_ENCODED_MAX 1024

/* Append one value's encoding (v must not be null). */
void key_encode_value(enum st_type type, const struct st_value *v, struct buf *out);
/* Append the key of a delete: t->npk values in key order. */
void key_encode(const struct engine_table *t, const struct st_value *keyvals, struct buf *out);
/* Append the key of a full row (t->ncols values). */
void key_encode_row(const struct engine_table *t, const struct st_value *row, struct buf *out);
/*
 * The length key_encode (row false: t->npk key values) or key_encode_row
 * (row true: t->ncols values) would append, without encoding; a null value
 * counts 0.
 */
size_t key_encoded_len(const struct engine_table *t, const struct st_value *vals, bool row);

/*
 * Tables keyed by one long, int or timestamp column keep their key index in
 * strike.key_index_i8, keyed by the value itself. key_is_i8 says which;
 * key_i8 turns such a key's encoding (8 or 4 bytes) back into the value.
 */
bool key_is_i8(const struct engine_table *t);
int64_t key_i8(const uint8_t *enc, size_t len);
/* The key index table of t: "strike.key_index" or "strike.key_index_i8". */
const char *key_index_table(const struct engine_table *t);

#endif
