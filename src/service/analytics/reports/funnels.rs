//! `funnelsReport` (rules ARPT-11 to ARPT-13) and
//! the live rows' `funnel` (OVR-13), from the funnel step index; and the
//! index's rebuild after a funnel changes, in bounded steps.
//!
//! Funnels count visitors: a visitor's events matching any step, ordered by
//! `(t, eventId)`; from each step-1 event at t₁, step k is the earliest later
//! event matching step k within `windowMs` of t₁, one event per step; the
//! visitor's level is its best over its step-1 events.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc::{Receiver, sync_channel};

use diesel::QueryResult;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::definitions::{Matcher, Step, steps_of};
use crate::service::analytics::reports::affiliates::check_days;
use crate::service::analytics::reports::filtered::{dims, kept};
use crate::service::analytics::reports::numbers::{Fixed, rate};
use crate::service::analytics::reports::{approximate, zone};
use crate::service::analytics::vocabulary::EventKind;
use crate::service::reporting::compare::{self, Changes, Compare};
use crate::service::reporting::filters::Filter;
use crate::service::sites;
use crate::store::analytics::EventRow;
use crate::store::analytics::definitions::{self as defs_store, FunnelRow};
use crate::store::analytics::funnels::{self as store, Entry, StepRow, VisitorDay};
use crate::store::analytics::people as people_store;

pub const MAX_FUNNEL_DAYS: i64 = 90;

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

/// The steps of `steps` an event matches, as bits.
pub fn mask(steps: &[Step], kind: EventKind, path: &str, name: Option<&str>) -> i64 {
    steps.iter().enumerate().filter(|(_, s)| s.matcher.matches(kind, path, name)).fold(0, |m, (i, _)| m | (1 << i))
}

/// The index rows an event adds for the site's funnels.
pub fn rows_for(funnels: &[(String, Vec<Step>)], e: &EventRow) -> Vec<StepRow> {
    funnels
        .iter()
        .filter_map(|(id, steps)| {
            // A stored event is a pageview or a custom event; anything else matches no step.
            let m = EventKind::parse(&e.kind).map_or(0, |kind| mask(steps, kind, &e.path, e.name.as_deref()));
            (m != 0).then(|| StepRow {
                funnel_id: id.clone(),
                visitor_id: e.visitor_id.clone(),
                at: e.occurred_at,
                event_id: e.id.clone(),
                steps: m,
            })
        })
        .collect()
}

/// A visitor's level in a funnel of `n` steps (§5.4 "Funnel match"), from
/// its rows ordered by `(at, event_id)`.
pub fn level(rows: &[(i64, i64)], n: usize, window_ms: i64) -> usize {
    let mut best = 0;
    for (i, &(t1, m1)) in rows.iter().enumerate() {
        if m1 & 1 == 0 {
            continue;
        }
        let mut reached = 1;
        for &(t, m) in &rows[i + 1..] {
            if reached == n || t - t1 > window_ms {
                break;
            }
            if m & (1 << reached) != 0 {
                reached += 1;
            }
        }
        best = best.max(reached);
        if best == n {
            break;
        }
    }
    best
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FunnelsArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    /// The same report over an earlier range beside this one (REPORTING §2).
    #[serde(default)]
    pub compare: Option<Compare>,
    /// Whole local days of this IANA zone, or `"site"` (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Only the visitors' steps in the sessions that pass these (REPORTING §3).
    #[serde(default)]
    pub filters: Vec<Filter>,
}

/// An event of a funnel as the event-derived paths read it (a kept
/// session's, or the events' own while the index is rebuilt).
pub(super) struct StepHit {
    visitor_id: String,
    at: i64,
    steps: i64,
}

