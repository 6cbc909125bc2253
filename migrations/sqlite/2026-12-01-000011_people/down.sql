DROP TABLE web_profile_terms;
DROP TABLE web_aliases;
DROP TABLE web_profiles;
DROP TABLE web_identities;
