//! The dashboard's JWT: verified against the issuer's JWKS, with the algorithm
//! fixed by the key (never by the token), the claims checked by hand against
//! the daemon's clock.
//!
//! - Keys come from `RASTRO_FEDERATION_JWKS` (a file path or an http(s) URL;
//!   default `<issuer>/.well-known/jwks.json`). They are cached; an unknown
//!   `kid` refetches once, then not again for [`REFETCH_COOLDOWN_MS`]; a failed
//!   fetch keeps the keys already known. Symmetric (`oct`) keys are never
//!   loaded, so HS* can never verify.
//! - Accepted algorithms: RS256/384/512, PS256/384/512, ES256/384, EdDSA; the
//!   header's `alg` must be the key's. `none` does not even parse. `jku`,
//!   `x5u`, `x5c` and an inline `jwk` are ignored; a `crit` header is refused.
//! - `exp`, `iss`, `aud` are required; `exp`/`nbf` must be numbers; leeway
//!   [`LEEWAY_MS`]. `iss` must equal the configured issuer exactly (another one
//!   is FEDERATION_ISSUER_MISMATCH), `aud` must name the configured audience
//!   exactly.
//! - The bounded `rastro_*` claims are checked here too (FEDERATION_INVALID_CLAIMS).
//! - A verified token is cached (by its SHA-256) until its `exp`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{Code, Error, Result};
use crate::service::federation::grants::{MAX_ID_CHARS, PERM_PUBLIC, PERM_READ};

/// Clock skew allowed on `exp` and `nbf`.
pub const LEEWAY_MS: i64 = 30_000;
/// After a refetch for an unknown `kid` (or a failed fetch), the next one waits this long.
pub const REFETCH_COOLDOWN_MS: i64 = 60_000;
/// Keys older than this are fetched again in passing (kept if that fails).
pub const KEYS_MAX_AGE_MS: i64 = 3_600_000;
/// Longest token accepted, in bytes.
pub const MAX_TOKEN_BYTES: usize = 8_192;
/// Largest JWKS document read, in bytes; most keys kept from it.
const MAX_JWKS_BYTES: usize = 1 << 20;
const MAX_KEYS: usize = 64;
/// Verified tokens remembered at once.
const TOKEN_CACHE_MAX: usize = 20_000;
/// Bounds of the `rastro_*` claims.
const MAX_PERMISSIONS: usize = 16;
const MAX_PERMISSION_CHARS: usize = 64;

const ACCEPTED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Who a verified token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub connection_id: String,
    pub organization_id: String,
    pub permissions: BTreeSet<String>,
    /// A public link's token (`analytics:public`): a narrow surface over `site_ids`.
    pub public: bool,
    /// `rastro_site_ids`, required on public tokens.
    pub site_ids: Option<Vec<String>>,
    /// `exp` in epoch milliseconds.
    pub expires_at: i64,
}

#[derive(Debug, Clone)]
enum Source {
    File(PathBuf),
    Url(String),
}

struct Key {
    kid: Option<String>,
    alg: Algorithm,
    decoding: DecodingKey,
}

#[derive(Default)]
struct Keys {
    keys: Vec<Arc<Key>>,
    loaded_at: Option<i64>,
    /// Bumped by every fetch, good or bad: waiters see someone else fetched.
    generation: u64,
    /// No fetch before this time (after an unknown-kid refetch or a failure).
    next_fetch_at: i64,
}

/// The verifier: issuer, audience, the cached JWKS and the verified tokens.
pub struct Verifier {
    issuer: String,
    audience: Option<String>,
    source: Source,
    http: reqwest::Client,
    keys: RwLock<Keys>,
    fetching: tokio::sync::Mutex<()>,
    tokens: Mutex<HashMap<[u8; 32], Arc<Identity>>>,
    fetches: AtomicU64,
}

struct Found {
    key: Option<Arc<Key>>,
    loaded_at: Option<i64>,
    generation: u64,
    next_fetch_at: i64,
}

fn no_key(loaded: bool) -> Error {
    if loaded {
        unauthenticated("the token's signing key is unknown")
    } else {
        unauthenticated("the issuer's signing keys are unavailable; retry shortly")
    }
}

fn unauthenticated(message: &str) -> Error {
    Error::new(Code::FederationUnauthenticated, message)
}

fn invalid_claims(message: &str) -> Error {
    Error::new(Code::FederationInvalidClaims, message)
}

