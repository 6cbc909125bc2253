ALTER TABLE web_affiliates DROP COLUMN active;
