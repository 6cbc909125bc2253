//! Session and journey reads (ARPT-03 to ARPT-07), from the rows acceptance
//! wrote (so they see an accepted event at once): `getSession`,
//! `listSessions`, `sessionJourney` (both paginated, §5.1) and `visitorJourney`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::people::{ProfileRef, Profiled};
use crate::service::analytics::reports::filtered::{dims, kept};
use crate::service::analytics::reports::pages::{self, Call, Page, PaginationOpts};
use crate::service::analytics::reports::session_extras::{AffiliateRef, Extras};
use crate::service::reporting::filters::Filter;
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::{self as store, EventRow, SessionRow, people};
use crate::store::leads::sites::SiteRow;

pub const MAX_SESSIONS_PAGE: i64 = 100;
pub const MAX_JOURNEY_PAGE: i64 = 200;
pub const MAX_JOURNEY_EVENTS: i64 = 500;
const REPORT_MAX_DAYS: i64 = 366;

/// A journey row (§5.2 JourneyEvent): raw path, route, bounded properties.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JourneyEvent {
    pub event_id: String,
    pub site_id: String,
    pub session_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: Option<String>,
    pub path: String,
    pub route: String,
    pub occurred_at: i64,
    pub engaged_ms: Option<i64>,
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Map<String, Value>>,
}

pub fn journey_event(e: &EventRow) -> JourneyEvent {
    JourneyEvent {
        event_id: e.id.clone(),
        site_id: e.site_id.clone(),
        session_id: e.session_id.clone(),
        kind: e.kind.clone(),
        name: e.name.clone(),
        path: e.path.clone(),
        route: e.route.clone(),
        occurred_at: e.occurred_at,
        engaged_ms: e.engaged_ms,
        properties: e.properties.as_deref().and_then(|p| serde_json::from_str(p).ok()),
    }
}

/// A session as `getSession`, `listSessions` and the live rows describe it
/// (§5.2 SessionSummary).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub site_id: String,
    pub session_id: String,
    pub visitor_id: String,
    pub started_at: i64,
    pub last_event_at: i64,
    pub duration_ms: i64,
    pub pageviews: i64,
    pub events: i64,
    pub bounce: bool,
    pub entry_path: String,
    pub exit_path: String,
    pub referrer: Option<String>,
    pub source: String,
    pub medium: String,
    pub campaign: Option<String>,
    pub term: Option<String>,
    pub content: Option<String>,
    pub affiliate: Option<AffiliateRef>,
    pub country: Option<String>,
    pub region: Option<String>,
    pub device: Option<String>,
    pub browser: Option<String>,
    pub os: Option<String>,
    pub language: Option<String>,
    pub returning: bool,
    pub conversions: i64,
    pub revenue_cents: i64,
    pub goals: Vec<String>,
    /// Present only while `visitorProfiles` is on (rule OVR-14).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<ProfileRef>)]
    pub profile: Option<Option<ProfileRef>>,
}

impl Profiled for SessionSummary {
    fn person(&self) -> (String, String) {
        (self.site_id.clone(), self.visitor_id.clone())
    }

    fn set_profile(&mut self, profile: Option<ProfileRef>) {
        self.profile = Some(profile);
    }
}