impl Verifier {
    /// `issuer` without a trailing slash (config strips it); `audience` None
    /// refuses every federated call; `jwks` None reads `<issuer>/.well-known/jwks.json`.
    pub fn new(issuer: &str, audience: Option<&str>, jwks: Option<&str>) -> Verifier {
        let issuer = issuer.trim_end_matches('/').to_string();
        let source = match jwks {
            Some(s) if s.starts_with("https://") || s.starts_with("http://") => Source::Url(s.to_string()),
            Some(s) => Source::File(PathBuf::from(s.strip_prefix("file://").unwrap_or(s))),
            None => Source::Url(format!("{issuer}/.well-known/jwks.json")),
        };
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .expect("building the JWKS client");
        Verifier {
            issuer,
            // The runbook's auth config drops one trailing slash from the configured audience.
            audience: audience.map(|a| a.trim_end_matches('/').to_string()).filter(|a| !a.is_empty()),
            source,
            http,
            keys: RwLock::new(Keys::default()),
            fetching: tokio::sync::Mutex::new(()),
            tokens: Mutex::new(HashMap::new()),
            fetches: AtomicU64::new(0),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn audience(&self) -> Option<&str> {
        self.audience.as_deref()
    }

    /// How many times the JWKS was fetched (tests, metrics).
    pub fn fetch_count(&self) -> u64 {
        self.fetches.load(Ordering::SeqCst)
    }

    /// Verifies `token` at `now` (epoch ms) and answers who it speaks for
    /// (shared with the cache: a cached token costs no copy).
    pub async fn verify(&self, token: &str, now: i64) -> Result<Arc<Identity>> {
        if self.audience.is_none() {
            return Err(unauthenticated(
                "this deployment serves no federated calls: RASTRO_FEDERATION_AUDIENCE is not set",
            ));
        }
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return Err(unauthenticated("a valid Rastro token is required (Authorization: Bearer <JWT>)"));
        }
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(cached) = self.cached(&digest, now) {
            return cached;
        }
        let identity = Arc::new(self.verify_fresh(token, now).await?);
        self.remember(digest, identity.clone(), now);
        Ok(identity)
    }

    fn cached(&self, digest: &[u8; 32], now: i64) -> Option<Result<Arc<Identity>>> {
        let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        let identity = tokens.get(digest)?;
        if now > identity.expires_at + LEEWAY_MS {
            tokens.remove(digest);
            return Some(Err(unauthenticated("the token has expired")));
        }
        Some(Ok(identity.clone()))
    }

    fn remember(&self, digest: [u8; 32], identity: Arc<Identity>, now: i64) {
        let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        if tokens.len() >= TOKEN_CACHE_MAX {
            tokens.retain(|_, id| now <= id.expires_at + LEEWAY_MS);
            if tokens.len() >= TOKEN_CACHE_MAX {
                tokens.clear();
            }
        }
        tokens.insert(digest, identity);
    }

    async fn verify_fresh(&self, token: &str, now: i64) -> Result<Identity> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| unauthenticated("the token is malformed"))?;
        if !ACCEPTED.contains(&header.alg) {
            return Err(unauthenticated("the token's algorithm is not accepted"));
        }
        if header.crit.is_some() {
            return Err(unauthenticated("the token carries critical headers this verifier does not know"));
        }
        // jku, x5u, x5c and an inline jwk are never looked at: keys come from the configured JWKS only.
        let key = self.key_for(header.kid.as_deref(), now).await?;
        if key.alg != header.alg {
            return Err(unauthenticated("the token's algorithm is not its key's"));
        }
        let mut validation = Validation::new(key.alg);
        validation.algorithms = vec![key.alg];
        validation.required_spec_claims = HashSet::new();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.leeway = 0;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation)
            .map_err(|_| unauthenticated("the token's signature does not verify"))?;
        check_claims(&data.claims, &self.issuer, self.audience.as_deref().unwrap_or_default(), now)
    }

    fn find(&self, kid: Option<&str>) -> Found {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        let found = match kid {
            Some(k) => keys.keys.iter().find(|key| key.kid.as_deref() == Some(k)).cloned(),
            // Without a kid, only a set of exactly one key says which key it is.
            None if keys.keys.len() == 1 => keys.keys.first().cloned(),
            None => None,
        };
        Found { key: found, loaded_at: keys.loaded_at, generation: keys.generation, next_fetch_at: keys.next_fetch_at }
    }

    async fn key_for(&self, kid: Option<&str>, now: i64) -> Result<Arc<Key>> {
        let first = self.find(kid);
        let may_fetch = now >= first.next_fetch_at;
        let fetch = match (&first.key, first.loaded_at) {
            (_, None) => may_fetch,
            (Some(_), Some(at)) => may_fetch && now - at >= KEYS_MAX_AGE_MS,
            (None, Some(_)) => may_fetch,
        };
        if !fetch {
            return first.key.ok_or_else(|| no_key(first.loaded_at.is_some()));
        }
        // An unknown kid starts the cooldown even when the fetch succeeds: one refetch, then wait.
        let unknown_kid = first.loaded_at.is_some() && first.key.is_none();
        self.refetch(first.generation, now, unknown_kid).await;
        let again = self.find(kid);
        again.key.ok_or_else(|| no_key(again.loaded_at.is_some()))
    }

    /// Fetches the JWKS unless someone else did since `seen`; a failure keeps the keys.
    async fn refetch(&self, seen: u64, now: i64, cooldown: bool) {
        let _one = self.fetching.lock().await;
        if self.keys.read().unwrap_or_else(|p| p.into_inner()).generation != seen {
            return;
        }
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let fetched = self.fetch().await;
        let mut keys = self.keys.write().unwrap_or_else(|p| p.into_inner());
        keys.generation += 1;
        match fetched {
            Ok(new) => {
                tracing::info!(keys = new.len(), "federation: JWKS loaded");
                keys.keys = new;
                keys.loaded_at = Some(now);
                if cooldown {
                    keys.next_fetch_at = now + REFETCH_COOLDOWN_MS;
                }
            }
            Err(why) => {
                tracing::warn!(error = %why, "federation: JWKS fetch failed; keeping the keys already known");
                keys.next_fetch_at = now + REFETCH_COOLDOWN_MS;
            }
        }
    }

    async fn fetch(&self) -> std::result::Result<Vec<Arc<Key>>, String> {
        let bytes = match &self.source {
            Source::File(path) => {
                let p = path.clone();
                let bytes = tokio::task::spawn_blocking(move || std::fs::read(p))
                    .await
                    .map_err(|e| format!("reading {}: {e}", path.display()))?
                    .map_err(|e| format!("reading {}: {e}", path.display()))?;
                if bytes.len() > MAX_JWKS_BYTES {
                    return Err("the JWKS file is too large".into());
                }
                bytes
            }
            Source::Url(url) => {
                let mut res = self.http.get(url).send().await.map_err(|e| format!("GET {url}: {e}"))?;
                if !res.status().is_success() {
                    return Err(format!("GET {url}: HTTP {}", res.status()));
                }
                let mut body = Vec::new();
                while let Some(chunk) = res.chunk().await.map_err(|e| format!("GET {url}: {e}"))? {
                    body.extend_from_slice(&chunk);
                    if body.len() > MAX_JWKS_BYTES {
                        return Err("the JWKS document is too large".into());
                    }
                }
                body
            }
        };
        parse_jwks(&bytes)
    }
}

