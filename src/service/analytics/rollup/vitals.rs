//! Vitals deltas (rule TRK-31): a tracker vitals event
//! updates columns of its pageview's row (the last value per metric wins,
//! rule TRK-31); acceptance puts one outbox row of kind `vital` per metric
//! whose value it changed (the old and the new value), and the report actor
//! moves one sample from the old value to the new one in the digest of the
//! pageview's UTC day, route and session device (rule ARPT-18).

use std::collections::{BTreeMap, HashMap};

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::rollup::buckets::bucket;
use crate::service::analytics::vocabulary::{Change, Tier};
use crate::store::analytics::vitals::{self as store, Cell};
use crate::store::analytics::{EventRow, OutboxRow, RolledSession};

/// The metrics in their answer order, with a row's value of each.
pub const METRICS: [&str; 5] = ["lcp", "inp", "cls", "fcp", "ttfb"];

fn values(e: &EventRow) -> [Option<i64>; 5] {
    [e.lcp, e.inp, e.cls, e.fcp, e.ttfb]
}

/// The outbox rows of a vitals event that turned `before` into `after`.
pub fn changes(before: &EventRow, after: &EventRow) -> Vec<OutboxRow> {
    let mut out = Vec::new();
    for ((metric, old), new) in METRICS.iter().zip(values(before)).zip(values(after)) {
        if old == new || new.is_none() {
            continue;
        }
        out.push(OutboxRow {
            id: 0,
            site_id: after.site_id.clone(),
            visitor_id: after.visitor_id.clone(),
            session_id: after.session_id.clone(),
            kind: Change::Vital.to_string(),
            at: after.occurred_at,
            // Only the counters' bucket: the row moves no session counter.
            session_start: after.occurred_at,
            route: after.route.clone(),
            name: Some((*metric).to_string()),
            vital_old: old,
            vital_new: new,
            // A vital moves no session counter, goal or transition.
            ..Default::default()
        });
    }
    out
}

/// Merges a batch's vitals rows into the digests (in the report actor's transaction).
pub fn apply(conn: &mut AnyConnection, rows: &[OutboxRow], sessions: &HashMap<String, RolledSession>) -> Result<()> {
    let mut deltas: BTreeMap<Cell, BTreeMap<i64, i64>> = BTreeMap::new();
    for o in rows.iter().filter(|o| o.kind == Change::Vital.as_str()) {
        let Some(metric) = o.name.clone() else { continue };
        let device = sessions.get(&o.session_id).and_then(|s| s.device.clone()).unwrap_or_default();
        let cell =
            Cell { site_id: o.site_id.clone(), day: bucket(Tier::Day, o.at), metric, route: o.route.clone(), device };
        let values = deltas.entry(cell).or_default();
        if let Some(old) = o.vital_old {
            *values.entry(old).or_default() -= 1;
        }
        if let Some(new) = o.vital_new {
            *values.entry(new).or_default() += 1;
        }
    }
    deltas.retain(|_, values| {
        values.retain(|_, n| *n != 0);
        !values.is_empty()
    });
    store::add(conn, &deltas).map_err(Error::from)
}
