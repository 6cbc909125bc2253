-- WA-33: Meta takes a `website` event only with the browser's user agent
-- (`client_user_agent`). A session that landed with an fbclid keeps its raw
-- user agent beside it, sealed the same way and for the same time (deleted
-- with the session's retention and when its person is forgotten), and only
-- to send its ledger purchases; NULL for rows kept before this column.
ALTER TABLE web_click_ids ADD COLUMN sealed_user_agent TEXT;
