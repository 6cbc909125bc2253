-- `liveVisitors` hides an alias's row whose session identify handed to the
-- person (rule SES-19). It used to find those rows by looking each live row
-- up in the aliases and its session, 10,000 lookups for 10,000 live
-- visitors; the mark is kept on the row instead (identify sets it, each
-- accepted event sets it from the session it joins), and the index the
-- live reads walk carries it.
ALTER TABLE web_visitors ADD COLUMN handed_over BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE web_visitors SET handed_over = TRUE
WHERE EXISTS (SELECT 1 FROM web_aliases a WHERE a.site_id = web_visitors.site_id AND a.alias_id = web_visitors.visitor_id)
  AND EXISTS (SELECT 1 FROM web_sessions s WHERE s.id = web_visitors.session_id AND s.visitor_id <> web_visitors.visitor_id);
DROP INDEX web_visitors_live;
CREATE INDEX web_visitors_live ON web_visitors (site_id, last_at, handed_over);
