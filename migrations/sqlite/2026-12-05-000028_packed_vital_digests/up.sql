-- Vitals digests packed (issue 25, item 4): one row per (site, day, metric,
-- route, device) holding its value -> count pairs, instead of one row per
-- value, so vitalsReport reads a row per cell (about a tenth of the rows)
-- and decodes no text per value. `pairs` is 8 bytes a pair, ascending by
-- value: the value then the count, each an unsigned 32-bit big-endian
-- integer (values are at most 600,000 ms, CLS x 10^4 at most 1,000,000).
CREATE TABLE web_vital_digests_packed (
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    metric TEXT NOT NULL,
    route TEXT NOT NULL,
    device TEXT NOT NULL,
    pairs BLOB NOT NULL,
    PRIMARY KEY (site_id, day, metric, route, device)
) WITHOUT ROWID;
INSERT INTO web_vital_digests_packed (site_id, day, metric, route, device, pairs)
SELECT site_id, day, metric, route, device, unhex(group_concat(printf('%08X%08X', value, count), '' ORDER BY value))
FROM web_vital_digests
WHERE count > 0
GROUP BY site_id, day, metric, route, device;
DROP TABLE web_vital_digests;
ALTER TABLE web_vital_digests_packed RENAME TO web_vital_digests;
