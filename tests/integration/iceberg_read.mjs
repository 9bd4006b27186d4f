// iceberg_read.mjs - the tests' own Iceberg v3 reader and spec checker. It shares
// no code with strike: Avro through npm avsc, Parquet through DuckDB
// (@duckdb/node-api), Puffin footers, deletion-vector blobs and their Roaring
// bitmaps decoded here (and cross-checked with npm roaring). The peers are
// found in STRIKE_BUILD_DIR/peers/node_modules (scripts/test-peers.sh).
//
//   node iceberg_read.mjs rows  METADATA [--map PREFIX=DIR]... [--snapshot ID] [--lineage]
//       The live rows of one snapshot (--snapshot) or of every snapshot in the
//       metadata: metadata.json -> manifest list -> manifests (entries whose
//       status is not DELETED) -> each data file read by DuckDB
//       (read_parquet(path, file_row_number=true), columns projected by field id)
//       minus the positions of the deletion vector that applies to it (same path,
//       data sequence number <= the DV's, same partition). stdout:
//         {"snapshots": {"<id>": {"sequence_number": n, "columns": [name...],
//          "types": [iceberg type...], "rows": [[v...], ...]}}, "encoding": "..."}
//       rows sorted; values: int/long as JSON numbers, as strings beyond 2^53-1;
//       float/double as numbers ("NaN", "Infinity", "-Infinity", "-0.0" as
//       strings); date as days and timestamp(tz) as microseconds (nanoseconds for
//       the _ns types) since the epoch; decimal, uuid, time as strings; binary and
//       fixed as hex; nested values as JSON. --lineage adds the columns _row_id and
//       _last_updated_sequence_number (read, or inherited as the spec says).
//       Anything that would make the rows wrong fails loudly (exit 1, no rows): a
//       DV whose length, magic, CRC or bitmap is bad, whose cardinality is not its
//       record_count or whose positions pass the end of its file; two DVs for one
//       data file; a DV that names no live data file; equality deletes.
//   node iceberg_read.mjs check METADATA [--map PREFIX=DIR]... [--snapshot ID] [--strict]
//       The spec's invariants (format/spec.md v3 and the Puffin spec), each a named
//       check. stdout: {"ok": bool, "ran": {check: times}, "failures": [{check,
//       file, field, value, message}], "notes": [...]}; each failure also on
//       stderr. Exit 0 when every check passes, 1 otherwise. "notes" are findings
//       where Iceberg Java itself departs from the spec's text (a manifest without
//       the `schema-id` key, upper-case file_format, ...): --strict makes them
//       failures.
//   node iceberg_read.mjs tasks METADATA TASKS.json [--map PREFIX=DIR]...
//       The rows of a scan planned by an Iceberg REST catalog: TASKS.json is a list
//       of {"file-scan-tasks", "delete-files"} (planTableScan's answer and each
//       fetchScanTasks'); each task's data file minus the deletion vector it
//       references (which must name that file and be its only delete file), in
//       the current schema of METADATA. stdout: {"files", "dvs", "columns",
//       "types", "rows"} as `rows` encodes them.
//   node iceberg_read.mjs avro-dump FILE...     an Avro container file as JSON:
//       {"codec", "sync" (hex), "meta" {key: utf-8 string}, "schema", "records"}
//       (longs as exact JSON integers, bytes and fixed as hex strings); several
//       files: one such line each, in the order given
//   node iceberg_read.mjs avro-write FILE < JSON    the inverse (avsc encodes the
//       records; the header keeps every key and the schema as given) - the tests
//       edit manifests with these two.
//
// METADATA is a local path or a URI. --map PREFIX=DIR (repeatable, longest prefix
// first) turns the table's URIs (hdfs://, s3://, file://...) into local paths;
// file:// URIs and absolute paths need no map. Timings go to stderr only.
// Exit 2: usage, a peer missing, or a file that cannot be read at all.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { pathToFileURL } from 'node:url';

const PROG = 'iceberg_read.mjs';
const t0 = process.hrtime.bigint();
const ms = () => Number((process.hrtime.bigint() - t0) / 1000000n);
const timings = {};
function timed(what, start) {
  timings[what] = (timings[what] ?? 0) + Number(process.hrtime.bigint() - start) / 1e6;
}

function die(msg, code = 2) {
  process.stderr.write(`${PROG}: ${msg}\n`);
  process.exit(code);
}

// A failure of the table itself (rows mode exits 1 on it; usage errors exit 2).
class TableError extends Error {}

// ---------------------------------------------------------------------------
// Peers
// ---------------------------------------------------------------------------
const build = process.env.STRIKE_BUILD_DIR || die('STRIKE_BUILD_DIR is not set (run through ctest)');
const mods = path.join(build, 'peers', 'node_modules');
const requirePeer = createRequire(path.join(mods, 'x.js'));
function peer(name) {
  try {
    return requirePeer.resolve(name);
  } catch {
    return die(`npm ${name} is not installed in ${mods}: run scripts/test-peers.sh ${build}`);
  }
}
const avro = requirePeer(peer('avsc'));

// Avro longs as BigInt: manifests hold snapshot ids above 2^53.
const LONG = avro.types.LongType.__with({
  fromBuffer: (b) => b.readBigInt64LE(),
  toBuffer: (n) => {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(BigInt(n));
    return b;
  },
  fromJSON: (x) => BigInt(x),
  toJSON: (n) => n,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a < b ? -1 : a > b ? 1 : 0),
});
const avroType = (schema) => avro.Type.forSchema(schema, { registry: { long: LONG } });
const HEADER = avro.Type.forSchema({
  type: 'record',
  name: 'org.apache.avro.file.Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
  ],
});
const AVRO_LONG = avro.Type.forSchema('long');
const AVRO_MAGIC = Buffer.from([0x4f, 0x62, 0x6a, 0x01]);

// ---------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------
const B = (x) => (x === null || x === undefined ? x : BigInt(x));
const isInt = (v) => typeof v === 'bigint';
const isStr = (v) => typeof v === 'string';
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !Buffer.isBuffer(v);
const has = (o, k) => isObj(o) && Object.prototype.hasOwnProperty.call(o, k);

// JSON text for values that may hold BigInt and Buffers (BigInt as exact integers).
function jsonText(v) {
  if (v === undefined) return 'null';
  if (typeof v === 'bigint') return v.toString();
  if (Buffer.isBuffer(v)) return JSON.stringify(v.toString('hex'));
  if (Array.isArray(v)) return '[' + v.map(jsonText).join(',') + ']';
  if (v !== null && typeof v === 'object') {
    return '{' + Object.keys(v).map((k) => JSON.stringify(k) + ':' + jsonText(v[k])).join(',') + '}';
  }
  return JSON.stringify(v);
}
const show = (v) => (v === undefined ? '(missing)' : jsonText(v));

// JSON with exact integers: every integer literal becomes a BigInt (snapshot ids
// pass 2^53); duplicate keys are an error.
function parseJson(text, file) {
  let i = 0;
  const err = (m) => {
    throw new TableError(`${file}: invalid JSON at offset ${i}: ${m}`);
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const STR = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
  const NUM = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
  const str = () => {
    STR.lastIndex = i;
    const m = STR.exec(text);
    if (!m) err('bad string');
    i = STR.lastIndex;
    return JSON.parse(m[0]);
  };
  const value = (depth) => {
    if (depth > 200) err('nested too deep');
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const o = {};
      ws();
      if (text[i] === '}') {
        i++;
        return o;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') err('expected a key');
        const k = str();
        ws();
        if (text[i++] !== ':') err("expected ':'");
        if (Object.prototype.hasOwnProperty.call(o, k)) err(`duplicate key ${JSON.stringify(k)}`);
        Object.defineProperty(o, k, { value: value(depth + 1), enumerable: true, writable: true, configurable: true });
        ws();
        const d = text[i++];
        if (d === '}') return o;
        if (d !== ',') err("expected ',' or '}'");
      }
    }
    if (c === '[') {
      i++;
      const a = [];
      ws();
      if (text[i] === ']') {
        i++;
        return a;
      }
      for (;;) {
        a.push(value(depth + 1));
        ws();
        const d = text[i++];
        if (d === ']') return a;
        if (d !== ',') err("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    for (const [w, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(w, i)) {
        i += w.length;
        return v;
      }
    }
    NUM.lastIndex = i;
    const m = NUM.exec(text);
    if (!m) err('unexpected character');
    i = NUM.lastIndex;
    return m[1] || m[2] ? Number(m[0]) : BigInt(m[0]);
  };
  const v = value(0);
  ws();
  if (i !== text.length) err('trailing characters');
  return v;
}

let CRC_TABLE = null;
function crc32(buf) {
  if (!CRC_TABLE) {
    CRC_TABLE = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      CRC_TABLE[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// ---------------------------------------------------------------------------
// Locations: the table's URIs -> local paths
// ---------------------------------------------------------------------------
class Locator {
  constructor(maps) {
    this.maps = [...maps].sort((a, b) => b.prefix.length - a.prefix.length);
  }
  local(uri) {
    if (!isStr(uri) || uri === '') throw new TableError(`not a location: ${show(uri)}`);
    for (const { prefix, dir } of this.maps) {
      const p = prefix.replace(/\/+$/, '');
      if (uri === p || uri.startsWith(p + '/')) return path.join(dir, uri.slice(p.length));
    }
    if (uri.startsWith('file://')) return uri.slice('file://'.length);
    if (uri.startsWith('file:/')) return uri.slice('file:'.length);
    if (uri.startsWith('/')) return uri;
    throw new TableError(`no --map covers ${uri}`);
  }
}

const fileCache = new Map();
function readLocal(p) {
  if (!fileCache.has(p)) {
    const start = process.hrtime.bigint();
    let buf;
    try {
      buf = fs.readFileSync(p);
    } catch (e) {
      throw new TableError(`cannot read ${p}: ${e.code || e.message}`);
    }
    timed('read files', start);
    fileCache.set(p, buf);
  }
  return fileCache.get(p);
}

// ---------------------------------------------------------------------------
// Avro object container files (records decoded by avsc)
// ---------------------------------------------------------------------------
// -> {meta: {key: Buffer}, schema (parsed avro.schema), codec, sync, type, records}
function readAvro(buf, file) {
  const start = process.hrtime.bigint();
  const bad = (m) => {
    throw new TableError(`${file}: not a valid Avro container file: ${m}`);
  };
  if (buf.length < 4 || !buf.subarray(0, 4).equals(AVRO_MAGIC)) bad('no Obj\\x01 magic');
  let h;
  try {
    h = HEADER.decode(buf, 0);
  } catch (e) {
    bad(`header: ${e.message}`);
  }
  if (h.offset < 0) bad('truncated header');
  const meta = h.value.meta;
  const sync = h.value.sync;
  if (!meta['avro.schema']) bad('no avro.schema in the header');
  let schema;
  try {
    schema = JSON.parse(meta['avro.schema'].toString('utf8'));
  } catch (e) {
    bad(`avro.schema is not JSON: ${e.message}`);
  }
  const codec = meta['avro.codec'] ? meta['avro.codec'].toString('utf8') : 'null';
  if (codec !== 'null' && codec !== 'deflate') bad(`codec ${codec} (this reader has null and deflate)`);
  let type;
  try {
    type = avroType(schema);
  } catch (e) {
    bad(`avro.schema: ${e.message}`);
  }
  const records = [];
  let pos = h.offset;
  while (pos < buf.length) {
    const c = AVRO_LONG.decode(buf, pos);
    if (c.offset < 0) bad(`truncated block count at ${pos}`);
    const s = AVRO_LONG.decode(buf, c.offset);
    if (s.offset < 0) bad(`truncated block size at ${c.offset}`);
    const count = c.value;
    const size = s.value;
    if (count < 0 || size < 0 || s.offset + size + 16 > buf.length) {
      bad(`block at ${pos}: count ${count}, size ${size}`);
    }
    let data = buf.subarray(s.offset, s.offset + size);
    if (!buf.subarray(s.offset + size, s.offset + size + 16).equals(sync)) bad(`block at ${pos}: sync marker differs`);
    if (codec === 'deflate') {
      try {
        data = zlib.inflateRawSync(data);
      } catch (e) {
        bad(`block at ${pos}: deflate: ${e.message}`);
      }
    }
    let off = 0;
    for (let k = 0; k < count; k++) {
      let r;
      try {
        r = type.decode(data, off);
      } catch (e) {
        bad(`block at ${pos}, record ${k}: ${e.message}`);
      }
      if (r.offset < 0) bad(`block at ${pos}, record ${k}: truncated`);
      records.push(r.value);
      off = r.offset;
    }
    if (off !== data.length) bad(`block at ${pos}: ${data.length - off} bytes after its ${count} records`);
    pos = s.offset + size + 16;
  }
  timed('avro', start);
  return { meta, schema, codec, sync, type, records };
}

function writeAvro(file, { schema, meta, codec, sync, records }) {
  const type = avroType(schema);
  const m = {};
  for (const [k, v] of Object.entries(meta)) m[k] = Buffer.from(v, 'utf8');
  m['avro.schema'] = Buffer.from(JSON.stringify(schema), 'utf8');
  m['avro.codec'] = Buffer.from(codec, 'utf8');
  const syncBuf = sync ? Buffer.from(sync, 'hex') : Buffer.from(Array.from({ length: 16 }, (_, i) => i * 17));
  const head = HEADER.toBuffer({ magic: AVRO_MAGIC, meta: m, sync: syncBuf });
  const parts = [head];
  if (records.length) {
    let body = Buffer.concat(records.map((r) => type.toBuffer(r)));
    if (codec === 'deflate') body = zlib.deflateRawSync(body);
    else if (codec !== 'null') die(`avro-write: codec ${codec} (null or deflate)`);
    parts.push(AVRO_LONG.toBuffer(records.length), AVRO_LONG.toBuffer(body.length), body, syncBuf);
  }
  fs.writeFileSync(file, Buffer.concat(parts));
}

// Type-directed conversion between avsc values and plain JSON (for avro-dump/-write).
function toPlain(t, v) {
  if (v === null || v === undefined) return null;
  switch (t.typeName) {
    case 'union:unwrapped':
      return toPlain(t.types.find((u) => u.typeName !== 'null' && u.isValid(v)) ?? t.types[0], v);
    case 'record':
      return Object.fromEntries(t.fields.map((f) => [f.name, toPlain(f.type, v[f.name])]));
    case 'array':
      return v.map((x) => toPlain(t.itemsType, x));
    case 'map':
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toPlain(t.valuesType, x)]));
    case 'bytes':
    case 'fixed':
      return v.toString('hex');
    default:
      return v;
  }
}
function fromPlain(t, v) {
  if (v === null || v === undefined) return null;
  switch (t.typeName) {
    case 'union:unwrapped': {
      const nn = t.types.filter((u) => u.typeName !== 'null');
      if (nn.length !== 1) die('avro-write: only unions of null and one type');
      return fromPlain(nn[0], v);
    }
    case 'record':
      return Object.fromEntries(t.fields.map((f) => [f.name, fromPlain(f.type, v[f.name])]));
    case 'array':
      return v.map((x) => fromPlain(t.itemsType, x));
    case 'map':
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fromPlain(t.valuesType, x)]));
    case 'bytes':
    case 'fixed':
      return Buffer.from(v, 'hex');
    case 'long':
      return BigInt(v);
    case 'int':
    case 'float':
    case 'double':
      return Number(v);
    default:
      return v;
  }
}

