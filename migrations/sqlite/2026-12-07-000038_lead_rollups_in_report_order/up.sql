-- A lead's rollup bump changes its counters, and the rollups' covering index
-- (`lead_rollups_tree`) held the counters too, so every recorded lead
-- rewrote a random page of that index besides the table's: 16 of the 115
-- WAL pages of a 27-call commit in `loadgen ingest` (bench/lead_pages.py),
-- about a seventh of what recordLead writes (issue 25, "fewer pages dirtied
-- per lead"). Stored by the key in the reports' order (WITHOUT ROWID), the
-- table is that covering index: a bump rewrites one page, and a new key goes
-- into the table and two indexes instead of the table and three. The reports
-- by day read (site_id, day); by ad, (site_id, ad_id, day). PostgreSQL keeps
-- its heap table and indexes: its tables are never stored by a key.
CREATE TABLE lead_rollups_ordered (
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
    PRIMARY KEY (site_id, origin, campaign_id, adset_id, ad_id, day)
) WITHOUT ROWID;
INSERT INTO lead_rollups_ordered (site_id, day, origin, campaign_id, adset_id, ad_id, leads, qualified, won, revenue_cents)
SELECT site_id, day, origin, campaign_id, adset_id, ad_id, leads, qualified, won, revenue_cents
FROM lead_rollups ORDER BY site_id, origin, campaign_id, adset_id, ad_id, day;
DROP TABLE lead_rollups;
ALTER TABLE lead_rollups_ordered RENAME TO lead_rollups;
CREATE INDEX lead_rollups_site_day ON lead_rollups (site_id, day);
CREATE INDEX lead_rollups_site_ad_day ON lead_rollups (site_id, ad_id, day);
