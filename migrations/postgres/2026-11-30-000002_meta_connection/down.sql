DROP TABLE site_pixels; DROP TABLE site_ad_accounts; DROP TABLE meta_listed_pixels; DROP TABLE meta_listed_accounts; DROP TABLE meta_connections;
