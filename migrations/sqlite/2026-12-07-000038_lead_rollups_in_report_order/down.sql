CREATE TABLE lead_rollups_keyed (
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
INSERT INTO lead_rollups_keyed (site_id, day, origin, campaign_id, adset_id, ad_id, leads, qualified, won, revenue_cents)
SELECT site_id, day, origin, campaign_id, adset_id, ad_id, leads, qualified, won, revenue_cents
FROM lead_rollups ORDER BY site_id, day, origin, campaign_id, adset_id, ad_id;
DROP TABLE lead_rollups;
ALTER TABLE lead_rollups_keyed RENAME TO lead_rollups;
CREATE INDEX lead_rollups_site_ad_day ON lead_rollups (site_id, ad_id, day);
CREATE INDEX lead_rollups_tree ON lead_rollups (site_id, origin, campaign_id, adset_id, ad_id, day, leads, qualified, won, revenue_cents);
