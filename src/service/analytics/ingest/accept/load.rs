//! The reads of acceptance, for every batch of a combined write at once
//! (issue 25): each visitor's state locked and read with one statement per
//! site and chunk, the named pageviews, the sessions and the goals those
//! sessions completed each with one read, and a site's definitions once.
//! A current session the tracker kept (rule STORE-12) is confirmed by its
//! stored version alone: on SQLite read with the visitors' lock, on
//! PostgreSQL with one narrow read after it.
//! The batches of one call name distinct visitors (the caller starts a new
//! round when a visitor comes back), so each [`Loaded`] is exactly what a
//! load of its batch alone would read.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::decide;
use super::plan::Loaded;
use super::plan::Visit;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::definitions::{self, Matcher};
use crate::service::analytics::ingest::batch::Incoming;
use crate::service::analytics::ingest::session_cache::{KeptSession, SessionSource};
use crate::store::analytics::definitions as defs_store;
use crate::store::analytics::goals as goal_store;
use crate::store::analytics::{self as store, EventRow, SessionRow, VisitorRow};

/// The site definitions acceptance reads (active goals, funnels, the
/// affiliates landings name), each read once per write and site.
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

/// The pageview ids a batch names (pageviews, vitals, engagement), each once.
fn named(events: &[Option<Incoming>]) -> Vec<String> {
    let mut seen = HashSet::new();
    events
        .iter()
        .filter_map(|e| match e {
            Some(Incoming::Pageview { pageview_id, .. })
            | Some(Incoming::Vitals { pageview_id, .. })
            | Some(Incoming::Engagement { pageview_id, .. }) => Some(pageview_id.clone()),
            _ => None,
        })
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

/// Whether the batch has a pageview or custom event (which can land, match
/// goals and funnel steps).
fn lands(events: &[Option<Incoming>]) -> bool {
    events.iter().any(|e| matches!(e, Some(Incoming::Pageview { .. } | Incoming::Custom { .. })))
}

/// The sessions of stored pageviews an engagement names, other than the
/// visitor's current one (an engagement extends its pageview's session).
fn engaged_sessions(events: &[Option<Incoming>], stored: &[EventRow], current: &str) -> Vec<String> {
    let engaged: HashSet<&str> = events
        .iter()
        .filter_map(|e| match e {
            Some(Incoming::Engagement { pageview_id, .. }) => Some(pageview_id.as_str()),
            _ => None,
        })
        .collect();
    let mut ids: Vec<String> = stored
        .iter()
        .filter(|e| e.pageview_id.as_deref().is_some_and(|p| engaged.contains(p)))
        .map(|e| e.session_id.clone())
        .filter(|id| id != current)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// A batch's reads before its sessions: the visitor's locked row, the
/// session kept for it when that is its current one (still to be confirmed),
/// the named pageviews and the sessions engagements extend.
struct Partial {
    visitor: VisitorRow,
    kept: Option<Arc<KeptSession>>,
    stored: Vec<EventRow>,
    engaged: Vec<String>,
}

/// A batch's current session, its version, and where it came from.
type Current = (Option<SessionRow>, Option<i64>, SessionSource);

/// Sessions per read: few statement shapes for each connection to keep
/// prepared, far under either backend's limit on binds.
const CHUNK: usize = 64;

/// Reads what [`decide::decide`] needs for each batch, in their order; the
/// visitors' rows are locked first (by site, in id order), so no other
/// acceptance of these visitors reads them meanwhile (rule STORE-07).
pub fn load_round(
    conn: &mut AnyConnection,
    batches: &[(&Visit, &[Option<Incoming>])],
    defs: &mut Definitions,
) -> Result<Vec<Loaded>> {
    // The visitors, locked per site.
    let mut by_site: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (v, _) in batches {
        by_site.entry(&v.site_id).or_default().push(v.visitor_id.clone());
    }
    let mut visitors: HashMap<(String, String), VisitorRow> = HashMap::new();
    // SQLite reads each current session's version in the lock (rule STORE-12).
    let mut versions: HashMap<String, i64> = HashMap::new();
    for (site, ids) in &by_site {
        for k in store::lock_visitors(conn, site, ids)? {
            if let Some(version) = k.session_version {
                versions.insert(k.row.session_id.clone(), version);
            }
            visitors.insert((site.to_string(), k.visitor_id), k.row);
        }
    }
    // The pageviews the batches name, per site.
    let named: Vec<Vec<String>> = batches.iter().map(|(_, events)| named(events)).collect();
    let mut wanted: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for ((v, _), ids) in batches.iter().zip(&named) {
        wanted.entry(&v.site_id).or_default().extend(ids.iter().cloned());
    }
    let mut pageviews: HashMap<(String, String), EventRow> = HashMap::new();
    for (site, ids) in &mut wanted {
        ids.sort();
        ids.dedup();
        for chunk in ids.chunks(500) {
            for row in store::pageviews(conn, site, chunk)? {
                if let Some(p) = row.pageview_id.clone() {
                    pageviews.insert((site.to_string(), p), row);
                }
            }
        }
    }
    let mut partial: Vec<Partial> = Vec::with_capacity(batches.len());
    for ((v, events), ids) in batches.iter().zip(&named) {
        let visitor = visitors
            .get(&(v.site_id.clone(), v.visitor_id.clone()))
            .cloned()
            .ok_or_else(|| Error::internal("a locked visitor's row was not read back"))?;
        let stored: Vec<EventRow> =
            ids.iter().filter_map(|p| pageviews.get(&(v.site_id.clone(), p.clone())).cloned()).collect();
        let engaged = engaged_sessions(events, &stored, &visitor.session_id);
        let kept = v.kept_session.clone().filter(|k| !visitor.session_id.is_empty() && k.row.id == visitor.session_id);
        partial.push(Partial { visitor, kept, stored, engaged });
    }
    // The kept sessions' stored versions (on PostgreSQL read now, after the
    // lock): a kept row stands in for its session only while they agree
    // (rule STORE-12).
    if !conn.is_sqlite() {
        let mut to_confirm: Vec<String> =
            partial.iter().filter_map(|p| p.kept.as_ref().map(|k| k.row.id.clone())).collect();
        to_confirm.sort();
        to_confirm.dedup();
        for chunk in to_confirm.chunks(CHUNK) {
            versions.extend(store::session_versions(conn, chunk)?.into_iter().map(|r| (r.id, r.version)));
        }
    }
    let confirmed = |p: &Partial| p.kept.as_ref().is_some_and(|k| versions.get(&k.row.id) == Some(&k.version));
    // Every other current session, and those engagements extend, read with
    // their versions in one statement per chunk.
    let mut session_ids: Vec<String> = Vec::new();
    for p in &partial {
        if !confirmed(p) && !p.visitor.session_id.is_empty() {
            session_ids.push(p.visitor.session_id.clone());
        }
        session_ids.extend(p.engaged.iter().cloned());
    }
    session_ids.sort();
    session_ids.dedup();
    let mut sessions: HashMap<String, (SessionRow, i64)> = HashMap::new();
    for chunk in session_ids.chunks(CHUNK) {
        for r in store::versioned_sessions(conn, chunk)? {
            sessions.insert(r.session.id.clone(), (r.session, r.version));
        }
    }
    // The current sessions, kept or read, each with its version.
    let mut currents: Vec<Current> = Vec::with_capacity(batches.len());
    for p in &partial {
        currents.push(match &p.kept {
            Some(k) if confirmed(p) => (Some(k.row.clone()), Some(k.version), SessionSource::Kept),
            _ if p.visitor.session_id.is_empty() => (None, None, SessionSource::None),
            _ => match sessions.get(&p.visitor.session_id) {
                Some((row, version)) => (Some(row.clone()), Some(*version), SessionSource::Read),
                None => (None, None, SessionSource::Read),
            },
        });
    }
    // The goals the current sessions completed, where the batch can complete one.
    let mut goal_sessions: Vec<String> = Vec::new();
    let mut goals_by_batch = Vec::with_capacity(batches.len());
    for ((v, events), (current, _, _)) in batches.iter().zip(&currents) {
        let goals = defs.goals(conn, &v.site_id)?;
        if let Some(s) = current
            && lands(events)
            && !goals.is_empty()
        {
            goal_sessions.push(s.id.clone());
        }
        goals_by_batch.push(goals);
    }
    let mut completed: HashMap<String, Vec<String>> = HashMap::new();
    for (session, goal) in goal_store::goals_of_sessions(conn, &goal_sessions)? {
        completed.entry(session).or_default().push(goal);
    }
    let mut out = Vec::with_capacity(batches.len());
    for ((((v, events), p), (current, current_version, session_source)), goals) in
        batches.iter().zip(partial).zip(currents).zip(goals_by_batch)
    {
        let Partial { visitor, stored, engaged, .. } = p;
        let engaged = engaged.iter().filter_map(|id| sessions.get(id).map(|(s, _)| (id.clone(), s.clone()))).collect();
        let affiliates = affiliates(conn, defs, &v.site_id, events)?;
        let lands = lands(events);
        let funnels = if lands { defs.funnels(conn, &v.site_id)? } else { Vec::new() };
        let session_goals = match &current {
            Some(s) if lands && !goals.is_empty() => {
                completed.get(&s.id).into_iter().flatten().map(|g| (s.id.clone(), g.clone())).collect()
            }
            _ => HashSet::new(),
        };
        out.push(Loaded {
            visitor,
            current,
            current_version,
            session_source,
            goals,
            stored,
            sessions: engaged,
            affiliates,
            session_goals,
            funnels,
        });
    }
    Ok(out)
}

/// The site's affiliates the batch's landings name: lowercased slug → id.
fn affiliates(
    conn: &mut AnyConnection,
    defs: &mut Definitions,
    site_id: &str,
    events: &[Option<Incoming>],
) -> Result<HashMap<String, String>> {
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
    let mut out = HashMap::new();
    for slug in slugs {
        if let Some(id) = defs.affiliate(conn, site_id, &slug)? {
            out.insert(slug, id);
        }
    }
    Ok(out)
}
