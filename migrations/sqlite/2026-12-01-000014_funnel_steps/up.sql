-- The funnel step index (ANALYTICS.md §2 "Funnel step index"): one row per
-- (funnel, pageview or custom event) matching any of the funnel's steps, with
-- the steps it matches as bits (bit i = step i + 1). Written at acceptance for
-- the funnels in force; a new funnel, or a change of its steps or window,
-- rebuilds its rows from the retained events in bounded steps
-- (web_funnel_rebuilds holds each rebuild's position), and until the rebuild
-- ends `funnelsReport` reads the events themselves for that funnel.
CREATE TABLE web_funnel_steps (
    funnel_id TEXT NOT NULL,
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    event_id TEXT NOT NULL,
    steps BIGINT NOT NULL,
    PRIMARY KEY (funnel_id, at, event_id)
);
CREATE INDEX web_funnel_steps_visitor ON web_funnel_steps (site_id, visitor_id);

CREATE TABLE web_funnel_rebuilds (
    funnel_id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL,
    after_at BIGINT NOT NULL,
    after_id TEXT NOT NULL
);
