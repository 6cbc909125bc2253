//! Identify and forget (PPL-01 to PPL-13): the host names a person by its own
//! `externalId`; the owner's identity map keeps only an HMAC of it (under the
//! key HKDF derives from `RASTRO_SECRETS_KEY`) and answers the person's
//! canonical `u_` id. An anonymous `visitorId` becomes an alias on the site;
//! its open session and its dense visitor number pass to the canonical id, so
//! a login mid-visit is one session and one visitor (rules SES-19, STORE-06).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Code, Error, Result};
use crate::service::analytics::ingest::batch::is_visitor_id;
use crate::service::analytics::people::search;
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::service::sites;
use crate::store::analytics::people::{self as store, ProfileRow, VisitorState};

pub const MAX_ATTRIBUTES: usize = 50;
const MAX_NAME: usize = 200;
const MAX_EMAIL: usize = 254;
const MAX_EXTERNAL_ID: usize = 256;
const MAX_ATTRIBUTE_TEXT: usize = 256;

/// A field that may be absent (keep), `null` (clear) or a value (set).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> std::result::Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// `POST /v1/sites/{siteId}/analytics/identify`'s body. Its Debug never
/// shows the `externalId` (rule PPL-04).
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Identify {
    /// 1–256 chars: the host's own id of the person; stored only as an HMAC, never answered or logged.
    pub external_id: String,
    /// The browser's anonymous id (`v_…`), made an alias of the person on this site; never on a cookieless site.
    #[serde(default)]
    pub visitor_id: Option<String>,
    /// ≤ 200 chars; `null` clears it, absent keeps it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub name: Option<Option<String>>,
    /// ≤ 254 chars, stored lowercased; `null` clears it, absent keeps it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub email: Option<Option<String>>,
    /// ≤ 50 keys `[A-Za-z0-9_.-]{1,64}` → string ≤ 256 chars, finite number or boolean; merged, `null` deletes a key.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<Map<String, Value>>,
}

impl std::fmt::Debug for Identify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identify").field("external_id", &"<redacted>").finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct IdentifyAnswer {
    /// The person's canonical `u_` id: hand it to `rastro.identify(visitorId)`.
    pub visitor_id: String,
    /// True when the site gained a profile (201).
    pub created: bool,
    /// True iff the given `visitorId` is, after the call, an alias of this id.
    pub aliased: bool,
}

