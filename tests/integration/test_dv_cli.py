"""test_dv_cli.py - `strike dv decode|encode` against every upstream DV
fixture in STRIKE_TESTDATA_DIR, checked against what its MANIFEST.md says each
file holds; invalid files must exit 1 with one line naming the problem and
its byte offset; usage errors exit 2.

Environment (set by ctest): STRIKE_BIN_DIR (the built `strike`),
STRIKE_TESTDATA_DIR (../shared/testdata by default; ctest does not run this
test, label `fixtures`, when that folder is absent). Missing either is a
failure, not a skip.
"""
import os
import re
import subprocess
import sys
import tempfile

BIN_DIR = os.environ.get("STRIKE_BIN_DIR", "")
TD = os.environ.get("STRIKE_TESTDATA_DIR", "")
STRIKE = os.path.join(BIN_DIR, "strike")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(args, stdin=None):
    p = subprocess.run([STRIKE, "dv"] + args, input=stdin, capture_output=True, timeout=300)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def fmt_positions(positions):
    """The CLI's text form: ascending, runs of >= 2 as a-b."""
    out = []
    ps = sorted(set(positions))
    i = 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        out.append(f"{ps[i]}" if i == j else f"{ps[i]}-{ps[j]}")
        i = j + 1
    return "".join(line + "\n" for line in out)


def rng(a, b):  # [a, b)
    return list(range(a, b))


B32 = 1 << 32
C = 1 << 16

SETS = {
    "spec32": [1000 * k for k in range(100)] + [3 * k for k in range(100000, 200000)]
    + rng(700000, 800000),
    "bitmap64": list(range(0, 65536, 2)) + rng(B32, B32 + 1000000) + [1 << 48],
    "portable64": [v for i in (0, 1) for v in (
        rng(i << 32, (i << 32) + 0x9001) + rng((i << 32) + 0xA000, (i << 32) + 0x10001)
        + [(i << 32) + 0x20000, (i << 32) + 0x20005]
        + list(range((i << 32) + 0x80000, (i << 32) + 0x8FFFF, 2)))],
    "ten": rng(0, 10),
    "spread": [(h << 32) + l for h in range(10) for l in range(10)],
    "alt": [1, 3, 5, 7, 9],
    "small_large": [100, 101, 2147483647 + 100, 2147483647 + 101],
    "all_types": [5, 7] + rng(C + 1, C + 1000) + rng(2 * C + 1, 2 * C + 65535)
    + [B32 + 10, B32 + 20] + rng(B32 + C + 10, B32 + C + 500)
    + rng(B32 + 2 * C + 1, B32 + 2 * C + 65535),
}


def expect_ok(args, expected, what, notes=""):
    """Exit 0, stdout exactly `expected` (data only), stderr exactly `notes`."""
    rc, out, err = run(args)
    check(rc == 0, f"{what}: exit {rc}, stderr {err.strip()!r}")
    check(err == notes, f"{what}: stderr {err!r}, expected {notes!r}")
    got = out.decode()
    data_line = re.compile(r"^(# \S+ cardinality=\d+|\d+|\d+-\d+)$")
    bad = [line for line in got.splitlines() if not data_line.match(line)]
    check(not bad, f"{what}: stdout has lines that are not data: {bad[:3]!r}")
    if got != expected:
        check(False, f"{what}: output differs (got {len(got)} chars, first lines {got[:120]!r}; "
                     f"expected first lines {expected[:120]!r})")


def expect_invalid(args, needle, what):
    rc, out, err = run(args)
    check(rc == 1, f"{what}: exit {rc}, expected 1 (stderr {err.strip()!r})")
    lines = err.strip().splitlines()
    check(len(lines) == 1, f"{what}: expected one line on stderr, got {lines!r}")
    check(out == b"", f"{what}: printed {out[:80]!r} for invalid input")
    check("byte" in err, f"{what}: the message names no byte offset: {err.strip()!r}")
    check(needle in err, f"{what}: message {err.strip()!r} lacks {needle!r}")


def header(ident, card):
    return f"# {ident} cardinality={card}\n"


