//! The decision of an acceptance, with no database: from what [`super::load`]
//! read and the batch's checked events, the rows to write. Every rule of a
//! batch lives here (sessions opened or joined, times, the goals completed,
//! the outbox rows the rollups apply), so each can be tested on plain values.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::plan::{GoalHit, LandingClickId, Loaded, Outcome, Plan, SessionWrite, Visit, VisitorState, VisitorWrite};
use super::whatsapp::{self, WHATSAPP_CLICK};
use crate::error::{Error, Result};
use crate::secret::Secret;
use crate::service::analytics::definitions::Matcher;
use crate::service::analytics::ingest::batch::{Incoming, LineOrigin, Vitals};
use crate::service::analytics::ingest::session_figures::{bounce, duration};
use crate::service::analytics::ingest::urls;
use crate::service::analytics::reports::funnels;
use crate::service::analytics::rollup::site_map;
use crate::service::analytics::rollup::vitals as vitals_rollup;
use crate::service::analytics::vocabulary::{Change, EventKind};
use crate::service::sites::routes;
use crate::store::analytics::whatsapp_refs::NewRef;
use crate::store::analytics::{EventRow, OutboxRow, SessionRow};

/// Makes a time-ordered id with a prefix (`ids::time_ordered` in production).
pub type Ids<'a> = dyn FnMut(&str, i64) -> Result<String> + 'a;

/// A pageview's or custom event's time (rule TRK-26): skew-corrected when the
/// client's clock says how old the event is, clamped to the visitor's order.
pub fn event_time(received_at: i64, sent_at: Option<i64>, ts: Option<i64>, previous: i64) -> i64 {
    let t = match (sent_at, ts) {
        (Some(sent), Some(ts)) if (0..=86_400_000).contains(&(sent - ts)) => received_at - (sent - ts),
        _ => received_at,
    };
    t.clamp(previous.min(received_at), received_at)
}

/// The affiliate slug a landing names: an imported line's `affiliate`, else
/// the URL's `ref`, lowercased (rule SES-15).
pub(super) fn affiliate_slug(url: &url::Url, origin: Option<&LineOrigin>) -> Option<String> {
    let named = origin.and_then(|o| o.affiliate.clone()).or_else(|| urls::params(url).referral);
    named.map(|slug| slug.to_lowercase())
}

/// The session a visitor is in, as this batch leaves it.
struct Touched {
    row: SessionRow,
    is_new: bool,
    dirty: bool,
}

/// The event that may open a session: its time, URL, referrer, path and
/// route, and what an imported line says of its session.
struct Landing<'a> {
    t: i64,
    url: &'a url::Url,
    referrer: Option<&'a str>,
    path: &'a str,
    route: &'a str,
    origin: Option<&'a LineOrigin>,
}

/// Where a new session came from (rules SES-10 to SES-14).
fn open_session(v: &Visit, id: String, at: &Landing<'_>, returning: bool) -> SessionRow {
    let (t, path, route) = (at.t, at.path, at.route);
    let o = at.origin.cloned().unwrap_or_default();
    let p = urls::params(at.url);
    let referrer = at.referrer.and_then(urls::referrer_host).filter(|h| !urls::is_internal(h, &v.domains));
    let source = o
        .source
        .clone()
        .or_else(|| p.utm_source.clone())
        .or_else(|| p.source.clone())
        .or_else(|| p.referral.clone())
        .or_else(|| referrer.as_deref().map(urls::source_of))
        .unwrap_or_else(|| "(direct)".into());
    let medium = o
        .medium
        .clone()
        .or_else(|| p.utm_medium.clone())
        .or_else(|| p.gclid.then(|| "cpc".to_string()))
        .or_else(|| p.fbclid.then(|| "social".to_string()))
        .or_else(|| referrer.as_ref().map(|_| "referral".to_string()))
        .unwrap_or_else(|| "(none)".into());
    SessionRow {
        id,
        site_id: v.site_id.clone(),
        visitor_id: v.visitor_id.clone(),
        started_at: t,
        last_at: t,
        end_at: t,
        entry_path: path.to_string(),
        entry_route: route.to_string(),
        exit_path: path.to_string(),
        referrer,
        source,
        medium,
        campaign: o.campaign.or(p.utm_campaign),
        term: o.term.or(p.utm_term),
        content: o.content.or(p.utm_content),
        affiliate_id: None,
        country: o.country.or_else(|| v.country.clone()),
        region: o.region.or_else(|| v.region.clone()),
        device: o.device.or_else(|| v.agent.device.map(|d| d.as_str().to_string())),
        browser: o.browser.or_else(|| v.agent.browser.map(str::to_string)),
        os: o.os.or_else(|| v.agent.os.map(str::to_string)),
        language: o.language.or_else(|| v.language.clone()),
        pageviews: 0,
        events: 0,
        is_returning: returning,
        conversions: 0,
        revenue_cents: 0,
    }
}