// ---------------------------------------------------------------------------
// Puffin and deletion-vector-v1 blobs
// ---------------------------------------------------------------------------
const PUFFIN_MAGIC = Buffer.from([0x50, 0x46, 0x41, 0x31]);
const DV_MAGIC = Buffer.from([0xd1, 0xd3, 0x39, 0x64]);

// The footer: Magic FooterPayload FooterPayloadSize(int32 LE) Flags(4) Magic.
// -> {blobs, properties, footerStart}; throws TableError with the reason.
function readPuffinFooter(buf, file) {
  const bad = (m) => {
    throw new TableError(`${file}: Puffin: ${m}`);
  };
  if (buf.length < 4 + 16) bad(`${buf.length} bytes is too short for a Puffin file`);
  if (!buf.subarray(0, 4).equals(PUFFIN_MAGIC)) bad(`the file does not start with the magic PFA1`);
  if (!buf.subarray(buf.length - 4).equals(PUFFIN_MAGIC)) bad(`the file does not end with the magic PFA1`);
  const flags = buf.subarray(buf.length - 8, buf.length - 4);
  const size = buf.readInt32LE(buf.length - 12);
  const footerStart = buf.length - 12 - size - 4;
  if (size < 0 || footerStart < 4) bad(`FooterPayloadSize ${size} does not fit a ${buf.length}-byte file`);
  if (!buf.subarray(footerStart, footerStart + 4).equals(PUFFIN_MAGIC)) {
    bad(`no magic at the footer's start (offset ${footerStart})`);
  }
  if (flags[0] & 1) bad('the footer payload is LZ4-compressed (flag bit 0); this reader reads uncompressed footers');
  if ((flags[0] & 0xfe) || flags[1] || flags[2] || flags[3]) bad(`reserved flag bits set: ${flags.toString('hex')}`);
  const payload = buf.subarray(footerStart + 4, footerStart + 4 + size).toString('utf8');
  const fm = parseJson(payload, `${file} (Puffin footer)`);
  if (!isObj(fm) || !Array.isArray(fm.blobs)) bad('the footer payload has no "blobs" list');
  return { blobs: fm.blobs, properties: fm.properties, footerStart };
}

// A 32-bit Roaring bitmap in the portable format (RoaringFormatSpec) at
// buf[pos..]: -> {values: number[] (sorted), end}. Throws on anything malformed.
function decodeRoaring32(buf, pos, bad) {
  const start = pos;
  const need = (n) => {
    if (pos + n > buf.length) bad(`Roaring bitmap truncated at byte ${pos} (needs ${n} more)`);
  };
  need(4);
  const cookie = buf.readUInt32LE(pos);
  pos += 4;
  let n;
  let runBits = null;
  let hasOffsets;
  if ((cookie & 0xffff) === 12347) {
    n = (cookie >>> 16) + 1;
    const len = (n + 7) >> 3;
    need(len);
    runBits = buf.subarray(pos, pos + len);
    pos += len;
    hasOffsets = n >= 4;
  } else if (cookie === 12346) {
    need(4);
    n = buf.readUInt32LE(pos);
    pos += 4;
    if (n > 65536) bad(`Roaring bitmap with ${n} containers (at most 65536)`);
    hasOffsets = true;
  } else {
    bad(`Roaring bitmap cookie ${cookie} (neither 12346 nor 12347)`);
  }
  need(4 * n);
  const keys = [];
  const cards = [];
  for (let k = 0; k < n; k++) {
    keys.push(buf.readUInt16LE(pos + 4 * k));
    cards.push(buf.readUInt16LE(pos + 4 * k + 2) + 1);
    if (k && keys[k] <= keys[k - 1]) bad(`Roaring container keys not increasing (${keys[k - 1]}, ${keys[k]})`);
  }
  pos += 4 * n;
  let offsets = null;
  if (hasOffsets) {
    need(4 * n);
    offsets = [];
    for (let k = 0; k < n; k++) offsets.push(buf.readUInt32LE(pos + 4 * k));
    pos += 4 * n;
  }
  const values = [];
  for (let k = 0; k < n; k++) {
    if (offsets && offsets[k] !== pos - start) {
      bad(`Roaring container ${k}: offset header says ${offsets[k]}, it starts at ${pos - start}`);
    }
    const hi = keys[k] * 65536;
    const isRun = runBits && (runBits[k >> 3] >> (k & 7)) & 1;
    if (isRun) {
      need(2);
      const runs = buf.readUInt16LE(pos);
      pos += 2;
      need(4 * runs);
      let total = 0;
      let prevEnd = -1;
      for (let r = 0; r < runs; r++) {
        const s = buf.readUInt16LE(pos + 4 * r);
        const l = buf.readUInt16LE(pos + 4 * r + 2);
        if (s <= prevEnd || s + l > 65535) {
          bad(`Roaring run container ${k}: run ${r} (${s}, ${l}) overlaps or overflows`);
        }
        for (let v = s; v <= s + l; v++) values.push(hi + v);
        total += l + 1;
        prevEnd = s + l;
      }
      pos += 4 * runs;
      if (total !== cards[k]) bad(`Roaring run container ${k}: ${total} values, its header says ${cards[k]}`);
    } else if (cards[k] <= 4096) {
      need(2 * cards[k]);
      let prev = -1;
      for (let j = 0; j < cards[k]; j++) {
        const v = buf.readUInt16LE(pos + 2 * j);
        if (v <= prev) bad(`Roaring array container ${k}: values not increasing (${prev}, ${v})`);
        values.push(hi + v);
        prev = v;
      }
      pos += 2 * cards[k];
    } else {
      need(8192);
      let count = 0;
      for (let w = 0; w < 2048; w++) {
        let word = buf.readUInt32LE(pos + 4 * w);
        while (word) {
          const bit = 31 - Math.clz32(word & -word);
          values.push(hi + w * 32 + bit);
          word &= word - 1;
          count++;
        }
      }
      pos += 8192;
      if (count !== cards[k]) bad(`Roaring bitmap container ${k}: ${count} bits set, its header says ${cards[k]}`);
    }
  }
  return { values, end: pos };
}

// A deletion-vector-v1 blob (exactly its bytes): 4-byte BE length of magic +
// vector, magic D1 D3 39 64, the 64-bit Roaring "portable" vector, CRC-32 (BE)
// of magic + vector. -> {positions: number[], spans: [[key, start, end]...]}.
// Throws TableError naming the first defect (kind: length, magic, crc, bitmap).
class DvError extends TableError {
  constructor(kind, msg) {
    super(msg);
    this.kind = kind;
  }
}
function decodeDv(blob, where) {
  const fail = (kind, m) => {
    throw new DvError(kind, `${where}: deletion-vector-v1: ${m}`);
  };
  if (blob.length < 12) fail('length', `${blob.length} bytes is too short for a blob`);
  const len = blob.readUInt32BE(0);
  if (len + 8 !== blob.length) fail('length', `length field ${len} + 8 != blob size ${blob.length}`);
  if (!blob.subarray(4, 8).equals(DV_MAGIC)) {
    fail('magic', `magic ${blob.subarray(4, 8).toString('hex')} (expected d1d33964)`);
  }
  const crc = blob.readUInt32BE(blob.length - 4);
  const want = crc32(blob.subarray(4, blob.length - 4));
  if (crc !== want) {
    fail('crc', `CRC-32 ${crc.toString(16).padStart(8, '0')} stored, ${want.toString(16).padStart(8, '0')} computed`);
  }
  const vec = blob.subarray(8, blob.length - 4);
  const bad = (m) => fail('bitmap', m);
  if (vec.length < 8) bad('no bitmap count');
  const count = vec.readBigUInt64LE(0);
  if (count > BigInt(vec.length)) bad(`bitmap count ${count} in a ${vec.length}-byte vector`);
  let pos = 8;
  const positions = [];
  const spans = [];
  let prevKey = -1;
  for (let b = 0; b < Number(count); b++) {
    if (pos + 4 > vec.length) bad(`bitmap ${b}: no key`);
    const key = vec.readUInt32LE(pos);
    pos += 4;
    if (key <= prevKey) bad(`bitmap keys not increasing (${prevKey}, ${key})`);
    if (key >= 0x80000000) bad(`key ${key}: positions must be positive 64-bit values`);
    if (key > 0x1fffff) bad(`key ${key}: positions beyond 2^53 (no data file has that many rows)`);
    prevKey = key;
    const r = decodeRoaring32(vec, pos, bad);
    spans.push([key, pos, r.end]);
    for (const v of r.values) positions.push(key * 4294967296 + v);
    pos = r.end;
  }
  if (pos !== vec.length) bad(`${vec.length - pos} bytes after the last bitmap`);
  return { positions, spans, vec };
}

let Roaring = null;
// npm roaring (CRoaring) decodes each 32-bit bitmap of the vector too: its values must be ours.
function roaringPeerAgrees(dv) {
  if (!Roaring) Roaring = requirePeer(peer('roaring')).RoaringBitmap32;
  for (const [key, s, e] of dv.spans) {
    let bm;
    try {
      bm = Roaring.deserialize(dv.vec.subarray(s, e), 'portable');
    } catch (err) {
      return `npm roaring refuses the bitmap of key ${key}: ${err.message}`;
    }
    const theirs = Array.from(bm.toUint32Array(), (v) => key * 4294967296 + v);
    const ours = dv.positions.filter((p) => Math.floor(p / 4294967296) === key);
    if (theirs.length !== ours.length || theirs.some((v, i) => v !== ours[i])) {
      return `npm roaring decodes key ${key} as ${theirs.length} values, this reader as ${ours.length}`;
    }
  }
  return null;
}

