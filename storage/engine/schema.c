/*
 * schema.c - the catalog schema, as numbered migrations (docs/DESIGN.md "Data model").
 *
 * Snapshot S of a table = the data_files with data_seq <= S and (removed_seq
 * null or > S), each with its deletion_vectors row live at S (same rule on
 * added_seq/removed_seq). Blob paths are relative to the blob store root.
 */
#include "catalog_int.h"

const struct migration cat__migrations[] = {
    {1, "tables, snapshots, files, deletion vectors, key index, producers, idempotency",
     "CREATE TABLE strike.tables ("
     "  id bigserial PRIMARY KEY,"
     "  uuid uuid NOT NULL UNIQUE,"
     "  name text NOT NULL UNIQUE,"
     "  columns jsonb NOT NULL,"     /* [{"name","type","required"}] */
     "  primary_key jsonb NOT NULL," /* ["col", ...] */
     "  version_column text,"
     "  seq bigint NOT NULL DEFAULT 0,"
     "  properties jsonb NOT NULL DEFAULT '{}',"
     "  created_at timestamptz NOT NULL DEFAULT now());"

     "CREATE TABLE strike.snapshots ("
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  seq bigint NOT NULL,"
     "  committed_at timestamptz NOT NULL DEFAULT now(),"
     "  operation text NOT NULL,"
     "  commit_id uuid NOT NULL UNIQUE,"
     "  summary jsonb NOT NULL DEFAULT '{}',"
     "  expired_at timestamptz,"
     "  PRIMARY KEY (table_id, seq));"

     "CREATE TABLE strike.data_files ("
     "  id bigserial PRIMARY KEY,"
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  path text NOT NULL,"
     "  record_count bigint NOT NULL,"
     "  file_size bigint NOT NULL,"
     "  data_seq bigint NOT NULL,"
     "  removed_seq bigint,"
     "  stats jsonb NOT NULL DEFAULT '{}');" /* {"col":{"min":v,"max":v,"nulls":n}} */
     "CREATE INDEX data_files_by_table ON strike.data_files (table_id, data_seq, id);"
     "CREATE INDEX data_files_live ON strike.data_files (table_id) WHERE removed_seq IS NULL;"

     "CREATE TABLE strike.deletion_vectors ("
     "  table_id bigint NOT NULL,"
     "  data_file_id bigint NOT NULL REFERENCES strike.data_files(id) ON DELETE CASCADE,"
     "  added_seq bigint NOT NULL,"
     "  removed_seq bigint,"
     "  puffin_path text NOT NULL,"
     "  blob_offset bigint NOT NULL,"
     "  blob_length bigint NOT NULL,"
     "  cardinality bigint NOT NULL,"
     "  PRIMARY KEY (data_file_id, added_seq));"
     "CREATE INDEX deletion_vectors_live ON strike.deletion_vectors (table_id)"
     "  WHERE removed_seq IS NULL;"
     "CREATE INDEX deletion_vectors_by_path ON strike.deletion_vectors (puffin_path);"

     /* The key index: one row per live key. No foreign key, for ingest speed;
        a drop deletes its rows explicitly. fillfactor leaves room for HOT updates. */
     "CREATE TABLE strike.key_index ("
     "  table_id bigint NOT NULL,"
     "  key bytea NOT NULL,"
     "  file_id bigint NOT NULL,"
     "  pos bigint NOT NULL,"
     "  seq bigint NOT NULL,"
     "  version bytea,"
     "  PRIMARY KEY (table_id, key)) WITH (fillfactor = 80);"
     /* The same for tables whose key is one long, int or timestamp column:
        the value itself is the key (a bigint btree orders it and is several
        times cheaper to maintain than a bytea one). */
     "CREATE TABLE strike.key_index_i8 ("
     "  table_id bigint NOT NULL,"
     "  key bigint NOT NULL,"
     "  file_id bigint NOT NULL,"
     "  pos bigint NOT NULL,"
     "  seq bigint NOT NULL,"
     "  version bytea,"
     "  PRIMARY KEY (table_id, key)) WITH (fillfactor = 80);"

     "CREATE TABLE strike.producers ("
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  producer text NOT NULL,"
     "  last_offset bigint NOT NULL,"
     "  seq bigint NOT NULL,"
     "  PRIMARY KEY (table_id, producer));"

     /* Idempotency-Key: scoped to a table name; the response of the first
        2xx attempt, stored in the same transaction as its commit. */
     "CREATE TABLE strike.idempotency_keys ("
     "  scope text NOT NULL,"
     "  key text NOT NULL,"
     "  request_hash bytea NOT NULL,"
     "  status int NOT NULL,"
     "  response text NOT NULL,"
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  PRIMARY KEY (scope, key));"
     "CREATE INDEX idempotency_keys_age ON strike.idempotency_keys (created_at);"

     /* The commit's compare-and-swap: fails the transaction (SQLSTATE 40001)
        when another commit moved the table's seq, so a pipelined commit
        cannot go on to COMMIT after losing the race. */
     "CREATE FUNCTION strike.advance_seq(t bigint, expected bigint) RETURNS bigint"
     "  LANGUAGE plpgsql AS $$ BEGIN"
     "  UPDATE strike.tables SET seq = expected + 1 WHERE id = t AND seq = expected;"
     "  IF NOT FOUND THEN"
     "    RAISE EXCEPTION 'table % is no longer at seq %', t, expected USING ERRCODE = '40001';"
     "  END IF;"
     "  RETURN expected + 1;"
     "END $$;"

     "CREATE TABLE strike.erasures ("
     "  id uuid PRIMARY KEY,"
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  receipt jsonb NOT NULL);"},

    /* Idempotency records hold the engine's encoding of the call's result
       and the kind of the call (idem.c), no HTTP status. Rows stored by
       version 1 keep their status and HTTP body (kind NULL); idem.c reads
       both. A version-1 striked refuses to start on this schema (cat_migrate). */
    {2, "idempotency records: the operation's kind and result, not an HTTP response",
     "ALTER TABLE strike.idempotency_keys ADD COLUMN kind text,"
     "  ALTER COLUMN status DROP NOT NULL,"
     "  ADD CONSTRAINT idempotency_keys_kind CHECK ("
     "    (kind IN ('create', 'drop', 'changes', 'delete') AND status IS NULL)"
     "    OR (kind IS NULL AND status IS NOT NULL));"},

    /* The collector re-checks each candidate against the catalog just before
       unlinking it (gc.c): by path, in both tables. */
    {3, "data files by path, for the collector's last look before it deletes a blob",
     "CREATE INDEX data_files_by_path ON strike.data_files (path);"},

    /* A file's live DV is one probe of this index, however many DVs the
       file had before (the commit path's base read and its close of the old
       DV). Unique: at most one live DV per file, enforced by the catalog. */
    {4, "the live DV of a file: one index probe, and at most one",
     "CREATE UNIQUE INDEX deletion_vectors_live_by_file ON strike.deletion_vectors "
     "(data_file_id) WHERE removed_seq IS NULL;"},

    /* Snapshot S's files are the live ones added by S and those removed
       after S (scan.c): two index ranges whose size follows the live table
       and the changes since S, not the table's whole history. */
    {5, "data files by the seq that removed them, for reads at an older snapshot",
     "CREATE INDEX data_files_removed ON strike.data_files (table_id, removed_seq) "
     "WHERE removed_seq IS NOT NULL;"},

    /* Expiry deletes the DV rows closed at or before the oldest snapshot it
       keeps (expire.c): one index range per table, the rows it deletes. */
    {6, "deletion vectors by the seq that closed them, for snapshot expiry",
     "CREATE INDEX deletion_vectors_removed ON strike.deletion_vectors (table_id, removed_seq) "
     "WHERE removed_seq IS NOT NULL;"},

    /* An erasure is a row from its start (status running) to its receipt;
       a retry with the same Idempotency-Key finds it (erase.c). The receipt
       is kept as the text it was answered with (jsonb would reorder it). */
    {7, "erasures: status, Idempotency-Key, and listing by table",
     "ALTER TABLE strike.erasures ALTER COLUMN receipt TYPE text,"
     "  ADD COLUMN status text NOT NULL DEFAULT 'verified',"
     "  ADD COLUMN idem_key text, ADD COLUMN request_hash bytea;"
     "CREATE UNIQUE INDEX erasures_idem ON strike.erasures (table_id, idem_key) "
     "WHERE idem_key IS NOT NULL;"
     "CREATE INDEX erasures_by_table ON strike.erasures (table_id, id);"},

    /* A small DV lives in the row that commits it (inline_blob: the exact
       Iceberg deletion-vector-v1 blob a Puffin file would hold, offset 0,
       length its size) until a flush moves it to a Puffin file (dvflush.c):
       exactly one of the two locations, checked by the catalog. The partial
       index finds a table's inline DVs for the background flush. */
    {8, "deletion vectors inline in the catalog: inline_blob, or a Puffin path",
     "ALTER TABLE strike.deletion_vectors ADD COLUMN inline_blob bytea,"
     "  ALTER COLUMN puffin_path DROP NOT NULL,"
     "  ADD CONSTRAINT deletion_vectors_one_location CHECK ("
     "    (puffin_path IS NOT NULL AND inline_blob IS NULL)"
     "    OR (puffin_path IS NULL AND inline_blob IS NOT NULL AND blob_offset = 0"
     "        AND blob_length = octet_length(inline_blob)));"
     "CREATE INDEX deletion_vectors_inline ON strike.deletion_vectors (table_id) "
     "WHERE inline_blob IS NOT NULL;"},

    /* Inline DVs may be position lists (dv.h "poslist": "SPL1", 8 bytes of
       SHA-256 of the positions, BE int4 positions), the form a delete by
       keys appends to in the statement that commits it (commit_fast.c). A
       striked that does not know the form must not read this catalog: the
       version stops it at start (cat_migrate). */
    {9, "inline DVs as Iceberg blobs or position lists",
     "COMMENT ON COLUMN strike.deletion_vectors.inline_blob IS 'an inline DV: the Iceberg "
     "deletion-vector-v1 blob, or a position list: SPL1, the first 8 bytes of SHA-256 of the "
     "positions, then each position as a big-endian int4';"},

    /* Only a DV in a Puffin file has a path, and only the collector looks DV
       rows up by path (gc.c). Inline rows, one per delete by key, stay out
       of the path index: one index entry less in each such row's insert and
       in the close that follows it (about 15% less WAL per delete). */
    {10, "the path index of deletion vectors holds Puffin rows only",
     "DROP INDEX strike.deletion_vectors_by_path;"
     "CREATE INDEX deletion_vectors_by_path ON strike.deletion_vectors (puffin_path) "
     "WHERE puffin_path IS NOT NULL;"},

    /* The position list (dv.h "poslist") in the catalog's SQL, defined once
       for every statement that writes one (the one statement of a delete by
       keys, commit_fast.c): its size for n positions, the list of a body of
       positions (each int4send, big-endian), and the body of a list (NULL
       when the bytes are not one). Plain expressions, so the planner inlines
       them. test_poslist_in_sql checks them against storage/dv's encoder. */
    {11, "the position list's encoding as SQL functions",
     "CREATE FUNCTION strike.dv_poslist_size(n bigint) RETURNS bigint"
     "  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 12 + 4 * n $$;"
     "CREATE FUNCTION strike.dv_poslist(body bytea) RETURNS bytea"
     "  LANGUAGE sql IMMUTABLE PARALLEL SAFE"
     "  AS $$ SELECT 'SPL1'::bytea || substring(sha256(body) FROM 1 FOR 8) || body $$;"
     "CREATE FUNCTION strike.dv_poslist_body(dv bytea) RETURNS bytea"
     "  LANGUAGE sql IMMUTABLE PARALLEL SAFE"
     "  AS $$ SELECT CASE WHEN substring(dv FROM 1 FOR 4) = 'SPL1'::bytea"
     "  THEN substring(dv FROM 13) END $$;"},

    /* The blobs snapshot expiry freed, kept until deletable_after (catalog
       clock) for readers of a plan handed out before (expire.c): no catalog
       row references them, so the collector takes them for referenced
       while they wait here (gc.c), and deletes them after. No foreign key:
       a dropped table's blobs keep their grace. presign_horizons holds, per
       table, the latest moment a presigned URL handed out for one of its
       plans is valid: expiry keeps what it frees at least that long. */
    {12, "expired blobs kept for their grace; the horizon of presigned URLs per table",
     "CREATE TABLE strike.expired_blobs ("
     "  path text PRIMARY KEY,"
     "  table_id bigint NOT NULL,"
     "  deletable_after timestamptz NOT NULL);"
     "CREATE INDEX expired_blobs_due ON strike.expired_blobs (deletable_after);"
     "CREATE INDEX expired_blobs_by_table ON strike.expired_blobs (table_id, deletable_after);"
     "CREATE TABLE strike.presign_horizons ("
     "  table_id bigint PRIMARY KEY REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  valid_until timestamptz NOT NULL);"},

    /* The catalog's secrets, made here and never returned by any call:
       "erasure_digest" keys the HMAC-SHA256 of an erasure receipt's key
       digest (erase.c), so that whoever may read receipts cannot test
       guessed keys against them. 32 bytes: the SHA-256 of three random
       UUIDs (gen_random_uuid: pg_strong_random, 366 random bits). */
    {13, "the catalog's secrets: the key of erasure receipts' digests",
     "CREATE TABLE strike.secrets ("
     "  name text PRIMARY KEY,"
     "  secret bytea NOT NULL CHECK (octet_length(secret) = 32),"
     "  created_at timestamptz NOT NULL DEFAULT now());"
     "INSERT INTO strike.secrets (name, secret) VALUES ('erasure_digest',"
     "  sha256((gen_random_uuid()::text || gen_random_uuid()::text ||"
     "  gen_random_uuid()::text)::bytea));"},
    /* Every table is an Iceberg v3 table (iceberg.c, docs/DESIGN.md "Iceberg"): what the
       export reached per table, each manifest with the snapshots that list it (added_seq,
       removed_seq, as data files have) and the data files of its live entries, each
       exported snapshot and each metadata file, and the scans the REST catalog planned
       (a plan id works on any server, for ENGINE_ICEBERG_PLAN_TTL_S). A DV row written
       before blobs named their data files by URI is legacy_ref (moved to a new Puffin file before
       it is exported); rows written from now on are not (the column's default). The live-DV index
       takes added_seq, so that the DVs a range of seqs added are one index range (no more entries
       than before: it replaces the old one). */
    {14, "iceberg: export state, manifests, snapshots and metadata files; DVs by URI",
     "ALTER TABLE strike.deletion_vectors ADD COLUMN legacy_ref boolean NOT NULL DEFAULT true;"
     "ALTER TABLE strike.deletion_vectors ALTER COLUMN legacy_ref SET DEFAULT false;"
     "CREATE TABLE strike.iceberg_tables ("
     "  table_id bigint PRIMARY KEY REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  exported_seq bigint NOT NULL DEFAULT 0,"
     "  last_snapshot bigint NOT NULL DEFAULT 0,"
     "  version int NOT NULL DEFAULT 0,"
     "  metadata_path text,"
     "  hint_path text," /* its version-hint.text, once written */
     "  next_row_id bigint NOT NULL DEFAULT 0,"
     "  totals jsonb NOT NULL DEFAULT '{}',"
     "  updated_at timestamptz NOT NULL DEFAULT now());"
     "CREATE INDEX iceberg_tables_by_hint ON strike.iceberg_tables (hint_path);"
     "CREATE TABLE strike.iceberg_manifests ("
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  path text NOT NULL,"
     "  content smallint NOT NULL,"
     "  added_seq bigint NOT NULL,"
     "  removed_seq bigint,"
     "  length bigint NOT NULL,"
     "  sequence_number bigint NOT NULL,"
     "  min_sequence_number bigint NOT NULL,"
     "  added_snapshot_id bigint NOT NULL,"
     "  added_files int NOT NULL, existing_files int NOT NULL, deleted_files int NOT NULL,"
     "  added_rows bigint NOT NULL, existing_rows bigint NOT NULL, deleted_rows bigint NOT NULL,"
     "  first_row_id bigint,"
     "  files bigint[] NOT NULL,"
     "  PRIMARY KEY (table_id, path));"
     "CREATE INDEX iceberg_manifests_live ON strike.iceberg_manifests (table_id, added_seq);"
     /* the collector's look-ups by path (gc.c) */
     "CREATE INDEX iceberg_manifests_by_path ON strike.iceberg_manifests (path);"
     "CREATE TABLE strike.iceberg_snapshots ("
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  seq bigint NOT NULL,"
     "  parent_seq bigint,"
     "  manifest_list text NOT NULL,"
     "  timestamp_ms bigint NOT NULL,"
     "  operation text NOT NULL,"
     "  summary jsonb NOT NULL,"
     "  first_row_id bigint NOT NULL,"
     "  added_rows bigint NOT NULL,"
     "  PRIMARY KEY (table_id, seq));"
     "CREATE INDEX iceberg_snapshots_by_list ON strike.iceberg_snapshots (manifest_list);"
     "CREATE TABLE strike.iceberg_plans ("
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  id text NOT NULL,"
     "  seq bigint NOT NULL,"
     "  request text NOT NULL,"
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  PRIMARY KEY (table_id, id));"
     "CREATE INDEX iceberg_plans_age ON strike.iceberg_plans (created_at);"
     "CREATE TABLE strike.iceberg_metadata_files ("
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  version int NOT NULL,"
     "  path text NOT NULL,"
     "  written_ms bigint NOT NULL,"
     "  min_seq bigint NOT NULL,"
     "  PRIMARY KEY (table_id, version));"
     "CREATE INDEX iceberg_metadata_files_by_path ON strike.iceberg_metadata_files (path);"},

    /* Schema evolution by field id (alter.c, docs/DESIGN.md "Schemas"). tables.columns stays
       the current schema (each column with its "id", and its "default" when it has one);
       schema_id names it, last_column_id is the highest field id the table ever gave (NULL:
       the highest of its columns, which no drop preceded). table_schemas keeps every schema
       a change left behind and the new one, with the seq of the snapshot that made it
       current: snapshot S was written with the schema of the greatest seq <= S (no row: the
       table never changed, its columns are schema 0). A file's statistics name each column's
       field id ("id"), so that pruning survives a rename; the statistics written before are
       given theirs here (the ids of their table's columns, by name: no rename preceded).
       Idempotency records gain the kind "alter". */
    {15, "schemas: every schema of a table by id and seq; field ids in file statistics",
     "ALTER TABLE strike.tables ADD COLUMN schema_id int NOT NULL DEFAULT 0,"
     "  ADD COLUMN last_column_id int;"
     "CREATE TABLE strike.table_schemas ("
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  schema_id int NOT NULL,"
     "  seq bigint NOT NULL,"
     "  columns jsonb NOT NULL,"
     "  PRIMARY KEY (table_id, schema_id));"
     "CREATE UNIQUE INDEX table_schemas_by_seq ON strike.table_schemas (table_id, seq);"
     "UPDATE strike.data_files d SET stats = s.stats FROM (SELECT f.id, jsonb_object_agg(m.key,"
     "  CASE WHEN jsonb_typeof(m.value) = 'object' AND c.ord IS NOT NULL THEN m.value ||"
     "  jsonb_build_object('id', coalesce((c.col->>'id')::int, c.ord::int)) ELSE m.value END)"
     "  AS stats FROM strike.data_files f JOIN strike.tables t ON t.id = f.table_id"
     "  CROSS JOIN LATERAL jsonb_each(f.stats) m LEFT JOIN LATERAL (SELECT x.col, x.ord FROM"
     "  jsonb_array_elements(t.columns) WITH ORDINALITY x(col, ord) WHERE x.col->>'name' = m.key)"
     "  c ON true WHERE f.stats <> '{}'::jsonb GROUP BY f.id) s WHERE d.id = s.id;"
     "ALTER TABLE strike.idempotency_keys DROP CONSTRAINT idempotency_keys_kind,"
     "  ADD CONSTRAINT idempotency_keys_kind CHECK ("
     "    (kind IN ('create', 'drop', 'changes', 'delete', 'alter') AND status IS NULL)"
     "    OR (kind IS NULL AND status IS NOT NULL));"},
    /* Delta DVs (docs/DESIGN.md "Delta DVs and folding"): a DV row is a base (a Puffin blob or
       inline_blob, as before) plus delta, a position list (dv.h "poslist") of the positions
       deleted since that base, disjoint from it; cardinality counts both. A delete by key copies
       the base's location and appends to the delta (commit_fast.c, commit_sql.c) instead of
       writing the whole DV again; a fold (dvflush.c) writes base plus delta as one new base, in
       place: a row's set of positions never changes, only its representation. The partial index
       finds a table's rows that are inline or carry a delta, for the flush and the fold; it
       replaces deletion_vectors_inline (an inline row takes one entry, as before). */
    {16, "deletion vectors: a base plus a delta of the positions deleted since",
     "ALTER TABLE strike.deletion_vectors ADD COLUMN delta bytea,"
     "  ADD CONSTRAINT deletion_vectors_delta_list CHECK (delta IS NULL OR ("
     "    substring(delta FROM 1 FOR 4) = 'SPL1'::bytea AND octet_length(delta) > 12"
     "    AND (octet_length(delta) - 12) % 4 = 0));"
     "DROP INDEX strike.deletion_vectors_inline;"
     "CREATE INDEX deletion_vectors_unfolded ON strike.deletion_vectors (table_id) "
     "WHERE inline_blob IS NOT NULL OR delta IS NOT NULL;"},
    /* Remaps (docs/DESIGN.md "Compaction without rewriting the key index"): a rewrite no longer
       moves the key index's rows of the rows it moved; it records, for each file it replaced,
       where that file's rows went, and key-index rows that still point into the replaced file
       are resolved through the record (remap.c) until the catch-up rewrites them. Old position
       p, live at the rewrite's base, is the rewrite's row first_row + p - rank(p) (rank: the
       positions of base_dv, the file's DV at the base, below p), in new file
       new_file_ids[row / target_rows] at row % target_rows. base_dv is the roaring64 portable
       encoding (dv.h), NULL when the file had no DV. seq: the rewrite's commit. A record lives
       until the catch-up finds no key pointing into old_file_id. */
    {17, "file remaps: where a rewrite moved a replaced file's rows",
     "CREATE TABLE strike.file_remaps ("
     "  table_id bigint NOT NULL REFERENCES strike.tables(id) ON DELETE CASCADE,"
     "  old_file_id bigint NOT NULL,"
     "  seq bigint NOT NULL,"
     "  first_row bigint NOT NULL CHECK (first_row >= 0),"
     "  target_rows bigint NOT NULL CHECK (target_rows > 0),"
     "  new_file_ids bigint[] NOT NULL CHECK (cardinality(new_file_ids) > 0),"
     "  base_dv bytea,"
     "  PRIMARY KEY (table_id, old_file_id));"},
    /* Every statement on deletion_vectors names its table (docs/SCALE.md "Citus, distributed by
       table_id"), and each index it probes leads with table_id, so that the term picks the index
       a probe wants rather than one that walks the table's rows: a file's live DV is one probe of
       (table_id, data_file_id) (a table's live DVs its prefix, which replaces
       deletion_vectors_live (table_id): SQL_CLOSE_DVS took that one and filtered the table's live
       DVs by file); a file's DV at a snapshot one backward probe of the primary key
       (table_id, data_file_id, added_seq). */
    {18, "deletion vectors: the live DV and the history of a file by table_id first",
     "CREATE UNIQUE INDEX deletion_vectors_live_by_table_file ON strike.deletion_vectors "
     "(table_id, data_file_id) WHERE removed_seq IS NULL;"
     "DROP INDEX strike.deletion_vectors_live_by_file;"
     "DROP INDEX strike.deletion_vectors_live;"
     "ALTER TABLE strike.deletion_vectors DROP CONSTRAINT deletion_vectors_pkey,"
     "  ADD PRIMARY KEY (table_id, data_file_id, added_seq);"},
    /* A commit is found by its id within its table (the resolver of an unknown outcome, the
       one-statement delete's count), an erasure by its id within its table (its receipt): both
       keys lead with table_id, as a catalog distributed by table_id needs of every unique key
       (docs/SCALE.md). erasures_by_table (table_id, id) becomes the primary key. */
    {19, "commits and erasures found by their id within their table",
     "ALTER TABLE strike.snapshots DROP CONSTRAINT snapshots_commit_id_key;"
     "CREATE UNIQUE INDEX snapshots_by_commit ON strike.snapshots (table_id, commit_id);"
     "DROP INDEX strike.erasures_by_table;"
     "ALTER TABLE strike.erasures DROP CONSTRAINT erasures_pkey, ADD PRIMARY KEY (table_id, id);"},
    /* A data file is keyed within its table, (table_id, id), and a DV names its file by the same
       pair (the foreign key, whose cascade from a file's delete is then a probe of the DVs'
       primary key, not a scan of every DV row); an expired blob is keyed (table_id, path): every
       unique key and foreign key of a per-table table leads with table_id, as a catalog
       distributed by table_id needs (docs/SCALE.md). id stays a bigserial, unique over the
       catalog by its sequence; no statement reaches a file without its table. The collector's and
       fsck's look-ups of a path over every table probe expired_blobs_by_path, as they probe
       data_files_by_path (a plain index: a unique key without table_id cannot be distributed).
       Builds the three indexes from the heaps (no heap is rewritten) and checks the new foreign
       key (one join of deletion_vectors with data_files). */
    {20, "data files keyed by (table_id, id), expired blobs by (table_id, path)",
     "ALTER TABLE strike.deletion_vectors DROP CONSTRAINT deletion_vectors_data_file_id_fkey;"
     "ALTER TABLE strike.data_files DROP CONSTRAINT data_files_pkey,"
     "  ADD PRIMARY KEY (table_id, id);"
     "ALTER TABLE strike.deletion_vectors ADD FOREIGN KEY (table_id, data_file_id)"
     "  REFERENCES strike.data_files (table_id, id) ON DELETE CASCADE;"
     "ALTER TABLE strike.expired_blobs DROP CONSTRAINT expired_blobs_pkey,"
     "  ADD PRIMARY KEY (table_id, path);"
     "CREATE INDEX expired_blobs_by_path ON strike.expired_blobs (path);"},
};

const int cat__nmigrations = (int)(sizeof cat__migrations / sizeof cat__migrations[0]);
