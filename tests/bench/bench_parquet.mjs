// bench_parquet.mjs - strike's Parquet writer and reader next to DuckDB's, on the
// peers' table (tests/peers/lib/gen.mjs), same machine, same files. Prints numbers;
// asserts nothing but that both engines see the same rows.
//
//   node tests/bench/bench_parquet.mjs BUILD_DIR [--rows 1000000,10000000] [--runs 3] [--dir DIR]
//
// BUILD_DIR is a Release build with bench_parquet built and DuckDB installed
// (scripts/test-peers.sh BUILD_DIR). For each N:
//   - DuckDB writes the table (gen.mjs) once: t_N.parquet (ZSTD, its defaults);
//   - write: DuckDB COPYs the table, loaded in memory, to a new file (ZSTD, 2 threads);
//     strike writes the same rows, decoded in memory, with its defaults (2 threads:
//     STRIKE_PQ_THREADS, storage/parquet/README.md "Both cores");
//     MB/s = output file bytes / seconds;
//   - read: DuckDB scans every column (count and sums) and `amount` alone, of its file
//     and of ours; strike decodes every column, and `amount` alone, of both files.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as gen from '../peers/lib/gen.mjs';

const args = process.argv.slice(2);
const build = path.resolve(args[0] || 'build/release');
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const rowsList = opt('--rows', '1000000,10000000').split(',').map(Number);
const runs = Number(opt('--runs', '3'));
const dir = path.resolve(opt('--dir', path.join(build, 'bench-parquet')));
const binary = path.join(build, 'bin', 'bench_parquet');
if (!fs.existsSync(binary)) throw new Error(`no ${binary}: cmake --build ${build} --target bench_parquet`);
const mods = path.join(build, 'peers', 'node_modules');
const entry = createRequire(path.join(mods, 'x.js')).resolve('@duckdb/node-api');
const { DuckDBInstance } = await import(pathToFileURL(entry).href);
fs.mkdirSync(dir, { recursive: true });

const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
const q = gen.q;
const now = () => Number(process.hrtime.bigint()) / 1e9;
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const fmt = (v) => v.map((x) => x.toFixed(3)).join(' / ');
const mb = (b) => (b / 1048576).toFixed(1);
const rate = (n, s) => (n / s / 1e6).toFixed(2);

async function timed(sql) {
  const t = [];
  let rows;
  for (let i = 0; i < runs; i++) {
    const t0 = now();
    const r = await con.runAndReadAll(sql);
    t.push(now() - t0);
    rows = r.getRowsJson();
  }
  return { t, rows };
}

const SCAN = (f) => `SELECT count(*), sum(id), sum(user_id), sum(amount), sum(length(status)),
                     sum(length(payload)) FROM read_parquet(${q(f)})`;
const AMOUNT = (f) => `SELECT sum(amount) FROM read_parquet(${q(f)})`;

console.log(`machine: ${(await import('node:os')).cpus().length} cores; DuckDB threads: ` +
  (await con.runAndReadAll(`SELECT current_setting('threads')`)).getRowsJson()[0][0] +
  `; strike: ${process.env.STRIKE_PQ_THREADS === '1' ? 1 : 2} threads; runs per number: ${runs} ` +
  `(min / median / max seconds)`);
for (const n of rowsList) {
  const src = path.join(dir, `t_${n}.parquet`);
  if (!fs.existsSync(src)) await con.run(gen.genParquetSql(n, src));
  const duckOut = path.join(dir, `duck_${n}.parquet`);
  const ours = path.join(dir, `strike_${n}.parquet`);

  // write
  await con.run(`CREATE OR REPLACE TABLE t AS SELECT * FROM read_parquet(${q(src)})`);
  const dw = await timed(`COPY t TO ${q(duckOut)} (FORMAT parquet, COMPRESSION zstd)`);
  await con.run('DROP TABLE t');
  const duckSize = fs.statSync(duckOut).size;
  const s = JSON.parse(execFileSync(binary, [src, ours, String(runs)], { maxBuffer: 1 << 20 }));
  if (!s.same_rows) throw new Error('strike wrote different rows');

  // read
  const dReadDuck = await timed(SCAN(duckOut));
  const dReadOurs = await timed(SCAN(ours));
  const dAmtDuck = await timed(AMOUNT(duckOut));
  const dAmtOurs = await timed(AMOUNT(ours));
  // the same rows: equal counts and integer sums; sum(amount) within 1e-9 (summation order varies)
  const [a, b] = [dReadDuck.rows[0], dReadOurs.rows[0]];
  if (a.length !== b.length || a.some((x, i) => i !== 3 && x !== b[i]) ||
      Math.abs(a[3] - b[3]) > 1e-9 * Math.abs(a[3]))
    throw new Error(`DuckDB sees different rows: ${JSON.stringify(dReadDuck.rows)} vs ${JSON.stringify(dReadOurs.rows)}`);
  const sAmt = s.read_ours_amount_s;

  const lg = s.logical_bytes;
  const minmax = (v) => `${fmt([Math.min(...v), median(v), Math.max(...v)])}`;
  console.log(`\n== ${n.toLocaleString('en-US')} rows (logical data ${mb(lg)} MiB)`);
  console.log(`file size        DuckDB ${duckSize} B (${mb(duckSize)} MiB, ${(duckSize / n).toFixed(1)} B/row)` +
    `   strike ${s.out_size} B (${mb(s.out_size)} MiB, ${(s.out_size / n).toFixed(1)} B/row)`);
  console.log(`write            DuckDB COPY  ${minmax(dw.t)} s = ${mb(duckSize / median(dw.t))} MiB/s of file` +
    ` (${mb(lg / median(dw.t))} MiB/s logical)`);
  console.log(`                 strike       ${minmax(s.write_s)} s = ${mb(s.out_size / median(s.write_s))} MiB/s of file` +
    ` (${mb(lg / median(s.write_s))} MiB/s logical)`);
  console.log(`read all columns DuckDB, its file   ${minmax(dReadDuck.t)} s = ${rate(n, median(dReadDuck.t))} M rows/s`);
  console.log(`                 DuckDB, our file   ${minmax(dReadOurs.t)} s = ${rate(n, median(dReadOurs.t))} M rows/s`);
  console.log(`                 strike, our file   ${minmax(s.read_ours_s)} s = ${rate(n, median(s.read_ours_s))} M rows/s`);
  console.log(`                 strike, its file   ${minmax(s.read_duck_s)} s = ${rate(n, median(s.read_duck_s))} M rows/s`);
  console.log(`read amount      DuckDB, its file   ${minmax(dAmtDuck.t)} s = ${rate(n, median(dAmtDuck.t))} M rows/s`);
  console.log(`                 DuckDB, our file   ${minmax(dAmtOurs.t)} s = ${rate(n, median(dAmtOurs.t))} M rows/s`);
  console.log(`                 strike, our file   ${minmax(sAmt)} s = ${rate(n, median(sAmt))} M rows/s`);
}
