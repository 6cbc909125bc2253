//! One run of an account's sync: take the lease, read Meta (spend per ad and
//! day, the catalog, thumbnails), then write everything in one transaction
//! under the run's own id, and schedule the next run from the persisted state.
//! The actor in `actors::account_sync` only decides when to call `run`.

pub mod schedule;

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::clock::DAY_MS;
use crate::codes::Fault;
use crate::config::Secret;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::meta::graph::{ErrorClass, GraphError, INSIGHTS_PAGE_LIMIT, Usage};
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::service::meta::connection as meta_connection;
use crate::store::meta as meta_store;
use crate::store::meta::sync::{self as store, CatalogRow, SpendRow, SyncRow};
use schedule::{Catalog, Kind, Run, Settings};

/// Thumbnails larger than this are not copied.
const THUMBNAIL_MAX_BYTES: usize = 2 * 1024 * 1024;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing was due (or the link is stopped or gone).
    Idle,
    /// Another run holds the lease.
    Busy,
    Synced(Kind),
    /// Meta or the key failed; the next run is scheduled after a back-off.
    Failed(String),
    /// The lease was taken over or the link went away meanwhile: nothing written.
    Dropped,
}

fn state_of(r: &SyncRow) -> schedule::State {
    schedule::State {
        backfill_from: r.backfill_from,
        backfill_until: r.backfill_until,
        backfill_done: r.backfill_done,
        backfill_total: r.backfill_total,
        first_synced_at: r.first_synced_at,
        synced_through: r.synced_through,
        last_live_at: r.last_live_at,
        last_daily_day: r.last_daily_day,
        last_weekly_day: r.last_weekly_day,
        sync_requested: r.sync_requested,
    }
}

fn apply_state(r: &mut SyncRow, s: &schedule::State) {
    r.backfill_from = s.backfill_from;
    r.backfill_until = s.backfill_until;
    r.backfill_done = s.backfill_done;
    r.backfill_total = s.backfill_total;
    r.first_synced_at = s.first_synced_at;
    r.synced_through = s.synced_through;
    r.last_live_at = s.last_live_at;
    r.last_daily_day = s.last_daily_day;
    r.last_weekly_day = s.last_weekly_day;
    r.sync_requested = s.sync_requested;
}

/// What a run needs from the rows, read when it takes its lease.
struct Lease {
    run_id: String,
    sync: SyncRow,
    tz: chrono_tz::Tz,
    owner: String,
    sealed: Option<(String, i64)>,
    stopped: bool,
    expires_at: Option<i64>,
    /// This run took over the lease of a run that outlived it (RUN_TIMEOUT).
    replaced: bool,
}

async fn take_lease(st: &Context, ad_account_id: &str) -> Result<Option<Lease>> {
    let (id, run_id, now) =
        (ad_account_id.to_string(), crate::ids::run_id(crate::ids::RunKind::AccountSync)?, st.now());
    let lease_ms = st.config.sync_lease.as_millis() as i64;
    st.write_plain(move |c| {
        let Some(link) = meta_store::link(c, &id)? else { return Ok(None) };
        let Some(mut sync) = store::take_lease(c, &id, &run_id, now, now + lease_ms)? else { return Ok(None) };
        // A run that outlived its lease was replaced: say so.
        let replaced = sync.lease_run_id.is_some() && sync.lease_until.is_some_and(|u| u <= now);
        if replaced {
            sync.last_error = Some(Fault::RunTimeout.with("a run outlived its lease and was replaced"));
        }
        let connection = meta_store::connection(c, &link.owner_key)?;
        Ok(Some(Lease {
            run_id,
            tz: chrono_tz::Tz::from_str(&link.timezone).unwrap_or(chrono_tz::UTC),
            owner: link.owner_key,
            sealed: connection.as_ref().map(|k| (k.sealed_token.clone(), k.token_version)),
            stopped: link.stopped_reason.is_some(),
            expires_at: connection.and_then(|k| k.expires_at),
            replaced,
            sync,
        }))
    })
    .await
}

