#!/usr/bin/env python3
"""What each compact encoding of `web_events` would save, in bytes per pageview.

Issue 25 asks for at most 150 bytes per stored pageview on SQLite and 200 on
PostgreSQL, tables, indexes and rollups together; `loadgen events` measures
about 300 and 310, most of it the event row and its three indexes. This
writes the same pageviews as `loadgen events` (site `loja`, its eight paths,
20,000 visitors, one session each, ids in the daemon's forms) into the
event table as it is and into variants of it, each adding one encoding to the
last, and prints the bytes of each variant's table and indexes per pageview
after a `VACUUM` (SQLite's `dbstat`; PostgreSQL's `pg_relation_size`, through
`psql`). The variants keep the same three indexes and what they find:

- `now`: the table as `rastrod migrate` makes it.
- `kind code`: the kind as a small integer instead of its word.
- `route when not path`: the route stored only where it differs from the path.
- `event id 8 bytes`: the id as the 64-bit integer of its time and counter.
- `session, visitor numbers`: each as a number per site, the text kept once
  in the session's and the visitor's own row.
- `pageview id 8 bytes`: the browser's pageview id as an 8-byte hash (a daemon would key it;
  the size is the same).
- `site, path numbers`: the site and the path (and route) as numbers.

Usage: bench/event_bytes.py [RASTROD_BINARY] [PAGEVIEWS] [POSTGRES_URL]
"""

import hashlib
import os
import random
import sqlite3
import subprocess
import sys
import tempfile

PATHS = ["/", "/p/1", "/p/2", "/p/3", "/blog/como-escolher", "/carrinho", "/checkout", "/sobre"]
VISITORS = 20_000
T0 = 1_796_000_000_000

VARIANTS = [
    "now",
    "kind code",
    "route when not path",
    "event id 8 bytes",
    "session, visitor numbers",
    "pageview id 8 bytes",
    "site, path numbers",
]


def rows(n):
    """The pageviews of `loadgen events`' first phase, as the daemon stores them."""
    rng = random.Random(25)
    sessions = {}
    last = 0
    for i in range(n):
        t = T0 + i // 10
        visitor = i % VISITORS
        if visitor not in sessions:
            sessions[visitor] = (len(sessions) + 1, f"s_{(t << 48) | rng.getrandbits(48):024x}")
        number, session = sessions[visitor]
        last = max((t << 48) | rng.getrandbits(48), last + 1)
        path = PATHS[i % len(PATHS)]
        yield {
            "id": f"e_{last:024x}",
            # The time in the high bits and a counter in the low 16, shifted
            # below zero so SQLite stores all 8 bytes, as a real id's would.
            "id_int": ((t & 0xFFFF_FFFF_FFFF) << 16 | (last & 0xFFFF)) - (1 << 63),
            "session_id": session,
            "session_no": number,
            "visitor_id": f"v_loadgen{visitor:014}",
            "visitor_no": visitor + 1,
            "path": path,
            "path_no": PATHS.index(path) + 1,
            "occurred_at": t,
            "pageview_id": f"p_loadgen{i:016}",
            "pageview_hash": int.from_bytes(hashlib.blake2b(f"p_loadgen{i:016}".encode(), digest_size=8).digest(), "big", signed=True),
        }


def layout(variant):
    """The table's columns (name, type, value of a row) and its three indexes."""
    level = VARIANTS.index(variant)
    site = ("site_id", "BIGINT", lambda r: 1) if level >= 6 else ("site_id", "TEXT", lambda r: "loja")
    eid = ("id", "BIGINT", lambda r: r["id_int"]) if level >= 3 else ("id", "TEXT", lambda r: r["id"])
    numbers = level >= 4
    session = ("session_no", "BIGINT", lambda r: r["session_no"]) if numbers else ("session_id", "TEXT", lambda r: r["session_id"])
    visitor = ("visitor_no", "BIGINT", lambda r: r["visitor_no"]) if numbers else ("visitor_id", "TEXT", lambda r: r["visitor_id"])
    kind = ("kind", "SMALLINT", lambda r: 1) if level >= 1 else ("kind", "TEXT", lambda r: "pageview")
    if level >= 6:
        path = ("path_no", "BIGINT", lambda r: r["path_no"])
        route = ("route_no", "BIGINT", lambda r: None)
    else:
        path = ("path", "TEXT", lambda r: r["path"])
        route = ("route", "TEXT", (lambda r: None) if level >= 2 else (lambda r: r["path"]))
    pageview = ("pageview_hash", "BIGINT", lambda r: r["pageview_hash"]) if level >= 5 else ("pageview_id", "TEXT", lambda r: r["pageview_id"])
    columns = [
        eid, site, session, visitor, kind, ("name", "TEXT", lambda r: None), path, route,
        ("occurred_at", "BIGINT", lambda r: r["occurred_at"]), pageview,
        ("properties", "TEXT", lambda r: None),
    ] + [(m, "BIGINT", lambda r: None) for m in ["engaged_ms", "lcp", "inp", "cls", "fcp", "ttfb"]]
    indexes = [
        f"CREATE UNIQUE INDEX ev_pageview ON ev ({site[0]}, {pageview[0]})",
        f"CREATE INDEX ev_session ON ev ({session[0]}, occurred_at)",
        f"CREATE INDEX ev_site_time ON ev ({site[0]}, occurred_at)",
    ]
    return columns, indexes


