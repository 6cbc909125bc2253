-- Federation: the local grants, the authority for a dashboard connection's
-- site scope (runbook phase 2). One row per connection; a revoked grant keeps
-- its row with revoked_at set until it is provisioned again.
CREATE TABLE federation_grants (
    connection_id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL,
    -- The host's opaque owner of every granted site (sites.owner_id).
    owner_id TEXT NOT NULL,
    -- JSON array of 1-10 unique site ids.
    site_ids TEXT NOT NULL,
    -- JSON array of analytics:configure / analytics:public (empty: read only).
    permissions TEXT NOT NULL,
    revoked_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
