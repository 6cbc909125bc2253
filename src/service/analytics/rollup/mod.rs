//! Applying the outbox to the rollups (rule STORE-04): a batch
//! of outbox rows is taken (locked and skipped by other processes on
//! PostgreSQL), its deltas coalesced per key, applied, and the batch deleted,
//! all in one transaction, so each accepted event counts exactly once, across
//! a kill -9 and across processes.

pub mod buckets;
pub mod month_tier;
pub mod regroup;
pub mod site_map;
pub mod vitals;

use std::collections::{BTreeMap, HashMap, HashSet};

use roaring::RoaringBitmap;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::vocabulary::{Change, Dimension, Tier};
use crate::store::analytics::conversions as conversion_store;
use crate::store::analytics::goals as goal_store;
use crate::store::analytics::rollups::{self as r, Counters};
use crate::store::analytics::{self as store, OutboxRow, RolledSession};
use buckets::bucket;

/// Adds keyed counts written outside the outbox (the ledger's campaign
/// rows, a matched lead's source and campaign) to the breakdowns of every
/// tier's bucket of `at`. Month rows before the site's `complete_from` are
/// the month build's (see `rollups::month_tiers`), so they are left to it.
/// `keyed` names each (dimension, key) once: one statement adds them all.
pub fn add_to_breakdowns(
    conn: &mut AnyConnection,
    site_id: &str,
    at: i64,
    keyed: &[(Dimension, &str, i64)],
) -> Result<()> {
    if keyed.is_empty() {
        return Ok(());
    }
    let month_from = r::month_tiers(conn, &[site_id.to_string()], true)?.get(site_id).copied().unwrap_or(0);
    let mut rows = Vec::with_capacity(Tier::ALL.len() * keyed.len());
    for &tier in Tier::ALL {
        let bucket = bucket(tier, at);
        if !tier.counted() && bucket < month_from {
            continue;
        }
        rows.extend(keyed.iter().map(|(dim, key, count)| r::BreakdownAdded {
            site_id,
            tier: tier.as_str(),
            bucket,
            dim: dim.as_str(),
            key,
            count: *count,
        }));
    }
    r::add_breakdowns(conn, &rows)?;
    Ok(())
}

/// Keys borrow the batch's rows and sessions: a batch adds to each key many
/// times, and an owned key cost two allocations per addition.
type SetKey<'a> = (&'a str, Tier, i64, Dimension, &'a str);

#[derive(Default)]
struct Deltas<'a> {
    counters: BTreeMap<(&'a str, Tier, i64), Counters>,
    breakdowns: BTreeMap<(&'a str, Tier, i64, Dimension, &'a str), i64>,
    sets: BTreeMap<SetKey<'a>, RoaringBitmap>,
    /// (completions, sessions) per (site, tier, bucket, goal).
    goals: BTreeMap<(&'a str, Tier, i64, &'a str), (i64, i64)>,
    /// Tagged sessions per (site, UTC day, affiliate).
    affiliates: BTreeMap<(&'a str, i64, &'a str), i64>,
    /// Per site, the first month its month rows are kept from (absent: 0).
    month_from: HashMap<String, i64>,
}

impl<'a> Deltas<'a> {
    /// Month rows of a month before the site's `complete_from` are left to
    /// the month build, which sums them from the day rows.
    fn skips(&self, site: &str, tier: Tier, b: i64) -> bool {
        tier == Tier::Month && b < self.month_from.get(site).copied().unwrap_or(0)
    }

    fn counter(&mut self, site: &'a str, tier: Tier, t: i64) -> &mut Counters {
        self.counters.entry((site, tier, bucket(tier, t))).or_default()
    }

    fn count(&mut self, site: &'a str, tier: Tier, t: i64, d: Dimension, key: Option<&'a str>) {
        let b = bucket(tier, t);
        if self.skips(site, tier, b) {
            return;
        }
        *self.breakdowns.entry((site, tier, b, d, key.unwrap_or(""))).or_default() += 1;
    }

    fn visitor(&mut self, site: &'a str, tier: Tier, t: i64, d: Dimension, key: &'a str, number: u32) {
        let b = bucket(tier, t);
        if self.skips(site, tier, b) {
            return;
        }
        self.sets.entry((site, tier, b, d, key)).or_default().insert(number);
    }

