-- A version per session (issue 25, rule STORE-12): each process keeps the
-- sessions its tracker writes in memory and uses a kept one only while the
-- stored version is still the kept one. Acceptance advances the version
-- itself (`version = web_sessions.version + 1` in its upsert); any other
-- update that leaves it as it was (conversions, identify's hand-over,
-- regroup, a writer added later) gets it advanced here, so no writer can
-- forget to. A deleted session has no version at all. Session ids are never
-- reused, so a version never names two contents of one id.
ALTER TABLE web_sessions ADD COLUMN version BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION web_sessions_next_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := OLD.version + 1;
    RETURN NEW;
END $$;

CREATE TRIGGER web_sessions_version BEFORE UPDATE ON web_sessions
    FOR EACH ROW WHEN (NEW.version = OLD.version) EXECUTE FUNCTION web_sessions_next_version();
