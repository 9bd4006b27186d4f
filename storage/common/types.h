/*
 * types.h - column types, values and columnar vectors shared by the
 * Parquet codec, the filter evaluator, the key encoder and the engine.
 *
 * Types use Iceberg's names (docs/API.md "Types"). A timestamp is an int64 of
 * microseconds since the epoch, UTC. Strings are UTF-8, at most 1 MiB, no NUL.
 */
#ifndef STRIKE_TYPES_H
#define STRIKE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ST_NAME_MAX 128          /* [A-Za-z_][A-Za-z0-9_]{0,127} */
#define ST_STRING_MAX (1u << 20) /* bytes in one string value */
#define ST_COLUMNS_MAX 1024      /* columns in one table */

enum st_type {
    ST_T_BOOLEAN = 1,
    ST_T_INT = 2,  /* 32-bit signed */
    ST_T_LONG = 3, /* 64-bit signed */
    ST_T_DOUBLE = 4,
    ST_T_STRING = 5,    /* UTF-8 */
    ST_T_TIMESTAMP = 6, /* int64 microseconds since the epoch, UTC */
};

/* "boolean", "int", ... or NULL for an unknown value. */
const char *st_type_name(enum st_type t);
/* Parse a type name; false when unknown. */
bool st_type_parse(const char *name, enum st_type *out);
/* True for a valid identifier: [A-Za-z_][A-Za-z0-9_]{0,127}. */
bool st_name_valid(const char *name);

/*
 * One value of a known type. The type is not stored: it is the type of the
 * column the value belongs to. A string points into memory owned elsewhere.
 */
struct st_value {
    bool null;
    union {
        bool b;
        int32_t i;
        int64_t l; /* long and timestamp */
        double d;
        struct {
            const char *p;
            uint32_t len;
        } s;
    } v;
};

struct st_column {
    char name[ST_NAME_MAX + 1];
    enum st_type type;
    bool required;
    int32_t field_id; /* Iceberg's field id (> 0; Parquet's SchemaElement.field_id); 0: none */
};

/*
 * A column of n values of one type, as decoded from a Parquet row group or
 * built for writing. `nulls` is NULL when no value is null, else n bytes
 * where 1 means null (the value slot is then unspecified). Strings are
 * `offs[i]..offs[i+1]` in `sdata` (n+1 offsets).
 */
struct st_colvec {
    enum st_type type;
    size_t n;
    uint8_t *nulls;
    union {
        uint8_t *b; /* boolean, one byte per value, 0 or 1 */
        int32_t *i;
        int64_t *l;
        double *d;
    } v;
    uint32_t *offs; /* strings only */
    uint8_t *sdata; /* strings only */
};

/* Bytes of one value in a column vector: 1, 4 or 8; 0 for strings (offsets + data). */
size_t st_type_width(enum st_type t);

/* Compare two non-null values of type t: <0, 0, >0. Strings by bytes (memcmp order). */
int st_value_cmp(enum st_type t, const struct st_value *a, const struct st_value *b);

/* Value i of a vector (strings point into the vector). */
void st_colvec_get(const struct st_colvec *c, size_t i, struct st_value *out);

#endif
