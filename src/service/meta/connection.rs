//! The Meta connection: a sealed token per owner (pasted, or from Facebook
//! Login for Business), what it lists (ad accounts and pixels), and keeping the
//! links and pixels in line with that listing.
//!
//! Actions that call Meta run the Graph calls first, outside any transaction,
//! and then write what they learned in one transaction.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::DAY_MS;
use crate::codes::Fault;
use crate::config::Secret;
use crate::crypto::{CryptoError, Identity};
use crate::db::AnyConnection;
use crate::error::{Code, Error, Result};
use crate::meta::graph::{ErrorClass, GraphClient};
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::service::meta::errors::from_graph;
use crate::service::validate;
use crate::store::meta::{self as store, ConnectionRow, ListedAccountRow, ListedPixelRow, PixelSource};

/// Pixels are listed for at most this many accounts (CONN-01).
pub const PIXEL_ACCOUNTS_MAX: usize = 100;
/// A long-lived user token lives about 60 days.
const LONG_LIVED_MS: i64 = 60 * DAY_MS;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetMetaConnection {
    /// A system user token with `ads_read` (never returned, never logged).
    #[schema(value_type = String)]
    pub access_token: SecretString,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectWithCode {
    /// The authorization code from the login popup (used once, never stored).
    #[schema(value_type = String)]
    pub code: SecretString,
    /// The same redirect URI the popup used: https, or http on localhost.
    pub redirect_uri: String,
}

/// A string that deserializes into a `Secret` (redacted in Debug).
#[derive(Clone, Deserialize)]
#[serde(from = "String")]
pub struct SecretString(pub Secret);

impl From<String> for SecretString {
    fn from(s: String) -> Self {
        SecretString(Secret::new(s))
    }
}

/// In the document a secret is a plain string that is only ever sent.
impl utoipa::PartialSchema for SecretString {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .write_only(Some(true))
            .into()
    }
}

impl ToSchema for SecretString {}

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ListedAccount {
    pub ad_account_id: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    /// The site the account already feeds, whoever linked it (one account feeds one site).
    pub linked_site_id: Option<String>,
    /// Federated reads only: linked to a site outside the caller's grant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linked_outside_scope: Option<bool>,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ListedPixel {
    pub pixel_id: String,
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    pub ad_accounts: Vec<ListedAccount>,
    pub pixels: Vec<ListedPixel>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuthorizedBy {
    pub name: String,
}

/// `metaConnection`: what a screen reads. Never a token.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionView {
    /// `connected`; `invalid` once Meta refused the token; `key_changed` when the
    /// token was sealed under another RASTRO_SECRETS_KEY; `key_missing` without one.
    pub status: String,
    pub authorized_by: Option<AuthorizedBy>,
    pub authorized_at: i64,
    pub invalid_since: Option<i64>,
    pub last_error: Option<String>,
    pub expires_at: Option<i64>,
    pub expiring_soon: bool,
    pub ad_accounts: Vec<ListedAccount>,
    pub pixels: Vec<ListedPixel>,
}

pub use crate::service::api::Removed;

pub fn check_owner_key(owner: &str) -> Result<()> {
    validate::text("ownerKey", owner, 1, 200)
}

fn check_token(field: &str, t: &Secret) -> Result<()> {
    let s = t.expose();
    if s.is_empty() || s.len() > 2048 || s.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(Error::invalid(format!("{field} must be 1-2048 characters without spaces")));
    }
    Ok(())
}

/// A redirect URI must be https, or plain http on localhost.
pub fn check_redirect(uri: &str) -> Result<()> {
    validate::text("redirectUri", uri, 1, 2048)?;
    let ok = if let Some(rest) = uri.strip_prefix("https://") {
        !rest.is_empty() && !rest.starts_with('/')
    } else if let Some(rest) = uri.strip_prefix("http://") {
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = host
            .rsplit_once(':')
            .map_or(host, |(h, port)| if port.chars().all(|c| c.is_ascii_digit()) { h } else { host });
        matches!(host, "localhost" | "127.0.0.1" | "[::1]")
    } else {
        false
    };
    if ok { Ok(()) } else { Err(Error::invalid("redirectUri must be https (plain http only on localhost)")) }
}