/// Each funnel's rows in the range from the events of the kept sessions
/// (REP-06, REP-07): every event of a kept session can be a step, as the
/// index would have it, in `(at, eventId)` order.
fn kept_rows(funnels: &[(String, Vec<Step>)], kept: &kept::Kept) -> HashMap<String, Vec<StepHit>> {
    let mut events: Vec<&EventRow> = kept.events.iter().map(|(e, _)| e).collect();
    events.sort_by(|x, y| x.occurred_at.cmp(&y.occurred_at).then_with(|| x.id.as_bytes().cmp(y.id.as_bytes())));
    let mut out: HashMap<String, Vec<StepHit>> = HashMap::new();
    for e in events {
        for r in rows_for(funnels, e) {
            out.entry(r.funnel_id).or_default().push(StepHit { visitor_id: r.visitor_id, at: r.at, steps: r.steps });
        }
    }
    out
}

/// A funnel's events in a range as its levels read them: each one's person
/// number, time and step bits, each person's in `(at, eventId)` order (how
/// the persons interleave does not matter); `incomplete` when
/// the range held more than the row cap (then the first `cap` are kept,
/// so every figure is a lower bound: ARPT-13).
pub(super) struct Hits {
    pub rows: Vec<(u32, i64, i64)>,
    pub incomplete: bool,
}

impl Hits {
    /// Hits of rows already in `(at, eventId)` order.
    pub(super) fn of(
        conn: &mut AnyConnection,
        persons: &mut Persons,
        site_id: &str,
        mut rows: Vec<StepHit>,
        cap: usize,
    ) -> Result<Hits> {
        let incomplete = rows.len() > cap;
        rows.truncate(cap);
        let who = persons.of_visitors(conn, site_id, rows.iter().map(|r| r.visitor_id.as_str()))?;
        Ok(Hits { rows: who.into_iter().zip(rows).map(|(p, r)| (p, r.at, r.steps)).collect(), incomplete })
    }
}

/// Where a report's funnels get their index rows: read when asked, or read
/// ahead on a second connection, a funnel or two before the one being
/// counted (on PostgreSQL a funnel's rows are most of a report's wait, and
/// counting the last one's meanwhile hides it).
pub(super) enum Days {
    Asked,
    Ahead(Receiver<(String, QueryResult<Vec<VisitorDay>>)>),
}

impl Days {
    /// Reads `funnels`' rows of the range on `helper`, in their order, for
    /// `body` to take through its [`Days`]; without a helper (or with one
    /// funnel) the rows are read when asked. The reader stops when `body`
    /// ends, whatever it took.
    pub(super) fn ahead<T>(
        helper: Option<&mut AnyConnection>,
        funnels: Vec<String>,
        (from, to): (i64, i64),
        cap: usize,
        body: impl FnOnce(&mut Days) -> Result<T>,
    ) -> Result<T> {
        let Some(helper) = helper.filter(|_| funnels.len() > 1) else { return body(&mut Days::Asked) };
        std::thread::scope(|s| {
            let (tx, rx) = sync_channel(1);
            s.spawn(move || {
                for id in funnels {
                    let rows = Days::read(helper, &id, (from, to), cap);
                    if tx.send((id, rows)).is_err() {
                        break;
                    }
                }
            });
            body(&mut Days::Ahead(rx))
        })
    }

    /// A funnel's rows of the range's UTC days, `cap + 1` at most (one past
    /// the cap tells the report it was passed).
    fn read(
        conn: &mut AnyConnection,
        funnel_id: &str,
        (from, to): (i64, i64),
        cap: usize,
    ) -> QueryResult<Vec<VisitorDay>> {
        store::days_between(conn, funnel_id, store::day_of(from), store::day_of(to), cap + 1)
    }

    /// The rows of `f` in the range, `cap + 1` at most.
    fn of(&mut self, conn: &mut AnyConnection, f: &FunnelRow, a: &FunnelsArgs, cap: usize) -> Result<Vec<VisitorDay>> {
        match self {
            Days::Asked => Days::read(conn, &f.id, (a.from, a.to), cap).map_err(db),
            Days::Ahead(rx) => match rx.recv() {
                Ok((id, rows)) if id == f.id => rows.map_err(db),
                _ => Err(Error::internal(format!("the rows read ahead are not funnel {}'s", f.id))),
            },
        }
    }
}

