/*
 * cdc.h - Debezium change events as the HTTP sinks post them, decoded into
 * plain events (docs/API.md "CDC endpoint"). No HTTP and no engine here:
 * the service (svc_cdc_apply) routes the events to tables and commits them.
 *
 * Bodies (cdc_decode):
 *   - one event, a JSON array of events, or NDJSON (one event a line; blank
 *     lines are skipped), whatever the Content-Type says, as long as it is
 *     one of the accepted types (cdc_media_ok);
 *   - each event with the JSON converter's wrapper {"schema":..,"payload":..}
 *     (schemas.enable=true) or bare (the payload itself);
 *   - a structured CloudEvent (Debezium's `debezium.format.value=cloudevents`):
 *     an object with "specversion", the payload in "data" (itself with or
 *     without the wrapper), and `iodebeziumop` / `iodebeziumtable` extension
 *     attributes when the payload carries no op or source;
 *   - null, an empty body or an empty array: no event (tombstones).
 *
 * An event without before/after and op (a heartbeat: {"ts_ms":..} alone)
 * and an op "m" (a logical decoding message) are skipped:
 * cdc_batch.nskipped counts them. A schema-change event (it has "ddl" or
 * "tableChanges") becomes one event of op 's' for each entry of
 * tableChanges of type CREATE or ALTER: its `after` image lists the
 * table's columns after the change (names, types from jdbcType, null
 * literals) and `pk` its primaryKeyColumnNames; one without such an entry
 * (an empty tableChanges, a DROP, a ddl alone) is skipped and counted.
 *
 * Source types (the source's schema as the events say it, cdc_image.stype):
 * from the JSON converter's schema when there is one (int8/16/32 int,
 * int64 long, float32/64 double, boolean, string, bytes string; the
 * logical types: Debezium's and Connect's timestamps and dates timestamp,
 * a Decimal string; a time of day its base type), from jdbcType in a
 * schema-change event, else from the value's JSON type (an integer long,
 * a number double; null says nothing: 0).
 *
 * Values: every field of before/after becomes a literal (expr/literal.h)
 * with, when the schema is present, its Debezium or Kafka Connect logical
 * type; cdc_value turns it into the literal a column of a given type takes
 * (a MicroTimestamp into a timestamp column is micros as they are, a Date
 * is midnight UTC of that day, a base64 decimal is refused unless the
 * column is a string...).
 *
 * Positions (exactly-once, docs/API.md "CDC endpoint"): `pos` orders the
 * events of one connector and source table as Debezium sends them; it is
 * twice the source position, plus 1 for a create, so that the delete and the
 * create Debezium makes of one key-changing update (they share a position)
 * stay apart. The source position: PostgreSQL source.lsn (below 2^62); MySQL
 * and MariaDB the binlog file's number, source.pos and source.row packed as
 * file << 42 | pos << 10 | row (20, 32 and 10 bits: a field out of range is
 * refused). PostgreSQL also has `txpos`, the commit LSN before the event's
 * transaction (the first of source.sequence), which orders transactions as
 * they are sent where the LSNs of interleaved transactions do not: the
 * order of PostgreSQL events is (txpos, pos) when `has_txpos`. Snapshot
 * reads (op "r", or source.snapshot other than "false") and the other
 * connectors have no position: they apply at least once.
 *
 * Every refusal names the event (its index in the body, from 0), its source
 * table when known, and the field:
 *   event 3 (inventory.customers): payload.op: expected "c", "r", "u", "d", "t" or "m", got "x"
 * Strings stay in the batch's document until cdc_batch_free: one arena for
 * the whole body, whatever its shape (the lines of NDJSON and the elements of
 * an array are parsed one by one into it), so that memory follows the bytes
 * of the body and not its number of events.
 */
#ifndef STRIKE_CDC_H
#define STRIKE_CDC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/types.h"
#include "expr/literal.h"

/* Events of one body, at most (the limit of a JSON array or of NDJSON lines). */
#define CDC_EVENTS_MAX 100000
/* Tables the schema-change events of one body describe, at most (each entry of tableChanges of
   type CREATE or ALTER: the service looks each one's table up). */
#define CDC_TABLE_CHANGES_MAX 4096

