//! Acceptance: one batch's checked events become rows in one write of the
//! group-commit writer (rules STORE-01, STORE-07): the events, the
//! sessions they open or extend, the (site, visitor) state and one outbox row
//! per change the rollups need. Everything a report actor applies later is
//! decided here, where the session's state is known.
//!
//! In three steps, in one transaction: [`load`] reads what the decision needs
//! (locking the visitor's row first), [`decide::decide`] turns it and the
//! events into a [`Plan`] without touching the database, and [`write`]
//! applies the plan. So the rules are tested on values (`tests.rs`), and the
//! reads are in one place: a new rule that needs a row adds it to [`Loaded`].

mod decide;
mod plan;
pub mod whatsapp;

use std::collections::{HashMap, HashSet};

use crate::crypto::Identity;
use crate::db::AnyConnection;
use crate::error::Result;
use crate::ids;
use crate::service::analytics::definitions::{self, Matcher};
use crate::service::analytics::ingest::batch::Incoming;
use crate::store::analytics::click_ids::{self, ClickIdRow};
use crate::store::analytics::definitions as defs_store;
use crate::store::analytics::funnels as funnel_store;
use crate::store::analytics::funnels::StepRow;
use crate::store::analytics::goals as goal_store;
use crate::store::analytics::whatsapp_refs::{self, NewRef};
use crate::store::analytics::{self as store, EventRow, OutboxRow, VisitorUpdate};
pub use decide::event_time;
pub use plan::{GoalHit, LandingClickId, Loaded, Outcome, Plan, SessionWrite, Visit, VisitorState, VisitorWrite};

/// The site definitions acceptance reads (active goals, funnels, the
/// affiliates landings name), each read once per write and site: a write of
/// many visits (`accept_many`) reads a site's goals once for all of them.
#[derive(Default)]
pub struct Definitions {
    goals: HashMap<String, Vec<(String, Matcher)>>,
    funnels: HashMap<String, Vec<(String, Vec<definitions::Step>)>>,
    affiliates: HashMap<(String, String), Option<String>>,
}

impl Definitions {
    fn goals(&mut self, conn: &mut AnyConnection, site_id: &str) -> Result<Vec<(String, Matcher)>> {
        if let Some(g) = self.goals.get(site_id) {
            return Ok(g.clone());
        }
        let g: Vec<(String, Matcher)> =
            defs_store::active_goals(conn, site_id)?.iter().map(|g| (g.id.clone(), Matcher::of_goal(g))).collect();
        self.goals.insert(site_id.to_string(), g.clone());
        Ok(g)
    }

    fn funnels(&mut self, conn: &mut AnyConnection, site_id: &str) -> Result<Vec<(String, Vec<definitions::Step>)>> {
        if let Some(f) = self.funnels.get(site_id) {
            return Ok(f.clone());
        }
        let f: Vec<(String, Vec<definitions::Step>)> =
            defs_store::funnels(conn, site_id)?.iter().map(|f| (f.id.clone(), definitions::steps_of(f))).collect();
        self.funnels.insert(site_id.to_string(), f.clone());
        Ok(f)
    }

    fn affiliate(&mut self, conn: &mut AnyConnection, site_id: &str, slug: &str) -> Result<Option<String>> {
        let key = (site_id.to_string(), slug.to_string());
        if let Some(a) = self.affiliates.get(&key) {
            return Ok(a.clone());
        }
        let a = defs_store::affiliate_by_slug(conn, site_id, slug)?.map(|a| a.id);
        self.affiliates.insert(key, a.clone());
        Ok(a)
    }
}

/// Reads what [`decide::decide`] needs for these events; the visitor's row is
/// locked first, so no other acceptance of this visitor reads it meanwhile.
pub fn load(conn: &mut AnyConnection, v: &Visit, events: &[Option<Incoming>]) -> Result<Loaded> {
    load_with(conn, v, events, &mut Definitions::default())
}

