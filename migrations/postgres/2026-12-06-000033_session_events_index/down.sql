DROP INDEX web_events_session;
CREATE INDEX web_events_session ON web_events (session_id, occurred_at, id);
