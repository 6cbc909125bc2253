//! The configure scope's definitions (CFG-04 to CFG-11): goals, funnels and
//! affiliates, with their caps, uniqueness rules and ids. Reports read them
//! (`goals`, `funnels`, `affiliates` modules); acceptance decides goal
//! completions and affiliate tags against them (rules ARPT-10, SES-15).

pub mod api;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::ids;
use crate::service::analytics::vocabulary::EventKind;
use crate::service::api::Removed;
use crate::service::sites;
use crate::service::sites::routes;
use crate::service::validate;
use crate::store::analytics::definitions::{self as store, AffiliateRow, FunnelRow, GoalRow};
use crate::store::analytics::funnels as funnel_store;

pub const MAX_GOALS: usize = 50;
pub const MAX_FUNNELS: usize = 20;
pub const MAX_AFFILIATES: usize = 100;
pub const MIN_FUNNEL_STEPS: usize = 2;
pub const MAX_FUNNEL_STEPS: usize = 10;
pub const MIN_FUNNEL_WINDOW_MS: i64 = 60_000;
pub const MAX_FUNNEL_WINDOW_MS: i64 = 7_776_000_000;
pub const MAX_COMMISSION_BPS: i64 = 10_000;
pub const MAX_AFFILIATE_WINDOW_DAYS: i64 = 365;

/// What a goal or a funnel step matches (§5.2): a path pattern (§5.8) or an
/// exact custom-event name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Matcher {
    Pageview { path: String },
    Event { name: String },
}

impl Matcher {
    pub fn check(&self) -> Result<()> {
        match self {
            Matcher::Pageview { path } if !routes::is_valid(path) => Err(Error::invalid(
                "matcher.path must be a path pattern: /, literals, :name, * and a last ** (ROUTE-01)",
            )),
            Matcher::Event { name } => validate::text("matcher.name", name, 1, 120),
            Matcher::Pageview { .. } => Ok(()),
        }
    }

    /// Whether an accepted pageview (its stored path) or custom event matches.
    pub fn matches(&self, kind: EventKind, path: &str, name: Option<&str>) -> bool {
        match self {
            Matcher::Pageview { path: p } => kind == EventKind::Pageview && routes::matches(p, path),
            Matcher::Event { name: n } => kind == EventKind::Event && name == Some(n.as_str()),
        }
    }

    fn parts(&self) -> (&'static str, &str) {
        match self {
            Matcher::Pageview { path } => (EventKind::Pageview.as_str(), path),
            Matcher::Event { name } => (EventKind::Event.as_str(), name),
        }
    }

    fn from_parts(kind: &str, value: &str) -> Matcher {
        match EventKind::parse(kind) {
            // A stored kind is one `parts` wrote: the event's, or a pageview's.
            Some(EventKind::Event) => Matcher::Event { name: value.to_string() },
            Some(EventKind::Pageview) | None => Matcher::Pageview { path: value.to_string() },
        }
    }

    pub fn of_goal(g: &GoalRow) -> Matcher {
        Matcher::from_parts(&g.matcher_kind, &g.matcher_value)
    }
}

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

/// `[a-z0-9_-]{1,64}` (goal and funnel keys).
fn definition_key(field: &str, s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        return Err(Error::invalid(format!("{field} must be 1-64 characters of [a-z0-9_-]")));
    }
    Ok(())
}

/// `[a-z0-9][a-z0-9-]{0,63}` (affiliate and tracked-link slugs).
pub fn slug(s: &str) -> Result<()> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        return Err(Error::invalid("slug must be [a-z0-9][a-z0-9-]{0,63}"));
    }
    Ok(())
}

// ---------------------------------------------------------------- goals

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpsertGoal {
    pub site_id: String,
    pub goal_id: Option<String>,
    pub key: String,
    pub name: String,
    pub matcher: Matcher,
    #[serde(default)]
    pub value_cents: Option<i64>,
    pub active: Option<bool>,
}

/// A goal as `listGoals` answers it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Goal {
    pub goal_id: String,
    pub key: String,
    pub name: String,
    pub matcher: Matcher,
    pub value_cents: Option<i64>,
    pub active: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<&GoalRow> for Goal {
    fn from(g: &GoalRow) -> Goal {
        Goal {
            goal_id: g.id.clone(),
            key: g.key.clone(),
            name: g.name.clone(),
            matcher: Matcher::of_goal(g),
            value_cents: g.value_cents,
            active: g.active,
            created_at: g.created_at,
            updated_at: g.updated_at,
        }
    }
}