/// What one token lists, fetched from Meta.
struct Fetched {
    me_id: String,
    me_name: String,
    accounts: Vec<ListedAccountRow>,
    pixels: Vec<ListedPixelRow>,
}

/// GET /me, /me/adaccounts and the pixels of the first 100 accounts. An account
/// whose pixels the token cannot read is skipped; when Meta throttles or fails
/// on one, the pixels already known for it are kept.
async fn fetch_listing(graph: &GraphClient, token: &Secret, owner: &str, known: &[ListedPixelRow]) -> Result<Fetched> {
    let me = graph.me(token).await.map_err(|e| from_graph(&e))?.value;
    let accounts = graph.ad_accounts(token).await.map_err(|e| from_graph(&e))?.value;
    let mut pixels: BTreeMap<String, ListedPixelRow> = BTreeMap::new();
    for account in accounts.iter().take(PIXEL_ACCOUNTS_MAX) {
        match graph.pixels(token, &account.id).await {
            Ok(found) => {
                for p in found.value {
                    pixels.entry(p.id.clone()).or_insert(ListedPixelRow {
                        owner_key: owner.to_string(),
                        pixel_id: p.id,
                        name: p.name,
                        ad_account_id: account.id.clone(),
                    });
                }
            }
            Err(e) if matches!(e.class, ErrorClass::Permission | ErrorClass::Invalid) => {}
            Err(e) if e.class == ErrorClass::TokenRefused => return Err(from_graph(&e)),
            Err(_) => {
                for p in known.iter().filter(|p| p.ad_account_id == account.id) {
                    pixels.entry(p.pixel_id.clone()).or_insert_with(|| p.clone());
                }
            }
        }
    }
    let accounts = accounts
        .into_iter()
        .enumerate()
        .map(|(i, a)| ListedAccountRow {
            owner_key: owner.to_string(),
            ad_account_id: a.id,
            name: a.name,
            currency: a.currency,
            timezone: a.timezone_name,
            account_status: Some(a.account_status),
            position: i as i32,
        })
        .collect();
    Ok(Fetched { me_id: me.id, me_name: me.name, accounts, pixels: pixels.into_values().collect() })
}

/// Lines the owner's links and connection-sourced pixels up with its listing:
/// an unlisted account or pixel stops (AD_ACCOUNT_NOT_GRANTED /
/// PIXEL_NOT_GRANTED); a listed one resumes, also after a dead token.
fn realign(conn: &mut AnyConnection, owner: &str, now: i64) -> Result<()> {
    let accounts: BTreeSet<String> =
        store::listed_accounts(conn, owner)?.into_iter().map(|a| a.ad_account_id).collect();
    let pixels: BTreeSet<String> = store::listed_pixels(conn, owner)?.into_iter().map(|p| p.pixel_id).collect();
    for link in store::links_of_owner(conn, owner)? {
        let reason = (!accounts.contains(&link.ad_account_id)).then_some(Fault::AdAccountNotGranted);
        if link.stopped_reason.as_deref() != reason.map(Fault::as_str) {
            store::set_link_stopped(conn, &link.ad_account_id, reason, now)?;
            if reason.is_none()
                && let Some(mut sync) = crate::store::meta::sync::get(conn, &link.ad_account_id)?
            {
                sync.next_run_at = now;
                sync.fail_count = 0;
                sync.last_error = None;
                crate::store::meta::sync::save(conn, &sync)?;
            }
        }
    }
    for pixel in store::pixels_of_owner(conn, owner)? {
        if pixel.source != PixelSource::Connection {
            continue;
        }
        let reason = (!pixels.contains(&pixel.pixel_id)).then_some(Fault::PixelNotGranted);
        if pixel.stopped_reason.as_deref() != reason.map(Fault::as_str) {
            store::set_pixel_stopped(conn, &pixel.site_id, reason, now)?;
        }
    }
    Ok(())
}