// ---------------------------------------------------------------------------
// The spec's tables: Avro schemas of manifest lists and manifests (v3)
// ---------------------------------------------------------------------------
// [field id, name, type, required]; types: a primitive name, or
// {struct: [...]}, {list: [elementId, type]}, {map: [keyId, keyType, valueId, valueType]},
// 'partition' (a struct whose fields are the partition spec's).
const FIELD_SUMMARY = [
  [509, 'contains_null', 'boolean', true],
  [518, 'contains_nan', 'boolean', false],
  [510, 'lower_bound', 'binary', false],
  [511, 'upper_bound', 'binary', false],
];
const MANIFEST_FILE_V3 = [
  [500, 'manifest_path', 'string', true],
  [501, 'manifest_length', 'long', true],
  [502, 'partition_spec_id', 'int', true],
  [517, 'content', 'int', true],
  [515, 'sequence_number', 'long', true],
  [516, 'min_sequence_number', 'long', true],
  [503, 'added_snapshot_id', 'long', true],
  [504, 'added_files_count', 'int', true],
  [505, 'existing_files_count', 'int', true],
  [506, 'deleted_files_count', 'int', true],
  [512, 'added_rows_count', 'long', true],
  [513, 'existing_rows_count', 'long', true],
  [514, 'deleted_rows_count', 'long', true],
  [507, 'partitions', { list: [508, { struct: FIELD_SUMMARY }] }, false],
  [519, 'key_metadata', 'binary', false],
  [520, 'first_row_id', 'long', false],
];
const DATA_FILE_V3 = [
  [134, 'content', 'int', true],
  [100, 'file_path', 'string', true],
  [101, 'file_format', 'string', true],
  [102, 'partition', 'partition', true],
  [103, 'record_count', 'long', true],
  [104, 'file_size_in_bytes', 'long', true],
  [108, 'column_sizes', { map: [117, 'int', 118, 'long'] }, false],
  [109, 'value_counts', { map: [119, 'int', 120, 'long'] }, false],
  [110, 'null_value_counts', { map: [121, 'int', 122, 'long'] }, false],
  [137, 'nan_value_counts', { map: [138, 'int', 139, 'long'] }, false],
  [125, 'lower_bounds', { map: [126, 'int', 127, 'binary'] }, false],
  [128, 'upper_bounds', { map: [129, 'int', 130, 'binary'] }, false],
  [131, 'key_metadata', 'binary', false],
  [132, 'split_offsets', { list: [133, 'long'] }, false],
  [135, 'equality_ids', { list: [136, 'int'] }, false],
  [140, 'sort_order_id', 'int', false],
  [142, 'first_row_id', 'long', false],
  [143, 'referenced_data_file', 'string', false],
  [144, 'content_offset', 'long', false],
  [145, 'content_size_in_bytes', 'long', false],
];
// Not written in v3: v1's deprecated fields (blank in the v2/v3 tables) and the reserved 141.
const DATA_FILE_NOT_V3 = new Map([
  [105, 'block_size_in_bytes'],
  [106, 'file_ordinal'],
  [107, 'sort_columns'],
  [111, 'distinct_counts'],
  [141, '(reserved)'],
]);
const MANIFEST_ENTRY_V3 = [
  [0, 'status', 'int', true],
  [1, 'snapshot_id', 'long', false],
  [3, 'sequence_number', 'long', false],
  [4, 'file_sequence_number', 'long', false],
  [2, 'data_file', { struct: DATA_FILE_V3 }, true],
];
const AVRO_PRIM = { boolean: 'boolean', int: 'int', long: 'long', string: 'string', binary: 'bytes' };

// Checks one Avro record schema against a spec table; calls bad(field, value, msg).
function checkAvroRecord(rec, table, where, bad, opts) {
  if (!isObj(rec) || rec.type !== 'record' || !Array.isArray(rec.fields)) {
    bad(where, rec?.type, 'is not an Avro record');
    return;
  }
  const byName = new Map(table.map((f) => [f[1], f]));
  const byId = new Map(table.map((f) => [f[0], f]));
  const seen = new Set();
  for (const af of rec.fields) {
    const fw = `${where}.${af.name}`;
    const id = af['field-id'];
    const spec = byName.get(af.name);
    if (!Number.isInteger(id)) {
      bad(fw, id, 'has no integer field-id');
      continue;
    }
    if (!spec) {
      if (byId.has(id)) {
        bad(fw, id, `field-id ${id} is the spec's ${byId.get(id)[1]}, not ${af.name}`);
      } else if (opts?.forbidden?.has(id)) {
        bad(fw, id, `field-id ${id} (${opts.forbidden.get(id)}) must not be written in v3`);
      } else {
        opts?.unknown?.(fw, id);
      }
      continue;
    }
    seen.add(af.name);
    if (id !== spec[0]) {
      bad(fw, id, `field-id ${id}, the spec gives ${af.name} the id ${spec[0]}`);
      continue;
    }
    let t = af.type;
    const nullable = Array.isArray(t);
    if (nullable) {
      if (t.length !== 2 || t[0] !== 'null') {
        bad(fw, t, 'an optional field must be a union of null and one type, null first');
        continue;
      }
      t = t[1];
    }
    if (spec[3] && nullable) bad(fw, af.type, `${af.name} is required in v3 but written as nullable`);
    if (!spec[3] && !nullable) bad(fw, af.type, `${af.name} is optional: must be a union with null`);
    if (!spec[3] && nullable && !(has(af, 'default') && af.default === null)) {
      bad(fw, af.default, 'an optional field must have the Avro default null');
    }
    checkAvroType(t, spec[2], fw, bad, opts);
  }
  for (const [id, name, , req] of table) {
    if (req && !seen.has(name)) bad(`${where}.${name}`, undefined, `required field ${name} (id ${id}) is missing`);
  }
}

function checkAvroType(t, spec, where, bad, opts) {
  if (isStr(spec) && spec !== 'partition') {
    const want = AVRO_PRIM[spec];
    const got = isObj(t) ? t.type : t;
    if (got !== want || (isObj(t) && t.logicalType)) {
      bad(where, t, `type ${jsonText(t)}, the spec's ${spec} is Avro ${want}`);
    }
    return;
  }
  if (spec === 'partition') {
    opts.partition(t, where);
    return;
  }
  if (spec.struct) {
    checkAvroRecord(t, spec.struct, where, bad, opts);
    return;
  }
  if (spec.list) {
    if (!isObj(t) || t.type !== 'array') return bad(where, t, 'a list must be an Avro array');
    if (t['element-id'] !== spec.list[0]) {
      bad(where, t['element-id'], `element-id ${t['element-id']}, the spec's is ${spec.list[0]}`);
    }
    checkAvroType(t.items, spec.list[1], `${where}.element`, bad, opts);
    return;
  }
  if (spec.map) {
    const [kid, kt, vid, vt] = spec.map;
    if (isObj(t) && t.type === 'map') {
      if (kt !== 'string') return bad(where, t, 'a map with non-string keys must be an array of key-value records');
      if (t['key-id'] !== kid || t['value-id'] !== vid) {
        bad(where, [t['key-id'], t['value-id']], `key-id/value-id, the spec's are ${kid}/${vid}`);
      }
      checkAvroType(t.values, vt, `${where}.value`, bad, opts);
      return;
    }
    if (!isObj(t) || t.type !== 'array' || t.logicalType !== 'map') {
      return bad(where, t, 'a map must be an array with logicalType map');
    }
    const it = t.items;
    if (!isObj(it) || it.type !== 'record' || !Array.isArray(it.fields) || it.fields.length !== 2) {
      return bad(where, it, 'map items must be a record of key and value');
    }
    const [k, v] = it.fields;
    if (k.name !== 'key' || k['field-id'] !== kid) {
      bad(`${where}.key`, k['field-id'], `field-id ${k['field-id']}, the spec's is ${kid}`);
    }
    if (v.name !== 'value' || v['field-id'] !== vid) {
      bad(`${where}.value`, v['field-id'], `field-id ${v['field-id']}, the spec's is ${vid}`);
    }
    checkAvroType(k.type, kt, `${where}.key`, bad, opts);
    checkAvroType(v.type, vt, `${where}.value`, bad, opts);
  }
}

// ---------------------------------------------------------------------------
// DuckDB: Parquet data files
// ---------------------------------------------------------------------------
const q = (s) => `'${String(s).replaceAll("'", "''")}'`;
const qi = (s) => `"${String(s).replaceAll('"', '""')}"`;

class Parquet {
  async open() {
    const start = process.hrtime.bigint();
    const { DuckDBInstance } = await import(pathToFileURL(peer('@duckdb/node-api')).href);
    this.inst = await DuckDBInstance.create(':memory:');
    this.con = await this.inst.connect();
    timed('duckdb', start);
  }
  async all(sql) {
    const start = process.hrtime.bigint();
    let r;
    try {
      r = await this.con.runAndReadAll(sql);
    } catch (e) {
      throw new TableError(`DuckDB: ${e.message}`);
    } finally {
      timed('duckdb', start);
    }
    return { rows: r.getRows(), names: r.columnNames() };
  }
  // -> {numRows, top: [{name, fieldId, physical, logical, repetition, duckType}]}
  async describe(file) {
    const sch = (await this.all(
        `SELECT name, type, field_id, num_children, repetition_type, logical_type, converted_type
                                 FROM parquet_schema(${q(file)})`)).rows;
    const meta = (await this.all(`SELECT num_rows FROM parquet_file_metadata(${q(file)})`)).rows;
    const desc = (await this.all(`DESCRIBE SELECT * FROM read_parquet(${q(file)})`)).rows;
    let i = 1;
    const skip = () => {
      const r = sch[i++];
      for (let k = 0; k < Number(r[3] ?? 0); k++) skip();
      return r;
    };
    const top = [];
    for (let c = 0; c < Number(sch[0][3] ?? 0); c++) {
      const r = skip();
      top.push({
        name: r[0],
        fieldId: r[2] === null ? null : Number(r[2]),
        physical: r[1],
        repetition: r[4],
        logical: r[5],
        converted: r[6],
        nested: Number(r[3] ?? 0) > 0,
      });
    }
    const types = new Map(desc.map((r) => [String(r[0]), String(r[1])]));
    for (const c of top) c.duckType = types.get(c.name);
    return { numRows: meta.reduce((s, r) => s + Number(r[0]), 0), top };
  }
}

// The SELECT expression that turns a DuckDB column into a JSON-friendly value.
function selectExpr(col, duckType) {
  const c = qi(col);
  const t = duckType ?? '';
  if (t === 'BLOB') return { sql: `hex(${c})` };
  if (t.startsWith('DECIMAL') || ['UUID', 'TIME', 'TIME WITH TIME ZONE', 'INTERVAL'].includes(t)) {
    return { sql: `CAST(${c} AS VARCHAR)` };
  }
  if (t === 'DATE') return { sql: `(${c} - DATE '1970-01-01')` };
  if (t === 'TIMESTAMP_NS') return { sql: `epoch_ns(${c})` };
  if (t.startsWith('TIMESTAMP')) return { sql: `epoch_us(${c})` };
  if (/[[\]]|^STRUCT|^MAP|^UNION/.test(t)) return { sql: `CAST(to_json(${c}) AS VARCHAR)`, json: true };
  return { sql: c };
}

function encValue(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v.toString();
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (v === Infinity) return 'Infinity';
    if (v === -Infinity) return '-Infinity';
    if (Object.is(v, -0)) return '-0.0';
    return v;
  }
  if (typeof v === 'boolean' || typeof v === 'string') return v;
  return String(v);
}