/// A funnel's events in the range: from the index, or from the events
/// while its index is rebuilt (the same rows, read slower: rule ARPT-13).
#[allow(clippy::too_many_arguments)]
pub(super) fn rows_in_range(
    conn: &mut AnyConnection,
    persons: &mut Persons,
    days: &mut Days,
    f: &FunnelRow,
    steps: &[Step],
    rebuilding: bool,
    a: &FunnelsArgs,
    cap: usize,
) -> Result<Hits> {
    if !rebuilding {
        let days = days.of(conn, f, a, cap)?;
        return indexed(conn, persons, days, f, a, cap);
    }
    let mut out = Vec::new();
    let (mut after_at, mut after_id) = (a.from - 1, String::from("\u{10FFFF}"));
    loop {
        let events = store::events_after(conn, &f.site_id, after_at, &after_id, 5_000).map_err(db)?;
        let done = events.len() < 5_000;
        for e in events.iter().take_while(|e| e.occurred_at <= a.to) {
            out.extend(rows_for(&[(f.id.clone(), steps.to_vec())], e).into_iter().map(|r| StepHit {
                visitor_id: r.visitor_id,
                at: r.at,
                steps: r.steps,
            }));
        }
        match events.last() {
            Some(last) if !done && last.occurred_at <= a.to && out.len() <= cap => {
                (after_at, after_id) = (last.occurred_at, last.id.clone());
            }
            _ => break,
        }
    }
    Hits::of(conn, persons, &f.site_id, out, cap)
}

/// A funnel's events in the range from its packed index: the rows of the
/// range's UTC days (one per visitor and day), each visitor numbered once
/// per row, the entries inside the range grouped by person and each
/// person's put in `(at, eventId)` order, an event appended twice read once.
/// Grouping first leaves a sort per person, of a few entries, where one
/// sort of every entry by time was most of the daemon's share of the
/// report. Past the cap, the rows of the last day read (perhaps not all of
/// them) are left out and the earliest `cap` events of the days before are
/// kept.
fn indexed(
    conn: &mut AnyConnection,
    persons: &mut Persons,
    mut days: Vec<VisitorDay>,
    f: &FunnelRow,
    a: &FunnelsArgs,
    cap: usize,
) -> Result<Hits> {
    let mut incomplete = false;
    if days.len() > cap {
        incomplete = true;
        let last = days.last().map(|d| d.day);
        days.retain(|d| Some(d.day) != last);
    }
    let who = persons.of_visitors(conn, &f.site_id, days.iter().map(|d| d.visitor_id.as_str()))?;
    let mut read: Vec<(u32, Entry<'_>)> = Vec::new();
    for (d, p) in days.iter().zip(who) {
        read.extend(store::unpack(&d.entries).filter(|e| e.at >= a.from && e.at <= a.to).map(|e| (p, e)));
    }
    let mut entries = by_person(&read, |(p, _)| *p);
    drop(read);
    for run in entries.chunk_by_mut(|x, y| x.0 == y.0) {
        run.sort_unstable_by_key(|(_, e)| e.key());
    }
    entries.dedup_by_key(|(p, e)| (*p, e.key()));
    if entries.len() > cap {
        incomplete = true;
        entries.sort_unstable_by_key(|(_, e)| e.key());
        entries.truncate(cap);
    }
    Ok(Hits { rows: entries.into_iter().map(|(p, e)| (p, e.at, e.steps)).collect(), incomplete })
}

/// `items` grouped by person number, each person's in their order: a
/// counting sort, linear in the items and the persons (whose numbers are
/// dense: [`Persons`]).
fn by_person<T: Copy>(items: &[T], person: impl Fn(&T) -> u32) -> Vec<T> {
    let persons = items.iter().map(&person).max().map_or(0, |m| m as usize + 1);
    let mut next = vec![0usize; persons + 1];
    for item in items {
        next[person(item) as usize + 1] += 1;
    }
    for i in 1..next.len() {
        next[i] += next[i - 1];
    }
    let mut out = items.to_vec();
    for item in items {
        let at = &mut next[person(item) as usize];
        out[*at] = *item;
        *at += 1;
    }
    out
}

/// The visitors of one report's rows as dense numbers, each alias numbered
/// as its person, kept across the report's funnels (their rows name mostly
/// the same visitors): one hash lookup per row, and the aliases of each id
/// looked up once, 400 to a statement.
#[derive(Default)]
pub(super) struct Persons {
    number: HashMap<String, u32>,
    /// Per visitor number, the number of its person (itself unless an alias).
    person: Vec<u32>,
}

impl Persons {
    /// Each visitor's person number, in the visitors' order.
    pub(super) fn of_visitors<'a>(
        &mut self,
        conn: &mut AnyConnection,
        site_id: &str,
        visitors: impl Iterator<Item = &'a str>,
    ) -> Result<Vec<u32>> {
        let mut new: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for v in visitors {
            let n = match self.number.get(v) {
                Some(n) => *n,
                None => {
                    let n = self.intern(v);
                    new.push(v.to_string());
                    n
                }
            };
            out.push(n);
        }
        for chunk in new.chunks(400) {
            for a in people_store::aliases_in(conn, site_id, chunk).map_err(db)? {
                let (alias, person) = (self.intern(&a.alias_id), self.intern(&a.visitor_id));
                self.person[alias as usize] = person;
            }
        }
        Ok(out.into_iter().map(|n| self.person[n as usize]).collect())
    }

    fn intern(&mut self, id: &str) -> u32 {
        if let Some(n) = self.number.get(id) {
            return *n;
        }
        let n = self.person.len() as u32;
        self.number.insert(id.to_string(), n);
        self.person.push(n);
        n
    }
}

