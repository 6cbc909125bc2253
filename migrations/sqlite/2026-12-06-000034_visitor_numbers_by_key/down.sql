CREATE TABLE web_visitor_numbers_with_rowid (
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    number BIGINT NOT NULL,
    PRIMARY KEY (site_id, visitor_id)
);
INSERT INTO web_visitor_numbers_with_rowid (site_id, visitor_id, number)
SELECT site_id, visitor_id, number FROM web_visitor_numbers;
DROP TABLE web_visitor_numbers;
ALTER TABLE web_visitor_numbers_with_rowid RENAME TO web_visitor_numbers;
