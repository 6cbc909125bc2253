-- The account sync: its persisted state per linked ad account, the spend per
-- ad and account-local day, and the ad catalog.
CREATE TABLE account_syncs (
    ad_account_id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL,
    next_run_at BIGINT NOT NULL,
    -- The backfill in progress: [backfill_from, backfill_until] account-local
    -- dates (day numbers since 1970-01-01), `backfill_done` of `backfill_total` blocks read.
    backfill_from BIGINT,
    backfill_until BIGINT,
    backfill_done INTEGER NOT NULL DEFAULT 0,
    backfill_total INTEGER NOT NULL DEFAULT 0,
    -- Set when the first backfill ends: until then spend reads as unknown.
    first_synced_at BIGINT,
    -- The latest account-local day a successful run covered.
    synced_through BIGINT,
    last_live_at BIGINT,
    last_daily_day BIGINT,
    last_weekly_day BIGINT,
    last_sync_at BIGINT,
    last_error TEXT,
    fail_count INTEGER NOT NULL DEFAULT 0,
    lease_run_id TEXT,
    lease_until BIGINT,
    sync_requested BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX account_syncs_due ON account_syncs (next_run_at);

CREATE TABLE ad_spend (
    ad_account_id TEXT NOT NULL,
    site_id TEXT NOT NULL,
    -- The account-local date, as the UTC midnight of that date in epoch ms.
    day BIGINT NOT NULL,
    ad_id TEXT NOT NULL,
    adset_id TEXT NOT NULL,
    campaign_id TEXT NOT NULL,
    spend_cents BIGINT NOT NULL,
    impressions BIGINT NOT NULL,
    clicks BIGINT NOT NULL,
    PRIMARY KEY (ad_account_id, day, ad_id)
);
CREATE INDEX ad_spend_site_day ON ad_spend (site_id, day);

CREATE TABLE ad_catalog (
    ad_id TEXT PRIMARY KEY NOT NULL,
    ad_account_id TEXT NOT NULL,
    name TEXT,
    adset_id TEXT NOT NULL,
    adset_name TEXT,
    campaign_id TEXT NOT NULL,
    campaign_name TEXT,
    ad_status TEXT,
    creative_type TEXT,
    -- The content-addressed file under <data dir>/thumbnails, copied once.
    thumbnail TEXT,
    updated_at BIGINT NOT NULL
);
CREATE INDEX ad_catalog_account ON ad_catalog (ad_account_id);
