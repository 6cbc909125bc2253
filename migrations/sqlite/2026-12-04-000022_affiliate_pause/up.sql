-- An affiliate can be paused (issue 24): a paused one tags no new landing.
ALTER TABLE web_affiliates ADD COLUMN active BOOLEAN NOT NULL DEFAULT 1;
