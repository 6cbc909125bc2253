//! Route regrouping (ROUTE-04, ROUTE-05, ROUTE-08, ROUTE-09):
//! a change of a site's `routePatterns` queues a job; each step moves at most
//! `RASTRO_ROUTE_REGROUP_BATCH` rows whose route is still a raw path matching
//! the new list to that pattern's route (counters add, sets union, digests
//! merge), in one transaction, so every pageview counts once under its raw
//! path or its new route at any moment (rule ROUTE-09). The job's position is
//! a row: a restarted process goes on where the last step committed. Rows
//! already under a pattern (any pattern the site ever listed) never move.
//!
//! Phases, in order: the pending outbox (so rows applied later land under the
//! new route), events, sessions' entry routes, visitors' current routes, then
//! the rollups: breakdowns (pages, entry pages), page visitor sets, site-map
//! routes and transitions, vitals digests.

use std::collections::{BTreeMap, HashSet};

use roaring::RoaringBitmap;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::vocabulary::Dimension;
use crate::service::sites::routes;
use crate::store::analytics::regroup::{self as store, PathTable};
use crate::store::analytics::rollups as r;
use crate::store::analytics::site_map::{self as map, RouteCounts};
use crate::store::analytics::vitals::{self as vitals, Cell};
use crate::store::analytics::{set_pack_rows, site_packs};

const PHASES: i64 = 9;
/// The breakdown dimensions whose keys are routes (pages, entry pages).
const ROUTE_DIMENSIONS: [&str; 2] = [Dimension::Page.as_str(), Dimension::Entry.as_str()];
/// The visitor sets keyed by route: the pages' (entry pages keep no set).
const ROUTE_SETS: &str = Dimension::Page.as_str();
/// Candidate routes named in one step's `IN` list.
const MAX_KEYS: usize = 400;

/// Queues (or restarts with `new`) the site's job after a change of its list.
pub fn schedule(conn: &mut AnyConnection, site_id: &str, old: &[String], new: &[String], now: i64) -> Result<()> {
    if old == new {
        return Ok(());
    }
    // Whatever was listed stays a group: rows under it are never split (rule ROUTE-05).
    store::add_groups(conn, site_id, old)?;
    store::add_groups(conn, site_id, new)?;
    if new.is_empty() {
        return Ok(());
    }
    let list = serde_json::to_string(new).map_err(Error::internal)?;
    store::schedule(conn, site_id, &list, now)?;
    Ok(())
}

/// Whether the site's routes are being regrouped (`siteSettings`, `siteMap`).
pub fn regrouping(conn: &mut AnyConnection, site_id: &str) -> Result<bool> {
    Ok(store::active(conn, site_id)?)
}

/// Where a phase stands after a step.
enum Progress {
    More(String),
    Done,
}

/// The route a raw path takes under the job's list, if it moves.
struct Mover {
    patterns: Vec<String>,
    grouped: HashSet<String>,
}

impl Mover {
    fn target(&self, route: &str) -> Option<String> {
        if self.grouped.contains(route) {
            return None;
        }
        let to = routes::route_of(route, &self.patterns);
        (to != route).then_some(to)
    }

    fn candidates(&self, routes: Vec<String>) -> Vec<String> {
        let mut c: Vec<String> = routes.into_iter().filter(|r| self.target(r).is_some()).collect();
        c.sort();
        c.dedup();
        c.truncate(MAX_KEYS);
        c
    }
}

/// One step of the oldest job; answers whether a job was there.
pub fn step(conn: &mut AnyConnection, batch: usize) -> Result<bool> {
    let Some(job) = store::next_job(conn)? else { return Ok(false) };
    let m = Mover {
        patterns: serde_json::from_str(&job.patterns).unwrap_or_default(),
        grouped: store::groups(conn, &job.site_id)?.into_iter().collect(),
    };
    let site = job.site_id.as_str();
    let progress = match job.phase {
        0 => outbox(conn, &m, site, &job.cursor, batch)?,
        1 => path_table(conn, &m, &store::EVENTS, site, &job.cursor, batch)?,
        2 => path_table(conn, &m, &store::SESSIONS, site, &job.cursor, batch)?,
        3 => path_table(conn, &m, &store::VISITORS, site, &job.cursor, batch)?,
        4 => breakdowns(conn, &m, site, batch)?,
        5 => sets(conn, &m, site, batch)?,
        6 => map_routes(conn, &m, site, batch)?,
        7 => transitions(conn, &m, site, batch)?,
        _ => digests(conn, &m, site, batch)?,
    };
    match progress {
        Progress::More(cursor) => store::set_position(conn, site, job.phase, &cursor)?,
        Progress::Done if job.phase + 1 >= PHASES => store::finish(conn, site)?,
        Progress::Done => store::set_position(conn, site, job.phase + 1, "")?,
    };
    Ok(true)
}

fn outbox(conn: &mut AnyConnection, m: &Mover, site: &str, cursor: &str, batch: usize) -> Result<Progress> {
    let after = cursor.parse::<i64>().unwrap_or(0);
    let mut packs = site_packs(conn, site, after, batch)?;
    let taken: usize = packs.iter().map(|p| p.rows.len()).sum();
    for p in &mut packs {
        let mut moved = false;
        for o in &mut p.rows {
            let route = m.target(&o.route);
            let prev = o.prev_route.as_deref().and_then(|p| m.target(p));
            moved |= route.is_some() || prev.is_some();
            if let Some(route) = route {
                o.route = route;
            }
            if prev.is_some() {
                o.prev_route = prev;
            }
        }
        if moved {
            set_pack_rows(conn, p.id, &p.rows)?;
        }
    }
    Ok(match packs.last() {
        Some(last) if taken >= batch => Progress::More(last.id.to_string()),
        _ => Progress::Done,
    })
}

