-- The WhatsApp bridge (docs/whatsapp.md, WA-11 to WA-21).

-- The site visit a lead was matched to by its reference: copied from the
-- session when the lead arrived, so the lead keeps its source after the
-- session's own retention deletes it. Deleted with the lead.
CREATE TABLE lead_visits (
    lead_id TEXT PRIMARY KEY NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    source TEXT NOT NULL,
    medium TEXT NOT NULL,
    campaign TEXT,
    landing_path TEXT NOT NULL,
    affiliate_id TEXT,
    -- The tap on the WhatsApp link: when, and on which page.
    clicked_at BIGINT NOT NULL,
    clicked_path TEXT NOT NULL,
    lead_at BIGINT NOT NULL
);
-- A visitor's journey lists its leads.
CREATE INDEX lead_visits_visitor ON lead_visits (site_id, visitor_id);

-- Ledger conversions of sessions that came from a Meta ad (WA-13, WA-20),
-- one row per conversion, read by the lead reports per ad over a range.
-- Deleted with the conversion ledger's retention class.
CREATE TABLE web_ad_conversions (
    conversion_id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL,
    occurred_at BIGINT NOT NULL,
    campaign_id TEXT NOT NULL,
    adset_id TEXT NOT NULL,
    ad_id TEXT NOT NULL,
    value_cents BIGINT NOT NULL
);
CREATE INDEX web_ad_conversions_time ON web_ad_conversions (site_id, occurred_at);
