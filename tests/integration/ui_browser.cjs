// ui_browser.cjs - drive the /ui page in Debian's chromium (headless) with
// puppeteer-core, for tests/integration/test_ui.py. Steps come as JSON lines
// on stdin, results go out as JSON lines on stdout:
//   {"op":"open","url":...}            -> {"ok":true}
//   {"op":"bars","table":T,"want":F}   wait until table T is shown and a bar's
//                                       deleted fraction is F -> {"bars":[...]}
//   {"op":"text","selector":S}         -> {"text":...}
//   {"op":"screenshot","path":P}       -> {"ok":true}
//   {"op":"close"}                     -> {"console_errors":[...]} and exit
//   NODE_PATH=BUILD/peers/node_modules node ui_browser.cjs CHROMIUM
'use strict';
const puppeteer = require('puppeteer-core');
const readline = require('readline');

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.argv[2],
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn') errors.push(m.type() + ': ' + m.text()); });
  page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
  page.on('requestfailed', (r) => errors.push('requestfailed: ' + r.url() + ' ' + (r.failure() || {}).errorText));
  const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const s = JSON.parse(line);
    try {
      if (s.op === 'open') {
        const r = await page.goto(s.url, { waitUntil: 'load' });
        out({ ok: true, status: r.status(), csp: r.headers()['content-security-policy'] || null });
      } else if (s.op === 'bars') {
        await page.waitForFunction((table, want) => {
          if (document.getElementById('table-name').textContent !== table) return false;
          const bars = [...document.querySelectorAll('#files rect[data-file-id]')];
          return bars.some((b) => Number(b.dataset.deletedFraction) === want);
        }, { timeout: 60000, polling: 100 }, s.table, s.want);
        const bars = await page.$$eval('#files rect[data-file-id]', (bs) => bs.map((b) => ({
          id: Number(b.dataset.fileId), fraction: Number(b.dataset.deletedFraction),
          height: Number(b.getAttribute('height')) })));
        out({ bars, refreshes: await page.$eval('body', (b) => Number(b.dataset.refreshes)) });
      } else if (s.op === 'text') {
        out({ text: await page.$eval(s.selector, (e) => e.textContent) });
      } else if (s.op === 'screenshot') {
        await page.screenshot({ path: s.path, fullPage: true });
        out({ ok: true });
      } else if (s.op === 'close') {
        await browser.close();
        out({ console_errors: errors });
        process.exit(0);
      }
    } catch (e) {
      out({ error: String(e && e.stack || e), console_errors: errors });
    }
  }
})().catch((e) => { process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n'); process.exit(1); });
