-- The Conversions API send queue: one row per (lead, event), its eventId the
-- lowercase hex SHA-256 of "<leadId>:<eventName>". A row is pending until it is
-- sent or fails for good; then its hashes are erased and it stays as history.
CREATE TABLE conversions (
    event_id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    lead_id TEXT REFERENCES leads (id) ON DELETE CASCADE,
    -- Lead, QualifiedLead, Schedule or Purchase.
    event_name TEXT NOT NULL,
    -- When the event happened (epoch ms; sent in seconds).
    event_time BIGINT NOT NULL,
    -- Purchase only: the lead's sale total and the site's currency.
    value_cents BIGINT,
    currency TEXT,
    -- pending, sent or failed.
    status TEXT NOT NULL,
    -- Attempts started (a lost one counts).
    attempts BIGINT NOT NULL DEFAULT 0,
    -- When the next attempt is due; null once the row has ended.
    due_at BIGINT,
    -- The attempt in flight: who holds it and until when.
    lease_owner TEXT,
    lease_until BIGINT,
    -- SHA-256 hex digests of the contact (phones comma-separated), only while pending.
    ph TEXT,
    external_id TEXT,
    -- Starts with a code (META_UNAVAILABLE, EVENT_TOO_OLD, UNEXPECTED, ...).
    last_error TEXT,
    created_at BIGINT NOT NULL,
    sent_at BIGINT,
    updated_at BIGINT NOT NULL
);
CREATE INDEX conversions_site_created ON conversions (site_id, created_at, event_id);
CREATE INDEX conversions_site_status_due ON conversions (site_id, status, due_at);
CREATE INDEX conversions_status_due ON conversions (status, due_at);
CREATE INDEX conversions_lead ON conversions (lead_id);

-- Events Meta accepted, per site, UTC day of the send and event: last30d and sentToday.
CREATE TABLE conversion_days (
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    day BIGINT NOT NULL,
    event_name TEXT NOT NULL,
    sent BIGINT NOT NULL,
    PRIMARY KEY (site_id, day, event_name)
);
