// ui.js - the deletion vector health page (GET /ui on striked). It uses only
// the public HTTP API of docs/API.md: GET /v1/tables, .../health,
// .../snapshots and .../erasures, every few seconds. A bearer token, when the
// server wants one, is asked once and kept in sessionStorage (this tab only).
// Options in the URL's fragment: #table=NAME&refresh=MS.
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
const frag = new URLSearchParams(location.hash.slice(1));
const REFRESH_MS = Math.max(200, Number(frag.get('refresh')) || 3000);
let current = frag.get('table');
let refreshes = 0;

function $(id) { return document.getElementById(id); }

function token() { return sessionStorage.getItem('strike-token') || ''; }

class ApiError extends Error {
  constructor(status, detail) { super(detail); this.status = status; }
}

async function api(path) {
  const headers = { Accept: 'application/json' };
  if (token()) headers.Authorization = 'Bearer ' + token();
  const r = await fetch(path, { headers, cache: 'no-store' });
  if (!r.ok) {
    let detail = r.statusText;
    try { detail = (await r.json()).detail || detail; } catch (e) { /* not problem+json */ }
    throw new ApiError(r.status, detail);
  }
  return r.json();
}

// every page of a list answer ({"<member>":[...],"next":k|null})
async function pages(path, member, max) {
  let out = null;
  let after = null;
  do {
    const j = await api(path + (after === null ? '' : (path.includes('?') ? '&' : '?') + 'after=' +
                                encodeURIComponent(after)));
    if (out === null) out = j; else out[member] = out[member].concat(j[member]);
    after = j.next;
  } while (after !== null && after !== undefined && out[member].length < max);
  return out;
}

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props || {});
  for (const c of children) e.append(c);
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

const num = new Intl.NumberFormat('en');
function bytes(n) {
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(2) + ' GiB';
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(2) + ' MiB';
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + ' KiB';
  return n + ' B';
}

function renderTables(tables) {
  const ul = $('tables');
  ul.replaceChildren();
  for (const t of tables) {
    const b = el('button', { type: 'button', className: t.name === current ? 'current' : '' },
                 el('span', { textContent: t.name }), el('span', { textContent: 'seq ' + t.seq }));
    b.dataset.table = t.name;
    b.addEventListener('click', () => { current = t.name; setFragment(); refresh(); });
    ul.append(el('li', {}, b));
  }
  $('empty').hidden = tables.length > 0;
}

function setFragment() {
  const f = new URLSearchParams(location.hash.slice(1));
  f.set('table', current);
  history.replaceState(null, '', '#' + f.toString());
}

function renderTotals(h) {
  const items = [
    ['rows', num.format(h.rows)], ['live rows', num.format(h.rows - h.deleted_rows)],
    ['deleted rows', num.format(h.deleted_rows)],
    ['deleted fraction', (100 * h.deleted_fraction).toFixed(1) + ' %'],
    ['data files', num.format(h.data_files)], ['small files', num.format(h.small_files)],
    ['DV bytes', bytes(h.dv_bytes)], ['data bytes', bytes(h.data_bytes)],
    ['snapshots', num.format(h.snapshots)], ['seq', String(h.seq)],
    ['oldest snapshot', h.oldest_snapshot_at ? h.oldest_snapshot_at.replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '-'],
  ];
  $('totals').replaceChildren(...items.map(([k, v]) => {
    const d = el('div', {}, el('dt', { textContent: k }), el('dd', { textContent: v }));
    d.dataset.key = k;
    return d;
  }));
  const advice = h.advice.length ? h.advice.map((a) => el('li', { className: a.action,
    textContent: a.action + ': ' + a.reason })) : [el('li', { className: 'none', textContent: 'nothing to do' })];
  $('advice').replaceChildren(...advice);
}

function renderFiles(files) {
  const s = $('files');
  const W = 18, H = 160, top = 10, bottom = 22, left = 34;
  const width = left + Math.max(1, files.length) * W + 10;
  s.setAttribute('width', width);
  s.setAttribute('height', H + top + bottom);
  s.replaceChildren();
  for (const p of [0, 0.3, 0.5, 1]) {
    const y = top + H * (1 - p);
    s.append(svg('line', { x1: left - 4, x2: width, y1: y, y2: y, stroke: p === 0.3 ? '#d08a00' : '#dde1ea' }));
    const t = svg('text', { x: 2, y: y + 3 });
    t.textContent = Math.round(p * 100) + '%';
    s.append(t);
  }
  files.forEach((f, i) => {
    const h = Math.max(f.deleted_fraction > 0 ? 1 : 0, H * f.deleted_fraction);
    const r = svg('rect', { x: left + i * W + 2, y: top + H - h, width: W - 4, height: h,
                            class: 'bar' + (f.deleted_fraction >= 0.5 ? ' high' : f.deleted_fraction >= 0.3 ? ' mid' : '') });
    r.dataset.fileId = f.id;
    r.dataset.deletedFraction = f.deleted_fraction;
    const title = svg('title');
    title.textContent = `file ${f.id}: ${num.format(f.deleted)} of ${num.format(f.rows)} rows deleted ` +
      `(${(100 * f.deleted_fraction).toFixed(1)} %), ${bytes(f.bytes)}, DV ${bytes(f.dv_bytes)}`;
    r.append(title);
    s.append(r);
    const t = svg('text', { x: left + i * W + 2, y: top + H + 14 });
    t.textContent = String(f.id);
    s.append(t);
  });
  $('files-note').textContent = files.length ? `${files.length} live files (bars: deleted fraction; ` +
    'the orange line is the compaction threshold, 30 %)' : 'no data files';
}