/// Runs the account's due work, if any. Safe to call at any time and from
/// several processes: the lease lets one run at a time.
pub async fn run(st: &Context, ad_account_id: &str) -> Result<Outcome> {
    let Some(lease) = take_lease(st, ad_account_id).await? else { return Ok(Outcome::Busy) };
    let cfg = Settings::from_config(&st.config);
    let now = st.now();
    let (today, _) = schedule::local_day(now, lease.tz);
    let mut state = state_of(&lease.sync);
    schedule::start_backfill_if_needed(&mut state, today, &cfg);
    // A back-off (or the schedule) set a later time: nothing is due before it.
    let early = lease.sync.next_run_at > now;
    let due = if lease.stopped || early { None } else { schedule::due_run(&state, now, lease.tz, &cfg) };
    let Some(plan) = due else {
        let next = if lease.stopped {
            now + st.config.sync_retry_max.as_millis() as i64
        } else if early {
            lease.sync.next_run_at
        } else {
            schedule::next_due(&state, now, lease.tz, &cfg)
        };
        finish(st, &lease, state, move |row| {
            row.next_run_at = next;
        })
        .await?;
        return Ok(Outcome::Idle);
    };
    let token = match open(st, &lease) {
        Ok(t) => t,
        Err(why) => return fail(st, &lease, state, why, Backoff::Retry).await,
    };
    match read(st, &lease, &token, plan).await {
        Ok(read) => write(st, &lease, state, plan, read).await,
        Err(e) if e.class == ErrorClass::TokenRefused => {
            let (owner, version) = (lease.owner.clone(), lease.sealed.as_ref().map_or(0, |s| s.1));
            let now = st.now();
            if !st.write_plain(move |c| meta_connection::mark_refused(c, &owner, version, now)).await? {
                // A new token was pasted meanwhile: nothing stops, it syncs at once.
                finish(st, &lease, state, move |row| row.next_run_at = now).await?;
                return Ok(Outcome::Dropped);
            }
            fail(st, &lease, state, Fault::MetaTokenInvalid.with("Meta refused the token"), Backoff::Stop).await
        }
        Err(e) if e.class == ErrorClass::Throttled => {
            let wait = throttle_wait(st, &e.usage);
            fail(st, &lease, state, Fault::RateLimited.with("Meta throttled the sync"), Backoff::Wait(wait)).await
        }
        Err(e) => fail(st, &lease, state, Fault::MetaUnavailable.with(&e.message), Backoff::Retry).await,
    }
}

fn open(st: &Context, lease: &Lease) -> std::result::Result<Secret, String> {
    let key = st.secrets.as_ref().ok_or_else(|| Fault::SecretsKeyMissing.with("RASTRO_SECRETS_KEY is not set"))?;
    let (sealed, _) = lease.sealed.as_ref().ok_or_else(|| Fault::MetaTokenInvalid.with("no Meta connection"))?;
    key.open(sealed, crate::crypto::Identity::Connection(&lease.owner))
        .map_err(|_| Fault::SecretsKeyMissing.with("the token was sealed under another RASTRO_SECRETS_KEY"))
}

fn throttle_wait(st: &Context, usage: &Usage) -> Duration {
    let least = st.config.sync_rate_limit_wait;
    usage.regain_after.map_or(least, |r| r.max(least))
}

enum Backoff {
    /// 15 minutes doubling to 6 hours.
    Retry,
    Wait(Duration),
    /// Until a new token: the link is stopped.
    Stop,
}

async fn fail(st: &Context, lease: &Lease, state: schedule::State, why: String, backoff: Backoff) -> Result<Outcome> {
    let now = st.now();
    let base = st.config.sync_retry_base.as_millis() as i64;
    let max = st.config.sync_retry_max.as_millis() as i64;
    let fails = lease.sync.fail_count + 1;
    let delay = match backoff {
        Backoff::Retry => base.saturating_mul(1i64 << (fails - 1).clamp(0, 20)).min(max),
        Backoff::Wait(d) => d.as_millis() as i64,
        Backoff::Stop => max,
    };
    tracing::warn!(ad_account = %lease.sync.ad_account_id, error = %why, "account sync failed");
    let message = why.clone();
    finish(st, lease, state, move |row| {
        row.fail_count = fails;
        row.last_error = Some(message);
        row.next_run_at = now + delay;
    })
    .await?;
    Ok(Outcome::Failed(why))
}