/// The listing as answers show it, each account with the site it feeds.
pub fn listing(conn: &mut AnyConnection, owner: &str) -> Result<Listing> {
    let accounts = store::listed_accounts(conn, owner)?;
    let ids: Vec<String> = accounts.iter().map(|a| a.ad_account_id.clone()).collect();
    let linked: BTreeMap<String, String> =
        store::links_of_accounts(conn, &ids)?.into_iter().map(|l| (l.ad_account_id, l.site_id)).collect();
    Ok(Listing {
        ad_accounts: accounts
            .into_iter()
            .map(|a| ListedAccount {
                linked_site_id: linked.get(&a.ad_account_id).cloned(),
                ad_account_id: a.ad_account_id,
                name: a.name,
                currency: a.currency,
                timezone: a.timezone,
                linked_outside_scope: None,
            })
            .collect(),
        pixels: store::listed_pixels(conn, owner)?
            .into_iter()
            .map(|p| ListedPixel { pixel_id: p.pixel_id, name: p.name })
            .collect(),
    })
}

struct NewToken {
    token: Secret,
    source: &'static str,
    authorized_by: Option<(String, String)>,
    expires_at: Option<i64>,
    last_error: Option<Fault>,
}

/// Stores a validated token sealed, with its listing, in one transaction.
async fn store_token(st: &Context, owner: &str, new: NewToken, fetched: Fetched) -> Result<Listing> {
    let key = st.secrets()?.clone();
    let now = st.now();
    let owner = owner.to_string();
    let soon = st.config.meta_expiring_soon.as_millis() as i64;
    st.write(move |conn| {
        let previous = store::connection(conn, &owner)?;
        let row = ConnectionRow {
            owner_key: owner.clone(),
            sealed_token: key.seal(&new.token, Identity::Connection(&owner))?,
            token_version: previous.as_ref().map_or(1, |p| p.token_version + 1),
            source: new.source.to_string(),
            authorized_by_id: new.authorized_by.as_ref().map(|(id, _)| id.clone()),
            authorized_by_name: new.authorized_by.as_ref().map(|(_, name)| name.clone()),
            authorized_at: now,
            expires_at: new.expires_at,
            expiring_soon: new.expires_at.is_some_and(|at| at - now < soon),
            invalid_since: None,
            last_error: new.last_error.map(|f| f.as_str().to_string()),
            created_at: previous.as_ref().map_or(now, |p| p.created_at),
            updated_at: now,
        };
        store::put_connection(conn, &row)?;
        store::replace_listing(conn, &owner, &fetched.accounts, &fetched.pixels)?;
        realign(conn, &owner, now)?;
        // A new token: the accounts it feeds sync again.
        Ok(Written::new(listing(conn, &owner)?, Effects::sync_changed()))
    })
    .await
}

/// `setMetaConnection`: validates a pasted token with Meta and stores it sealed.
pub async fn set_connection(st: &Context, owner: &str, input: SetMetaConnection) -> Result<Listing> {
    check_owner_key(owner)?;
    check_token("accessToken", &input.access_token.0)?;
    st.secrets()?;
    let known = known_pixels(st, owner).await?;
    let token = input.access_token.0;
    let fetched = fetch_listing(&st.graph, &token, owner, &known).await?;
    let new = NewToken { token, source: "token", authorized_by: None, expires_at: None, last_error: None };
    store_token(st, owner, new, fetched).await
}

async fn known_pixels(st: &Context, owner: &str) -> Result<Vec<ListedPixelRow>> {
    let owner = owner.to_string();
    st.read(move |c| Ok(store::listed_pixels(c, &owner)?)).await
}

/// The app behind the login (the start-up wires in the fake Graph's own app
/// when it runs one).
fn app_credentials(st: &Context) -> Result<(String, Secret)> {
    st.meta_app.as_ref().map(|app| (app.id.clone(), app.secret.clone())).ok_or_else(|| {
        Error::new(
            Code::MetaLoginUnavailable,
            "the Meta login needs RASTRO_META_APP_ID and RASTRO_META_APP_SECRET; a pasted token still connects",
        )
    })
}

