//! `recordLead` calls that arrive together are written together (issue 25):
//! each call queues its checked body, and one write takes every call
//! queued when it runs. The sites are read once; the new keys' leads and
//! their events go in with one multi-row statement per table, the rollups
//! with one upsert per key and the ads' names once per ad; a repeat of a
//! key, a key met twice and a call with a board column are written after
//! them, each as a call of its own would write it ([`record`]). A call is
//! answered after the commit, as before; should the combined write fail,
//! each call is written again alone, so one bad call fails only itself.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::record::{new_row, queue_conversions, record};
use super::{RecordLead, RecordLeadAnswer, Stage, check_record, key_of, web_visit};
use crate::db::AnyConnection;
use crate::error::{Code, Error, Result};
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::service::meta::conversions::contact_hashes;
use crate::service::sites;
use crate::store::leads::many;
use crate::store::leads::rollups::{self, RollupKey};
use crate::store::leads::sites::SiteRow;
use crate::store::leads::{self as store, LeadRow, NewLeadEvent};

/// A queued call: when it arrived, its site and its body.
pub type Item = (i64, String, RecordLead);

/// The recordLead calls of this process waiting for their combined write.
pub fn queued_calls(cx: &Context) -> usize {
    cx.combiners.get::<Item, RecordLeadAnswer>().queued()
}

/// One call alone (the retry of a failed combined write).
pub fn one(conn: &mut AnyConnection, (now, site_id, input): Item) -> Result<Written<RecordLeadAnswer>> {
    record(conn, now, &site_id, input)
}

/// A call as its repeat check reads it: the site, the lead key, the event.
struct Replay {
    site_id: String,
    lead_key: String,
    event_id: String,
}

/// The repeat checks of the calls queued together, with one read.
fn repeats(conn: &mut AnyConnection, calls: &[Replay]) -> Result<Vec<Option<String>>> {
    let keys: Vec<(&str, &str, &str)> =
        calls.iter().map(|r| (r.site_id.as_str(), r.lead_key.as_str(), r.event_id.as_str())).collect();
    Ok(store::repeats_of(conn, &keys)?)
}

/// `recordLead` as the host calls it (issue 25): a repeat of an event the
/// lead already holds changes nothing, so it is answered from a read
/// without a write (the checks of calls arriving together read together); a call with a WhatsApp reference is [`record`] in a
/// write of its own (its visit's session gains the lead, WA-15); any other
/// call is written with the calls queued beside it ([`many`]). The read sees
/// only committed rows, so its answer is the one the write would give.
pub async fn record_lead(cx: &Context, now: i64, site_id: String, input: RecordLead) -> Result<RecordLeadAnswer> {
    check_record(&input)?;
    let replay =
        Replay { site_id: site_id.clone(), lead_key: input.lead_key.clone(), event_id: input.event_id.clone() };
    let replays = cx.combiners.get::<Replay, Option<String>>();
    if let Some(lead_id) = replays.read(cx, replay, cx.config.write_queue_max, repeats).await? {
        // The lead found may be a commit its fsync has not confirmed yet.
        cx.settle().await;
        return Ok(RecordLeadAnswer { lead_id, created: false, web_ref: None });
    }
    if input.web_ref.is_none() {
        let combiner = cx.combiners.get::<Item, RecordLeadAnswer>();
        return combiner.submit(cx, (now, site_id, input), cx.config.write_queue_max, many, one).await;
    }
    let rules = web_visit::SessionRules::of(&cx.config);
    cx.write(move |c| {
        let written = record(c, now, &site_id, input)?;
        // A lead that found its visit is an event of that visit's session (WA-15).
        if written.value.web_ref == Some(web_visit::WebRefOutcome::Matched) {
            web_visit::mark_in_session(c, rules, &written.value.lead_id)?;
        }
        Ok(written)
    })
    .await
}

