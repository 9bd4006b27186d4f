"""The deletion vector health page (GET /ui) in a real browser: Debian's
chromium, headless, driven by puppeteer-core (tests/peers, installed by
scripts/test-peers.sh BUILD_DIR) through ui_browser.cjs.

- /ui, /ui/ui.js, /ui/ui.css answer with their types and a strict CSP;
  HEAD works; an unknown asset is 404; POST is 405;
- the page loads with no console error, lists a table the test created and
  shows its bar chart (one bar per file, deleted fraction 0);
- after a delete made by the test, a refresh shows the bar at the new
  deleted fraction (and compaction advice); after an erasure, the rewritten
  file's bar and the receipt;
- a screenshot is saved as BUILD_DIR/ui-health.png for a person to look at.
"""
import json
import os
import shutil
import subprocess
import unittest

import harness as h

BUILD_DIR = os.environ.get("STRIKE_BUILD_DIR", "")
NODE_MODULES = os.path.join(BUILD_DIR, "peers", "node_modules")
HERE = os.path.dirname(os.path.abspath(__file__))


def chromium():
    for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.path.exists(p):
            return p
    raise AssertionError("chromium is not installed: run make deps (scripts/deps.sh)")


class Browser:
    def __init__(self):
        if not os.path.isdir(os.path.join(NODE_MODULES, "puppeteer-core")):
            raise AssertionError(f"puppeteer-core is not installed in {NODE_MODULES}: "
                                 "run scripts/test-peers.sh BUILD_DIR")
        self.p = subprocess.Popen(["node", os.path.join(HERE, "ui_browser.cjs"), chromium()],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, NODE_PATH=NODE_MODULES))

    def step(self, **s):
        self.p.stdin.write(json.dumps(s) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise AssertionError(f"the browser driver ended (exit {self.p.wait()})")
        r = json.loads(line)
        if "error" in r:
            raise AssertionError(f"browser step {s}: {r['error']}\nconsole: {r.get('console_errors')}")
        return r

    def close(self):
        r = self.step(op="close")
        self.p.wait(timeout=60)
        return r["console_errors"]


class Ui(unittest.TestCase):
    def test_page(self):
        url = h.create_db("strike_ui")
        with h.Striked(catalog=url, extra_args=["--compact-interval", "0"]) as s:
            # the assets
            r = s.req("GET", "/ui")
            self.assertEqual(r.status, 200)
            self.assertEqual(r.header("Content-Type"), "text/html; charset=utf-8")
            self.assertIn("default-src 'none'", r.header("Content-Security-Policy"))
            self.assertIn(b'src="/ui/ui.js"', r.body)
            self.assertEqual(s.req("GET", "/ui/").body, r.body)
            js = s.req("GET", "/ui/ui.js")
            self.assertEqual(js.header("Content-Type"), "text/javascript; charset=utf-8")
            with open(os.path.join(h.SOURCE_DIR, "server", "ui", "ui.js"), "rb") as f:
                self.assertEqual(js.body, f.read())
            self.assertEqual(s.req("GET", "/ui/ui.css").header("Content-Type"), "text/css; charset=utf-8")
            head = s.req("HEAD", "/ui")
            self.assertEqual((head.status, head.body), (200, b""))
            self.assertEqual(s.req("GET", "/ui/nope.js").status, 404)
            self.assertEqual(s.req("GET", "/ui/../metrics").status, 404)
            self.assertEqual(s.req("GET", "/uix").status, 404)
            self.assertEqual(s.req("POST", "/ui", {}).status, 405)

            # a table with one file of 1000 rows
            r = s.req("POST", "/v1/tables", {"name": "ui_orders", "primary_key": ["id"],
                                             "columns": [{"name": "id", "type": "long", "required": True},
                                                         {"name": "v", "type": "string"}]})
            self.assertEqual(r.status, 201, r.body)
            rows = [{"op": "upsert", "row": {"id": i, "v": f"v{i}"}} for i in range(1000)]
            self.assertEqual(s.req("POST", "/v1/tables/ui_orders/changes", {"changes": rows}).status, 200)

            b = Browser()
            try:
                r = b.step(op="open", url=f"http://127.0.0.1:{s.http_port}/ui#table=ui_orders&refresh=300")
                self.assertEqual(r["status"], 200)
                r = b.step(op="bars", table="ui_orders", want=0)
                self.assertEqual(len(r["bars"]), 1)
                self.assertEqual(r["bars"][0]["fraction"], 0)
                self.assertIn("ui_orders", b.step(op="text", selector="#tables")["text"])

                # a delete: the bar follows on a later refresh
                d = s.req("POST", "/v1/tables/ui_orders/delete",
                          {"filter": {"type": "lt", "term": "id", "value": 350}})
                self.assertEqual(d.json()["deleted"], 350)
                r = b.step(op="bars", table="ui_orders", want=0.35)
                self.assertEqual([x["fraction"] for x in r["bars"]], [0.35])
                first = r["bars"][0]["id"]
                self.assertAlmostEqual(r["bars"][0]["height"], 160 * 0.35, places=3)
                self.assertGreaterEqual(r["refreshes"], 2)
                totals = b.step(op="text", selector="#totals")["text"].replace(",", "")
                self.assertIn("deleted rows350", totals)
                self.assertIn("live rows650", totals)
                self.assertIn("compact", b.step(op="text", selector="#advice")["text"])
                shot = os.path.join(BUILD_DIR, "ui-health.png")
                b.step(op="screenshot", path=shot)
                self.assertGreater(os.path.getsize(shot), 10000)

                # an erasure rewrites the file: a new bar at 0, the receipt listed
                e = s.req("POST", "/v1/tables/ui_orders/erasures", {"keys": [{"id": 999}]})
                self.assertEqual(e.status, 201, e.body)
                r = b.step(op="bars", table="ui_orders", want=0)
                self.assertEqual(len(r["bars"]), 1)
                self.assertNotEqual(r["bars"][0]["id"], first)
                self.assertIn(e.json()["id"], b.step(op="text", selector="#erasures")["text"])
                self.assertIn("live rows649", b.step(op="text", selector="#totals")["text"].replace(",", ""))
            finally:
                errors = b.close()
            self.assertEqual(errors, [])
            s.close_clean()


if __name__ == "__main__":
    unittest.main()
