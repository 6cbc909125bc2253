-- An event's id is made unique where it is made (creation time and 48 random
-- bits, `ids`), and nothing finds an event by its id alone: a pageview's
-- later measures find it by `(site_id, pageview_id)`, a route's rewrite by
-- `(site_id, occurred_at, id)`, the reads by session or by site and time. The
-- primary key's index on the id (40 bytes per stored pageview in
-- `loadgen events`, a tenth of the total) served no read (issue 25, "measure
-- each index against the reads that use it"). SQLite cannot drop a primary
-- key, so the table is rebuilt, rows in their order, with the same indexes.
CREATE TABLE web_events_unkeyed (
    id TEXT NOT NULL,
    site_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT,
    path TEXT NOT NULL,
    route TEXT NOT NULL,
    occurred_at BIGINT NOT NULL,
    pageview_id TEXT,
    properties TEXT,
    engaged_ms BIGINT,
    lcp BIGINT,
    inp BIGINT,
    -- CLS x 10^4, an integer
    cls BIGINT,
    fcp BIGINT,
    ttfb BIGINT
);
INSERT INTO web_events_unkeyed (id, site_id, session_id, visitor_id, kind, name, path, route, occurred_at,
    pageview_id, properties, engaged_ms, lcp, inp, cls, fcp, ttfb)
SELECT id, site_id, session_id, visitor_id, kind, name, path, route, occurred_at,
    pageview_id, properties, engaged_ms, lcp, inp, cls, fcp, ttfb
FROM web_events ORDER BY rowid;
DROP TABLE web_events;
ALTER TABLE web_events_unkeyed RENAME TO web_events;
CREATE UNIQUE INDEX web_events_pageview ON web_events (site_id, pageview_id);
CREATE INDEX web_events_session ON web_events (session_id, occurred_at);
CREATE INDEX web_events_site_time ON web_events (site_id, occurred_at);
