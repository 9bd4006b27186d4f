"""The README walkthrough, executed: every command between the markers
`<!-- walkthrough:begin -->` and `<!-- walkthrough:end -->` of README.md runs,
in order, against a fresh striked (localhost:8080 becomes its port, build/bin/
the built binaries), must exit 0, and must print the output block that follows
it, where `...` stands for any text (on S3, `"s3://` for the local store's
`"file:///`). The same for the `strike` client's
version of it, between `<!-- walkthrough-strike:begin -->` and
`<!-- walkthrough-strike:end -->` of docs/CLI.md (STRIKE_SERVER points at the
server).

Blocks: a ```sh block holds one command (it may span lines); the ```text
block right after it, if any, is its expected output.
"""
import os
import re
import subprocess
import unittest

import harness as h

BEGIN, END = "<!-- walkthrough:begin -->", "<!-- walkthrough:end -->"
CLI_BEGIN, CLI_END = "<!-- walkthrough-strike:begin -->", "<!-- walkthrough-strike:end -->"


def walkthrough(readme, begin=BEGIN, end=END):
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    a, b = text.index(begin), text.index(end)
    section = text[a:b]
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", section, re.M | re.S)
    steps = []
    for lang, body in blocks:
        if lang == "sh":
            steps.append([body.strip(), None])
        elif lang == "text" and steps and steps[-1][1] is None:
            steps[-1][1] = body.rstrip("\n")
    return steps


def pattern(expected):
    parts = expected.split("...")
    return re.compile(".*?".join(re.escape(p) for p in parts), re.S)


class Readme(unittest.TestCase):
    def test_walkthrough(self):
        readme = os.path.join(h.SOURCE_DIR, "README.md")
        steps = walkthrough(readme)
        curls = [c for c, _ in steps if c.startswith("curl ")]
        self.assertGreaterEqual(len(curls), 10, "the walkthrough lost its curl examples")
        for needle in ("/v1/tables -H", "/changes", "/scan", "/plan", "/dv?", "/delete"):
            self.assertTrue(any(needle in c for c in curls), needle)

        s = h.Striked(catalog=h.create_db("strike_http_readme"))
        work = h.tmpdir("strike-readme-")
        try:
            for cmd, expected in steps:
                self.assertTrue(cmd.startswith("curl ") or cmd.startswith("build/bin/"), cmd)
                run = cmd.replace("localhost:8080", f"127.0.0.1:{s.http_port}")
                run = run.replace("build/bin/", h.BIN_DIR.rstrip("/") + "/")
                p = subprocess.run(["bash", "-c", run], cwd=work, capture_output=True, timeout=60)
                out = p.stdout.decode(errors="replace").rstrip("\n")
                self.assertEqual(p.returncode, 0, f"{cmd}\nexit {p.returncode}: {p.stderr.decode()}")
                if expected is not None:
                    if h.s3_endpoint() is not None:  # the README shows the local store's URIs
                        expected = expected.replace('"file:///', '"s3://')
                    self.assertRegex(out, pattern(expected), f"\n$ {cmd}")
                    self.assertIsNotNone(pattern(expected).fullmatch(out),
                                         f"\n$ {cmd}\n--- expected\n{expected}\n--- got\n{out}")
            self.assertEqual(s.stop()[0], 0)
        finally:
            s.close()
            subprocess.run(["rm", "-rf", work])

    def test_walkthrough_strike(self):
        readme = os.path.join(h.SOURCE_DIR, "docs", "CLI.md")
        steps = walkthrough(readme, CLI_BEGIN, CLI_END)
        cmds = [c for c, _ in steps if c.startswith("build/bin/strike ")]
        for needle in ("tables create", "load ", "changes ", "scan ", "--where", "plan ", "dv get",
                       "delete ", "snapshots ", "health ", "erase "):
            self.assertTrue(any(needle in c for c in cmds), needle)

        s = h.Striked(catalog=h.create_db("strike_cli_readme"))
        work = h.tmpdir("strike-readme-cli-")
        env = dict(os.environ, STRIKE_SERVER=f"http://127.0.0.1:{s.http_port}")
        env.pop("STRIKE_OUTPUT", None)
        try:
            for cmd, expected in steps:
                self.assertTrue(cmd.startswith("build/bin/strike ") or cmd.startswith("printf "), cmd)
                run = cmd.replace("build/bin/", h.BIN_DIR.rstrip("/") + "/")
                p = subprocess.run(["bash", "-c", run], cwd=work, capture_output=True, timeout=120, env=env)
                out = p.stdout.decode(errors="replace").rstrip("\n")
                self.assertEqual(p.returncode, 0, f"{cmd}\nexit {p.returncode}: {p.stderr.decode()}")
                if expected is not None:
                    self.assertIsNotNone(pattern(expected).fullmatch(out),
                                         f"\n$ {cmd}\n--- expected\n{expected}\n--- got\n{out}")
            self.assertEqual(s.stop()[0], 0)
        finally:
            s.close()
            subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    h.require_env()
    unittest.main(verbosity=2)
