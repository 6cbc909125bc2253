DROP TABLE web_outbox_packs;
