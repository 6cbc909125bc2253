-- The month tier of breakdowns and visitor sets (ANALYTICS.md §2 "Counters"):
-- rows of tier 'm' per UTC month, kept by the report actors beside the hour
-- and day tiers, so a year-long overview reads 12 rows per key, not 366.
-- Per site, `complete_from` is the first month whose month rows hold every
-- event: a site that had data when this migration ran starts with the month
-- after the one two days from now (nothing applied before this migration
-- can fall there), and the report actor then builds the earlier months from
-- the day rows, one (site, month) per transaction, moving it back. A site
-- without a row is complete from the start.
CREATE TABLE web_month_tier (
    site_id TEXT PRIMARY KEY NOT NULL,
    complete_from BIGINT NOT NULL
);
INSERT INTO web_month_tier (site_id, complete_from)
SELECT DISTINCT site_id, CAST(strftime('%s', 'now', '+2 days', 'start of month', '+1 month') AS INTEGER) * 1000
FROM web_counters;
