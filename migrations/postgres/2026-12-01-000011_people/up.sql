-- Identified people (ANALYTICS.md §4.3, §5.11).

-- Per site owner: HMAC-SHA256 (hex) of ownerId ‖ 0x00 ‖ externalId under the
-- identity key (HKDF of RASTRO_SECRETS_KEY) → the canonical `u_` id. The
-- externalId itself is never stored.
CREATE TABLE web_identities (
    owner_id TEXT NOT NULL,
    external_hash TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (owner_id, external_hash)
);
CREATE INDEX web_identities_visitor ON web_identities (visitor_id);

-- One profile per (site, canonical id). `identified_at` is the first identify
-- on the site and never changes; first/last seen are identify times (reads
-- widen them with the person's sessions).
CREATE TABLE web_profiles (
    site_id TEXT NOT NULL,
    visitor_id TEXT COLLATE "C" NOT NULL,
    name TEXT,
    email TEXT,
    attributes TEXT NOT NULL,
    identified_at BIGINT NOT NULL,
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    PRIMARY KEY (site_id, visitor_id)
);
CREATE INDEX web_profiles_list ON web_profiles (site_id, identified_at, visitor_id);

-- Anonymous ids of a site → their canonical id (the first alias wins).
CREATE TABLE web_aliases (
    site_id TEXT NOT NULL,
    alias_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (site_id, alias_id)
);
CREATE INDEX web_aliases_person ON web_aliases (site_id, visitor_id);

-- The people search: the normalised name from each word start, and the
-- normalised email, per profile; a search is a byte-order prefix range here,
-- or, for a prefix many profiles match, a check per profile in list order
-- (byte order: the "C" collation, as SQLite's BINARY).
CREATE TABLE web_profile_terms (
    site_id TEXT NOT NULL,
    term TEXT COLLATE "C" NOT NULL,
    visitor_id TEXT NOT NULL,
    PRIMARY KEY (site_id, term, visitor_id)
);
CREATE INDEX web_profile_terms_person ON web_profile_terms (site_id, visitor_id, term);
