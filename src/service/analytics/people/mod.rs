//! People reads (PPL-09 to PPL-11): `getVisitorProfile`, `listPeople`
//! (paginated by signed cursors, searchable), and the `profile` that session
//! and live rows carry while `visitorProfiles` is on (rules OVR-14, PPL-14).
//! Counters are computed at read from the person's sessions (its id and its
//! aliases on the site).

pub mod api;
pub mod identify;
pub mod search;

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::pages::{self, Call, Page, PaginationOpts};
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::people::{self as store, ProfileRow, Search};
use crate::store::leads::sites as site_store;

pub const MAX_PEOPLE_PAGE: i64 = 50;
const MAX_SEARCH: usize = 100;
const CHUNK: usize = 400;
/// From this many matching terms on, a search walks the profiles in list
/// order instead of sorting its matches (measured on a million profiles:
/// either way stays near 15 ms at the crossing, and far below away from it).
const WALK_FROM: usize = 5_000;

fn attributes(p: &ProfileRow) -> Map<String, Value> {
    serde_json::from_str::<Map<String, Value>>(&p.attributes).unwrap_or_default()
}

/// The `getVisitorProfile` answer: the person and its sessions' sums.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VisitorProfile {
    pub site_id: String,
    pub visitor_id: String,
    pub name: Option<String>,
    pub email: Option<String>,
    #[schema(value_type = Object)]
    pub attributes: Map<String, Value>,
    pub identified_at: i64,
    pub first_seen_at: i64,
    pub last_seen_at: i64,
    pub sessions: i64,
    pub pageviews: i64,
    pub conversions: i64,
    pub revenue_cents: i64,
}

/// A row of `listPeople`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersonRow {
    pub visitor_id: String,
    pub name: Option<String>,
    pub email: Option<String>,
    #[schema(value_type = Object)]
    pub attributes: Map<String, Value>,
    pub identified_at: i64,
    pub last_seen_at: i64,
    pub sessions: i64,
}

/// The person a session or live row is, or is an alias of (rule OVR-14).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileRef {
    pub visitor_id: String,
    pub name: Option<String>,
    pub email: Option<String>,
}

/// Per (site, visitor id): its `profile`, or None (no person, or a cookieless site).
pub type ProfileRefs = HashMap<(String, String), Option<ProfileRef>>;

/// A row that carries `profile` while `visitorProfiles` is on: the outer
/// Option says whether the key is there at all, the inner one is its null.
pub trait Profiled {
    fn person(&self) -> (String, String);
    fn set_profile(&mut self, profile: Option<ProfileRef>);
}

/// Sums of a person's sessions over its ids.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    sessions: i64,
    pageviews: i64,
    conversions: i64,
    revenue_cents: i64,
    first_at: Option<i64>,
    last_at: Option<i64>,
}