/// A session row as its summary.
pub fn summary(s: &SessionRow, extras: &Extras) -> SessionSummary {
    SessionSummary {
        site_id: s.site_id.clone(),
        session_id: s.id.clone(),
        visitor_id: s.visitor_id.clone(),
        started_at: s.started_at,
        last_event_at: s.last_at,
        duration_ms: crate::service::analytics::ingest::session_figures::duration(s),
        pageviews: s.pageviews,
        events: s.events,
        bounce: s.pageviews == 1 && s.events == 0,
        entry_path: s.entry_path.clone(),
        exit_path: s.exit_path.clone(),
        referrer: s.referrer.clone(),
        source: s.source.clone(),
        medium: s.medium.clone(),
        campaign: s.campaign.clone(),
        term: s.term.clone(),
        content: s.content.clone(),
        affiliate: extras.affiliate(s),
        country: s.country.clone(),
        region: s.region.clone(),
        device: s.device.clone(),
        browser: s.browser.clone(),
        os: s.os.clone(),
        language: s.language.clone(),
        returning: s.is_returning,
        conversions: s.conversions,
        revenue_cents: s.revenue_cents,
        goals: extras.goals(s),
        profile: None,
    }
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionArgs {
    pub site_id: String,
    pub session_id: String,
}

/// `getSession`: the summary, or null when unknown or of another site (rule ARPT-03).
pub fn get_session(conn: &mut AnyConnection, a: SessionArgs) -> Result<Option<SessionSummary>> {
    sites::require(conn, &a.site_id)?;
    Ok(match store::session(conn, &a.session_id)? {
        Some(s) if s.site_id == a.site_id => Some(summary(&s, &Extras::load(conn, [&s])?)),
        _ => None,
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

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListSessionsArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    pub pagination_opts: PaginationOpts,
    /// Only the sessions that pass these (REPORTING §3): a session
    /// dimension's value, or one of the session's events for an event dimension.
    #[serde(default)]
    pub filters: Vec<Filter>,
}

/// Sessions read per statement while a filtered page fills.
const FILTERED_BATCH: usize = 500;

/// `listSessions`: sessions started in the range, `startedAt` desc, id desc
/// (rule ARPT-04); with `filters`, only those that pass them (REP-06, REP-07).
pub fn list_sessions(conn: &mut AnyConnection, key: &[u8], a: ListSessionsArgs) -> Result<Page<SessionSummary>> {
    validate::range(a.from, a.to, REPORT_MAX_DAYS)?;
    let size = a.pagination_opts.check(MAX_SESSIONS_PAGE)?;
    let rules = dims::rules(&a.filters)?;
    let site = sites::require(conn, &a.site_id)?;
    // A cursor belongs to its filters; without them the scope is the seed's.
    let scope = match a.filters.is_empty() {
        true => json!([a.site_id, a.from, a.to]),
        false => json!([a.site_id, a.from, a.to, a.filters]),
    };
    let call = Call { function: "listSessions", scope };
    let from = pages::decode(key, &call, a.pagination_opts.cursor.as_deref())?;
    let after = time_and_id(from.clone())?;
    let rows = if rules.is_empty() {
        store::sessions_page(conn, &a.site_id, a.from, a.to, after, size + 1)?
    } else {
        filtered_page(conn, &site, &a, &rules, after, size + 1)?
    };
    let extras = Extras::load(conn, rows.iter().take(size))?;
    let render = |s: &store::SessionRow| summary(s, &extras);
    Ok(pages::answer(key, &call, from, rows, size, |s| vec![json!(s.started_at), json!(s.id)], render))
}

/// Up to `want` sessions of the range after `after` that pass `rules`, read
/// in batches along the same keyset order until enough pass or none are left.
fn filtered_page(
    conn: &mut AnyConnection,
    site: &SiteRow,
    a: &ListSessionsArgs,
    rules: &[dims::Rule],
    mut after: Option<(i64, String)>,
    want: usize,
) -> Result<Vec<SessionRow>> {
    let mut out = Vec::new();
    loop {
        let batch = store::sessions_page(conn, &a.site_id, a.from, a.to, after.clone(), FILTERED_BATCH)?;
        let done = batch.len() < FILTERED_BATCH;
        after = batch.last().map(|s| (s.started_at, s.id.clone()));
        out.extend(kept::passing(conn, std::slice::from_ref(site), batch, rules)?);
        if done || out.len() >= want {
            out.truncate(want);
            return Ok(out);
        }
    }
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
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
pub fn session_journey(conn: &mut AnyConnection, key: &[u8], a: JourneyArgs) -> Result<Page<JourneyEvent>> {
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

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VisitorJourneyArgs {
    pub site_ids: Vec<String>,
    pub visitor_id: String,
    pub from: i64,
    pub to: i64,
    pub limit: Option<i64>,
}

/// The `visitorJourney` answer: the events oldest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VisitorJourney {
    pub visitor_id: String,
    pub events: Vec<JourneyEvent>,
    /// More events than `limit` fell in the range.
    pub truncated: bool,
    /// The leads the visitor became in the range by tapping a site's
    /// WhatsApp link, oldest first (rule WA-14); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub leads: Vec<JourneyLead>,
}

/// A lead in a visitor's journey.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JourneyLead {
    pub site_id: String,
    pub lead_id: String,
    pub session_id: String,
    pub at: i64,
}

/// `visitorJourney`: one pseudonymous visitor's newest `limit` events on the
/// named sites, oldest first; an identified person's with its aliases' (rule ARPT-07).
pub fn visitor_journey(conn: &mut AnyConnection, a: VisitorJourneyArgs) -> Result<VisitorJourney> {
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
    let mut leads = Vec::new();
    for v in crate::store::leads::visits::of_visitors(conn, &a.site_ids, &ids)? {
        if (a.from..a.to).contains(&v.lead_at) {
            leads.push(JourneyLead { site_id: v.site_id, lead_id: v.lead_id, session_id: v.session_id, at: v.lead_at });
        }
    }
    leads.sort_by_key(|l| l.at);
    Ok(VisitorJourney { visitor_id: visitor, events: rows.iter().map(journey_event).collect(), truncated, leads })
}