fn load_with(
    conn: &mut AnyConnection,
    v: &Visit,
    events: &[Option<Incoming>],
    defs: &mut Definitions,
) -> Result<Loaded> {
    let visitor = store::lock_visitor(conn, &v.site_id, &v.visitor_id)?;
    let goals = defs.goals(conn, &v.site_id)?;
    let current = if visitor.session_id.is_empty() { None } else { store::session(conn, &visitor.session_id)? };

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
    let stored = store::pageviews(conn, &v.site_id, &named)?;

    // An engagement of a stored pageview extends its session, which may be
    // an earlier one than the current.
    let engaged: HashSet<&str> = events
        .iter()
        .filter_map(|e| match e {
            Some(Incoming::Engagement { pageview_id, .. }) => Some(pageview_id.as_str()),
            _ => None,
        })
        .collect();
    let mut session_ids: Vec<String> = stored
        .iter()
        .filter(|e| e.pageview_id.as_deref().is_some_and(|p| engaged.contains(p)))
        .map(|e| e.session_id.clone())
        .filter(|id| *id != visitor.session_id)
        .collect();
    session_ids.sort();
    session_ids.dedup();
    let sessions = store::sessions(conn, &session_ids)?.into_iter().map(|s| (s.id.clone(), s)).collect();

    // Landings: the affiliates they name, and the funnels their rows index.
    let mut slugs: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Some(Incoming::Pageview { url, origin, .. }) | Some(Incoming::Custom { url, origin, .. }) => {
                decide::affiliate_slug(url, origin.as_deref())
            }
            _ => None,
        })
        .collect();
    slugs.sort();
    slugs.dedup();
    let mut affiliates = HashMap::new();
    for slug in slugs {
        if let Some(id) = defs.affiliate(conn, &v.site_id, &slug)? {
            affiliates.insert(slug, id);
        }
    }
    let lands = events.iter().any(|e| matches!(e, Some(Incoming::Pageview { .. } | Incoming::Custom { .. })));
    let funnels = if lands { defs.funnels(conn, &v.site_id)? } else { Vec::new() };
    let session_goals = match &current {
        Some(s) if lands && !goals.is_empty() => {
            goal_store::goals_of_session(conn, &s.id)?.into_iter().map(|g| (s.id.clone(), g)).collect()
        }
        _ => HashSet::new(),
    };
    Ok(Loaded { visitor, current, goals, stored, sessions, affiliates, session_goals, funnels })
}

/// Applies a plan: the rows in the order the rollups and the reports expect
/// them (events before their step rows and the sessions, the outbox last).
pub fn write(conn: &mut AnyConnection, v: &Visit, plan: &Plan) -> Result<()> {
    let mut rows = Rows::default();
    write_into(conn, v, plan, &mut rows)?;
    rows.flush(conn)
}

/// The many-row tables of several plans (events, funnel step rows, the
/// outbox), held to be inserted with one statement per table and chunk.
#[derive(Default)]
struct Rows {
    events: Vec<EventRow>,
    steps: Vec<(String, StepRow)>,
    outbox: Vec<OutboxRow>,
    click_ids: Vec<ClickIdRow>,
    whatsapp_refs: Vec<NewRef>,
}

impl Rows {
    fn flush(&mut self, conn: &mut AnyConnection) -> Result<()> {
        store::insert_events(conn, &std::mem::take(&mut self.events))?;
        let mut steps = std::mem::take(&mut self.steps);
        steps.sort_by(|a, b| a.0.cmp(&b.0));
        for site in steps.chunk_by(|a, b| a.0 == b.0) {
            let rows: Vec<StepRow> = site.iter().map(|(_, r)| r.clone()).collect();
            funnel_store::insert_steps(conn, &site[0].0, &rows)?;
        }
        store::insert_outbox(conn, &std::mem::take(&mut self.outbox))?;
        click_ids::insert_many(conn, &std::mem::take(&mut self.click_ids))?;
        whatsapp_refs::insert_refs(conn, &std::mem::take(&mut self.whatsapp_refs))?;
        Ok(())
    }
}

