-- One row per value again: each 8-byte pair of `pairs` read back from its
-- hex digits.
CREATE TABLE web_vital_digests_by_value (
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    metric TEXT NOT NULL,
    route TEXT NOT NULL,
    device TEXT NOT NULL,
    value BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (site_id, day, metric, route, device, value)
) WITHOUT ROWID;
WITH RECURSIVE
    at (site_id, day, metric, route, device, pairs, i) AS (
        SELECT site_id, day, metric, route, device, pairs, 0 FROM web_vital_digests WHERE length(pairs) >= 8
        UNION ALL
        SELECT site_id, day, metric, route, device, pairs, i + 8 FROM at WHERE i + 16 <= length(pairs)
    ),
    hexed (site_id, day, metric, route, device, h) AS (
        SELECT site_id, day, metric, route, device, hex(substr(pairs, i + 1, 8)) FROM at
    ),
    digit (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM digit WHERE n < 16)
INSERT INTO web_vital_digests_by_value (site_id, day, metric, route, device, value, count)
SELECT site_id, day, metric, route, device,
    (SELECT SUM((instr('0123456789ABCDEF', substr(h, n, 1)) - 1) << (4 * (8 - n))) FROM digit WHERE n <= 8),
    (SELECT SUM((instr('0123456789ABCDEF', substr(h, n, 1)) - 1) << (4 * (16 - n))) FROM digit WHERE n > 8)
FROM hexed;
DROP TABLE web_vital_digests;
ALTER TABLE web_vital_digests_by_value RENAME TO web_vital_digests;
