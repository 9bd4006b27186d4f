// http_duckdb_read.cjs - the remote-engine side of test_http_duckdb.py: DuckDB
// reads strike's Parquet files itself and drops the positions of each file's
// deletion vector (decoded by the test, not by strike), exactly as an engine
// that plans through strike would.
//
//   NODE_PATH=BUILD/peers/node_modules node http_duckdb_read.cjs SPEC.json
//
// SPEC: {"columns": [...], "files": [{"path": "...parquet", "deleted": [pos, ...]}, ...]}
// Prints a JSON array of rows, files in the order given, rows by position;
// BIGINTs as strings, timestamps as epoch microseconds (strings).
'use strict';
const { DuckDBInstance } = require('@duckdb/node-api');
const fs = require('fs');

function quote(s) {
  return "'" + String(s).replace(/'/g, "''") + "'";
}

(async () => {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const inst = await DuckDBInstance.create(':memory:');
  const con = await inst.connect();
  const cols = spec.columns.map((c) => (c.type === 'timestamp'
    ? `epoch_us(p."${c.name}")::BIGINT AS "${c.name}"` : `p."${c.name}"`)).join(', ');
  const out = [];
  for (const f of spec.files) {
    await con.run('CREATE OR REPLACE TEMP TABLE del(pos BIGINT)');
    if (f.deleted.length > 0) {
      const app = await con.createAppender('del');
      for (const p of f.deleted) { app.appendBigInt(BigInt(p)); app.endRow(); }
      app.flushSync();
      app.closeSync();
    }
    const sql = `SELECT ${cols} FROM read_parquet(${quote(f.path)}, file_row_number = true) p
                 ANTI JOIN del d ON p.file_row_number = d.pos ORDER BY p.file_row_number`;
    const r = await con.runAndReadAll(sql);
    for (const row of r.getRowObjectsJson()) out.push(row);
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
