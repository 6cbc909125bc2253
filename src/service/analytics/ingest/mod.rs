//! `POST /rastro/events` (TRK-12 to TRK-20): the checks in their order, the
//! visitor id (the browser's, or the cookieless `c_` id from the day's salt),
//! then acceptance as one write of the group-commit writer, answered after
//! its commit.

pub mod accept;
pub mod agent;
pub mod batch;
mod combine;
pub mod export;
pub mod import;
pub mod limits;
pub mod session_cache;
pub mod session_figures;
pub mod tracker;
pub mod urls;

use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use sha2::Sha256;

use crate::clock::DAY_MS;
use crate::error::{Code, Error, Result};
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::service::sites;
use crate::store::analytics as store;
use accept::Visit;
use batch::Incoming;

/// The salt of a UTC day, made once for the database (rule SES-04).
async fn salt(cx: &Context, day: i64) -> Result<Vec<u8>> {
    let tracker = &cx.analytics.tracker;
    if let Some(s) = tracker.salts.lock().unwrap_or_else(|p| p.into_inner()).get(&day) {
        return Ok(s.clone());
    }
    let fresh: [u8; 32] = crate::ids::random_bytes()?;
    let salt = cx
        .write(move |c| {
            let salt = store::salt(c, day, fresh)?;
            // Salts 48 hours past their day's end go.
            store::delete_salts_before(c, day - 2 * DAY_MS)?;
            Ok(Written::new(salt, Effects::quiet()))
        })
        .await?;
    let mut salts = tracker.salts.lock().unwrap_or_else(|p| p.into_inner());
    salts.retain(|d, _| *d >= day - DAY_MS);
    salts.insert(day, salt.clone());
    Ok(salt)
}

pub struct Request<'a> {
    pub body: &'a [u8],
    pub ip: IpAddr,
    pub user_agent: &'a str,
    pub origin: Option<&'a str>,
    pub referer: Option<&'a str>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub accepted: usize,
    pub rejected: usize,
    pub bot: usize,
    pub cookieless: bool,
    pub visitor_id: Option<String>,
    pub session_id: Option<String>,
}

/// A refused batch: the error, and for a rate limit the seconds to wait.
#[derive(Debug)]
pub struct Refusal {
    pub error: Error,
    pub retry_after: Option<u64>,
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Refusal {
        Refusal { error, retry_after: None }
    }
}

/// `c_` + the first 22 base64url chars of HMAC-SHA256(salt, site ‖ 0 ‖ ip ‖ 0 ‖ UA) (rule SES-02).
pub fn cookieless_id(salt: &[u8], site_id: &str, ip: IpAddr, user_agent: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(salt).expect("HMAC takes any key length");
    mac.update(site_id.as_bytes());
    mac.update(&[0]);
    mac.update(ip.to_string().as_bytes());
    mac.update(&[0]);
    mac.update(user_agent.as_bytes());
    let mut s = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    s.truncate(22);
    format!("c_{s}")
}

