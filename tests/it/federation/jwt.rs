//! The dashboard JWT under attack: algorithms, keys, the JWKS cache and its
//! cooldown, times, issuer and audience, and the bounded `rastro_*` claims.
//! Every refusal is checked on both transports (FED-16).

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;
use crate::federation::{
    AUDIENCE, CONFIGURE, CONN, Fed, ISSUER, JwksServer, ORG, READ, SigningKey, answer, claims, fed_builder, sites, with,
};

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A token put together by hand: any header, any payload, any signature.
fn forge(header: Value, payload: &Value, signature: &[u8]) -> String {
    format!(
        "{}.{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(payload.to_string().as_bytes()),
        b64url(signature)
    )
}

async fn ready(fed: &Fed) {
    sites(fed).await;
    fed.grant(&["s1", "s2"], &[CONFIGURE]).await;
}

async fn status(fed: &Fed, token: &str) -> Result<Value, (u16, String)> {
    fed.both(Some(token), "connectionStatus", json!({})).await
}

#[track_caller]
fn refused(outcome: Result<Value, (u16, String)>, code: &str) {
    let status = match code {
        "FEDERATION_UNAUTHENTICATED" | "FEDERATION_ISSUER_MISMATCH" | "FEDERATION_INVALID_CLAIMS" => 401,
        "FEDERATION_INVALID_SCOPE" => 400,
        _ => 403,
    };
    Fed::expect_err(outcome, status, code);
}

// rule: FED-01
backend_test!(asymmetric_keys_of_each_family_verify, fed_builder, |fed| {
    ready(&fed).await;
    assert!(status(&fed, &fed.token(&[READ])).await.is_ok(), "EdDSA");
    let es = SigningKey::p256("es-1");
    let rs = SigningKey::rsa("rs-1");
    fed.jwks.serve(&[&fed.key, &es, &rs]);
    assert!(status(&fed, &es.sign(&claims(&[READ]))).await.is_ok(), "ES256 (a new kid: one refetch)");
    fed.app.clock.advance(61_000);
    assert!(status(&fed, &rs.sign(&claims(&[READ]))).await.is_ok(), "RS256 after the cooldown");
    // The algorithm is the key's, never the token's: an ES256 header on the EdDSA key is refused.
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("ed-1".into());
    let mixed = jsonwebtoken::encode(&header, &claims(&[READ]), &es.encoding).unwrap();
    refused(status(&fed, &mixed).await, "FEDERATION_UNAUTHENTICATED");
    // RS256 keys verify PS256? No: the key fixes RS256.
    let mut header = Header::new(Algorithm::PS256);
    header.kid = Some("rs-1".into());
    let ps = jsonwebtoken::encode(&header, &claims(&[READ]), &rs.encoding).unwrap();
    refused(status(&fed, &ps).await, "FEDERATION_UNAUTHENTICATED");
});

