-- The live rows' funnel (rule OVR-13) reads every step row of the visitors
-- shown: the (site, visitor) index carries the columns it reads, for an
-- index-only scan instead of a heap fetch per row.
DROP INDEX web_funnel_steps_visitor;
CREATE INDEX web_funnel_steps_visitor ON web_funnel_steps (site_id, visitor_id) INCLUDE (funnel_id, at, event_id, steps);