function renderSnapshots(snaps) {
  const s = $('snapshots');
  const W = 640, H = 120, left = 34, top = 10, bottom = 22;
  s.setAttribute('width', W + left + 10);
  s.setAttribute('height', H + top + bottom);
  s.replaceChildren();
  if (!snaps.length) return;
  const ts = snaps.map((x) => Date.parse(x.committed_at));
  const t0 = Math.min(...ts), t1 = Math.max(...ts), s0 = snaps[0].seq, s1 = snaps[snaps.length - 1].seq;
  const xOf = (t) => left + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * W;
  const yOf = (q) => top + H - (s1 > s0 ? (q - s0) / (s1 - s0) : 0.5) * H;
  s.append(svg('polyline', { fill: 'none', stroke: '#9aa6c8',
    points: snaps.map((x, i) => `${xOf(ts[i])},${yOf(x.seq)}`).join(' ') }));
  snaps.forEach((x, i) => {
    const c = svg('circle', { cx: xOf(ts[i]), cy: yOf(x.seq), r: 3, class: 'snap ' + x.operation });
    c.dataset.seq = x.seq;
    const title = svg('title');
    title.textContent = `seq ${x.seq} ${x.operation} at ${x.committed_at}`;
    c.append(title);
    s.append(c);
  });
  for (const [q, y] of [[s1, top + 4], [s0, top + H]]) {
    const t = svg('text', { x: 2, y });
    t.textContent = String(q);
    s.append(t);
  }
  const ops = {};
  for (const x of snaps) ops[x.operation] = (ops[x.operation] || 0) + 1;
  $('snapshots-note').textContent = `${snaps.length} retained snapshots, seq ${s0} to ${s1} (` +
    Object.entries(ops).map(([k, v]) => `${v} ${k}`).join(', ') + ')';
}

function renderErasures(list) {
  const rows = list.slice(-10).reverse().map((e) => el('tr', {},
    el('td', { textContent: e.id }), el('td', { textContent: e.status }),
    el('td', { textContent: num.format(e.rows_erased) }), el('td', { textContent: e.verified_at || '-' }),
    el('td', { className: 'digest', textContent: e.key_digest })));
  if (!rows.length) rows.push(el('tr', {}, el('td', { colSpan: 5, textContent: 'none' })));
  $('erasures').tBodies[0].replaceChildren(...rows);
}

function status(text, error) {
  $('status').textContent = text;
  $('status').className = error ? 'error' : '';
}

let timer = null;
async function refresh() {
  clearTimeout(timer);
  try {
    const tables = (await api('/v1/tables')).tables;
    if (!current || !tables.some((t) => t.name === current)) current = tables.length ? tables[0].name : null;
    renderTables(tables);
    $('detail').hidden = current === null;
    if (current !== null) {
      const base = '/v1/tables/' + encodeURIComponent(current);
      const [health, snaps, erasures] = await Promise.all([
        pages(base + '/health', 'files', 5000), pages(base + '/snapshots', 'snapshots', 5000),
        pages(base + '/erasures', 'erasures', 1000)]);
      $('table-name').textContent = current;
      renderTotals(health);
      renderFiles(health.files);
      renderSnapshots(snaps.snapshots);
      renderErasures(erasures.erasures);
    }
    refreshes++;
    document.body.dataset.refreshes = refreshes;
    status('updated ' + new Date().toLocaleTimeString());
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
      $('token-form').hidden = false;
      status('the server wants a token: ' + e.message, true);
    } else {
      status('refresh failed: ' + e.message, true);
    }
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

$('token-button').addEventListener('click', () => { $('token-form').hidden = !$('token-form').hidden; });
$('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem('strike-token', $('token').value.trim());
  $('token').value = '';
  $('token-form').hidden = true;
  refresh();
});
refresh();
