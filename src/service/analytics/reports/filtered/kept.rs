//! The sessions and events a set of filters keeps (rules REP-06, REP-07): a
//! session rule keeps the sessions that match it and everything in them; an
//! event rule keeps the sessions holding at least one event of the range
//! that matches it, and then counts only the events that match it among
//! those of its kind (a page rule the pageviews, an event rule the custom
//! events; a goal or property rule both).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::dims::{Context, Dim, EventDim, GoalDef, Rule, SessionDim};
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::definitions::Matcher;
use crate::service::analytics::ingest::session_figures::MAX_SESSION_MS;
use crate::service::analytics::vocabulary::EventKind;
use crate::store::analytics::definitions as defs_store;
use crate::store::analytics::people as people_store;
use crate::store::analytics::{self as store, EventRow, Sale, SessionRow};
use crate::store::leads::sites::SiteRow;

/// A range's rows after the filters.
pub struct Kept {
    pub cx: Context,
    /// The kept sessions that have an event in the range, by id.
    pub sessions: HashMap<String, SessionRow>,
    /// The range's events of kept sessions, each with whether it counts.
    pub events: Vec<(EventRow, bool)>,
    /// The ledger's rows of the range in kept sessions.
    pub sales: Vec<Sale>,
}

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

/// Reads `[from, to]` of `sites` and applies `rules`; `dims` are the other
/// dimensions the caller reads (a breakdown's; `goal` for the goal counts),
/// so their context is loaded.
pub fn read(
    conn: &mut AnyConnection,
    sites: &[SiteRow],
    (from, to): (i64, i64),
    rules: &[Rule],
    dims: &[Dim],
) -> Result<Kept> {
    let ids: Vec<String> = sites.iter().map(|s| s.id.clone()).collect();
    let events = store::events_between(conn, &ids, from, to).map_err(db)?;
    // A session with an event in the range started at most its longest length before.
    let mut sessions: HashMap<String, SessionRow> =
        store::sessions_started_between(conn, &ids, from - MAX_SESSION_MS, to)
            .map_err(db)?
            .into_iter()
            .map(|s| (s.id.clone(), s))
            .collect();
    let cx = context(conn, sites, sessions.values(), rules, dims)?;
    let (session_rules, event_rules): (Vec<&Rule>, Vec<&Rule>) =
        rules.iter().partition(|r| matches!(r.dim, Dim::Session(_)));
    // Each event rule must hold for one of the session's events in the range.
    let mut held: HashMap<&str, Vec<bool>> = HashMap::new();
    for e in &events {
        let h = held.entry(e.session_id.as_str()).or_insert_with(|| vec![false; event_rules.len()]);
        for (i, r) in event_rules.iter().enumerate() {
            h[i] |= cx.event_passes(r, e) == Some(true);
        }
    }
    let session_rules: Vec<Rule> = session_rules.into_iter().cloned().collect();
    let kept: HashSet<String> = held
        .iter()
        .filter(|(id, h)| {
            h.iter().all(|x| *x) && sessions.get(**id).is_some_and(|s| cx.session_passes(&session_rules, s))
        })
        .map(|(id, _)| id.to_string())
        .collect();
    sessions.retain(|id, _| kept.contains(id));
    let events = events
        .into_iter()
        .filter(|e| kept.contains(&e.session_id))
        .map(|e| {
            let counts = event_rules.iter().all(|r| cx.event_passes(r, &e) != Some(false));
            (e, counts)
        })
        .collect();
    let sales = store::sales_between(conn, &ids, from, to)
        .map_err(db)?
        .into_iter()
        .filter(|s| s.session_id.as_ref().is_some_and(|id| kept.contains(id)))
        .collect();
    Ok(Kept { cx, sessions, events, sales })
}

/// What the dimensions in `rules` and `dims` read beside the rows of
/// `sessions` (of `sites`): the route patterns always, the goals and who is
/// identified only when a dimension needs them.
pub fn context<'a>(
    conn: &mut AnyConnection,
    sites: &[SiteRow],
    sessions: impl Iterator<Item = &'a SessionRow>,
    rules: &[Rule],
    dims: &[Dim],
) -> Result<Context> {
    let uses = |want: &dyn Fn(&Dim) -> bool| rules.iter().map(|r| &r.dim).chain(dims).any(want);
    let mut cx = Context::default();
    for site in sites {
        cx.patterns.insert(site.id.clone(), serde_json::from_str(&site.route_patterns).unwrap_or_default());
        if !uses(&|d| *d == Dim::Event(EventDim::Goal)) {
            continue;
        }
        let goals = defs_store::goals(conn, &site.id, false).map_err(db)?;
        let defs = goals.iter().map(|g| GoalDef {
            id: g.id.clone(),
            key: g.key.clone(),
            name: g.name.clone(),
            matcher: Matcher::of_goal(g),
        });
        cx.goals.insert(site.id.clone(), defs.collect());
    }
    if uses(&|d| *d == Dim::Session(SessionDim::Identified)) {
        cx.identified = identified(conn, sessions)?;
    }
    Ok(cx)
}

