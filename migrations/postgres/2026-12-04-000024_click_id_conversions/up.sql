-- Meta told by click id (docs/whatsapp.md §4, WA-30 to WA-33).

-- WA-30: per site, whether the conversions of click-to-WhatsApp leads go to
-- Meta by their click id (business_messaging), and the WhatsApp Business
-- Account they go with (5-20 digits; required while send_click_ids is on).
ALTER TABLE sites ADD COLUMN send_click_ids BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE sites ADD COLUMN whatsapp_business_account_id TEXT;

-- WA-33: the fbclid a session landed with, sealed (AES-256-GCM under
-- RASTRO_SECRETS_KEY, bound to its site and session), kept only to send the
-- session's ledger purchases to the pixel as `fbc`. Only sessions that
-- landed with one have a row. Deleted with the sessions' retention class
-- (landed_at is the session's start) and when its person is forgotten.
CREATE TABLE web_click_ids (
    site_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    sealed_fbclid TEXT NOT NULL,
    landed_at BIGINT NOT NULL,
    PRIMARY KEY (site_id, session_id)
);
CREATE INDEX web_click_ids_landed ON web_click_ids (site_id, landed_at);

-- WA-33: a ledger conversion sent to the pixel as a website Purchase: the
-- conversion, the session whose fbclid goes as fbc (read from
-- web_click_ids when sent), and the event id Meta gets when it is not the
-- row's own (the conversion's eventId property, else conv:<conversion id>).
ALTER TABLE conversions ADD COLUMN web_conversion_id TEXT;
ALTER TABLE conversions ADD COLUMN web_session_id TEXT;
ALTER TABLE conversions ADD COLUMN sent_event_id TEXT;
