-- Web analytics, part 1 (ANALYTICS.md §2): what the tracker's accepted events
-- write at once (events, sessions, the (site, visitor) state, one outbox row
-- per event) and the rollups the report actors apply from the outbox.
-- Times are epoch ms; buckets are UTC hour or day starts.

-- 32 random bytes per UTC day: the cookieless visitor id's key.
CREATE TABLE web_salts (
    day BIGINT PRIMARY KEY NOT NULL,
    salt BYTEA NOT NULL
);

-- Keys made once for every process of the database: `cursor` signs the
-- pagination cursors, so a cursor stays valid across restarts and processes.
CREATE TABLE web_keys (
    name TEXT PRIMARY KEY NOT NULL,
    secret BYTEA NOT NULL
);

-- One row per (site, visitor): its current session and live fields.
CREATE TABLE web_visitors (
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    session_started_at BIGINT NOT NULL,
    -- Its last pageview or custom event (engagement and vitals never move it).
    last_at BIGINT NOT NULL,
    current_path TEXT NOT NULL,
    current_route TEXT NOT NULL,
    sessions BIGINT NOT NULL,
    PRIMARY KEY (site_id, visitor_id)
);
CREATE INDEX web_visitors_live ON web_visitors (site_id, last_at);

CREATE TABLE web_sessions (
    id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    last_at BIGINT NOT NULL,
    -- max(last pageview/custom event, each pageview's time + its engagedMs)
    end_at BIGINT NOT NULL,
    entry_path TEXT NOT NULL,
    entry_route TEXT NOT NULL,
    exit_path TEXT NOT NULL,
    referrer TEXT,
    source TEXT NOT NULL,
    medium TEXT NOT NULL,
    campaign TEXT,
    term TEXT,
    content TEXT,
    affiliate_id TEXT,
    country TEXT,
    region TEXT,
    device TEXT,
    browser TEXT,
    os TEXT,
    language TEXT,
    pageviews BIGINT NOT NULL,
    events BIGINT NOT NULL,
    is_returning BOOLEAN NOT NULL,
    conversions BIGINT NOT NULL DEFAULT 0,
    revenue_cents BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX web_sessions_site_start ON web_sessions (site_id, started_at, id);
CREATE INDEX web_sessions_visitor ON web_sessions (site_id, visitor_id, started_at);

-- Pageviews and custom events; engagement and vitals are columns of their pageview.
CREATE TABLE web_events (
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
CREATE UNIQUE INDEX web_events_pageview ON web_events (site_id, pageview_id);
CREATE INDEX web_events_session ON web_events (session_id, occurred_at, id);
CREATE INDEX web_events_site_time ON web_events (site_id, occurred_at);

-- What the report actors have still to apply: one row per accepted event or
-- engagement change, with the session deltas it causes (computed at acceptance,
-- where the session's state is known).
CREATE TABLE web_outbox (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    -- pageview | event | engagement
    kind TEXT NOT NULL,
    at BIGINT NOT NULL,
    session_start BIGINT NOT NULL,
    route TEXT NOT NULL,
    name TEXT,
    new_session BIGINT NOT NULL,
    d_bounces BIGINT NOT NULL,
    d_duration BIGINT NOT NULL,
    d_engaged_sum BIGINT NOT NULL,
    d_engaged_count BIGINT NOT NULL
);

-- Dense per-site visitor numbers for the distinct-visitor bitmaps.
CREATE TABLE web_visitor_numbers (
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    number BIGINT NOT NULL,
    PRIMARY KEY (site_id, visitor_id)
);
CREATE TABLE web_number_counters (
    site_id TEXT PRIMARY KEY NOT NULL,
    next_number BIGINT NOT NULL
);

-- Counters per (site, tier, bucket): tier 'h' (UTC hour) or 'd' (UTC day).
CREATE TABLE web_counters (
    site_id TEXT NOT NULL,
    tier TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    sessions BIGINT NOT NULL DEFAULT 0,
    bounces BIGINT NOT NULL DEFAULT 0,
    duration_sum BIGINT NOT NULL DEFAULT 0,
    pageviews BIGINT NOT NULL DEFAULT 0,
    custom_events BIGINT NOT NULL DEFAULT 0,
    engaged_sum BIGINT NOT NULL DEFAULT 0,
    engaged_count BIGINT NOT NULL DEFAULT 0,
    conversions BIGINT NOT NULL DEFAULT 0,
    revenue_cents BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (site_id, tier, bucket)
);

-- Breakdown counters per (site, tier, bucket, dimension, key); key '' is null.
CREATE TABLE web_breakdowns (
    site_id TEXT NOT NULL,
    tier TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    dim TEXT NOT NULL,
    key TEXT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (site_id, tier, bucket, dim, key)
);

-- Distinct-visitor sets (roaring bitmaps, portable format) per (site, tier,
-- bucket, dimension, key); dimension '' is the bucket's whole set.
CREATE TABLE web_visitor_sets (
    site_id TEXT NOT NULL,
    tier TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    dim TEXT NOT NULL,
    key TEXT NOT NULL,
    bits BYTEA NOT NULL,
    PRIMARY KEY (site_id, tier, bucket, dim, key)
);

-- Imports by id: the body's SHA-256 and the first answer, so a repeat of the
-- same body answers it again and another body under the id is a conflict.
CREATE TABLE web_imports (
    site_id TEXT NOT NULL,
    import_id TEXT NOT NULL,
    body_sha256 TEXT NOT NULL,
    answer TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (site_id, import_id)
);
