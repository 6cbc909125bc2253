-- Site map and web vitals (ANALYTICS.md §2 "Site map", "Vitals digests").
-- Acceptance puts on each pageview's outbox row what the map needs (the route
-- of the session's previous pageview, the pageview's number in its session)
-- and one outbox row (kind 'vital') per vitals metric a tracker event changes;
-- the report actors apply them to the rollups below. Days are UTC day starts.

ALTER TABLE web_outbox ADD COLUMN prev_route TEXT;
ALTER TABLE web_outbox ADD COLUMN pageview_no BIGINT NOT NULL DEFAULT 0;
ALTER TABLE web_outbox ADD COLUMN vital_old BIGINT;
ALTER TABLE web_outbox ADD COLUMN vital_new BIGINT;

-- Per (site, day, route): pageviews, sessions entering there, and entries
-- followed by a second pageview (counted on that pageview's day).
CREATE TABLE web_map_routes (
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    route TEXT NOT NULL,
    views BIGINT NOT NULL DEFAULT 0,
    entries BIGINT NOT NULL DEFAULT 0,
    continuations BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (site_id, day, route)
);

-- Per (site, day, from route, to route): consecutive pageview pairs of a
-- session, on the day of the later pageview.
CREATE TABLE web_map_transitions (
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    from_route TEXT NOT NULL,
    to_route TEXT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (site_id, day, from_route, to_route)
);

-- Vitals digests: per (site, day, metric, route, device) a sparse value ->
-- count map, one row per value (integer ms; CLS x 10^4); device '' is unknown.
CREATE TABLE web_vital_digests (
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    metric TEXT NOT NULL,
    route TEXT NOT NULL,
    device TEXT NOT NULL,
    value BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (site_id, day, metric, route, device, value)
);

-- The earliest imported pageview per site: it lowers `coverageFrom`.
CREATE TABLE web_map_imported (
    site_id TEXT PRIMARY KEY NOT NULL,
    earliest BIGINT NOT NULL
);

-- When an upgrade added a kind of rollup (epoch ms): `siteMap` coverage starts
-- no earlier than the day of this one, for sites created before it.
CREATE TABLE web_upgrades (
    name TEXT PRIMARY KEY NOT NULL,
    at BIGINT NOT NULL
);
INSERT INTO web_upgrades (name, at) VALUES ('siteMap', CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER));