/// `listGoals`: the site's goals by key (rule CFG-04).
pub fn list_goals(conn: &mut AnyConnection, site_id: &str) -> Result<Vec<Goal>> {
    sites::require(conn, site_id)?;
    let mut goals = store::goals(conn, site_id, false).map_err(db)?;
    goals.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(goals.iter().map(Goal::from).collect())
}

pub fn check_goal(a: &UpsertGoal) -> Result<()> {
    definition_key("key", &a.key)?;
    validate::text("name", &a.name, 1, 100)?;
    a.matcher.check()?;
    if let Some(v) = a.value_cents {
        validate::cents("valueCents", v)?; // rule: CFG-11
    }
    Ok(())
}

/// `upsertGoal`: creates without `goalId`, replaces with one (rules CFG-04 to CFG-07).
pub fn upsert_goal(conn: &mut AnyConnection, now: i64, a: UpsertGoal) -> Result<String> {
    check_goal(&a)?;
    sites::require(conn, &a.site_id)?;
    let goals = store::goals(conn, &a.site_id, false).map_err(db)?;
    let existing = match &a.goal_id {
        Some(id) => Some(
            goals.iter().find(|g| &g.id == id).cloned().ok_or_else(|| Error::not_found("no such goal on this site"))?,
        ),
        None => None,
    };
    let others = goals.iter().filter(|g| Some(&g.id) != a.goal_id.as_ref());
    let active = a.active.unwrap_or(true);
    for g in others {
        if g.key == a.key {
            return Err(Error::conflict("another goal of this site has this key"));
        }
        if active && g.active && Matcher::of_goal(g) == a.matcher {
            return Err(Error::conflict("another active goal of this site has this matcher"));
        }
    }
    if existing.is_none() && goals.len() >= MAX_GOALS {
        return Err(Error::invalid(format!("a site has at most {MAX_GOALS} goals")));
    }
    let (kind, value) = a.matcher.parts();
    let row = GoalRow {
        id: match &existing {
            Some(g) => g.id.clone(),
            None => ids::time_ordered("g_", now)?,
        },
        site_id: a.site_id.clone(),
        key: a.key,
        name: a.name,
        matcher_kind: kind.to_string(),
        matcher_value: value.to_string(),
        value_cents: a.value_cents,
        active,
        created_at: existing.as_ref().map_or(now, |g| g.created_at),
        updated_at: now,
        removed_at: None,
    };
    if existing.is_some() {
        store::update_goal(conn, &row).map_err(db)?;
    } else {
        store::insert_goal(conn, &row).map_err(db)?;
    }
    Ok(row.id)
}

pub fn remove_goal(conn: &mut AnyConnection, now: i64, site_id: &str, goal_id: &str) -> Result<Removed> {
    sites::require(conn, site_id)?;
    let n = store::remove_goal(conn, site_id, goal_id, now).map_err(db)?;
    Ok(Removed { removed: n > 0 })
}

// ---------------------------------------------------------------- funnels

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    pub label: String,
    pub matcher: Matcher,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpsertFunnel {
    pub site_id: String,
    pub funnel_id: Option<String>,
    pub key: String,
    pub name: String,
    pub steps: Vec<Step>,
    pub window_ms: i64,
}

pub fn steps_of(f: &FunnelRow) -> Vec<Step> {
    serde_json::from_str(&f.steps).unwrap_or_default()
}

/// A funnel as `listFunnels` answers it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Funnel {
    pub funnel_id: String,
    pub key: String,
    pub name: String,
    pub window_ms: i64,
    pub steps: Vec<Step>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<&FunnelRow> for Funnel {
    fn from(f: &FunnelRow) -> Funnel {
        Funnel {
            funnel_id: f.id.clone(),
            key: f.key.clone(),
            name: f.name.clone(),
            window_ms: f.window_ms,
            steps: steps_of(f),
            created_at: f.created_at,
            updated_at: f.updated_at,
        }
    }
}

/// `listFunnels`: by key.
pub fn list_funnels(conn: &mut AnyConnection, site_id: &str) -> Result<Vec<Funnel>> {
    sites::require(conn, site_id)?;
    let mut funnels = store::funnels(conn, site_id).map_err(db)?;
    funnels.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(funnels.iter().map(Funnel::from).collect())
}

