// tests/peers/lib/gen.mjs - part of strike's own peer harness, written for this
// project (it came with the project's peer-baseline scripts, kept outside this
// repository until now; it is not third-party code). The tests and benches import
// it from here: tests/bench/*.mjs and tests/integration/parquet_duckdb.mjs.
//
// Shared test-table definition: id BIGINT (0..N-1, unique, = row position),
// user_id BIGINT, amount DOUBLE, status VARCHAR, payload VARCHAR (~100 B JSON-ish).
// Deterministic (DuckDB hash() of the id), written by DuckDB with ZSTD.
import fs from 'node:fs';
import path from 'node:path';

export const q = (s) => `'${String(s).replaceAll("'", "''")}'`;

export const SELECT_ROWS = (n) => `
    SELECT i::BIGINT AS id,
           (hash(i, 1) % 1000000)::BIGINT AS user_id,
           ((hash(i, 2) % 10000000)::DOUBLE / 100.0) AS amount,
           (['active','pending','closed','refunded'])[1 + (hash(i, 4) % 4)::INT] AS status,
           printf('{"ev":"%s","sku":%d,"sess":"%s","ua":"Mozilla/5.0 (X11; Linux x86_64)"}',
                  (['view','cart','buy','refund'])[1 + (hash(i, 3) % 4)::INT], (i % 5000)::INT,
                  md5(i::VARCHAR)) AS payload
    FROM range(${n}) t(i)`;

export function genParquetSql(n, file) {
  return `COPY (${SELECT_ROWS(n)}) TO ${q(file)} (FORMAT parquet, COMPRESSION zstd)`;
}

// CSV (no header) for COPY into PostgreSQL.
export function genCsvSql(n, file) {
  return `COPY (${SELECT_ROWS(n)}) TO ${q(file)} (FORMAT csv, HEADER false)`;
}

export async function ensureParquet(con, dataDir, n, regen = false) {
  const file = path.join(dataDir, `t_${n}.parquet`);
  fs.mkdirSync(dataDir, { recursive: true });
  if (regen || !fs.existsSync(file)) await con.run(genParquetSql(n, file));
  return file;
}
