-- The dashboard's operators: who may sign in to the built-in page, whether they
-- may change anything (`can_configure`), and the Meta owner key they act for.
CREATE TABLE operators (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL UNIQUE,
    -- Argon2id PHC string; never returned, never logged.
    password_hash TEXT NOT NULL,
    can_configure BOOLEAN NOT NULL,
    owner_key TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Signed-in sessions. The cookie carries a random id; only its SHA-256 is
-- stored, so a copy of the database opens no session.
CREATE TABLE operator_sessions (
    id_hash TEXT PRIMARY KEY NOT NULL,
    operator_id TEXT NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    csrf_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX operator_sessions_operator ON operator_sessions (operator_id);

-- Failed sign-ins, per operator name and per client address (both as SHA-256),
-- for the sign-in rate limit; rows older than the window are deleted as new
-- ones come. In the database, so several processes share one limit.
CREATE TABLE dashboard_signin_failures (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_hash TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX dashboard_signin_failures_key ON dashboard_signin_failures (key_hash, at);
