// parquet_duckdb.mjs - DuckDB (the npm peer in STRIKE_BUILD_DIR/peers) as the
// other side of the Parquet interop tests (test_parquet_duckdb.py).
//
//   node parquet_duckdb.mjs read FILE
//       line 1: {"columns":[[name, duckdb_type], ...]}
//       then one JSON array per row, ordered by position: [file_row_number, v...]
//       (read_parquet(FILE, file_row_number=true)); BIGINTs as exact integers,
//       timestamps as integer microseconds (epoch_us), doubles as numbers with
//       "-0.0", "NaN", "Infinity", "-Infinity" spelled out.
//   node parquet_duckdb.mjs meta FILE        parquet_metadata() rows, as JSON lines
//   node parquet_duckdb.mjs peers N FILE     the peers' table (tests/peers/lib/gen.mjs)
//   node parquet_duckdb.mjs copy FILE 'OPTIONS' 'SQL'
//       COPY (SQL) TO FILE (FORMAT parquet, OPTIONS)
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as gen from '../peers/lib/gen.mjs';

function die(msg) {
  process.stderr.write(`parquet_duckdb.mjs: ${msg}\n`);
  process.exit(2);
}

const build = process.env.STRIKE_BUILD_DIR || die('STRIKE_BUILD_DIR is not set (run through ctest)');
const mods = path.join(build, 'peers', 'node_modules');
if (!fs.existsSync(path.join(mods, '@duckdb', 'node-api')))
  die(`no DuckDB in ${mods}: run scripts/test-peers.sh ${build}`);
const entry = createRequire(path.join(mods, 'x.js')).resolve('@duckdb/node-api');
const { DuckDBInstance } = await import(pathToFileURL(entry).href);

const q = (s) => `'${String(s).replaceAll("'", "''")}'`;
const qi = (s) => `"${String(s).replaceAll('"', '""')}"`;

function enc(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return '"NaN"';
    if (v === Infinity) return '"Infinity"';
    if (v === -Infinity) return '"-Infinity"';
    if (Object.is(v, -0)) return '"-0.0"';
    return JSON.stringify(v);
  }
  if (typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  die(`unexpected value of type ${typeof v}: ${String(v)}`);
}

const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
const [cmd, ...args] = process.argv.slice(2);
const out = [];
const flush = () => {
  if (out.length) {
    fs.writeSync(1, out.join('\n') + '\n');
    out.length = 0;
  }
};

if (cmd === 'read') {
  const f = args[0];
  const desc = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${q(f)})`);
  const cols = desc.getRows().map((r) => [String(r[0]), String(r[1])]);
  out.push(JSON.stringify({ columns: cols }));
  const sel = cols.map(([n, t]) => (t.startsWith('TIMESTAMP') ? `epoch_us(${qi(n)})` : qi(n)));
  const sql = `SELECT file_row_number, ${sel.join(', ')}
               FROM read_parquet(${q(f)}, file_row_number=true) ORDER BY file_row_number`;
  const res = await con.stream(sql);
  for (;;) {
    const chunk = await res.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    for (const row of chunk.getRows()) out.push('[' + row.map(enc).join(',') + ']');
    if (out.length > 10000) flush();
  }
  flush();
} else if (cmd === 'meta') {
  const r = await con.runAndReadAll(`SELECT * FROM parquet_metadata(${q(args[0])})`);
  for (const row of r.getRowObjectsJson()) out.push(JSON.stringify(row));
  flush();
} else if (cmd === 'peers') {
  await con.run(gen.genParquetSql(Number(args[0]), args[1]));
} else if (cmd === 'copy') {
  const [f, opts, sql] = args;
  await con.run(`COPY (${sql}) TO ${q(f)} (FORMAT parquet${opts ? ', ' + opts : ''})`);
} else {
  die(`unknown command ${cmd}`);
}
