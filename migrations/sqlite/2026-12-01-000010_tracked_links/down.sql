DROP TABLE web_link_days;
DROP TABLE web_links;
