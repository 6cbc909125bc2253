//! Acceptance: one batch's checked events become rows in one write of the
//! group-commit writer (rules STORE-01, STORE-07): the events, the
//! sessions they open or extend, the (site, visitor) state and one outbox row
//! per change the rollups need. Everything a report actor applies later is
//! decided here, where the session's state is known.

use std::collections::HashMap;

use serde_json::Value;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::ids;
use crate::service::analytics::definitions::Matcher;
use crate::service::analytics::ingest::agent::Agent;
use crate::service::analytics::ingest::batch::{Incoming, LineOrigin, Vitals};
use crate::service::analytics::ingest::session_figures::{bounce, duration};
use crate::service::analytics::ingest::urls;
use crate::service::analytics::rollup::site_map;
use crate::service::analytics::rollup::vitals as vitals_rollup;
use crate::service::sites::routes;
use crate::store::analytics::definitions as defs_store;
use crate::store::analytics::goals as goal_store;
use crate::store::analytics::{self as store, EventRow, OutboxRow, SessionRow, VisitorUpdate};

/// What a batch's events share: the site, the visitor, the clock and the client.
#[derive(Debug, Clone)]
pub struct Visit {
    pub site_id: String,
    pub domains: Vec<String>,
    pub route_patterns: Vec<String>,
    pub visitor_id: String,
    pub received_at: i64,
    pub sent_at: Option<i64>,
    pub hash: bool,
    pub redact: bool,
    pub language: Option<String>,
    pub agent: Agent,
    pub country: Option<String>,
    pub region: Option<String>,
    pub idle_ms: i64,
    pub max_ms: i64,
    /// The import (§4.4): event times are exact (no skew correction), an
    /// event older than the visitor's latest is refused, no domain check.
    pub trusted: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub accepted: usize,
    pub rejected: usize,
    pub session_id: Option<String>,
    /// Sessions this batch opened.
    pub sessions: usize,
}

/// The session a visitor is in, as this batch leaves it.
struct Touched {
    row: SessionRow,
    is_new: bool,
    dirty: bool,
}

/// A pageview's or custom event's time (rule TRK-26): skew-corrected when the
/// client's clock says how old the event is, clamped to the visitor's order.
pub fn event_time(received_at: i64, sent_at: Option<i64>, ts: Option<i64>, previous: i64) -> i64 {
    let t = match (sent_at, ts) {
        (Some(sent), Some(ts)) if (0..=86_400_000).contains(&(sent - ts)) => received_at - (sent - ts),
        _ => received_at,
    };
    t.clamp(previous.min(received_at), received_at)
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

fn outbox(row: &SessionRow, kind: &str, at: i64, route: &str, name: Option<String>) -> OutboxRow {
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
        new_session: 0,
        d_bounces: 0,
        d_duration: 0,
        d_engaged_sum: 0,
        d_engaged_count: 0,
        goals: None,
        new_goals: None,
        prev_route: None,
        pageview_no: 0,
        vital_old: None,
        vital_new: None,
    }
}

/// A goal completion decided at acceptance (rule ARPT-10): written as a row,
/// and its outbox row tells the report actor what to count.
struct Hit {
    outbox: usize,
    goal_id: String,
    session_id: String,
    session_start: i64,
    at: i64,
    event_id: String,
}

/// The active goals an accepted pageview or custom event completes.
fn completed<'a>(goals: &'a [(String, Matcher)], kind: &str, path: &str, name: Option<&str>) -> Vec<&'a str> {
    goals.iter().filter(|(_, m)| m.matches(kind, path, name)).map(|(id, _)| id.as_str()).collect()
}

/// The existing affiliate a session's landing `ref` (or an imported line's
/// `affiliate`) names, lowercased (rule SES-15).
fn affiliate_of(
    conn: &mut AnyConnection,
    site_id: &str,
    url: &url::Url,
    origin: Option<&LineOrigin>,
) -> Result<Option<String>> {
    let named = origin.and_then(|o| o.affiliate.clone()).or_else(|| urls::params(url).referral);
    let Some(slug) = named else { return Ok(None) };
    Ok(defs_store::affiliate_by_slug(conn, site_id, &slug.to_lowercase())?.map(|a| a.id))
}

/// The funnel step index's rows of the batch's events, for the funnels in force.
fn index_funnel_steps(conn: &mut AnyConnection, site_id: &str, rows: &[EventRow]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let funnels: Vec<(String, Vec<crate::service::analytics::definitions::Step>)> = defs_store::funnels(conn, site_id)?
        .iter()
        .map(|f| (f.id.clone(), crate::service::analytics::definitions::steps_of(f)))
        .collect();
    if funnels.is_empty() {
        return Ok(());
    }
    let steps: Vec<_> =
        rows.iter().flat_map(|e| crate::service::analytics::reports::funnels::rows_for(&funnels, e)).collect();
    crate::store::analytics::funnels::insert_steps(conn, site_id, &steps)?;
    Ok(())
}

