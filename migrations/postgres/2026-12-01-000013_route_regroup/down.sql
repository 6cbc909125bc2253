DROP TABLE web_route_groups;
DROP TABLE web_regroup_jobs;