/// Releases the lease and saves the state, if the lease is still this run's.
async fn finish(
    st: &Context,
    lease: &Lease,
    state: schedule::State,
    edit: impl FnOnce(&mut SyncRow) + Send + 'static,
) -> Result<bool> {
    let (id, run_id, now) = (lease.sync.ad_account_id.clone(), lease.run_id.clone(), st.now());
    let timeout_note = lease.sync.last_error.clone().filter(|e| Fault::of(e) == Some(Fault::RunTimeout));
    st.write_plain(move |c| {
        let Some(mut row) = store::get(c, &id)? else { return Ok(false) };
        if row.lease_run_id.as_deref() != Some(run_id.as_str()) {
            return Ok(false);
        }
        apply_state(&mut row, &state);
        if timeout_note.is_some() {
            row.last_error = timeout_note;
        }
        edit(&mut row);
        row.lease_run_id = None;
        row.lease_until = None;
        row.updated_at = now;
        store::save(c, &row)?;
        Ok(true)
    })
    .await
}

/// What a run read from Meta.
struct Read {
    spend: Vec<SpendRow>,
    truncated: bool,
    catalog: Vec<CatalogRow>,
    usage: Usage,
}

async fn read(st: &Context, lease: &Lease, token: &Secret, plan: Run) -> std::result::Result<Read, GraphError> {
    let act = &lease.sync.ad_account_id;
    let site = &lease.sync.site_id;
    let mut spend = Vec::new();
    let mut truncated = false;
    let mut usage = Usage::default();
    let mut names: Vec<CatalogRow> = Vec::new();
    // A range with too much data is read in halves, down to single days.
    let mut ranges = vec![(plan.from_day, plan.until_day)];
    while let Some((from, until)) = ranges.pop() {
        let since = schedule::day_to_date(from);
        let to = schedule::day_to_date(until);
        match st.graph.insights(token, act, since, to, INSIGHTS_PAGE_LIMIT).await {
            Ok(found) => {
                usage = usage.merge(found.usage);
                truncated |= found.value.truncated;
                for r in found.value.rows {
                    let day = schedule::date_to_day(r.date) * DAY_MS;
                    names.push(CatalogRow {
                        ad_id: r.ad_id.clone(),
                        ad_account_id: act.clone(),
                        name: Some(r.ad_name).filter(|n| !n.is_empty()),
                        adset_id: r.adset_id.clone(),
                        adset_name: Some(r.adset_name).filter(|n| !n.is_empty()),
                        campaign_id: r.campaign_id.clone(),
                        campaign_name: Some(r.campaign_name).filter(|n| !n.is_empty()),
                        ad_status: None,
                        creative_type: None,
                        thumbnail: None,
                        updated_at: 0,
                    });
                    spend.push(SpendRow {
                        ad_account_id: act.clone(),
                        site_id: site.clone(),
                        day,
                        ad_id: r.ad_id,
                        adset_id: r.adset_id,
                        campaign_id: r.campaign_id,
                        spend_cents: r.spend_cents,
                        impressions: r.impressions,
                        clicks: r.clicks,
                    });
                }
            }
            Err(e) if e.class == ErrorClass::TooMuchData && from < until => {
                let mid = from + (until - from) / 2;
                ranges.push((from, mid));
                ranges.push((mid + 1, until));
            }
            Err(e) if e.class == ErrorClass::TooMuchData => truncated = true,
            Err(e) => return Err(e),
        }
    }
    // Names from insights, then the catalog proper where the plan asks for it.
    let mut catalog: Vec<CatalogRow> = Vec::new();
    let mut seen = BTreeSet::new();
    for n in names {
        if seen.insert(n.ad_id.clone()) {
            catalog.push(n);
        }
    }
    let only: Option<Vec<String>> = match plan.catalog {
        Catalog::None => Some(Vec::new()),
        Catalog::Every => None,
        Catalog::Unnamed => {
            let site = site.clone();
            Some(st.read(move |c| Ok(store::unnamed_lead_ads(c, &site)?)).await.unwrap_or_default())
        }
    };
    if only.as_ref().is_none_or(|ids| !ids.is_empty()) {
        let ads = st.graph.ads(token, act, only.as_deref()).await?;
        usage = usage.merge(ads.usage);
        let ids: Vec<String> = ads.value.iter().map(|a| a.id.clone()).collect();
        let have: BTreeSet<String> = st
            .read(move |c| Ok(store::catalog_of(c, &ids)?))
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.thumbnail.is_some())
            .map(|r| r.ad_id)
            .collect();
        for ad in ads.value {
            // A thumbnail is copied once; one that cannot be fetched never fails the run.
            let thumbnail = match (&ad.thumbnail_url, have.contains(&ad.id)) {
                (Some(url), false) => store_thumbnail(st, url).await,
                _ => None,
            };
            let row = CatalogRow {
                ad_id: ad.id.clone(),
                ad_account_id: act.clone(),
                name: Some(ad.name).filter(|n| !n.is_empty()),
                adset_id: ad.adset_id,
                adset_name: None,
                campaign_id: ad.campaign_id,
                campaign_name: None,
                ad_status: Some(ad.effective_status).filter(|s| !s.is_empty()),
                creative_type: Some(ad.creative_type.as_str().to_string()),
                thumbnail,
                updated_at: 0,
            };
            match catalog.iter_mut().find(|c| c.ad_id == ad.id) {
                Some(existing) => {
                    existing.name = row.name.or(existing.name.take());
                    existing.ad_status = row.ad_status;
                    existing.creative_type = row.creative_type;
                    existing.thumbnail = row.thumbnail;
                }
                None => catalog.push(row),
            }
        }
    }
    Ok(Read { spend, truncated, catalog, usage })
}