/// Each person's level in a funnel of `n` steps over its rows `(person, at,
/// steps)`, each person's in `(at, eventId)` order: the rows are grouped by
/// person keeping that order (so an alias's rows and its person's
/// interleave as they happened), one level per person, by person number.
pub(super) fn levels(rows: &[(u32, i64, i64)], n: usize, window_ms: i64) -> Vec<usize> {
    let mut run: Vec<(i64, i64)> = Vec::new();
    by_person(rows, |r| r.0)
        .chunk_by(|x, y| x.0 == y.0)
        .map(|person| {
            run.clear();
            run.extend(person.iter().map(|&(_, at, steps)| (at, steps)));
            level(&run, n, window_ms)
        })
        .collect()
}

/// One step of a funnel in the report.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunnelStepRow {
    pub index: usize,
    pub label: String,
    pub matcher: Matcher,
    pub visitors: i64,
    pub dropoff: i64,
    pub conversion_rate: Option<Fixed>,
    pub step_conversion_rate: Option<Fixed>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunnelRowReport {
    pub funnel_id: String,
    pub key: String,
    pub name: String,
    pub window_ms: i64,
    pub entered: i64,
    pub completed: i64,
    pub conversion_rate: Option<Fixed>,
    pub steps: Vec<FunnelStepRow>,
    /// With `compare`: this funnel's figures over the earlier range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<FunnelFigures>,
    /// With `compare`: each figure's change against the earlier range, as a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
}

/// What a compared funnel sets side by side.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunnelFigures {
    pub entered: i64,
    pub completed: i64,
    pub conversion_rate: Option<Fixed>,
}

impl FunnelRowReport {
    fn figures(&self) -> FunnelFigures {
        FunnelFigures { entered: self.entered, completed: self.completed, conversion_rate: self.conversion_rate }
    }
}