/// Rows that keep their raw path beside the route: a route equal to its path moves.
fn path_table(
    conn: &mut AnyConnection,
    m: &Mover,
    t: &PathTable,
    site: &str,
    cursor: &str,
    batch: usize,
) -> Result<Progress> {
    // The position: "<time> <key>" (the time 0 for a table without one); "" at the start.
    let (t0, key) = match cursor.split_once(' ') {
        Some((tm, k)) => (tm.parse::<i64>().unwrap_or(i64::MIN), k),
        None => (i64::MIN, ""),
    };
    let rows = store::path_rows(conn, t, site, (t0, key), batch)?;
    for row in &rows {
        if row.route == row.path
            && let Some(to) = m.target(&row.route)
        {
            store::set_route(conn, t, site, row, &to)?;
        }
    }
    Ok(match rows.last() {
        Some(last) if rows.len() >= batch => Progress::More(format!("{} {}", last.t, last.key)),
        _ => Progress::Done,
    })
}

/// A rollup phase is done when no row under a raw matching route is left.
fn more(n: usize, batch: usize) -> Progress {
    if n >= batch { Progress::More(String::new()) } else { Progress::Done }
}

fn breakdowns(conn: &mut AnyConnection, m: &Mover, site: &str, batch: usize) -> Result<Progress> {
    let keys = m.candidates(store::breakdown_keys(conn, site, &ROUTE_DIMENSIONS)?);
    if keys.is_empty() {
        return Ok(Progress::Done);
    }
    let rows = store::breakdowns(conn, site, &ROUTE_DIMENSIONS, &keys, batch)?;
    for row in &rows {
        let Some(to) = m.target(&row.key) else { continue };
        r::add_breakdown(conn, site, &row.tier, row.bucket, &row.dim, &to, row.count)?;
        store::delete_breakdown(conn, site, row)?;
    }
    Ok(more(rows.len(), batch))
}

fn sets(conn: &mut AnyConnection, m: &Mover, site: &str, batch: usize) -> Result<Progress> {
    let keys = m.candidates(store::set_keys(conn, site, ROUTE_SETS)?);
    if keys.is_empty() {
        return Ok(Progress::Done);
    }
    let rows = store::sets(conn, site, ROUTE_SETS, &keys, batch)?;
    for row in &rows {
        let Some(to) = m.target(&row.key) else { continue };
        let set = RoaringBitmap::deserialize_from(&row.bits[..]).map_err(Error::internal)?;
        super::unite_set(conn, (site, &row.tier, row.bucket, ROUTE_SETS, &to), &set)?;
        store::delete_set(conn, site, ROUTE_SETS, row)?;
    }
    Ok(more(rows.len(), batch))
}

fn map_routes(conn: &mut AnyConnection, m: &Mover, site: &str, batch: usize) -> Result<Progress> {
    let keys = m.candidates(store::distinct_routes(conn, store::MAP_ROUTES, site)?);
    if keys.is_empty() {
        return Ok(Progress::Done);
    }
    let rows = store::map_routes(conn, site, &keys, batch)?;
    for row in &rows {
        let Some(to) = m.target(&row.route) else { continue };
        let c = RouteCounts { views: row.views, entries: row.entries, continuations: row.continuations };
        map::add_route(conn, site, row.day, &to, &c)?;
        store::delete_map_route(conn, site, row.day, &row.route)?;
    }
    Ok(more(rows.len(), batch))
}

fn transitions(conn: &mut AnyConnection, m: &Mover, site: &str, batch: usize) -> Result<Progress> {
    let keys = m.candidates(store::transition_routes(conn, site)?);
    if keys.is_empty() {
        return Ok(Progress::Done);
    }
    let rows = store::transitions(conn, site, &keys, batch)?;
    for row in &rows {
        let from = m.target(&row.from_route).unwrap_or_else(|| row.from_route.clone());
        let to = m.target(&row.to_route).unwrap_or_else(|| row.to_route.clone());
        // Delete first: the new pair may be the same key only when nothing moved (never here).
        store::delete_transition(conn, site, row)?;
        map::add_transition(conn, site, row.day, &from, &to, row.count)?;
    }
    Ok(more(rows.len(), batch))
}

fn digests(conn: &mut AnyConnection, m: &Mover, site: &str, batch: usize) -> Result<Progress> {
    let keys = m.candidates(store::distinct_routes(conn, store::DIGEST_ROUTES, site)?);
    if keys.is_empty() {
        return Ok(Progress::Done);
    }
    let rows = store::digests(conn, site, &keys, batch)?;
    let mut moved = Vec::new();
    let mut into: BTreeMap<Cell, BTreeMap<i64, i64>> = BTreeMap::new();
    for row in &rows {
        let Some(to) = m.target(&row.route) else { continue };
        let cell = |route: &str| Cell {
            site_id: site.to_string(),
            day: row.day,
            metric: row.metric.clone(),
            route: route.to_string(),
            device: row.device.clone(),
        };
        moved.push(cell(&row.route));
        let target = into.entry(cell(&to)).or_default();
        for (value, count) in vitals::unpack(&row.pairs) {
            *target.entry(value).or_default() += count;
        }
    }
    vitals::delete(conn, &moved.iter().collect::<Vec<_>>())?;
    vitals::add(conn, &into)?;
    Ok(more(rows.len(), batch))
}
