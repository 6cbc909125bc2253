CREATE INDEX conversions_status_due ON conversions (status, due_at);
