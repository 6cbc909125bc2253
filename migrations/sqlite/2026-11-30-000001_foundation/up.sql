-- Sites, leads, their history, board columns and the lead rollups.
-- Times are epoch milliseconds (BIGINT); JSON is TEXT.
CREATE TABLE sites (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    currency TEXT NOT NULL,
    timezone TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    domains TEXT NOT NULL DEFAULT '[]',
    route_patterns TEXT NOT NULL DEFAULT '[]',
    cookieless BOOLEAN NOT NULL DEFAULT FALSE,
    send_lead_event BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX sites_owner ON sites (owner_id);

CREATE TABLE leads (
    id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    lead_key TEXT NOT NULL,
    label TEXT,
    origin TEXT NOT NULL,
    campaign_id TEXT NOT NULL DEFAULT '',
    adset_id TEXT NOT NULL DEFAULT '',
    ad_id TEXT NOT NULL DEFAULT '',
    campaign_name TEXT,
    adset_name TEXT,
    ad_name TEXT,
    click_id TEXT,
    first_at BIGINT NOT NULL,
    cohort_day BIGINT NOT NULL,
    stage TEXT NOT NULL,
    stage_at BIGINT NOT NULL,
    ever_qualified BOOLEAN NOT NULL DEFAULT FALSE,
    ever_won BOOLEAN NOT NULL DEFAULT FALSE,
    revenue_cents BIGINT NOT NULL DEFAULT 0,
    won_at BIGINT,
    column_key TEXT,
    column_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (site_id, lead_key)
);
CREATE INDEX leads_site_first ON leads (site_id, first_at, id);
CREATE INDEX leads_site_ad_first ON leads (site_id, ad_id, first_at);

CREATE TABLE lead_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    lead_id TEXT NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    site_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    stage TEXT,
    column_key TEXT,
    revenue_cents BIGINT,
    occurred_at BIGINT NOT NULL,
    recorded_at BIGINT NOT NULL,
    UNIQUE (lead_id, event_id)
);
-- Board moves only (the board's column counts read them): most events have no
-- column, and an entry for each of them cost every recorded lead one more write.
CREATE INDEX lead_events_column ON lead_events (site_id, column_key, occurred_at) WHERE column_key IS NOT NULL;

CREATE TABLE pipeline_columns (
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    color TEXT,
    group_name TEXT,
    event TEXT,
    PRIMARY KEY (site_id, key)
);

-- Counters per cohort day and ad: what the reports read instead of the leads.
-- Empty strings stand for "no id" so the key is a real unique key on both backends.
CREATE TABLE lead_rollups (
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    day BIGINT NOT NULL,
    origin TEXT NOT NULL,
    campaign_id TEXT NOT NULL,
    adset_id TEXT NOT NULL,
    ad_id TEXT NOT NULL,
    leads BIGINT NOT NULL DEFAULT 0,
    qualified BIGINT NOT NULL DEFAULT 0,
    won BIGINT NOT NULL DEFAULT 0,
    revenue_cents BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (site_id, day, origin, campaign_id, adset_id, ad_id)
);
CREATE INDEX lead_rollups_site_ad_day ON lead_rollups (site_id, ad_id, day);
-- The reports' order: a report sums each site's rollups by origin and by ad; in
-- this order (and holding the counters) SQLite reads them without a sort and
-- without visiting the table.
CREATE INDEX lead_rollups_tree ON lead_rollups (site_id, origin, campaign_id, adset_id, ad_id, day, leads, qualified, won, revenue_cents);

-- The latest names a lead gave for a campaign, ad set or ad (the catalog overrides them).
CREATE TABLE ad_labels (
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    level TEXT NOT NULL,
    object_id TEXT NOT NULL,
    name TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (site_id, level, object_id)
);