    /// Completions at the event's time, a session's first completion in the
    /// bucket of its start (§5.4 goal `completions` and `sessions`).
    fn goals(&mut self, o: &'a OutboxRow, tier: Tier) {
        for id in o.goals.as_deref().unwrap_or("").split_whitespace() {
            self.goals.entry((&o.site_id, tier, bucket(tier, o.at), id)).or_default().0 += 1;
        }
        for id in o.new_goals.as_deref().unwrap_or("").split_whitespace() {
            let key = (o.site_id.as_str(), tier, bucket(tier, o.session_start), id);
            self.goals.entry(key).or_default().1 += 1;
        }
    }

    /// The session's breakdowns, in the bucket of its start (rule OVR-04).
    fn session_opened(&mut self, s: &'a RolledSession, tier: Tier) {
        let t = s.started_at;
        self.count(&s.site_id, tier, t, Dimension::Entry, Some(&s.entry_route));
        self.count(&s.site_id, tier, t, Dimension::Source, Some(&s.source));
        self.count(&s.site_id, tier, t, Dimension::Referrer, s.referrer.as_deref());
        self.count(&s.site_id, tier, t, Dimension::Medium, Some(&s.medium));
        self.count(&s.site_id, tier, t, Dimension::Campaign, s.campaign.as_deref());
        self.count(&s.site_id, tier, t, Dimension::Country, s.country.as_deref());
        self.count(&s.site_id, tier, t, Dimension::Device, s.device.as_deref());
        self.count(&s.site_id, tier, t, Dimension::Browser, s.browser.as_deref());
    }
}

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

