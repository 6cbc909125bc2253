CREATE TABLE web_funnel_steps_rowid (
    funnel_id TEXT NOT NULL,
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    event_id TEXT NOT NULL,
    steps BIGINT NOT NULL,
    PRIMARY KEY (funnel_id, at, event_id)
);
INSERT INTO web_funnel_steps_rowid SELECT funnel_id, site_id, visitor_id, at, event_id, steps FROM web_funnel_steps;
DROP TABLE web_funnel_steps;
ALTER TABLE web_funnel_steps_rowid RENAME TO web_funnel_steps;
CREATE INDEX web_funnel_steps_visitor ON web_funnel_steps (site_id, visitor_id);
CREATE INDEX web_funnel_steps_site_time ON web_funnel_steps (site_id, at);

CREATE TABLE web_vital_digests_rowid (
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    metric TEXT NOT NULL,
    route TEXT NOT NULL,
    device TEXT NOT NULL,
    value BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (site_id, day, metric, route, device, value)
);
INSERT INTO web_vital_digests_rowid SELECT site_id, day, metric, route, device, value, count FROM web_vital_digests;
DROP TABLE web_vital_digests;
ALTER TABLE web_vital_digests_rowid RENAME TO web_vital_digests;