fn merge_vitals(e: &mut EventRow, v: &Vitals) {
    // Per metric, the last value received wins (rule TRK-31).
    e.lcp = v.lcp.or(e.lcp);
    e.inp = v.inp.or(e.inp);
    e.cls = v.cls.or(e.cls);
    e.fcp = v.fcp.or(e.fcp);
    e.ttfb = v.ttfb.or(e.ttfb);
}

fn outbox(row: &SessionRow, kind: Change, at: i64, route: &str, name: Option<String>) -> OutboxRow {
    OutboxRow {
        id: 0,
        site_id: row.site_id.clone(),
        visitor_id: row.visitor_id.clone(),
        session_id: row.id.clone(),
        kind: kind.to_string(),
        at,
        session_start: row.started_at,
        route: route.to_string(),
        name,
        // No delta yet: the decision fills in what this event moves.
        ..Default::default()
    }
}

/// A new pageview's or custom event's row.
fn event_row(v: &Visit, session_id: &str, event_id: String, kind: EventKind, at: &Landing<'_>) -> EventRow {
    EventRow {
        id: event_id,
        site_id: v.site_id.clone(),
        session_id: session_id.to_string(),
        visitor_id: v.visitor_id.clone(),
        kind: kind.to_string(),
        name: None,
        path: at.path.to_string(),
        route: at.route.to_string(),
        occurred_at: at.t,
        pageview_id: None,
        properties: None,
        engaged_ms: None,
        lcp: None,
        inp: None,
        cls: None,
        fcp: None,
        ttfb: None,
    }
}

/// The active goals an accepted pageview or custom event completes.
fn completed<'a>(goals: &'a [(String, Matcher)], kind: EventKind, path: &str, name: Option<&str>) -> Vec<&'a str> {
    goals.iter().filter(|(_, m)| m.matches(kind, path, name)).map(|(id, _)| id.as_str()).collect()
}

/// A goal completion decided at acceptance (rule ARPT-10), before it is
/// known whether it is its session's first: the outbox row it notes.
struct Hit {
    outbox: usize,
    goal_id: String,
    session_id: String,
    session_start: i64,
    at: i64,
    event_id: String,
}

/// Notes `goal_ids` on the latest outbox row and queues their completions.
fn note_hits(
    goal_ids: Vec<&str>,
    s: &SessionRow,
    at: i64,
    event_id: &str,
    outbox_rows: &mut [OutboxRow],
    hits: &mut Vec<Hit>,
) {
    if goal_ids.is_empty() {
        return;
    }
    let index = outbox_rows.len() - 1;
    outbox_rows[index].goals = Some(goal_ids.join(" "));
    hits.extend(goal_ids.into_iter().map(|g| Hit {
        outbox: index,
        goal_id: g.to_string(),
        session_id: s.id.clone(),
        session_start: s.started_at,
        at,
        event_id: event_id.to_string(),
    }));
}

/// The batch's completions: each a row, and the first time a session
/// completes a goal (not stored, not earlier in the batch) its outbox row
/// says so, for the goal's session count.
fn first_hits(hits: Vec<Hit>, stored: &HashSet<(String, String)>, outbox_rows: &mut [OutboxRow]) -> Vec<GoalHit> {
    let mut seen: HashSet<(String, String)> = HashSet::new();
    hits.into_iter()
        .map(|h| {
            let pair = (h.session_id.clone(), h.goal_id.clone());
            let first = !stored.contains(&pair) && seen.insert(pair);
            if first {
                let o = &mut outbox_rows[h.outbox];
                o.new_goals = Some(match o.new_goals.take() {
                    Some(g) => format!("{g} {}", h.goal_id),
                    None => h.goal_id.clone(),
                });
            }
            GoalHit {
                goal_id: h.goal_id,
                session_id: h.session_id,
                session_start: h.session_start,
                at: h.at,
                event_id: h.event_id,
                first_in_session: first,
            }
        })
        .collect()
}