def test_roaring():
    for name in ("bitmapwithoutruns.bin", "bitmapwithruns.bin"):
        f = os.path.join(TD, "roaring-format-spec/testdata", name)
        expect_ok(["decode", "--format", "roaring32", f], fmt_positions(SETS["spec32"]), name)
        expect_ok(["decode", "--format", "roaring32", "--count", f], "200100\n", name + " --count")
        expect_invalid(["decode", "--format", "roaring64", f], "bucket count", name + " as roaring64")
    for name, key, card in (("bitmap64.bin", "bitmap64", 1032769),
                            ("portable_bitmap64.bin", "portable64", 188424)):
        f = os.path.join(TD, "roaring-format-spec/testdata64", name)
        check(len(set(SETS[key])) == card, f"model of {name}")
        expect_ok(["decode", "--format", "roaring64", f], fmt_positions(SETS[key]), name)
        expect_ok(["decode", "--format", "roaring64", "--count", f], f"{card}\n", name + " --count")
    for d in ("croaring/tests/testdata", "iceberg/deletes"):
        for name, key in (("64mapempty.bin", None), ("64map32bitvals.bin", "ten"),
                          ("64mapspreadvals.bin", "spread")):
            f = os.path.join(TD, d, name)
            expect_ok(["decode", "--format", "roaring64", f], fmt_positions(SETS[key] if key else []),
                      f"{d}/{name}")
        expect_invalid(["decode", "--format", "roaring64", os.path.join(TD, d, "64maphighvals.bin")],
                       ">= 2^31", f"{d}/64maphighvals.bin (DV rule)")
    for name, needle in (("64mapemptyinput.bin", "truncated"), ("64mapsizetoosmall.bin", "truncated"),
                         ("64mapinvalidsize.bin", "2^32-1"), ("64mapkeytoosmall.bin", "2^32-1")):
        expect_invalid(["decode", "--format", "roaring64",
                        os.path.join(TD, "croaring/tests/testdata", name)], needle, name)
    for i in range(1, 8):
        f = os.path.join(TD, f"croaring/tests/testdata/crashproneinput{i}.bin")
        expect_invalid(["decode", "--format", "roaring32", f], "", f"crashproneinput{i} roaring32")
        expect_invalid(["decode", "--format", "roaring64", f], "", f"crashproneinput{i} roaring64")
        expect_invalid(["decode", "--format", "iceberg-dv", f], "", f"crashproneinput{i} iceberg-dv")


def test_iceberg():
    d = os.path.join(TD, "iceberg/deletes")
    for name, key in (("empty-position-index.bin", None),
                      ("small-alternating-values-position-index.bin", "alt"),
                      ("small-and-large-values-position-index.bin", "small_large"),
                      ("all-container-types-position-index.bin", "all_types")):
        s = SETS[key] if key else []
        expect_ok(["decode", "--format", "iceberg-dv", os.path.join(d, name)], fmt_positions(s), name)
        expect_ok(["decode", "--format", "iceberg-dv", "--count", os.path.join(d, name)],
                  f"{len(s)}\n", name + " --count")
        # Java asserts byte equality for these: encode gives the same bytes.
        rc, out, err = run(["encode", "--format", "iceberg-dv"], fmt_positions(s).encode())
        with open(os.path.join(d, name), "rb") as fh:
            check(rc == 0 and out == fh.read(), f"encode {name}: rc {rc}, {err.strip()!r}")
    check(len(set(SETS["all_types"])) == 132561, "all-container-types model")
    # a corrupted blob: one line, its byte offset
    with open(os.path.join(d, "small-alternating-values-position-index.bin"), "rb") as fh:
        blob = bytearray(fh.read())
    blob[-1] ^= 1
    with tempfile.NamedTemporaryFile(suffix=".bin") as t:
        t.write(blob)
        t.flush()
        expect_invalid(["decode", "--format", "iceberg-dv", t.name], "CRC mismatch at byte 46",
                       "flipped CRC")
        expect_invalid(["decode", "--format", "roaring32", t.name], "cookie", "blob as roaring32")
    # a blob inside a Puffin file, by offset and length
    pf = os.path.join(TD, "iceberg-go/table/dv/testdata/deletes/multi-blob-dv.puffin")
    expect_ok(["decode", "--format", "iceberg-dv", pf, "--offset", "50", "--length", "44"],
              fmt_positions([50, 150]), "iceberg-dv slice of a puffin")
    expect_ok(["decode", "--format", "iceberg-dv", pf, "--offset", "4"],
              fmt_positions([0, 100, 200]), "iceberg-dv slice, length from the blob")
    expect_invalid(["decode", "--format", "iceberg-dv", pf, "--offset", "50", "--length", "45"],
                   "length field at byte 50", "iceberg-dv slice with a wrong length")