/// Copies a thumbnail into `<data dir>/thumbnails/<sha256>.<ext>` and answers its name.
async fn store_thumbnail(st: &Context, url: &str) -> Option<String> {
    let got = st.graph.download(url, THUMBNAIL_MAX_BYTES).await.ok()?;
    let ext = match got.content_type.as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/webp" => "webp",
        "image/gif" => "gif",
        _ => return None,
    };
    let digest = Sha256::digest(&got.bytes);
    let name = format!("{}.{ext}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let dir = st.config.data_dir.join("thumbnails");
    let path = dir.join(&name);
    if !path.exists() {
        let tmp = dir.join(format!("{name}.tmp"));
        let ok = tokio::fs::create_dir_all(&dir).await.is_ok()
            && tokio::fs::write(&tmp, &got.bytes).await.is_ok()
            && tokio::fs::rename(&tmp, &path).await.is_ok();
        if !ok {
            tracing::warn!("could not store a thumbnail under {}", dir.display());
            return None;
        }
    }
    Some(name)
}

async fn write(st: &Context, lease: &Lease, mut state: schedule::State, plan: Run, read: Read) -> Result<Outcome> {
    let cfg = Settings::from_config(&st.config);
    let now = st.now();
    match plan.kind {
        Kind::Backfill => {
            state.backfill_done += 1;
            if state.backfill_done >= state.backfill_total && state.first_synced_at.is_none() {
                state.first_synced_at = Some(now);
            }
            let until = state.backfill_until.unwrap_or(plan.until_day);
            if state.backfill_done >= state.backfill_total {
                state.synced_through = Some(state.synced_through.map_or(until, |t| t.max(until)));
            }
        }
        Kind::Live => {
            state.last_live_at = Some(now);
            state.sync_requested = false;
        }
        Kind::Daily | Kind::Weekly => {
            let (today, _) = schedule::local_day(now, lease.tz);
            state.last_daily_day = Some(today);
            if plan.kind == Kind::Weekly {
                state.last_weekly_day = Some(today);
            }
        }
    }
    if plan.kind != Kind::Backfill {
        state.synced_through = Some(state.synced_through.map_or(plan.until_day, |t| t.max(plan.until_day)));
    }
    let mut next = schedule::next_due(&state, now, lease.tz, &cfg);
    let high = read.usage.max_pct.is_some_and(|p| p > f64::from(st.config.sync_usage_threshold_pct));
    let throttled = high || read.usage.regain_after.is_some();
    if throttled {
        next = next.max(now + throttle_wait(st, &read.usage).as_millis() as i64);
    }
    let threshold = st.config.sync_usage_threshold_pct;
    let soon = st.config.meta_expiring_soon.as_millis() as i64;
    let expiring = lease.expires_at.map(|at| at - now < soon);
    let (id, site, run_id, owner) =
        (lease.sync.ad_account_id.clone(), lease.sync.site_id.clone(), lease.run_id.clone(), lease.owner.clone());
    let truncated = read.truncated;
    let timeout_note = lease.replaced.then(|| Fault::RunTimeout.with("a run outlived its lease and was replaced"));
    let written = st
        .write_plain(move |c| {
            // Late writes of a run whose lease was taken over, or of an unlinked account, are dropped.
            let Some(mut row) = store::get(c, &id)? else { return Ok(false) };
            if row.lease_run_id.as_deref() != Some(run_id.as_str()) {
                return Ok(false);
            }
            if meta_store::link(c, &id)?.is_none_or(|l| l.site_id != site) {
                return Ok(false);
            }
            let (from_ms, until_ms) = (plan.from_day * DAY_MS, plan.until_day * DAY_MS);
            if truncated {
                // Keep what came, replacing only the days Meta answered for.
                let mut days: BTreeMap<i64, Vec<SpendRow>> = BTreeMap::new();
                for r in read.spend {
                    days.entry(r.day).or_default().push(r);
                }
                for (day, rows) in days {
                    store::replace_spend(c, &id, day, day, &rows)?;
                }
            } else {
                store::replace_spend(c, &id, from_ms, until_ms, &read.spend)?;
            }
            for mut cat in read.catalog {
                cat.updated_at = now;
                store::put_catalog(c, &cat)?;
            }
            apply_state(&mut row, &state);
            row.last_sync_at = Some(now);
            row.fail_count = 0;
            row.last_error = if truncated {
                Some(Fault::MetaTruncated.with("a day had more rows than Meta answers"))
            } else if throttled {
                // SYNC-08: the run succeeded, but the next one waits; say why (the state stays live).
                Some(Fault::RateLimited.with(format_args!("Meta's usage passed {threshold}%; the next sync waits")))
            } else {
                timeout_note
            };
            row.next_run_at = next;
            row.lease_run_id = None;
            row.lease_until = None;
            row.updated_at = now;
            store::save(c, &row)?;
            if let Some(expiring) = expiring {
                meta_store::set_expiring_soon(c, &owner, expiring)?;
            }
            Ok(true)
        })
        .await?;
    Ok(if written { Outcome::Synced(plan.kind) } else { Outcome::Dropped })
}

