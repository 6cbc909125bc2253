//! Session and journey reads (ARPT-03 to ARPT-07), from the rows acceptance
//! wrote (so they see an accepted event at once): `listSessions`,
//! `sessionJourney` (both paginated, §5.1) and `visitorJourney`.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::pages::{self, Call, PaginationOpts};
use crate::service::analytics::reports::reads::summary;
use crate::service::analytics::reports::session_extras::Extras;
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::{self as store, EventRow, people};

pub const MAX_SESSIONS_PAGE: i64 = 100;
pub const MAX_JOURNEY_PAGE: i64 = 200;
pub const MAX_JOURNEY_EVENTS: i64 = 500;
const REPORT_MAX_DAYS: i64 = 366;

/// A journey row (§5.2 JourneyEvent): raw path, route, bounded properties.
pub fn journey_event(e: &EventRow) -> Value {
    let properties = e.properties.as_deref().and_then(|p| serde_json::from_str::<Value>(p).ok());
    json!({
        "eventId": e.id, "siteId": e.site_id, "sessionId": e.session_id, "type": e.kind,
        "name": e.name, "path": e.path, "route": e.route, "occurredAt": e.occurred_at,
        "engagedMs": e.engaged_ms, "properties": properties,
    })
}

/// A keyset position of `(time, id)` from a cursor.
fn time_and_id(position: pages::Position) -> Result<Option<(i64, String)>> {
    let Some(keys) = position else { return Ok(None) };
    match (keys.first().and_then(Value::as_i64), keys.get(1).and_then(Value::as_str)) {
        (Some(t), Some(id)) => Ok(Some((t, id.to_string()))),
        _ => Err(Error::invalid("the cursor is not one of this call's")),
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListSessionsArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    pub pagination_opts: PaginationOpts,
}

/// `listSessions`: sessions started in the range, `startedAt` desc, id desc (rule ARPT-04).
pub fn list_sessions(conn: &mut AnyConnection, key: &[u8], a: ListSessionsArgs) -> Result<Value> {
    validate::range(a.from, a.to, REPORT_MAX_DAYS)?;
    let size = a.pagination_opts.check(MAX_SESSIONS_PAGE)?;
    sites::require(conn, &a.site_id)?;
    let call = Call { function: "listSessions", scope: json!([a.site_id, a.from, a.to]) };
    let from = pages::decode(key, &call, a.pagination_opts.cursor.as_deref())?;
    let rows = store::sessions_page(conn, &a.site_id, a.from, a.to, time_and_id(from.clone())?, size + 1)?;
    let extras = Extras::load(conn, rows.iter().take(size))?;
    let render = |s: &store::SessionRow| summary(s, &extras);
    Ok(pages::answer(key, &call, from, rows, size, |s| vec![json!(s.started_at), json!(s.id)], render))
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JourneyArgs {
    pub site_id: String,
    pub session_id: String,
    pub from: i64,
    pub to: i64,
    pub pagination_opts: PaginationOpts,
}

/// `sessionJourney`: the session's pageviews and custom events in the range,
/// `(occurredAt, eventId)` asc (rule ARPT-05); another site's session has none.
pub fn session_journey(conn: &mut AnyConnection, key: &[u8], a: JourneyArgs) -> Result<Value> {
    validate::range(a.from, a.to, REPORT_MAX_DAYS)?;
    let size = a.pagination_opts.check(MAX_JOURNEY_PAGE)?;
    sites::require(conn, &a.site_id)?;
    let call = Call { function: "sessionJourney", scope: json!([a.site_id, a.session_id, a.from, a.to]) };
    let from = pages::decode(key, &call, a.pagination_opts.cursor.as_deref())?;
    let of_site = store::session(conn, &a.session_id)?.is_some_and(|s| s.site_id == a.site_id);
    let rows = if of_site {
        store::journey_page(conn, &a.session_id, a.from, a.to, time_and_id(from.clone())?, size + 1)?
    } else {
        Vec::new()
    };
    Ok(pages::answer(key, &call, from, rows, size, |e| vec![json!(e.occurred_at), json!(e.id)], journey_event))
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VisitorJourneyArgs {
    pub site_ids: Vec<String>,
    pub visitor_id: String,
    pub from: i64,
    pub to: i64,
    pub limit: Option<i64>,
}

/// `visitorJourney`: one pseudonymous visitor's newest `limit` events on the
/// named sites, oldest first; an identified person's with its aliases' (rule ARPT-07).
pub fn visitor_journey(conn: &mut AnyConnection, a: VisitorJourneyArgs) -> Result<Value> {
    validate::site_ids(&a.site_ids)?;
    validate::range(a.from, a.to, REPORT_MAX_DAYS)?;
    validate::text("visitorId", &a.visitor_id, 1, 64)?;
    let limit = a.limit.unwrap_or(100);
    if !(1..=MAX_JOURNEY_EVENTS).contains(&limit) {
        return Err(Error::invalid(format!("limit must be 1-{MAX_JOURNEY_EVENTS}")));
    }
    sites::require_many(conn, &a.site_ids)?;
    // An alias resolves to its identified id, whose aliases join in (rule ARPT-07).
    let mut visitor = a.visitor_id.clone();
    let mut ids = vec![a.visitor_id.clone()];
    for site in &a.site_ids {
        let Some(canonical) = people::canonical_of(conn, site, &a.visitor_id)? else { continue };
        if visitor == a.visitor_id {
            visitor = canonical.clone();
        }
        for id in people::ids_of_person(conn, site, &canonical)? {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    let mut rows = store::visitor_events(conn, &a.site_ids, &ids, a.from, a.to, limit as usize + 1)?;
    let truncated = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    rows.reverse();
    Ok(
        json!({"visitorId": visitor, "events": rows.iter().map(journey_event).collect::<Vec<_>>(), "truncated": truncated}),
    )
}