/* How a field's value was written, from its schema (CDC_L_NONE: no schema or no logical type). */
enum cdc_logical {
    CDC_L_NONE,
    CDC_L_TS_MILLIS,   /* io.debezium.time.Timestamp, org.apache.kafka.connect.data.Timestamp */
    CDC_L_TS_MICROS,   /* io.debezium.time.MicroTimestamp */
    CDC_L_TS_NANOS,    /* io.debezium.time.NanoTimestamp */
    CDC_L_TS_ZONED,    /* io.debezium.time.ZonedTimestamp (an ISO 8601 string) */
    CDC_L_DATE,        /* io.debezium.time.Date, org.apache.kafka.connect.data.Date: days */
    CDC_L_TIME,        /* io.debezium.time.Time, MicroTime, NanoTime, ZonedTime, Connect Time */
    CDC_L_DECIMAL_B64, /* org.apache.kafka.connect.data.Decimal as base64 bytes (precise mode) */
    CDC_L_BYTES,       /* type "bytes" without a logical name: base64 */
};

/* before or after: fields as name / literal / logical type (all borrowed from the batch). */
struct cdc_image {
    bool present; /* an object (null and absent are not) */
    size_t n;
    const char **names;
    struct st_literal *lits;
    uint8_t *logical; /* enum cdc_logical */
    uint8_t *stype;   /* enum st_type of the field in the source, 0: not known (see above) */
    bool typed;       /* stype is from a schema (the converter's or a schema-change event's) */
};

struct cdc_event {
    size_t index; /* in the body, from 0 (skipped events count) */
    char op;      /* 'c', 'r', 'u', 'd', 't', or 's' (a table's columns from a schema change) */
    /* source: any may be NULL */
    const char *name;   /* source.name: the connector's logical server name */
    const char *db;     /* source.db */
    const char *schema; /* source.schema (PostgreSQL, SQL Server...) */
    const char *table;  /* source.table, or the CloudEvent's iodebeziumtable */
    const char *source; /* "schema.table" when there is a schema, else "db.table", else table;
                           NULL when no table is known */
    bool has_pos;
    int64_t pos;    /* >= 0 */
    bool has_txpos; /* PostgreSQL with source.sequence */
    int64_t txpos;  /* >= 0 */
    struct cdc_image before, after;
    /* op 's': the primary key the source declares (npk 0: none said) */
    size_t npk;
    const char **pk;
};

struct cdc_batch {
    struct cdc_event *ev; /* the events that change something, in body order */
    size_t n;
    size_t nskipped;    /* heartbeats, schema changes without a table, messages, tombstones */
    struct jdoc **docs; /* the batch's document (docs[0], its arena); NULL when nothing parsed */
    size_t ndocs;
};

/* The Content-Types a body may have (NULL: none given, which is accepted). */
bool cdc_media_ok(const char *content_type);
/* application/x-ndjson or application/jsonl: one event a line, whatever the lines hold. */
bool cdc_media_ndjson(const char *content_type);

/*
 * Decode body[0..len). ST_EINVAL with a message naming the event and field.
 * On success the caller frees `out` with cdc_batch_free (also on failure:
 * it is then empty). `content_type` may be NULL.
 */
int cdc_decode(const void *body, size_t len, const char *content_type, struct cdc_batch *out,
               struct st_err *err);
void cdc_batch_free(struct cdc_batch *b);
/*
 * cdc_decode without its fast path for arrays of wrapped events (cdc.c): the
 * whole body parsed at once. The same answers; for the tests that say so.
 */
int cdc_decode_whole(const void *body, size_t len, const char *content_type, struct cdc_batch *out,
                     struct st_err *err);

/*
 * The literal a column of type `t` takes for a field read with logical type
 * `logical` (see cdc.h's head). A string literal for a double column is read
 * as a number (decimal.handling.mode=string). Failures: ST_EINVAL with a
 * message that does not name the field (the caller does), e.g.
 *   a decimal as base64 bytes (decimal.handling.mode=precise) needs a string column
 * `out` may borrow from `in`.
 */
int cdc_value(const struct st_literal *in, enum cdc_logical logical, enum st_type t,
              struct st_literal *out, struct st_err *err);

/* Pack a MySQL binlog position (see above, before the doubling); false when a field is out of
 * range. */
bool cdc_mysql_pos(int64_t file_no, int64_t pos, int64_t row, int64_t *out);

#endif
