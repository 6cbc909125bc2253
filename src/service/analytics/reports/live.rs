//! `liveVisitors` through the read cache (rule STORE-08): a
//! site's live state (its visitor rows of the last window, with their
//! sessions) is kept at most `RASTRO_READ_CACHE_TTL` and dropped when this
//! process commits tracker events of that site, so many dashboards polling
//! every few seconds cost at most one read per site per commit. Another
//! process's events show within the TTL.
//!
//! The state also holds its rows' `profile` (read with it; identify ends the
//! site's cached state like a tracker commit). A row whose session passed to
//! an identified id (its alias's state row) is not shown: the identified id's
//! row is (rule SES-19).

use std::collections::HashMap;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::service::analytics::people;
use crate::service::analytics::reports::live_cache::SiteLive;
use crate::service::analytics::reports::reads::{self, LiveArgs, MAX_LIVE};
use crate::service::analytics::reports::session_extras::Extras;
use crate::service::context::Context;
use crate::service::validate;
use crate::store::analytics::{self as store, LiveRow, SessionRow};

/// `liveVisitors`: from the cached state when `now` is the server's
/// (within the TTL), else straight from the database.
pub async fn live_visitors(cx: &Context, a: LiveArgs, public: bool, max_sites: usize) -> Result<Value> {
    live_visitors_with(cx, a, public, max_sites, false).await
}

/// [`live_visitors`]; with `profiles` (never for a public
/// token) each row carries its `profile` (rule OVR-14).
pub async fn live_visitors_with(
    cx: &Context,
    a: LiveArgs,
    public: bool,
    max_sites: usize,
    profiles: bool,
) -> Result<Value> {
    let profiles = profiles && !public;
    validate::site_ids_up_to(&a.site_ids, max_sites)?;
    validate::time("now", a.now)?;
    let limit = a.limit.unwrap_or(100);
    if !(1..=MAX_LIVE).contains(&limit) {
        return Err(Error::invalid(format!("limit must be 1-{MAX_LIVE}")));
    }
    let window = cx.config.live_window.as_millis() as i64;
    let ttl = cx.config.read_cache_ttl.as_millis() as i64;
    let server_now = cx.now();
    if (a.now - server_now).abs() > ttl {
        return cx
            .read(move |c| {
                let mut answer = reads::live_visitors_of(c, a, window, public, max_sites)?;
                if profiles && let Some(rows) = answer["visitors"].as_array_mut() {
                    people::attach(c, rows)?;
                }
                Ok(answer)
            })
            .await;
    }
    let mut entries: Vec<(LiveRow, SessionRow)> = Vec::new();
    let mut extras = Extras::default();
    let mut refs: HashMap<(String, String), Value> = HashMap::new();
    for site in &a.site_ids {
        let since = server_now - window - ttl;
        let cache = &cx.analytics.live;
        let (reader, sid) = (cx.clone(), site.clone());
        let state = cache
            .states
            .get_or(format!("live|{site}"), cache.generation(site), server_now, ttl, async move {
                let rows = reader
                    .read(move |c| {
                        crate::service::sites::require(c, &sid)?;
                        // An alias's row whose session passed to the identified id is not shown.
                        let rows: Vec<(LiveRow, SessionRow)> = store::live_since(c, &sid, since)?
                            .into_iter()
                            .filter(|(v, s)| v.visitor_id == s.visitor_id)
                            .collect();
                        let pairs: Vec<(String, String)> =
                            rows.iter().map(|(v, _)| (v.site_id.clone(), v.visitor_id.clone())).collect();
                        let profiles = people::profile_refs(c, &pairs)?;
                        // Goals and affiliates change only with a commit, which drops this state.
                        let extras = Extras::load_live(c, rows.iter().map(|(_, s)| s))?;
                        Ok((rows, extras, profiles))
                    })
                    .await?;
                Ok(SiteLive { rows: rows.0, extras: rows.1, profiles: rows.2 })
            })
            .await?;
        extras.extend(&state.extras);
        entries.extend(state.rows.iter().filter(|(v, _)| v.last_at >= a.now - window && v.last_at <= a.now).cloned());
        if profiles {
            refs.extend(state.profiles.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    entries.sort_by(|(x, _), (y, _)| {
        y.last_at
            .cmp(&x.last_at)
            .then_with(|| x.site_id.as_bytes().cmp(y.site_id.as_bytes()))
            .then_with(|| x.visitor_id.as_bytes().cmp(y.visitor_id.as_bytes()))
    });
    let count = entries.len() as i64;
    entries.truncate(limit as usize);
    let mut answer = reads::live_answer(a.now, count, &entries, &extras, public);
    if profiles && let Some(rows) = answer["visitors"].as_array_mut() {
        people::attach_from(rows, &refs);
    }
    Ok(answer)
}
