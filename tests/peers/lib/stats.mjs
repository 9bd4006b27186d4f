// tests/peers/lib/stats.mjs - part of strike's own peer harness, written for this
// project (it came with the project's peer-baseline scripts, kept outside this
// repository until now; it is not third-party code). The tests and benches import
// it from here: tests/bench/*.mjs and tests/integration/parquet_duckdb.mjs.
//
// Small shared helpers for the peer baseline scripts (our own code).
import { performance } from 'node:perf_hooks';

export function summarize(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const n = s.length;
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return { n, min: s[0], median, max: s[n - 1], all: samples };
}

// Runs fn `warmup` times untimed, then `runs` times timed. Returns ms summary
// plus the value returned by the last timed run.
export async function bench(fn, { runs = 5, warmup = 1, before } = {}) {
  let last;
  for (let i = 0; i < warmup; i++) {
    if (before) await before();
    last = await fn();
  }
  const ms = [];
  for (let i = 0; i < runs; i++) {
    if (before) await before();
    const t0 = performance.now();
    last = await fn();
    ms.push(performance.now() - t0);
  }
  return { ...summarize(ms), last };
}

export function fmtMs(x) {
  return x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(1)} ms`;
}

export function fmtTriple(s, f = fmtMs) {
  return `${f(s.min)} / ${f(s.median)} / ${f(s.max)}`;
}

export function fmtBytes(b) {
  if (b >= 1 << 30) return `${(b / (1 << 30)).toFixed(2)} GiB`;
  if (b >= 1 << 20) return `${(b / (1 << 20)).toFixed(1)} MiB`;
  if (b >= 1 << 10) return `${(b / (1 << 10)).toFixed(1)} KiB`;
  return `${b} B`;
}

// Deterministic PRNG (mulberry32) so position samples are reproducible.
export function mulberry32(seed) {
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Bernoulli sample of row positions in [0, n) with probability frac, sorted.
export function samplePositions(n, frac, seed = 12345) {
  const rnd = mulberry32(seed);
  const out = new Uint32Array(Math.ceil(n * frac * 1.1) + 64);
  let k = 0;
  for (let i = 0; i < n; i++) {
    if (rnd() < frac) {
      if (k === out.length) throw new Error('sample buffer overflow');
      out[k++] = i;
    }
  }
  return out.subarray(0, k);
}

export function parseArgs(argv, defaults) {
  const o = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) continue;
    const key = a.slice(2);
    const next = argv[i + 1];
    if (next === undefined || next.startsWith('--')) o[key] = true;
    else { o[key] = next; i++; }
  }
  return o;
}