/// The earlier range of a compared `funnelsReport` (each funnel's figures are on its row).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunnelsComparison {
    pub from: i64,
    pub to: i64,
    pub incomplete: bool,
}

/// The `funnelsReport` answer (§5.4).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunnelsReport {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    /// A funnel passed the row cap: its figures are lower bounds (ARPT-13).
    pub incomplete: bool,
    pub funnels: Vec<FunnelRowReport>,
    /// With `timezone`: the zone whose days the range is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// With `compare`: the earlier range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<FunnelsComparison>,
    /// With `filters`: the days whose figures read events retention has deleted (REPORTING §1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate_days: Option<Vec<i64>>,
}

/// A live row's furthest funnel (rule OVR-13).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LiveFunnel {
    pub funnel_id: String,
    pub key: String,
    pub step: usize,
    pub steps: usize,
}

pub(super) fn funnel_report(f: &FunnelRow, steps: &[Step], levels: &[usize]) -> FunnelRowReport {
    let n = steps.len();
    let reached = |i: usize| levels.iter().filter(|l| **l >= i).count() as i64;
    let entered = reached(1);
    let completed = reached(n);
    let rows = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let index = i + 1;
            let v = reached(index);
            let previous = if index == 1 { entered } else { reached(index - 1) };
            FunnelStepRow {
                index,
                label: s.label.clone(),
                matcher: s.matcher.clone(),
                visitors: v,
                dropoff: if index == 1 { 0 } else { previous - v },
                conversion_rate: rate(v, entered),
                step_conversion_rate: rate(v, previous),
            }
        })
        .collect();
    FunnelRowReport {
        funnel_id: f.id.clone(),
        key: f.key.clone(),
        name: f.name.clone(),
        window_ms: f.window_ms,
        entered,
        completed,
        conversion_rate: rate(completed, entered),
        steps: rows,
        comparison: None,
        change: None,
    }
}

/// `funnelsReport`: complete UTC days, at most 90 (rule ARPT-02); past the
/// row cap, `incomplete` and lower bounds (ARPT-13). With a `helper`
/// connection the funnels' index rows are read on it ahead of their
/// counting (the same rows, the same answer).
pub fn funnels_report(
    conn: &mut AnyConnection,
    mut helper: Option<&mut AnyConnection>,
    a: FunnelsArgs,
    cap: usize,
) -> Result<FunnelsReport> {
    // Step rows keep their instant, so a zone's days are only a check of the range.
    let zone = zone::of_site(conn, &a.site_id, a.timezone.as_deref(), (a.from, a.to), MAX_FUNNEL_DAYS, || {
        check_days(a.from, a.to, MAX_FUNNEL_DAYS)
    })?;
    if let Some(compare) = a.compare {
        let (from, to) = compare.range_in(zone, a.from, a.to)?;
        let earlier = FunnelsArgs { from, to, compare: None, ..a.clone() };
        let before = funnels_report(conn, helper.as_deref_mut(), earlier, cap)?;
        let mut main = funnels_report(conn, helper, FunnelsArgs { compare: None, ..a }, cap)?;
        for f in &mut main.funnels {
            if let Some(then) = before.funnels.iter().find(|b| b.funnel_id == f.funnel_id).map(FunnelRowReport::figures)
            {
                f.change = Some(compare::changes_of(&f.figures(), &then));
                f.comparison = Some(then);
            }
        }
        main.comparison = Some(FunnelsComparison { from, to, incomplete: before.incomplete });
        return Ok(main);
    }
    let rules = dims::rules(&a.filters)?;
    let site = sites::require(conn, &a.site_id)?;
    let mut funnels = defs_store::funnels(conn, &a.site_id).map_err(db)?;
    funnels.sort_by(|x, y| x.key.cmp(&y.key));
    let rebuilding = store::rebuilding(conn, &a.site_id).map_err(db)?;
    // Filters read the kept sessions' events; otherwise the step index.
    let read = if rules.is_empty() { Vec::new() } else { vec![(a.from, a.to)] };
    let approximate_days = approximate::days(conn, std::slice::from_ref(&a.site_id), zone, (a.from, a.to), &read)?;
    let mut filtered = match rules.is_empty() {
        true => None,
        false => {
            let kept = kept::read(conn, std::slice::from_ref(&site), (a.from, a.to), &rules, &[])?;
            let defs: Vec<(String, Vec<Step>)> = funnels.iter().map(|f| (f.id.clone(), steps_of(f))).collect();
            Some(kept_rows(&defs, &kept))
        }
    };
    let mut incomplete = false;
    let mut out = Vec::new();
    let mut persons = Persons::default();
    let from_index = match filtered {
        Some(_) => Vec::new(),
        None => funnels.iter().filter(|f| !rebuilding.contains(&f.id)).map(|f| f.id.clone()).collect(),
    };
    Days::ahead(helper, from_index, (a.from, a.to), cap, |days| {
        for f in &funnels {
            let steps = steps_of(f);
            let hits = match filtered.as_mut() {
                Some(rows) => Hits::of(conn, &mut persons, &a.site_id, rows.remove(&f.id).unwrap_or_default(), cap)?,
                None => rows_in_range(conn, &mut persons, days, f, &steps, rebuilding.contains(&f.id), &a, cap)?,
            };
            incomplete |= hits.incomplete;
            out.push(funnel_report(f, &steps, &levels(&hits.rows, steps.len(), f.window_ms)));
        }
        Ok(())
    })?;
    Ok(FunnelsReport {
        site_id: a.site_id,
        from: a.from,
        to: a.to,
        incomplete,
        funnels: out,
        timezone: zone.map(|z| z.name().to_string()),
        comparison: None,
        approximate_days,
    })
}

