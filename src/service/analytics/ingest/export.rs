//! The export (IMP-08, IMP-09): a site's retained pageviews and custom
//! events of a range as NDJSON in the import's format plus `eventId` and
//! `sessionId`, by `(occurredAt, eventId)`; each pageview's engagement and
//! vitals follow it; a session's first line carries its attribution and
//! `path`. Read in pages, so a long range streams.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::vocabulary::LineType;
use crate::store::analytics::{self as store, EventRow, SessionRow};

pub const PAGE: usize = 2_000;

/// Where an export is: the last event written, and the sessions already introduced.
#[derive(Default)]
pub struct Cursor {
    pub after: Option<(i64, String)>,
    pub introduced: HashSet<String>,
}

fn put(o: &mut Map<String, Value>, k: &str, v: Option<&String>) {
    if let Some(v) = v {
        o.insert(k.into(), json!(v));
    }
}

fn line(e: &EventRow, session: Option<&SessionRow>) -> Value {
    let mut o = Map::new();
    // A stored kind is spelled as its line type (`EventKind::line_type`).
    o.insert("type".into(), json!(e.kind));
    o.insert("occurredAt".into(), json!(e.occurred_at));
    o.insert("visitorId".into(), json!(e.visitor_id));
    o.insert("eventId".into(), json!(e.id));
    o.insert("sessionId".into(), json!(e.session_id));
    o.insert("path".into(), json!(e.path));
    put(&mut o, "pageviewId", e.pageview_id.as_ref());
    put(&mut o, "name", e.name.as_ref());
    if let Some(p) = e.properties.as_deref().and_then(|p| serde_json::from_str::<Value>(p).ok()) {
        o.insert("properties".into(), p);
    }
    if let Some(s) = session {
        o.insert("source".into(), json!(s.source));
        o.insert("medium".into(), json!(s.medium));
        put(&mut o, "campaign", s.campaign.as_ref());
        put(&mut o, "term", s.term.as_ref());
        put(&mut o, "content", s.content.as_ref());
        put(&mut o, "referrer", s.referrer.as_ref());
        put(&mut o, "device", s.device.as_ref());
        put(&mut o, "browser", s.browser.as_ref());
        put(&mut o, "os", s.os.as_ref());
        put(&mut o, "country", s.country.as_ref());
        put(&mut o, "region", s.region.as_ref());
        put(&mut o, "language", s.language.as_ref());
    }
    Value::Object(o)
}

/// The next page of lines (NDJSON text), or None at the end.
pub fn next_page(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    cur: &mut Cursor,
) -> Result<Option<String>> {
    let rows = store::events_page(conn, site_id, from, to, cur.after.clone(), PAGE)?;
    let Some(last) = rows.last() else { return Ok(None) };
    cur.after = Some((last.occurred_at, last.id.clone()));
    let new: Vec<String> = {
        let mut ids: Vec<String> =
            rows.iter().map(|e| e.session_id.clone()).filter(|s| !cur.introduced.contains(s)).collect();
        ids.sort();
        ids.dedup();
        ids
    };
    let sessions: HashMap<String, SessionRow> =
        store::sessions(conn, &new)?.into_iter().map(|s| (s.id.clone(), s)).collect();
    let mut out = String::new();
    for e in &rows {
        let first = cur.introduced.insert(e.session_id.clone());
        out.push_str(&line(e, if first { sessions.get(&e.session_id) } else { None }).to_string());
        out.push('\n');
        let Some(pv) = &e.pageview_id else { continue };
        let base = || json!({"occurredAt": e.occurred_at, "visitorId": e.visitor_id, "pageviewId": pv});
        if let Some(ms) = e.engaged_ms {
            let mut l = base();
            l["type"] = json!(LineType::Engagement);
            l["engagedMs"] = json!(ms);
            out.push_str(&l.to_string());
            out.push('\n');
        }
        if [e.lcp, e.inp, e.cls, e.fcp, e.ttfb].iter().any(Option::is_some) {
            let mut l = base();
            l["type"] = json!(LineType::Vitals);
            for (k, v) in [("lcp", e.lcp), ("inp", e.inp), ("fcp", e.fcp), ("ttfb", e.ttfb)] {
                if let Some(v) = v {
                    l[k] = json!(v);
                }
            }
            if let Some(cls) = e.cls {
                l["cls"] = json!(cls as f64 / 10_000.0);
            }
            out.push_str(&l.to_string());
            out.push('\n');
        }
    }
    Ok(Some(out))
}
