/*
 * avro_int.h - what avro.c (schema), avro_write.c and avro_read.c share:
 * the binary encoding's primitives and the words errors use for types.
 */
#ifndef STRIKE_AVRO_INT_H
#define STRIKE_AVRO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "avro.h"
#include "common/buf.h"

#define AVRO__VARINT_MAX 10 /* bytes of a 64-bit zigzag varint */

struct avro_schema {
    struct jdoc *doc; /* the JSON tree, and the arena of every node and name */
    const struct avro_node *root;
};

static inline uint64_t avro__zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t avro__unzigzag(uint64_t u)
{
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* Append v as a zigzag varint (1 to 10 bytes). */
void avro__put_long(struct buf *b, int64_t v);

/* The shared node of a primitive type (AVRO_NULL .. AVRO_STRING). */
const struct avro_node *avro__prim(int type);

/* "string", "record r2", "fixed uuid (16 bytes)", "union [null, long]": for messages. */
void avro__describe(const struct avro_node *n, char *out, size_t size);

#endif
