DROP TABLE web_whatsapp_refs;