/// Applies the oldest outbox packs that make `limit` rows (whole packs, so
/// one more pack's rows at most); answers how many rows it applied.
pub fn apply(conn: &mut AnyConnection, limit: usize) -> Result<usize> {
    let packs = store::take_outbox(conn, limit).map_err(db)?;
    if packs.is_empty() {
        return Ok(0);
    }
    let pack_ids: Vec<i64> = packs.iter().map(|p| p.id).collect();
    let rows: Vec<OutboxRow> = packs.into_iter().flat_map(|p| p.rows).collect();
    let mut session_ids: Vec<String> = rows.iter().map(|o| o.session_id.clone()).collect();
    session_ids.sort();
    session_ids.dedup();
    let sessions: HashMap<String, RolledSession> =
        store::rolled_sessions(conn, &session_ids).map_err(db)?.into_iter().map(|s| (s.id.clone(), s)).collect();
    let numbers = numbers_of(conn, &rows)?;
    let mut site_ids: Vec<String> = rows.iter().map(|o| o.site_id.clone()).collect();
    site_ids.sort();
    site_ids.dedup();
    let mut d = Deltas { month_from: r::month_tiers(conn, &site_ids, true).map_err(db)?, ..Deltas::default() };
    // The (site, visitor number, hour, dimension, key) already added to a
    // set: every tier's bucket follows from the hour's, so a visitor seen
    // again in the same hour under the same key adds nothing to any tier (a
    // batch is mostly one visitor: one lookup here saves three map entries).
    let mut seen: HashSet<(&str, u32, i64, Dimension, &str)> = HashSet::new();
    // The sets a row adds its visitor to (reused: a row is a few dozen ns here).
    let mut sets: Vec<(Dimension, &str)> = Vec::with_capacity(3);
    for o in &rows {
        let session = sessions.get(&o.session_id);
        // Outbox rows hold a kind this version writes; an unknown one (a
        // newer writer's) still counts its session, as before.
        let change = Change::parse(&o.kind);
        // Only pageviews and custom events make a visitor count (rule OVR-06).
        let number = change
            .is_some_and(Change::counts_visitor)
            .then(|| numbers.get(&(o.site_id.as_str(), o.visitor_id.as_str())).copied())
            .flatten();
        sets.clear();
        if let Some(n) = number {
            sets.push((Dimension::All, ""));
            if change == Some(Change::Pageview) {
                sets.push((Dimension::Page, &o.route));
            }
            if let Some(s) = session {
                sets.push((Dimension::Source, &s.source));
            }
            let hour = bucket(Tier::Hour, o.at);
            sets.retain(|&(dim, key)| seen.insert((o.site_id.as_str(), n, hour, dim, key)));
        }
        // The month tier keeps breakdowns and visitor sets only.
        for &tier in Tier::ALL {
            let counted = tier.counted();
            if counted {
                let c = d.counter(&o.site_id, tier, o.session_start);
                c.sessions += o.new_session;
                c.bounces += o.d_bounces;
                c.duration_sum += o.d_duration;
            }
            if o.new_session == 1
                && let Some(s) = session
            {
                d.session_opened(s, tier);
                if tier == Tier::Day
                    && let Some(a) = &s.affiliate_id
                {
                    *d.affiliates.entry((&s.site_id, bucket(Tier::Day, s.started_at), a)).or_default() += 1;
                }
            }
            if counted {
                d.goals(o, tier);
            }
            match change {
                Some(Change::Pageview) => {
                    if counted {
                        d.counter(&o.site_id, tier, o.at).pageviews += 1;
                    }
                    d.count(&o.site_id, tier, o.at, Dimension::Page, Some(&o.route));
                }
                Some(Change::Event) => {
                    if counted {
                        d.counter(&o.site_id, tier, o.at).custom_events += 1;
                    }
                    d.count(&o.site_id, tier, o.at, Dimension::Event, o.name.as_deref());
                }
                Some(Change::Engagement) => {
                    if counted {
                        let c = d.counter(&o.site_id, tier, o.at);
                        c.engaged_sum += o.d_engaged_sum;
                        c.engaged_count += o.d_engaged_count;
                    }
                }
                // Vitals go to their digests (`vitals::apply`).
                Some(Change::Vital) | None => {}
            }
            // Every tier, the hour's included: an hourly overview counts
            // its pages' and sources' visitors from these sets.
            if let Some(n) = number {
                for &(dim, key) in &sets {
                    d.visitor(&o.site_id, tier, o.at, dim, key, n);
                }
            }
        }
    }
    // Each table's additions in one statement, in key order (so two
    // processes lock shared rows in the same order): on PostgreSQL a
    // statement per key was a round trip each, most of a rollup batch's.
    let counters: Vec<_> =
        d.counters.iter().map(|((site, tier, b), c)| r::CountersAdded::of(site, tier.as_str(), *b, c)).collect();
    r::add_counters(conn, &counters).map_err(db)?;
    let breakdowns: Vec<_> = d
        .breakdowns
        .iter()
        .map(|((site_id, tier, bucket, dim, key), count)| r::BreakdownAdded {
            site_id,
            tier: tier.as_str(),
            bucket: *bucket,
            dim: dim.as_str(),
            key,
            count: *count,
        })
        .collect();
    r::add_breakdowns(conn, &breakdowns).map_err(db)?;
    unite_sets(conn, &d.sets)?;
    let goals: Vec<_> = d
        .goals
        .iter()
        .map(|((site_id, tier, bucket, goal_id), (completions, sessions))| goal_store::CounterAdded {
            site_id,
            tier: tier.as_str(),
            bucket: *bucket,
            goal_id,
            completions: *completions,
            sessions: *sessions,
        })
        .collect();
    goal_store::add_counters(conn, &goals).map_err(db)?;
    for ((site, day, affiliate), sessions) in &d.affiliates {
        let add = conversion_store::AffiliateDay { sessions: *sessions, ..Default::default() };
        conversion_store::add_affiliate_day(conn, site, *day, affiliate, &add).map_err(db)?;
    }
    crate::service::analytics::rollup::site_map::apply(conn, &rows)?;
    crate::service::analytics::rollup::vitals::apply(conn, &rows, &sessions)?;
    store::delete_outbox(conn, &pack_ids).map_err(db)?;
    Ok(rows.len())
}