/// Rule CFG-08.
pub fn check_funnel(a: &UpsertFunnel) -> Result<()> {
    definition_key("key", &a.key)?;
    validate::text("name", &a.name, 1, 100)?;
    check_steps(&a.steps, a.window_ms)
}

/// A funnel's steps and window (rule CFG-08), saved or only previewed.
pub fn check_steps(steps: &[Step], window_ms: i64) -> Result<()> {
    if !(MIN_FUNNEL_STEPS..=MAX_FUNNEL_STEPS).contains(&steps.len()) {
        return Err(Error::invalid(format!("a funnel has {MIN_FUNNEL_STEPS}-{MAX_FUNNEL_STEPS} steps")));
    }
    for s in steps {
        validate::text("steps[].label", &s.label, 1, 100)?;
        s.matcher.check()?;
    }
    if !(MIN_FUNNEL_WINDOW_MS..=MAX_FUNNEL_WINDOW_MS).contains(&window_ms) {
        return Err(Error::invalid(format!("windowMs must be {MIN_FUNNEL_WINDOW_MS}-{MAX_FUNNEL_WINDOW_MS}")));
    }
    Ok(())
}

pub fn upsert_funnel(conn: &mut AnyConnection, now: i64, a: UpsertFunnel) -> Result<String> {
    check_funnel(&a)?;
    sites::require(conn, &a.site_id)?;
    let funnels = store::funnels(conn, &a.site_id).map_err(db)?;
    let existing = match &a.funnel_id {
        Some(id) => Some(
            funnels
                .iter()
                .find(|f| &f.id == id)
                .cloned()
                .ok_or_else(|| Error::not_found("no such funnel on this site"))?,
        ),
        None => None,
    };
    if funnels.iter().any(|f| f.key == a.key && Some(&f.id) != a.funnel_id.as_ref()) {
        return Err(Error::conflict("another funnel of this site has this key"));
    }
    if existing.is_none() && funnels.len() >= MAX_FUNNELS {
        return Err(Error::invalid(format!("a site has at most {MAX_FUNNELS} funnels")));
    }
    let row = FunnelRow {
        id: match &existing {
            Some(f) => f.id.clone(),
            None => ids::time_ordered("f_", now)?,
        },
        site_id: a.site_id.clone(),
        key: a.key,
        name: a.name,
        window_ms: a.window_ms,
        steps: serde_json::to_string(&a.steps).map_err(Error::internal)?,
        created_at: existing.as_ref().map_or(now, |f| f.created_at),
        updated_at: now,
    };
    // A new funnel, or new steps or window: its index is rebuilt from the retained events.
    let changed = existing.as_ref().is_none_or(|f| f.steps != row.steps || f.window_ms != row.window_ms);
    if existing.is_some() {
        store::update_funnel(conn, &row).map_err(db)?;
    } else {
        store::insert_funnel(conn, &row).map_err(db)?;
    }
    if changed {
        funnel_store::delete_steps(conn, &row.id).map_err(db)?;
        funnel_store::start_rebuild(conn, &row.id, &row.site_id).map_err(db)?;
    }
    Ok(row.id)
}

pub fn remove_funnel(conn: &mut AnyConnection, site_id: &str, funnel_id: &str) -> Result<Removed> {
    sites::require(conn, site_id)?;
    let n = store::remove_funnel(conn, site_id, funnel_id).map_err(db)?;
    if n > 0 {
        funnel_store::delete_steps(conn, funnel_id).map_err(db)?;
        funnel_store::end_rebuild(conn, funnel_id).map_err(db)?;
    }
    Ok(Removed { removed: n > 0 })
}

// ---------------------------------------------------------------- affiliates

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpsertAffiliate {
    pub site_id: String,
    pub affiliate_id: Option<String>,
    pub slug: String,
    pub name: String,
    pub commission_bps: i64,
    pub window_days: i64,
    /// False pauses it: new landings with its `ref` are no longer tagged,
    /// while visitors it brought keep their window. Omitted: unchanged (new: true).
    #[serde(default)]
    pub active: Option<bool>,
}

/// An affiliate as `listAffiliates` answers it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Affiliate {
    pub affiliate_id: String,
    pub slug: String,
    pub name: String,
    pub commission_bps: i64,
    pub window_days: i64,
    pub active: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<&AffiliateRow> for Affiliate {
    fn from(a: &AffiliateRow) -> Affiliate {
        Affiliate {
            affiliate_id: a.id.clone(),
            slug: a.slug.clone(),
            name: a.name.clone(),
            commission_bps: a.commission_bps,
            window_days: a.window_days,
            active: a.active,
            created_at: a.created_at,
            updated_at: a.updated_at,
        }
    }
}