def check_now(binary, directory, columns):
    """The `now` variant has the columns `rastrod migrate` makes, in its order."""
    path = os.path.join(directory, "schema.db")
    env = dict(os.environ, RASTRO_DATABASE_URL=f"sqlite://{path}", RASTRO_LOG="warn")
    subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True)
    c = sqlite3.connect(path)
    made = [r[1] for r in c.execute("PRAGMA table_info(web_events)")]
    indexes = sorted(r[0] for r in c.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'web_events'"))
    c.close()
    if made != [name for name, _, _ in columns]:
        sys.exit(f"web_events has changed: {made}; update this script")
    return indexes


def sqlite_bytes(directory, variant, data):
    columns, indexes = layout(variant)
    path = os.path.join(directory, f"{VARIANTS.index(variant)}.db")
    c = sqlite3.connect(path, isolation_level=None)
    c.execute(f"CREATE TABLE ev ({', '.join(f'{n} {t}' for n, t, _ in columns)})")
    for statement in indexes:
        c.execute(statement)
    c.execute("BEGIN")
    c.executemany(
        f"INSERT INTO ev VALUES ({', '.join('?' for _ in columns)})",
        ([f(r) for _, _, f in columns] for r in data),
    )
    c.execute("COMMIT")
    c.execute("VACUUM")
    parts = dict(c.execute("SELECT name, SUM(pgsize) FROM dbstat WHERE name LIKE 'ev%' GROUP BY name"))
    c.close()
    return parts


def postgres_bytes(url, variant, data):
    columns, indexes = layout(variant)
    schema = f"event_bytes_{VARIANTS.index(variant)}"
    csv = "\n".join(",".join("" if v is None else str(v) for v in (f(r) for _, _, f in columns)) for r in data)
    script = "\n".join(
        [
            f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; SET search_path = {schema};",
            f"CREATE TABLE ev ({', '.join(f'{n} {t}' for n, t, _ in columns)});",
        ]
        + [s + ";" for s in indexes]
        + ["COPY ev FROM STDIN (FORMAT csv);", csv, "\\.", ""]
    )
    subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", url], input=script, text=True, check=True, capture_output=True)
    subprocess.run(["psql", "-q", "-c", f"VACUUM {schema}.ev", url], check=True, capture_output=True)
    out = subprocess.run(
        ["psql", "-qAt", "-F", "|", "-c",
         f"SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
         f"WHERE n.nspname = '{schema}' AND c.relkind IN ('r', 'i'); DROP SCHEMA {schema} CASCADE;", url],
        check=True, capture_output=True, text=True,
    ).stdout
    return {name: int(size) for name, size in (line.split("|") for line in out.split("\n") if "|" in line)}


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/rastrod"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    url = sys.argv[3] if len(sys.argv) > 3 else None
    data = list(rows(n))
    with tempfile.TemporaryDirectory() as directory:
        made = check_now(binary, directory, layout("now")[0])
        print(f"{n} pageviews; web_events' indexes as migrated: {'; '.join(made)}")
        print("| variant | SQLite: table + indexes = bytes per pageview |" + (" PostgreSQL |" if url else ""))
        print("| --- | --- |" + (" --- |" if url else ""))
        for variant in VARIANTS:
            cells = []
            backends = [lambda: sqlite_bytes(directory, variant, data)]
            if url:
                backends.append(lambda: postgres_bytes(url, variant, data))
            for measure in backends:
                parts = measure()
                table = parts.get("ev", 0) / n
                index = sum(v for k, v in parts.items() if k != "ev") / n
                cells.append(f"{table:.0f} + {index:.0f} = **{table + index:.0f}**")
            print(f"| {variant} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
