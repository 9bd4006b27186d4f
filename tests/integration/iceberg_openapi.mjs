// iceberg_openapi.mjs - validates answers of strike's Iceberg REST catalog against
// the schemas of the Iceberg REST OpenAPI document (components/schemas), with npm
// ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1), ajv-formats and yaml.
// The peers are found in STRIKE_BUILD_DIR/peers/node_modules (scripts/test-peers.sh).
//
//   node iceberg_openapi.mjs SPEC.yaml < [[SCHEMA, DOCUMENT], ...]
//     stdout: [{"schema": SCHEMA, "ok": bool, "errors": [{"path", "message"}...]}, ...]
//     one result per pair, in order. Exit 0 when every document is valid, 1 when
//     some is not, 2 on usage errors, a missing peer or an unknown schema name.
//   node iceberg_openapi.mjs SPEC.yaml --names    the schema names, one a line
//   node iceberg_openapi.mjs SPEC.yaml --paths    {"/v1/{prefix}/...": ["GET", ...], ...}: the
//     document's paths and the methods each defines
//
// How the document becomes one JSON Schema: components/schemas go under $defs and
// every "#/components/schemas/X" reference becomes "#/$defs/X"; OpenAPI's own
// keywords (discriminator, example, nullable, xml...) are not JSON Schema and
// are ignored (strict: false): oneOf/allOf alone decide. A schema is checked
// as written: additional members are allowed wherever the document allows them.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const PROG = 'iceberg_openapi.mjs';
function die(msg, code = 2) {
  process.stderr.write(`${PROG}: ${msg}\n`);
  process.exit(code);
}

const build = process.env.STRIKE_BUILD_DIR || die('STRIKE_BUILD_DIR is not set (run through ctest)');
const mods = path.join(build, 'peers', 'node_modules');
const requirePeer = createRequire(path.join(mods, 'x.js'));
function peer(name) {
  try {
    return requirePeer(name);
  } catch (e) {
    return die(`npm ${name} is not installed in ${mods}: run scripts/test-peers.sh ${build} (${e.message})`);
  }
}
const Ajv2020 = peer('ajv/dist/2020').default;
const addFormats = peer('ajv-formats').default;
const YAML = peer('yaml');

const [specPath, ...rest] = process.argv.slice(2);
if (!specPath) die('usage: iceberg_openapi.mjs SPEC.yaml [--names | --paths] < [[SCHEMA, DOCUMENT], ...]');
let spec;
try {
  spec = YAML.parse(fs.readFileSync(specPath, 'utf8'));
} catch (e) {
  die(`${specPath}: ${e.message}`);
}
const schemas = spec?.components?.schemas;
if (!schemas || typeof schemas !== 'object') die(`${specPath}: no components/schemas`);
if (!String(spec.openapi ?? '').startsWith('3.1')) die(`${specPath}: openapi ${spec.openapi}, expected 3.1.x`);

if (rest.includes('--names')) {
  process.stdout.write(Object.keys(schemas).join('\n') + '\n');
  process.exit(0);
}
if (rest.includes('--paths')) {
  const out = {};
  const verbs = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
  for (const [p, item] of Object.entries(spec.paths ?? {})) out[p] = verbs.filter((v) => item[v]).map((v) => v.toUpperCase());
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

// "#/components/schemas/X" -> "#/$defs/X", everywhere.
function rewrite(v) {
  if (Array.isArray(v)) return v.map(rewrite);
  if (v === null || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === '$ref' && typeof x === 'string') {
      const m = /^#\/components\/schemas\/(.+)$/.exec(x);
      if (!m) die(`a reference outside components/schemas: ${x}`);
      out[k] = `#/$defs/${m[1]}`;
    } else {
      out[k] = rewrite(x);
    }
  }
  return out;
}

const ID = 'https://iceberg.apache.org/rest-catalog-open-api.json';
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
// OpenAPI's format names JSON Schema's vocabulary does not define: annotations only.
for (const f of ['int32', 'int64', 'float', 'double', 'byte', 'binary', 'password', 'Key']) {
  if (!ajv.formats[f]) ajv.addFormat(f, true);
}
ajv.addSchema({ $id: ID, $defs: rewrite(schemas) });

let input;
try {
  input = JSON.parse(fs.readFileSync(0, 'utf8'));
} catch (e) {
  die(`stdin: ${e.message}`);
}
if (!Array.isArray(input)) die('stdin: expected [[SCHEMA, DOCUMENT], ...]');
const results = [];
let bad = 0;
for (const pair of input) {
  if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string') die('stdin: each item is [SCHEMA, DOCUMENT]');
  const [name, doc] = pair;
  if (!Object.prototype.hasOwnProperty.call(schemas, name)) die(`no schema ${name} in ${specPath}`);
  const validate = ajv.getSchema(`${ID}#/$defs/${name}`) || die(`cannot compile ${name}`);
  const ok = validate(doc);
  if (!ok) bad++;
  results.push({
    schema: name,
    ok,
    errors: ok ? [] : validate.errors.map((e) => ({ path: e.instancePath, message: `${e.schemaPath}: ${e.message}` })),
  });
}
process.stdout.write(JSON.stringify(results) + '\n');
process.exit(bad ? 1 : 0);