/// The live rows' `funnel` (rule OVR-13): per (site, visitor) of `visits`,
/// the funnel it advanced furthest over its indexed events, ties by key.
/// Every site's funnels and step rows come with one read each, whatever the
/// sites. The answer may name pairs beyond `visits` (see `steps_of_visitors`).
pub fn live_funnels(
    conn: &mut AnyConnection,
    site_ids: &[String],
    visits: &[(String, String)],
) -> Result<HashMap<(String, String), LiveFunnel>> {
    let mut out = HashMap::new();
    if visits.is_empty() {
        return Ok(out);
    }
    let funnels: BTreeMap<String, (FunnelRow, usize)> = defs_store::funnels_of_sites(conn, site_ids)
        .map_err(db)?
        .into_iter()
        .map(|f| {
            let n = steps_of(&f).len();
            (f.id.clone(), (f, n))
        })
        .collect();
    if funnels.is_empty() {
        return Ok(out);
    }
    let rows = store::steps_of_visitors(conn, visits).map_err(db)?;
    let mut per: HashMap<(&str, &str), Vec<(i64, i64)>> = HashMap::new();
    for r in &rows {
        per.entry((r.visitor_id.as_str(), r.funnel_id.as_str())).or_default().push((r.at, r.steps));
    }
    // A funnel belongs to one site, so (its site, the visitor) is whose level it is.
    let mut best: HashMap<(&str, &str), (usize, &FunnelRow, usize)> = HashMap::new();
    for ((visitor, funnel_id), r) in &per {
        let Some((f, n)) = funnels.get(*funnel_id) else { continue };
        let l = level(r, *n, f.window_ms);
        if l == 0 {
            continue;
        }
        let who = (f.site_id.as_str(), *visitor);
        let better = match best.get(&who) {
            None => true,
            Some((bl, bf, _)) => l > *bl || (l == *bl && f.key < bf.key),
        };
        if better {
            best.insert(who, (l, f, *n));
        }
    }
    for ((site, visitor), (l, f, n)) in best {
        out.insert(
            (site.to_string(), visitor.to_string()),
            LiveFunnel { funnel_id: f.id.clone(), key: f.key.clone(), step: l, steps: n },
        );
    }
    Ok(out)
}