// rule: FED-01
backend_test!(alg_none_hmac_with_the_public_key_and_foreign_signatures_are_refused, fed_builder, |fed| {
    ready(&fed).await;
    let c = claims(&[READ, CONFIGURE]);
    // alg: none, with and without a signature, in every spelling.
    for alg in ["none", "None", "NONE"] {
        refused(status(&fed, &forge(json!({"alg": alg, "kid": "ed-1"}), &c, b"")).await, "FEDERATION_UNAUTHENTICATED");
        refused(status(&fed, &forge(json!({"alg": alg}), &c, b"x")).await, "FEDERATION_UNAUTHENTICATED");
    }
    // HS256 signed with the public key (its JWK text, its raw bytes).
    let x = fed.key.jwk["x"].as_str().unwrap();
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(x).unwrap();
    for secret in [fed.key.jwk.to_string().into_bytes(), raw, x.as_bytes().to_vec()] {
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            let mut header = Header::new(alg);
            header.kid = Some("ed-1".into());
            let token = jsonwebtoken::encode(&header, &c, &EncodingKey::from_secret(&secret).unwrap()).unwrap();
            refused(status(&fed, &token).await, "FEDERATION_UNAUTHENTICATED");
        }
    }
    // A signature from another key under the trusted kid.
    let other = SigningKey::ed25519("ed-1");
    refused(status(&fed, &other.sign(&c)).await, "FEDERATION_UNAUTHENTICATED");
    // A valid token with one byte of its payload changed.
    let good = fed.token(&[READ]);
    let parts: Vec<&str> = good.split('.').collect();
    let tampered = with(claims(&[READ]), json!({"rastro_connection_id": "conn_2"}));
    let forged = format!("{}.{}.{}", parts[0], b64url(tampered.to_string().as_bytes()), parts[2]);
    refused(status(&fed, &forged).await, "FEDERATION_UNAUTHENTICATED");
    // Garbage, a missing token, a token too long, another scheme.
    for junk in ["", "a.b", "a.b.c", "😀.😀.😀", &"x".repeat(9_000)] {
        refused(status(&fed, junk).await, "FEDERATION_UNAUTHENTICATED");
    }
    refused(fed.both(None, "connectionStatus", json!({})).await, "FEDERATION_UNAUTHENTICATED");
    let req = fed
        .app
        .http
        .post(format!("{}/federation/connectionStatus", fed.app.base))
        .header("authorization", format!("Basic {good}"));
    assert_eq!(answer(req).await.code(), "FEDERATION_UNAUTHENTICATED");
    // A critical header this verifier does not understand.
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("ed-1".into());
    header.crit = Some(vec!["exp".into()]);
    let crit = jsonwebtoken::encode(&header, &c, &fed.key.encoding).unwrap();
    refused(status(&fed, &crit).await, "FEDERATION_UNAUTHENTICATED");
    assert!(status(&fed, &good).await.is_ok());
});

// rule: FED-01
backend_test!(jku_x5u_and_inline_jwk_headers_are_ignored, fed_builder, |fed| {
    ready(&fed).await;
    let attacker = SigningKey::ed25519("evil");
    let evil_jwks = JwksServer::start(&[&attacker]).await;
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("evil".into());
    header.jku = Some(evil_jwks.url.clone());
    header.x5u = Some(evil_jwks.url.clone());
    let token = jsonwebtoken::encode(&header, &claims(&[READ]), &attacker.encoding).unwrap();
    refused(status(&fed, &token).await, "FEDERATION_UNAUTHENTICATED");
    let inline =
        forge(json!({"alg": "EdDSA", "kid": "evil", "jwk": attacker.jwk}), &claims(&[READ]), b"not a signature");
    refused(status(&fed, &inline).await, "FEDERATION_UNAUTHENTICATED");
    // The real key with a hostile jku still verifies: the header is never followed.
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("ed-1".into());
    header.jku = Some(evil_jwks.url.clone());
    let fine = jsonwebtoken::encode(&header, &claims(&[READ]), &fed.key.encoding).unwrap();
    assert!(status(&fed, &fine).await.is_ok());
    assert_eq!(evil_jwks.hits(), 0, "the attacker's JWKS was never fetched");
});

