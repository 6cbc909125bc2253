//! Keys made once for the database, and keyset pages over `(time, id)`.

#[allow(unused_imports)]
use super::*;

/// A key made once for the database (`cursor`), then read.
pub fn key(conn: &mut AnyConnection, name: &str, fresh: [u8; 32]) -> QueryResult<Vec<u8>> {
    let mut q = RawQuery::new("INSERT INTO web_keys (name, secret) VALUES (?, ?) ON CONFLICT (name) DO NOTHING");
    q.text(name).bytes(fresh.to_vec());
    q.execute(conn)?;
    crate::row! {
        struct KeyRow in web_keys {
            secret: Vec<u8>,
        }
    }
    let mut q = RawQuery::new("SELECT secret FROM web_keys WHERE name = ?");
    q.text(name);
    Ok(q.load::<KeyRow>(conn)?.into_iter().next().map(|r| r.secret).unwrap_or_default())
}

/// One page of a keyset listing over `(time, id)`: the rows whose `scope`
/// column equals a value, with `time` in `[from, to]`, after a position (the
/// last row's keys), ascending or descending (the listings and the export).
pub(super) struct Keyset<'a> {
    pub(super) select: String,
    pub(super) scope: (&'a str, &'a str),
    pub(super) time: &'a str,
    pub(super) from: i64,
    pub(super) to: i64,
    pub(super) after: Option<(i64, String)>,
    pub(super) limit: usize,
    pub(super) desc: bool,
}

impl Keyset<'_> {
    pub(super) fn query(self, conn: &AnyConnection) -> RawQuery {
        let c = byte_order(conn);
        let (cmp, dir) = if self.desc { ("<", " DESC") } else { (">", "") };
        let (col, time) = (self.scope.0, self.time);
        let mut sql = format!("{} WHERE {col} = ? AND {time} >= ? AND {time} <= ?", self.select);
        if self.after.is_some() {
            sql.push_str(&format!(" AND ({time} {cmp} ? OR ({time} = ? AND id{c} {cmp} ?))"));
        }
        sql.push_str(&format!(" ORDER BY {time}{dir}, id{c}{dir} LIMIT ?"));
        let mut q = RawQuery::prepared(sql);
        q.text(self.scope.1).int(self.from).int(self.to);
        if let Some((t, id)) = self.after {
            q.int(t).int(t).text(id);
        }
        q.int(self.limit as i64);
        q
    }
}

/// Sessions of a site started in `[from, to]`, `startedAt` desc, id desc, after a position.
pub fn sessions_page(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    after: Option<(i64, String)>,
    limit: usize,
) -> QueryResult<Vec<SessionRow>> {
    let select = format!("SELECT {} FROM web_sessions", SessionRow::select_list());
    let page = Keyset { select, scope: ("site_id", site_id), time: "started_at", from, to, after, limit, desc: true };
    page.query(conn).load(conn)
}

/// A session's pageviews and custom events in `[from, to]`, `(occurredAt, id)` asc, after a position.
pub fn journey_page(
    conn: &mut AnyConnection,
    session_id: &str,
    from: i64,
    to: i64,
    after: Option<(i64, String)>,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let select = format!("SELECT {cols} FROM web_events", cols = EventRow::select_list());
    let page =
        Keyset { select, scope: ("session_id", session_id), time: "occurred_at", from, to, after, limit, desc: false };
    page.query(conn).load(conn)
}

/// The newest `limit` events of visitor ids on sites in `[from, to]`, newest first.
pub fn visitor_events(
    conn: &mut AnyConnection,
    site_ids: &[String],
    visitor_ids: &[String],
    from: i64,
    to: i64,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let c = byte_order(conn);
    let mut q = RawQuery::new(format!(
        "SELECT {cols} FROM web_events WHERE site_id IN {} AND visitor_id IN {} AND occurred_at >= ? \
         AND occurred_at <= ? ORDER BY occurred_at DESC, id{c} DESC LIMIT ?",
        placeholders(site_ids.len()),
        placeholders(visitor_ids.len()),
        cols = EventRow::select_list()
    ));
    q.texts(site_ids).texts(visitor_ids).int(from).int(to).int(limit as i64);
    q.load(conn)
}
