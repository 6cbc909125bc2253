//! Local grants (runbook phase 2): the host's record of which sites a
//! dashboard connection may read, and whether it may configure them or publish
//! public links. The grant, not the token, is the authority for scope; it is
//! read on every federated call, so revoking it denies at once. Concurrent
//! calls share their reads ([`GrantReader`]): one query for every call waiting,
//! never a query already in flight.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use utoipa::ToSchema;

use super::{PERM_CONFIGURE, PERM_PUBLIC, PERM_READ};
use crate::db::schema::federation_grants;
use crate::db::{AnyConnection, Db};
use crate::error::{Code, Error, Result};
use crate::service::meta_connection;
use crate::service::{sites, validate};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = federation_grants)]
pub struct GrantRow {
    pub connection_id: String,
    pub organization_id: String,
    pub owner_id: String,
    pub site_ids: String,
    pub permissions: String,
    pub revoked_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// `provisionConnection`: the operator names the connection's sites.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProvisionGrant {
    /// The dashboard organization the connection belongs to (from pairing).
    pub organization_id: String,
    /// The host's opaque owner of every listed site (`sites.ownerId`).
    pub owner_id: String,
    /// 1–10 unique sites, each owned by `ownerId`.
    pub site_ids: Vec<String>,
    /// `analytics:configure` (owners and admins may configure the sites),
    /// `analytics:public` (public read-only links); absent means read only.
    pub permissions: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub connection_id: String,
    pub organization_id: String,
    pub owner_id: String,
    pub site_ids: Vec<String>,
    pub permissions: Vec<String>,
    pub revoked_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevokedGrant {
    pub grant: Grant,
    /// Whether the Meta owner `rastro:connection:<connectionId>` had anything to forget.
    pub meta_removed: bool,
}

/// A connection id: 1–128 characters of `[A-Za-z0-9_.:-]` (the claim's bound).
pub fn check_connection_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= super::jwt::MAX_ID_CHARS
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if ok { Ok(()) } else { Err(Error::invalid("connectionId must be 1-128 characters of [A-Za-z0-9_.:-]")) }
}

fn check_organization_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= super::jwt::MAX_ID_CHARS
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if ok { Ok(()) } else { Err(Error::invalid("organizationId must be 1-128 characters of [A-Za-z0-9_.:-]")) }
}

/// The grant permissions, validated and in a stable order.
fn check_permissions(perms: &[String]) -> Result<Vec<String>> {
    let mut out = BTreeSet::new();
    for p in perms {
        if ![PERM_READ, PERM_CONFIGURE, PERM_PUBLIC].contains(&p.as_str()) {
            return Err(Error::invalid("permissions may hold analytics:configure and analytics:public"));
        }
        if !out.insert(p.clone()) {
            return Err(Error::invalid("permissions must not repeat"));
        }
    }
    Ok(out.into_iter().collect())
}

