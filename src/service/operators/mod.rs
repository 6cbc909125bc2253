//! The dashboard's operators: who may sign in to the built-in page, sessions,
//! and the sign-in rate limit. An operator acts for one Meta owner key (the
//! agency's, set at creation); without `can_configure` they read everything
//! and change nothing.
//!
//! Functions take the `Db` and the time, not the whole app state: the HTTP
//! layer (and the CLI) pass what they have.

pub mod password;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::clock::{HOUR_MS, MINUTE_MS};
use crate::config::Secret;
use crate::error::{Code, Error, Result};
use crate::service::context::Context;
use crate::store::operators::{self as store, OperatorRow, SessionRow};

/// How long a session lasts from sign-in.
pub const SESSION_TTL_MS: i64 = 12 * HOUR_MS;
/// The window the sign-in limit counts failures in.
pub const FAILURE_WINDOW_MS: i64 = 15 * MINUTE_MS;
/// Failed sign-ins per operator name in the window before the name is refused.
pub const MAX_FAILURES_PER_NAME: i64 = 5;
/// Failed sign-ins per client address in the window (many names from one place).
pub const MAX_FAILURES_PER_CLIENT: i64 = 20;
/// The owner key of an operator created without `--owner-key`.
pub const DEFAULT_OWNER_KEY: &str = "dashboard:agency";

/// An operator as the page sees it. Never the password hash.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Operator {
    #[serde(skip)]
    pub id: String,
    pub name: String,
    pub can_configure: bool,
    pub owner_key: String,
}

impl From<OperatorRow> for Operator {
    fn from(r: OperatorRow) -> Self {
        Operator { id: r.id, name: r.name, can_configure: r.can_configure, owner_key: r.owner_key }
    }
}

pub struct AddOperator {
    pub name: String,
    pub password: Secret,
    pub can_configure: bool,
    pub owner_key: String,
}

pub fn check_name(name: &str) -> Result<()> {
    let ok = (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
    if !ok {
        return Err(Error::invalid("an operator name has 1-64 characters: letters, digits, . _ - @"));
    }
    Ok(())
}

/// Creates the operator, or replaces an existing one's password, rights and
/// owner (and signs them out everywhere). Answers whether it was created.
pub async fn add(cx: &Context, now: i64, input: AddOperator) -> Result<bool> {
    check_name(&input.name)?;
    password::check(&input.password)?;
    crate::service::meta::connection::check_owner_key(&input.owner_key)?;
    let pw = input.password;
    let hash = tokio::task::spawn_blocking(move || password::hash(&pw)).await.map_err(Error::internal)??;
    let (name, can_configure, owner_key) = (input.name, input.can_configure, input.owner_key);
    let new_id = crate::ids::operator_id()?;
    cx.write_plain(move |c| {
        let existing = store::find_by_name(c, &name)?;
        let row = OperatorRow {
            id: existing.as_ref().map_or(new_id, |e| e.id.clone()),
            name,
            password_hash: hash,
            can_configure,
            owner_key,
            created_at: existing.as_ref().map_or(now, |e| e.created_at),
            updated_at: now,
        };
        if existing.is_some() {
            store::update(c, &row)?;
            store::delete_sessions_of(c, &row.id)?;
            Ok(false)
        } else {
            store::insert(c, &row)?;
            Ok(true)
        }
    })
    .await
}

/// A signed-in session: the cookie value (shown once, to set the cookie), the
/// CSRF token the page sends back on every write, and who it is.
#[derive(Debug, Clone)]
pub struct Session {
    pub operator: Operator,
    pub csrf_token: String,
    pub expires_at: i64,
}

fn sha256_hex(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn name_key(name: &str) -> String {
    sha256_hex(&format!("name:{}", name.to_ascii_lowercase()))
}

fn client_key(client: &str) -> String {
    sha256_hex(&format!("client:{client}"))
}

/// Checks the name and password; on success opens a session and answers its
/// cookie value with it. Every failure is the same UNAUTHENTICATED (a wrong
/// name and a wrong password look alike, and cost the same Argon2 time);
/// past the limit, RATE_LIMITED before any password is checked.
pub async fn sign_in(cx: &Context, now: i64, name: &str, pw: Secret, client: &str) -> Result<(Secret, Session)> {
    let refused = || Error::new(Code::Unauthenticated, "wrong operator name or password");
    if check_name(name).is_err() || pw.expose().is_empty() || pw.expose().len() > 4 * password::MAX_LEN {
        return Err(refused());
    }
    let (nk, ck) = (name_key(name), client_key(client));
    let since = now - FAILURE_WINDOW_MS;
    let (nk2, ck2, lookup) = (nk.clone(), ck.clone(), name.to_string());
    let (by_name, by_client, row) = cx
        .read(move |c| {
            Ok((
                store::count_failures(c, &nk2, since)?,
                store::count_failures(c, &ck2, since)?,
                store::find_by_name(c, &lookup)?,
            ))
        })
        .await?;
    if by_name >= MAX_FAILURES_PER_NAME || by_client >= MAX_FAILURES_PER_CLIENT {
        return Err(Error::new(Code::RateLimited, "too many failed sign-ins: wait a few minutes"));
    }
    let stored = row.as_ref().map(|r| r.password_hash.clone());
    let check = move || match stored {
        Some(phc) => password::verify(&pw, &phc),
        None => password::verify(&pw, password::decoy()),
    };
    let matches = tokio::task::spawn_blocking(check).await.map_err(Error::internal)?;
    let Some(row) = row.filter(|_| matches) else {
        cx.write_plain(move |c| {
            store::forget_failures_before(c, since)?;
            store::add_failure(c, &nk, now)?;
            store::add_failure(c, &ck, now)?;
            Ok(())
        })
        .await?;
        return Err(refused());
    };
    let raw = crate::ids::session_secret()?;
    let session = SessionRow {
        id_hash: sha256_hex(&raw),
        operator_id: row.id.clone(),
        csrf_token: crate::ids::session_secret()?,
        created_at: now,
        expires_at: now + SESSION_TTL_MS,
    };
    let (csrf_token, expires_at) = (session.csrf_token.clone(), session.expires_at);
    cx.write_plain(move |c| {
        store::clear_failures(c, &nk)?;
        store::delete_expired_sessions(c, now)?;
        store::insert_session(c, &session)?;
        Ok(())
    })
    .await?;
    Ok((Secret::new(raw), Session { operator: row.into(), csrf_token, expires_at }))
}

/// The session a cookie value opens, if it is live.
pub async fn session(cx: &Context, now: i64, raw: &str) -> Result<Option<Session>> {
    if raw.len() != 64 {
        return Ok(None);
    }
    let id_hash = sha256_hex(raw);
    let found = cx.read(move |c| Ok(store::session(c, &id_hash, now)?)).await?;
    Ok(found.map(|(s, o)| Session { operator: o.into(), csrf_token: s.csrf_token, expires_at: s.expires_at }))
}

pub async fn sign_out(cx: &Context, raw: &str) -> Result<()> {
    let id_hash = sha256_hex(raw);
    cx.write_plain(move |c| Ok(store::delete_session(c, &id_hash).map(|_| ())?)).await
}