def test_puffin():
    d = os.path.join(TD, "iceberg-go/table/dv/testdata/deletes")
    single = os.path.join(d, "single-blob-dv.puffin")
    multi = os.path.join(d, "multi-blob-dv.puffin")
    expect_ok(["decode", "--format", "puffin", single],
              header("s3://warehouse/db/table/data/00000-0-abc.parquet", 5) + fmt_positions(SETS["alt"]),
              "single-blob-dv.puffin")
    expect_ok(["decode", "--format", "puffin", multi],
              header("s3://warehouse/db/table/data/file-001.parquet", 3) + fmt_positions([0, 100, 200])
              + header("s3://warehouse/db/table/data/file-002.parquet", 2) + fmt_positions([50, 150]),
              "multi-blob-dv.puffin")
    expect_ok(["decode", "--format", "puffin", "--count", multi],
              header("s3://warehouse/db/table/data/file-001.parquet", 3) + "3\n"
              + header("s3://warehouse/db/table/data/file-002.parquet", 2) + "2\n",
              "multi-blob-dv.puffin --count")
    expect_ok(["decode", "--format", "puffin", multi, "--offset", "50", "--length", "44"],
              fmt_positions([50, 150]), "puffin --offset 50 --length 44")
    expect_ok(["decode", "--format", "puffin", multi, "--offset", "4"],
              fmt_positions([0, 100, 200]), "puffin --offset 4")
    expect_invalid(["decode", "--format", "puffin", multi, "--offset", "5"], "no blob at byte 5",
                   "puffin --offset 5")
    v1 = os.path.join(TD, "iceberg/puffin/v1")
    expect_ok(["decode", "--format", "puffin", os.path.join(v1, "empty-puffin-uncompressed.bin")], "",
              "empty puffin")
    # blobs of other types are notes on stderr; stdout (the data) stays empty
    expect_ok(["decode", "--format", "puffin", os.path.join(v1, "sample-metric-data-uncompressed.bin")], "",
              "metric puffin",
              notes="strike dv: blob 0 type=some-blob offset=4 length=9: not a deletion vector, skipped\n"
              "strike dv: blob 1 type=some-other-blob offset=13 length=83: not a deletion vector, skipped\n")
    expect_ok(["decode", "--format", "puffin", os.path.join(v1, "sample-metric-data-compressed-zstd.bin")],
              "", "zstd metric puffin",
              notes="strike dv: blob 0 type=some-blob offset=4 length=22: not a deletion vector, skipped\n"
              "strike dv: blob 1 type=some-other-blob offset=26 length=77: not a deletion vector, skipped\n")
    expect_invalid(["decode", "--format", "puffin",
                    os.path.join(TD, "iceberg/deletes/empty-position-index.bin")], "Puffin", "blob as puffin")
    with open(multi, "rb") as fh:
        data = bytearray(fh.read())
    data[-8] |= 1  # LZ4 flag
    with tempfile.NamedTemporaryFile(suffix=".puffin") as t:
        t.write(data)
        t.flush()
        expect_invalid(["decode", "--format", "puffin", t.name], "LZ4", "LZ4 footer")


DELTA_SMALL = "delta-kernel-rs/table-with-dv-small/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
DELTA_SHORT = "delta-kernel-rs/with-short-dv/deletion_vector_ae7177f2-6d17-4ea8-819b-8d62fa2c5469.bin"
DELTA_V1 = "delta/table-with-dv-large/test%dv%prefix-deletion_vector_44ccbf3f-b223-4581-9cd8-a7e569120ada.bin"
DELTA_V3 = "delta/table-with-dv-large/test%dv%prefix-deletion_vector_afcbf9f8-7558-4a5a-b1e2-7432c30bf452.bin"