/// `syncMetaNow`; the supervisor wakes the site's accounts.
pub fn sync_now(conn: &mut AnyConnection, now: i64, site_id: &str) -> Result<Written<SyncNowAnswer>> {
    Ok(Written::new(sync_now_rows(conn, now, site_id)?, Effects::sync_changed()))
}

/// syncMetaNow: the site's accounts sync at once (or right after the run in flight).
fn sync_now_rows(conn: &mut AnyConnection, now: i64, site_id: &str) -> Result<SyncNowAnswer> {
    crate::service::sites::require(conn, site_id)?;
    let accounts = store::request_sync(conn, site_id, now)?;
    Ok(SyncNowAnswer { accounts: accounts as i64 })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SyncNowAnswer {
    /// Linked ad accounts asked to sync.
    pub accounts: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnlinkPreview {
    pub spend_cents: i64,
    pub currency: Option<String>,
    pub days: i64,
    pub campaigns: i64,
    /// A read cap was hit and the figures are a lower bound (never: the figures are one aggregate).
    pub partial: bool,
}

/// metaUnlinkPreview: what unlinking takes out of the site's reports.
pub fn unlink_preview(conn: &mut AnyConnection, site_id: &str, ad_account_id: &str) -> Result<UnlinkPreview> {
    crate::service::sites::require(conn, site_id)?;
    crate::service::meta::links::check_ad_account_id(ad_account_id)?;
    let link = meta_store::link(conn, ad_account_id)?
        .filter(|l| l.site_id == site_id)
        .ok_or_else(|| Error::not_found("the ad account is not linked to this site"))?;
    let f = store::unlink_figures(conn, site_id, ad_account_id)?;
    Ok(UnlinkPreview {
        spend_cents: f.spend_cents,
        currency: Some(link.currency),
        days: f.days,
        campaigns: f.campaigns,
        partial: false,
    })
}
