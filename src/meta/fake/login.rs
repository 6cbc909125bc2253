//! Facebook Login for Business under the fake: no app env needed.
//!
//! `POST /oauth/access_token` (form):
//! * `client_secret` containing `invalid` → code 101 "Error validating client
//!   secret." (the app id and secret are otherwise not checked);
//! * `grant_type=fb_exchange_token`: `fb_exchange_token` containing `invalid` →
//!   code 190; else a 60-day token `fake-long-user-token-…`, `expires_in`
//!   5184000;
//! * `code` containing `invalid` → code 100 subcode 36007; `used-code` → 36008
//!   (used already); `other-redirect` → 36009 (another redirect URI);
//!   `refused-code` → code 100 without a subcode; containing
//!   `user-token` → a short-lived `fake-user-token-…` (`expires_in` 7200); any
//!   other → a system user token `fake-system-token-…` without `expires_in`.
//!
//! A code or exchanged token holding `rastro-fake-sample-token:<days>` passes
//! that suffix on to the new token, so the date shift survives the login.
//!
//! `GET /debug_token?input_token=…`: `fake-user-token-…` and
//! `fake-long-user-token-…` are `USER` tokens expiring when issued said (or
//! 2 hours / 60 days from now for a token this instance did not issue);
//! anything else is a `SYSTEM_USER` token that never expires (`expires_at` 0);
//! a token containing `invalid` is `is_valid: false` with error 190.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::reply::{GraphError, Query, get, parse_query};
use super::sample::{SAMPLE_TOKEN_PREFIX, SAMPLE_USER_ID, token_shift};
use super::{Issued, Shared};

pub const SHORT_LIVED_SECS: i64 = 7_200;
pub const LONG_LIVED_SECS: i64 = 5_184_000;
pub const FAKE_APP_ID: &str = "1234567890";

/// The app a daemon running the fake logs in with when no real one is set.
pub fn fake_app() -> crate::meta::MetaApp {
    crate::meta::MetaApp { id: FAKE_APP_ID.into(), secret: crate::config::Secret::new("rastro-fake-app-secret") }
}
pub const SCOPES: [&str; 3] = ["ads_read", "ads_management", "business_management"];

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

