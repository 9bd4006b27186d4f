// icebird_read.mjs - reads an Iceberg table with npm icebird (a JavaScript Iceberg
// reader on hyparquet; neither shares code with strike nor with the tests' own
// reader). Found in STRIKE_BUILD_DIR/peers/node_modules (scripts/test-peers.sh).
//
//   node icebird_read.mjs TABLE_URI METADATA_FILE_NAME
//     icebirdRead({tableUrl, metadataFileName}): the rows of the current snapshot of
//     TABLE_URI/metadata/METADATA_FILE_NAME. stdout: {"rows": [{column: value}...]}
//     with longs (BigInt) as decimal strings, doubles as numbers ("-0.0", "NaN",
//     "Infinity", "-Infinity" as strings), timestamps (hyparquet gives Date: whole
//     milliseconds) as {"ms": n}, bytes as hex.
//
// icebird 0.3.1 reads through fetch(); Node's fetch has no file: scheme, so file:
// URIs are answered here from the file system (the whole file, 200), as a plain
// HTTP server would answer a GET without Range. Nothing else is changed.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

function die(msg, code = 2) {
  process.stderr.write(`icebird_read.mjs: ${msg}\n`);
  process.exit(code);
}

const build = process.env.STRIKE_BUILD_DIR || die('STRIKE_BUILD_DIR is not set (run through ctest)');
const entry = path.join(build, 'peers', 'node_modules', 'icebird', 'src', 'index.js');
if (!fs.existsSync(entry)) die(`npm icebird is not installed (${entry}): run scripts/test-peers.sh ${build}`);
const [tableUrl, metadataFileName] = process.argv.slice(2);
if (!tableUrl || !metadataFileName) die('usage: icebird_read.mjs TABLE_URI METADATA_FILE_NAME');

const realFetch = globalThis.fetch;
let served = 0;
globalThis.fetch = async (url, init) => {
  const u = String(url);
  if (!u.startsWith('file:')) return realFetch(url, init);
  let body;
  try {
    body = fs.readFileSync(fileURLToPath(u));
  } catch (e) {
    return new Response('', { status: 404, statusText: e.code });
  }
  served++;
  return new Response(body, { status: 200, headers: { 'content-length': String(body.length) } });
};

function plain(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') {
    if (Object.is(v, -0)) return '-0.0';
    if (Number.isNaN(v)) return 'NaN';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    return v;
  }
  if (v instanceof Date) return { ms: v.getTime() };
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

const { icebergRead } = await import(pathToFileURL(entry).href);
let rows;
try {
  rows = await icebergRead({ tableUrl, metadataFileName });
} catch (e) {
  die(`icebird: ${e.stack || e}`, 1);
}
process.stdout.write(JSON.stringify({ rows: rows.map(plain) }) + '\n');
process.stderr.write(`icebird_read.mjs: ${rows.length} rows, ${served} files read\n`);
