// http_scan_duckdb.cjs - DuckDB's side of http_scan_bench.py: read one Parquet
// file, drop the given positions (anti-join on file_row_number against a temp
// table loaded before the clock starts) and write the remaining rows as NDJSON.
//
//   NODE_PATH=BUILD/peers/node_modules node http_scan_duckdb.cjs FILE.parquet POSITIONS.json OUT.ndjson RUNS
//
// Prints one line per run, then a JSON summary line.
'use strict';
const { DuckDBInstance } = require('@duckdb/node-api');
const fs = require('fs');

const q = (s) => "'" + String(s).replace(/'/g, "''") + "'";

(async () => {
  const [file, posFile, out, runsArg] = process.argv.slice(2);
  const runs = Number(runsArg || 5);
  const positions = JSON.parse(fs.readFileSync(posFile, 'utf8'));
  const inst = await DuckDBInstance.create(':memory:');
  const con = await inst.connect();
  const one = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson()[0];
  const version = (await one('SELECT version() AS v')).v;
  const threads = (await one("SELECT current_setting('threads') AS t")).t;
  await con.run('CREATE TEMP TABLE del(pos BIGINT)');
  const app = await con.createAppender('del');
  for (const p of positions) { app.appendBigInt(BigInt(p)); app.endRow(); }
  app.flushSync();
  app.closeSync();
  const sql = `COPY (SELECT p.id, p.user_id, p.amount, p.status, p.payload
                     FROM read_parquet(${q(file)}, file_row_number = true) p
                     ANTI JOIN del d ON p.file_row_number = d.pos) TO ${q(out)} (FORMAT JSON)`;
  await con.run(sql); // warm
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await con.run(sql);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    times.push(s);
    console.log(`DuckDB run ${i + 1}: ${(s * 1000).toFixed(0)} ms`);
  }
  const rows = Number((await one(`SELECT count(*) AS n FROM read_json(${q(out)}, format = 'newline_delimited')`)).n);
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(JSON.stringify({ version, threads, rows, median_s: median, bytes: fs.statSync(out).size }));
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
