ALTER TABLE conversions DROP COLUMN crm_event_name;
ALTER TABLE conversions DROP COLUMN meta_lead_id;
UPDATE meta_lead_receipts SET status = 'recorded' WHERE status IN ('pending', 'delivered') AND lead_id IS NOT NULL;
DROP TABLE meta_form_handlers;