fn hash_prefix(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn new_token(kind: &str, from: &str) -> String {
    let mut t = format!("fake-{kind}-token-{}", hash_prefix(from));
    if let Some(days) = token_shift(from) {
        t.push_str(&format!(".{SAMPLE_TOKEN_PREFIX}{days}"));
    }
    t
}

/// `POST /oauth/access_token` with a form body.
pub fn access_token(state: &Shared, body: &[u8]) -> Result<Value, GraphError> {
    let form = std::str::from_utf8(body).map_err(|_| GraphError::invalid("The form body is not UTF-8"))?;
    let form = parse_query(form)?;
    if get(&form, "client_secret").is_some_and(|s| s.contains("invalid")) {
        return Err(GraphError::new(400, 101, None, "Error validating client secret."));
    }
    if get(&form, "grant_type") == Some("fb_exchange_token") {
        let old = get(&form, "fb_exchange_token")
            .filter(|t| !t.is_empty())
            .ok_or_else(|| GraphError::invalid("Missing fb_exchange_token parameter"))?;
        if old.contains("invalid") {
            return Err(GraphError::expired_token());
        }
        let token = new_token("long-user", old);
        state.issued().insert(token.clone(), Issued { expires_at: now_secs() + LONG_LIVED_SECS });
        return Ok(json!({"access_token": token, "token_type": "bearer", "expires_in": LONG_LIVED_SECS}));
    }
    let code =
        get(&form, "code").filter(|c| !c.is_empty()).ok_or_else(|| GraphError::invalid("Missing code parameter"))?;
    if code.contains("invalid") {
        return Err(GraphError::new(400, 100, Some(36_007), "Invalid verification code format."));
    }
    if code.contains("used-code") {
        return Err(GraphError::new(400, 100, Some(36_008), "This authorization code has been used."));
    }
    if code.contains("other-redirect") {
        return Err(GraphError::new(400, 100, Some(36_009), "Redirect URI does not match the one used for the code."));
    }
    if code.contains("refused-code") {
        return Err(GraphError::new(400, 100, None, "Invalid code."));
    }
    if code.contains("user-token") {
        let token = new_token("user", code);
        state.issued().insert(token.clone(), Issued { expires_at: now_secs() + SHORT_LIVED_SECS });
        return Ok(json!({"access_token": token, "token_type": "bearer", "expires_in": SHORT_LIVED_SECS}));
    }
    let token = new_token("system", code);
    state.issued().insert(token.clone(), Issued { expires_at: 0 });
    Ok(json!({"access_token": token, "token_type": "bearer"}))
}

/// `GET /debug_token?input_token=…`, `app_token` from the Authorization header.
pub fn debug_token(state: &Shared, q: &Query, app_token: &str) -> Result<Value, GraphError> {
    let input = get(q, "input_token")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| GraphError::invalid("(#100) The parameter input_token is required"))?;
    let app_id = app_token.split_once('|').map_or(FAKE_APP_ID, |(id, _)| id);
    let now = now_secs();
    if input.contains("invalid") {
        return Ok(json!({"data": {
            "app_id": app_id,
            "type": "USER",
            "application": "Amage Rastro (fake)",
            "is_valid": false,
            "expires_at": now - 3_600,
            "data_access_expires_at": 0,
            "error": {"code": 190, "subcode": 463, "message": "Error validating access token: Session has expired"},
            "scopes": [],
            "user_id": SAMPLE_USER_ID,
        }}));
    }
    let issued = state.issued().get(input).copied();
    let (kind, expires_at) = if input.starts_with("fake-user-token-") {
        ("USER", issued.map_or(now + SHORT_LIVED_SECS, |i| i.expires_at))
    } else if input.starts_with("fake-long-user-token-") {
        ("USER", issued.map_or(now + LONG_LIVED_SECS, |i| i.expires_at))
    } else {
        ("SYSTEM_USER", 0)
    };
    let data_access = if kind == "USER" { now + 90 * 86_400 } else { 0 };
    Ok(json!({"data": {
        "app_id": app_id,
        "type": kind,
        "application": "Amage Rastro (fake)",
        "is_valid": true,
        "issued_at": state.started_ms / 1000,
        "expires_at": expires_at,
        "data_access_expires_at": data_access,
        "scopes": SCOPES,
        "user_id": SAMPLE_USER_ID,
    }}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Shared {
        Shared::new("http://127.0.0.1:1".into(), 1_796_040_000_000)
    }

    fn form(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn codes() {
        let s = shared();
        let e = access_token(&s, &form("client_id=1&client_secret=x&code=invalid-code")).unwrap_err();
        assert_eq!((e.code, e.subcode), (100, Some(36007)));
        let e = access_token(&s, &form("client_id=1&client_secret=invalid&code=abc")).unwrap_err();
        assert_eq!(e.code, 101);
        let sys = access_token(&s, &form("code=abc")).unwrap();
        assert!(sys["access_token"].as_str().unwrap().starts_with("fake-system-token-"));
        assert!(sys.get("expires_in").is_none());
        let user = access_token(&s, &form("code=my-user-token-1&redirect_uri=https%3A%2F%2Fx")).unwrap();
        assert_eq!(user["expires_in"], 7200);
        let t = user["access_token"].as_str().unwrap();
        let long = access_token(&s, &form(&format!("grant_type=fb_exchange_token&fb_exchange_token={t}"))).unwrap();
        assert_eq!(long["expires_in"], 5_184_000);
        let shifted = access_token(&s, &form("code=x-rastro-fake-sample-token%3A-3")).unwrap();
        assert_eq!(token_shift(shifted["access_token"].as_str().unwrap()), Some(-3));
    }

    #[test]
    fn debug() {
        let s = shared();
        let sys = access_token(&s, &form("code=abc")).unwrap();
        let q = vec![("input_token".to_string(), sys["access_token"].as_str().unwrap().to_string())];
        let d = debug_token(&s, &q, "42|secret").unwrap();
        assert_eq!(d["data"]["type"], "SYSTEM_USER");
        assert_eq!(d["data"]["expires_at"], 0);
        assert_eq!(d["data"]["app_id"], "42");
        let q = vec![("input_token".to_string(), "fake-user-token-00".to_string())];
        assert_eq!(debug_token(&s, &q, "a|b").unwrap()["data"]["type"], "USER");
        let q = vec![("input_token".to_string(), "an-invalid-one".to_string())];
        assert_eq!(debug_token(&s, &q, "a|b").unwrap()["data"]["is_valid"], false);
    }
}