def test_delta():
    expect_ok(["decode", "--format", "delta-dv", os.path.join(TD, DELTA_SMALL)],
              header("offset=1", 2) + fmt_positions([0, 9]), "table-with-dv-small DV")
    expect_ok(["decode", "--format", "delta-dv", os.path.join(TD, DELTA_SMALL), "--offset", "1",
               "--length", "36"], fmt_positions([0, 9]), "table-with-dv-small DV by descriptor")
    expect_ok(["decode", "--format", "delta-dv", os.path.join(TD, DELTA_SHORT)],
              header("offset=1", 3) + fmt_positions([0, 1, 2]), "with-short-dv DV")
    v1 = [(1, [26]), (43, [21]), (85, [70]), (127, [6]), (169, [32])]
    expect_ok(["decode", "--format", "delta-dv", os.path.join(TD, DELTA_V1)],
              "".join(header(f"offset={o}", len(s)) + fmt_positions(s) for o, s in v1), "large v1 DV file")
    v3 = [(1, [51]), (43, [70, 81]), (87, [26, 40]), (131, [19]), (173, [0]), (215, [6, 43])]
    expect_ok(["decode", "--format", "delta-dv", os.path.join(TD, DELTA_V3)],
              "".join(header(f"offset={o}", len(s)) + fmt_positions(s) for o, s in v3), "large v3 DV file")
    for o, s in v3:
        expect_ok(["decode", "--format", "delta-dv", os.path.join(TD, DELTA_V3), "--offset", str(o)],
                  fmt_positions(s), f"large v3 DV at {o}")
    expect_invalid(["decode", "--format", "delta-dv", os.path.join(TD, DELTA_V3), "--offset", "43",
                    "--length", "34"], "sizeInBytes", "large v3 DV with a wrong size")
    expect_invalid(["decode", "--format", "delta-dv", os.path.join(TD, DELTA_V3), "--offset", "44"], "",
                   "large v3 DV at a wrong offset")
    expect_invalid(["decode", "--format", "delta-dv", os.path.join(TD, "iceberg/deletes/empty-position-index.bin")],
                   "version", "an Iceberg blob as a Delta file")


def test_paimon():
    expect_ok(["decode", "--format", "paimon-dv", os.path.join(TD, "paimon/compatibility/dvindex-32")],
              header("offset=1", 2) + "2-3\n" + header("offset=33", 1) + "1\n", "dvindex-32")
    expect_ok(["decode", "--format", "paimon-dv", os.path.join(TD, "paimon/compatibility/dvindex-64")],
              header("offset=1", 2) + "2-3\n" + header("offset=45", 1) + "1\n", "dvindex-64")
    expect_ok(["decode", "--format", "paimon-dv", os.path.join(TD, "paimon/compatibility/dvindex-32"),
               "--offset", "33", "--length", "22"], "1\n", "dvindex-32 entry 2")
    expect_ok(["decode", "--format", "paimon-dv", os.path.join(TD, "paimon/compatibility/dvindex-64"),
               "--offset", "45", "--length", "42"], "1\n", "dvindex-64 entry 2")
    expect_invalid(["decode", "--format", "paimon-dv", os.path.join(TD, "paimon/compatibility/dvindex-64"),
                    "--offset", "45", "--length", "34"], "index manifest", "dvindex-64 wrong length")
    for name in ("dvindex-32", "dvindex-64"):
        with open(os.path.join(TD, "paimon/compatibility", name), "rb") as fh:
            want = fh.read()
        args = ["encode", "--format", "paimon-dv"] + (["--bitmap64"] if name.endswith("64") else [])
        rc, out, err = run(args, b"# a\n2-3\n# b\n1\n")
        check(rc == 0 and out == want, f"encode {name}: rc {rc} {err.strip()!r}")


