// gen.mjs - writes the arrow-rs fixtures in this directory (Parquet data page
// v2, DELTA_BYTE_ARRAY, RLE booleans, GZIP: what neither DuckDB 1.5 nor the
// Spark files of the upstream Delta tables produce). arrow-rs is the Rust Parquet
// implementation, run here through the npm package parquet-wasm.
//
// Regenerate (needs the npm registry; the files are committed, tests only read them):
//   mkdir /tmp/gen && cd /tmp/gen && npm install parquet-wasm@0.7.1 apache-arrow@19
//   PQ_GEN_MODULES=/tmp/gen/node_modules node gen.mjs OUTDIR
//
// Every file holds the same 3000 rows; row i is, with null where stated
// (test_parquet_peers.py recomputes them):
//   b    boolean  i % 3 == 0                    null when i % 11 == 0
//   i32  int      (i * 7919) % 100003 - 50000   null when i % 5 == 0
//   i64  long     i * 1000003 - 2**40           null when i % 7 == 0
//   f64  double   i / 4                         null when i % 4 == 1
//   s    string   "s" + i + "é" * (i % 3)       null when i % 6 == 0
//   low  string   "x" + (i % 5)                 never null
//   ts   timestamp 1700000000000000 + i * 1000001 microseconds, UTC, null when i % 9 == 0
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const mods = path.resolve(process.env.PQ_GEN_MODULES || 'node_modules');
const arrow = createRequire(path.join(mods, 'x.js'))('apache-arrow');
// parquet-wasm 0.7.1's "node" build is CommonJS in a "type": "module" package; use the ESM one.
const pwDir = path.join(mods, 'parquet-wasm', 'esm');
const pw = await import(pathToFileURL(path.join(pwDir, 'parquet_wasm.js')).href);
pw.initSync({ module: fs.readFileSync(path.join(pwDir, 'parquet_wasm_bg.wasm')) });

export const N = Number(process.env.PQ_GEN_ROWS || 3000);
const out = process.argv[2] || '.';
const col = (f) => Array.from({ length: N }, (_, i) => f(i));
const b = col((i) => (i % 11 === 0 ? null : i % 3 === 0));
const i32 = col((i) => (i % 5 === 0 ? null : ((i * 7919) % 100003) - 50000));
const i64 = col((i) => (i % 7 === 0 ? null : BigInt(i) * 1000003n - 2n ** 40n));
const f64 = col((i) => (i % 4 === 1 ? null : i / 4));
const s = col((i) => (i % 6 === 0 ? null : 's' + i + 'é'.repeat(i % 3)));
const low = col((i) => 'x' + (i % 5));
const ts = col((i) => (i % 9 === 0 ? null : 1700000000000000n + BigInt(i) * 1000001n));

// Arrow JS builds timestamps from float milliseconds; give it the exact int64 microseconds.
function timestamps(v) {
  const data = new BigInt64Array(N);
  const valid = new Uint8Array(Math.ceil(N / 8));
  v.forEach((x, i) => {
    if (x !== null) {
      data[i] = x;
      valid[i >> 3] |= 1 << (i & 7);
    }
  });
  return arrow.makeVector(arrow.makeData({ type: new arrow.TimestampMicrosecond('UTC'), length: N,
    nullCount: v.filter((x) => x === null).length, nullBitmap: valid, data }));
}

const table = new arrow.Table({
  b: arrow.vectorFromArray(b, new arrow.Bool()),
  i32: arrow.vectorFromArray(i32, new arrow.Int32()),
  i64: arrow.vectorFromArray(i64, new arrow.Int64()),
  f64: arrow.vectorFromArray(f64, new arrow.Float64()),
  s: arrow.vectorFromArray(s, new arrow.Utf8()),
  low: arrow.vectorFromArray(low, new arrow.Utf8()),
  ts: timestamps(ts),
});

function write(name, configure) {
  const wt = pw.Table.fromIPCStream(arrow.tableToIPC(table, 'stream'));
  let p = new pw.WriterPropertiesBuilder().setMaxRowGroupSize(1000).setDataPageSizeLimit(2048);
  p = configure(p);
  fs.writeFileSync(path.join(out, name), pw.writeParquet(wt, p.build()));
}

// v2 pages, dictionary where it pays, snappy
write('arrow_v2_snappy.parquet', (p) =>
  p.setWriterVersion(pw.WriterVersion.V2).setCompression(pw.Compression.SNAPPY));
// v2 pages without dictionaries: DELTA_BINARY_PACKED, DELTA_BYTE_ARRAY, RLE booleans; zstd
write('arrow_v2_zstd_nodict.parquet', (p) =>
  p.setWriterVersion(pw.WriterVersion.V2).setCompression(pw.Compression.ZSTD)
    .setDictionaryEnabled(false));
// v2 pages, DELTA_LENGTH_BYTE_ARRAY strings, uncompressed
write('arrow_v2_dlba.parquet', (p) =>
  p.setWriterVersion(pw.WriterVersion.V2).setCompression(pw.Compression.UNCOMPRESSED)
    .setDictionaryEnabled(false).setColumnEncoding('s', pw.Encoding.DELTA_LENGTH_BYTE_ARRAY)
    .setColumnEncoding('low', pw.Encoding.DELTA_LENGTH_BYTE_ARRAY)
    .setColumnEncoding('f64', pw.Encoding.BYTE_STREAM_SPLIT));
// v1 pages, gzip
write('arrow_v1_gzip.parquet', (p) =>
  p.setWriterVersion(pw.WriterVersion.V1).setCompression(pw.Compression.GZIP));
