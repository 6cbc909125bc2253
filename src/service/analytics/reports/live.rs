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

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use utoipa::{PartialSchema, ToSchema};

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::people::{self, ProfileRef, ProfileRefs, Profiled};
use crate::service::analytics::reports::filtered::{dims, kept};
use crate::service::analytics::reports::funnels::LiveFunnel;
use crate::service::analytics::reports::live_cache::SiteLive;
use crate::service::analytics::reports::session_extras::{AffiliateRef, Extras, LiveLead};
use crate::service::context::Context;
use crate::service::reporting::filters::Filter;
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::{self as store, LiveRow, SessionRow};
use crate::store::leads::sites::SiteRow;

pub const MAX_LIVE: i64 = 500;

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LiveArgs {
    pub site_ids: Vec<String>,
    pub now: i64,
    pub limit: Option<i64>,
    /// Only the visitors whose session passes these (REPORTING §3): a
    /// session dimension's value, or one of the session's events for an
    /// event dimension; `count` is then the visitors that pass.
    #[serde(default)]
    pub filters: Vec<Filter>,
}

/// A live visitor as a public link sees it (rule PUB-05): no visitor id of
/// its own, no campaign, money, goals or person.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicLiveVisitor {
    pub site_id: String,
    /// The session's id: a public link never learns the visitor's.
    pub visitor_id: String,
    pub session_id: String,
    pub started_at: i64,
    pub last_seen_at: i64,
    /// The route, never the raw path.
    pub current_path: String,
    pub pageviews: i64,
    pub events: i64,
    pub source: String,
    pub country: Option<String>,
    pub device: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FullLiveVisitor {
    pub site_id: String,
    pub visitor_id: String,
    pub session_id: String,
    pub started_at: i64,
    pub last_seen_at: i64,
    pub current_path: String,
    pub entry_path: String,
    pub pageviews: i64,
    pub events: i64,
    pub source: String,
    pub campaign: Option<String>,
    pub affiliate: Option<AffiliateRef>,
    pub returning: bool,
    pub conversions: i64,
    pub revenue_cents: i64,
    pub goals: Vec<String>,
    pub funnel: Option<LiveFunnel>,
    pub country: Option<String>,
    pub device: Option<String>,
    /// Present only while `visitorProfiles` is on (rule OVR-14).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<ProfileRef>)]
    pub profile: Option<Option<ProfileRef>>,
    /// The lead the visitor became by tapping the site's WhatsApp link
    /// (rule WA-14); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead: Option<LiveLead>,
}

/// A row of `liveVisitors`: redacted for a public link.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum LiveVisitor {
    Full(Box<FullLiveVisitor>),
    Public(PublicLiveVisitor),
}

/// `anyOf`, not the derived `oneOf`: a full row also holds every field a
/// redacted one has, so it would match both.
impl utoipa::PartialSchema for LiveVisitor {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::Ref;
        use utoipa::openapi::schema::AnyOfBuilder;
        AnyOfBuilder::new()
            .item(Ref::from_schema_name(FullLiveVisitor::name()))
            .item(Ref::from_schema_name(PublicLiveVisitor::name()))
            .into()
    }
}

impl ToSchema for LiveVisitor {
    fn schemas(out: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        out.push((FullLiveVisitor::name().into_owned(), FullLiveVisitor::schema()));
        out.push((PublicLiveVisitor::name().into_owned(), PublicLiveVisitor::schema()));
        FullLiveVisitor::schemas(out);
        PublicLiveVisitor::schemas(out);
    }
}

impl Profiled for LiveVisitor {
    fn person(&self) -> (String, String) {
        match self {
            LiveVisitor::Full(v) => (v.site_id.clone(), v.visitor_id.clone()),
            LiveVisitor::Public(v) => (v.site_id.clone(), v.visitor_id.clone()),
        }
    }

    /// A public row never carries a person.
    fn set_profile(&mut self, profile: Option<ProfileRef>) {
        if let LiveVisitor::Full(v) = self {
            v.profile = Some(profile);
        }
    }
}

/// The `liveVisitors` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LiveVisitors {
    pub now: i64,
    /// Visitors in the window, beyond the rows shown when `truncated`.
    pub count: i64,
    pub truncated: bool,
    pub visitors: Vec<LiveVisitor>,
}

/// `liveVisitors` straight from the database (rule OVR-12; a public
/// token's rows redacted, PUB-05), for a reader allowed `max_sites` sites.
pub fn live_visitors_of(
    conn: &mut AnyConnection,
    a: LiveArgs,
    window_ms: i64,
    public: bool,
    max_sites: usize,
) -> Result<LiveVisitors> {
    validate::site_ids_up_to(&a.site_ids, max_sites)?;
    validate::time("now", a.now)?;
    let limit = a.limit.unwrap_or(100);
    if !(1..=MAX_LIVE).contains(&limit) {
        return Err(Error::invalid(format!("limit must be 1-{MAX_LIVE}")));
    }
    let rules = dims::rules(&a.filters)?;
    let site_rows = sites::require_many(conn, &a.site_ids)?;
    let (count, entries) = if rules.is_empty() {
        let (count, rows) = store::live(conn, &a.site_ids, a.now - window_ms, a.now, limit)?;
        let ids: Vec<String> = rows.iter().map(|r| r.session_id.clone()).collect();
        let sessions: HashMap<String, SessionRow> =
            store::sessions(conn, &ids)?.into_iter().map(|s| (s.id.clone(), s)).collect();
        (count, rows.into_iter().filter_map(|v| sessions.get(&v.session_id).cloned().map(|s| (v, s))).collect())
    } else {
        // Every live row of the window, its session checked, then the latest shown.
        let mut entries = Vec::new();
        for site in &a.site_ids {
            entries.extend(
                store::live_since(conn, site, a.now - window_ms)?.into_iter().filter(|(v, _)| v.last_at <= a.now),
            );
        }
        latest(passing(conn, &site_rows, entries, &rules)?, limit)
    };
    let extras = if public { Extras::default() } else { Extras::load_live(conn, entries.iter().map(|(_, s)| s))? };
    Ok(live_answer(a.now, count, &entries, &extras, public))
}

