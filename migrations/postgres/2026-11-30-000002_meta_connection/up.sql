-- The Meta connection: sealed tokens per owner, what each token lists, the
-- links of ad accounts to sites, and each site's pixel.
CREATE TABLE meta_connections (
    owner_key TEXT PRIMARY KEY NOT NULL,
    sealed_token TEXT NOT NULL,
    -- Bumped on every new token: a refusal stops the connection only if the
    -- refused token is still the stored one.
    token_version BIGINT NOT NULL,
    source TEXT NOT NULL,
    authorized_by_id TEXT,
    authorized_by_name TEXT,
    authorized_at BIGINT NOT NULL,
    expires_at BIGINT,
    expiring_soon BOOLEAN NOT NULL DEFAULT FALSE,
    invalid_since BIGINT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE meta_listed_accounts (
    owner_key TEXT NOT NULL REFERENCES meta_connections (owner_key) ON DELETE CASCADE,
    ad_account_id TEXT NOT NULL,
    name TEXT NOT NULL,
    currency TEXT NOT NULL,
    timezone TEXT NOT NULL,
    account_status BIGINT,
    position INTEGER NOT NULL,
    PRIMARY KEY (owner_key, ad_account_id)
);

CREATE TABLE meta_listed_pixels (
    owner_key TEXT NOT NULL REFERENCES meta_connections (owner_key) ON DELETE CASCADE,
    pixel_id TEXT NOT NULL,
    name TEXT NOT NULL,
    ad_account_id TEXT NOT NULL,
    PRIMARY KEY (owner_key, pixel_id)
);

-- One ad account feeds one site.
CREATE TABLE site_ad_accounts (
    ad_account_id TEXT PRIMARY KEY NOT NULL,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    owner_key TEXT NOT NULL,
    name TEXT NOT NULL,
    currency TEXT NOT NULL,
    timezone TEXT NOT NULL,
    -- AD_ACCOUNT_NOT_GRANTED or META_TOKEN_INVALID while stopped; null when the link feeds.
    stopped_reason TEXT,
    last_error TEXT,
    linked_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX site_ad_accounts_site ON site_ad_accounts (site_id);
CREATE INDEX site_ad_accounts_owner ON site_ad_accounts (owner_key);

CREATE TABLE site_pixels (
    site_id TEXT PRIMARY KEY NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    pixel_id TEXT NOT NULL,
    name TEXT,
    -- 'connection' (sends with the owner's connection token) or 'token' (its own).
    source TEXT NOT NULL,
    -- Who set it; null for the host acting without an owner.
    owner_key TEXT,
    sealed_token TEXT,
    token_version BIGINT NOT NULL DEFAULT 0,
    enabled BOOLEAN NOT NULL,
    test_event_code TEXT,
    -- PIXEL_NOT_GRANTED, or META_TOKEN_INVALID once Meta refused its own token.
    stopped_reason TEXT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX site_pixels_owner ON site_pixels (owner_key);
