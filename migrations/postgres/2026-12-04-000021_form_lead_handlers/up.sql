-- The host's form-lead handler per site (LA-10, LA-12): where a form lead's
-- answers are delivered (POST, signed with the secret), the secret sealed
-- like every token (associated data: the site). No answer is ever stored:
-- a delivery that must be retried fetches the lead from Meta again.
CREATE TABLE meta_form_handlers (
    site_id TEXT PRIMARY KEY NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    sealed_secret TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- A receipt is now done once its lead is made and delivered: `pending` until
-- then (with `lead_id` set once the lead is made), `delivered` after the
-- handler's 2xx. Leads made before deliveries existed wait for theirs.
UPDATE meta_lead_receipts SET status = 'pending', attempts = 0 WHERE status = 'recorded';

-- Conversion Leads (LA-19): a form lead's events go to the pixel with Meta's
-- lead id (the leadgen id, not hashed) and the CRM stage's own name.
ALTER TABLE conversions ADD COLUMN meta_lead_id TEXT;
ALTER TABLE conversions ADD COLUMN crm_event_name TEXT;
