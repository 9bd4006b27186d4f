/*
 * grpc_conv.h - the gRPC front end's conversions between protobuf-c messages
 * (strike.v1) and engine structures. Pure functions: no gRPC core, no engine
 * calls, no I/O, so that the fuzz target can run them on arbitrary bytes.
 *
 * Everything a conversion allocates comes from a `struct garena` (a
 * per-request bump allocator, freed in one shot), which is also the
 * ProtobufCAllocator requests are unpacked into. Strings handed out point
 * into the arena, into the request, or into the engine object passed in
 * (borrowed: keep it alive until the reply is packed).
 */
#ifndef STRIKE_GRPC_CONV_H
#define STRIKE_GRPC_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "changeset.h"
#include "common/buf.h"
#include "common/err.h"
#include "engine/engine.h"
#include "strike/v1/strike.pb-c.h"

/* ---- arena ---------------------------------------------------------------- */

struct garena_chunk;
struct garena {
    struct garena_chunk *head;
    ProtobufCAllocator pb; /* allocates from this arena; free is a no-op */
};

void garena_init(struct garena *a);
/* Free every allocation at once; the arena is reusable afterwards. */
void garena_free(struct garena *a);
/* Zeroed, max-aligned memory (aborts on OOM; callers bound sizes first). */
void *garena_alloc(struct garena *a, size_t n);
char *garena_strdup(struct garena *a, const char *s);
char *garena_printf(struct garena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Unpack `len` bytes as a message of type `desc` into the arena. NULL with
 * ST_EINVAL when the bytes are not a valid message or when a string field
 * holds U+0000 (protobuf-c would silently cut the string there) or invalid
 * UTF-8 (protobuf-c does not check it; PostgreSQL would refuse it in a
 * text parameter, failing a whole group commit).
 */
ProtobufCMessage *gconv_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                               size_t len, struct garena *a, struct st_err *err);

/*
 * True when some string field (at any depth) of the wire message holds a NUL
 * byte or invalid UTF-8; `why` gets the first, as "Message.field: string
 * contains U+0000" or "Message.field: invalid UTF-8 at byte 3" (the byte's
 * offset in the field). Walks the wire bytes guided by the descriptors;
 * malformed input simply ends the walk.
 */
bool gconv_find_bad_string(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                           char *why, size_t wcap);

/* ---- values and changes ------------------------------------------------------- */

/* A Value as a wire literal (strings borrowed from `v`). NULL or unset: ST_EINVAL. */
int gconv_literal(const Strike__V1__Value *v, struct st_literal *out, struct st_err *err);

/*
 * The changes of a request as changeset_build() input: out[0..n) with the
 * names and literals in the arena. Errors name the change ("row 3: column
 * \"x\": ...").
 */
int gconv_changes(const Strike__V1__ApplyChangesRequest *req, struct garena *a,
                  struct wire_change **out, struct st_err *err);
/* The keys of an erasure as wire objects (allocated in a). */
int gconv_erase_keys(const Strike__V1__EraseRequest *req, struct garena *a, struct wire_obj **out,
                     struct st_err *err);

/* ---- replies ------------------------------------------------------------------- */

/* Fill `out` (initialised here) from a table definition; stats may be NULL. */
void gconv_table(const struct engine_table *t, const struct engine_table_stats *stats,
                 struct garena *a, Strike__V1__Table *out);

/* A file of a plan at `seq`, with the HTTP URLs of the file and of its DV (arena), and their
   presigned URLs when pf has them, valid until expires_at (RFC 3339; NULL without presign).
   Strings of pf and expires_at are borrowed: they must outlive the reply's packing. */
Strike__V1__PlannedFile *gconv_planned_file(struct garena *a, const char *table, int64_t seq,
                                            const struct engine_plan_file *pf,
                                            const char *expires_at);

/* ---- scan batches, encoded by hand (no per-value allocation) ------------------- */

/* Start a ScanBatch: snapshot and column names. `b` must be empty. */
void gconv_batch_begin(struct buf *b, int64_t snapshot, const char *const *names, int n);
/* Append one Row holding value `row` of each vector vecs[0..n). */
void gconv_batch_row(struct buf *b, const struct st_colvec *const *vecs, int n, uint32_t row);

/* ---- grpc.health.v1 ------------------------------------------------------------ */

/*
 * The `service` of a HealthCheckRequest (field 1): *svc points into data.
 * False when the bytes are not a valid message.
 */
bool gconv_health_service(const uint8_t *data, size_t len, const char **svc, size_t *svclen);

/*
 * The last occurrence of length-delimited field `field` of a message
 * (protobuf's rule for a repeated scalar field), without unpacking it:
 * *s points into data ("" and 0 when absent). False when the bytes are
 * not a valid message. Used to find a request's table before a worker
 * sees it (grpc.c, the scope check).
 */
bool gconv_string_field(const uint8_t *data, size_t len, uint32_t field, const char **s,
                        size_t *slen);

#endif
