DROP TRIGGER web_sessions_version ON web_sessions;
DROP FUNCTION web_sessions_next_version();
ALTER TABLE web_sessions DROP COLUMN version;