/// [`write`], with the many-row tables added to `rows` for a later flush.
fn write_into(conn: &mut AnyConnection, v: &Visit, plan: &Plan, rows: &mut Rows) -> Result<()> {
    rows.events.extend(plan.events.iter().cloned());
    rows.steps.extend(plan.funnel_steps.iter().map(|r| (v.site_id.clone(), r.clone())));
    for row in &plan.measured {
        store::update_pageview_measures(conn, row)?;
    }
    for s in &plan.sessions {
        match s {
            SessionWrite::Insert(row) => store::insert_session(conn, row)?,
            SessionWrite::Update(row) => store::update_session(conn, row)?,
        };
    }
    match &plan.visitor {
        VisitorWrite::Update(s) => {
            store::update_visitor(
                conn,
                &VisitorUpdate {
                    site_id: &v.site_id,
                    visitor_id: &v.visitor_id,
                    session_id: &s.session_id,
                    session_started_at: s.session_started_at,
                    last_at: s.last_at,
                    current_path: &s.current_path,
                    current_route: &s.current_route,
                    sessions: s.sessions,
                },
            )?;
        }
        VisitorWrite::DropIfEmpty => {
            store::drop_empty_visitor(conn, &v.site_id, &v.visitor_id)?;
        }
    }
    for h in &plan.hits {
        goal_store::insert_hit(conn, &v.site_id, &h.goal_id, h.at, &h.event_id)?;
        if h.first_in_session {
            goal_store::insert_session_goal(conn, &h.session_id, &h.goal_id, &v.site_id, h.session_start)?;
        }
    }
    rows.outbox.extend(plan.outbox.iter().cloned());
    rows.whatsapp_refs.extend(plan.whatsapp_refs.iter().cloned());
    if let Some(key) = &v.click_key {
        for c in &plan.click_ids {
            let sealed = key.seal(&c.fbclid, Identity::WebClickId(&v.site_id, &c.session_id))?;
            let (site_id, session_id) = (v.site_id.clone(), c.session_id.clone());
            let who = Identity::WebClickId(&v.site_id, &c.session_id);
            let agent = c.user_agent.as_ref().map(|ua| key.seal(ua, who)).transpose()?;
            rows.click_ids.push(ClickIdRow {
                site_id,
                session_id,
                sealed_fbclid: sealed,
                landed_at: c.landed_at,
                sealed_user_agent: agent,
            });
        }
    }
    Ok(())
}

/// One visitor's checked batch (`None` = already rejected), as acceptance takes it.
pub type Batch = (Visit, Vec<Option<Incoming>>);

/// Stores a batch's events (`None` = already rejected) for one visitor.
pub fn accept(conn: &mut AnyConnection, v: &Visit, events: Vec<Option<Incoming>>) -> Result<Outcome> {
    let loaded = load(conn, v, &events)?;
    let plan = decide::decide(v, loaded, events, &mut ids::time_ordered)?;
    write(conn, v, &plan)?;
    Ok(plan.outcome)
}

/// A custom event the server adds to a visitor's session (the WhatsApp
/// bridge's `lead`, rule WA-15), decided and written as the tracker's would
/// be (goals, funnel steps, the outbox), at `v.received_at`; only while
/// `session_id` is the visitor's current session and still open then (rule
/// SES-07), so it never opens a session of its own. Answers whether it went in.
pub fn add_to_open_session(conn: &mut AnyConnection, v: &Visit, session_id: &str, event: Incoming) -> Result<bool> {
    let events = vec![Some(event)];
    let loaded = load(conn, v, &events)?;
    let t = v.received_at;
    let open = loaded.current.as_ref().is_some_and(|s| {
        let last = loaded.visitor.last_at.max(s.last_at);
        s.id == session_id && t >= last && t - last < v.idle_ms && t - s.started_at < v.max_ms
    });
    if !open {
        return Ok(false);
    }
    let plan = decide::decide(v, loaded, events, &mut ids::time_ordered)?;
    write(conn, v, &plan)?;
    Ok(plan.outcome.accepted > 0)
}

/// Several batches in one write (issue 25), each decided as [`accept`]
/// decides it and in their order: a site's definitions are read once for
/// all of them, and the events, step rows and outbox rows of every batch go
/// in with one statement per table. A visitor seen earlier in the write has
/// those rows written first, so its second batch loads what its first made.
pub fn accept_many(conn: &mut AnyConnection, batches: Vec<Batch>) -> Result<Vec<Outcome>> {
    let mut defs = Definitions::default();
    let mut rows = Rows::default();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut out = Vec::with_capacity(batches.len());
    for (v, events) in batches {
        if !seen.insert((v.site_id.clone(), v.visitor_id.clone())) {
            rows.flush(conn)?;
        }
        let loaded = load_with(conn, &v, &events, &mut defs)?;
        let plan = decide::decide(&v, loaded, events, &mut ids::time_ordered)?;
        write_into(conn, &v, &plan, &mut rows)?;
        out.push(plan.outcome);
    }
    rows.flush(conn)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
