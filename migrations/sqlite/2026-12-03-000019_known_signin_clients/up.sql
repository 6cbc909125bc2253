-- The client addresses each operator signed in from (README "Operators"):
-- guesses against an operator's name from other addresses slow down sign-ins
-- from addresses not listed here, never from these. Each is an HMAC of the
-- address's rate-limit key (an IPv4 address, an IPv6 /64) keyed by the
-- operator's password hash, never the address; a new password forgets them.
CREATE TABLE operator_known_clients (
    operator_id TEXT NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    client_hash TEXT NOT NULL,
    last_at BIGINT NOT NULL,
    PRIMARY KEY (operator_id, client_hash)
);
