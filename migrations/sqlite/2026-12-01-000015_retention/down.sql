DROP INDEX web_affiliate_days_site_day;
DROP INDEX web_session_goals_site_start;
DROP INDEX web_goal_hits_site_time;
DROP INDEX web_funnel_steps_site_time;
DROP TABLE web_retention_jobs;
DROP TABLE web_retention_policies;
