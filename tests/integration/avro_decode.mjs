// avro_decode.mjs - npm avsc (the peer in STRIKE_BUILD_DIR/peers), an Avro
// implementation that shares nothing with ours, as the other side of
// test_avro_avsc.py:
//
//   node avro_decode.mjs decode FILE
//       decodes a container file (avsc checks the magic, every block's sync
//       marker and the codec) and prints {"meta": {key: hex}, "records": [...]}
//   node avro_decode.mjs encode SCHEMA_FILE RECORDS_JSON OUT_FILE BLOCK_SIZE [KEY=VALUE...]
//       writes the records of RECORDS_JSON (the "records" of that same JSON
//       form) with avsc's own encoder, blocks of about BLOCK_SIZE bytes, with
//       the metadata KEY=VALUE
//
// The JSON of values is avro_sample's (tests/integration/avro_sample.c): longs
// as exact integers (BigInt here: avsc's default long would round past 2^53),
// floats and doubles as numbers with "NaN", "Infinity", "-Infinity", "-0.0",
// bytes and fixed as hex, enums as symbols, unions wrapped ({"branch": v}).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

function die(msg) {
  process.stderr.write(`avro_decode.mjs: ${msg}\n`);
  process.exit(2);
}

const build = process.env.STRIKE_BUILD_DIR || die('STRIKE_BUILD_DIR is not set (run through ctest)');
const mods = path.join(build, 'peers', 'node_modules');
if (!fs.existsSync(path.join(mods, 'avsc')))
  die(`no avsc in ${mods}: run scripts/test-peers.sh ${build}`);
const avro = createRequire(path.join(mods, 'x.js'))('avsc');

// Longs as BigInt, exactly (avsc's documented way: LongType.__with).
const longType = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});

function typeOf(schema) {
  return avro.Type.forSchema(schema, {
    wrapUnions: true,
    typeHook: (s) => (s === 'long' || (s && s.type === 'long') ? longType : undefined),
  });
}

// ---- avsc values -> the JSON form ----

// Text that goes into the JSON as it is.
class Raw {
  constructor(text) {
    this.text = text;
  }
}

// A float or double: the special values spelled out, the others as JSON numbers that read
// back as floating point (a ".0" where JavaScript prints an integer).
function num(x) {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  if (Object.is(x, -0)) return '-0.0';
  const s = String(x);
  return new Raw(/[.e]/.test(s) ? s : `${s}.0`);
}

function toPlain(t, v) {
  switch (t.typeName) {
    case 'null':
    case 'boolean':
    case 'int':
    case 'string':
    case 'enum':
      return v;
    case 'abstract:long':
      return v; // a BigInt, written as digits by ser()
    case 'float':
    case 'double':
      return num(v);
    case 'bytes':
    case 'fixed':
      return v.toString('hex');
    case 'array':
      return v.map((x) => toPlain(t.itemsType, x));
    case 'map': {
      const o = {};
      for (const k of Object.keys(v)) o[k] = toPlain(t.valuesType, v[k]);
      return o;
    }
    case 'record': {
      const o = {};
      for (const f of t.fields) o[f.name] = toPlain(f.type, v[f.name]);
      return o;
    }
    case 'union:wrapped': {
      if (v === null) return null;
      const k = Object.keys(v)[0];
      const b = t.types.find((x) => x.branchName === k);
      if (!b) die(`no union branch ${k}`);
      return { [k]: toPlain(b, v[k]) };
    }
    default:
      die(`unexpected avsc type ${t.typeName}`);
  }
}

// stdout may be a non-blocking pipe: write until all of it is out.
function writeAll(text) {
  const b = Buffer.from(text);
  for (let off = 0; off < b.length; ) {
    try {
      off += fs.writeSync(1, b, off);
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
    }
  }
}

function ser(x) {
  if (x === null) return 'null';
  if (typeof x === 'bigint') return x.toString();
  if (x instanceof Raw) return x.text;
  if (Array.isArray(x)) return `[${x.map(ser).join(',')}]`;
  if (typeof x === 'object')
    return `{${Object.keys(x).map((k) => `${JSON.stringify(k)}:${ser(x[k])}`).join(',')}}`;
  return JSON.stringify(x);
}

// ---- the JSON form -> avsc values ----