/// Per canonical id of a site: the totals of its sessions and its aliases'.
fn totals_of(conn: &mut AnyConnection, site_id: &str, canonical: &[String]) -> Result<HashMap<String, Totals>> {
    let mut owner_of: HashMap<String, String> = canonical.iter().map(|c| (c.clone(), c.clone())).collect();
    for chunk in canonical.chunks(CHUNK) {
        for a in store::aliases_of(conn, site_id, chunk)? {
            owner_of.insert(a.alias_id, a.visitor_id);
        }
    }
    let ids: Vec<String> = owner_of.keys().cloned().collect();
    let mut out: HashMap<String, Totals> = HashMap::new();
    for chunk in ids.chunks(CHUNK) {
        for r in store::session_totals(conn, site_id, chunk)? {
            let Some(owner) = owner_of.get(&r.visitor_id) else { continue };
            let t = out.entry(owner.clone()).or_default();
            t.sessions += r.sessions;
            t.pageviews += r.pageviews;
            t.conversions += r.conversions;
            t.revenue_cents += r.revenue_cents;
            t.first_at = Some(t.first_at.map_or(r.first_at, |f| f.min(r.first_at)));
            t.last_at = Some(t.last_at.map_or(r.last_at, |l| l.max(r.last_at)));
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProfileArgs {
    pub site_id: String,
    pub visitor_id: String,
}

/// `getVisitorProfile`: the profile of an identified id or of its alias, or
/// null (rules PPL-05, PPL-09).
pub fn get_visitor_profile(conn: &mut AnyConnection, a: ProfileArgs) -> Result<Option<VisitorProfile>> {
    sites::require(conn, &a.site_id)?;
    validate::text("visitorId", &a.visitor_id, 1, 64)?;
    let Some(canonical) = store::canonical_of(conn, &a.site_id, &a.visitor_id)? else { return Ok(None) };
    let Some(p) = store::profile(conn, &a.site_id, &canonical)? else { return Ok(None) };
    let t = totals_of(conn, &a.site_id, std::slice::from_ref(&canonical))?.remove(&canonical).unwrap_or_default();
    Ok(Some(VisitorProfile {
        attributes: attributes(&p),
        first_seen_at: t.first_at.map_or(p.first_seen_at, |f| f.min(p.first_seen_at)),
        last_seen_at: t.last_at.map_or(p.last_seen_at, |l| l.max(p.last_seen_at)),
        site_id: p.site_id,
        visitor_id: p.visitor_id,
        name: p.name,
        email: p.email,
        identified_at: p.identified_at,
        sessions: t.sessions,
        pageviews: t.pageviews,
        conversions: t.conversions,
        revenue_cents: t.revenue_cents,
    }))
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PeopleFilter {
    pub search: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListPeopleArgs {
    pub site_id: String,
    #[serde(default)]
    pub filter: Option<PeopleFilter>,
    pub pagination_opts: PaginationOpts,
}

/// `listPeople`: the site's profiles, `identifiedAt` desc, `visitorId` desc,
/// optionally searched (rules PPL-10, PPL-11).
pub fn list_people(conn: &mut AnyConnection, key: &[u8], a: ListPeopleArgs) -> Result<Page<PersonRow>> {
    let size = a.pagination_opts.check(MAX_PEOPLE_PAGE)?;
    let search = a.filter.and_then(|f| f.search);
    if let Some(s) = &search {
        validate::text("filter.search", s, 1, MAX_SEARCH)?;
    }
    sites::require(conn, &a.site_id)?;
    let prefix = search.as_deref().and_then(search::prefix);
    let call = Call { function: "listPeople", scope: json!([a.site_id, prefix]) };
    let from = pages::decode(key, &call, a.pagination_opts.cursor.as_deref())?;
    let after = match &from {
        None => None,
        Some(keys) => match (keys.first().and_then(Value::as_i64), keys.get(1).and_then(Value::as_str)) {
            (Some(t), Some(id)) => Some((t, id.to_string())),
            _ => return Err(Error::invalid("the cursor is not one of this call's")),
        },
    };
    let search = match prefix.as_deref() {
        None => Search::None,
        Some(p) if store::terms_at_least(conn, &a.site_id, p, WALK_FROM)? => Search::Walk(p),
        Some(p) => Search::FromTerms(p),
    };
    let rows = store::people_page(conn, &a.site_id, search, after, size + 1)?;
    let ids: Vec<String> = rows.iter().map(|p| p.visitor_id.clone()).collect();
    let totals = totals_of(conn, &a.site_id, &ids)?;
    let render = |p: &ProfileRow| {
        let t = totals.get(&p.visitor_id).copied().unwrap_or_default();
        PersonRow {
            visitor_id: p.visitor_id.clone(),
            name: p.name.clone(),
            email: p.email.clone(),
            attributes: attributes(p),
            identified_at: p.identified_at,
            last_seen_at: t.last_at.map_or(p.last_seen_at, |l| l.max(p.last_seen_at)),
            sessions: t.sessions,
        }
    };
    Ok(pages::answer(key, &call, from, rows, size, |p| vec![json!(p.identified_at), json!(p.visitor_id)], render))
}

/// Per (site, visitor id): the `profile` a session or live row carries, a
/// ProfileRef of the person the id is or is an alias of, else null; always
/// null on a cookieless site (rules OVR-14, PPL-14, SES-01).
pub fn profile_refs(conn: &mut AnyConnection, pairs: &[(String, String)]) -> Result<ProfileRefs> {
    let mut by_site: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for (s, v) in pairs {
        by_site.entry(s).or_default().insert(v);
    }
    let site_ids: Vec<String> = by_site.keys().map(|s| s.to_string()).collect();
    let cookieless: BTreeSet<String> =
        site_store::find_many(conn, &site_ids)?.into_iter().filter(|s| s.cookieless).map(|s| s.id).collect();
    let mut out = HashMap::new();
    for (site, ids) in by_site {
        let ids: Vec<String> = ids.into_iter().map(str::to_string).collect();
        if cookieless.contains(site) {
            for id in ids {
                out.insert((site.to_string(), id), None);
            }
            continue;
        }
        let mut canonical_of: HashMap<String, String> = HashMap::new();
        for chunk in ids.chunks(CHUNK) {
            for a in store::aliases_in(conn, site, chunk)? {
                canonical_of.insert(a.alias_id, a.visitor_id);
            }
        }
        let mut wanted: Vec<String> = ids.iter().map(|id| canonical_of.get(id).unwrap_or(id).clone()).collect();
        wanted.sort();
        wanted.dedup();
        let mut found: HashMap<String, ProfileRow> = HashMap::new();
        for chunk in wanted.chunks(CHUNK) {
            found.extend(store::profiles(conn, site, chunk)?.into_iter().map(|p| (p.visitor_id.clone(), p)));
        }
        for id in ids {
            let c = canonical_of.get(&id).unwrap_or(&id);
            let v = found.get(c).map(|p| ProfileRef {
                visitor_id: p.visitor_id.clone(),
                name: p.name.clone(),
                email: p.email.clone(),
            });
            out.insert((site.to_string(), id), v);
        }
    }
    Ok(out)
}

/// Adds `profile` to session summaries and live visitors.
pub fn attach<T: Profiled>(conn: &mut AnyConnection, rows: &mut [T]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let pairs: Vec<(String, String)> = rows.iter().map(Profiled::person).collect();
    let refs = profile_refs(conn, &pairs)?;
    attach_from(rows, &refs);
    Ok(())
}

/// Adds `profile` to rows from refs read before (the live cache's).
pub fn attach_from<T: Profiled>(rows: &mut [T], refs: &ProfileRefs) {
    for row in rows.iter_mut() {
        let profile = refs.get(&row.person()).cloned().flatten();
        row.set_profile(profile);
    }
}