/// The `liveVisitors` answer of ordered rows; a public token's rows redacted (rule PUB-05).
fn live_answer(now: i64, count: i64, entries: &[(LiveRow, SessionRow)], extras: &Extras, public: bool) -> LiveVisitors {
    let visitors: Vec<LiveVisitor> = entries
        .iter()
        .map(|(v, s)| {
            if public {
                LiveVisitor::Public(PublicLiveVisitor {
                    site_id: v.site_id.clone(),
                    visitor_id: s.id.clone(),
                    session_id: s.id.clone(),
                    started_at: s.started_at,
                    last_seen_at: v.last_at,
                    current_path: v.current_route.clone(),
                    pageviews: s.pageviews,
                    events: s.events,
                    source: s.source.clone(),
                    country: s.country.clone(),
                    device: s.device.clone(),
                })
            } else {
                LiveVisitor::Full(Box::new(FullLiveVisitor {
                    site_id: v.site_id.clone(),
                    visitor_id: v.visitor_id.clone(),
                    session_id: s.id.clone(),
                    started_at: s.started_at,
                    last_seen_at: v.last_at,
                    current_path: v.current_path.clone(),
                    entry_path: s.entry_path.clone(),
                    pageviews: s.pageviews,
                    events: s.events,
                    source: s.source.clone(),
                    campaign: s.campaign.clone(),
                    affiliate: extras.affiliate(s),
                    returning: s.is_returning,
                    conversions: s.conversions,
                    revenue_cents: s.revenue_cents,
                    goals: extras.goals(s),
                    funnel: extras.funnel(s),
                    country: s.country.clone(),
                    device: s.device.clone(),
                    profile: None,
                    lead: extras.lead(s),
                }))
            }
        })
        .collect();
    LiveVisitors { now, count, truncated: count > visitors.len() as i64, visitors }
}

/// How many rows, and the `limit` latest: `last_at` desc, then site and
/// visitor by bytes.
fn latest(mut entries: Vec<(LiveRow, SessionRow)>, limit: i64) -> (i64, Vec<(LiveRow, SessionRow)>) {
    entries.sort_by(|(x, _), (y, _)| {
        y.last_at
            .cmp(&x.last_at)
            .then_with(|| x.site_id.as_bytes().cmp(y.site_id.as_bytes()))
            .then_with(|| x.visitor_id.as_bytes().cmp(y.visitor_id.as_bytes()))
    });
    let count = entries.len() as i64;
    entries.truncate(limit as usize);
    (count, entries)
}

/// The rows whose sessions pass `rules` (REP-06, REP-07).
fn passing(
    conn: &mut AnyConnection,
    sites: &[SiteRow],
    entries: Vec<(LiveRow, SessionRow)>,
    rules: &[dims::Rule],
) -> Result<Vec<(LiveRow, SessionRow)>> {
    let sessions = entries.iter().map(|(_, s)| s.clone()).collect();
    let kept: HashSet<String> = kept::passing(conn, sites, sessions, rules)?.into_iter().map(|s| s.id).collect();
    Ok(entries.into_iter().filter(|(_, s)| kept.contains(&s.id)).collect())
}

/// `liveVisitors`: from the cached state when `now` is the server's
/// (within the TTL), else straight from the database.
pub async fn live_visitors(cx: &Context, a: LiveArgs, public: bool, max_sites: usize) -> Result<LiveVisitors> {
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
) -> Result<LiveVisitors> {
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
                let mut answer = live_visitors_of(c, a, window, public, max_sites)?;
                if profiles {
                    people::attach(c, &mut answer.visitors)?;
                }
                Ok(answer)
            })
            .await;
    }
    let rules = dims::rules(&a.filters)?;
    let mut entries: Vec<(LiveRow, SessionRow)> = Vec::new();
    let mut extras = Extras::default();
    let mut refs: ProfileRefs = HashMap::new();
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
                        let rows: Vec<(LiveRow, SessionRow)> = store::live_since(c, &sid, since)?;
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
    if !rules.is_empty() {
        let ids = a.site_ids.clone();
        entries = cx
            .read(move |c| {
                let site_rows = sites::require_many(c, &ids)?;
                passing(c, &site_rows, entries, &rules)
            })
            .await?;
    }
    let (count, entries) = latest(entries, limit);
    let mut answer = live_answer(a.now, count, &entries, &extras, public);
    if profiles {
        people::attach_from(&mut answer.visitors, &refs);
    }
    Ok(answer)
}
