-- Meta Lead Ads (../shared/design/LEADADS.md). No column here ever holds a
-- person's answers, name, phone or e-mail (LA-08): a receipt is ids and times,
-- a form is its questions; the answers are fetched from Meta when a lead is
-- made and kept in memory only.

-- The Pages an owner's Meta connection lists (GET /me/accounts), each with its
-- Page token sealed (associated data: owner and Page), never answered.
CREATE TABLE meta_pages (
    owner_key TEXT NOT NULL,
    page_id TEXT NOT NULL,
    name TEXT NOT NULL,
    can_retrieve_leads BOOLEAN NOT NULL,
    sealed_token TEXT NOT NULL,
    listed_at BIGINT NOT NULL,
    PRIMARY KEY (owner_key, page_id)
);

-- A Page linked to the site its form leads feed: one site per Page (the key).
-- The lease columns hold the Page for one run of one process (LA-15).
CREATE TABLE meta_page_links (
    page_id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    owner_key TEXT NOT NULL,
    name TEXT NOT NULL,
    subscribed BOOLEAN NOT NULL,
    last_error TEXT,
    last_webhook_at BIGINT,
    last_reconciled_at BIGINT,
    lease_owner TEXT,
    lease_until BIGINT,
    linked_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX meta_page_links_site ON meta_page_links (site_id);

-- A linked Page's forms as Meta lists them: the questions (JSON [{key, label,
-- type}]), the rules the site set (JSON, or none) and the reconciliation's
-- watermark (the newest lead time read, epoch ms).
CREATE TABLE meta_forms (
    page_id TEXT NOT NULL,
    form_id TEXT NOT NULL,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    questions TEXT NOT NULL,
    rules TEXT,
    watermark BIGINT,
    listed_at BIGINT NOT NULL,
    PRIMARY KEY (page_id, form_id)
);

-- One row per leadgen id Meta told us of (webhook or reconciliation),
-- committed before the webhook's 200 (LA-07); `lead_id` is the lead it became.
-- status: pending (to fetch), recorded (the lead is made), failed (last_error).
CREATE TABLE meta_lead_receipts (
    id TEXT PRIMARY KEY NOT NULL,
    leadgen_id TEXT NOT NULL UNIQUE,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    page_id TEXT NOT NULL,
    form_id TEXT,
    ad_id TEXT,
    created_time BIGINT,
    received_at BIGINT NOT NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    last_error TEXT,
    lead_id TEXT,
    updated_at BIGINT NOT NULL
);
CREATE INDEX meta_lead_receipts_due ON meta_lead_receipts (page_id, status, next_attempt_at);
CREATE INDEX meta_lead_receipts_site ON meta_lead_receipts (site_id, status);