/// `connectMetaWithCode`: trades the login code for a token, trades a
/// short-lived one for a long-lived one, then stores it like a pasted token.
pub async fn connect_with_code(st: &Context, owner: &str, input: ConnectWithCode) -> Result<Listing> {
    check_owner_key(owner)?;
    check_token("code", &input.code.0)?;
    check_redirect(&input.redirect_uri)?;
    let (app_id, app_secret) = app_credentials(st)?;
    st.secrets()?;
    let graph = &st.graph;
    let grant = graph
        .exchange_code(&app_id, &app_secret, &input.redirect_uri, &input.code.0)
        .await
        .map_err(|e| from_graph(&e))?
        .value;
    let now = st.now();
    let mut token = grant.access_token;
    let mut expires_at = match grant.expires_in {
        Some(s) if s > 0 => Some(now + s * 1000),
        Some(_) => None,
        None => match graph.debug_token(&app_id, &app_secret, &token).await {
            Ok(info) => info.value.expires_at.map(|s| s * 1000),
            Err(e) if e.class == ErrorClass::AppRefused => return Err(from_graph(&e)),
            Err(_) => None,
        },
    };
    let mut last_error = None;
    if expires_at.is_some_and(|at| at - now < st.config.meta_expiring_soon.as_millis() as i64) {
        match graph.exchange_long_lived(&app_id, &app_secret, &token).await {
            Ok(long) => {
                let long = long.value;
                expires_at = Some(now + long.expires_in.filter(|s| *s > 0).map_or(LONG_LIVED_MS, |s| s * 1000));
                token = long.access_token;
            }
            Err(e) => {
                tracing::warn!(owner_len = owner.len(), class = ?e.class, "long-lived token exchange failed");
                last_error = Some(Fault::TokenExchangeFailed);
            }
        }
    }
    let known = known_pixels(st, owner).await?;
    let fetched = fetch_listing(graph, &token, owner, &known).await?;
    let authorized_by = Some((fetched.me_id.clone(), fetched.me_name.clone()));
    let new = NewToken { token, source: "login", authorized_by, expires_at, last_error };
    store_token(st, owner, new, fetched).await
}

/// Opens the owner's stored token.
pub fn open_token(st: &Context, row: &ConnectionRow) -> Result<Secret> {
    let key = st.secrets()?;
    key.open(&row.sealed_token, Identity::Connection(&row.owner_key)).map_err(|e| match e {
        CryptoError::KeyMismatch => {
            Error::new(Code::SecretsKeyMissing, "the token was sealed under another RASTRO_SECRETS_KEY: connect again")
        }
        _ => Error::internal("a sealed token does not open"),
    })
}

/// Marks the owner's connection refused by Meta, if `token_version` is still
/// the stored one, and stops every account and pixel it fed.
pub fn mark_refused(conn: &mut AnyConnection, owner: &str, token_version: i64, now: i64) -> Result<bool> {
    let Some(row) = store::connection(conn, owner)? else { return Ok(false) };
    if row.token_version != token_version {
        return Ok(false);
    }
    store::set_connection_error(
        conn,
        owner,
        token_version,
        Some(row.invalid_since.unwrap_or(now)),
        Some(Fault::MetaTokenInvalid),
        now,
    )?;
    for link in store::links_of_owner(conn, owner)? {
        store::set_link_stopped(conn, &link.ad_account_id, Some(Fault::MetaTokenInvalid), now)?;
    }
    for pixel in store::pixels_of_owner(conn, owner)? {
        if pixel.source == PixelSource::Connection {
            store::set_pixel_stopped(conn, &pixel.site_id, Some(Fault::MetaTokenInvalid), now)?;
        }
    }
    Ok(true)
}