/// A pageview's or custom event's time: skew-corrected from the tracker;
/// exact from the import, where an event older than the visitor's latest
/// makes its line invalid (rule IMP-06).
fn time_of(v: &Visit, ts: Option<i64>, last_at: i64, origin: Option<&LineOrigin>) -> Result<i64> {
    if !v.trusted {
        return Ok(event_time(v.received_at, v.sent_at, ts, last_at));
    }
    let t = ts.unwrap_or(v.received_at);
    if t < last_at {
        let line = origin.map_or(0, |o| o.line);
        return Err(Error::invalid(format!("line {line}: older than the visitor's latest stored pageview or event")));
    }
    Ok(t)
}

/// The stored path: from the URL, or an imported line's `path` (redacted alike).
fn path_of(v: &Visit, url: &url::Url, origin: Option<&LineOrigin>) -> String {
    match origin.and_then(|o| o.path.as_deref()) {
        Some(p) => {
            let p = if v.redact { urls::redact_path(p) } else { p.to_string() };
            p.chars().take(1024).collect()
        }
        None => urls::stored_path(url, v.hash, v.redact),
    }
}

/// Where a pageview named by a later event lives: among this batch's new
/// rows, or stored.
#[derive(Clone, Copy)]
enum Target {
    New(usize),
    Stored(usize),
}

/// The sessions a batch touches, and the visitor's current one.
struct Sessions {
    touched: HashMap<String, Touched>,
    current: Option<String>,
    /// Sessions the visitor had on the site (`returning`).
    seen: i64,
    /// Sessions this batch opened.
    opened: usize,
    /// The `fbclid` of each opened session's landing, when it had one (WA-33).
    click_ids: Vec<LandingClickId>,
}

impl Sessions {
    /// The session a pageview or custom event belongs to (rule SES-07): the
    /// current one while it is less than the idle time since its last pageview
    /// or custom event and less than the cap since its start, else a new one.
    fn join_or_open(&mut self, v: &Visit, last_at: i64, at: &Landing<'_>, ids: &mut Ids<'_>) -> Result<String> {
        if let Some(id) = self.current.as_ref()
            && let Some(s) = self.touched.get_mut(id)
            && at.t - last_at.max(s.row.last_at) < v.idle_ms
            && at.t - s.row.started_at < v.max_ms
        {
            s.dirty = true;
            return Ok(id.clone());
        }
        let id = ids("s_", at.t)?;
        let row = open_session(v, id.clone(), at, self.seen > 0);
        self.seen += 1;
        self.opened += 1;
        self.touched.insert(id.clone(), Touched { row, is_new: true, dirty: true });
        self.current = Some(id.clone());
        // Only when it can be sealed, and only a landing that carries one (WA-33).
        if v.click_key.is_some()
            && let Some(fbclid) = urls::fbclid(at.url)
        {
            self.click_ids.push(LandingClickId {
                session_id: id.clone(),
                fbclid: Secret::new(fbclid),
                landed_at: at.t,
                user_agent: v.user_agent.clone(),
            });
        }
        Ok(id)
    }
}

