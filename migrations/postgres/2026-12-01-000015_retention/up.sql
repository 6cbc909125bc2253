-- Retention (ANALYTICS.md §5.9): a site's policy, and per (site, class) its
-- cleanup job: the cutoff of the latest run, when it ran and runs next, how
-- many rows it deleted, its last error, and `purged_before`, the cutoff
-- below which the class's rows are gone (dataCoverage reads it).
CREATE TABLE web_retention_policies (
    site_id TEXT PRIMARY KEY NOT NULL,
    events_days BIGINT NOT NULL,
    sessions_days BIGINT NOT NULL,
    conversions_days BIGINT NOT NULL,
    profiles_days BIGINT NOT NULL,
    aggregates_days BIGINT NOT NULL,
    enabled_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE web_retention_jobs (
    site_id TEXT NOT NULL,
    data_class TEXT NOT NULL,
    cutoff BIGINT,
    last_run_at BIGINT,
    next_run_at BIGINT,
    last_deleted BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    purged_before BIGINT,
    -- The site's trackingSince before the run deleted anything: dataCoverage
    -- keeps naming when tracking began after the first rows are gone.
    tracked_since BIGINT,
    PRIMARY KEY (site_id, data_class)
);

-- Retention deletes a site's old index rows by time.
CREATE INDEX web_funnel_steps_site_time ON web_funnel_steps (site_id, at);
CREATE INDEX web_goal_hits_site_time ON web_goal_hits (site_id, at);
CREATE INDEX web_session_goals_site_start ON web_session_goals (site_id, started_at);
CREATE INDEX web_affiliate_days_site_day ON web_affiliate_days (site_id, day);
