DROP TABLE web_upgrades;
DROP TABLE web_map_imported;
DROP TABLE web_vital_digests;
DROP TABLE web_map_transitions;
DROP TABLE web_map_routes;
ALTER TABLE web_outbox DROP COLUMN vital_new;
ALTER TABLE web_outbox DROP COLUMN vital_old;
ALTER TABLE web_outbox DROP COLUMN pageview_no;
ALTER TABLE web_outbox DROP COLUMN prev_route;