/// `listMetaAdAccounts`: reads the listing from Meta again with the stored token.
pub async fn refresh(st: &Context, owner: &str) -> Result<Listing> {
    check_owner_key(owner)?;
    let owner_s = owner.to_string();
    let row = st
        .read(move |c| Ok(store::connection(c, &owner_s)?))
        .await?
        .ok_or_else(|| Error::not_found("no Meta connection for this owner"))?;
    let token = open_token(st, &row)?;
    let known = known_pixels(st, owner).await?;
    match fetch_listing(&st.graph, &token, owner, &known).await {
        Ok(fetched) => {
            let (owner, now) = (owner.to_string(), st.now());
            st.write(move |conn| {
                let Some(current) = store::connection(conn, &owner)? else {
                    return Err(Error::not_found("no Meta connection for this owner"));
                };
                if current.token_version == row.token_version {
                    if current.invalid_since.is_some() {
                        // Meta took the stored token again: it is no longer refused, and
                        // realign resumes what the refusal stopped.
                        store::set_connection_error(conn, &owner, current.token_version, None, None, now)?;
                    }
                    store::replace_listing(conn, &owner, &fetched.accounts, &fetched.pixels)?;
                    realign(conn, &owner, now)?;
                }
                Ok(Written::new(listing(conn, &owner)?, Effects::sync_changed()))
            })
            .await
        }
        Err(e) if e.code == Code::MetaTokenInvalid => {
            let (owner, now, version) = (owner.to_string(), st.now(), row.token_version);
            // The refusal stops the accounts the token fed.
            st.write(move |conn| Ok(Written::new(mark_refused(conn, &owner, version, now)?, Effects::sync_changed())))
                .await?;
            Err(e)
        }
        Err(e) => Err(e),
    }
}

/// `metaConnection`: null, or the connection's state and listing. Never a token.
pub fn view(
    conn: &mut AnyConnection,
    key: Option<&crate::crypto::SecretsKey>,
    owner: &str,
) -> Result<Option<ConnectionView>> {
    check_owner_key(owner)?;
    let Some(row) = store::connection(conn, owner)? else { return Ok(None) };
    let status = match key {
        None => "key_missing",
        Some(k) if k.open(&row.sealed_token, Identity::Connection(owner)).is_err() => "key_changed",
        _ if row.invalid_since.is_some() => "invalid",
        _ => "connected",
    };
    let listed = listing(conn, owner)?;
    Ok(Some(ConnectionView {
        status: status.to_string(),
        authorized_by: row.authorized_by_name.map(|name| AuthorizedBy { name }),
        authorized_at: row.authorized_at,
        invalid_since: row.invalid_since,
        last_error: row.last_error,
        expires_at: row.expires_at,
        expiring_soon: row.expiring_soon,
        ad_accounts: listed.ad_accounts,
        pixels: listed.pixels,
    }))
}

/// `removeMetaConnection`; the accounts it fed stop syncing.
pub fn remove(conn: &mut AnyConnection, owner: &str) -> Result<Written<Removed>> {
    Ok(Written::new(remove_rows(conn, owner)?, Effects::sync_changed()))
}

/// `removeMetaConnection`: forgets the owner's token, every link it fed and
/// every pixel it set (its own-token pixels included).
fn remove_rows(conn: &mut AnyConnection, owner: &str) -> Result<Removed> {
    check_owner_key(owner)?;
    for link in store::links_of_owner(conn, owner)? {
        crate::store::meta::sync::delete(conn, &link.ad_account_id)?;
    }
    let links = store::delete_links_of_owner(conn, owner)?;
    let pixels = store::delete_pixels_of_owner(conn, owner)?;
    let connection = store::delete_connection(conn, owner)?;
    Ok(Removed { removed: links + pixels + connection > 0 })
}

/// The owner a federated dashboard connection acts as.
pub fn federated_owner(connection_id: &str) -> String {
    format!("rastro:connection:{connection_id}")
}

#[cfg(test)]
mod tests {
    use super::check_redirect;

    // rule: CONN-04
    #[test]
    fn redirects_are_https_or_localhost() {
        assert!(check_redirect("https://app.example.com/meta/retorno").is_ok());
        assert!(check_redirect("http://localhost:5173/meta/retorno").is_ok());
        assert!(check_redirect("http://127.0.0.1/meta/retorno").is_ok());
        assert!(check_redirect("http://app.example.com/meta/retorno").is_err());
        assert!(check_redirect("http://localhost.evil.com/x").is_err());
        assert!(check_redirect("ftp://x").is_err());
        assert!(check_redirect("https:///x").is_err());
    }
}
