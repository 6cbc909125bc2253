//! Sending: what a pixel's sender actor runs ([`send_due`]). It takes a
//! lease on up to `capi_batch_max` due events, sends them in one request,
//! splits a batch Meta rejects in halves until the bad event stands alone, and
//! writes each outcome in one transaction with the per-day counters. An event
//! ends `sent` or `failed`, and its hashes are erased in the same statement
//! ([`scrub`] then clears SQLite's WAL of them).

use std::collections::{BTreeMap, HashMap};

use super::*;
use crate::clock::utc_day_start;
use crate::codes::Fault;
use crate::config::{Config, Secret};
use crate::crypto::{CryptoError, Identity};
use crate::db::AnyConnection;
use crate::error::{Code, Error, Result};
use crate::meta::graph::{ErrorClass, GraphError, ServerEvent};
use crate::service::context::Context;
use crate::service::meta::connection;
use crate::store::meta::conversions::{self as store, ConversionStatus, End};
use crate::store::meta::{self as meta_store, ConnectionRow, PixelSource};

mod event;

use event::{Shape, fbc_of, server_event};

/// The send settings, in milliseconds.
#[derive(Debug, Clone)]
pub struct SendSettings {
    pub batch_max: usize,
    pub lease_ms: i64,
    pub max_age_ms: i64,
    /// Waits after a failed attempt; attempts = steps + 1.
    pub steps_ms: Vec<i64>,
}

impl SendSettings {
    pub fn from_config(c: &Config) -> SendSettings {
        let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        SendSettings {
            batch_max: c.capi_batch_max.clamp(1, crate::meta::graph::MAX_EVENTS_PER_BATCH),
            lease_ms: ms(c.capi_attempt_lease),
            max_age_ms: ms(c.capi_max_age),
            steps_ms: c.capi_retry_steps.iter().map(|d| ms(*d)).collect(),
        }
    }

    pub fn max_attempts(&self) -> i64 {
        self.steps_ms.len() as i64 + 1
    }
}

/// What one run over a pixel's queue did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub sent: u64,
    pub failed: u64,
    /// Events whose attempt failed and that wait for the next one.
    pub retried: u64,
    /// `POST /{pixel}/events` requests made.
    pub requests: u64,
    /// When the queue next needs a look (a due retry, a lease running out).
    pub next_due: Option<i64>,
}