def test_encode_roundtrip():
    positions = [0, 1, 2, 10, 65535, 65536, 1 << 20, B32 - 1, B32, B32 + 1, (1 << 40) + 7]
    text = fmt_positions(positions).encode()
    for fmt in ("roaring64", "iceberg-dv", "delta-dv", "puffin", "paimon-dv"):
        extra = ["--referenced-file", "data/x.parquet"] if fmt == "puffin" else []
        if fmt == "paimon-dv":
            extra = ["--bitmap64"]
        rc, out, err = run(["encode", "--format", fmt] + extra, text)
        check(rc == 0, f"encode {fmt}: {rc} {err.strip()!r}")
        with tempfile.NamedTemporaryFile() as t:
            t.write(out)
            t.flush()
            rc, dec, err = run(["decode", "--format", fmt, t.name])
            lines = dec.decode()
            body = "".join(line + "\n" for line in lines.splitlines() if not line.startswith("#"))
            check(rc == 0 and body == text.decode(), f"round trip {fmt}: {rc} {err.strip()!r} {lines[:100]!r}")
    # 32-bit formats refuse positions >= 2^32
    for fmt, extra in (("roaring32", []), ("paimon-dv", [])):
        rc, out, err = run(["encode", "--format", fmt] + extra, text)
        check(rc == 1 and "2^32" in err and len(err.strip().splitlines()) == 1,
              f"encode {fmt} of 64-bit positions: {rc} {err.strip()!r}")
    rc, out, err = run(["encode", "--format", "roaring32"], b"5\n1-3\n")
    with tempfile.NamedTemporaryFile() as t:
        t.write(out)
        t.flush()
        expect_ok(["decode", "--format", "roaring32", t.name], "1-3\n5\n", "roaring32 round trip")
    # multi-vector puffin from '#' lines, as decode prints them
    src = header("a.parquet", 2) + "1\n3\n" + header("b.parquet", 3) + "7-9\n"
    rc, out, err = run(["encode", "--format", "puffin"], src.encode())
    with tempfile.NamedTemporaryFile() as t:
        t.write(out)
        t.flush()
        expect_ok(["decode", "--format", "puffin", t.name], src, "puffin multi round trip")
    # positions >= 2^63 are not DVs; malformed input and puffin without a file name fail
    rc, out, err = run(["encode", "--format", "iceberg-dv"], b"9223372036854775808\n")
    check(rc == 1 and "2^63" in err, f"encode 2^63: {rc} {err.strip()!r}")
    rc, out, err = run(["encode", "--format", "roaring64"], b"1\nx\n")
    check(rc == 1 and "line 2" in err, f"encode garbage: {rc} {err.strip()!r}")
    rc, out, err = run(["encode", "--format", "roaring64"], b"5-3\n")
    check(rc == 1 and "line 1" in err, f"encode reversed range: {rc} {err.strip()!r}")
    rc, out, err = run(["encode", "--format", "puffin"], b"1\n")
    check(rc == 1 and "referenced" in err, f"encode puffin without a file: {rc} {err.strip()!r}")
    rc, out, err = run(["encode", "--format", "iceberg-dv"], b"# a\n1\n# b\n2\n")
    check(rc == 1 and "one vector" in err, f"encode two vectors as iceberg-dv: {rc} {err.strip()!r}")
    rc, out, err = run(["encode", "--format", "iceberg-dv"], b"")
    with open(os.path.join(TD, "iceberg/deletes/empty-position-index.bin"), "rb") as fh:
        check(rc == 0 and out == fh.read(), "encode of no positions is the empty blob")


def test_usage():
    for args in ([], ["decode"], ["decode", "--format", "bogus", "x"], ["decode", "x"],
                 ["decode", "--format", "roaring64"], ["frob"], ["decode", "--format", "roaring64", "a", "b"],
                 ["decode", "--format", "roaring64", "--length", "3", "f"],
                 ["decode", "--format", "roaring64", "--offset", "-1", "f"], ["decode", "--bogus"],
                 ["encode"]):
        rc, out, err = run(args)
        check(rc == 2, f"usage {args}: exit {rc}, expected 2")
        check(err != "", f"usage {args}: no message")
    rc, out, err = run(["--help"])
    check(rc == 0 and b"roaring32|" not in out and b"delta-dv" in out, "dv --help")
    rc, out, err = run(["decode", "--format", "roaring64", "/nonexistent/file"])
    check(rc == 1 and len(err.strip().splitlines()) == 1, f"missing file: {rc} {err!r}")


def main():
    if not BIN_DIR or not os.access(STRIKE, os.X_OK):
        print(f"FAIL: STRIKE_BIN_DIR={BIN_DIR!r} has no strike binary (run through ctest after "
              "building the `strike` target)")
        return 1
    if not TD or not os.path.exists(os.path.join(TD, "MANIFEST.md")):
        print(f"FAIL: STRIKE_TESTDATA_DIR={TD!r} has no MANIFEST.md")
        return 1
    for t in (test_roaring, test_iceberg, test_puffin, test_delta, test_paimon, test_encode_roundtrip,
              test_usage):
        print("--", t.__name__, flush=True)
        t()
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all dv CLI checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
