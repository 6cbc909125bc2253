//! The dashboard's operators: who may sign in to the built-in page, sessions,
//! and the sign-in rate limit. An operator acts for one Meta owner key (the
//! agency's, set at creation); without `can_configure` they read everything
//! and change nothing.
//!
//! Functions take the service `Context` and the time, not the whole app state: the HTTP
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
/// Failed sign-ins against a name from addresses unknown to it, in the
/// window, before sign-ins to that name from unknown addresses slow down.
pub const MAX_FAILURES_PER_NAME: i64 = 5;
/// Failed sign-ins per client address in the window (many names from one place).
pub const MAX_FAILURES_PER_CLIENT: i64 = 20;
/// The longest wait between attempts against one name from unknown addresses.
pub const MAX_UNKNOWN_CLIENT_DELAY_MS: i64 = 5 * MINUTE_MS;
/// A client address stays known to an operator this long after its last sign-in.
pub const KNOWN_CLIENT_TTL_MS: i64 = 90 * 24 * HOUR_MS;
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
            // Their hashes were keyed by the old password: unmatched from now on.
            store::forget_clients_before(c, &row.id, i64::MAX)?;
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

/// A client address as the operator's known addresses hold it: an HMAC keyed
/// by the operator's password hash (stored only here, never answered), so the
/// table holds no address and a new password forgets them all.
fn known_client_hash(password_hash: &str, client: &str) -> String {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(password_hash.as_bytes()).expect("HMAC takes any key");
    mac.update(format!("known-client:{client}").as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// How long after the newest of `failures` failed guesses against a name
/// from unknown addresses the next attempt from one may run: none below the
/// limit, then 1 s doubling per failure up to [`MAX_UNKNOWN_CLIENT_DELAY_MS`].
/// Slowed, never locked: the operator's own addresses are not slowed at all.
pub fn unknown_client_delay_ms(failures: i64) -> i64 {
    if failures < MAX_FAILURES_PER_NAME {
        return 0;
    }
    let doublings = (failures - MAX_FAILURES_PER_NAME).min(20) as u32;
    (1000i64 << doublings).min(MAX_UNKNOWN_CLIENT_DELAY_MS)
}

/// Checks the name and password; on success opens a session and answers its
/// cookie value with it. Every failure is the same UNAUTHENTICATED (a wrong
/// name and a wrong password look alike, and cost the same Argon2 time).
/// `client` is the caller's rate-limit key (`net::rate_key` of the address
/// behind any trusted proxy). RATE_LIMITED, before any password is checked,
/// answers past twenty failures from that client in the window, and, for a
/// client that never signed in as this operator, while guesses at the name
/// from such clients slow it down ([`unknown_client_delay_ms`]). Guesses never
/// refuse the operator's own known clients (OWASP: throttle, not lock out).
pub async fn sign_in(cx: &Context, now: i64, name: &str, pw: Secret, client: &str) -> Result<(Secret, Session)> {
    let refused = || Error::new(Code::Unauthenticated, "wrong operator name or password");
    if check_name(name).is_err() || pw.expose().is_empty() || pw.expose().len() > 4 * password::MAX_LEN {
        return Err(refused());
    }
    let (nk, ck) = (name_key(name), client_key(client));
    let since = now - FAILURE_WINDOW_MS;
    let (nk2, ck2, lookup, who) = (nk.clone(), ck.clone(), name.to_string(), client.to_string());
    let (by_client, row, known, by_name) = cx
        .read(move |c| {
            let row = store::find_by_name(c, &lookup)?;
            let known = match &row {
                Some(r) => {
                    let hash = known_client_hash(&r.password_hash, &who);
                    store::is_known_client(c, &r.id, &hash, now - KNOWN_CLIENT_TTL_MS)?
                }
                None => false,
            };
            let by_name = if known { (0, None) } else { store::failures_since(c, &nk2, since)? };
            Ok((store::count_failures(c, &ck2, since)?, row, known, by_name))
        })
        .await?;
    let (name_failures, last_failure) = by_name;
    let slowed = last_failure.is_some_and(|at| now < at + unknown_client_delay_ms(name_failures));
    if by_client >= MAX_FAILURES_PER_CLIENT || slowed {
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
            store::add_failure(c, &ck, now)?;
            // A known client's typo does not count against the name.
            if !known {
                store::add_failure(c, &nk, now)?;
            }
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
    let known_hash = known_client_hash(&row.password_hash, client);
    let operator_id = row.id.clone();
    // The name's failures are not cleared: a success from one client must not
    // reset the slow-down that guesses from others earned.
    cx.write_plain(move |c| {
        store::delete_expired_sessions(c, now)?;
        store::insert_session(c, &session)?;
        store::remember_client(c, &operator_id, &known_hash, now)?;
        store::forget_clients_before(c, &operator_id, now - KNOWN_CLIENT_TTL_MS)?;
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