impl Round {
    /// Events that ended (their hashes erased).
    pub fn ended(&self) -> u64 {
        self.sent + self.failed
    }
    pub fn add(&mut self, o: &Round) {
        self.sent += o.sent;
        self.failed += o.failed;
        self.retried += o.retried;
        self.requests += o.requests;
        self.next_due = match (self.next_due, o.next_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Whose token a batch goes with, and which version of it (a refusal stops
/// the pixel or the connection only if that version is still stored).
#[derive(Clone)]
enum TokenSource {
    Own { sealed: String, version: i64 },
    Connection(Box<ConnectionRow>),
}

struct Batch {
    pixel_id: String,
    test_event_code: Option<String>,
    token: TokenSource,
    rows: Vec<store::ConversionRow>,
    /// By event id, the rows that go another way than their columns say.
    vias: HashMap<String, Via>,
}

/// How a row goes beyond its own columns, read with the batch.
enum Via {
    /// A click-to-WhatsApp lead's event by its click id (WA-31).
    ClickId { ctwa_clid: Secret, account: String },
    /// A site sale with its session's landing fbclid and user agent, still
    /// sealed, and the landing's page (WA-33).
    Landing { sealed_fbclid: String, landed_at: i64, sealed_user_agent: Option<String>, source_url: Option<String> },
}

enum Claim {
    /// Nothing due.
    Empty,
    /// Events ended without a send (pixel unavailable, too old, last attempt lost).
    Ended(u64),
    /// A batch held under the run's lease, after `u64` events ended without a send.
    Batch(Box<Batch>, u64),
}

fn ids(rows: &[store::ConversionRow]) -> Vec<String> {
    rows.iter().map(|r| r.event_id.clone()).collect()
}

/// Ends `ids` as failed with `error`, erasing their hashes.
fn fail(conn: &mut AnyConnection, ids: &[String], owner: Option<&str>, error: &str, now: i64) -> Result<u64> {
    let end = End { status: ConversionStatus::Failed, last_error: Some(error), sent_at: None, now };
    Ok(store::end(conn, ids, owner, &end)?.len() as u64)
}

/// Why nothing can be sent to the site's pixel right now, if so.
fn unusable(conn: &mut AnyConnection, site_id: &str) -> Result<std::result::Result<Batch, String>> {
    let Some(p) = meta_store::pixel(conn, site_id)? else {
        return Ok(Err(Fault::PixelUnavailable.with("the site has no pixel")));
    };
    if !p.enabled {
        return Ok(Err(Fault::PixelUnavailable.with("the pixel is off")));
    }
    if let Some(reason) = &p.stopped_reason {
        // A stop reason is a bare code; one this build does not know is reported as is.
        return Ok(Err(match Fault::parse(reason) {
            Some(code) => code.with("the pixel is stopped"),
            None => format!("{reason}: the pixel is stopped"),
        }));
    }
    let token = if p.source == PixelSource::Token {
        match p.sealed_token {
            Some(sealed) => TokenSource::Own { sealed, version: p.token_version },
            None => return Ok(Err(Fault::PixelUnavailable.with("the pixel has no token"))),
        }
    } else {
        let connection = match p.owner_key.as_deref() {
            Some(owner) => meta_store::connection(conn, owner)?,
            None => None,
        };
        match connection {
            None => return Ok(Err(Fault::PixelUnavailable.with("the pixel's Meta connection is gone"))),
            Some(c) if c.invalid_since.is_some() => {
                return Ok(Err(Fault::MetaTokenInvalid.with("Meta refused the connection's token")));
            }
            Some(c) => TokenSource::Connection(Box::new(c)),
        }
    };
    Ok(Ok(Batch {
        pixel_id: p.pixel_id,
        test_event_code: p.test_event_code,
        token,
        rows: Vec::new(),
        vias: HashMap::new(),
    }))
}

/// Takes the next batch of due events under a lease, first ending those that
/// cannot be sent. One transaction.
fn claim(conn: &mut AnyConnection, site_id: &str, now: i64, s: &SendSettings, owner: &str) -> Result<Claim> {
    let due = store::due(conn, site_id, now, s.batch_max)?;
    if due.is_empty() {
        return Ok(Claim::Empty);
    }
    let mut batch = match unusable(conn, site_id)? {
        Ok(b) => b,
        Err(why) => return Ok(Claim::Ended(fail(conn, &ids(&due), None, &why, now)?)),
    };
    let (mut too_old, mut lost, mut go) = (Vec::new(), Vec::new(), Vec::new());
    for r in due {
        let max_age =
            if r.meta_lead_id.is_some() { s.max_age_ms.min(queue::CONVERSION_LEADS_MAX_AGE_MS) } else { s.max_age_ms };
        if r.event_time < now - max_age {
            too_old.push(r.event_id);
        } else if r.lease_until.is_some() && r.attempts >= s.max_attempts() {
            // Its last attempt was lost on the way (its lease ran out without a result).
            lost.push(r.event_id);
        } else {
            go.push(r.event_id);
        }
    }
    let mut ended = fail(conn, &too_old, None, &Fault::EventTooOld.with("older than the send window"), now)?;
    ended += fail(conn, &lost, None, &Fault::Unexpected.with("the last attempt was lost on the way"), now)?;
    batch.rows = store::take_lease(conn, &go, owner, now + s.lease_ms, now)?;
    let (vias, gone) = vias(conn, site_id, &batch.rows)?;
    batch.vias = vias;
    if !gone.is_empty() {
        let why = Fault::Unexpected.with("the visit's fbclid is no longer kept (its session's retention)");
        ended += fail(conn, &gone, Some(owner), &why, now)?;
        batch.rows.retain(|r| !gone.contains(&r.event_id));
    }
    if batch.rows.is_empty() {
        return Ok(if ended > 0 { Claim::Ended(ended) } else { Claim::Empty });
    }
    Ok(Claim::Batch(Box::new(batch), ended))
}

/// The rows of a batch that go another way (rules WA-31, WA-33), and the
/// site sales whose session's fbclid is gone (they cannot go at all).
/// Decided when sent, so the site's settings as they are now apply.
fn vias(
    conn: &mut AnyConnection,
    site_id: &str,
    rows: &[store::ConversionRow],
) -> Result<(HashMap<String, Via>, Vec<String>)> {
    let (mut vias, mut gone) = (HashMap::new(), Vec::new());
    let mut domain: Option<Option<String>> = None;
    for r in rows {
        let Some(session) = &r.web_session_id else { continue };
        match crate::store::analytics::click_ids::find(conn, site_id, session)? {
            Some(c) => {
                // The landing page (the stored path on the site's first domain): `event_source_url`.
                if domain.is_none() {
                    domain = Some(crate::service::sites::get(conn, site_id)?.domains.into_iter().next());
                }
                let landing = crate::store::analytics::session(conn, session)?.map(|s| s.entry_path);
                let source_url = domain.clone().flatten().zip(landing).map(|(d, path)| format!("https://{d}{path}"));
                let via = Via::Landing {
                    sealed_fbclid: c.sealed_fbclid,
                    landed_at: c.landed_at,
                    sealed_user_agent: c.sealed_user_agent,
                    source_url,
                };
                vias.insert(r.event_id.clone(), via);
            }
            None => gone.push(r.event_id.clone()),
        }
    }
    // A lead's own event (not a form lead's, not a site sale) that Meta takes on business_messaging.
    let candidates: Vec<&store::ConversionRow> = rows
        .iter()
        .filter(|r| r.meta_lead_id.is_none() && r.web_session_id.is_none())
        .filter(|r| business_messaging_name(&r.event_name).is_some())
        .collect();
    let lead_ids: Vec<String> = candidates.iter().filter_map(|r| r.lead_id.clone()).collect();
    if lead_ids.is_empty() {
        return Ok((vias, gone));
    }
    let (account, clicks) = click_routes(conn, site_id, &lead_ids)?;
    for r in candidates {
        if let Some(clid) = r.lead_id.as_ref().and_then(|l| clicks.get(l)) {
            let via = Via::ClickId { ctwa_clid: Secret::new(clid.clone()), account: account.clone() };
            vias.insert(r.event_id.clone(), via);
        }
    }
    Ok((vias, gone))
}

/// The batch's ways as [`server_event`] sends them: a sealed fbclid opens
/// here, with the secrets key; the ids of those that do not open.
fn shapes(st: &Context, site_id: &str, batch: &mut Batch) -> (HashMap<String, Shape>, Vec<String>) {
    let (mut out, mut unopened) = (HashMap::new(), Vec::new());
    let sessions: HashMap<&str, &str> =
        batch.rows.iter().filter_map(|r| Some((r.event_id.as_str(), r.web_session_id.as_deref()?))).collect();
    for (id, via) in std::mem::take(&mut batch.vias) {
        let shape = match via {
            Via::ClickId { ctwa_clid, account } => Some(Shape::ClickId { ctwa_clid, account }),
            Via::Landing { sealed_fbclid, landed_at, sealed_user_agent, source_url } => {
                let session = sessions.get(id.as_str()).copied().unwrap_or_default();
                let open = |sealed: &str| {
                    st.secrets.as_ref().and_then(|k| k.open(sealed, Identity::WebClickId(site_id, session)).ok())
                };
                let user_agent = sealed_user_agent.as_deref().and_then(open);
                open(&sealed_fbclid).map(|f| Shape::Website {
                    fbc: Secret::new(fbc_of(landed_at, f.expose())),
                    user_agent,
                    source_url,
                })
            }
        };
        match shape {
            Some(shape) => {
                out.insert(id, shape);
            }
            None => unopened.push(id),
        }
    }
    (out, unopened)
}

/// `lastError` for a failed attempt that may be retried.
fn retry_error(e: &GraphError) -> String {
    match e.class {
        ErrorClass::Throttled => Fault::RateLimited.with("Meta is throttling the pixel's sends"),
        ErrorClass::Transient if e.http_status.is_some() => Fault::MetaUnavailable.with(&e.message),
        _ => Fault::Unexpected.with(&e.message),
    }
}

fn open_token(st: &Context, site_id: &str, token: &TokenSource) -> Result<Secret> {
    match token {
        TokenSource::Own { sealed, .. } => st.secrets()?.open(sealed, Identity::Pixel(site_id)).map_err(|e| match e {
            CryptoError::KeyMismatch => {
                Error::new(Code::SecretsKeyMissing, "the pixel's token was sealed under another key")
            }
            _ => Error::internal("the pixel's sealed token does not open"),
        }),
        TokenSource::Connection(row) => connection::open_token(st, row),
    }
}

/// The attempt of `rows` failed in a way worth trying again: each waits for its
/// next step, or fails for good after its last attempt.
fn record_retry(
    conn: &mut AnyConnection,
    rows: &[(String, i64)],
    owner: &str,
    error: &str,
    s: &SendSettings,
    now: i64,
) -> Result<Round> {
    let mut round = Round::default();
    let mut by_step: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut last = Vec::new();
    for (id, attempts) in rows {
        if *attempts >= s.max_attempts() {
            last.push(id.clone());
        } else {
            let step = s.steps_ms[usize::try_from((*attempts - 1).max(0)).unwrap_or(0)];
            by_step.entry(step).or_default().push(id.clone());
        }
    }
    round.failed += fail(conn, &last, Some(owner), error, now)?;
    for (step, ids) in by_step {
        round.retried += store::retry_at(conn, &ids, owner, now + step, error, now)? as u64;
    }
    Ok(round)
}

/// Meta accepted `ids`: sent, hashes erased, counted on today's counters.
fn record_sent(conn: &mut AnyConnection, site_id: &str, ids: &[String], now: i64) -> Result<u64> {
    // A send went through: an error the pixel showed (PERMISSION_DENIED) is over.
    meta_store::set_pixel_send_error(conn, site_id, None, now)?;
    let end = End { status: ConversionStatus::Sent, last_error: None, sent_at: Some(now), now };
    let ended = store::end(conn, ids, None, &end)?;
    let mut per: HashMap<(String, String), i64> = HashMap::new();
    for (site, event) in &ended {
        *per.entry((site.clone(), event.clone())).or_default() += 1;
    }
    for ((site, event), n) in per {
        store::bump_day(conn, &site, utc_day_start(now), &event, n)?;
    }
    Ok(ended.len() as u64)
}

/// Meta refused the token: if it is still the stored one, the events fail and
/// the pixel (its own token) or the connection stops; a token replaced
/// meanwhile keeps sending, so the events go again at once.
fn record_refused(
    conn: &mut AnyConnection,
    site_id: &str,
    ids: &[String],
    owner: &str,
    token: &TokenSource,
    now: i64,
) -> Result<Round> {
    let still_stored = match token {
        TokenSource::Own { version, .. } => meta_store::pixel(conn, site_id)?
            .is_some_and(|p| p.source == PixelSource::Token && p.token_version == *version),
        TokenSource::Connection(row) => {
            meta_store::connection(conn, &row.owner_key)?.is_some_and(|c| c.token_version == row.token_version)
        }
    };
    if !still_stored {
        store::give_back(conn, ids, owner, now)?;
        return Ok(Round::default());
    }
    match token {
        TokenSource::Own { .. } => meta_store::set_pixel_stopped(conn, site_id, Some(Fault::MetaTokenInvalid), now)?,
        TokenSource::Connection(row) => {
            connection::mark_refused(conn, &row.owner_key, row.token_version, now)?;
        }
    }
    let failed = fail(conn, ids, Some(owner), &Fault::MetaTokenInvalid.with("Meta refused the token"), now)?;
    Ok(Round { failed, ..Round::default() })
}

/// Sends a held batch; a batch Meta rejects is split in halves until the bad
/// event stands alone and fails by itself. Each outcome is one transaction.
async fn send_batch(st: &Context, site_id: &str, mut batch: Batch, owner: &str, s: &SendSettings) -> Result<Round> {
    let mut round = Round::default();
    let (shapes, unopened) = shapes(st, site_id, &mut batch);
    if !unopened.is_empty() {
        // A sealed fbclid that does not open fails its sale alone (another secrets key).
        let error = Fault::SecretsKeyMissing.with("the visit's fbclid was sealed under another key");
        let (owner_s, now) = (owner.to_string(), st.now());
        let ids = unopened.clone();
        round.failed += st.write_plain(move |c| fail(c, &ids, Some(&owner_s), &error, now)).await?;
        batch.rows.retain(|r| !unopened.contains(&r.event_id));
        if batch.rows.is_empty() {
            return Ok(round);
        }
    }
    let rows: Vec<(String, i64)> = batch.rows.iter().map(|r| (r.event_id.clone(), r.attempts)).collect();
    let token = match open_token(st, site_id, &batch.token) {
        Ok(t) => t,
        Err(e) => {
            let error = Fault::Unexpected.with(format_args!("{}: {}", e.code.as_str(), e.message));
            let (owner, s2) = (owner.to_string(), s.clone());
            let now = st.now();
            return st.write_plain(move |c| record_retry(c, &rows, &owner, &error, &s2, now)).await;
        }
    };
    let events: Vec<ServerEvent> = batch.rows.iter().map(|r| server_event(r, shapes.get(&r.event_id))).collect();
    drop(shapes);
    drop(batch.rows);
    // Ranges still to send, the next one last.
    let mut todo: Vec<std::ops::Range<usize>> = Vec::with_capacity(16);
    todo.push(0..events.len());
    while let Some(range) = todo.pop() {
        let result = st
            .graph
            .send_events(&token, &batch.pixel_id, &events[range.clone()], batch.test_event_code.as_deref())
            .await;
        round.requests += 1;
        let now = st.now();
        let part: Vec<(String, i64)> = rows[range.clone()].to_vec();
        let part_ids: Vec<String> = part.iter().map(|(id, _)| id.clone()).collect();
        let owner_s = owner.to_string();
        let outcome = match result {
            Ok(_) => {
                let site = site_id.to_string();
                let sent = st.write_plain(move |c| record_sent(c, &site, &part_ids, now)).await?;
                Round { sent, ..Round::default() }
            }
            Err(e) if e.class == ErrorClass::Invalid && e.code.is_some() && range.len() > 1 => {
                let mid = range.start + range.len() / 2;
                todo.push(mid..range.end);
                todo.push(range.start..mid);
                continue;
            }
            Err(e) if e.class == ErrorClass::Invalid && e.code.is_some() => {
                let error = Fault::MetaInvalid.with(format_args!("Meta refused the event ({})", e.message));
                let failed = st.write_plain(move |c| fail(c, &part_ids, Some(&owner_s), &error, now)).await?;
                Round { failed, ..Round::default() }
            }
            Err(e) if e.class == ErrorClass::Permission => {
                // The pixel says why nothing arrives until a send succeeds (CAPI-07).
                let error =
                    Fault::PermissionDenied.with(format_args!("the token cannot send to this pixel ({})", e.message));
                let site = site_id.to_string();
                let failed = st
                    .write_plain(move |c| {
                        let failed = fail(c, &part_ids, Some(&owner_s), &error, now)?;
                        let shown = Fault::PermissionDenied.with("the token cannot send to this pixel");
                        meta_store::set_pixel_send_error(c, &site, Some(&shown), now)?;
                        Ok(failed)
                    })
                    .await?;
                Round { failed, ..Round::default() }
            }
            Err(e) if e.class == ErrorClass::TokenRefused => {
                // The same token goes with every range left: they share the outcome.
                let mut all = part_ids;
                for r in todo.drain(..) {
                    all.extend(rows[r].iter().map(|(id, _)| id.clone()));
                }
                let (site, token) = (site_id.to_string(), batch.token.clone());
                st.write_plain(move |c| record_refused(c, &site, &all, &owner_s, &token, now)).await?
            }
            Err(e) => {
                let (error, s2) = (retry_error(&e), s.clone());
                st.write_plain(move |c| record_retry(c, &part, &owner_s, &error, &s2, now)).await?
            }
        };
        round.add(&outcome);
    }
    Ok(round)
}

/// Runs the site's queue: everything due now is sent (or ended), batch after
/// batch, until nothing due is left. Answers what happened and when the queue
/// next needs a look. Runs of one site must not overlap in one process (the
/// actor serializes them); other processes are kept apart by the leases.
pub async fn send_due(st: &Context, site_id: &str) -> Result<Round> {
    let s = SendSettings::from_config(&st.config);
    let mut round = Round::default();
    loop {
        let now = st.now();
        // A read first: most wakes find nothing due, and a read costs the writer nothing.
        let site = site_id.to_string();
        if st.read(move |c| Ok(store::due(c, &site, now, 1)?)).await?.is_empty() {
            break;
        }
        let owner = crate::ids::run_id(crate::ids::RunKind::ConversionSend)?;
        let (site, s2, o2) = (site_id.to_string(), s.clone(), owner.clone());
        match st.write_plain(move |c| claim(c, &site, now, &s2, &o2)).await? {
            Claim::Empty => break,
            Claim::Ended(n) => round.failed += n,
            Claim::Batch(batch, n) => {
                round.failed += n;
                let r = send_batch(st, site_id, *batch, &owner, &s).await?;
                round.add(&r);
            }
        }
    }
    let site = site_id.to_string();
    round.next_due = st.read(move |c| Ok(store::next_due(c, &site)?)).await?;
    Ok(round)
}

/// The sites whose queue holds a pending event (the sweeper's and the
/// supervisor's start-up reconcile).
pub async fn sites_with_pending(st: &Context) -> Result<Vec<String>> {
    st.read(|c| Ok(store::sites_with_pending(c)?)).await
}

/// Makes erased hashes gone from SQLite's files too: `secure_delete` (on for
/// every connection) zeroes the freed bytes in the database pages, and a
/// TRUNCATE checkpoint through the writer copies the newest pages back and
/// empties the WAL, where older copies of those pages lived. PostgreSQL:
/// nothing to do here (see the README: dead row versions stay until VACUUM).
pub async fn scrub(st: &Context) -> Result<()> {
    st.truncate_wal().await
}

#[cfg(test)]
mod tests;
