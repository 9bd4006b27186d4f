#!/usr/bin/env python3
"""test_catalog_table_id.py - every catalog statement strike runs against a per-table catalog table
carries table_id (issue 32, docs/SCALE.md "Past one PostgreSQL").

The catalog is ready to be distributed by table_id (Citus): a statement on a per-table table routes
to one shard only when it names the table's table_id. This test reads the SQL from the source
(the C string literals of storage/engine/*.c and *.h and server/*.c, adjacent literals joined, a
macro of SQL text (#define NAME "...") replaced by its text, a macro's parameters and %s kept as
placeholders), splits it into statements, and checks every reference to a per-table catalog table
(strike.snapshots, data_files, ...; the key-index tables, also when the table name is a
placeholder) in a SELECT, INSERT, UPDATE or DELETE: the reference's alias (or, without one, the
statement) must carry table_id (an unaliased table: a condition on table_id). strike.tables itself
is distributed by its id: a reference must filter by id (or be listed). The migrations (schema.c) are DDL, not
checked. EXCEPTIONS lists the statements that do not, each with its reason; an exception that
matches nothing fails the test too, so the list cannot go stale.

Run by ctest (catalog_table_id); `--list` prints every checked reference.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = sorted(glob.glob(os.path.join(ROOT, "storage/engine/*.[ch]")) + glob.glob(os.path.join(ROOT, "server/*.c")))
SKIP = {"schema.c"}  # the migrations: DDL

# Tables with one row set per strike table: distributed by table_id.
PER_TABLE = {"snapshots", "data_files", "deletion_vectors", "key_index", "key_index_i8", "producers", "erasures",
             "expired_blobs", "presign_horizons", "iceberg_tables", "iceberg_manifests", "iceberg_snapshots",
             "iceberg_plans", "iceberg_metadata_files", "file_remaps"}
# Catalog-wide tables (reference tables, or keyed by something else): not checked here.
CATALOG_WIDE = {"secrets", "schema_version", "idempotency_keys"}

# (file, a substring of the statement, the reason): statements that touch a per-table table
# without table_id. Each must match at least one statement.
HOUSEKEEPING = ("catalog-wide housekeeping, off the commit path: the collector, fsck and expiry find blobs "
                "by path over every table (a path names no table); on Citus a fan-out to every shard")
BY_NAME = ("a table is found by its name (once; then by id): on Citus a look-up of every shard, or a "
           "reference table of names (docs/SCALE.md)")
EXCEPTIONS = [
    ("gc.c", "SELECT path FROM strike.data_files UNION", HOUSEKEEPING),
    ("gc.c", "SELECT path FROM strike.iceberg_manifests UNION", HOUSEKEEPING),
    ("gc.c", "SELECT u.p FROM unnest($1::text[]) AS u(p) WHERE NOT EXISTS", HOUSEKEEPING),
    ("gc.c", "SELECT path, record_count, file_size FROM strike.data_files", HOUSEKEEPING + " (fsck's listing)"),
    ("gc.c", "FROM strike.deletion_vectors ORDER BY puffin_path", HOUSEKEEPING + " (fsck's listing)"),
    ("expire.c", "SELECT table_id, path FROM strike.expired_blobs WHERE deletable_after", HOUSEKEEPING),
    ("expire.c", "RETURNING x.path, EXISTS (SELECT 1 FROM strike.data_files f WHERE f.path = x.path)",
     HOUSEKEEPING + " (the last look before a blob goes)"),
    ("expire.c", "INSERT INTO strike.expired_blobs (path, table_id, deletable_after)",
     HOUSEKEEPING + " (whether a freed blob is still referenced anywhere)"),
    ("iceberg.c", "DELETE FROM strike.iceberg_plans WHERE created_at", "expiry of old scan plans over every "
                                                                         "table, as the idempotency keys' expiry"),
    ("engine.c", "FROM strike.tables WHERE name = $1", BY_NAME),
    ("alter.c", "strike.tables WHERE name = $1 FOR UPDATE", BY_NAME + "; a schema change locks its table's row"),
    ("engine.c", "INSERT INTO strike.tables (uuid, name,", "a table's creation: its id is made here"),
    ("engine.c", "FROM strike.tables ORDER BY name", "the list of every table (GET /v1/tables)"),
]

KEYWORDS = {"where", "set", "on", "using", "as", "select", "values", "join", "left", "right", "inner", "cross",
            "lateral", "group", "order", "limit", "returning", "for", "union", "natural", "full", "outer", "and",
            "or", "default", "not", "with", "into", "from", "having", "window"}


def strip_comments(src):
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


TOKEN = re.compile(r'"((?:[^"\\\n]|\\.)*)"|([A-Za-z_][A-Za-z0-9_]*)|(\\\n|\s+)|(.)', re.S)


LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]((?:[^\n\\]|\\.|\\\n)*)$", re.M)


def text_macros(paths):
    """The object-like macros whose body is string literals only (a piece of SQL text, as
    dvflush.c's PICK_COLS): name -> their text. A run that uses one gets its text."""
    out = {}
    for path in paths:
        for m in DEFINE.finditer(strip_comments(open(path, encoding="utf-8").read())):
            body = m.group(2).replace("\\\n", " ")
            if body.strip() and LITERAL.sub("", body).strip() == "":
                out[m.group(1)] = "".join(bytes(x, "utf-8").decode("unicode_escape") for x in LITERAL.findall(body))
    return out


def runs(src, macros=None):
    """Runs of adjacent string literals and text macros (macros); other identifiers between two
    literals (macro parameters, macros of SQL text defined elsewhere) become {name} placeholders."""
    macros = macros or {}
    cur, pending, out, prev = [], [], [], None
    for m in TOKEN.finditer(strip_comments(src)):
        lit, ident, space, other = m.groups()
        if ident is not None and ident in macros and prev != "define":
            lit, ident = None, None
            cur.extend(pending)
            pending = []
            cur.append(macros[m.group(2)])
        elif lit is not None:
            cur.extend(pending)
            pending = []
            cur.append(bytes(lit, "utf-8").decode("unicode_escape"))
        elif ident is not None and cur:
            pending.append("{" + ident + "}")
        elif space is not None:
            continue
        elif ident is None:
            if cur:
                out.append("".join(cur))
            cur, pending = [], []
        if space is None:
            prev = m.group(2)
    if cur:
        out.append("".join(cur))
    return out


REF = re.compile(r"\b(from|join|update|into|using)\s+(only\s+)?(strike\.([a-z_]+)|\{tab\}|%s|\{[A-Z_]+\})"
                 r"(?:\s+(?:as\s+)?([a-z_][a-z0-9_]*))?", re.I)


def references(stmt):
    for m in REF.finditer(stmt):
        name = m.group(4) or "key_index"  # a placeholder table: the key-index macros' `tab`, or %s
        if m.group(3).startswith("{") and m.group(3) != "{tab}":
            continue  # a macro of SQL text, not a table
        alias = m.group(5)
        if alias and alias.lower() in KEYWORDS:
            alias = None
        yield name, alias, m.start()


def carries(stmt, name, alias, at):
    col = "id" if name == "tables" else "table_id"
    ins = re.match(r"into\s+\S+(?:\s+as\s+\w+)?\s*\(([^)]*)\)", stmt[at:], re.I)
    if ins:  # an INSERT: its column list
        return re.search(rf"\b{col}\b", ins.group(1)) is not None
    if alias:
        return re.search(rf"\b{alias}\.{col}\b", stmt) is not None or (
            # unqualified columns of the only table of the statement (or of its subquery) are its own
            re.search(rf"\b{col}\b\s*(=|IN\b)", stmt, re.I) is not None and len(list(references(stmt))) == 1)
    return re.search(rf"(?<![.\w]){col}\s*(=|IN\b)", stmt, re.I) is not None


def statements():
    macros = text_macros(SOURCES + glob.glob(os.path.join(ROOT, "storage/engine/*.h")))
    for path in SOURCES:
        base = os.path.basename(path)
        if base in SKIP:
            continue
        for text in runs(open(path, encoding="utf-8").read(), macros):
            for stmt in text.split(";"):
                if re.search(r"\b(select|insert|update|delete)\b", stmt, re.I) and (
                        "strike." in stmt or "{tab}" in stmt or re.search(r"(from|update|into)\s+%s", stmt, re.I)):
                    yield base, " ".join(stmt.split())


def main():
    listing = "--list" in sys.argv
    failures, used, checked = [], set(), 0
    for base, stmt in statements():
        for name, alias, at in references(stmt):
            if name in CATALOG_WIDE or (name not in PER_TABLE and name != "tables"):
                continue
            checked += 1
            ok = carries(stmt, name, alias, at)
            exc = next((i for i, (f, s, _) in enumerate(EXCEPTIONS) if f == base and s in stmt), None)
            if listing:
                print(f"{'ok ' if ok else 'exc' if exc is not None else 'NO '} {base}: {name} {alias or ''}: {stmt[:160]}")
            if ok:
                continue
            if exc is not None:
                used.add(exc)
                continue
            failures.append(f"{base}: strike.{name}{' ' + alias if alias else ''} without "
                            f"{'id' if name == 'tables' else 'table_id'}: {stmt[:300]}")
    for i, (f, s, _) in enumerate(EXCEPTIONS):
        if i not in used:
            failures.append(f"exception matches no statement lacking table_id (remove it): {f}: {s}")
    if checked < 50:
        failures.append(f"only {checked} table references found: the extraction is broken")
    for f in failures:
        print("FAIL", f)
    print(f"{checked} references to per-table catalog tables checked, {len(used)} listed exceptions, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
