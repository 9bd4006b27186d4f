#!/usr/bin/env node
// dv_peer.mjs - the peer for bench_dv: the npm `roaring` package (CRoaring's
// node port, RoaringBitmap32 only) serializing and deserializing the same
// sets in the portable format. Prints numbers; asserts nothing about time.
//
//   node tests/bench/dv_peer.mjs --modules DIR [--runs 21] [--rows 10000000] [--frac 0.1]
//
// DIR holds node_modules with `roaring` (BUILD_DIR/peers, installed from
// tests/peers/package.json by scripts/test-peers.sh BUILD_DIR). The
// positions are the Bernoulli draw of tests/peers/lib/stats.mjs
// (mulberry32, seed 12345), exactly as bench_dv draws them.
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

function parseArgs(argv) {
  const o = { runs: '21', rows: '10000000', frac: '0.1', modules: process.env.STRIKE_PEER_DIR ?? '' };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--') && i + 1 < argv.length) o[argv[i].slice(2)] = argv[++i];
  }
  return o;
}

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function sample(rows, frac, seed) {
  const rnd = mulberry32(seed);
  const out = [];
  for (let i = 0; i < rows; i++) if (rnd() < frac) out.push(i);
  return Uint32Array.from(out);
}

function summarize(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0], med: s[Math.floor(s.length / 2)], max: s[s.length - 1] };
}

function timeit(runs, fn) {
  fn();
  const t = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    t.push((performance.now() - t0) * 1000);
  }
  return summarize(t);
}

const args = parseArgs(process.argv.slice(2));
if (!args.modules) {
  console.error('dv_peer.mjs: --modules DIR (a directory with node_modules/roaring) is required');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(args.modules), 'package.json'));
const roaring = require('roaring');
const { RoaringBitmap32 } = roaring;
const runs = Number(args.runs);
const rows = Number(args.rows);
const frac = Number(args.frac);

console.log(`dv_peer: npm roaring ${roaring.PackageVersion} (CRoaring ${roaring.CRoaringVersion}), ` +
  `node ${process.version}, ${runs} runs per row (min / median / max, us)`);

const row = (set, what, bytes, r) =>
  console.log(`  ${set.padEnd(10)} ${what.padEnd(34)} ${String(bytes).padStart(10)} B  ` +
    `${r.min.toFixed(1).padStart(10)} / ${r.med.toFixed(1).padStart(10)} / ${r.max.toFixed(1).padStart(10)} us`);

for (const [name, positions] of [[`${frac * 100}%`, sample(rows, frac, 12345)], ['one', Uint32Array.from([4242])]]) {
  console.log(`\n${name}: ${positions.length} positions (of ${rows} rows)`);
  let bm;
  row(name, 'build (new RoaringBitmap32(array))', 0, timeit(runs, () => { bm = new RoaringBitmap32(positions); }));
  bm.runOptimize();
  let buf;
  row(name, 'serialize portable (run-optimized)', bm.getSerializationSizeInBytes('portable'),
    timeit(runs, () => { buf = bm.serialize('portable'); }));
  let back;
  row(name, 'deserialize portable', buf.length, timeit(runs, () => { back = RoaringBitmap32.deserialize(buf, 'portable'); }));
  if (!back.isEqual(bm) || back.size !== positions.length) {
    console.error('dv_peer.mjs: round trip mismatch');
    process.exit(1);
  }
  row(name, 'toUint32Array', 0, timeit(runs, () => back.toUint32Array()));
}
