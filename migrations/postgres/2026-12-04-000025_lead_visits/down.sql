DROP TABLE web_ad_conversions;
DROP TABLE lead_visits;