fn attribute_key(k: &str) -> bool {
    (1..=64).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The body's shape and bounds (rules PPL-07, PPL-08); the messages never
/// repeat the caller's text.
pub fn check(input: &Identify) -> Result<()> {
    crate::service::validate::text("externalId", &input.external_id, 1, MAX_EXTERNAL_ID)?;
    if let Some(v) = &input.visitor_id {
        if !is_visitor_id(v) {
            return Err(Error::invalid("visitorId must be 8-64 characters of [A-Za-z0-9_-]"));
        }
        if v.starts_with("u_") || v.starts_with("c_") {
            return Err(Error::invalid("visitorId must be the browser's anonymous id, not a u_ or c_ id"));
        }
    }
    if let Some(Some(name)) = &input.name {
        crate::service::validate::text("name", name, 0, MAX_NAME)?;
    }
    if let Some(Some(email)) = &input.email {
        crate::service::validate::text("email", email, 0, MAX_EMAIL)?;
    }
    if let Some(attrs) = &input.attributes {
        if attrs.len() > MAX_ATTRIBUTES {
            return Err(Error::invalid(format!("attributes may hold at most {MAX_ATTRIBUTES} keys")));
        }
        for (k, v) in attrs {
            if !attribute_key(k) {
                return Err(Error::invalid("attribute keys must be 1-64 characters of [A-Za-z0-9_.-]"));
            }
            let ok = match v {
                Value::Null | Value::Bool(_) => true,
                Value::String(s) => s.chars().count() <= MAX_ATTRIBUTE_TEXT,
                Value::Number(n) => n.as_f64().is_some_and(f64::is_finite),
                _ => false,
            };
            if !ok {
                return Err(Error::invalid(
                    "attribute values must be a string of at most 256 characters, a finite number, a boolean or null",
                ));
            }
        }
    }
    Ok(())
}

fn key_missing() -> Error {
    Error::new(Code::SecretsKeyMissing, "RASTRO_SECRETS_KEY is not set: identify cannot run")
}

/// Identify (rules PPL-01 to PPL-08, SES-19, STORE-06).
pub async fn identify(cx: &Context, site_id: &str, input: Identify) -> Result<IdentifyAnswer> {
    let key = cx.secrets.clone().ok_or_else(key_missing)?;
    check(&input)?;
    let now = cx.now();
    let limits = (cx.config.session_idle.as_millis() as i64, cx.config.session_max.as_millis() as i64);
    let fresh = crate::ids::random_b64("u_")?;
    let site_id = site_id.to_string();
    let live_site = site_id.clone();
    let rows = move |c: &mut AnyConnection| -> Result<IdentifyAnswer> {
        let site = sites::require(c, &site_id)?;
        if site.cookieless && input.visitor_id.is_some() {
            return Err(Error::invalid("a cookieless site takes no visitorId"));
        }
        let hash = key.identity_hash(&site.owner_id, &input.external_id);
        let canonical = store::identity_or_insert(c, &site.owner_id, &hash, &fresh, now)?;
        let existing = store::profile(c, &site_id, &canonical)?;
        let mut created = existing.is_none();
        let mut p = existing.unwrap_or_else(|| ProfileRow {
            site_id: site_id.clone(),
            visitor_id: canonical.clone(),
            name: None,
            email: None,
            attributes: "{}".into(),
            identified_at: now,
            first_seen_at: now,
            last_seen_at: now,
        });
        if let Some(name) = input.name {
            p.name = name.filter(|n| !n.is_empty());
        }
        if let Some(email) = input.email {
            p.email = email.map(|e| e.to_lowercase()).filter(|e| !e.is_empty());
        }
        let mut attrs: Map<String, Value> = serde_json::from_str(&p.attributes).unwrap_or_default();
        for (k, v) in input.attributes.unwrap_or_default() {
            if v.is_null() {
                attrs.remove(&k);
            } else {
                attrs.insert(k, v);
            }
        }
        if attrs.len() > MAX_ATTRIBUTES {
            return Err(Error::invalid(format!("attributes may hold at most {MAX_ATTRIBUTES} keys after the merge")));
        }
        p.attributes = Value::Object(attrs).to_string();
        p.first_seen_at = p.first_seen_at.min(now);
        p.last_seen_at = p.last_seen_at.max(now);
        // Another process may have made the profile since the read: then it is updated.
        if created && store::insert_profile(c, &p)? == 0 {
            created = false;
        }
        if !created {
            store::update_profile(c, &p)?;
        }
        store::set_terms(c, &site_id, &canonical, &search::terms(p.name.as_deref(), p.email.as_deref()))?;
        let aliased = match &input.visitor_id {
            Some(anon) => {
                let owner = store::alias_or_keep(c, &site_id, anon, &canonical, now)?;
                let aliased = owner == canonical;
                if aliased {
                    hand_over(c, &site_id, anon, &canonical, now, limits)?;
                }
                aliased
            }
            None => false,
        };
        Ok(IdentifyAnswer { visitor_id: canonical, created, aliased })
    };
    cx.write(move |c| {
        let answer = rows(c)?;
        Ok(Written::new(answer, Effects::default().merge(Effects::live(&live_site, true))))
    })
    .await
}

/// The alias's dense number and open session pass to the canonical id
/// (§2 "Identify and numbers", §3.7 "Identify"): identify never splits a session.
fn hand_over(
    c: &mut AnyConnection,
    site: &str,
    anon: &str,
    canonical: &str,
    now: i64,
    limits: (i64, i64),
) -> Result<()> {
    store::share_number(c, site, anon, canonical)?;
    let Some(state) = store::visitor_state(c, site, anon)? else { return Ok(()) };
    let (idle, max) = limits;
    if state.session_id.is_empty() || now - state.last_at >= idle || now - state.session_started_at >= max {
        return Ok(());
    }
    let mine = store::visitor_state(c, site, canonical)?;
    if let Some(m) = &mine
        && (m.session_id == state.session_id || m.last_at > state.last_at)
    {
        return Ok(());
    }
    store::set_session_visitor(c, &state.session_id, canonical)?;
    let sessions = mine.map_or(state.sessions, |m| m.sessions.max(state.sessions));
    store::mark_handed_over(c, site, anon, &state.session_id)?;
    store::put_visitor_state(c, site, canonical, &VisitorState { sessions, ..state })?;
    Ok(())
}

/// Forgets a person on a site (rules PPL-12, PPL-13): the profile, its
/// aliases and terms go; the site's events and sessions of those ids become
/// one fresh `v_` id; the identity row goes when no site of the owner keeps
/// a profile of the id.
pub async fn forget(cx: &Context, site_id: &str, visitor_id: &str) -> Result<bool> {
    let (site_id, visitor_id) = (site_id.to_string(), visitor_id.to_string());
    let fresh = crate::ids::random_b64("v_")?;
    let live_site = site_id.clone();
    let rows = move |c: &mut AnyConnection| -> Result<bool> {
        let site = sites::require(c, &site_id)?;
        if !is_visitor_id(&visitor_id) {
            return Ok(false);
        }
        let Some(canonical) = store::canonical_of(c, &site_id, &visitor_id)? else { return Ok(false) };
        let ids = store::ids_of_person(c, &site_id, &canonical)?;
        store::rewrite_ids(c, &site_id, &ids, &fresh)?;
        store::delete_terms(c, &site_id, &canonical)?;
        store::delete_aliases(c, &site_id, &canonical)?;
        store::delete_profile(c, &site_id, &canonical)?;
        if !store::owner_keeps(c, &site.owner_id, &canonical)? {
            store::delete_identity(c, &canonical)?;
        }
        Ok(true)
    };
    cx.write(move |c| {
        let answer = rows(c)?;
        Ok(Written::new(answer, Effects::default().merge(Effects::live(&live_site, answer))))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Result<Identify> {
        serde_json::from_value::<Identify>(v).map_err(|e| Error::invalid(e.to_string()))
    }

    // rule: PPL-07
    // rule: PPL-08
    #[test]
    fn bodies_are_checked_without_echoing_the_external_id() {
        let ok = body(json!({"externalId": "x", "visitorId": "v_abcdefgh", "name": null,
            "attributes": {"plan": "pro", "seats": 3, "trial": false, "old": null}}))
        .unwrap();
        assert!(check(&ok).is_ok());
        assert_eq!(ok.name, Some(None));
        assert!(!format!("{ok:?}").contains("\"x\""));
        for bad in [
            json!({"externalId": ""}),
            json!({"externalId": "x".repeat(257)}),
            json!({"externalId": "x", "visitorId": "u_abcdefgh"}),
            json!({"externalId": "x", "visitorId": "c_abcdefgh"}),
            json!({"externalId": "x", "visitorId": "short"}),
            json!({"externalId": "x", "name": "n".repeat(201)}),
            json!({"externalId": "x", "email": "e".repeat(255)}),
            json!({"externalId": "x", "attributes": {"bad key": 1}}),
            json!({"externalId": "x", "attributes": {"k": {"nested": 1}}}),
            json!({"externalId": "x", "attributes": {"k": [1]}}),
            json!({"externalId": "x", "attributes": {"k": "v".repeat(257)}}),
        ] {
            let b = body(bad.clone()).unwrap();
            assert!(check(&b).is_err(), "{bad}");
        }
        let many: Map<String, Value> = (0..51).map(|i| (format!("k{i}"), json!(i))).collect();
        assert!(check(&body(json!({"externalId": "x", "attributes": many})).unwrap()).is_err());
        assert!(body(json!({"externalId": "x", "other": 1})).is_err(), "unknown fields refused");
    }
}