// rule: FED-01
backend_test!(an_unknown_kid_refetches_once_then_waits_out_the_cooldown, fed_builder, |fed| {
    ready(&fed).await;
    assert!(status(&fed, &fed.token(&[READ])).await.is_ok());
    assert_eq!(fed.jwks.hits(), 1, "the first call loads the keys");
    assert!(status(&fed, &fed.token(&[READ])).await.is_ok());
    assert_eq!(fed.jwks.hits(), 1, "the keys are cached");
    let unknown = SigningKey::ed25519("ed-9");
    let token = unknown.sign(&claims(&[READ]));
    fed.rest(Some(&token), "connectionStatus", json!({})).await.err(401, "FEDERATION_UNAUTHENTICATED");
    assert_eq!(fed.jwks.hits(), 2, "one refetch for the unknown kid");
    for _ in 0..5 {
        refused(status(&fed, &token).await, "FEDERATION_UNAUTHENTICATED");
    }
    let other = SigningKey::ed25519("ed-10").sign(&claims(&[READ]));
    refused(status(&fed, &other).await, "FEDERATION_UNAUTHENTICATED");
    assert_eq!(fed.jwks.hits(), 2, "no refetch during the cooldown");
    // The issuer rotates: once the cooldown passes, the new key is fetched and verifies.
    fed.jwks.serve(&[&fed.key, &unknown]);
    fed.app.clock.advance(30_000);
    refused(status(&fed, &token).await, "FEDERATION_UNAUTHENTICATED");
    assert_eq!(fed.jwks.hits(), 2);
    fed.app.clock.advance(31_000);
    let fresh = unknown.sign(&with(claims(&[READ]), json!({"exp": T0 / 1000 + 900})));
    assert!(status(&fed, &fresh).await.is_ok());
    assert_eq!(fed.jwks.hits(), 3);
    // A key the issuer dropped stops verifying once the set is fetched again.
    fed.jwks.serve(&[&unknown]);
    fed.app.clock.advance(61_000);
    let dropped = fed.key.sign(&with(claims(&[READ]), json!({"exp": T0 / 1000 + 1_000})));
    assert!(status(&fed, &dropped).await.is_ok(), "still cached: no reason to fetch");
    let newer = SigningKey::ed25519("ed-11");
    fed.jwks.serve(&[&unknown, &newer]);
    assert!(status(&fed, &newer.sign(&with(claims(&[READ]), json!({"exp": T0 / 1000 + 1_000})))).await.is_ok());
    let dropped = fed.key.sign(&with(claims(&[READ]), json!({"exp": T0 / 1000 + 1_001})));
    refused(status(&fed, &dropped).await, "FEDERATION_UNAUTHENTICATED");
});

// rule: FED-01
backend_test!(a_failed_refetch_keeps_the_cached_keys, fed_builder, |fed| {
    ready(&fed).await;
    assert!(status(&fed, &fed.token(&[READ])).await.is_ok());
    fed.jwks.fail(true);
    let unknown = SigningKey::ed25519("ed-2").sign(&claims(&[READ]));
    refused(status(&fed, &unknown).await, "FEDERATION_UNAUTHENTICATED");
    assert_eq!(fed.jwks.hits(), 2);
    // The known key keeps verifying new tokens while the issuer is down.
    let another = fed.key.sign(&with(claims(&[READ]), json!({"sub": "user_2"})));
    assert!(status(&fed, &another).await.is_ok());
    // Keys older than an hour are fetched again in passing; a failure keeps them.
    fed.app.clock.advance(3_700_000);
    let late = fed.key.sign(&with(claims(&[READ]), json!({"exp": T0 / 1000 + 4_000})));
    assert!(status(&fed, &late).await.is_ok());
    assert_eq!(fed.jwks.hits(), 3);
});

// rule: FED-01
backend_test!(expiry_not_before_and_their_types, fed_builder, |fed| {
    ready(&fed).await;
    let now = T0 / 1000;
    let sign = |extra: Value| fed.key.sign(&with(claims(&[READ]), extra));
    for extra in [
        json!({"exp": now - 120}),
        json!({"exp": now - 31}),
        json!({"exp": null}),
        json!({"exp": (now + 600).to_string()}),
        json!({"exp": true}),
        json!({"exp": [now + 600]}),
        json!({"nbf": now + 300}),
        json!({"nbf": (now - 10).to_string()}),
        json!({"iat": "yesterday"}),
    ] {
        refused(status(&fed, &sign(extra.clone())).await, "FEDERATION_UNAUTHENTICATED");
    }
    // Within the leeway (≤ 60 s) both ways.
    assert!(status(&fed, &sign(json!({"exp": now - 20}))).await.is_ok());
    assert!(status(&fed, &sign(json!({"nbf": now + 20}))).await.is_ok());
    // A verified token is cached, but never past its exp.
    let short = sign(json!({"exp": now + 60}));
    assert!(status(&fed, &short).await.is_ok());
    fed.app.clock.advance(60_000 + 29_000);
    assert!(status(&fed, &short).await.is_ok());
    fed.app.clock.advance(2_000);
    refused(status(&fed, &short).await, "FEDERATION_UNAUTHENTICATED");
});