/// The sessions among `sessions` that pass `rules` (REP-06, REP-07): every
/// session rule, and for each event rule one of the session's events.
/// For the functions that list sessions (`listSessions`, `liveVisitors`).
pub fn passing(
    conn: &mut AnyConnection,
    sites: &[SiteRow],
    sessions: Vec<SessionRow>,
    rules: &[Rule],
) -> Result<Vec<SessionRow>> {
    if rules.is_empty() {
        return Ok(sessions);
    }
    let cx = context(conn, sites, sessions.iter(), rules, &[])?;
    let (session_rules, event_rules): (Vec<Rule>, Vec<Rule>) =
        rules.iter().cloned().partition(|r| matches!(r.dim, Dim::Session(_)));
    let mut kept: Vec<SessionRow> = sessions.into_iter().filter(|s| cx.session_passes(&session_rules, s)).collect();
    if event_rules.is_empty() || kept.is_empty() {
        return Ok(kept);
    }
    let ids: Vec<String> = kept.iter().map(|s| s.id.clone()).collect();
    let mut held: HashMap<String, Vec<bool>> = HashMap::new();
    for chunk in ids.chunks(400) {
        for e in store::events_of_sessions(conn, chunk).map_err(db)? {
            let h = held.entry(e.session_id.clone()).or_insert_with(|| vec![false; event_rules.len()]);
            for (i, r) in event_rules.iter().enumerate() {
                h[i] |= cx.event_passes(r, &e) == Some(true);
            }
        }
    }
    kept.retain(|s| held.get(&s.id).is_some_and(|h| h.iter().all(|x| *x)));
    Ok(kept)
}

impl Kept {
    /// Per (site, goal id): the counted events that complete the goal, and the
    /// kept sessions started in `[from, to]` holding one (a goal's
    /// `completions` and `sessions`, counted from the kept rows). The goals
    /// are there when [`read`] was given the `goal` dimension.
    pub fn goal_counts(&self, (from, to): (i64, i64)) -> BTreeMap<(String, String), (i64, i64)> {
        let mut per: BTreeMap<(String, String), (i64, HashSet<&str>)> = BTreeMap::new();
        for (e, _) in self.events.iter().filter(|(_, counted)| *counted) {
            let Some(kind) = EventKind::parse(&e.kind) else { continue };
            let goals = self.cx.goals.get(&e.site_id).into_iter().flatten();
            for g in goals.filter(|g| g.matcher.matches(kind, &e.path, e.name.as_deref())) {
                let entry = per.entry((e.site_id.clone(), g.id.clone())).or_default();
                entry.0 += 1;
                if self.sessions.get(&e.session_id).is_some_and(|s| (from..=to).contains(&s.started_at)) {
                    entry.1.insert(&e.session_id);
                }
            }
        }
        per.into_iter().map(|(k, (completions, sessions))| (k, (completions, sessions.len() as i64))).collect()
    }

    /// The kept sessions started in `[from, to]`.
    pub fn started(&self, (from, to): (i64, i64)) -> impl Iterator<Item = &SessionRow> {
        self.sessions.values().filter(move |s| (from..=to).contains(&s.started_at))
    }
}

/// The identified among these sessions' visitors: a person's own id (with
/// a profile) or an alias of one.
fn identified<'a>(
    conn: &mut AnyConnection,
    sessions: impl Iterator<Item = &'a SessionRow>,
) -> Result<HashSet<(String, String)>> {
    let mut by_site: HashMap<&str, HashSet<&str>> = HashMap::new();
    for s in sessions {
        by_site.entry(&s.site_id).or_default().insert(&s.visitor_id);
    }
    let mut out = HashSet::new();
    for (site, visitors) in by_site {
        let visitors: Vec<String> = visitors.into_iter().map(str::to_string).collect();
        for chunk in visitors.chunks(400) {
            for a in people_store::aliases_in(conn, site, chunk).map_err(db)? {
                out.insert((site.to_string(), a.alias_id));
            }
            for p in people_store::profiles(conn, site, chunk).map_err(db)? {
                out.insert((site.to_string(), p.visitor_id));
            }
        }
    }
    Ok(out)
}
