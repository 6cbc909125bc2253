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
mod load;
mod plan;
pub mod whatsapp;
mod write;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::ids;
use crate::service::analytics::ingest::batch::Incoming;
use crate::service::analytics::ingest::session_cache::{KeptSession, SessionSource};
use crate::service::sites;
pub use decide::event_time;
use load::Definitions;
pub use plan::{GoalHit, LandingClickId, Loaded, Outcome, Plan, SessionWrite, Visit, VisitorState, VisitorWrite};

/// Reads what [`decide::decide`] needs for these events; the visitor's row is
/// locked first, so no other acceptance of this visitor reads it meanwhile.
pub fn load(conn: &mut AnyConnection, v: &Visit, events: &[Option<Incoming>]) -> Result<Loaded> {
    let mut loaded = load::load_round(conn, &[(v, events)], &mut Definitions::default())?;
    loaded.pop().ok_or_else(|| Error::internal("a batch's load answered nothing"))
}

/// Applies a plan: the rows in the order the rollups and the reports expect
/// them (events before their step rows and the sessions, the outbox last).
pub fn write(conn: &mut AnyConnection, v: &Visit, plan: &Plan) -> Result<()> {
    write::write_round(conn, &[(v, plan)])
}

/// One visitor's checked batch (`None` = already rejected), as acceptance takes it.
pub type Batch = (Visit, Vec<Option<Incoming>>);

/// Stores a batch's events (`None` = already rejected) for one visitor.
pub fn accept(conn: &mut AnyConnection, v: &Visit, events: Vec<Option<Incoming>>) -> Result<Outcome> {
    let loaded = load(conn, v, &events)?;
    let read = (loaded.current_version, loaded.session_source);
    let plan = decide::decide(v, loaded, events, &mut ids::time_ordered)?;
    write(conn, v, &plan)?;
    Ok(settled(plan, read))
}

/// The plan's outcome, with where its current session came from and the
/// session as the write left it, its version named without a read (rule
/// STORE-12): a new row is stored at 0, a moved one one above the version
/// its load confirmed or read (the upsert adds one to whatever is stored,
/// and only another writer between the two could make it more, which
/// leaves the kept row unconfirmed, never wrong).
fn settled(plan: Plan, (version, source): (Option<i64>, SessionSource)) -> Outcome {
    let Plan { mut outcome, sessions, visitor, .. } = plan;
    outcome.session_source = source;
    let VisitorWrite::Update(state) = visitor else { return outcome };
    let left = sessions.into_iter().find_map(|w| match w {
        SessionWrite::Insert(row) if row.id == state.session_id => Some(KeptSession { row, version: 0 }),
        SessionWrite::Update(row) if row.id == state.session_id => version.map(|v| KeptSession { row, version: v + 1 }),
        _ => None,
    });
    outcome.left_session = left.map(Arc::new);
    outcome
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

/// The tracker checks a batch against its process's copy of the site, which
/// may be up to `RASTRO_READ_CACHE_TTL` older than another process's change
/// (`Tracker::sites`); the write takes each site's domains and route
/// patterns as its own transaction reads them, once per site, so what lands
/// follows the site as committed (rules TRK-17, ROUTE-03).
pub fn refresh_sites(conn: &mut AnyConnection, batches: &mut [Batch]) -> Result<()> {
    let mut read: HashMap<String, sites::Site> = HashMap::new();
    for (v, _) in batches.iter_mut() {
        if !read.contains_key(&v.site_id) {
            read.insert(v.site_id.clone(), sites::get(conn, &v.site_id)?);
        }
        if let Some(site) = read.get(&v.site_id) {
            v.domains.clone_from(&site.domains);
            v.route_patterns.clone_from(&site.route_patterns);
        }
    }
    Ok(())
}

/// Several batches in one write (issue 25), each decided as [`accept`]
/// decides it and in their order, read and written together: every
/// visitor's state, session and named pageviews with one read per table, a
/// site's definitions once, and one multi-row statement per table. A
/// visitor met again starts a new round, written before that round loads,
/// so its second batch reads what its first made.
pub fn accept_many(conn: &mut AnyConnection, batches: Vec<Batch>) -> Result<Vec<Outcome>> {
    let mut defs = Definitions::default();
    let mut out = Vec::with_capacity(batches.len());
    let mut round: Vec<Batch> = Vec::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for b in batches {
        if !seen.insert((b.0.site_id.clone(), b.0.visitor_id.clone())) {
            out.extend(accept_round(conn, std::mem::take(&mut round), &mut defs)?);
            seen.clear();
            seen.insert((b.0.site_id.clone(), b.0.visitor_id.clone()));
        }
        round.push(b);
    }
    out.extend(accept_round(conn, round, &mut defs)?);
    Ok(out)
}

/// Batches of distinct visitors: loaded together, decided one by one, written together.
fn accept_round(conn: &mut AnyConnection, batches: Vec<Batch>, defs: &mut Definitions) -> Result<Vec<Outcome>> {
    if batches.is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<(&Visit, &[Option<Incoming>])> = batches.iter().map(|(v, e)| (v, e.as_slice())).collect();
    let loaded = load::load_round(conn, &parts, defs)?;
    let mut plans = Vec::with_capacity(batches.len());
    for ((v, events), l) in batches.into_iter().zip(loaded) {
        let read = (l.current_version, l.session_source);
        let plan = decide::decide(&v, l, events, &mut ids::time_ordered)?;
        plans.push((v, plan, read));
    }
    let pairs: Vec<(&Visit, &Plan)> = plans.iter().map(|(v, p, _)| (v, p)).collect();
    write::write_round(conn, &pairs)?;
    Ok(plans.into_iter().map(|(_, p, read)| settled(p, read)).collect())
}

#[cfg(test)]
mod tests;
