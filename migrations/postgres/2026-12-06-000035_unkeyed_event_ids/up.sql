-- An event's id is made unique where it is made (creation time and 48 random
-- bits, `ids`), and nothing finds an event by its id alone: a pageview's
-- later measures find it by `(site_id, pageview_id)`, a route's rewrite by
-- `(site_id, occurred_at, id)`, the reads by session or by site and time. The
-- primary key's index on the id (52 bytes per stored pageview in
-- `loadgen events`) served no read (issue 25, "measure each index against
-- the reads that use it").
ALTER TABLE web_events DROP CONSTRAINT web_events_pkey;
