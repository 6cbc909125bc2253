-- The live rows' funnel (rule OVR-13) reads every step row of the visitors
-- shown. Since migration 17 the table is stored by its key, so each entry of
-- the (site, visitor) index led to a search of that key for `steps`; an
-- index entry already carries the key (funnel, at, event), and with `steps`
-- it answers the read alone.
DROP INDEX web_funnel_steps_visitor;
CREATE INDEX web_funnel_steps_visitor ON web_funnel_steps (site_id, visitor_id, steps);
