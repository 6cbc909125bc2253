-- The WhatsApp bridge (docs/whatsapp.md, WA-02): each reference a tap on the
-- site's WhatsApp link wrote into the prefilled message, and the click that
-- minted it, so a lead that hands the reference back finds its visit. Only
-- ids, the business number and the page: never the visitor's phone or
-- message (WA-40).
--
-- A reference binds for 7 days after its click: a later tap with the same
-- reference in those days leaves the row as it is, one after them takes it
-- over. The retention actor deletes rows older than 7 days on every site
-- (whatever the site's policy), and forgetting a person deletes theirs.
CREATE TABLE web_whatsapp_refs (
    site_id TEXT NOT NULL,
    -- Upper case, 6 characters of 23456789ABCDEFGHJKMNPQRSTUVWXYZ.
    ref TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    -- Digits only; empty when the tap named no number.
    number TEXT NOT NULL,
    -- The stored path of the page tapped on.
    path TEXT NOT NULL,
    -- Epoch milliseconds of the tap (the event's time).
    clicked_at BIGINT NOT NULL,
    PRIMARY KEY (site_id, ref)
);
-- The retention actor's 7-day sweep, across sites.
CREATE INDEX web_whatsapp_refs_clicked ON web_whatsapp_refs (clicked_at);
