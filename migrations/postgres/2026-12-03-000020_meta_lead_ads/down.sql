DROP TABLE meta_lead_receipts;
DROP TABLE meta_forms;
DROP TABLE meta_page_links;
DROP TABLE meta_pages;