function cmpValue(a, b) {
  const rank = (v) => {
    if (v === null) return 0;
    if (typeof v === 'boolean') return 1;
    return typeof v === 'number' || typeof v === 'bigint' ? 2 : 3;
  };
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 0) return 0;
  if (ra === 2) {
    if (typeof a === 'number' && Number.isNaN(a)) return typeof b === 'number' && Number.isNaN(b) ? 0 : 1;
    if (typeof b === 'number' && Number.isNaN(b)) return -1;
  }
  const sa = ra === 3 ? String(a) : a;
  const sb = ra === 3 ? String(b) : b;
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}
const cmpBig = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
function cmpRow(x, y) {
  for (let i = 0; i < x.length; i++) {
    const c = cmpValue(x[i], y[i]);
    if (c) return c;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// The table: metadata, snapshots, manifest lists, manifests
// ---------------------------------------------------------------------------
const STATUS = { 0: 'EXISTING', 1: 'ADDED', 2: 'DELETED' };
const isDvFile = (df) => df.content === 1 && isStr(df.file_format) && df.file_format.toLowerCase() === 'puffin';
const partKey = (e) => `${e.specId}:${jsonText(e.df.partition)}`;

class Table {
  constructor(metaArg, loc) {
    this.loc = loc;
    this.metaPath = loc.local(metaArg);
    let buf = readLocal(this.metaPath);
    if (buf[0] === 0x1f && buf[1] === 0x8b) buf = zlib.gunzipSync(buf);
    this.meta = parseJson(buf.toString('utf8'), this.metaPath);
    if (!isObj(this.meta)) throw new TableError(`${this.metaPath}: not a JSON object`);
    this.avroCache = new Map();
  }
  snapshots() {
    return Array.isArray(this.meta.snapshots) ? this.meta.snapshots.filter(isObj) : [];
  }
  schemaFor(snap) {
    const schemas = Array.isArray(this.meta.schemas) ? this.meta.schemas : [];
    const id = has(snap, 'schema-id') ? snap['schema-id'] : this.meta['current-schema-id'];
    const s = schemas.find((x) => isObj(x) && x['schema-id'] === id);
    if (!s) throw new TableError(`${this.metaPath}: no schema with schema-id ${show(id)}`);
    return s;
  }
  specById(id) {
    const specs = Array.isArray(this.meta['partition-specs']) ? this.meta['partition-specs'] : [];
    return specs.find((s) => isObj(s) && B(s['spec-id']) === B(id));
  }
  avroAt(uri) {
    const p = this.loc.local(uri);
    if (!this.avroCache.has(p)) this.avroCache.set(p, readAvro(readLocal(p), p));
    return { path: p, ...this.avroCache.get(p) };
  }
  // The walk of one snapshot: its manifest list, each manifest with its entries
  // (inheritance applied), the live data and delete files. Throws TableError
  // when a file cannot be read.
  walk(snap) {
    const list = this.avroAt(snap['manifest-list']);
    const manifests = [];
    const data = [];
    const deletes = [];
    for (const [li, mf] of list.records.entries()) {
      const m = { mf, index: li, uri: mf.manifest_path };
      const a = this.avroAt(mf.manifest_path);
      Object.assign(m, { path: a.path, avro: a });
      m.header = Object.fromEntries(Object.entries(a.meta).map(([k, v]) => [k, v.toString('utf8')]));
      m.entries = [];
      let nullRows = 0n;
      for (const [idx, e] of a.records.entries()) {
        const df = e.data_file;
        const added = e.status === 1;
        const x = {
          manifest: m,
          idx,
          status: e.status,
          raw: e,
          df,
          specId: mf.partition_spec_id,
          snapshotId: e.snapshot_id ?? mf.added_snapshot_id,
          dataSeq: e.sequence_number ?? (added ? mf.sequence_number : null),
          fileSeq: e.file_sequence_number ?? (added ? mf.sequence_number : null),
          firstRowId: null,
          where: `${a.path} entry ${idx}`,
        };
        // First Row ID Inheritance: a null first_row_id is the manifest's plus the
        // record counts of the data files before it that had a null one too.
        if (mf.content === 0 && df.content === 0) {
          if (df.first_row_id !== null && df.first_row_id !== undefined) x.firstRowId = df.first_row_id;
          else if (mf.first_row_id !== null && mf.first_row_id !== undefined) {
            x.firstRowId = mf.first_row_id + nullRows;
            nullRows += df.record_count;
          }
        }
        m.entries.push(x);
        if (e.status === 2) continue;
        if (df.content === 0) data.push(x);
        else deletes.push(x);
      }
      manifests.push(m);
    }
    return { snap, list, manifests, data, deletes };
  }
  readDv(e) {
    const p = this.loc.local(e.df.file_path);
    const buf = readLocal(p);
    const off = e.df.content_offset;
    const size = e.df.content_size_in_bytes;
    const where = `${e.where} (${p} [${show(off)}, +${show(size)}])`;
    if (!isInt(off) || !isInt(size) || off < 0n || size < 0n || off + size > BigInt(buf.length)) {
      throw new DvError('range',
          `${where}: content_offset/content_size_in_bytes do not fit the ${buf.length}-byte file`);
    }
    return decodeDv(buf.subarray(Number(off), Number(off + size)), where);
  }
}

// ---------------------------------------------------------------------------
// rows
// ---------------------------------------------------------------------------
const ICEBERG_ROW_ID = 2147483540;
const ICEBERG_LAST_UPDATED = 2147483539;

function typeName(t) {
  return isStr(t) ? t : isObj(t) ? t.type : String(t);
}

async function snapshotRows(table, pq, snap, lineage) {
  const w = table.walk(snap);
  const r = await entryRows(table, pq, w, table.schemaFor(snap), `snapshot ${snap['snapshot-id']}`, lineage);
  return { sequence_number: encValue(snap['sequence-number']), ...r };
}

// The rows of a walk's live data files (w.data) minus the deletes that apply to
// them (w.deletes), in `schema`'s columns, sorted. `what` names the walk in errors.
async function entryRows(table, pq, w, schema, what, lineage) {
  const fields = Array.isArray(schema.fields) ? schema.fields : [];
  const dvs = new Map();
  const posFiles = [];
  for (const e of w.deletes) {
    if (e.df.content === 2) {
      throw new TableError(
          `${e.where}: equality delete file ${e.df.file_path}: this reader does not apply equality deletes`);
    }
    if (e.df.content !== 1) throw new TableError(`${e.where}: data_file.content ${e.df.content} in a delete manifest`);
    if (e.dataSeq === null) throw new TableError(`${e.where}: ${STATUS[e.status]} entry without a sequence_number`);
    if (!isDvFile(e.df)) {
      posFiles.push(e);
      continue;
    }
    const ref = e.df.referenced_data_file;
    if (!isStr(ref)) throw new TableError(`${e.where}: a deletion vector without referenced_data_file`);
    if (dvs.has(ref)) {
      throw new TableError(`${e.where}: a second deletion vector for ${ref} (the first: ${dvs.get(ref).where})`);
    }
    dvs.set(ref, e);
  }
  const live = new Map();
  for (const e of w.data) {
    if (live.has(e.df.file_path)) throw new TableError(`${e.where}: ${e.df.file_path} is live twice in the snapshot`);
    if (e.dataSeq === null) throw new TableError(`${e.where}: ${STATUS[e.status]} entry without a sequence_number`);
    live.set(e.df.file_path, e);
  }
  for (const [ref, e] of dvs) {
    if (!live.has(ref)) {
      throw new TableError(`${e.where}: the DV's referenced_data_file ${ref} is no live data file of ${what}`);
    }
  }
  const out = [];
  for (const e of w.data) {
    const fmt = String(e.df.file_format).toLowerCase();
    if (fmt !== 'parquet') {
      throw new TableError(`${e.where}: data file format ${e.df.file_format} (this reader reads Parquet)`);
    }
    const local = table.loc.local(e.df.file_path);
    const deleted = new Set();
    const dv = dvs.get(e.df.file_path);
    if (dv && dv.dataSeq >= e.dataSeq && partKey(dv) === partKey(e)) {
      const start = process.hrtime.bigint();
      const d = table.readDv(dv);
      timed('dv', start);
      if (BigInt(d.positions.length) !== dv.df.record_count) {
        throw new TableError(
            `${dv.where}: the DV holds ${d.positions.length} positions, its record_count is ${dv.df.record_count}`);
      }
      const last = d.positions.at(-1);
      if (last !== undefined && BigInt(last) >= e.df.record_count) {
        throw new TableError(
            `${dv.where}: DV position ${last} is past the end of ${e.df.file_path} (${e.df.record_count} rows)`);
      }
      for (const p of d.positions) deleted.add(p);
    } else if (!dv) {
      for (const pf of posFiles) {
        const ref = pf.df.referenced_data_file;
        if (pf.dataSeq < e.dataSeq || partKey(pf) !== partKey(e) || (isStr(ref) && ref !== e.df.file_path)) continue;
        if (String(pf.df.file_format).toLowerCase() !== 'parquet') {
          throw new TableError(`${pf.where}: position delete file format ${pf.df.file_format}`);
        }
        const r = await pq.all(`SELECT pos FROM read_parquet(${q(table.loc.local(pf.df.file_path))})
                                WHERE file_path = ${q(e.df.file_path)}`);
        for (const [p] of r.rows) deleted.add(Number(p));
      }
    }
    const d = await pq.describe(local);
    if (BigInt(d.numRows) !== e.df.record_count) {
      throw new TableError(`${e.where}: ${local} has ${d.numRows} rows, its record_count is ${e.df.record_count}`);
    }
    // Projection by field id; name mapping for files without ids; else the
    // field's initial-default, else null.
    const byId = new Map(d.top.filter((c) => c.fieldId !== null).map((c) => [c.fieldId, c]));
    let mapping = null;
    if (!byId.size && isObj(table.meta.properties) && isStr(table.meta.properties['schema.name-mapping.default'])) {
      mapping = new Map();
      for (const m of parseJson(table.meta.properties['schema.name-mapping.default'], 'schema.name-mapping.default')) {
        if (isInt(m['field-id'])) for (const n of m.names ?? []) mapping.set(n, Number(m['field-id']));
      }
      for (const c of d.top) if (mapping.has(c.name)) byId.set(mapping.get(c.name), c);
    }
    const cols = [];
    for (const f of fields) {
      const c = byId.get(Number(f.id));
      cols.push(c ? selectExpr(c.name,
          c.duckType) : { constant: has(f, 'initial-default') ? f['initial-default'] : null });
    }
    const rowIdCol = lineage ? byId.get(ICEBERG_ROW_ID) : null;
    const lusCol = lineage ? byId.get(ICEBERG_LAST_UPDATED) : null;
    const sel = ['file_row_number'];
    for (const c of cols) if (c.sql) sel.push(c.sql);
    if (rowIdCol) sel.push(qi(rowIdCol.name));
    if (lusCol) sel.push(qi(lusCol.name));
    const r = await pq.all(`SELECT ${sel.join(', ')} FROM read_parquet(${q(local)}, file_row_number=true)`);
    for (const row of r.rows) {
      const pos = Number(row[0]);
      if (deleted.has(pos)) continue;
      let k = 1;
      const vals = cols.map((c) => {
        if (!c.sql) return c.constant;
        const v = row[k++];
        return c.json && v !== null ? JSON.parse(v) : v;
      });
      if (lineage) {
        const rid = rowIdCol ? row[k++] : null;
        const lus = lusCol ? row[k++] : null;
        const first = e.firstRowId;
        vals.push(rid ?? (first === null ? null : first + BigInt(pos)));
        vals.push(lus ?? (first === null ? null : e.dataSeq));
      }
      out.push(vals);
    }
  }
  out.sort(cmpRow);
  const columns = fields.map((f) => f.name);
  const types = fields.map((f) => typeName(f.type));
  if (lineage) {
    columns.push('_row_id', '_last_updated_sequence_number');
    types.push('long', 'long');
  }
  return { columns, types, rows: out.map((r) => r.map(encValue)) };
}

// The rows of an Iceberg REST scan plan's file scan tasks (FileScanTask: a
// data-file and delete-file-references into delete-files; several groups of
// them, one per answer: planTableScan's and each fetchScanTasks'), read as a
// snapshot's entries: each data file minus the deletion vector its task
// references, which must name it (referenced-data-file) and be the only one.
// The plan applies no sequence-number rule: the server chose the deletes.
async function tasksRows(table, pq, groups) {
  const num = (v, where) => {
    if (typeof v !== 'number' && !isInt(v)) throw new TableError(`${where}: not an integer: ${show(v)}`);
    return BigInt(v);
  };
  const w = { data: [], deletes: [] };
  const seen = new Map();
  if (!Array.isArray(groups)) throw new TableError('tasks: expected a list of {file-scan-tasks, delete-files}');
  for (const [gi, g] of groups.entries()) {
    const tasks = g['file-scan-tasks'] ?? [];
    const dels = g['delete-files'] ?? [];
    for (const [ti, t] of tasks.entries()) {
      const where = `group ${gi} file-scan-tasks[${ti}]`;
      const d = t['data-file'];
      if (!isObj(d) || d.content !== 'data' || !isStr(d['file-path'])) throw new TableError(`${where}: no data-file`);
      if (seen.has(d['file-path'])) throw new TableError(`${where}: ${d['file-path']} planned twice (${seen.get(d['file-path'])})`);
      seen.set(d['file-path'], where);
      const e = { df: { content: 0, file_path: d['file-path'], file_format: d['file-format'],
        record_count: num(d['record-count'], where), partition: {} }, specId: 0n, dataSeq: 0n, firstRowId: null,
      where, status: 1 };
      w.data.push(e);
      const refs = t['delete-file-references'] ?? [];
      if (refs.length > 1) throw new TableError(`${where}: ${refs.length} delete files (a DV each at most)`);
      for (const ri of refs) {
        const x = dels[Number(ri)];
        const dw = `group ${gi} delete-files[${ri}] (of ${where})`;
        if (!isObj(x)) throw new TableError(`${dw}: no such delete file`);
        if (x.content !== 'position-deletes' || String(x['file-format']).toLowerCase() !== 'puffin') {
          throw new TableError(`${dw}: content ${show(x.content)}, file-format ${show(x['file-format'])}: not a DV`);
        }
        if (x['referenced-data-file'] !== d['file-path']) {
          throw new TableError(`${dw}: referenced-data-file ${show(x['referenced-data-file'])} is not ${d['file-path']}`);
        }
        w.deletes.push({ df: { content: 1, file_path: x['file-path'], file_format: 'puffin',
          record_count: num(x['record-count'], dw), referenced_data_file: x['referenced-data-file'],
          content_offset: num(x['content-offset'], dw), content_size_in_bytes: num(x['content-size-in-bytes'], dw),
          partition: {} }, specId: 0n, dataSeq: 0n, where: dw, status: 1 });
      }
    }
  }
  const schemas = Array.isArray(table.meta.schemas) ? table.meta.schemas : [];
  const schema = schemas.find((x) => isObj(x) && x['schema-id'] === table.meta['current-schema-id']);
  if (!schema) throw new TableError(`${table.metaPath}: no current schema`);
  return { files: w.data.length, dvs: w.deletes.length, ...await entryRows(table, pq, w, schema, 'the plan', false) };
}

// ---------------------------------------------------------------------------
// check
// ---------------------------------------------------------------------------
class Report {
  constructor(strict) {
    this.strict = strict;
    this.ran = {};
    this.failures = [];
    this.notes = [];
  }
  // One evaluation of a named check; a failure names file, field and value.
  check(name, ok, file, field, value, message) {
    this.ran[name] = (this.ran[name] ?? 0) + 1;
    if (!ok) this.failures.push({ check: name, file, field, value: show(value), message });
    return ok;
  }
  // A check where Iceberg Java departs from the spec's text: a note unless --strict.
  soft(name, ok, file, field, value, message) {
    this.ran[name] = (this.ran[name] ?? 0) + 1;
    if (!ok) (this.strict ? this.failures : this.notes).push({ check: name, file, field, value: show(value), message });
    return ok;
  }
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const OPERATIONS = ['append', 'replace', 'overwrite', 'delete'];
const ICEBERG_PHYSICAL = {
  boolean: ['BOOLEAN'],
  int: ['INT32'],
  long: ['INT64', 'INT32'],
  float: ['FLOAT'],
  double: ['DOUBLE', 'FLOAT'],
  date: ['INT32'],
  time: ['INT64'],
  timestamp: ['INT64'],
  timestamptz: ['INT64'],
  timestamp_ns: ['INT64'],
  timestamptz_ns: ['INT64'],
  string: ['BYTE_ARRAY'],
  uuid: ['FIXED_LEN_BYTE_ARRAY'],
  binary: ['BYTE_ARRAY'],
  fixed: ['FIXED_LEN_BYTE_ARRAY'],
  decimal: ['INT32', 'INT64', 'FIXED_LEN_BYTE_ARRAY'],
};

function checkMetadata(table, rep) {
  const m = table.meta;
  const f = table.metaPath;
  const req = (name, ok, field, value, msg) => rep.check(name, ok, f, field, value, msg);
  req('metadata.format-version', m['format-version'] === 3n, 'format-version', m['format-version'], 'must be 3');
  // Table Metadata Fields, v3: the required ones and their JSON types.
  const REQUIRED = [
    ['format-version', isInt],
    ['table-uuid', (v) => isStr(v) && UUID_RE.test(v)],
    ['location', (v) => isStr(v) && v.length > 0],
    ['last-sequence-number', (v) => isInt(v) && v >= 0n],
    ['last-updated-ms', isInt],
    ['last-column-id', isInt],
    ['schemas', (v) => Array.isArray(v) && v.length > 0],
    ['current-schema-id', isInt],
    ['partition-specs', (v) => Array.isArray(v) && v.length > 0],
    ['default-spec-id', isInt],
    ['last-partition-id', isInt],
    ['sort-orders', (v) => Array.isArray(v) && v.length > 0],
    ['default-sort-order-id', isInt],
    ['next-row-id', (v) => isInt(v) && v >= 0n],
  ];
  for (const [k, ok] of REQUIRED) {
    req('metadata.required', has(m, k) && ok(m[k]), k, m[k],
        has(m, k) ? `${k} has the wrong JSON type or value` : `required field ${k} is missing`);
  }
  // Schemas: field ids (unique, <= last-column-id), names, required flags, types.
  for (const [si, s] of (Array.isArray(m.schemas) ? m.schemas : []).entries()) {
    const where = `schemas[${si}]`;
    req('metadata.schemas', isObj(s) && isInt(s['schema-id']) && s.type === 'struct' && Array.isArray(s.fields),
        where, s?.['schema-id'], 'a schema needs schema-id, type struct and fields');
    if (!isObj(s) || !Array.isArray(s.fields)) continue;
    const ids = new Set();
    const walkFields = (fs, w) => {
      for (const [fi, fld] of fs.entries()) {
        const fw = `${w}.fields[${fi}]`;
        const ok = isObj(fld) && isInt(fld.id) && isStr(fld.name) && typeof fld.required === 'boolean' &&
            fld.type !== undefined;
        if (!req('metadata.schemas', ok, fw, fld, 'a field needs id, name, required and type')) continue;
        req('metadata.schemas', !ids.has(fld.id), `${fw}.id`, fld.id, 'field id used twice in the schema');
        ids.add(fld.id);
        if (isInt(m['last-column-id'])) {
          req('metadata.schemas', fld.id <= m['last-column-id'], `${fw}.id`, fld.id,
              `above last-column-id ${m['last-column-id']}`);
        }
        const t = fld.type;
        if (isObj(t) && t.type === 'struct' && Array.isArray(t.fields)) walkFields(t.fields, `${fw}.type`);
        if (isObj(t) && t.type === 'list') {
          req('metadata.schemas', isInt(t['element-id']) && !ids.has(t['element-id']), `${fw}.type.element-id`,
              t['element-id'], 'a list needs a unique element-id');
          ids.add(t['element-id']);
        }
        if (isObj(t) && t.type === 'map') {
          for (const k of ['key-id', 'value-id']) {
            req('metadata.schemas', isInt(t[k]) && !ids.has(t[k]), `${fw}.type.${k}`, t[k],
                `a map needs a unique ${k}`);
            ids.add(t[k]);
          }
        }
      }
    };
    walkFields(s.fields, where);
  }
  if (isInt(m['current-schema-id']) && Array.isArray(m.schemas)) {
    req('metadata.schemas', m.schemas.some((s) => isObj(s) && s['schema-id'] === m['current-schema-id']),
        'current-schema-id', m['current-schema-id'], 'names no schema in schemas');
  }
  // Partition specs.
  for (const [pi, s] of (Array.isArray(m['partition-specs']) ? m['partition-specs'] : []).entries()) {
    const ok = isObj(s) && isInt(s['spec-id']) && Array.isArray(s.fields);
    if (!req('metadata.partition-specs', ok, `partition-specs[${pi}]`, s, 'a spec needs spec-id and fields')) continue;
    for (const [fi, pf] of s.fields.entries()) {
      const fw = `partition-specs[${pi}].fields[${fi}]`;
      const fok = isObj(pf) && isInt(pf['field-id']) && isStr(pf.name) && isStr(pf.transform) &&
          (isInt(pf['source-id']) || Array.isArray(pf['source-ids']));
      const msg = 'a partition field needs field-id, name, transform and source-id or source-ids';
      if (!req('metadata.partition-specs', fok, fw, pf, msg)) continue;
      if (isInt(m['last-partition-id'])) {
        req('metadata.partition-specs', pf['field-id'] <= m['last-partition-id'], `${fw}.field-id`, pf['field-id'],
            `above last-partition-id ${m['last-partition-id']}`);
      }
    }
  }
  if (isInt(m['default-spec-id']) && Array.isArray(m['partition-specs'])) {
    req('metadata.partition-specs', !!table.specById(m['default-spec-id']), 'default-spec-id', m['default-spec-id'],
        'names no spec in partition-specs');
  }
  // Sort orders (order 0 is the unsorted order).
  for (const [oi, o] of (Array.isArray(m['sort-orders']) ? m['sort-orders'] : []).entries()) {
    const ok = isObj(o) && isInt(o['order-id']) && Array.isArray(o.fields) &&
        (o['order-id'] !== 0n || o.fields.length === 0);
    req('metadata.sort-orders', ok, `sort-orders[${oi}]`, o,
        'a sort order needs order-id and fields; order 0 is unsorted (no fields)');
  }
  if (isInt(m['default-sort-order-id']) && Array.isArray(m['sort-orders'])) {
    const id = m['default-sort-order-id'];
    const ok = m['sort-orders'].some((o) => isObj(o) && o['order-id'] === id);
    req('metadata.sort-orders', ok, 'default-sort-order-id', id, 'names no sort order');
  }
  // Snapshots: the v3 required fields.
  if (has(m, 'snapshots')) {
    req('metadata.snapshot-fields', Array.isArray(m.snapshots), 'snapshots', m.snapshots, 'must be a list');
  }
  const ids = new Set();
  for (const [i, s] of (Array.isArray(m.snapshots) ? m.snapshots : []).entries()) {
    const w = `snapshots[${i}]`;
    if (!req('metadata.snapshot-fields', isObj(s), w, s, 'a snapshot must be an object')) continue;
    for (const [k, ok] of [
      ['snapshot-id', isInt],
      ['sequence-number', (v) => isInt(v) && v >= 0n],
      ['timestamp-ms', isInt],
      ['manifest-list', (v) => isStr(v) && v.length > 0],
      ['summary', isObj],
      ['first-row-id', (v) => isInt(v) && v >= 0n],
      ['added-rows', (v) => isInt(v) && v >= 0n],
    ]) {
      req('metadata.snapshot-fields', has(s, k) && ok(s[k]), `${w}.${k}`, s[k],
          has(s, k) ? `${k} has the wrong JSON type or value` : `required field ${k} is missing`);
    }
    if (isObj(s.summary)) {
      req('metadata.snapshot-fields', OPERATIONS.includes(s.summary.operation), `${w}.summary.operation`,
          s.summary.operation, `must be one of ${OPERATIONS.join(', ')}`);
    }
    if (has(s, 'schema-id') && Array.isArray(m.schemas)) {
      req('metadata.snapshot-fields', m.schemas.some((x) => isObj(x) && x['schema-id'] === s['schema-id']),
          `${w}.schema-id`, s['schema-id'], 'names no schema');
    }
    if (isInt(s['snapshot-id'])) {
      req('metadata.snapshot-fields', !ids.has(s['snapshot-id']), `${w}.snapshot-id`, s['snapshot-id'],
          'snapshot id used twice');
      ids.add(s['snapshot-id']);
    }
  }
  // current-snapshot-id and refs.
  const cur = m['current-snapshot-id'];
  if (cur !== undefined && cur !== null && cur !== -1n) {
    req('metadata.refs', ids.has(cur), 'current-snapshot-id', cur, 'names no snapshot');
    if (isObj(m.refs)) {
      req('metadata.refs', isObj(m.refs.main) && m.refs.main['snapshot-id'] === cur, 'refs.main.snapshot-id',
          m.refs.main?.['snapshot-id'], `must equal current-snapshot-id ${cur}`);
    }
  }
  if (isObj(m.refs)) {
    for (const [name, r] of Object.entries(m.refs)) {
      const ok = isObj(r) && ids.has(r['snapshot-id']) && ['branch', 'tag'].includes(r.type);
      req('metadata.refs', ok, `refs.${name}`, r,
          'a ref needs the id of a snapshot in snapshots and type branch or tag');
    }
  }
  // Sequence numbers: each snapshot's above its parent's, none above last-sequence-number.
  const byId = new Map(table.snapshots().filter((s) => isInt(s['snapshot-id'])).map((s) => [s['snapshot-id'], s]));
  for (const s of byId.values()) {
    const seq = s['sequence-number'];
    if (!isInt(seq)) continue;
    const w = `snapshot ${s['snapshot-id']}.sequence-number`;
    if (isInt(m['last-sequence-number'])) {
      req('snapshot.sequence', seq <= m['last-sequence-number'], w, seq,
          `above last-sequence-number ${m['last-sequence-number']}`);
    }
    const p = byId.get(s['parent-snapshot-id']);
    if (p && isInt(p['sequence-number'])) {
      req('snapshot.sequence', seq > p['sequence-number'], w, seq,
          `not above its parent ${p['snapshot-id']}'s ${p['sequence-number']}`);
    }
  }
  // Row lineage across snapshots: each first-row-id is the table's next-row-id
  // when it was committed (the previous snapshot's first-row-id + added-rows).
  const lin = [...byId.values()]
    .filter((s) => isInt(s['sequence-number']) && isInt(s['first-row-id']) && isInt(s['added-rows']))
    .sort((a, b) => cmpBig(a['sequence-number'], b['sequence-number']));
  for (const [i, s] of lin.entries()) {
    const w = `snapshot ${s['snapshot-id']}.first-row-id`;
    const end = s['first-row-id'] + s['added-rows'];
    if (i === 0 && s['sequence-number'] === 1n) {
      req('lineage.snapshot', s['first-row-id'] === 0n, w, s['first-row-id'],
          'the first snapshot of a v3 table starts at next-row-id 0');
    }
    if (i > 0) {
      const p = lin[i - 1];
      const pend = p['first-row-id'] + p['added-rows'];
      if (s['sequence-number'] === p['sequence-number'] + 1n) {
        req('lineage.snapshot', s['first-row-id'] === pend, w, s['first-row-id'],
            `the previous snapshot ${p['snapshot-id']} (sequence ${p['sequence-number']}) left next-row-id ${pend}`);
      } else {
        req('lineage.snapshot', s['first-row-id'] >= pend, w, s['first-row-id'],
            `below the previous snapshot ${p['snapshot-id']}'s end ${pend}`);
      }
    }
    if (isInt(m['next-row-id'])) {
      req('lineage.snapshot', end <= m['next-row-id'], w, s['first-row-id'],
          `first-row-id + added-rows = ${end} is above the table's next-row-id ${m['next-row-id']}`);
    }
  }
  if (lin.length && isInt(m['next-row-id']) && isInt(m['last-sequence-number'])) {
    const last = lin.at(-1);
    if (last['sequence-number'] === m['last-sequence-number']) {
      const end = last['first-row-id'] + last['added-rows'];
      req('lineage.snapshot', m['next-row-id'] === end, 'next-row-id', m['next-row-id'],
          `the last snapshot ${last['snapshot-id']} ends at ${end}`);
    }
  }
  // version-hint.text next to vN.metadata.json names the newest version.
  const hint = path.join(path.dirname(f), 'version-hint.text');
  if (fs.existsSync(hint)) {
    const t = fs.readFileSync(hint, 'utf8').trim();
    const ok = /^\d+$/.test(t) && fs.existsSync(path.join(path.dirname(f), `v${t}.metadata.json`));
    rep.soft('metadata.version-hint', ok, hint, 'version-hint.text', t, 'must hold N of the newest vN.metadata.json');
  }
}

// seenFiles: files whose own checks already ran (manifests and data files are
// shared by snapshots); puffins: each Puffin file's checked footer.
async function checkSnapshot(table, pq, snap, rep, seenFiles, puffins) {
  const m = table.meta;
  const sid = snap['snapshot-id'];
  const sseq = snap['sequence-number'];
  let w;
  try {
    w = table.walk(snap);
  } catch (e) {
    if (!(e instanceof TableError)) throw e;
    rep.check('files.readable', false, snap['manifest-list'], `snapshot ${sid}`, null, e.message);
    return;
  }
  rep.check('files.readable', true);
  const listFile = w.list.path;
  // The manifest list's Avro schema (manifest_file, v3) and what its header says.
  if (!seenFiles.has(listFile)) {
    seenFiles.add(listFile);
    const bad = (field, value, msg) => rep.check('manifest-list.avro-schema', false, listFile, field, value, msg);
    rep.check('manifest-list.avro-schema', true);
    checkAvroRecord(w.list.schema, MANIFEST_FILE_V3, 'manifest_file', bad, {
      unknown: (fw, id) => rep.soft('manifest-list.avro-schema', false, listFile, fw, id,
          'a field the v3 manifest_file table does not have'),
      partition: () => {},
    });
  }
  const lh = Object.fromEntries(Object.entries(w.list.meta).map(([k, v]) => [k, v.toString('utf8')]));
  const listKeys = [
    ['snapshot-id', sid],
    ['sequence-number', sseq],
    ['first-row-id', snap['first-row-id']],
    ['format-version', 3n],
  ];
  for (const [k, want] of listKeys) {
    if (has(lh, k) && want !== undefined) {
      rep.check('manifest-list.metadata', lh[k] === String(want), listFile, `header ${k}`, lh[k],
          `the metadata says ${want}`);
    }
  }
  const paths = new Set();
  for (const man of w.manifests) {
    const mf = man.mf;
    const mw = `manifest_file[${man.index}] (${mf.manifest_path})`;
    const L = (name, ok, field, value, msg) => rep.check(name, ok, listFile, `${mw}.${field}`, value, msg);
    L('manifest-list.entries', !paths.has(mf.manifest_path), 'manifest_path', mf.manifest_path, 'listed twice');
    paths.add(mf.manifest_path);
    L('manifest-list.entries', mf.content === 0 || mf.content === 1, 'content', mf.content,
        'must be 0 (data) or 1 (deletes)');
    L('manifest-list.entries', !!table.specById(mf.partition_spec_id), 'partition_spec_id', mf.partition_spec_id,
        'names no spec in partition-specs');
    L('manifest-list.length', mf.manifest_length === BigInt(readLocal(man.path).length), 'manifest_length',
        mf.manifest_length, `the file has ${readLocal(man.path).length} bytes`);
    // Sequence numbers of the manifest.
    if (isInt(sseq)) {
      L('manifest.sequence', mf.sequence_number <= sseq, 'sequence_number', mf.sequence_number,
          `above the snapshot's ${sseq}`);
      if (mf.added_snapshot_id === sid) {
        L('manifest.sequence', mf.sequence_number === sseq, 'sequence_number', mf.sequence_number,
            `added by this snapshot: must be its sequence number ${sseq}`);
      }
    }
    L('manifest.sequence', mf.min_sequence_number <= mf.sequence_number, 'min_sequence_number',
        mf.min_sequence_number, `above sequence_number ${mf.sequence_number}`);
    const liveSeqs = man.entries.filter((e) => e.status !== 2 && e.dataSeq !== null).map((e) => e.dataSeq);
    if (liveSeqs.length) {
      const min = liveSeqs.reduce((a, b) => (b < a ? b : a));
      L('manifest.sequence', mf.min_sequence_number <= min, 'min_sequence_number', mf.min_sequence_number,
          `above the smallest live data sequence number ${min}`);
    }
    // Counts in the list against the manifest's entries.
    const cnt = { 0: [0, 0n], 1: [0, 0n], 2: [0, 0n] };
    for (const e of man.entries) {
      if (cnt[e.status]) {
        cnt[e.status][0]++;
        cnt[e.status][1] += e.df.record_count;
      }
    }
    for (const [field, want] of [
      ['added_files_count', cnt[1][0]],
      ['existing_files_count', cnt[0][0]],
      ['deleted_files_count', cnt[2][0]],
      ['added_rows_count', cnt[1][1]],
      ['existing_rows_count', cnt[0][1]],
      ['deleted_rows_count', cnt[2][1]],
    ]) {
      L('manifest-list.counts', B(mf[field]) === B(want), field, mf[field], `the manifest's entries give ${want}`);
    }
    if (seenFiles.has(man.path)) continue;
    seenFiles.add(man.path);
    // The manifest's header keys and Avro schema (manifest_entry, v3).
    const H = (name, ok, field, value, msg) => rep.check(name, ok, man.path, field, value, msg);
    const hd = man.header;
    for (const k of ['schema', 'partition-spec', 'partition-spec-id', 'format-version', 'content']) {
      H('manifest.metadata', has(hd, k), `header ${k}`, hd[k], `required key ${k} is missing`);
    }
    rep.soft('manifest.metadata', has(hd, 'schema-id'), man.path, 'header schema-id', hd['schema-id'],
        'required key schema-id is missing (v2+: required)');
    if (has(hd, 'format-version')) {
      H('manifest.metadata', hd['format-version'] === '3', 'header format-version', hd['format-version'],
          'must be "3"');
    }
    if (has(hd, 'content')) {
      H('manifest.metadata', hd.content === (mf.content === 1 ? 'deletes' : 'data'), 'header content', hd.content,
          `the manifest list says content ${mf.content}`);
    }
    if (has(hd, 'partition-spec-id')) {
      H('manifest.metadata', hd['partition-spec-id'] === String(mf.partition_spec_id), 'header partition-spec-id',
          hd['partition-spec-id'], `the manifest list says ${mf.partition_spec_id}`);
    }
    const spec = table.specById(mf.partition_spec_id);
    if (has(hd, 'partition-spec')) {
      let ps = null;
      try {
        ps = parseJson(hd['partition-spec'], `${man.path} header partition-spec`);
      } catch {
        ps = null;
      }
      H('manifest.metadata', Array.isArray(ps) && (!spec || jsonText(ps) === jsonText(spec.fields)),
          'header partition-spec', hd['partition-spec'],
          `must be the fields of spec ${mf.partition_spec_id}: ${jsonText(spec?.fields)}`);
    }
    if (has(hd, 'schema')) {
      let sc = null;
      try {
        sc = parseJson(hd.schema, `${man.path} header schema`);
      } catch {
        sc = null;
      }
      H('manifest.metadata', isObj(sc) && sc.type === 'struct' && Array.isArray(sc.fields), 'header schema',
          hd.schema, 'must be a table schema (a JSON struct)');
      if (has(hd, 'schema-id') && isObj(sc) && has(sc, 'schema-id')) {
        H('manifest.metadata', hd['schema-id'] === String(sc['schema-id']), 'header schema-id', hd['schema-id'],
            `the schema says ${sc['schema-id']}`);
      }
    }
    const bad = (field, value, msg) => H('manifest.avro-schema', false, field, value, msg);
    H('manifest.avro-schema', true);
    checkAvroRecord(man.avro.schema, MANIFEST_ENTRY_V3, 'manifest_entry', bad, {
      forbidden: DATA_FILE_NOT_V3,
      unknown: (fw, id) => rep.soft('manifest.avro-schema', false, man.path, fw, id,
          'a field the v3 manifest_entry/data_file tables do not have'),
      partition: (t, where) => {
        if (!isObj(t) || t.type !== 'record' || !Array.isArray(t.fields)) {
          return bad(where, t, 'partition must be a record');
        }
        const pf = spec && Array.isArray(spec.fields) ? spec.fields : [];
        const got = t.fields.map((x) => [x.name, x['field-id']]);
        const want = pf.map((x) => [x.name, Number(x['field-id'])]);
        if (jsonText(got) !== jsonText(want)) {
          bad(where, got, `partition fields must carry the ids of spec ${mf.partition_spec_id}: ${jsonText(want)}`);
        }
      },
    });
    // Entries.
    const sortOrders = Array.isArray(m['sort-orders']) ? m['sort-orders'] : null;
    for (const e of man.entries) {
      const E = (name, ok, field, value, msg) => rep.check(name, ok, man.path, `entry ${e.idx}.${field}`, value, msg);
      const df = e.df;
      E('entry.status', [0, 1, 2].includes(e.status), 'status', e.status, 'must be 0, 1 or 2');
      if (e.status !== 1) {
        const raw = [e.raw.sequence_number, e.raw.file_sequence_number];
        E('entry.sequence-inheritance', raw[0] !== null && raw[1] !== null, 'sequence_number', raw,
            `${STATUS[e.status]} entries must carry both sequence numbers (only ADDED ones inherit)`);
      } else {
        const fsn = e.raw.file_sequence_number;
        if (fsn !== null) {
          E('entry.sequence-inheritance', fsn === mf.sequence_number, 'file_sequence_number', fsn,
              `an ADDED entry's file sequence number is the manifest's ${mf.sequence_number}`);
        }
        E('entry.snapshot-id', e.snapshotId === mf.added_snapshot_id, 'snapshot_id', e.snapshotId,
            `an ADDED entry's snapshot is the manifest's added_snapshot_id ${mf.added_snapshot_id}`);
      }
      if (e.dataSeq !== null && e.fileSeq !== null) {
        E('entry.sequence', e.dataSeq <= e.fileSeq, 'sequence_number', e.dataSeq,
            `above its file_sequence_number ${e.fileSeq}`);
        E('entry.sequence', e.fileSeq <= mf.sequence_number, 'file_sequence_number', e.fileSeq,
            `above the manifest's sequence number ${mf.sequence_number}`);
      }
      E('entry.content', mf.content === 0 ? df.content === 0 : df.content === 1 || df.content === 2,
          'data_file.content', df.content, `in a ${mf.content === 0 ? 'data' : 'delete'} manifest`);
      const uri = isStr(df.file_path) && /^[A-Za-z][A-Za-z0-9+.-]*:\//.test(df.file_path);
      E('entry.file-path', uri, 'data_file.file_path', df.file_path, 'must be a full URI with a file system scheme');
      if (isStr(m.location) && isStr(df.file_path)) {
        const under = df.file_path.startsWith(m.location.replace(/\/+$/, '') + '/');
        rep.soft('entry.file-path', under, man.path, `entry ${e.idx}.data_file.file_path`, df.file_path,
            `not under the table location ${m.location}`);
      }
      const fmt = isStr(df.file_format) ? df.file_format : '';
      E('entry.file-format', ['avro', 'orc', 'parquet', 'puffin'].includes(fmt.toLowerCase()),
          'data_file.file_format', df.file_format, 'must be avro, orc, parquet or puffin');
      rep.soft('entry.file-format', ['avro', 'orc', 'parquet', 'puffin'].includes(fmt), man.path,
          `entry ${e.idx}.data_file.file_format`, fmt, 'the spec spells the format names in lower case');
      E('entry.record-count', df.record_count >= 0n, 'data_file.record_count', df.record_count, 'negative');
      if (df.sort_order_id !== null && df.sort_order_id !== undefined && sortOrders && df.content !== 1) {
        E('entry.sort-order-id', sortOrders.some((o) => isObj(o) && o['order-id'] === BigInt(df.sort_order_id)),
            'data_file.sort_order_id', df.sort_order_id, 'names no sort order in the metadata');
      }
      if (df.content !== 0) {
        E('lineage.data-file-row-ids', df.first_row_id === null, 'data_file.first_row_id', df.first_row_id,
            'must be null for delete files');
      }
      // The file itself: present, of the size the entry says.
      let local = null;
      try {
        local = table.loc.local(df.file_path);
      } catch (err) {
        E('files.readable', false, 'data_file.file_path', df.file_path, err.message);
      }
      if (local && !(e.status === 2)) {
        let size = null;
        try {
          size = fs.statSync(local).size;
        } catch (err) {
          E('files.readable', false, 'data_file.file_path', df.file_path, `${local}: ${err.code || err.message}`);
        }
        if (size !== null) {
          E('entry.file-size', df.file_size_in_bytes === BigInt(size), 'data_file.file_size_in_bytes',
              df.file_size_in_bytes, `${local} has ${size} bytes`);
        }
      }
    }
  }
  // Live files of the snapshot: unique, readable Parquet with the schema's field ids.
  const live = new Map();
  const uniq = new Set();
  for (const e of [...w.data, ...w.deletes]) {
    const key = isDvFile(e.df) ? `${e.df.file_path}@${e.df.content_offset}` : e.df.file_path;
    rep.check('snapshot.unique-files', !uniq.has(key), e.manifest.path, `entry ${e.idx}.data_file.file_path`,
        e.df.file_path, `live twice in snapshot ${sid}`);
    uniq.add(key);
  }
  for (const e of w.data) live.set(e.df.file_path, e);
  const schemas = Array.isArray(m.schemas) ? m.schemas.filter(isObj) : [];
  let snapSchema = null;
  try {
    snapSchema = table.schemaFor(snap);
  } catch {
    snapSchema = null;
  }
  for (const e of w.data) {
    if (seenFiles.has(`data:${e.df.file_path}`)) continue;
    seenFiles.add(`data:${e.df.file_path}`);
    if (String(e.df.file_format).toLowerCase() !== 'parquet') continue;
    const P = (name, ok, field, value, msg) => rep.check(name, ok, e.df.file_path, field, value, msg);
    let d;
    try {
      d = await pq.describe(table.loc.local(e.df.file_path));
    } catch (err) {
      P('files.readable', false, 'parquet', null, `DuckDB cannot read it: ${err.message}`);
      continue;
    }
    P('data-file.record-count', BigInt(d.numRows) === e.df.record_count, 'num_rows', d.numRows,
        `the manifest entry (${e.where}) says record_count ${e.df.record_count}`);
    const nameMapping = isObj(m.properties) && isStr(m.properties['schema.name-mapping.default']);
    for (const c of d.top) {
      if (c.fieldId === null) {
        P('data-file.field-ids', nameMapping, `column ${c.name}`, null,
            'no field_id, and the table has no schema.name-mapping.default');
        continue;
      }
      const known = schemas.some((s) => (s.fields ?? []).some((x) => Number(x.id) === c.fieldId && x.name === c.name));
      P('data-file.field-ids', known || c.fieldId >= 2147483447, `column ${c.name}`, c.fieldId,
          'no schema of the table has a top-level field with this name and id');
      const fl = (snapSchema?.fields ?? []).find((x) => Number(x.id) === c.fieldId);
      if (!fl || !isStr(fl.type)) continue;
      const base = fl.type.replace(/\(.*$/, '');
      const phys = ICEBERG_PHYSICAL[base];
      if (phys) {
        P('data-file.types', phys.includes(c.physical), `column ${c.name}`, c.physical,
            `Iceberg ${fl.type} is stored as ${phys.join(' or ')}`);
      }
      if (base.startsWith('timestamp')) {
        const utc = /isAdjustedToUTC=(1|true)/.test(c.logical ?? '');
        const nanos = /NANOS=NanoSeconds/.test(c.logical ?? '');
        const wantUtc = base.startsWith('timestamptz');
        const wantNs = base.endsWith('_ns');
        P('data-file.types', utc === wantUtc && nanos === wantNs, `column ${c.name}`, c.logical,
            `Iceberg ${fl.type}: TIMESTAMP(${wantNs ? 'NANOS' : 'MICROS'}) with isAdjustedToUTC=${wantUtc}`);
      }
      if (fl.required === true) {
        rep.soft('data-file.types', c.repetition === 'REQUIRED', e.df.file_path, `column ${c.name}`, c.repetition,
            'a required Iceberg field stored as an OPTIONAL column');
      }
    }
  }
  // Deletion vectors: entry fields, the Puffin footer's blob, the blob itself,
  // one per data file, pointing at a live data file they apply to.
  const dvFor = new Map();
  for (const e of w.deletes) {
    const df = e.df;
    const at = `entry ${e.idx}.data_file`;
    const D = (name, ok, field, value, msg) => rep.check(name, ok, e.manifest.path, `${at}.${field}`, value, msg);
    if (df.content === 1 && !isDvFile(df)) {
      D('dv.entry', e.status !== 1, 'file_format', df.file_format,
          'position delete files must not be added to v3 tables (deletion vectors only)');
      continue;
    }
    if (!isDvFile(df)) continue;
    D('dv.entry', isStr(df.referenced_data_file), 'referenced_data_file', df.referenced_data_file,
        'required for deletion vectors');
    const range = [df.content_offset, df.content_size_in_bytes];
    D('dv.entry', isInt(range[0]) && isInt(range[1]), 'content_offset', range,
        'content_offset and content_size_in_bytes are required for deletion vectors');
    rep.soft('dv.entry', df.sort_order_id === null, e.manifest.path, `entry ${e.idx}.data_file.sort_order_id`,
        df.sort_order_id, 'position deletes should set sort_order_id to null');
    const ref = df.referenced_data_file;
    if (isStr(ref)) {
      const target = live.get(ref);
      D('dv.referenced-data-file', !!target, 'referenced_data_file', ref,
          `names no live data file of snapshot ${sid} (compared byte for byte)`);
      const first = dvFor.get(ref);
      D('dv.one-per-file', !first, 'referenced_data_file', ref,
          `a second DV for this data file in snapshot ${sid} (the first: ${first?.where})`);
      dvFor.set(ref, e);
      if (target) {
        D('dv.applies', e.dataSeq !== null && e.dataSeq >= target.dataSeq, 'sequence_number', e.dataSeq,
            `below its data file's data sequence number ${target.dataSeq}: the DV would not apply`);
        D('dv.partition', partKey(e) === partKey(target), 'partition', jsonText(df.partition),
            `the data file's is spec ${target.specId} ${jsonText(target.df.partition)}`);
      }
    }
    if (!isInt(df.content_offset) || !isInt(df.content_size_in_bytes)) continue;
    // The Puffin file and its footer (checked once per file).
    let local;
    try {
      local = table.loc.local(df.file_path);
    } catch {
      continue;
    }
    if (!puffins.has(local)) puffins.set(local, checkPuffin(local, rep));
    const pf = puffins.get(local);
    if (!pf.footer) continue;
    const blob = pf.blobs.find((b) => b.offset === df.content_offset && b.length === df.content_size_in_bytes);
    const all = pf.blobs.map((b) => `[${b.offset}, ${b.length}]`).join(' ');
    D('dv.blob-range', !!blob, 'content_offset', [df.content_offset, df.content_size_in_bytes],
        `no blob of ${local}'s footer has this offset and length (blobs: ${all})`);
    if (!blob) continue;
    const props = isObj(blob.meta.properties) ? blob.meta.properties : {};
    D('dv.blob-property', props['referenced-data-file'] === ref, 'referenced_data_file', ref,
        `the Puffin blob's referenced-data-file is ${show(props['referenced-data-file'])}`);
    if (blob.dv) {
      D('dv.cardinality', df.record_count === BigInt(blob.dv.positions.length), 'record_count', df.record_count,
          `the blob holds ${blob.dv.positions.length} positions`);
      const target = isStr(ref) ? live.get(ref) : null;
      const last = blob.dv.positions.at(-1);
      if (target && last !== undefined) {
        D('dv.positions', BigInt(last) < target.df.record_count, 'record_count', last,
            `DV position ${last} is past the end of ${ref} (${target.df.record_count} rows)`);
      }
    }
  }
  // Row lineage inside the snapshot: manifests' and data files' first_row_id.
  if (isInt(snap['first-row-id']) && isInt(snap['added-rows'])) {
    const lo = snap['first-row-id'];
    const hi = lo + snap['added-rows'];
    const fresh = [];
    for (const man of w.manifests) {
      const mf = man.mf;
      const field = `manifest_file[${man.index}].first_row_id`;
      if (mf.content === 1) {
        rep.check('lineage.manifest-first-row-id', mf.first_row_id === null, listFile, field, mf.first_row_id,
            'must be null for delete manifests');
        continue;
      }
      const msg = 'every data manifest of a v3 snapshot must have a first_row_id';
      if (!rep.check('lineage.manifest-first-row-id', mf.first_row_id !== null, listFile, field, null, msg)) continue;
      if (mf.added_snapshot_id === sid) {
        const inherit = man.entries
          .filter((e) => e.df.content === 0 && e.df.first_row_id === null)
          .reduce((s, e) => s + e.df.record_count, 0n);
        fresh.push({ man, field, first: mf.first_row_id, inherit });
      }
    }
    fresh.sort((a, b) => cmpBig(a.first, b.first));
    for (const [i, x] of fresh.entries()) {
      const next = i + 1 < fresh.length ? fresh[i + 1].first : hi;
      rep.check('lineage.manifest-first-row-id', x.first >= lo, listFile, x.field, x.first,
          `below the snapshot's first-row-id ${lo}`);
      const what = i + 1 < fresh.length ? 'the next new manifest' : "the snapshot's first-row-id + added-rows";
      rep.check('lineage.manifest-first-row-id', x.first + x.inherit <= next, listFile, x.field, x.first,
          `its ${x.inherit} rows to assign run past ${next} (${what})`);
    }
    const ranges = [];
    for (const e of w.data) {
      const ok = rep.check('lineage.data-file-row-ids', e.firstRowId !== null, e.manifest.path,
          `entry ${e.idx}.data_file.first_row_id`, null, 'no first_row_id (none written, none to inherit)');
      if (!ok) continue;
      ranges.push([e.firstRowId, e.firstRowId + e.df.record_count, e]);
      if (isInt(m['next-row-id'])) {
        rep.check('lineage.data-file-row-ids', e.firstRowId + e.df.record_count <= m['next-row-id'], e.manifest.path,
            `entry ${e.idx}.data_file.first_row_id`, e.firstRowId, `its rows run past next-row-id ${m['next-row-id']}`);
      }
    }
    ranges.sort((a, b) => cmpBig(a[0], b[0]));
    for (let i = 1; i < ranges.length; i++) {
      const [s, , e] = ranges[i];
      const [, pe, p] = ranges[i - 1];
      rep.check('lineage.data-file-row-ids', s >= pe, e.manifest.path, `entry ${e.idx}.data_file.first_row_id`, s,
          `row ids overlap those of ${p.df.file_path} (up to ${pe})`);
    }
  }
  // Summary totals, when the summary has them.
  const sum = isObj(snap.summary) ? snap.summary : {};
  const dvs = w.deletes.filter((e) => e.df.content === 1);
  for (const [k, v] of [
    ['total-data-files', BigInt(w.data.length)],
    ['total-delete-files', BigInt(w.deletes.length)],
    ['total-records', w.data.reduce((s, e) => s + e.df.record_count, 0n)],
    ['total-position-deletes', dvs.reduce((s, e) => s + e.df.record_count, 0n)],
  ]) {
    if (has(sum, k)) {
      rep.check('snapshot.summary-totals', sum[k] === String(v), table.metaPath, `snapshot ${sid}.summary.${k}`,
          sum[k], `the manifests give ${v}`);
    }
  }
}

// The Puffin file: footer, each blob's metadata, each deletion-vector-v1 blob
// decoded. -> {footer, blobs: [{offset, length, meta, dv}]}
function checkPuffin(local, rep) {
  const P = (name, ok, field, value, msg) => rep.check(name, ok, local, field, value, msg);
  let buf;
  try {
    buf = readLocal(local);
  } catch (e) {
    P('files.readable', false, 'puffin', null, e.message);
    return { footer: null, blobs: [] };
  }
  let footer;
  try {
    footer = readPuffinFooter(buf, local);
  } catch (e) {
    if (!(e instanceof TableError)) throw e;
    P('puffin.footer', false, 'footer', null, e.message);
    return { footer: null, blobs: [] };
  }
  P('puffin.footer', true);
  const blobs = [];
  const spans = [];
  for (const [i, bm] of footer.blobs.entries()) {
    const bw = `blobs[${i}]`;
    const ok = isObj(bm) && isStr(bm.type) && Array.isArray(bm.fields) && isInt(bm['snapshot-id']) &&
        isInt(bm['sequence-number']) && isInt(bm.offset) && isInt(bm.length);
    const msg = 'BlobMetadata needs type, fields, snapshot-id, sequence-number, offset and length';
    if (!P('puffin.footer', ok, bw, bm, msg)) continue;
    const inFile = bm.offset >= 4n && bm.length >= 0n && bm.offset + bm.length <= BigInt(footer.footerStart);
    const area = `outside the blob area [4, ${footer.footerStart})`;
    if (!P('puffin.footer', inFile, `${bw}.offset`, [bm.offset, bm.length], area)) continue;
    spans.push([bm.offset, bm.offset + bm.length, i]);
    const blob = { offset: bm.offset, length: bm.length, meta: bm, dv: null };
    blobs.push(blob);
    if (bm.type !== 'deletion-vector-v1') continue;
    P('dv.blob-type', bm['snapshot-id'] === -1n && bm['sequence-number'] === -1n, `${bw}.snapshot-id`,
        [bm['snapshot-id'], bm['sequence-number']], 'deletion-vector-v1: snapshot-id and sequence-number must be -1');
    P('dv.blob-type', !has(bm, 'compression-codec'), `${bw}.compression-codec`, bm['compression-codec'],
        'deletion-vector-v1 is not compressed: omit compression-codec');
    const props = isObj(bm.properties) ? bm.properties : {};
    P('dv.blob-property', isStr(props['referenced-data-file']), `${bw}.properties.referenced-data-file`,
        props['referenced-data-file'], 'required for deletion-vector-v1');
    P('dv.blob-property', isStr(props.cardinality) && /^(0|[1-9]\d*)$/.test(props.cardinality),
        `${bw}.properties.cardinality`, props.cardinality, 'required: a decimal string');
    let dv;
    try {
      dv = decodeDv(buf.subarray(Number(bm.offset), Number(bm.offset + bm.length)), `${local} ${bw}`);
    } catch (e) {
      if (!(e instanceof DvError)) throw e;
      P(`dv.blob-${e.kind}`, false, bw, null, e.message);
      continue;
    }
    for (const k of ['length', 'magic', 'crc', 'bitmap']) rep.check(`dv.blob-${k}`, true);
    blob.dv = dv;
    P('dv.blob-cardinality', props.cardinality === String(dv.positions.length), `${bw}.properties.cardinality`,
        props.cardinality, `the bitmap holds ${dv.positions.length} positions`);
    const peerMsg = roaringPeerAgrees(dv);
    P('dv.roaring-peer', peerMsg === null, bw, null, peerMsg);
  }
  spans.sort((a, b) => cmpBig(a[0], b[0]));
  for (let i = 1; i < spans.length; i++) {
    P('puffin.footer', spans[i][0] >= spans[i - 1][1], `blobs[${spans[i][2]}].offset`, spans[i][0],
        `overlaps blobs[${spans[i - 1][2]}]`);
  }
  return { footer, blobs };
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------
function parseArgs(argv) {
  const [mode, ...rest] = argv;
  const o = { mode, maps: [], snapshot: null, strict: false, lineage: false, pos: [] };
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--map') {
      const v = rest[++i] ?? die('--map needs PREFIX=DIR');
      const eq = v.lastIndexOf('=');
      if (eq <= 0) die(`--map ${v}: expected PREFIX=DIR`);
      o.maps.push({ prefix: v.slice(0, eq), dir: path.resolve(v.slice(eq + 1)) });
    } else if (a === '--snapshot') {
      const v = rest[++i] ?? die('--snapshot needs an id');
      if (!/^-?\d+$/.test(v)) die(`--snapshot ${v}: not an integer`);
      o.snapshot = BigInt(v);
    } else if (a === '--strict') o.strict = true;
    else if (a === '--lineage') o.lineage = true;
    else if (a.startsWith('--')) die(`unknown option ${a}`);
    else o.pos.push(a);
  }
  return o;
}

function pickSnapshots(table, id) {
  const all = table.snapshots();
  if (id === null) return all;
  const s = all.find((x) => x['snapshot-id'] === id);
  if (!s) {
    throw new TableError(
        `${table.metaPath}: no snapshot ${id} (snapshots: ${all.map((x) => show(x['snapshot-id'])).join(', ')})`);
  }
  return [s];
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.mode === 'avro-dump') {
    if (o.pos.length < 1) die('usage: avro-dump FILE...');
    for (const file of o.pos) {
      const a = readAvro(readLocal(file), file);
      const meta = {};
      for (const [k,
          v] of Object.entries(a.meta)) if (k !== 'avro.schema' && k !== 'avro.codec') meta[k] = v.toString('utf8');
      const recs = a.records.map((r) => toPlain(a.type, r));
      process.stdout.write(jsonText({ codec: a.codec, sync: a.sync.toString('hex'), meta, schema: a.schema,
          records: recs }) + '\n');
    }
    return 0;
  }
  if (o.mode === 'avro-write') {
    if (o.pos.length !== 1) die('usage: avro-write FILE < JSON');
    const doc = parseJson(fs.readFileSync(0, 'utf8'), 'stdin');
    const schema = JSON.parse(jsonText(doc.schema));
    const type = avroType(schema);
    writeAvro(o.pos[0],
        { schema, meta: doc.meta ?? {}, codec: doc.codec ?? 'null', sync: doc.sync,
        records: (doc.records ?? []).map((r) => fromPlain(type, r)) });
    return 0;
  }
  if (o.mode === 'tasks') {
    if (o.pos.length !== 2) die('usage: tasks METADATA TASKS.json [--map PREFIX=DIR]...');
    const loc = new Locator(o.maps);
    const pq = new Parquet();
    await pq.open();
    try {
      const table = new Table(o.pos[0], loc);
      const groups = parseJson(fs.readFileSync(o.pos[1], 'utf8'), o.pos[1]);
      process.stdout.write(JSON.stringify(await tasksRows(table, pq, groups)) + '\n');
    } catch (e) {
      if (!(e instanceof TableError)) throw e;
      die(`tasks: ${e.message}`, 1);
    }
    return 0;
  }
  if ((o.mode !== 'rows' && o.mode !== 'check') || o.pos.length !== 1) {
    die('usage: rows|check METADATA [--map PREFIX=DIR]... [--snapshot ID] [--strict] [--lineage]\n' +
        '       tasks METADATA TASKS.json [--map PREFIX=DIR]...\n' +
        '       avro-dump FILE... | avro-write FILE < JSON');
  }
  const loc = new Locator(o.maps);
  const pq = new Parquet();
  await pq.open();
  if (o.mode === 'rows') {
    let table;
    const out = {};
    try {
      table = new Table(o.pos[0], loc);
      const v = table.meta['format-version'];
      if (!isInt(v) || v < 1n || v > 3n) {
        throw new TableError(`${table.metaPath}: format-version ${show(v)} (this reader reads 1 to 3)`);
      }
      for (const s of pickSnapshots(table, o.snapshot)) out[String(s['snapshot-id'])] = await snapshotRows(table, pq,
          s, o.lineage);
    } catch (e) {
      if (!(e instanceof TableError)) throw e;
      die(`rows: ${e.message}`, 1);
    }
    process.stdout.write(JSON.stringify({
      snapshots: out,
      encoding: 'int/long: JSON numbers, strings beyond 2^53-1; date: days; timestamp(tz): microseconds ' +
        '(_ns: nanoseconds); decimal/uuid/time: strings; binary/fixed: hex',
    }) + '\n');
    const n = Object.values(out).reduce((s, x) => s + x.rows.length, 0);
    process.stderr.write(
        `${PROG}: rows: ${Object.keys(out).length} snapshot(s), ${n} rows, ${fileCache.size} files read, ` +
        `${ms()} ms ${JSON.stringify(roundTimings())}\n`);
    return 0;
  }
  const rep = new Report(o.strict);
  let table;
  try {
    table = new Table(o.pos[0], loc);
  } catch (e) {
    if (!(e instanceof TableError)) throw e;
    rep.check('files.readable', false, o.pos[0], 'metadata', null, e.message);
  }
  if (table) {
    checkMetadata(table, rep);
    let snaps = [];
    try {
      snaps = pickSnapshots(table, o.snapshot);
    } catch (e) {
      rep.check('files.readable', false, table.metaPath, 'snapshots', o.snapshot, e.message);
    }
    const seen = new Set();
    const puffins = new Map();
    for (const s of snaps) {
      if (!isStr(s['manifest-list'])) continue;
      await checkSnapshot(table, pq, s, rep, seen, puffins);
    }
  }
  const ok = rep.failures.length === 0;
  for (const f of rep.failures) process.stderr.write(
      `FAIL ${f.check}: ${f.file}: ${f.field} = ${f.value}: ${f.message}\n`);
  process.stdout.write(JSON.stringify({ ok, ran: rep.ran, failures: rep.failures, notes: rep.notes }) + '\n');
  const nRan = Object.values(rep.ran).reduce((s, x) => s + x, 0);
  process.stderr.write(
      `${PROG}: check: ${Object.keys(rep.ran).length} checks, ${nRan} evaluations, ${rep.failures.length} failures, ` +
      `${rep.notes.length} notes, ${ms()} ms ${JSON.stringify(roundTimings())}\n`);
  return ok ? 0 : 1;
}

function roundTimings() {
  return Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, Math.round(v)]));
}

main().then(
  (code) => process.exit(code),
  (e) => die(e instanceof TableError ? e.message : e.stack || String(e), e instanceof TableError ? 1 : 2),
);