// rule: FED-01
// rule: FED-02
backend_test!(issuer_and_audience_are_exact, fed_builder, |fed| {
    ready(&fed).await;
    let sign = |extra: Value| fed.key.sign(&with(claims(&[READ]), extra));
    refused(status(&fed, &sign(json!({"iss": null}))).await, "FEDERATION_UNAUTHENTICATED");
    refused(status(&fed, &sign(json!({"iss": 7}))).await, "FEDERATION_UNAUTHENTICATED");
    for iss in [
        format!("{ISSUER}/"),
        ISSUER.to_uppercase(),
        "https://rastro.test/Federation".to_string(),
        "https://evil.test/federation".to_string(),
        format!(" {ISSUER}"),
    ] {
        refused(status(&fed, &sign(json!({"iss": iss}))).await, "FEDERATION_ISSUER_MISMATCH");
    }
    for aud in [
        json!(null),
        json!(format!("{AUDIENCE}/")),
        json!(AUDIENCE.to_uppercase()),
        json!("https://other.convex.cloud"),
        json!([]),
        json!(["https://other.convex.cloud"]),
        json!(42),
    ] {
        refused(status(&fed, &sign(json!({"aud": aud}))).await, "FEDERATION_UNAUTHENTICATED");
    }
    assert!(status(&fed, &sign(json!({"aud": ["https://other.convex.cloud", AUDIENCE]}))).await.is_ok());
});

// rule: FED-02
backend_test!(rastro_claims_are_required_and_bounded, fed_builder, |fed| {
    ready(&fed).await;
    let sign = |extra: Value| fed.key.sign(&with(claims(&[READ]), extra));
    let eleven: Vec<String> = (0..11).map(|i| format!("s{i}")).collect();
    for extra in [
        json!({"rastro_connection_id": null}),
        json!({"rastro_organization_id": null}),
        json!({"rastro_permissions": null}),
        json!({"rastro_connection_id": 12}),
        json!({"rastro_connection_id": ""}),
        json!({"rastro_connection_id": "c".repeat(129)}),
        json!({"rastro_organization_id": "org 1"}),
        json!({"rastro_permissions": []}),
        json!({"rastro_permissions": "analytics:read"}),
        json!({"rastro_permissions": [READ, 7]}),
        json!({"rastro_permissions": vec![READ; 17]}),
        json!({"rastro_permissions": [READ, "p".repeat(65)]}),
        json!({"rastro_permissions": [CONFIGURE]}),
        json!({"rastro_site_ids": eleven}),
        json!({"rastro_site_ids": ["s1", "s1"]}),
        json!({"rastro_site_ids": "s1"}),
    ] {
        refused(status(&fed, &sign(extra.clone())).await, "FEDERATION_INVALID_CLAIMS");
    }
    // The claims name the connection; the grant decides the rest.
    let other_org = sign(json!({"rastro_organization_id": "org_2"}));
    refused(status(&fed, &other_org).await, "FEDERATION_CONNECTION_DENIED");
    let other_conn = sign(json!({"rastro_connection_id": "conn_2"}));
    refused(status(&fed, &other_conn).await, "FEDERATION_CONNECTION_DENIED");
    assert_eq!((CONN, ORG), ("conn_1", "org_1"));
});

