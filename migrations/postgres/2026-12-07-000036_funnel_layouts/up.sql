-- How far each site's funnel step rows are laid out in key order (issue 25,
-- funnelsReport on PostgreSQL). Rows are appended to and rewritten as events
-- arrive, so in the heap a day's rows lie scattered among every other
-- funnel's, and a 90-day report read about a page per row. Once a UTC day is
-- complete, the layout actor rewrites that day's rows of the site in key
-- order (`service::analytics::reports::funnel_layout`); `laid_through` is the
-- last day done. An import of past events and a funnel's rebuild write into
-- laid-out days, so they move it back. SQLite keeps the table `WITHOUT
-- ROWID`, in key order already: it has no such table.
CREATE TABLE web_funnel_layouts (
    site_id TEXT PRIMARY KEY NOT NULL,
    laid_through BIGINT NOT NULL
);