fn short_hash(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The Origin check (rule TRK-20): a concrete foreign Origin rejects the
/// batch; `null` or none falls back to the Referer's host.
fn origin_allowed(origin: Option<&str>, referer: Option<&str>, domains: &[String]) -> bool {
    let page = match origin.map(str::trim) {
        Some(o) if !o.is_empty() && o != "null" => Some(o),
        _ => referer,
    };
    let Some(page) = page else { return true };
    match url::Url::parse(page) {
        Ok(u) => u.host_str().is_some_and(|h| urls::on_domains(&h.to_ascii_lowercase(), u.port(), domains)),
        Err(_) => false,
    }
}

pub async fn ingest(cx: &Context, req: Request<'_>) -> std::result::Result<Answer, Refusal> {
    let tracker = &cx.analytics.tracker;
    // Check 2: the batch's shape.
    let b = batch::parse(req.body)?;
    let n = b.events.len();
    let now = cx.now();
    // Check 3: rate limits, and the writer's queue (its 429 comes from the write).
    let visitor_key = b.visitor_id.as_deref().map(short_hash);
    tracker.limits.admit(now, crate::net::rate_key(req.ip), &b.site_id, visitor_key, n as u64).map_err(|secs| {
        Refusal {
            error: Error::new(
                Code::RateLimited,
                "too many tracker events from this client or for this site; retry later",
            ),
            retry_after: Some(secs),
        }
    })?;
    // Check 4: the site, from this process's copy (see `Tracker::sites`).
    let site_id = b.site_id.clone();
    let ttl = cx.config.read_cache_ttl.as_millis() as i64;
    let read = cx.read(move |c| sites::get(c, &site_id));
    let site = tracker.sites.get_or(b.site_id.clone(), cx.generation(), now, ttl, read).await?;
    let cookieless = site.cookieless;
    let answer =
        |accepted, rejected, bot| Answer { accepted, rejected, bot, cookieless, visitor_id: None, session_id: None };
    // Check 5: bots (rule TRK-18), before the Origin.
    let agent = match tracker.agents.of(req.user_agent) {
        Some(agent) if !b.bot => agent,
        _ => return Ok(answer(0, 0, n)),
    };
    // Check 6: the Origin.
    if !origin_allowed(req.origin, req.referer, &site.domains) {
        return Ok(answer(0, n, 0));
    }
    // Check 7, per event; the domain and pageview checks run in the write.
    let events: Vec<Option<Incoming>> = b.events.iter().map(batch::check_event).collect();
    if events.iter().all(Option::is_none) {
        return Ok(answer(0, n, 0));
    }
    let idle_ms = cx.config.session_idle.as_millis() as i64;
    let (visitor_id, anonymous) = match (&b.visitor_id, cookieless) {
        (Some(v), false) => (v.clone(), false),
        _ => {
            let day = now - now.rem_euclid(DAY_MS);
            let today = cookieless_id(&salt(cx, day).await?, &site.site_id, req.ip, req.user_agent);
            // A session open at midnight continues under its first id (rule SES-05);
            // only in the first idle period of a day can yesterday's still be open.
            let mut open = None;
            if now - day < idle_ms {
                let yesterday = cookieless_id(&salt(cx, day - DAY_MS).await?, &site.site_id, req.ip, req.user_agent);
                let (sid, y) = (site.site_id.clone(), yesterday.clone());
                let still_open = cx
                    .read(move |c| {
                        Ok(store::visitor(c, &sid, &y)?
                            .is_some_and(|s| !s.session_id.is_empty() && now - s.last_at < idle_ms))
                    })
                    .await?;
                open = still_open.then_some(yesterday);
            }
            (open.unwrap_or(today), true)
        }
    };
    // Country and region from the address when a database is set; the address is not kept.
    let location = cx.config.geoip_db.as_ref().map_or((None, None), |g| g.locate(req.ip));
    let visit = Visit {
        site_id: site.site_id.clone(),
        domains: site.domains.clone(),
        route_patterns: site.route_patterns.clone(),
        visitor_id: visitor_id.clone(),
        received_at: now,
        sent_at: b.sent_at,
        hash: b.hash,
        redact: cx.config.path_redaction,
        language: b.language.clone(),
        agent,
        country: location.0,
        region: location.1,
        idle_ms,
        max_ms: cx.config.session_max.as_millis() as i64,
        trusted: false,
        // A landing's fbclid is kept sealed, so only with a secrets key (WA-33).
        click_key: cx.secrets.clone(),
        // Kept only for a landing from a Facebook click, so most requests copy nothing.
        user_agent: (cx.secrets.is_some() && events.iter().flatten().any(from_facebook))
            .then(|| crate::secret::Secret::new(req.user_agent.to_string())),
        kept_session: tracker.sessions.get(&site.site_id, &visitor_id),
    };
    // Accepted with the other batches queued meanwhile, in one write (issue 25).
    let mut outcome = combine::accept(cx, visit, events, cx.config.write_queue_max).await?;
    // Committed: what it left of the session is kept (rule STORE-12).
    let left = outcome.left_session.take();
    tracker.sessions.settle(&site.site_id, &visitor_id, outcome.session_source, left, now, idle_ms);
    Ok(Answer {
        accepted: outcome.accepted,
        rejected: outcome.rejected,
        bot: 0,
        cookieless,
        visitor_id: (!anonymous).then_some(visitor_id),
        session_id: if anonymous { None } else { outcome.session_id },
    })
}

/// Whether an event's URL carries Meta's click id: its session may keep the
/// landing's user agent beside it (WA-33).
fn from_facebook(e: &Incoming) -> bool {
    match e {
        Incoming::Pageview { url, .. } | Incoming::Custom { url, .. } => urls::fbclid(url).is_some(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: SES-02
    #[test]
    fn cookieless_ids_are_keyed_hashes() {
        let ip: IpAddr = "203.0.113.9".parse().unwrap();
        let a = cookieless_id(&[1; 32], "loja", ip, "UA");
        assert!(a.starts_with("c_") && a.len() == 24, "{a}");
        assert_eq!(a, cookieless_id(&[1; 32], "loja", ip, "UA"));
        assert_ne!(a, cookieless_id(&[2; 32], "loja", ip, "UA"), "another day");
        assert_ne!(a, cookieless_id(&[1; 32], "outra", ip, "UA"), "another site");
        assert!(!a.contains("203"));
    }

    // rule: TRK-20
    #[test]
    fn the_origin_check() {
        let d = vec!["loja.example.com".to_string()];
        assert!(origin_allowed(Some("https://loja.example.com"), None, &d));
        assert!(!origin_allowed(Some("https://evil.example"), Some("https://loja.example.com/"), &d));
        assert!(origin_allowed(Some("null"), Some("https://loja.example.com/p"), &d));
        assert!(!origin_allowed(Some("null"), Some("https://evil.example/p"), &d));
        assert!(origin_allowed(None, None, &d));
    }
}