impl GrantRow {
    fn view(&self) -> Result<Grant> {
        Ok(Grant {
            connection_id: self.connection_id.clone(),
            organization_id: self.organization_id.clone(),
            owner_id: self.owner_id.clone(),
            site_ids: serde_json::from_str(&self.site_ids).map_err(Error::internal)?,
            permissions: serde_json::from_str(&self.permissions).map_err(Error::internal)?,
            revoked_at: self.revoked_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

pub fn find(conn: &mut AnyConnection, connection_id: &str) -> QueryResult<Option<GrantRow>> {
    federation_grants::table.find(connection_id).select(GrantRow::as_select()).first(conn).optional()
}

/// `provisionConnection`: creates or replaces the grant and clears `revokedAt`.
/// Answers the grant and whether it was created.
pub fn provision(
    conn: &mut AnyConnection,
    now: i64,
    connection_id: &str,
    input: ProvisionGrant,
) -> Result<(Grant, bool)> {
    check_connection_id(connection_id)?;
    check_organization_id(&input.organization_id)?;
    validate::text("ownerId", &input.owner_id, 1, 200)?;
    validate::site_ids(&input.site_ids)?;
    let permissions = check_permissions(input.permissions.as_deref().unwrap_or_default())?;
    for site in sites::require_many(conn, &input.site_ids)? {
        if site.owner_id != input.owner_id {
            return Err(Error::new(Code::FederationSiteDenied, format!("site {} is not owned by ownerId", site.id)));
        }
    }
    let existing = find(conn, connection_id)?;
    let row = GrantRow {
        connection_id: connection_id.to_string(),
        organization_id: input.organization_id,
        owner_id: input.owner_id,
        site_ids: serde_json::to_string(&input.site_ids).map_err(Error::internal)?,
        permissions: serde_json::to_string(&permissions).map_err(Error::internal)?,
        revoked_at: None,
        created_at: existing.as_ref().map_or(now, |g| g.created_at),
        updated_at: now,
    };
    if existing.is_some() {
        diesel::update(federation_grants::table.find(connection_id))
            .set((
                federation_grants::organization_id.eq(&row.organization_id),
                federation_grants::owner_id.eq(&row.owner_id),
                federation_grants::site_ids.eq(&row.site_ids),
                federation_grants::permissions.eq(&row.permissions),
                federation_grants::revoked_at.eq(None::<i64>),
                federation_grants::updated_at.eq(now),
            ))
            .execute(conn)?;
    } else {
        diesel::insert_into(federation_grants::table).values(row.clone()).execute(conn)?;
    }
    Ok((row.view()?, existing.is_none()))
}

/// `revokeConnection`: sets `revokedAt` (kept if already set) and, in the same
/// transaction, forgets the Meta owner the connection acted as.
pub fn revoke(conn: &mut AnyConnection, now: i64, connection_id: &str) -> Result<RevokedGrant> {
    check_connection_id(connection_id)?;
    let mut row = find(conn, connection_id)?.ok_or_else(|| Error::not_found("no grant for this connection"))?;
    if row.revoked_at.is_none() {
        diesel::update(federation_grants::table.find(connection_id))
            .set((federation_grants::revoked_at.eq(Some(now)), federation_grants::updated_at.eq(now)))
            .execute(conn)?;
        row.revoked_at = Some(now);
        row.updated_at = now;
    }
    let removed = meta_connection::remove(conn, &meta_connection::federated_owner(connection_id))?;
    Ok(RevokedGrant { grant: row.view()?, meta_removed: removed.removed })
}

pub fn get(conn: &mut AnyConnection, connection_id: &str) -> Result<Grant> {
    check_connection_id(connection_id)?;
    find(conn, connection_id)?.ok_or_else(|| Error::not_found("no grant for this connection"))?.view()
}

/// An active grant as a federated call sees it.
#[derive(Debug, Clone)]
pub struct ActiveGrant {
    pub site_ids: Vec<String>,
    pub permissions: BTreeSet<String>,
}

fn denied(message: &str) -> Error {
    Error::new(Code::FederationConnectionDenied, message)
}

/// The grant of a verified token: missing, another organization's, malformed
/// or revoked is FEDERATION_CONNECTION_DENIED.
pub fn active(conn: &mut AnyConnection, connection_id: &str, organization_id: &str) -> Result<ActiveGrant> {
    check_active(find(conn, connection_id)?.as_ref(), organization_id)
}

/// `active`'s checks over a row already read (None: no grant).
pub fn check_active(row: Option<&GrantRow>, organization_id: &str) -> Result<ActiveGrant> {
    parse_active(check_row(row, organization_id)?)
}

/// Missing, another organization's or revoked.
fn check_row<'r>(row: Option<&'r GrantRow>, organization_id: &str) -> Result<&'r GrantRow> {
    let row = row.ok_or_else(|| denied("this connection has no grant on this host"))?;
    if row.organization_id != organization_id {
        return Err(denied("this connection's grant belongs to another organization"));
    }
    if row.revoked_at.is_some() {
        return Err(denied("this connection's grant was revoked"));
    }
    Ok(row)
}

/// The sites and permissions of a row, or malformed.
fn parse_active(row: &GrantRow) -> Result<ActiveGrant> {
    let site_ids: Vec<String> =
        serde_json::from_str(&row.site_ids).map_err(|_| denied("this connection's grant is malformed"))?;
    validate::site_ids(&site_ids).map_err(|_| denied("this connection's grant is malformed"))?;
    let permissions: Vec<String> =
        serde_json::from_str(&row.permissions).map_err(|_| denied("this connection's grant is malformed"))?;
    if permissions.iter().any(|p| ![PERM_READ, PERM_CONFIGURE, PERM_PUBLIC].contains(&p.as_str())) {
        return Err(denied("this connection's grant is malformed"));
    }
    Ok(ActiveGrant { site_ids, permissions: permissions.into_iter().collect() })
}

/// The grants of `connection_ids` that exist, in one statement.
pub fn find_many(conn: &mut AnyConnection, connection_ids: &[String]) -> QueryResult<Vec<GrantRow>> {
    federation_grants::table
        .filter(federation_grants::connection_id.eq_any(connection_ids))
        .select(GrantRow::as_select())
        .load(conn)
}

/// Most connection ids one grant query names; a larger batch takes several.
const MAX_IDS_PER_QUERY: usize = 500;

type LoadFuture = Pin<Box<dyn Future<Output = Result<Vec<GrantRow>>> + Send>>;
/// Reads the grant rows of some connection ids (those without a grant are absent).
pub type GrantLoader = Arc<dyn Fn(Vec<String>) -> LoadFuture + Send + Sync>;

/// The grant reads of every federated call, coalesced: a call registers its
/// connection and waits; one leader task at a time takes every call waiting
/// and reads all their grants in one statement (`connection_id IN (...)`),
/// then answers each with [`check_active`]'s verdict. Under load N concurrent
/// calls cost a few queries instead of N.
///
/// A call only ever joins a query that starts after it registered (the leader
/// takes the waiting calls first, then starts the query), never one already in
/// flight: a revocation committed before a call arrived always denies it.
pub struct GrantReader {
    shared: Arc<Shared>,
}

struct Shared {
    load: GrantLoader,
    queue: Mutex<Queue>,
    queries: AtomicU64,
    /// The leader's parsed grants by connection, reused while the row's text is
    /// the same (the row itself is read by every call's query).
    parsed: Mutex<HashMap<String, Parsed>>,
}

/// A grant row's `site_ids` and `permissions` text and what they parse to.
struct Parsed {
    site_ids: String,
    permissions: String,
    grant: Arc<ActiveGrant>,
}

/// Most parsed grants kept; past it the map starts over.
const MAX_PARSED: usize = 10_000;

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiter>,
    /// A leader task is running: it will take `waiting` before its next query.
    leading: bool,
}

struct Waiter {
    connection_id: String,
    organization_id: String,
    answer: oneshot::Sender<Result<Arc<ActiveGrant>>>,
}

impl GrantReader {
    /// Reads the grants on `db`'s read pool.
    pub fn new(db: Db) -> GrantReader {
        GrantReader::with_loader(Arc::new(move |ids: Vec<String>| -> LoadFuture {
            let db = db.clone();
            Box::pin(async move { db.run(move |c| find_many(c, &ids).map_err(Error::from)).await })
        }))
    }

