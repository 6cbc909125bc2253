-- Visitor sets per page and per source in the hour tier too (issue 25,
-- item 4): an hourly overview, and the edge hours of an overview in local
-- days, count their pages' and sources' visitors from rollups instead of
-- reading every retained event of those hours. Earlier versions kept these
-- sets for days and months only, so per site `complete_from` is the first
-- hour whose hour sets hold every event: a site that had data when this
-- migration ran starts with the hour after the next one (an event's time is
-- never after its receipt, so nothing applied before this migration falls
-- there), and the hours before it keep being read from the events. A site
-- without a row is complete from the start.
CREATE TABLE web_hour_sets_from (
    site_id TEXT PRIMARY KEY NOT NULL,
    complete_from BIGINT NOT NULL
);
INSERT INTO web_hour_sets_from (site_id, complete_from)
SELECT DISTINCT site_id, (FLOOR(EXTRACT(EPOCH FROM now()) / 3600)::BIGINT + 2) * 3600000
FROM web_counters;
