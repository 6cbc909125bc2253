DROP TABLE web_hour_sets_from;
