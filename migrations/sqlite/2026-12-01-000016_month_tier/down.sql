DROP TABLE web_month_tier;
