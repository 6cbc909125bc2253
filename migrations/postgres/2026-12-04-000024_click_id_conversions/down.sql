ALTER TABLE conversions DROP COLUMN sent_event_id;
ALTER TABLE conversions DROP COLUMN web_session_id;
ALTER TABLE conversions DROP COLUMN web_conversion_id;
DROP TABLE web_click_ids;
ALTER TABLE sites DROP COLUMN whatsapp_business_account_id;
ALTER TABLE sites DROP COLUMN send_click_ids;
