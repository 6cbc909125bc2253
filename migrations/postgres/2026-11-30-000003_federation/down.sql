DROP TABLE federation_grants;