/// The usable signing keys of a JWKS document: RSA, EC (P-256, P-384) and
/// OKP (Ed25519), each with the algorithm its `alg` names or its type implies.
fn parse_jwks(bytes: &[u8]) -> std::result::Result<Vec<Arc<Key>>, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|_| "the JWKS is not JSON".to_string())?;
    let list = doc.get("keys").and_then(Value::as_array).ok_or("the JWKS has no keys array")?;
    let mut keys = Vec::new();
    for jwk in list.iter().take(MAX_KEYS) {
        if let Some(key) = parse_jwk(jwk) {
            keys.push(Arc::new(key));
        }
    }
    if keys.is_empty() {
        return Err("the JWKS holds no usable signing key".into());
    }
    Ok(keys)
}

fn parse_jwk(jwk: &Value) -> Option<Key> {
    let s = |name: &str| jwk.get(name).and_then(Value::as_str);
    if jwk.get("use").is_some() && s("use") != Some("sig") {
        return None;
    }
    let kid = match jwk.get("kid") {
        None => None,
        Some(Value::String(k)) if !k.is_empty() && k.len() <= 256 => Some(k.clone()),
        Some(_) => return None,
    };
    let named: Option<Algorithm> = match jwk.get("alg") {
        None => None,
        Some(Value::String(a)) => Some(a.parse().ok()?),
        Some(_) => return None,
    };
    let (alg, decoding) = match s("kty")? {
        "RSA" => {
            let alg = named.unwrap_or(Algorithm::RS256);
            let rsa = [
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
            ];
            if !rsa.contains(&alg) {
                return None;
            }
            (alg, DecodingKey::from_rsa_components(s("n")?, s("e")?).ok()?)
        }
        "EC" => {
            let implied = match s("crv")? {
                "P-256" => Algorithm::ES256,
                "P-384" => Algorithm::ES384,
                _ => return None,
            };
            if named.is_some_and(|a| a != implied) {
                return None;
            }
            (implied, DecodingKey::from_ec_components(s("x")?, s("y")?).ok()?)
        }
        "OKP" => {
            if s("crv")? != "Ed25519" || named.is_some_and(|a| a != Algorithm::EdDSA) {
                return None;
            }
            (Algorithm::EdDSA, DecodingKey::from_ed_components(s("x")?).ok()?)
        }
        // "oct" (HMAC) and anything else: never a key here.
        _ => return None,
    };
    Some(Key { kid, alg, decoding })
}

