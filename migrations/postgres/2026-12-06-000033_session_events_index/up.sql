-- A session's events are few, so the index that finds them needs only the
-- session and the time (issue 25, "measure each index against the reads that
-- use it"). The event id it also held (28 bytes an entry, about a quarter of
-- the index) served only as the tie-breaker of `(occurredAt, eventId)`; the
-- reads sort the ties of one session themselves. On PostgreSQL the id could
-- never serve that order anyway: the reads compare ids byte-wise
-- (`COLLATE "C"`), which an index in the database's collation cannot give.
DROP INDEX web_events_session;
CREATE INDEX web_events_session ON web_events (session_id, occurred_at);
