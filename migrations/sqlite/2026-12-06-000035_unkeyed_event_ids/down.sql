CREATE TABLE web_events_keyed (
    id TEXT PRIMARY KEY NOT NULL,
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
INSERT INTO web_events_keyed (id, site_id, session_id, visitor_id, kind, name, path, route, occurred_at,
    pageview_id, properties, engaged_ms, lcp, inp, cls, fcp, ttfb)
SELECT id, site_id, session_id, visitor_id, kind, name, path, route, occurred_at,
    pageview_id, properties, engaged_ms, lcp, inp, cls, fcp, ttfb
FROM web_events ORDER BY rowid;
DROP TABLE web_events;
ALTER TABLE web_events_keyed RENAME TO web_events;
CREATE UNIQUE INDEX web_events_pageview ON web_events (site_id, pageview_id);
CREATE INDEX web_events_session ON web_events (session_id, occurred_at);
CREATE INDEX web_events_site_time ON web_events (site_id, occurred_at);