/// One step of one pending rebuild: the next `batch` events of the site
/// indexed, the position kept; answers how many events it read (0: none pending).
pub fn rebuild_step(conn: &mut AnyConnection, batch: usize) -> Result<usize> {
    let Some(r) = store::next_rebuild(conn).map_err(db)? else { return Ok(0) };
    let Some(f) = defs_store::funnels(conn, &r.site_id).map_err(db)?.into_iter().find(|f| f.id == r.funnel_id) else {
        store::end_rebuild(conn, &r.funnel_id).map_err(db)?;
        return Ok(1);
    };
    let events = store::events_after(conn, &r.site_id, r.after_at, &r.after_id, batch).map_err(db)?;
    let funnel = [(f.id.clone(), steps_of(&f))];
    let rows: Vec<StepRow> = events.iter().flat_map(|e| rows_for(&funnel, e)).collect();
    store::insert_steps(conn, &r.site_id, &rows).map_err(db)?;
    match events.last() {
        Some(last) if events.len() == batch => {
            store::move_rebuild(conn, &f.id, last.occurred_at, &last.id).map_err(db)?;
        }
        _ => {
            store::end_rebuild(conn, &f.id).map_err(db)?;
            // Its rows were written again over every day, wherever they fell.
            super::funnel_layout::restart(conn, &r.site_id)?;
        }
    }
    Ok(events.len().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    // rule: ARPT-11
    #[test]
    fn rows_are_grouped_by_person_keeping_each_persons_order() {
        // Persons 0..7 interleaved as a day's rows would be, times rising.
        let rows: Vec<(u32, i64, i64)> = (0..200).map(|i| ((i * 5 % 7) as u32, i64::from(i), 1 << (i % 3))).collect();
        let mut expected = rows.clone();
        expected.sort_by_key(|r| r.0);
        assert_eq!(by_person(&rows, |r| r.0), expected);
        assert!(by_person(&[] as &[(u32, i64, i64)], |r| r.0).is_empty());
        // Levels are per person: A then B for person 1 only, though person 2's B falls between.
        let (a, b) = (1, 2);
        let rows = [(1, 0, a), (2, 1, a), (2, 2, b), (1, 3, a), (0, 4, b), (1, 5, b)];
        assert_eq!(levels(&rows, 2, 10 * MIN), vec![0, 2, 2]);
        let rows = [(1, 0, b), (1, 1, a), (2, 2, b)];
        assert_eq!(levels(&rows, 2, 10 * MIN), vec![1, 0]);
    }

    // rule: ARPT-11
    #[test]
    fn a_visitor_reaches_the_steps_in_order_within_the_window_one_event_each() {
        // Steps A, B, C as bits 1, 2, 4.
        let (a, b, c) = (1, 2, 4);
        assert_eq!(level(&[(0, a), (1, b), (2, c)], 3, 10 * MIN), 3);
        // Out of order: B before A counts nothing past A.
        assert_eq!(level(&[(0, b), (1, a), (2, c)], 3, 10 * MIN), 1);
        // The window binds from t1: C too late.
        assert_eq!(level(&[(0, a), (MIN, b), (11 * MIN, c)], 3, 10 * MIN), 2);
        // A later step-1 event starts a better attempt.
        assert_eq!(level(&[(0, a), (20 * MIN, a), (21 * MIN, b), (22 * MIN, c)], 3, 10 * MIN), 3);
        // One event satisfies one step only: an event matching A and B is A here.
        assert_eq!(level(&[(0, a | b), (1, c)], 3, 10 * MIN), 1);
        assert_eq!(level(&[(0, a), (1, a | b), (2, c)], 3, 10 * MIN), 3);
        assert_eq!(level(&[(0, b), (1, c)], 3, 10 * MIN), 0);
    }
}