/// Unites each added set into the stored set at its key, exactly across
/// processes (STORE-04), with a few statements for all of them (on
/// PostgreSQL two per set were a round trip each): first every set is
/// inserted where its key holds none (a key stored, or being stored by an
/// uncommitted transaction, which the insert waits for, keeps its set), then
/// every stored set is read, row-locked, united and written back where it
/// grew. Both passes go in key order and every insert comes before every
/// lock, so two processes uniting shared sets wait for each other without a
/// cycle. A set we inserted reads back as itself and is not written again;
/// a set deleted between the passes (retention of its bucket) is united
/// alone.
fn unite_sets(conn: &mut AnyConnection, sets: &BTreeMap<SetKey<'_>, RoaringBitmap>) -> Result<()> {
    if sets.is_empty() {
        return Ok(());
    }
    let fresh: Vec<r::SetPut<'_>> = sets
        .iter()
        .map(|((site_id, tier, bucket, dim, key), added)| {
            Ok(r::SetPut {
                site_id,
                tier: tier.as_str(),
                bucket: *bucket,
                dim: dim.as_str(),
                key,
                bits: bytes_of(added)?,
            })
        })
        .collect::<Result<_>>()?;
    r::insert_absent_sets(conn, &fresh).map_err(db)?;
    let keys: Vec<r::SetAt<'_>> = fresh.iter().map(|p| (p.site_id, p.tier, p.bucket, p.dim, p.key)).collect();
    let mut stored: HashMap<(&str, &str, i64, &str, &str), RoaringBitmap> = HashMap::with_capacity(keys.len());
    let read = r::locked_sets(conn, &keys).map_err(db)?;
    for s in &read {
        let set = RoaringBitmap::deserialize_from(&s.bits[..]).map_err(Error::internal)?;
        stored.insert((&s.site_id, &s.tier, s.bucket, &s.dim, &s.key), set);
    }
    let mut grown = Vec::new();
    for (at, added) in keys.iter().zip(sets.values()) {
        match stored.get_mut(at) {
            Some(set) => {
                let before = set.len();
                *set |= added;
                if set.len() != before {
                    let (site_id, tier, bucket, dim, key) = *at;
                    grown.push(r::SetPut { site_id, tier, bucket, dim, key, bits: bytes_of(set)? });
                }
            }
            None => unite_set(conn, *at, added)?,
        }
    }
    r::put_sets(conn, &grown).map_err(db)?;
    Ok(())
}

/// A set's stored bytes (portable roaring format).
fn bytes_of(set: &RoaringBitmap) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(set.serialized_size());
    set.serialize_into(&mut bytes).map_err(Error::internal)?;
    Ok(bytes)
}

/// Unites `added` into the stored set at `at`, exactly across processes
/// (STORE-04): a stored set is row-locked as it is read (PostgreSQL), so a
/// second process adding to it waits and then reads the first one's union;
/// a new set is inserted only if still absent, and when another transaction
/// made it meanwhile (and has committed, which the insert waits for) it is
/// read again and united.
pub fn unite_set(conn: &mut AnyConnection, at: r::SetAt<'_>, added: &RoaringBitmap) -> Result<()> {
    for _ in 0..2 {
        match r::set_bits(conn, at).map_err(db)? {
            Some(stored) => {
                let mut set = RoaringBitmap::deserialize_from(&stored[..]).map_err(Error::internal)?;
                let before = set.len();
                set |= added;
                if set.len() != before {
                    r::put_set(conn, at, bytes_of(&set)?).map_err(db)?;
                }
                return Ok(());
            }
            None if r::insert_set(conn, at, bytes_of(added)?).map_err(db)? => return Ok(()),
            None => {}
        }
    }
    Err(Error::internal("a visitor set was made and deleted while being united"))
}

/// The dense numbers of the batch's counted visitors, per (site, visitor),
/// keyed by the rows' own texts.
fn numbers_of<'a>(conn: &mut AnyConnection, rows: &'a [OutboxRow]) -> Result<HashMap<(&'a str, &'a str), u32>> {
    let mut per_site: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for o in rows.iter().filter(|o| Change::parse(&o.kind).is_some_and(Change::counts_visitor)) {
        per_site.entry(&o.site_id).or_default().push(&o.visitor_id);
    }
    let mut out = HashMap::new();
    for (site, mut visitors) in per_site {
        visitors.sort();
        visitors.dedup();
        for chunk in visitors.chunks(400) {
            let ids: Vec<String> = chunk.iter().map(|v| v.to_string()).collect();
            for n in r::visitor_numbers(conn, site, &ids).map_err(db)? {
                let number = u32::try_from(n.number).map_err(|_| Error::internal("visitor numbers exhausted"))?;
                // The row's own text of the id read back (the chunk is sorted).
                if let Ok(i) = chunk.binary_search(&n.visitor_id.as_str()) {
                    out.insert((site, chunk[i]), number);
                }
            }
        }
    }
    Ok(out)
}
