-- Route regrouping (ANALYTICS.md §5.8): a change of a site's routePatterns
-- queues a job that moves stored rows whose route is still a raw path
-- matching the new list to the pattern's route, a bounded step at a time.

-- One job per site (a newer change restarts it): the list it applies, the
-- phase it is in (outbox, events, sessions, visitors, then each rollup) and
-- where that phase's scan stands.
CREATE TABLE web_regroup_jobs (
    site_id TEXT PRIMARY KEY NOT NULL,
    patterns TEXT NOT NULL,
    phase BIGINT NOT NULL,
    cursor TEXT NOT NULL,
    started_at BIGINT NOT NULL
);

-- Every pattern a site has listed: a route with one of these texts is
-- grouped, never a raw path to move again (rows grouped are never split).
CREATE TABLE web_route_groups (
    site_id TEXT NOT NULL,
    route TEXT NOT NULL,
    PRIMARY KEY (site_id, route)
);