/// Records the batch's completions: one row each, one (session, goal) row
/// the first time a session completes a goal, which its outbox row then says.
fn record_hits(conn: &mut AnyConnection, site_id: &str, hits: &[Hit], outbox_rows: &mut [OutboxRow]) -> Result<()> {
    for h in hits {
        goal_store::insert_hit(conn, site_id, &h.goal_id, h.at, &h.event_id)?;
        if goal_store::insert_session_goal(conn, &h.session_id, &h.goal_id, site_id, h.session_start)? {
            let o = &mut outbox_rows[h.outbox];
            o.new_goals = Some(match o.new_goals.take() {
                Some(g) => format!("{g} {}", h.goal_id),
                None => h.goal_id.clone(),
            });
        }
    }
    Ok(())
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

/// Stores a batch's events (`None` = already rejected) for one visitor.
pub fn accept(conn: &mut AnyConnection, v: &Visit, events: Vec<Option<Incoming>>) -> Result<Outcome> {
    let mut out = Outcome::default();
    let state = store::lock_visitor(conn, &v.site_id, &v.visitor_id)?;
    let goals: Vec<(String, Matcher)> =
        defs_store::active_goals(conn, &v.site_id)?.iter().map(|g| (g.id.clone(), Matcher::of_goal(g))).collect();
    let mut hits: Vec<Hit> = Vec::new();
    let mut last_at = state.last_at;
    let mut sessions = Sessions { touched: HashMap::new(), current: None, seen: state.sessions, opened: 0 };
    if !state.session_id.is_empty()
        && let Some(row) = store::session(conn, &state.session_id)?
    {
        sessions.current = Some(state.session_id.clone());
        sessions.touched.insert(state.session_id.clone(), Touched { row, is_new: false, dirty: false });
    }

    // Every pageview id the batch names, looked up once.
    let named: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Some(Incoming::Pageview { pageview_id, .. })
            | Some(Incoming::Vitals { pageview_id, .. })
            | Some(Incoming::Engagement { pageview_id, .. }) => Some(pageview_id.clone()),
            _ => None,
        })
        .collect();
    let mut stored = store::pageviews(conn, &v.site_id, &named)?;
    let mut stored_changed = vec![false; stored.len()];
    let mut by_pageview: HashMap<String, Target> =
        stored.iter().enumerate().filter_map(|(i, e)| e.pageview_id.clone().map(|p| (p, Target::Stored(i)))).collect();

    let mut new_rows: Vec<EventRow> = Vec::new();
    let mut outbox_rows: Vec<OutboxRow> = Vec::new();
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
                let session = sessions.join_or_open(v, last_at, &at)?;
                let s = sessions.touched.get_mut(&session).map(|x| &mut x.row);
                let Some(s) = s else { continue };
                let (b0, d0, fresh) = (bounce(s), duration(s), s.pageviews + s.events == 0);
                if fresh {
                    s.affiliate_id = affiliate_of(conn, &v.site_id, &url, origin.as_deref())?;
                }
                let prev_route = site_map::previous_route(s, &v.route_patterns);
                s.pageviews += 1;
                s.last_at = t;
                s.end_at = s.end_at.max(t);
                s.exit_path = path.clone();
                let mut o = outbox(s, "pageview", t, &route, None);
                o.new_session = i64::from(fresh);
                o.d_bounces = bounce(s) - b0;
                o.d_duration = duration(s) - d0;
                site_map::mark(&mut o, prev_route, s.pageviews);
                outbox_rows.push(o);
                let event_id = ids::time_ordered("e_", t)?;
                note_hits(completed(&goals, "pageview", &path, None), s, t, &event_id, &mut outbox_rows, &mut hits);
                by_pageview.insert(pageview_id.clone(), Target::New(new_rows.len()));
                new_rows.push(EventRow {
                    id: event_id,
                    site_id: v.site_id.clone(),
                    session_id: session.clone(),
                    visitor_id: v.visitor_id.clone(),
                    kind: "pageview".into(),
                    name: None,
                    path: path.clone(),
                    route: route.clone(),
                    occurred_at: t,
                    pageview_id: Some(pageview_id),
                    properties: properties.map(|p| Value::Object(p).to_string()),
                    engaged_ms: None,
                    lcp: None,
                    inp: None,
                    cls: None,
                    fcp: None,
                    ttfb: None,
                });
                last_at = t;
                current_path = path;
                current_route = route;
                moved = true;
                out.accepted += 1;
                out.session_id = Some(session);
            }
            Incoming::Custom { ts, url, name, properties, origin } => {
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
                let session = sessions.join_or_open(v, last_at, &at)?;
                let Some(s) = sessions.touched.get_mut(&session).map(|x| &mut x.row) else { continue };
                let (b0, d0, fresh) = (bounce(s), duration(s), s.pageviews + s.events == 0);
                if fresh {
                    s.affiliate_id = affiliate_of(conn, &v.site_id, &url, origin.as_deref())?;
                }
                s.events += 1;
                s.last_at = t;
                s.end_at = s.end_at.max(t);
                let mut o = outbox(s, "event", t, &route, Some(name.clone()));
                o.new_session = i64::from(fresh);
                o.d_bounces = bounce(s) - b0;
                o.d_duration = duration(s) - d0;
                outbox_rows.push(o);
                let event_id = ids::time_ordered("e_", t)?;
                note_hits(completed(&goals, "event", &path, Some(&name)), s, t, &event_id, &mut outbox_rows, &mut hits);
                new_rows.push(EventRow {
                    id: event_id,
                    site_id: v.site_id.clone(),
                    session_id: session.clone(),
                    visitor_id: v.visitor_id.clone(),
                    kind: "event".into(),
                    name: Some(name),
                    path: path.clone(),
                    route,
                    occurred_at: t,
                    pageview_id: None,
                    properties: properties.map(|p| Value::Object(p).to_string()),
                    engaged_ms: None,
                    lcp: None,
                    inp: None,
                    cls: None,
                    fcp: None,
                    ttfb: None,
                });
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
                    && let Some(row) = store::session(conn, &session_id)?
                {
                    sessions.touched.insert(session_id.clone(), Touched { row, is_new: false, dirty: false });
                }
                let Some(t) = sessions.touched.get_mut(&session_id) else { continue };
                let d0 = duration(&t.row);
                t.row.end_at = t.row.end_at.max(pv_at + engaged_ms);
                t.dirty = true;
                let mut o = outbox(&t.row, "engagement", pv_at, &route, None);
                o.d_duration = duration(&t.row) - d0;
                o.d_engaged_sum = engaged_ms - old.unwrap_or(0);
                o.d_engaged_count = i64::from(old.is_none());
                outbox_rows.push(o);
            }
        }
    }

    store::insert_events(conn, &new_rows)?;
    index_funnel_steps(conn, &v.site_id, &new_rows)?;
    for (row, changed) in stored.iter().zip(&stored_changed) {
        if *changed {
            store::update_pageview_measures(conn, row)?;
        }
    }
    for t in sessions.touched.values() {
        if t.is_new {
            store::insert_session(conn, &t.row)?;
        } else if t.dirty {
            store::update_session(conn, &t.row)?;
        }
    }
    match (&sessions.current, moved) {
        (Some(id), true) => {
            let started = sessions.touched.get(id).map_or(state.session_started_at, |t| t.row.started_at);
            if current_path.is_empty() {
                current_path = sessions.touched.get(id).map(|t| t.row.exit_path.clone()).unwrap_or_default();
            }
            if current_route.is_empty() {
                current_route = routes::route_of(&current_path, &v.route_patterns);
            }
            store::update_visitor(
                conn,
                &VisitorUpdate {
                    site_id: &v.site_id,
                    visitor_id: &v.visitor_id,
                    session_id: id,
                    session_started_at: started,
                    last_at,
                    current_path: &current_path,
                    current_route: &current_route,
                    sessions: sessions.seen,
                },
            )?;
        }
        _ => {
            store::drop_empty_visitor(conn, &v.site_id, &v.visitor_id)?;
        }
    }
    record_hits(conn, &v.site_id, &hits, &mut outbox_rows)?;
    store::insert_outbox(conn, &outbox_rows)?;
    out.sessions = sessions.opened;
    Ok(out)
}

/// The sessions a batch touches, and the visitor's current one.
struct Sessions {
    touched: HashMap<String, Touched>,
    current: Option<String>,
    /// Sessions the visitor had on the site (`returning`).
    seen: i64,
    /// Sessions this batch opened.
    opened: usize,
}

impl Sessions {
    /// The session a pageview or custom event belongs to (rule SES-07): the
    /// current one while it is less than the idle time since its last pageview
    /// or custom event and less than the cap since its start, else a new one.
    fn join_or_open(&mut self, v: &Visit, last_at: i64, at: &Landing<'_>) -> Result<String> {
        if let Some(id) = self.current.as_ref()
            && let Some(s) = self.touched.get_mut(id)
            && at.t - last_at.max(s.row.last_at) < v.idle_ms
            && at.t - s.row.started_at < v.max_ms
        {
            s.dirty = true;
            return Ok(id.clone());
        }
        let id = ids::time_ordered("s_", at.t)?;
        let row = open_session(v, id.clone(), at, self.seen > 0);
        self.seen += 1;
        self.opened += 1;
        self.touched.insert(id.clone(), Touched { row, is_new: true, dirty: true });
        self.current = Some(id.clone());
        Ok(id)
    }
}

#[cfg(test)]
mod tests;
