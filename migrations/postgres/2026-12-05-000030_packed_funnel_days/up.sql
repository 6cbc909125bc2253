-- The funnel step index packed by day (issue 25, item 4): one row per
-- (funnel, UTC day, visitor) holding that visitor's matching events of the
-- day, instead of one row per event, so funnelsReport reads a row per
-- visitor-day (about a quarter of the rows) and runs the same level
-- computation over the unpacked entries. `entries` is a sequence of
-- entries, each the event's time (8 bytes), its step bits (2 bytes), its id's
-- length (1 byte) and its id, integers big-endian. Writers append (an event
-- appended twice, as a rebuild may, is read once), so its order is not
-- relied on. `first_at` is the earliest entry's time: retention finds the
-- rows it must trim by it.
CREATE TABLE web_funnel_days (
    funnel_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    visitor_id TEXT NOT NULL,
    site_id TEXT NOT NULL,
    first_at BIGINT NOT NULL,
    entries BYTEA NOT NULL,
    PRIMARY KEY (funnel_id, day, visitor_id)
);
INSERT INTO web_funnel_days (funnel_id, day, visitor_id, site_id, first_at, entries)
SELECT funnel_id, day, visitor_id, MIN(site_id), MIN(at),
    string_agg(
        int8send(at) || substring(int4send(steps::int4) FROM 3 FOR 2)
            || substring(int4send(octet_length(event_id)) FROM 4 FOR 1) || convert_to(event_id, 'UTF8'),
        ''::bytea ORDER BY at, event_id)
FROM (SELECT funnel_id, at - (at % 86400000) AS day, visitor_id, site_id, at, steps, event_id FROM web_funnel_steps) s
GROUP BY funnel_id, day, visitor_id;
DROP TABLE web_funnel_steps;
CREATE INDEX web_funnel_days_visitor ON web_funnel_days (site_id, visitor_id);
CREATE INDEX web_funnel_days_site_first ON web_funnel_days (site_id, first_at);
-- Statistics now: until autovacuum's analyze reaches the new table, the
-- planner would walk a whole site's rows for a few visitors' (live rows).
ANALYZE web_funnel_days;
