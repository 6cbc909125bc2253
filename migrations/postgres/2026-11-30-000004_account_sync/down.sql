DROP TABLE ad_catalog; DROP TABLE ad_spend; DROP TABLE account_syncs;
