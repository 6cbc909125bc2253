DROP TABLE web_funnel_rebuilds;
DROP TABLE web_funnel_steps;