/// A NumericDate: a JSON number (a string is refused), in epoch milliseconds.
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => {
            let secs = n.as_f64().filter(|f| f.is_finite() && (0.0..1e12).contains(f));
            secs.map(|s| Some((s * 1000.0) as i64)).ok_or_else(|| unauthenticated("the token's times are malformed"))
        }
        Some(_) => Err(unauthenticated("the token's times are malformed")),
    }
}

fn bounded_id(claims: &Map<String, Value>, name: &str) -> Result<String> {
    let v =
        claims.get(name).and_then(Value::as_str).ok_or_else(|| invalid_claims("the token lacks its rastro claims"))?;
    let ok = !v.is_empty()
        && v.chars().count() <= MAX_ID_CHARS
        && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if !ok {
        return Err(invalid_claims("the token's rastro claims are malformed"));
    }
    Ok(v.to_string())
}

/// Checks the registered and the `rastro_*` claims of a token whose signature verified.
pub fn check_claims(claims: &Map<String, Value>, issuer: &str, audience: &str, now: i64) -> Result<Identity> {
    let exp = numeric_date(claims, "exp")?.ok_or_else(|| unauthenticated("the token has no expiry"))?;
    let nbf = numeric_date(claims, "nbf")?;
    numeric_date(claims, "iat")?;
    let iss = match claims.get("iss") {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(unauthenticated("the token names no issuer")),
    };
    let auds: Vec<&str> = match claims.get("aud") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) if items.len() <= 16 => {
            items.iter().map(|v| v.as_str()).collect::<Option<Vec<_>>>().ok_or_else(|| unauthenticated("bad aud"))?
        }
        _ => return Err(unauthenticated("the token names no audience")),
    };
    if iss != issuer {
        return Err(Error::new(Code::FederationIssuerMismatch, "the token comes from another issuer"));
    }
    if now > exp + LEEWAY_MS {
        return Err(unauthenticated("the token has expired"));
    }
    if nbf.is_some_and(|nbf| nbf - LEEWAY_MS > now) {
        return Err(unauthenticated("the token is not valid yet"));
    }
    if !auds.contains(&audience) {
        return Err(unauthenticated("the token is meant for another audience"));
    }
    let connection_id = bounded_id(claims, "rastro_connection_id")?;
    let organization_id = bounded_id(claims, "rastro_organization_id")?;
    let permissions: BTreeSet<String> = match claims.get("rastro_permissions") {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_PERMISSIONS => items
            .iter()
            .map(|v| match v.as_str() {
                Some(p) if !p.is_empty() && p.len() <= MAX_PERMISSION_CHARS => Some(p.to_string()),
                _ => None,
            })
            .collect::<Option<_>>()
            .ok_or_else(|| invalid_claims("the token's rastro_permissions are malformed"))?,
        None => return Err(invalid_claims("the token lacks rastro_permissions")),
        Some(_) => return Err(invalid_claims("the token's rastro_permissions are malformed")),
    };
    let public = permissions.contains(PERM_PUBLIC);
    if !public && !permissions.contains(PERM_READ) {
        return Err(invalid_claims("the token lacks the analytics:read permission"));
    }
    let site_ids = match claims.get("rastro_site_ids") {
        None => None,
        Some(Value::Array(items)) => {
            let ids: Vec<String> = items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| invalid_claims("the token's rastro_site_ids are malformed"))?;
            crate::service::validate::site_ids(&ids)
                .map_err(|_| invalid_claims("rastro_site_ids must list 1-10 unique, well-formed site ids"))?;
            Some(ids)
        }
        Some(_) => return Err(invalid_claims("the token's rastro_site_ids are malformed")),
    };
    if public && site_ids.is_none() {
        return Err(invalid_claims("a public token must carry rastro_site_ids"));
    }
    Ok(Identity { connection_id, organization_id, permissions, public, site_ids, expires_at: exp })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ISS: &str = "https://issuer.example.com/federation";
    const AUD: &str = "https://product.example.com";
    const NOW: i64 = 1_796_040_000_000;

    fn claims(extra: Value) -> Map<String, Value> {
        let mut c = json!({
            "iss": ISS, "aud": AUD, "exp": NOW / 1000 + 600, "iat": NOW / 1000,
            "rastro_connection_id": "conn_1", "rastro_organization_id": "org_1",
            "rastro_permissions": ["analytics:read"],
        });
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                c.as_object_mut().unwrap().remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        c.as_object().unwrap().clone()
    }

    fn code(extra: Value) -> Code {
        check_claims(&claims(extra), ISS, AUD, NOW).unwrap_err().code
    }

    // rule: FED-01
    #[test]
    fn registered_claims_are_required_typed_and_exact() {
        assert!(check_claims(&claims(json!({})), ISS, AUD, NOW).is_ok());
        assert_eq!(code(json!({"exp": null})), Code::FederationUnauthenticated);
        assert_eq!(code(json!({"exp": format!("{}", NOW / 1000 + 600)})), Code::FederationUnauthenticated);
        assert_eq!(code(json!({"exp": NOW / 1000 - 31})), Code::FederationUnauthenticated);
        assert!(check_claims(&claims(json!({"exp": NOW / 1000 - 29})), ISS, AUD, NOW).is_ok(), "within leeway");
        assert_eq!(code(json!({"nbf": NOW / 1000 + 31})), Code::FederationUnauthenticated);
        assert_eq!(code(json!({"nbf": "0"})), Code::FederationUnauthenticated);
        assert_eq!(code(json!({"iss": null})), Code::FederationUnauthenticated);
        assert_eq!(code(json!({"iss": format!("{ISS}/")})), Code::FederationIssuerMismatch);
        assert_eq!(code(json!({"iss": ISS.to_uppercase()})), Code::FederationIssuerMismatch);
        assert_eq!(code(json!({"aud": null})), Code::FederationUnauthenticated);
        assert_eq!(code(json!({"aud": format!("{AUD}/")})), Code::FederationUnauthenticated);
        assert_eq!(code(json!({"aud": "https://PRODUCT.example.com"})), Code::FederationUnauthenticated);
        assert!(check_claims(&claims(json!({"aud": ["x", AUD]})), ISS, AUD, NOW).is_ok());
    }

    // rule: FED-02
    #[test]
    fn rastro_claims_are_bounded() {
        assert_eq!(code(json!({"rastro_connection_id": null})), Code::FederationInvalidClaims);
        assert_eq!(code(json!({"rastro_organization_id": 7})), Code::FederationInvalidClaims);
        assert_eq!(code(json!({"rastro_connection_id": "x".repeat(129)})), Code::FederationInvalidClaims);
        assert_eq!(code(json!({"rastro_permissions": null})), Code::FederationInvalidClaims);
        assert_eq!(code(json!({"rastro_permissions": []})), Code::FederationInvalidClaims);
        assert_eq!(code(json!({"rastro_permissions": ["analytics:configure"]})), Code::FederationInvalidClaims);
        assert_eq!(code(json!({"rastro_permissions": vec!["analytics:read"; 17]})), Code::FederationInvalidClaims);
        assert_eq!(code(json!({"rastro_permissions": ["analytics:public"]})), Code::FederationInvalidClaims);
        let eleven: Vec<String> = (0..11).map(|i| format!("s{i}")).collect();
        let public = json!({"rastro_permissions": ["analytics:public"], "rastro_site_ids": eleven});
        assert_eq!(code(public), Code::FederationInvalidClaims);
        let dup = json!({"rastro_permissions": ["analytics:public"], "rastro_site_ids": ["a", "a"]});
        assert_eq!(code(dup), Code::FederationInvalidClaims);
        let ok = json!({"rastro_permissions": ["analytics:public"], "rastro_site_ids": ["a", "b"]});
        let id = check_claims(&claims(ok), ISS, AUD, NOW).unwrap();
        assert!(id.public);
        assert_eq!(id.site_ids.unwrap(), vec!["a", "b"]);
    }

    #[test]
    fn symmetric_and_unknown_keys_never_load() {
        let doc = json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "h"},
            {"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA", "kid": "p521"},
            {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "ed", "alg": "RS256"},
            {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "enc", "use": "enc"},
        ]});
        assert!(parse_jwks(doc.to_string().as_bytes()).is_err(), "no usable key among them");
        let doc = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "ed"}]});
        let keys = parse_jwks(doc.to_string().as_bytes()).unwrap();
        assert_eq!(keys[0].alg, Algorithm::EdDSA);
    }
}
