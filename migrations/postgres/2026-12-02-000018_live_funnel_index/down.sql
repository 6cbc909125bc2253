DROP INDEX web_funnel_steps_visitor;
CREATE INDEX web_funnel_steps_visitor ON web_funnel_steps (site_id, visitor_id);