// rule: FED-05
// rule: FED-08
// rule: FED-09
backend_test!(scope_and_permission_outcomes_of_a_valid_token, fed_builder, |fed| {
    ready(&fed).await;
    let reader = fed.token(&[READ]);
    let t = Some(reader.as_str());
    let eleven: Vec<String> = (0..11).map(|i| format!("s{i}")).collect();
    let range = |ids: Value| json!({"siteIds": ids, "from": T0 - DAY, "to": T0});
    refused(fed.both(t, "leadsReport", range(json!(eleven))).await, "FEDERATION_INVALID_SCOPE");
    // analytics:read calling a configure function.
    refused(fed.both(t, "updateSite", json!({"siteId": "s1", "name": "x"})).await, "FEDERATION_CONFIGURE_FORBIDDEN");
    refused(
        fed.both(t, "setMetaEventMap", json!({"siteId": "s1", "columns": {}})).await,
        "FEDERATION_CONFIGURE_FORBIDDEN",
    );
    // A public token calling a lead or a Meta function (the grant lists analytics:public).
    fed.grant(&["s1", "s2"], &["analytics:public"]).await;
    let public = fed.key.sign(&with(claims(&["analytics:public"]), json!({"rastro_site_ids": ["s1"]})));
    let p = Some(public.as_str());
    refused(fed.both(p, "leadsReport", range(json!(["s1"]))).await, "FEDERATION_PUBLIC_FORBIDDEN");
    refused(fed.both(p, "metaConnection", json!({})).await, "FEDERATION_PUBLIC_FORBIDDEN");
    refused(fed.both(p, "connectMeta", json!({"accessToken": "any-token"})).await, "FEDERATION_PUBLIC_FORBIDDEN");
    assert!(fed.both(p, "listSites", json!({})).await.is_ok());
});

// rule: FED-01
#[actix_web::test]
async fn keys_from_a_jwks_file_and_no_audience_means_no_federated_calls() {
    let key = SigningKey::ed25519("file-1");
    let dir = std::env::temp_dir().join(format!("rastrod-jwks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jwks.json");
    std::fs::write(&path, crate::federation::jwks(&[&key]).to_string()).unwrap();
    let app = TestApp::builder(Backend::Sqlite)
        .env("RASTRO_FEDERATION_ISSUER", ISSUER)
        .env("RASTRO_FEDERATION_AUDIENCE", &format!("{AUDIENCE}/"))
        .env("RASTRO_FEDERATION_JWKS", path.to_str().unwrap())
        .start()
        .await
        .unwrap();
    app.site("s1").await;
    app.put("/v1/federation/grants/conn_1", json!({"organizationId": ORG, "ownerId": "o1", "siteIds": ["s1"]}))
        .await
        .ok();
    let token = key.sign(&claims(&[READ]));
    let call = |token: String| {
        let req = app.http.post(format!("{}/federation/listSites", app.base)).bearer_auth(token);
        answer(req)
    };
    // The configured audience's trailing slash is dropped, as the runbook's auth config does.
    assert_eq!(call(token.clone()).await.body[0]["siteId"], "s1");

    let bare = TestApp::builder(Backend::Sqlite)
        .env("RASTRO_FEDERATION_ISSUER", ISSUER)
        .env("RASTRO_FEDERATION_JWKS", path.to_str().unwrap())
        .start()
        .await
        .unwrap();
    let req = bare.http.post(format!("{}/federation/listSites", bare.base)).bearer_auth(&token);
    let a = answer(req).await;
    assert_eq!((a.status, a.code()), (401, "FEDERATION_UNAUTHENTICATED"), "{}", a.text);
    assert!(a.text.contains("RASTRO_FEDERATION_AUDIENCE"));
    let req = bare.http.post(format!("{}/federation/manifest", bare.base));
    assert_eq!(answer(req).await.status, 200, "the manifest needs no audience");
    app.finish().await;
    bare.finish().await;
    let _ = std::fs::remove_dir_all(dir);
}
