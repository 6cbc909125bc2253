-- `funnelsReport` walks a funnel's step rows by (funnel, at): the primary
-- key carries the two columns it reads, so the walk is an index-only scan
-- instead of a heap fetch per row (SQLite stores the table by this key).
ALTER TABLE web_funnel_steps DROP CONSTRAINT web_funnel_steps_pkey,
    ADD CONSTRAINT web_funnel_steps_pkey PRIMARY KEY (funnel_id, at, event_id) INCLUDE (visitor_id, steps);
