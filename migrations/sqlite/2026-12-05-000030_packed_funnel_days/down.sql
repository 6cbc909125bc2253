-- One row per event again. The step index is derived from the events, so
-- it is rebuilt from them (every funnel queued, as a changed definition
-- is) rather than unpacked here; funnelsReport reads the events meanwhile.
DROP TABLE web_funnel_days;
CREATE TABLE web_funnel_steps (
    funnel_id TEXT NOT NULL,
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    event_id TEXT NOT NULL,
    steps BIGINT NOT NULL,
    PRIMARY KEY (funnel_id, at, event_id)
) WITHOUT ROWID;
CREATE INDEX web_funnel_steps_visitor ON web_funnel_steps (site_id, visitor_id, steps);
CREATE INDEX web_funnel_steps_site_time ON web_funnel_steps (site_id, at);
INSERT INTO web_funnel_rebuilds (funnel_id, site_id, after_at, after_id)
SELECT id, site_id, -9223372036854775808, '' FROM web_funnels WHERE true
ON CONFLICT (funnel_id) DO UPDATE SET after_at = excluded.after_at, after_id = excluded.after_id;
