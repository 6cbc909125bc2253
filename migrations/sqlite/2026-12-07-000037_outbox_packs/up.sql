-- The rollup outbox in packs (issue 25): each write leaves one row per site
-- holding all its events' rollup rows (`store::analytics::outbox_pack`),
-- where `web_outbox` took a row of 20 columns per event, each inserted, read
-- and deleted on its own. `row_count` is the rows inside, so a report actor
-- takes as many packs as its batch allows without reading their bodies.
-- `web_outbox` stays for the rows an older version left: the daemon moves
-- them into packs when it starts.
CREATE TABLE web_outbox_packs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    site_id TEXT NOT NULL,
    row_count BIGINT NOT NULL,
    body BLOB NOT NULL
);

-- A route regrouping in its first phase walks the outbox by id: its
-- position was a `web_outbox` id, meaningless among packs, so the phase
-- starts over (moving a row already moved leaves it as it is).
UPDATE web_regroup_jobs SET cursor = '' WHERE phase = 0;
