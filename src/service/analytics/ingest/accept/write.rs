//! The writes of acceptance, for every plan of a combined write at once
//! (issue 25): one multi-row statement per table and chunk, in the order the
//! rollups and the reports expect (events before their step rows and the
//! sessions, the outbox last). The plans of one call name distinct
//! visitors, so no row is written twice by one statement.

use super::plan::{Plan, SessionWrite, Visit, VisitorWrite};
use crate::crypto::Identity;
use crate::db::AnyConnection;
use crate::error::Result;
use crate::store::analytics::click_ids::{self, ClickIdRow};
use crate::store::analytics::funnels as funnel_store;
use crate::store::analytics::goals::{self as goal_store, HitRow, SessionGoalRow};
use crate::store::analytics::whatsapp_refs;
use crate::store::analytics::{self as store, SessionRow, VisitorUpdate};

/// Applies the plans of one round.
pub fn write_round(conn: &mut AnyConnection, plans: &[(&Visit, &Plan)]) -> Result<()> {
    let events: Vec<_> = plans.iter().flat_map(|(_, p)| p.events.iter()).collect();
    store::insert_events(conn, &events)?;
    let mut steps: Vec<(&str, _)> =
        plans.iter().flat_map(|(v, p)| p.funnel_steps.iter().map(|r| (v.site_id.as_str(), r.clone()))).collect();
    steps.sort_by(|a, b| a.0.cmp(b.0));
    for site in steps.chunk_by(|a, b| a.0 == b.0) {
        let rows: Vec<_> = site.iter().map(|(_, r)| r.clone()).collect();
        funnel_store::insert_steps(conn, site[0].0, &rows)?;
    }
    let measured: Vec<_> = plans.iter().flat_map(|(_, p)| p.measured.iter()).collect();
    store::update_measures(conn, &measured)?;
    let sessions: Vec<&SessionRow> = plans
        .iter()
        .flat_map(|(_, p)| p.sessions.iter())
        .map(|s| match s {
            SessionWrite::Insert(row) | SessionWrite::Update(row) => row,
        })
        .collect();
    store::write_sessions(conn, &sessions)?;
    let mut moved = Vec::new();
    for (v, p) in plans {
        match &p.visitor {
            VisitorWrite::Update(s) => moved.push(VisitorUpdate {
                site_id: &v.site_id,
                visitor_id: &v.visitor_id,
                session_id: &s.session_id,
                session_started_at: s.session_started_at,
                last_at: s.last_at,
                current_path: &s.current_path,
                current_route: &s.current_route,
                sessions: s.sessions,
                handed_over: s.handed_over,
            }),
            VisitorWrite::DropIfEmpty => {
                store::drop_empty_visitor(conn, &v.site_id, &v.visitor_id)?;
            }
        }
    }
    store::update_visitors(conn, &moved)?;
    let hits: Vec<_> = plans
        .iter()
        .flat_map(|(v, p)| {
            p.hits.iter().map(|h| HitRow { site_id: &v.site_id, goal_id: &h.goal_id, at: h.at, event_id: &h.event_id })
        })
        .collect();
    goal_store::insert_hits(conn, &hits)?;
    let firsts: Vec<_> = plans
        .iter()
        .flat_map(|(v, p)| {
            p.hits.iter().filter(|h| h.first_in_session).map(|h| SessionGoalRow {
                session_id: &h.session_id,
                goal_id: &h.goal_id,
                site_id: &v.site_id,
                started_at: h.session_start,
            })
        })
        .collect();
    goal_store::insert_session_goals(conn, &firsts)?;
    let outbox: Vec<_> = plans.iter().flat_map(|(_, p)| p.outbox.iter()).collect();
    store::insert_outbox(conn, &outbox)?;
    let mut sealed = Vec::new();
    for (v, p) in plans {
        sealed.extend(click_ids(v, p)?);
    }
    click_ids::insert_many(conn, &sealed)?;
    let refs: Vec<_> = plans.iter().flat_map(|(_, p)| p.whatsapp_refs.iter().cloned()).collect();
    whatsapp_refs::insert_refs(conn, &refs)?;
    Ok(())
}

/// The landings' `fbclid`s (and user agents) sealed for the site and
/// session (rule WA-33); none without the visit's key.
fn click_ids(v: &Visit, p: &Plan) -> Result<Vec<ClickIdRow>> {
    let Some(key) = &v.click_key else { return Ok(Vec::new()) };
    let mut rows = Vec::with_capacity(p.click_ids.len());
    for c in &p.click_ids {
        let who = Identity::WebClickId(&v.site_id, &c.session_id);
        rows.push(ClickIdRow {
            site_id: v.site_id.clone(),
            session_id: c.session_id.clone(),
            sealed_fbclid: key.seal(&c.fbclid, who)?,
            landed_at: c.landed_at,
            sealed_user_agent: c.user_agent.as_ref().map(|ua| key.seal(ua, who)).transpose()?,
        });
    }
    Ok(rows)
}
