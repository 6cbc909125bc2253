#!/usr/bin/env python3
"""Where recordLead's disk writes go on SQLite: WAL pages per commit, by B-tree.

`loadgen ingest` prints the bytes the daemon wrote per recordLead call; this
tells which tables and indexes those bytes come from. It writes the leads of
`loadgen ingest` (the same keys, ad tree, and `occurredAt` spread over 30 days)
into the daemon's own schema, made by `rastrod migrate`, the same statements
per lead as the combined write (the lead, its event, its rollup bump), in
commits of the size the daemon's group commit reaches (27 calls at 64
connections). After each commit it reads the WAL's size (frames of 4,096-byte
pages) and empties it. Each variant drops one B-tree, so the difference to
`base` is what that B-tree costs every commit.

With SPREAD_DAYS 0 every lead arrives at its call's time instead (what a
live host sends), so the indexes by time append rather than land at random.

Usage: bench/lead_pages.py [RASTROD_BINARY] [LEADS] [SPREAD_DAYS]
"""

import os
import random
import sqlite3
import subprocess
import sys
import tempfile

PER_COMMIT = 27
DAY_MS = 86_400_000
PAGE = 4096

VARIANTS = {
    "base": [],
    "without leads_site_first (site_id, first_at, id)": ["DROP INDEX leads_site_first"],
    "without leads_site_ad_first (site_id, ad_id, first_at)": ["DROP INDEX leads_site_ad_first"],
    "without lead_rollups_tree (the rollups' covering index)": ["DROP INDEX lead_rollups_tree"],
}


def schema(binary, directory):
    path = os.path.join(directory, "schema.db")
    env = dict(os.environ, RASTRO_DATABASE_URL=f"sqlite://{path}", RASTRO_LOG="warn")
    subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True)
    return path


def copy_schema(source, path):
    src = sqlite3.connect(source)
    sql = [r[0] for r in src.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'")]
    src.close()
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA wal_autocheckpoint=0")
    for statement in sql:
        c.execute(statement)
    return c


def ads():
    # loadgen's AdTree::new(1, 40): 4 campaigns, 2 ad sets each, 40 ads.
    out = []
    for a in range(40):
        c, s = a % 4, (a // 4) % 2
        out.append((f"1202{1:04}{c:010}", f"1203{1:04}{c:05}{s:05}", f"1204{1:04}{a:010}",
                    f"Campanha {c} do site 1", f"Público {s} da campanha {c}", f"Anúncio {a}: vídeo oferta"))
    return out


def run(c, wal, leads, spread_days):
    c.execute("INSERT INTO sites (id, name, currency, timezone, owner_id, created_at, updated_at) "
              "VALUES ('loja', 'Loja', 'BRL', 'UTC', 'o', 0, 0)")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    tree, rng, t0 = ads(), random.Random(1), 1_796_000_000_000
    frames = commits = 0
    for start in range(0, leads, PER_COMMIT):
        c.execute("BEGIN")
        for i in range(start, min(leads, start + PER_COMMIT)):
            at = t0 - rng.randrange(spread_days * DAY_MS) if spread_days else t0 + i
            lead = "ld_%012x%012x" % (t0 + i, rng.getrandbits(48))
            if rng.randrange(10) < 8:
                cid, sid, aid, cname, sname, aname = tree[rng.randrange(len(tree))]
                origin, click = "ctwa_ad", "ARAkLkA8rmlYlW%012d" % i
            else:
                cid = sid = aid = ""
                cname = sname = aname = click = None
                origin = "organic"
            c.execute(
                "INSERT INTO leads (id, site_id, lead_key, label, origin, campaign_id, adset_id, ad_id, campaign_name, "
                "adset_name, ad_name, click_id, first_at, cohort_day, stage, stage_at, ever_qualified, ever_won, "
                "revenue_cents, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0,0,0,?,?) "
                "ON CONFLICT (site_id, lead_key) DO NOTHING",
                (lead, "loja", "wa:5511%09d" % i, "Cliente %d" % i, origin, cid, sid, aid, cname, sname, aname, click,
                 at, at - at % DAY_MS, "new", at, t0 + i, t0 + i))
            c.execute("INSERT INTO lead_events (lead_id, site_id, event_id, stage, occurred_at, recorded_at) "
                      "VALUES (?,?,?,?,?,?)", (lead, "loja", "ev-%d-new" % i, "new", at, t0 + i))
            c.execute("INSERT INTO lead_rollups (site_id, day, origin, campaign_id, adset_id, ad_id, leads, qualified, "
                      "won, revenue_cents) VALUES (?,?,?,?,?,?,1,0,0,0) ON CONFLICT (site_id, day, origin, "
                      "campaign_id, adset_id, ad_id) DO UPDATE SET leads = lead_rollups.leads + excluded.leads",
                      ("loja", at - at % DAY_MS, origin, cid, sid, aid))
        c.execute("COMMIT")
        frames += (os.path.getsize(wal) - 32) // (PAGE + 24)
        commits += 1
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return frames / commits


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/rastrod"
    leads = int(sys.argv[2]) if len(sys.argv) > 2 else 60_000
    spread_days = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    with tempfile.TemporaryDirectory(prefix="rastrod_lead_pages_") as d:
        source = schema(binary, d)
        base = None
        for name, drops in VARIANTS.items():
            path = os.path.join(d, f"v{len(name)}.db")
            c = copy_schema(source, path)
            missing = [s for s in drops if not c.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (s.split()[-1],)).fetchone()]
            if missing:
                print(f"{name}: not in this schema")
                c.close()
                continue
            for statement in drops:
                c.execute(statement)
            per_commit = run(c, path + "-wal", leads, spread_days)
            c.close()
            base = per_commit if base is None else base
            saved = "" if name == "base" else f", {base - per_commit:.1f} fewer ({(base - per_commit) / base:.0%})"
            print(f"{name}: {per_commit:.1f} WAL pages per commit of {PER_COMMIT} calls = "
                  f"{per_commit / PER_COMMIT * PAGE / 1024:.1f} KiB per call{saved}")


if __name__ == "__main__":
    main()
