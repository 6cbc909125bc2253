-- Web analytics, part 2 (ANALYTICS.md §4.2, §5.5, §5.7): the site's goals,
-- funnels and affiliates, the trusted conversion ledger, and the rollups the
-- goal and affiliate reports read.

-- A removed goal keeps its row (removed_at set): the rollups it wrote stay
-- ranked in `topGoals` under its key and name (rule OVR-11).
CREATE TABLE web_goals (
    id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    -- pageview | event
    matcher_kind TEXT NOT NULL,
    -- the path pattern or the event name
    matcher_value TEXT NOT NULL,
    value_cents BIGINT,
    active BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    removed_at BIGINT
);
CREATE UNIQUE INDEX web_goals_key ON web_goals (site_id, key) WHERE removed_at IS NULL;

CREATE TABLE web_funnels (
    id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    window_ms BIGINT NOT NULL,
    -- [{label, matcher: {kind, path | name}}]
    steps TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX web_funnels_key ON web_funnels (site_id, key);

-- A removed affiliate keeps its row: conversions keep its frozen commission
-- and `affiliatesReport` puts them in `unlisted` (rule ARPT-16).
CREATE TABLE web_affiliates (
    id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL,
    slug TEXT NOT NULL,
    name TEXT NOT NULL,
    commission_bps BIGINT NOT NULL,
    window_days BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    removed_at BIGINT
);
CREATE UNIQUE INDEX web_affiliates_slug ON web_affiliates (site_id, slug) WHERE removed_at IS NULL;

-- One row per (session, goal) the session completed: `goalsReport`'s
-- sessions for partial hours and the session's `goals`.
CREATE TABLE web_session_goals (
    session_id TEXT NOT NULL,
    goal_id TEXT NOT NULL,
    site_id TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, goal_id)
);
CREATE INDEX web_session_goals_site ON web_session_goals (site_id, goal_id, started_at);

-- One row per goal completion (decided at acceptance, rule ARPT-10):
-- `goalsReport`'s completions for partial hours.
CREATE TABLE web_goal_hits (
    site_id TEXT NOT NULL,
    goal_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (site_id, goal_id, at, event_id)
);

-- Goal counters per (site, tier, bucket, goal): completions at the event's
-- time, sessions in the bucket of the session's start.
CREATE TABLE web_goal_counters (
    site_id TEXT NOT NULL,
    tier TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    goal_id TEXT NOT NULL,
    completions BIGINT NOT NULL DEFAULT 0,
    sessions BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (site_id, tier, bucket, goal_id)
);

-- Affiliate counters per (site, UTC day, affiliate): tagged sessions at their
-- start, attributed conversions at `occurredAt`.
CREATE TABLE web_affiliate_days (
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    affiliate_id TEXT NOT NULL,
    sessions BIGINT NOT NULL DEFAULT 0,
    conversions BIGINT NOT NULL DEFAULT 0,
    revenue_cents BIGINT NOT NULL DEFAULT 0,
    commission_cents BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (site_id, day, affiliate_id)
);

-- The trusted conversion ledger (§4.2); the key never leaves the host API's
-- idempotency check.
CREATE TABLE web_conversions (
    id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL,
    conversion_key TEXT NOT NULL,
    name TEXT NOT NULL,
    occurred_at BIGINT NOT NULL,
    value_cents BIGINT NOT NULL,
    currency TEXT NOT NULL,
    visitor_id TEXT,
    session_id TEXT,
    affiliate_id TEXT,
    commission_cents BIGINT NOT NULL,
    properties TEXT,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX web_conversions_key ON web_conversions (site_id, conversion_key);
CREATE INDEX web_conversions_time ON web_conversions (site_id, occurred_at, id);

ALTER TABLE web_counters ADD COLUMN commission_cents BIGINT NOT NULL DEFAULT 0;
-- The goals an accepted event completed (space-separated ids) and those the
-- session completed for the first time, for the report actors.
ALTER TABLE web_outbox ADD COLUMN goals TEXT;
ALTER TABLE web_outbox ADD COLUMN new_goals TEXT;
