#!/usr/bin/env node
// duck_peer.mjs - DuckDB's side of `make bench` (tests/bench/run.sh), driven
// exactly as the project's DuckDB baseline (duckdb-baseline.mjs) drives it, one step per call
// so that run.sh can alternate DuckDB and strike round by round.
//
//   node duck_peer.mjs --modules DIR gen --rows N [--parquet F] [--csv F]
//       the peers' table (tests/peers/lib/gen.mjs), written by DuckDB
//   node duck_peer.mjs --modules DIR positions --rows N --frac 0.1 --out F.json
//       the seeded Bernoulli sample of lib/stats.mjs (seed 12345) as a JSON array
//   node duck_peer.mjs --modules DIR cow --file F --out F2 [--runs 1] [--warmup 0]
//       copy-on-write delete of one row: COPY (... WHERE id <> K) TO F2 (zstd);
//       ms per run and bytes written
//   node duck_peer.mjs --modules DIR rewrite --file F --out F2 [--runs 1] [--warmup 0]
//       the copy-on-write rewrite a compaction replaces: the rows with id % 10 >= 3 (70%)
//       COPY ... TO F2 (zstd); ms per run and bytes written
//   node duck_peer.mjs --modules DIR antijoin --file F --positions P.json [--runs 1] [--warmup 1]
//       count(*), sum(amount): full scan vs ANTI JOIN on file_row_number against a
//       temp table of the positions (loaded before the clock), runs alternated
//
// DIR holds node_modules with @duckdb/node-api. Prints one JSON line. Asserts
// nothing about time; checks that the results are right.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import * as gen from '../peers/lib/gen.mjs';
import * as stats from '../peers/lib/stats.mjs';

const argv = process.argv.slice(2);
const opt = {};
const pos = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i].startsWith('--') && i + 1 < argv.length) opt[argv[i].slice(2)] = argv[++i];
  else pos.push(argv[i]);
}
const mode = pos[0];
const q = gen.q;

if (mode === 'positions') {
  const p = stats.samplePositions(Number(opt.rows), Number(opt.frac ?? 0.1), 12345);
  fs.writeFileSync(opt.out, JSON.stringify(Array.from(p)));
  console.log(JSON.stringify({ mode, rows: Number(opt.rows), positions: p.length }));
  process.exit(0);
}

if (!opt.modules) throw new Error('--modules DIR (with node_modules/@duckdb/node-api) is required');
const require = createRequire(path.join(path.resolve(opt.modules), 'package.json'));
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
const one = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJS()[0];
const version = (await one('SELECT version() AS v')).v;
const threads = Number((await one("SELECT current_setting('threads') AS t")).t);
const runs = Number(opt.runs ?? 1);
const warmup = Number(opt.warmup ?? 0);
const out = { mode, version, threads };

async function timed(fn) {
  const t0 = performance.now();
  const r = await fn();
  return [performance.now() - t0, r];
}

if (mode === 'gen') {
  const n = Number(opt.rows);
  if (opt.parquet) {
    const [ms] = await timed(() => con.run(gen.genParquetSql(n, opt.parquet)));
    out.parquet = { file: opt.parquet, bytes: fs.statSync(opt.parquet).size, ms };
  }
  if (opt.csv) {
    const [ms] = await timed(() => con.run(gen.genCsvSql(n, opt.csv)));
    out.csv = { file: opt.csv, bytes: fs.statSync(opt.csv).size, ms };
  }
  out.rows = n;
} else if (mode === 'rewrite') {
  const f2 = opt.out;
  const sql = `COPY (SELECT * FROM read_parquet(${q(opt.file)}) WHERE id % 10 >= 3)
               TO ${q(f2)} (FORMAT parquet, COMPRESSION zstd)`;
  const ms = [];
  let bytes = 0;
  for (let i = 0; i < warmup + runs; i++) {
    fs.rmSync(f2, { force: true });
    const [t] = await timed(() => con.run(sql));
    bytes = fs.statSync(f2).size;
    if (i >= warmup) ms.push(t);
  }
  const chk = await one(`SELECT count(*)::BIGINT AS n, count(*) FILTER (WHERE id % 10 < 3)::BIGINT AS bad,
                         (SELECT count(*) FROM read_parquet(${q(opt.file)}) WHERE id % 10 >= 3)::BIGINT AS want
                         FROM read_parquet(${q(f2)})`);
  if (Number(chk.bad) !== 0 || Number(chk.n) !== Number(chk.want)) throw new Error(`rewrite check failed: ${JSON.stringify(chk)}`);
  fs.rmSync(f2, { force: true });
  Object.assign(out, { ms, bytes_written: bytes, rows_after: Number(chk.n) });
} else if (mode === 'cow') {
  const key = Number(opt.key ?? 4242);
  const f2 = opt.out;
  const sql = `COPY (SELECT * FROM read_parquet(${q(opt.file)}) WHERE id <> ${key})
               TO ${q(f2)} (FORMAT parquet, COMPRESSION zstd)`;
  const ms = [];
  let bytes = 0;
  for (let i = 0; i < warmup + runs; i++) {
    fs.rmSync(f2, { force: true });
    const [t] = await timed(() => con.run(sql));
    bytes = fs.statSync(f2).size;
    if (i >= warmup) ms.push(t);
  }
  const chk = await one(`SELECT count(*)::BIGINT AS n, count(*) FILTER (WHERE id = ${key})::BIGINT AS gone,
                         (SELECT count(*) FROM read_parquet(${q(opt.file)}))::BIGINT AS before
                         FROM read_parquet(${q(f2)})`);
  if (Number(chk.gone) !== 0 || Number(chk.n) !== Number(chk.before) - 1) throw new Error(`CoW check failed: ${JSON.stringify(chk)}`);
  fs.rmSync(f2, { force: true });
  Object.assign(out, { ms, bytes_written: bytes, file_bytes: fs.statSync(opt.file).size, rows_after: Number(chk.n) });
} else if (mode === 'antijoin') {
  const positions = JSON.parse(fs.readFileSync(opt.positions, 'utf8'));
  await con.run('CREATE OR REPLACE TEMP TABLE del(pos BIGINT)');
  const app = await con.createAppender('del');
  for (const p of positions) { app.appendBigInt(BigInt(p)); app.endRow(); }
  app.flushSync();
  app.closeSync();
  const full = `SELECT count(*)::BIGINT AS cnt, sum(amount) AS total FROM read_parquet(${q(opt.file)})`;
  const anti = `SELECT count(*)::BIGINT AS cnt, sum(amount) AS total
                FROM read_parquet(${q(opt.file)}, file_row_number = true) p
                ANTI JOIN del d ON p.file_row_number = d.pos`;
  const fullMs = [];
  const antiMs = [];
  let rf;
  let ra;
  for (let i = 0; i < warmup + runs; i++) {
    const [a, x] = await timed(() => one(full));
    const [b, y] = await timed(() => one(anti));
    rf = x;
    ra = y;
    if (i >= warmup) { fullMs.push(a); antiMs.push(b); }
  }
  if (Number(ra.cnt) !== Number(rf.cnt) - positions.length) throw new Error(`anti-join kept ${ra.cnt} of ${rf.cnt} rows`);
  Object.assign(out, { full_ms: fullMs, anti_ms: antiMs, rows: Number(rf.cnt), kept: Number(ra.cnt) });
} else {
  throw new Error(`unknown mode ${mode}`);
}
con.closeSync();
console.log(JSON.stringify(out));
