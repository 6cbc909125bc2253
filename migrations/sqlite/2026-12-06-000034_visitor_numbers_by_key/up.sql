-- A visitor's number is read and written only by its key (site, visitor),
-- and the row is the key and one integer, so on SQLite it is stored by the
-- key (WITHOUT ROWID): one B-tree instead of a rowid table beside the key's
-- index, which held every key a second time (issue 25, "less to write": 27
-- bytes per stored pageview in `loadgen events` before, each new visitor one
-- B-tree insert fewer). PostgreSQL keeps its table and primary key: its
-- tables are never stored by a key.
CREATE TABLE web_visitor_numbers_by_key (
    site_id TEXT NOT NULL,
    visitor_id TEXT NOT NULL,
    number BIGINT NOT NULL,
    PRIMARY KEY (site_id, visitor_id)
) WITHOUT ROWID;
INSERT INTO web_visitor_numbers_by_key (site_id, visitor_id, number)
SELECT site_id, visitor_id, number FROM web_visitor_numbers ORDER BY site_id, visitor_id;
DROP TABLE web_visitor_numbers;
ALTER TABLE web_visitor_numbers_by_key RENAME TO web_visitor_numbers;