/// `listAffiliates`: by slug.
pub fn list_affiliates(conn: &mut AnyConnection, site_id: &str) -> Result<Vec<Affiliate>> {
    sites::require(conn, site_id)?;
    let mut rows = store::affiliates(conn, site_id, false).map_err(db)?;
    rows.sort_by(|a, b| a.slug.cmp(&b.slug));
    Ok(rows.iter().map(Affiliate::from).collect())
}

/// Rule CFG-09.
pub fn check_affiliate(a: &UpsertAffiliate) -> Result<()> {
    slug(&a.slug)?;
    validate::text("name", &a.name, 1, 100)?;
    if !(0..=MAX_COMMISSION_BPS).contains(&a.commission_bps) {
        return Err(Error::invalid(format!("commissionBps must be 0-{MAX_COMMISSION_BPS}")));
    }
    if !(1..=MAX_AFFILIATE_WINDOW_DAYS).contains(&a.window_days) {
        return Err(Error::invalid(format!("windowDays must be 1-{MAX_AFFILIATE_WINDOW_DAYS}")));
    }
    Ok(())
}

pub fn upsert_affiliate(conn: &mut AnyConnection, now: i64, a: UpsertAffiliate) -> Result<String> {
    check_affiliate(&a)?;
    sites::require(conn, &a.site_id)?;
    let rows = store::affiliates(conn, &a.site_id, false).map_err(db)?;
    let existing = match &a.affiliate_id {
        Some(id) => Some(
            rows.iter()
                .find(|r| &r.id == id)
                .cloned()
                .ok_or_else(|| Error::not_found("no such affiliate on this site"))?,
        ),
        None => None,
    };
    if rows.iter().any(|r| r.slug == a.slug && Some(&r.id) != a.affiliate_id.as_ref()) {
        return Err(Error::conflict("another affiliate of this site has this slug"));
    }
    if existing.is_none() && rows.len() >= MAX_AFFILIATES {
        return Err(Error::invalid(format!("a site has at most {MAX_AFFILIATES} affiliates")));
    }
    let row = AffiliateRow {
        id: match &existing {
            Some(r) => r.id.clone(),
            None => ids::time_ordered("a_", now)?,
        },
        site_id: a.site_id.clone(),
        slug: a.slug,
        name: a.name,
        commission_bps: a.commission_bps,
        window_days: a.window_days,
        created_at: existing.as_ref().map_or(now, |r| r.created_at),
        updated_at: now,
        removed_at: None,
        active: a.active.unwrap_or_else(|| existing.as_ref().is_none_or(|r| r.active)),
    };
    if existing.is_some() {
        store::update_affiliate(conn, &row).map_err(db)?;
    } else {
        store::insert_affiliate(conn, &row).map_err(db)?;
    }
    Ok(row.id)
}

/// `removeAffiliate`: conversions keep their frozen commission (rule CFG-10).
pub fn remove_affiliate(conn: &mut AnyConnection, now: i64, site_id: &str, affiliate_id: &str) -> Result<Removed> {
    sites::require(conn, site_id)?;
    let n = store::remove_affiliate(conn, site_id, affiliate_id, now).map_err(db)?;
    Ok(Removed { removed: n > 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matchers_parse_by_kind_and_refuse_unknown_fields() {
        let m: Matcher = serde_json::from_value(json!({"kind": "pageview", "path": "/p/:id"})).unwrap();
        assert!(m.matches(EventKind::Pageview, "/p/7", None));
        assert!(!m.matches(EventKind::Event, "/p/7", Some("x")));
        let e: Matcher = serde_json::from_value(json!({"kind": "event", "name": "signup"})).unwrap();
        assert!(e.matches(EventKind::Event, "/", Some("signup")));
        assert!(serde_json::from_value::<Matcher>(json!({"kind": "event", "name": "a", "x": 1})).is_err());
        assert!(serde_json::from_value::<Matcher>(json!({"kind": "click", "name": "a"})).is_err());
    }

    #[test]
    fn slugs_and_keys_follow_their_grammar() {
        assert!(slug("gio-2").is_ok());
        assert!(slug("-gio").is_err());
        assert!(slug("Gio").is_err());
        assert!(slug(&"a".repeat(65)).is_err());
        assert!(definition_key("key", "sign_up-1").is_ok());
        assert!(definition_key("key", "Sign").is_err());
    }
}
