-- The two rollups a report reads as long ranges of their primary key are
-- stored by that key (WITHOUT ROWID): `funnelsReport` walks a funnel's step
-- rows by (funnel, at) and `vitalsReport` a site's digests by (site, day),
-- and in a rowid table each row of the walk cost a lookup from the key's
-- index into the table (the columns read are not in the key). Stored by
-- the key, a range is one sequential walk. Retention names these rows by
-- their key instead of the rowid they no longer have.
CREATE TABLE web_funnel_steps_by_key (
    funnel_id TEXT NOT NULL,
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    event_id TEXT NOT NULL,
    steps BIGINT NOT NULL,
    PRIMARY KEY (funnel_id, at, event_id)
) WITHOUT ROWID;
INSERT INTO web_funnel_steps_by_key (funnel_id, site_id, visitor_id, at, event_id, steps)
SELECT funnel_id, site_id, visitor_id, at, event_id, steps FROM web_funnel_steps ORDER BY funnel_id, at, event_id;
DROP TABLE web_funnel_steps;
ALTER TABLE web_funnel_steps_by_key RENAME TO web_funnel_steps;
CREATE INDEX web_funnel_steps_visitor ON web_funnel_steps (site_id, visitor_id);
CREATE INDEX web_funnel_steps_site_time ON web_funnel_steps (site_id, at);

CREATE TABLE web_vital_digests_by_key (
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    metric TEXT NOT NULL,
    route TEXT NOT NULL,
    device TEXT NOT NULL,
    value BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (site_id, day, metric, route, device, value)
) WITHOUT ROWID;
INSERT INTO web_vital_digests_by_key (site_id, day, metric, route, device, value, count)
SELECT site_id, day, metric, route, device, value, count FROM web_vital_digests
ORDER BY site_id, day, metric, route, device, value;
DROP TABLE web_vital_digests;
ALTER TABLE web_vital_digests_by_key RENAME TO web_vital_digests;