    /// Reads the grants through `load` (tests).
    pub fn with_loader(load: GrantLoader) -> GrantReader {
        GrantReader {
            shared: Arc::new(Shared {
                load,
                queue: Mutex::default(),
                queries: AtomicU64::new(0),
                parsed: Mutex::default(),
            }),
        }
    }

    /// The active grant of `connection_id` for `organization_id`, read by a
    /// query that starts after this call; [`check_active`]'s verdict on it.
    pub async fn active(&self, connection_id: &str, organization_id: &str) -> Result<Arc<ActiveGrant>> {
        let (answer, wait) = oneshot::channel();
        let lead = {
            let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.waiting.push(Waiter {
                connection_id: connection_id.to_string(),
                organization_id: organization_id.to_string(),
                answer,
            });
            !std::mem::replace(&mut queue.leading, true)
        };
        if lead {
            tokio::spawn(self.shared.clone().lead());
        }
        wait.await.unwrap_or_else(|_| Err(Error::unavailable("the connection's grant could not be read; retry")))
    }

    /// Grant queries run so far (each names up to 500 connections).
    pub fn queries(&self) -> u64 {
        self.shared.queries.load(Ordering::Relaxed)
    }
}

/// Hands the leadership back if the leader task stops mid-way (a panic, the
/// runtime shutting down): the calls still waiting are answered UNAVAILABLE.
struct Leading<'a> {
    shared: &'a Shared,
    done: bool,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.leading = false;
            queue.waiting.clear();
        }
    }
}

