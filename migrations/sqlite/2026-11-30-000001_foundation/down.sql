DROP TABLE ad_labels; DROP TABLE lead_rollups; DROP TABLE pipeline_columns; DROP TABLE lead_events; DROP TABLE leads; DROP TABLE sites;