/// Every queued call, answered in their order.
pub fn many(conn: &mut AnyConnection, items: Vec<Item>) -> Result<Written<Vec<Result<RecordLeadAnswer>>>> {
    let mut answers: Vec<Option<Result<RecordLeadAnswer>>> = (0..items.len()).map(|_| None).collect();
    let mut effects = Effects::quiet();
    let sites = read_sites(conn, &items)?;
    // The first call of each new key, made into its row; the others later.
    let (mut seen, mut fresh, mut alone) = (HashSet::new(), Vec::new(), Vec::new());
    for (i, (now, site_id, input)) in items.iter().enumerate() {
        match &sites[site_id] {
            Err(e) => answers[i] = Some(Err(e.clone())),
            Ok(_) if input.column.is_some() || !seen.insert((site_id, &input.lead_key)) => alone.push(i),
            Ok(_) => fresh.push((i, new_row(*now, site_id, input)?)),
        }
    }
    let rows: Vec<LeadRow> = fresh.iter().map(|(_, r)| r.clone()).collect();
    let inserted: HashSet<String> = many::insert_new(conn, &rows)?.into_iter().collect();
    let (created, known): (Vec<_>, Vec<_>) = fresh.into_iter().partition(|(_, r)| inserted.contains(&r.id));
    alone.extend(known.into_iter().map(|(i, _)| i));
    let events: Vec<NewLeadEvent<'_>> = created
        .iter()
        .map(|(i, row)| {
            let (now, site_id, input) = &items[*i];
            NewLeadEvent {
                lead_id: &row.id,
                site_id,
                event_id: &input.event_id,
                stage: Some(Stage::New.as_str()),
                column_key: None,
                revenue_cents: None,
                occurred_at: input.occurred_at,
                recorded_at: *now,
            }
        })
        .collect();
    many::insert_events(conn, &events)?;
    let created_rows: Vec<&LeadRow> = created.iter().map(|(_, r)| r).collect();
    bump_rollups(conn, &created_rows)?;
    remember_names(conn, &created_rows, items.iter().map(|(now, _, _)| *now).max().unwrap_or_default())?;
    for (i, row) in &created {
        let (now, site_id, input) = &items[*i];
        let site = sites[site_id].as_ref().map_err(Clone::clone)?;
        let hashes = contact_hashes::accept(input.meta.as_ref(), site_id);
        let queued = queue_conversions(conn, *now, site, row, input, hashes, None)?;
        effects = effects.merge(Effects::lead_write(site_id, queued));
        answers[*i] = Some(Ok(RecordLeadAnswer { lead_id: row.id.clone(), created: true, web_ref: None }));
    }
    // The rest in their order, each as a call of its own.
    alone.sort_unstable();
    for i in alone {
        let (now, site_id, input) = items[i].clone();
        let written = record(conn, now, &site_id, input)?;
        effects = effects.merge(written.effects);
        answers[i] = Some(Ok(written.value));
    }
    let answers = answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(Error::internal("a recordLead call of a combined write was not answered"))))
        .collect();
    Ok(Written::new(answers, effects))
}

/// Each site of the calls, read once: its row, or the call's answer (an
/// unknown site); any other failure fails the combined write.
fn read_sites(conn: &mut AnyConnection, items: &[Item]) -> Result<HashMap<String, Result<SiteRow>>> {
    let mut out = HashMap::new();
    for (_, site_id, _) in items {
        if out.contains_key(site_id) {
            continue;
        }
        let site = match sites::require(conn, site_id) {
            Err(e) if !matches!(e.code, Code::NotFound | Code::InvalidArgument) => return Err(e),
            other => other,
        };
        out.insert(site_id.clone(), site);
    }
    Ok(out)
}

/// The new leads counted under their rollup keys, one statement for all.
fn bump_rollups(conn: &mut AnyConnection, rows: &[&LeadRow]) -> Result<()> {
    let mut counts: BTreeMap<(&str, i64, &str, &str, &str, &str), i64> = BTreeMap::new();
    for row in rows {
        let k = key_of(row);
        *counts.entry((k.site_id, k.day, k.origin, k.campaign_id, k.adset_id, k.ad_id)).or_default() += 1;
    }
    let counts: Vec<(RollupKey, i64)> = counts
        .into_iter()
        .map(|((site_id, day, origin, campaign_id, adset_id, ad_id), leads)| {
            (RollupKey { site_id, day, origin, campaign_id, adset_id, ad_id }, leads)
        })
        .collect();
    rollups::add_leads(conn, &counts)?;
    Ok(())
}

/// The ads' names the new leads gave, each (site, level, id) once with the
/// latest call's name.
fn remember_names(conn: &mut AnyConnection, rows: &[&LeadRow], now: i64) -> Result<()> {
    let mut names: BTreeMap<&str, BTreeMap<(&str, &str), &str>> = BTreeMap::new();
    for row in rows {
        let site = names.entry(&row.site_id).or_default();
        for (level, id, name) in [
            ("campaign", &row.campaign_id, &row.campaign_name),
            ("adset", &row.adset_id, &row.adset_name),
            ("ad", &row.ad_id, &row.ad_name),
        ] {
            if let Some(name) = name.as_deref().filter(|_| !id.is_empty()) {
                site.insert((level, id), name);
            }
        }
    }
    let labels: Vec<(&str, &str, &str, &str)> = names
        .into_iter()
        .flat_map(|(site_id, labels)| labels.into_iter().map(move |((level, id), name)| (site_id, level, id, name)))
        .collect();
    rollups::label_many(conn, &labels, now)?;
    Ok(())
}
