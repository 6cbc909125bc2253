DROP TRIGGER web_sessions_version;
ALTER TABLE web_sessions DROP COLUMN version;
