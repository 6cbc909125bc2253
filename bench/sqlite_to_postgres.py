#!/usr/bin/env python3
"""Copies a rastrod SQLite database into a fresh PostgreSQL schema.

The benchmarks' PostgreSQL read timings use it: filling 10,000,000 events
through the import path runs at about 700 events/s on PostgreSQL on the
2-core machine (the writer's round trips), so the SQLite fill of
`loadgen analytics-reports --keep` is copied instead, table by table with
COPY, into a schema that `rastrod migrate` created. Then:

    target/release/loadgen analytics-reports --existing --database-url '<printed URL>'

Usage: bench/sqlite_to_postgres.py SQLITE_FILE POSTGRES_URL [RASTROD_BINARY]
"""

import os
import sqlite3
import subprocess
import sys
import time


def psql(url, *args, stdin=None):
    return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qtA", *args], input=stdin, check=True,
                          capture_output=True)


def cell(value, kind):
    if value is None:
        return ""
    if kind == "bytea":
        return "\\x" + bytes(value).hex()
    if kind == "boolean":
        return "t" if value else "f"
    if isinstance(value, (int, float)):
        return repr(value)
    return '"' + str(value).replace('"', '""') + '"'


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    source, base = sys.argv[1], sys.argv[2]
    rastrod = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "..", "target", "release", "rastrod")
    schema = f"copy_{int(time.time())}"
    psql(base, "-c", f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    url = f"{base}{sep}options=-csearch_path%3D{schema}"
    subprocess.run([rastrod, "migrate"], env={**os.environ, "RASTRO_DATABASE_URL": url}, check=True)
    lite = sqlite3.connect(source)
    tables = [r[0] for r in lite.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name <> '__diesel_schema_migrations' ORDER BY name")]
    start = time.time()
    for table in tables:
        columns = [line.split("|") for line in psql(url, "-c", (
            "SELECT column_name, data_type, COALESCE(column_default, '') FROM information_schema.columns "
            f"WHERE table_schema = '{schema}' AND table_name = '{table}' ORDER BY ordinal_position"
        )).stdout.decode().split("\n") if line]
        if not columns:
            continue
        names = ", ".join(c for c, _, _ in columns)
        kinds = [k for _, k, _ in columns]
        t = time.time()
        copy = subprocess.Popen(["psql", url, "-v", "ON_ERROR_STOP=1", "-qc",
                                 f"SET session_replication_role = replica; DELETE FROM {table}; COPY {table} ({names}) FROM STDIN WITH (FORMAT csv)"],
                                stdin=subprocess.PIPE)
        n = 0
        chunk = []
        for row in lite.execute(f"SELECT {names} FROM {table}"):
            chunk.append(",".join(cell(v, k) for v, k in zip(row, kinds)))
            n += 1
            if len(chunk) == 10_000:
                copy.stdin.write(("\n".join(chunk) + "\n").encode())
                chunk = []
        if chunk:
            copy.stdin.write(("\n".join(chunk) + "\n").encode())
        copy.stdin.close()
        if copy.wait() != 0:
            sys.exit(f"copying {table} failed")
        for column, _, default in columns:
            if default.startswith("nextval("):
                psql(url, "-c", f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                                f"(SELECT COALESCE(MAX({column}), 0) + 1 FROM {table}), false)")
        if n:
            print(f"{table}: {n} rows in {time.time() - t:.1f} s", flush=True)
    # COPY ran with triggers off (replica), so the live counters the
    # triggers keep on web_visitors (migration 31) are counted here once.
    psql(url, "-c", "DELETE FROM web_live_counts; INSERT INTO web_live_counts (site_id, bucket, shard, n) "
                    "SELECT site_id, last_at - last_at % 10000, 0, COUNT(*) FROM web_visitors "
                    "WHERE NOT handed_over GROUP BY 1, 2")
    # As autovacuum leaves a live database: statistics, and the visibility
    # map an index-only scan needs (the funnel step key's INCLUDE columns).
    psql(url, "-c", "VACUUM (ANALYZE)")
    print(f"copied in {time.time() - start:.0f} s; the database: {url}")


if __name__ == "__main__":
    main()
