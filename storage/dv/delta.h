/*
 * delta.h - Delta Lake deletion-vector descriptors (PROTOCOL.md "Deletion
 * Vectors"): the `deletionVector` object of add/remove actions, the Z85
 * UUID path form, and loading the vector it points at.
 *
 * Byte formats (DV file entries, inline DVs) are in dv.h.
 */
#ifndef STRIKE_DELTA_H
#define STRIKE_DELTA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "dv.h"

/* Test-only file name prefix Spark uses in its own test tables
   (DeltaSQLConf TEST_DV_NAME_PREFIX); pass it as name_prefix to read them. */
#define DELTA_DV_TEST_NAME_PREFIX "test%dv%prefix-"

/* Largest DV read by delta_dv_load (an entry, not the whole file). */
#define DELTA_DV_MAX_BYTES (256u << 20)

struct delta_dv_descriptor {
    char storage_type;       /* 'u' relative UUID path, 'i' inline, 'p' absolute path */
    char *path_or_inline_dv; /* owned */
    bool has_offset;
    int64_t offset; /* meaningful when has_offset */
    int64_t size_in_bytes;
    int64_t cardinality;
};

/* Parse the JSON text of a `deletionVector` object (len bytes, borrowed).
   Checks types and ranges (storageType one of u/i/p, non-negative ints,
   offset absent for 'i'). On success the caller frees with
   delta_dv_descriptor_free. */
int delta_dv_descriptor_parse(const char *json, size_t len, struct delta_dv_descriptor *out,
                              struct st_err *err);
/* Free what the descriptor owns (NULL ok); the struct itself is the caller's. */
void delta_dv_descriptor_free(struct delta_dv_descriptor *d);

/*
 * For storageType 'u': pathOrInlineDv = "<random prefix><20-char Z85 UUID>".
 * Sets *out (caller frees) to the path relative to the table root:
 * "<prefix>/<name_prefix>deletion_vector_<uuid>.bin", without "<prefix>/"
 * when the prefix is empty. name_prefix may be NULL (the normal case).
 */
int delta_dv_uuid_path(const char *path_or_inline_dv, const char *name_prefix, char **out,
                       struct st_err *err);

/* Append pathOrInlineDv for a UUID (16 bytes, big-endian halves) and an
   optional random prefix (NULL or ""), NUL-terminated. */
void delta_dv_encode_uuid(const uint8_t uuid[16], const char *prefix, struct buf *out);

/*
 * Where the DV bytes are: for 'u' table_root joined with delta_dv_uuid_path,
 * for 'p' the path itself (a "file:" URI is turned into a local path; other
 * schemes are ST_EUNSUPPORTED). 'i' has no file: ST_EINVAL. Caller frees.
 */
int delta_dv_resolve(const struct delta_dv_descriptor *d, const char *table_root,
                     const char *name_prefix, char **path, struct st_err *err);

/*
 * Load the vector a descriptor points at: decodes inline DVs, or reads only
 * the version byte and the entry at `offset` (absent offset: 1, the only
 * entry of a one-vector file) of the DV file, and checks sizeInBytes and
 * cardinality. *out is a new set the caller frees.
 */
int delta_dv_load(const struct delta_dv_descriptor *d, const char *table_root,
                  const char *name_prefix, struct dv **out, struct st_err *err);

#endif
