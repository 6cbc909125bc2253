DROP INDEX web_visitors_live;
CREATE INDEX web_visitors_live ON web_visitors (site_id, last_at);
ALTER TABLE web_visitors DROP COLUMN handed_over;
