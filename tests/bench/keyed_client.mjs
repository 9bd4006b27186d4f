#!/usr/bin/env node
// keyed_client.mjs - one client for both sides of the keyed-table measures of
// `make bench` (tests/bench/run.sh), so that the ratios compare servers, not
// clients: the same node process style, one connection kept alive, the same
// keys and rows, timed the same way.
//
//   strike:     node http, POST /v1/tables/{t}/changes (JSON), keep-alive Agent, 1 socket
//   PostgreSQL: node `pg` (the client of the project's PostgreSQL baseline, pg-bench.mjs), unix socket, autocommit
//
//   node keyed_client.mjs --modules DIR delete1 --target strike --url http://127.0.0.1:P --table tk
//                         --rows N --offset O --samples S [--warmup 2]
//   node keyed_client.mjs --modules DIR delete1 --target pg --pghost DIR --db peer --table t ...
//       one-row deletes by key, each on a live key (a window of a fixed
//       permutation of 0..N-1, so rounds never repeat a key): ms per delete
//   node keyed_client.mjs --modules DIR ingest --target strike|pg ... --rows N --batches B
//                         --batch 10000 --offset O --new-base K --salt R
//       CDC batches: half updates of distinct existing keys (permutation window
//       from O), half new keys (from K); strike: one POST per batch of upserts,
//       PostgreSQL: one INSERT ... SELECT unnest(...) ON CONFLICT DO UPDATE per
//       batch (pg-bench.mjs' statement). Seconds for all batches, rows/s.
//
// DIR holds node_modules with `pg` (tests/peers/package.json). Prints one JSON
// line; checks every answer (a delete must delete its row; counts must add up).
import { createRequire } from 'node:module';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const argv = process.argv.slice(2);
const o = {};
const pos = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i].startsWith('--') && i + 1 < argv.length) o[argv[i].slice(2)] = argv[++i];
  else pos.push(argv[i]);
}
const mode = pos[0];
const target = o.target;
const N = Number(o.rows);
const P = 2654435761n; // the permutation of bench_engine.c's perm_key
const permKey = (i) => Number((BigInt(i % N) * P) % BigInt(N));
const STATUS = ['active', 'pending', 'closed', 'refunded'];

// pg-bench.mjs' upsert rows, so both sides write the same values.
function rowOf(k, run) {
  return {
    id: k,
    user_id: (k * 31 + run) % 1000000,
    amount: (k % 100000) / 100 + run,
    status: STATUS[(k + run) % 4],
    payload: `{"ev":"upsert","sku":${k % 5000},"run":${run},"ua":"Mozilla/5.0 (X11; Linux x86_64) padding-padding-padding"}`,
  };
}

// ---- the two clients
let send; // (kind, payload) -> result object
let close = async () => {};
if (target === 'strike') {
  const url = new URL(o.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const post = (p, body) => new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: p, method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode !== 200) reject(new Error(`POST ${p}: ${res.statusCode} ${text.slice(0, 300)}`));
        else resolve(JSON.parse(text));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
  const p = `/v1/tables/${o.table}/changes`;
  send = async (kind, x) => {
    if (kind === 'delete') {
      const r = await post(p, JSON.stringify({ changes: [{ op: 'delete', key: { id: x } }] }));
      return { deleted: r.deleted };
    }
    const r = await post(p, JSON.stringify({ changes: x.map((row) => ({ op: 'upsert', row })) }));
    return { affected: r.inserted + r.updated, inserted: r.inserted, updated: r.updated };
  };
  close = async () => agent.destroy();
} else if (target === 'pg') {
  const require = createRequire(path.join(path.resolve(o.modules), 'package.json'));
  const pg = require('pg');
  const client = new pg.Client({ host: o.pghost, port: Number(o.pgport ?? 5432), user: 'postgres', database: o.db });
  await client.connect();
  const T = o.table;
  const UPSERT = `INSERT INTO ${T} (id, user_id, amount, status, payload)
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::float8[], $4::text[], $5::text[])
    ON CONFLICT (id) DO UPDATE SET user_id = EXCLUDED.user_id, amount = EXCLUDED.amount,
                                   status = EXCLUDED.status, payload = EXCLUDED.payload`;
  send = async (kind, x) => {
    if (kind === 'delete') {
      const r = await client.query(`DELETE FROM ${T} WHERE id = $1`, [x]);
      return { deleted: r.rowCount };
    }
    const r = await client.query(UPSERT, [x.map((r) => r.id), x.map((r) => r.user_id), x.map((r) => r.amount),
      x.map((r) => r.status), x.map((r) => r.payload)]);
    return { affected: r.rowCount };
  };
  close = async () => client.end();
} else {
  throw new Error('--target strike|pg');
}

const out = { mode, target, rows: N };
if (mode === 'delete1') {
  const samples = Number(o.samples);
  const warmup = Number(o.warmup ?? 2);
  const offset = Number(o.offset);
  const ms = [];
  for (let i = 0; i < warmup + samples; i++) {
    const key = permKey(offset + i);
    const t0 = performance.now();
    const r = await send('delete', key);
    const t = performance.now() - t0;
    if (r.deleted !== 1) throw new Error(`delete of key ${key} deleted ${r.deleted}`);
    if (i >= warmup) ms.push(t);
  }
  out.ms = ms;
  out.keys_from = offset;
  out.keys = warmup + samples;
} else if (mode === 'ingest') {
  const batches = Number(o.batches);
  const batch = Number(o.batch ?? 10000);
  let upd = Number(o.offset);
  let fresh = Number(o['new-base']);
  const salt = Number(o.salt ?? 0);
  // rows built before the clock; serialisation (JSON / pg arrays) is timed on both sides
  const work = [];
  for (let b = 0; b < batches; b++) {
    const rows = [];
    for (let i = 0; i < batch; i++) rows.push(rowOf(i % 2 === 0 ? permKey(upd++) : fresh++, salt));
    work.push(rows);
  }
  let affected = 0;
  let inserted = 0;
  let updated = 0;
  const t0 = performance.now();
  for (const rows of work) {
    const r = await send('upsert', rows);
    affected += r.affected;
    inserted += r.inserted ?? 0;
    updated += r.updated ?? 0;
  }
  const s = (performance.now() - t0) / 1000;
  if (affected !== batches * batch) throw new Error(`ingest affected ${affected} of ${batches * batch} rows`);
  Object.assign(out, { batches, batch, seconds: s, rows_per_s: (batches * batch) / s });
  if (target === 'strike') Object.assign(out, { inserted, updated });
} else {
  throw new Error(`unknown mode ${mode}`);
}
await close();
console.log(JSON.stringify(out));