/// What a batch's events make of what was loaded (the rules of STORE-01 and
/// STORE-07): every row to write, in [`Plan`].
pub fn decide(v: &Visit, loaded: Loaded, events: Vec<Option<Incoming>>, ids: &mut Ids<'_>) -> Result<Plan> {
    let Loaded {
        visitor: state,
        current,
        goals,
        mut stored,
        sessions: stored_sessions,
        affiliates,
        session_goals,
        funnels: funnel_defs,
        ..
    } = loaded;
    let mut out = Outcome::default();
    let mut hits: Vec<Hit> = Vec::new();
    let mut last_at = state.last_at;
    let mut sessions =
        Sessions { touched: HashMap::new(), current: None, seen: state.sessions, opened: 0, click_ids: Vec::new() };
    if let Some(row) = current {
        sessions.current = Some(row.id.clone());
        sessions.touched.insert(row.id.clone(), Touched { row, is_new: false, dirty: false });
    }
    let affiliate_of = |url: &url::Url, origin: Option<&LineOrigin>| {
        affiliate_slug(url, origin).and_then(|slug| affiliates.get(&slug).cloned())
    };
    let mut stored_changed = vec![false; stored.len()];
    let mut by_pageview: HashMap<String, Target> =
        stored.iter().enumerate().filter_map(|(i, e)| e.pageview_id.clone().map(|p| (p, Target::Stored(i)))).collect();

    let mut new_rows: Vec<EventRow> = Vec::new();
    let mut outbox_rows: Vec<OutboxRow> = Vec::new();
    let mut whatsapp_refs: Vec<NewRef> = Vec::new();
    let mut current_path = String::new();
    let mut current_route = String::new();
    let mut moved = false;

    for event in events {
        let Some(event) = event else {
            out.rejected += 1;
            continue;
        };
        match event {
            Incoming::Pageview { ts, pageview_id, url, referrer, properties, origin } => {
                let (host, port) = urls::host_of(&url);
                // A resent pageview changes nothing (rule TRK-29).
                if (!v.trusted && !urls::on_domains(&host, port, &v.domains)) || by_pageview.contains_key(&pageview_id)
                {
                    out.rejected += 1;
                    continue;
                }
                let t = time_of(v, ts, last_at, origin.as_deref())?;
                let path = path_of(v, &url, origin.as_deref());
                let route = routes::route_of(&path, &v.route_patterns);
                let at = Landing {
                    t,
                    url: &url,
                    referrer: referrer.as_deref(),
                    path: &path,
                    route: &route,
                    origin: origin.as_deref(),
                };
                let session = sessions.join_or_open(v, last_at, &at, ids)?;
                let s = sessions.touched.get_mut(&session).map(|x| &mut x.row);
                let Some(s) = s else { continue };
                let (b0, d0, fresh) = (bounce(s), duration(s), s.pageviews + s.events == 0);
                if fresh {
                    s.affiliate_id = affiliate_of(&url, origin.as_deref());
                }
                let prev_route = site_map::previous_route(s, &v.route_patterns);
                s.pageviews += 1;
                s.last_at = t;
                s.end_at = s.end_at.max(t);
                s.exit_path = path.clone();
                let mut o = outbox(s, Change::Pageview, t, &route, None);
                o.new_session = i64::from(fresh);
                o.d_bounces = bounce(s) - b0;
                o.d_duration = duration(s) - d0;
                site_map::mark(&mut o, prev_route, s.pageviews);
                outbox_rows.push(o);
                let event_id = ids("e_", t)?;
                let goal_ids = completed(&goals, EventKind::Pageview, &path, None);
                note_hits(goal_ids, s, t, &event_id, &mut outbox_rows, &mut hits);
                by_pageview.insert(pageview_id.clone(), Target::New(new_rows.len()));
                let mut row = event_row(v, &session, event_id, EventKind::Pageview, &at);
                row.pageview_id = Some(pageview_id);
                row.properties = properties.map(|p| Value::Object(p).to_string());
                new_rows.push(row);
                last_at = t;
                current_path = path;
                current_route = route;
                moved = true;
                out.accepted += 1;
                out.session_id = Some(session);
            }
            Incoming::Custom { ts, url, name, mut properties, origin } => {
                let (host, port) = urls::host_of(&url);
                if !v.trusted && !urls::on_domains(&host, port, &v.domains) {
                    out.rejected += 1;
                    continue;
                }
                let t = time_of(v, ts, last_at, origin.as_deref())?;
                let path = path_of(v, &url, origin.as_deref());
                let route = routes::route_of(&path, &v.route_patterns);
                let at =
                    Landing { t, url: &url, referrer: None, path: &path, route: &route, origin: origin.as_deref() };
                let session = sessions.join_or_open(v, last_at, &at, ids)?;
                let Some(s) = sessions.touched.get_mut(&session).map(|x| &mut x.row) else { continue };
                let (b0, d0, fresh) = (bounce(s), duration(s), s.pageviews + s.events == 0);
                if fresh {
                    s.affiliate_id = affiliate_of(&url, origin.as_deref());
                }
                s.events += 1;
                s.last_at = t;
                s.end_at = s.end_at.max(t);
                let mut o = outbox(s, Change::Event, t, &route, Some(name.clone()));
                o.new_session = i64::from(fresh);
                o.d_bounces = bounce(s) - b0;
                o.d_duration = duration(s) - d0;
                outbox_rows.push(o);
                let event_id = ids("e_", t)?;
                let goal_ids = completed(&goals, EventKind::Event, &path, Some(&name));
                note_hits(goal_ids, s, t, &event_id, &mut outbox_rows, &mut hits);
                // A WhatsApp tap binds its reference to this click (rule WA-02).
                if name == WHATSAPP_CLICK
                    && let Some(tap) = whatsapp::tap(&mut properties)
                {
                    whatsapp_refs.push(NewRef {
                        site_id: v.site_id.clone(),
                        reference: tap.reference,
                        visitor_id: v.visitor_id.clone(),
                        session_id: session.clone(),
                        number: tap.number,
                        path: path.clone(),
                        clicked_at: t,
                    });
                }
                let mut row = event_row(v, &session, event_id, EventKind::Event, &at);
                row.name = Some(name);
                row.properties = properties.map(|p| Value::Object(p).to_string());
                new_rows.push(row);
                if current_path.is_empty() {
                    current_path = path;
                }
                last_at = t;
                moved = true;
                out.accepted += 1;
                out.session_id = Some(session);
            }
            Incoming::Vitals { pageview_id, vitals } => {
                // The pageview must be stored or earlier in this batch (rule TRK-30).
                let Some(target) = by_pageview.get(&pageview_id).copied() else {
                    out.rejected += 1;
                    continue;
                };
                let row = match target {
                    Target::New(i) => &mut new_rows[i],
                    Target::Stored(i) => {
                        stored_changed[i] = true;
                        &mut stored[i]
                    }
                };
                let before = row.clone();
                merge_vitals(row, &vitals);
                outbox_rows.extend(vitals_rollup::changes(&before, row));
                out.accepted += 1;
                out.session_id = Some(row.session_id.clone());
            }
            Incoming::Engagement { pageview_id, engaged_ms } => {
                let Some(target) = by_pageview.get(&pageview_id).copied() else {
                    out.rejected += 1;
                    continue;
                };
                let row = match target {
                    Target::New(i) => &mut new_rows[i],
                    Target::Stored(i) => &mut stored[i],
                };
                out.accepted += 1;
                out.session_id = Some(row.session_id.clone());
                let old = row.engaged_ms;
                // The largest engagement received wins (rule TRK-31).
                if old.is_some_and(|o| o >= engaged_ms) {
                    continue;
                }
                row.engaged_ms = Some(engaged_ms);
                let (pv_at, route, session_id) = (row.occurred_at, row.route.clone(), row.session_id.clone());
                if let Target::Stored(i) = target {
                    stored_changed[i] = true;
                }
                if !sessions.touched.contains_key(&session_id)
                    && let Some(row) = stored_sessions.get(&session_id)
                {
                    let row = row.clone();
                    sessions.touched.insert(session_id.clone(), Touched { row, is_new: false, dirty: false });
                }
                let Some(t) = sessions.touched.get_mut(&session_id) else { continue };
                let d0 = duration(&t.row);
                t.row.end_at = t.row.end_at.max(pv_at + engaged_ms);
                t.dirty = true;
                let mut o = outbox(&t.row, Change::Engagement, pv_at, &route, None);
                o.d_duration = duration(&t.row) - d0;
                o.d_engaged_sum = engaged_ms - old.unwrap_or(0);
                o.d_engaged_count = i64::from(old.is_none());
                outbox_rows.push(o);
            }
        }
    }

    let funnel_steps = new_rows.iter().flat_map(|e| funnels::rows_for(&funnel_defs, e)).collect();
    let measured = stored.into_iter().zip(stored_changed).filter_map(|(row, changed)| changed.then_some(row)).collect();
    let visitor = match (&sessions.current, moved) {
        (Some(id), true) => {
            let current = sessions.touched.get(id);
            if current_path.is_empty() {
                current_path = current.map(|t| t.row.exit_path.clone()).unwrap_or_default();
            }
            if current_route.is_empty() {
                current_route = routes::route_of(&current_path, &v.route_patterns);
            }
            VisitorWrite::Update(VisitorState {
                session_id: id.clone(),
                session_started_at: current.map_or(state.session_started_at, |t| t.row.started_at),
                last_at,
                current_path,
                current_route,
                sessions: sessions.seen,
                handed_over: current.is_some_and(|t| t.row.visitor_id != v.visitor_id),
            })
        }
        // Nothing moved the visitor: a placeholder row made by the lock goes.
        _ => VisitorWrite::DropIfEmpty,
    };
    let hits = first_hits(hits, &session_goals, &mut outbox_rows);
    // Sorted by id so a plan is the same for the same input.
    let mut touched: Vec<Touched> = sessions.touched.into_values().collect();
    touched.sort_by(|a, b| a.row.id.cmp(&b.row.id));
    let session_writes = touched
        .into_iter()
        .filter_map(|t| match (t.is_new, t.dirty) {
            (true, _) => Some(SessionWrite::Insert(t.row)),
            (false, true) => Some(SessionWrite::Update(t.row)),
            (false, false) => None,
        })
        .collect();
    out.sessions = sessions.opened;
    Ok(Plan {
        outcome: out,
        events: new_rows,
        funnel_steps,
        measured,
        sessions: session_writes,
        visitor,
        hits,
        outbox: outbox_rows,
        click_ids: sessions.click_ids,
        whatsapp_refs,
    })
}
