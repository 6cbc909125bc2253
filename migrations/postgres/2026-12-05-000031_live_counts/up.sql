-- The count of live visitors kept as it changes (issue 25, item 4), on
-- PostgreSQL only: liveVisitors counted the (site, last_at) index entries of
-- the window, and since the tracker updates those rows every few seconds the
-- visibility map cannot vouch for their pages, so each entry was checked in
-- the table (10,000 heap fetches for 10,000 live visitors). Instead, per
-- site and 10-second bucket of last activity, the number of visitor rows
-- (not handed over, as the count reads them) is kept by statement triggers
-- on web_visitors, whatever statement changes a row, so it cannot drift from
-- the rows. A read sums the whole buckets of its window and counts only the
-- rows of the two partial buckets at its edges. `shard` spreads one bucket
-- over 16 rows by the writing connection, so several processes accepting
-- events of one site do not queue on one counter row until they commit.
-- `web_live_horizon.since`: the counters are complete from that instant on
-- (the report actor deletes older buckets and moves it); a window starting
-- before it counts the rows as before.
CREATE TABLE web_live_counts (
    site_id TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    shard INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (site_id, bucket, shard)
);
CREATE TABLE web_live_horizon (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    since BIGINT NOT NULL
);

CREATE FUNCTION web_live_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO web_live_counts (site_id, bucket, shard, n)
        SELECT site_id, last_at - last_at % 10000, pg_backend_pid() % 16, COUNT(*)
        FROM new_rows WHERE NOT handed_over GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (site_id, bucket, shard) DO UPDATE SET n = web_live_counts.n + excluded.n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO web_live_counts (site_id, bucket, shard, n)
        SELECT site_id, bucket, pg_backend_pid() % 16, SUM(d) FROM (
            SELECT site_id, last_at - last_at % 10000 AS bucket, 1 AS d FROM new_rows WHERE NOT handed_over
            UNION ALL
            SELECT site_id, last_at - last_at % 10000, -1 FROM old_rows WHERE NOT handed_over
        ) moved GROUP BY 1, 2 HAVING SUM(d) <> 0 ORDER BY 1, 2
        ON CONFLICT (site_id, bucket, shard) DO UPDATE SET n = web_live_counts.n + excluded.n;
    ELSE
        INSERT INTO web_live_counts (site_id, bucket, shard, n)
        SELECT site_id, last_at - last_at % 10000, pg_backend_pid() % 16, -COUNT(*)
        FROM old_rows WHERE NOT handed_over GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (site_id, bucket, shard) DO UPDATE SET n = web_live_counts.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER web_visitors_live_insert AFTER INSERT ON web_visitors
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION web_live_counts_move();
CREATE TRIGGER web_visitors_live_update AFTER UPDATE ON web_visitors
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION web_live_counts_move();
CREATE TRIGGER web_visitors_live_delete AFTER DELETE ON web_visitors
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION web_live_counts_move();

-- The rows already there, counted once: every bucket is complete.
LOCK TABLE web_visitors IN SHARE MODE;
INSERT INTO web_live_counts (site_id, bucket, shard, n)
SELECT site_id, last_at - last_at % 10000, 0, COUNT(*) FROM web_visitors WHERE NOT handed_over GROUP BY 1, 2;
INSERT INTO web_live_horizon (one, since) VALUES (TRUE, -9223372036854775808);
