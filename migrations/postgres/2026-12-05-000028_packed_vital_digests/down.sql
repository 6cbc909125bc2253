-- One row per value again: each 8-byte pair of `pairs` read back.
CREATE TABLE web_vital_digests_by_value (
    site_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    metric TEXT NOT NULL,
    route TEXT NOT NULL,
    device TEXT NOT NULL,
    value BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (site_id, day, metric, route, device, value)
);
INSERT INTO web_vital_digests_by_value (site_id, day, metric, route, device, value, count)
SELECT site_id, day, metric, route, device,
    (get_byte(pairs, i)::bigint << 24) | (get_byte(pairs, i + 1) << 16) | (get_byte(pairs, i + 2) << 8)
        | get_byte(pairs, i + 3),
    (get_byte(pairs, i + 4)::bigint << 24) | (get_byte(pairs, i + 5) << 16) | (get_byte(pairs, i + 6) << 8)
        | get_byte(pairs, i + 7)
FROM web_vital_digests, generate_series(0, length(pairs) - 8, 8) AS i;
DROP TABLE web_vital_digests;
ALTER TABLE web_vital_digests_by_value RENAME TO web_vital_digests;
ALTER INDEX web_vital_digests_by_value_pkey RENAME TO web_vital_digests_pkey;
