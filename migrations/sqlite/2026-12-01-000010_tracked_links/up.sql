-- Tracked links (ANALYTICS.md §5.10): one row per link of a site, with its
-- all-time counters (never purged), and daily counters per (link, UTC day)
-- that the retention job's aggregates class deletes by day start.

CREATE TABLE web_links (
    id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL,
    slug TEXT NOT NULL,
    destination TEXT NOT NULL,
    platform TEXT NOT NULL,
    channel TEXT NOT NULL,
    campaign TEXT,
    disabled BOOLEAN NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    clicks_total BIGINT NOT NULL DEFAULT 0,
    bot_hits_total BIGINT NOT NULL DEFAULT 0
);
-- A deleted link's row goes, so its slug is free again.
CREATE UNIQUE INDEX web_links_slug ON web_links (site_id, slug);
CREATE INDEX web_links_site_created ON web_links (site_id, created_at, id);

-- day = the UTC day's start (epoch ms).
CREATE TABLE web_link_days (
    link_id TEXT NOT NULL,
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    clicks BIGINT NOT NULL,
    bot_hits BIGINT NOT NULL,
    PRIMARY KEY (link_id, day)
);
CREATE INDEX web_link_days_site_day ON web_link_days (site_id, day);