// JSON with every integer literal as a BigInt (JSON.parse would round longs).
function parseBig(text) {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\r\n'.includes(text[i])) i++;
  };
  const val = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const o = {};
      ws();
      if (text[i] === '}') return i++, o;
      for (;;) {
        ws();
        const k = val();
        ws();
        if (text[i++] !== ':') die(`bad JSON at ${i}`);
        o[k] = val();
        ws();
        if (text[i] === ',') i++;
        else if (text[i++] === '}') return o;
        else die(`bad JSON at ${i}`);
      }
    }
    if (c === '[') {
      i++;
      const a = [];
      ws();
      if (text[i] === ']') return i++, a;
      for (;;) {
        a.push(val());
        ws();
        if (text[i] === ',') i++;
        else if (text[i++] === ']') return a;
        else die(`bad JSON at ${i}`);
      }
    }
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const s = JSON.parse(text.slice(i, j + 1));
      i = j + 1;
      return s;
    }
    const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?|^true|^false|^null/.exec(text.slice(i, i + 400));
    if (!m) die(`bad JSON at ${i}`);
    i += m[0].length;
    if (m[0] === 'true') return true;
    if (m[0] === 'false') return false;
    if (m[0] === 'null') return null;
    return m[1] || m[2] ? Number(m[0]) : BigInt(m[0]);
  };
  return val();
}

function unnum(x) {
  if (typeof x === 'string')
    return { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity, '-0.0': -0 }[x];
  return Number(x);
}

function fromPlain(t, v) {
  switch (t.typeName) {
    case 'null':
    case 'boolean':
    case 'string':
    case 'enum':
      return v;
    case 'int':
      return Number(v);
    case 'abstract:long':
      return BigInt(v);
    case 'float':
    case 'double':
      return unnum(v);
    case 'bytes':
    case 'fixed':
      return Buffer.from(v, 'hex');
    case 'array':
      return v.map((x) => fromPlain(t.itemsType, x));
    case 'map': {
      const o = {};
      for (const k of Object.keys(v)) o[k] = fromPlain(t.valuesType, v[k]);
      return o;
    }
    case 'record': {
      const o = {};
      for (const f of t.fields) o[f.name] = fromPlain(f.type, v[f.name]);
      return o;
    }
    case 'union:wrapped': {
      if (v === null) return null;
      const k = Object.keys(v)[0];
      const b = t.types.find((x) => x.branchName === k);
      if (!b) die(`no union branch ${k}`);
      return { [k]: fromPlain(b, v[k]) };
    }
    default:
      die(`unexpected avsc type ${t.typeName}`);
  }
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'decode') {
  const [file] = args;
  let type = null;
  const meta = {};
  const records = [];
  await new Promise((resolve, reject) => {
    avro
      .createFileDecoder(file, { parseHook: (schema) => (type = typeOf(schema)) })
      .on('metadata', (t, codec, header) => {
        for (const k of Object.keys(header.meta)) meta[k] = header.meta[k].toString('hex');
      })
      .on('data', (rec) => records.push(toPlain(type, rec)))
      .on('error', reject)
      .on('end', resolve);
  }).catch((err) => die(`avsc refused ${file}: ${err.message}`));
  writeAll(`${ser({ meta, records })}\n`);
} else if (cmd === 'encode') {
  const [schemaFile, recordsFile, out, blockSize, ...kv] = args;
  const type = typeOf(JSON.parse(fs.readFileSync(schemaFile, 'utf8')));
  const input = parseBig(fs.readFileSync(recordsFile, 'utf8'));
  const metadata = {};
  for (const s of kv) {
    const eq = s.indexOf('=');
    metadata[s.slice(0, eq)] = Buffer.from(s.slice(eq + 1));
  }
  const enc = new avro.streams.BlockEncoder(type, {
    blockSize: Number(blockSize),
    codec: 'null',
    metadata,
    writeHeader: true, // also with no records
  });
  const sink = fs.createWriteStream(out);
  const done = new Promise((resolve, reject) => {
    sink.on('finish', resolve).on('error', reject);
    enc.on('error', reject);
  });
  enc.pipe(sink);
  for (const r of input.records) enc.write(fromPlain(type, r));
  enc.end();
  await done.catch((err) => die(`avsc could not write ${out}: ${err.message}`));
} else {
  die('usage: avro_decode.mjs decode FILE | encode SCHEMA_FILE RECORDS_JSON OUT BLOCK_SIZE [K=V...]');
}