/// `parse_active` of `row`, or the grant parsed from the same text before.
fn parsed_grant(parsed: &mut HashMap<String, Parsed>, row: &GrantRow) -> Result<Arc<ActiveGrant>> {
    if let Some(p) = parsed.get(&row.connection_id)
        && p.site_ids == row.site_ids
        && p.permissions == row.permissions
    {
        return Ok(p.grant.clone());
    }
    let grant = Arc::new(parse_active(row)?);
    if parsed.len() >= MAX_PARSED {
        parsed.clear();
    }
    parsed.insert(
        row.connection_id.clone(),
        Parsed { site_ids: row.site_ids.clone(), permissions: row.permissions.clone(), grant: grant.clone() },
    );
    Ok(grant)
}

impl Shared {
    async fn lead(self: Arc<Self>) {
        let mut leading = Leading { shared: &self, done: false };
        loop {
            let batch = {
                let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                if queue.waiting.is_empty() {
                    queue.leading = false;
                    leading.done = true;
                    return;
                }
                std::mem::take(&mut queue.waiting)
            };
            // The batch is taken: every query below starts after each of its calls arrived.
            let mut ids: Vec<String> = batch.iter().map(|w| w.connection_id.clone()).collect();
            ids.sort_unstable();
            ids.dedup();
            let mut rows: HashMap<String, GrantRow> = HashMap::with_capacity(ids.len());
            let mut failed = None;
            for chunk in ids.chunks(MAX_IDS_PER_QUERY) {
                self.queries.fetch_add(1, Ordering::Relaxed);
                match (self.load)(chunk.to_vec()).await {
                    Ok(found) => rows.extend(found.into_iter().map(|r| (r.connection_id.clone(), r))),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            let mut parsed = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
            for w in batch {
                let verdict = match &failed {
                    Some(e) => Err(e.clone()),
                    None => check_row(rows.get(&w.connection_id), &w.organization_id)
                        .and_then(|row| parsed_grant(&mut parsed, row)),
                };
                let _ = w.answer.send(verdict);
            }
            drop(parsed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(connection_id: &str, organization_id: &str, revoked_at: Option<i64>) -> GrantRow {
        GrantRow {
            connection_id: connection_id.into(),
            organization_id: organization_id.into(),
            owner_id: "owner".into(),
            site_ids: r#"["site-a","site-b"]"#.into(),
            permissions: r#"["analytics:configure"]"#.into(),
            revoked_at,
            created_at: 1,
            updated_at: 1,
        }
    }

    type Store = Arc<Mutex<HashMap<String, GrantRow>>>;

    /// A reader over an in-memory table: each load copies the rows when it starts.
    fn reader_over(store: &Store, gate: Option<Arc<tokio::sync::Semaphore>>) -> GrantReader {
        let store = store.clone();
        GrantReader::with_loader(Arc::new(move |ids: Vec<String>| -> LoadFuture {
            let snapshot: Vec<GrantRow> = {
                let table = store.lock().unwrap();
                ids.iter().filter_map(|id| table.get(id).cloned()).collect()
            };
            let gate = gate.clone();
            Box::pin(async move {
                if let Some(g) = gate {
                    g.acquire().await.unwrap().forget();
                }
                Ok(snapshot)
            })
        }))
    }

    fn message(r: Result<Arc<ActiveGrant>>) -> String {
        let e = r.unwrap_err();
        assert_eq!(e.code, Code::FederationConnectionDenied);
        e.message
    }

    #[tokio::test]
    async fn concurrent_calls_share_a_query_and_each_gets_its_own_answer() {
        let store: Store = Arc::default();
        for i in 0..40 {
            let revoked = (i % 10 == 3).then_some(5);
            store.lock().unwrap().insert(format!("c{i}"), row(&format!("c{i}"), "org", revoked));
        }
        let reader = Arc::new(reader_over(&store, None));
        let mut calls = Vec::new();
        for i in 0..200 {
            let reader = reader.clone();
            // c0..c49: c40..c49 have no grant; every 7th call names another organization.
            let (cid, org) = (format!("c{}", i % 50), if i % 7 == 0 { "other" } else { "org" });
            calls.push((i, tokio::spawn(async move { reader.active(&cid, org).await })));
        }
        for (i, call) in calls {
            let answer = call.await.unwrap();
            let n = i % 50;
            if n >= 40 {
                assert_eq!(message(answer), "this connection has no grant on this host");
            } else if i % 7 == 0 {
                assert_eq!(message(answer), "this connection's grant belongs to another organization");
            } else if n % 10 == 3 {
                assert_eq!(message(answer), "this connection's grant was revoked");
            } else {
                let g = answer.unwrap();
                assert_eq!(g.site_ids, vec!["site-a", "site-b"]);
                assert!(g.permissions.contains(PERM_CONFIGURE));
            }
        }
        assert!(reader.queries() <= 2, "200 waiting calls took {} queries", reader.queries());
        // Alone, a call still gets its own query.
        assert!(reader.active("c1", "org").await.is_ok());
        assert!(reader.queries() <= 3);
    }

    #[tokio::test]
    async fn a_call_never_joins_a_query_in_flight_so_a_revocation_denies_the_next_call() {
        let store: Store = Arc::default();
        store.lock().unwrap().insert("c1".into(), row("c1", "org", None));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let reader = Arc::new(reader_over(&store, Some(gate.clone())));
        let r = reader.clone();
        let first = tokio::spawn(async move { r.active("c1", "org").await });
        while reader.queries() < 1 {
            tokio::task::yield_now().await;
        }
        // The first query read the table and is in flight; the grant is revoked; a call arrives.
        store.lock().unwrap().get_mut("c1").unwrap().revoked_at = Some(9);
        let r = reader.clone();
        let second = tokio::spawn(async move { r.active("c1", "org").await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        gate.add_permits(2);
        assert!(first.await.unwrap().is_ok(), "the first call arrived before the revocation");
        assert_eq!(message(second.await.unwrap()), "this connection's grant was revoked");
        assert_eq!(reader.queries(), 2, "the second call waited for a query of its own");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_reader_queries_the_table_and_sees_a_revocation_at_once() {
        let dir = std::env::temp_dir().join(format!("rastrod-grants-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let db = Db::open(&format!("sqlite://{}", dir.join("t.db").display()), 4, 64, 1000).unwrap();
        let rows: Vec<GrantRow> = (0..20).map(|i| row(&format!("c{i}"), "org", None)).collect();
        db.write(move |c| {
            for r in rows {
                diesel::insert_into(federation_grants::table).values(r).execute(c)?;
            }
            Ok(())
        })
        .await
        .unwrap();
        let reader = Arc::new(GrantReader::new(db.clone()));
        let calls: Vec<_> = (0..100)
            .map(|i| {
                let reader = reader.clone();
                tokio::spawn(async move { reader.active(&format!("c{}", i % 25), "org").await })
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            let answer = call.await.unwrap();
            if i % 25 >= 20 {
                assert_eq!(message(answer), "this connection has no grant on this host");
            } else {
                assert_eq!(answer.unwrap().site_ids.len(), 2);
            }
        }
        assert!(reader.queries() <= 100);
        db.write(|c| {
            diesel::update(federation_grants::table.find("c3"))
                .set(federation_grants::revoked_at.eq(Some(7_i64)))
                .execute(c)?;
            Ok(())
        })
        .await
        .unwrap();
        assert_eq!(message(reader.active("c3", "org").await), "this connection's grant was revoked");
        assert!(reader.active("c4", "org").await.is_ok());
        db.close();
        let _ = std::fs::remove_dir_all(dir);
    }
}
