//! The federated API: local grants on the host API, the manifest, every
//! function on both transports (REST and Convex's wire format), the site
//! scope, the configure scope, public links and the Meta functions acting as
//! `rastro:connection:<connectionId>` against the fake Graph API. The JWT
//! attacks are in `jwt`, the real Convex client in `convex` (both beside
//! this file). Tokens are signed with keys the tests generate and
//! the JWKS is served by a local actix server.

mod convex;
mod jwt;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use actix_web::{App, HttpResponse, HttpServer, web};
use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rastrod::meta::fake::sample::{CAFE_BROOKLYN, CASA_LISBOA, LOJA_X, PET_MANIA};
use rastrod::service::api::Function;
use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

pub const ISSUER: &str = "https://rastro.test/federation";
pub const AUDIENCE: &str = "https://product.test";
pub const CONN: &str = "conn_1";
pub const ORG: &str = "org_1";
pub const OWNER: &str = "rastro:connection:conn_1";
pub const READ: &str = "analytics:read";
pub const CONFIGURE: &str = "analytics:configure";
pub const PUBLIC: &str = "analytics:public";

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A signing key the test made, with its public JWK.
pub struct SigningKey {
    pub kid: String,
    pub alg: Algorithm,
    pub encoding: EncodingKey,
    pub jwk: Value,
}

impl SigningKey {
    pub fn ed25519(kid: &str) -> SigningKey {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let x = b64url(pair.public_key().as_ref());
        SigningKey {
            kid: kid.into(),
            alg: Algorithm::EdDSA,
            encoding: EncodingKey::from_ed_der(pkcs8.as_ref()),
            jwk: json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": "EdDSA"}),
        }
    }

    pub fn p256(kid: &str) -> SigningKey {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        let point = pair.public_key().as_ref();
        let (x, y) = (b64url(&point[1..33]), b64url(&point[33..65]));
        SigningKey {
            kid: kid.into(),
            alg: Algorithm::ES256,
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk: json!({"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": kid}),
        }
    }

    /// RS256 (no `alg` in the JWK: RSA implies RS256).
    pub fn rsa(kid: &str) -> SigningKey {
        let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let pkcs8 = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&pair).unwrap();
        let encoding = EncodingKey::from_rsa_der(pkcs1_of(pkcs8.as_ref()));
        let mut jwk =
            serde_json::to_value(jsonwebtoken::jwk::Jwk::from_encoding_key(&encoding, Algorithm::RS256).unwrap())
                .unwrap();
        let o = jwk.as_object_mut().unwrap();
        o.retain(|k, _| k == "kty" || k == "n" || k == "e");
        o.insert("kid".into(), json!(kid));
        SigningKey { kid: kid.into(), alg: Algorithm::RS256, encoding, jwk }
    }

    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

/// The RSAPrivateKey inside a PKCS#8 PrivateKeyInfo (the signer wants PKCS#1).
fn pkcs1_of(pkcs8: &[u8]) -> &[u8] {
    fn tlv(d: &[u8]) -> (u8, &[u8], &[u8]) {
        let (tag, first) = (d[0], d[1] as usize);
        let (len, head) = if first < 0x80 {
            (first, 2)
        } else {
            let n = first & 0x7f;
            (d[2..2 + n].iter().fold(0usize, |a, b| (a << 8) | *b as usize), 2 + n)
        };
        (tag, &d[head..head + len], &d[head + len..])
    }
    let (_, info, _) = tlv(pkcs8);
    let (_, _, rest) = tlv(info); // version
    let (_, _, rest) = tlv(rest); // algorithm identifier
    let (tag, key, _) = tlv(rest);
    assert_eq!(tag, 0x04, "PKCS#8 private key octet string");
    key
}

/// A JWKS served over HTTP on loopback, counting its fetches; it can be told to fail.
pub struct JwksServer {
    pub url: String,
    doc: Arc<std::sync::Mutex<Value>>,
    hits: Arc<AtomicU64>,
    failing: Arc<AtomicBool>,
    handle: actix_web::dev::ServerHandle,
}

impl JwksServer {
    pub async fn start(keys: &[&SigningKey]) -> JwksServer {
        let doc = Arc::new(std::sync::Mutex::new(jwks(keys)));
        let hits = Arc::new(AtomicU64::new(0));
        let failing = Arc::new(AtomicBool::new(false));
        let (d, h, f) = (doc.clone(), hits.clone(), failing.clone());
        let server = HttpServer::new(move || {
            let (d, h, f) = (d.clone(), h.clone(), f.clone());
            App::new().route(
                "/jwks.json",
                web::get().to(move || {
                    let (d, h, f) = (d.clone(), h.clone(), f.clone());
                    async move {
                        h.fetch_add(1, Ordering::SeqCst);
                        if f.load(Ordering::SeqCst) {
                            return HttpResponse::InternalServerError().body("down");
                        }
                        let body = d.lock().unwrap().clone();
                        HttpResponse::Ok().json(body)
                    }
                }),
            )
        })
        .workers(1)
        .disable_signals()
        .bind("127.0.0.1:0")
        .unwrap();
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        JwksServer { url: format!("http://{addr}/jwks.json"), doc, hits, failing, handle }
    }

    pub fn serve(&self, keys: &[&SigningKey]) {
        *self.doc.lock().unwrap() = jwks(keys);
    }

    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::SeqCst)
    }

    pub fn fail(&self, on: bool) {
        self.failing.store(on, Ordering::SeqCst);
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}

pub fn jwks(keys: &[&SigningKey]) -> Value {
    json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()})
}

/// Claims of a dashboard token for `CONN` in `ORG`, valid ten minutes from T0.
pub fn claims(perms: &[&str]) -> Value {
    json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": "user_1", "iat": T0 / 1000, "exp": T0 / 1000 + 600,
        "rastro_connection_id": CONN, "rastro_organization_id": ORG, "rastro_permissions": perms,
    })
}

/// `base` with `extra` merged over it; a null in `extra` removes the claim.
pub fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            base.as_object_mut().unwrap().remove(k);
        } else {
            base[k] = v.clone();
        }
    }
    base
}

/// A TestApp with federation on, its JWKS server and the key that signs.
pub struct Fed {
    pub app: TestApp,
    pub jwks: JwksServer,
    pub key: SigningKey,
}

/// Builds a [`Fed`]: the daemon with the federated API on (its JWKS server's
/// keys), the fake Graph and a fresh secrets key, plus settings of the test's choosing.
pub struct FedBuilder {
    app: TestAppBuilder,
}

/// The default federation app (`backend_test!(name, fed_builder, |fed| ...)`).
pub fn fed_builder(backend: Backend) -> FedBuilder {
    FedBuilder { app: fake_meta_builder(backend) }
}

impl FedBuilder {
    pub fn env(self, key: &str, value: &str) -> Self {
        FedBuilder { app: self.app.env(key, value) }
    }

    /// Starts the JWKS server with one Ed25519 key, then the daemon pointed at it.
    pub async fn start(self) -> Option<Fed> {
        let key = SigningKey::ed25519("ed-1");
        let jwks = JwksServer::start(&[&key]).await;
        let app = self
            .app
            .env("RASTRO_FEDERATION_ISSUER", ISSUER)
            .env("RASTRO_FEDERATION_AUDIENCE", AUDIENCE)
            .env("RASTRO_FEDERATION_JWKS", &jwks.url)
            .start()
            .await?;
        Some(Fed { app, jwks, key })
    }
}

impl Fed {
    /// The daemon's end-of-test checks ([`TestApp::finish`]); the JWKS server stops on drop.
    pub async fn finish(self) {
        self.app.finish().await;
    }
}

/// The Meta part of the federated API off.
fn meta_ads_off_builder(backend: Backend) -> FedBuilder {
    fed_builder(backend).env("RASTRO_FEDERATION_META_ADS", "false")
}

/// The Meta and the leads parts of the federated API off.
fn leads_off_builder(backend: Backend) -> FedBuilder {
    meta_ads_off_builder(backend).env("RASTRO_FEDERATION_LEADS", "false")
}

impl Fed {
    pub fn token(&self, perms: &[&str]) -> String {
        self.key.sign(&claims(perms))
    }

    /// `POST /federation/{name}`.
    pub async fn rest(&self, token: Option<&str>, name: &str, args: Value) -> Answer {
        self.post_json(token, &format!("/federation/{name}"), &args).await
    }

    /// A JSON POST to `path`, with the token as a bearer when given.
    async fn post_json(&self, token: Option<&str>, path: &str, body: &Value) -> Answer {
        let mut req = self
            .app
            .http
            .post(format!("{}{path}", self.app.base))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        answer(req).await
    }

    /// `POST /api/{kind}` in Convex's wire format.
    pub async fn convex_as(&self, token: Option<&str>, kind: &str, name: &str, args: Value) -> Answer {
        let body = json!({"path": format!("rastroFederation:{name}"), "format": "convex_encoded_json", "args": [args]});
        self.post_json(token, &format!("/api/{kind}"), &body).await
    }

    /// The Convex call of the function's own kind.
    pub async fn convex(&self, token: Option<&str>, name: &str, args: Value) -> Answer {
        let kind = Function::parse(name).map_or("query", |f| f.spec().kind.as_str());
        self.convex_as(token, kind, name, args).await
    }

    /// Calls `name` on both transports and checks they agree (FED-16):
    /// `Ok(value)` or `Err((status, code))` of the REST answer.
    pub async fn both(&self, token: Option<&str>, name: &str, args: Value) -> Result<Value, (u16, String)> {
        let rest = self.rest(token, name, args.clone()).await;
        let convex = self.convex(token, name, args).await;
        agree(name, &rest, &convex)
    }

    /// Expects `code` (with `status` on REST, 560 on Convex) on both transports.
    #[track_caller]
    pub fn expect_err(outcome: Result<Value, (u16, String)>, status: u16, code: &str) {
        match outcome {
            Err((s, c)) => assert_eq!((s, c.as_str()), (status, code)),
            Ok(v) => panic!("expected {code}, got {v}"),
        }
    }

    /// Provisions the grant of `CONN` over the host API.
    pub async fn grant(&self, sites: &[&str], perms: &[&str]) -> Value {
        self.grant_for(CONN, ORG, "o1", sites, perms).await.ok()
    }

    pub async fn grant_for(&self, conn: &str, org: &str, owner: &str, sites: &[&str], perms: &[&str]) -> Answer {
        self.app
            .put(
                &format!("/v1/federation/grants/{conn}"),
                json!({"organizationId": org, "ownerId": owner, "siteIds": sites, "permissions": perms}),
            )
            .await
    }

    pub async fn revoke(&self, conn: &str) -> Answer {
        self.app.post(&format!("/v1/federation/grants/{conn}/revoke"), json!({})).await
    }
}

pub async fn answer(req: reqwest::RequestBuilder) -> Answer {
    let res = req.send().await.expect("request");
    let status = res.status().as_u16();
    let text = res.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer { status, body, text }
}

/// The two transports' answers to one call say the same thing.
#[track_caller]
pub fn agree(name: &str, rest: &Answer, convex: &Answer) -> Result<Value, (u16, String)> {
    if (200..300).contains(&rest.status) {
        assert_eq!(convex.status, 200, "{name}: REST succeeded, Convex answered {}", convex.text);
        assert_eq!(convex.body["status"], "success", "{name}: {}", convex.text);
        assert_eq!(convex.body["logLines"], json!([]), "{name}");
        assert_eq!(convex.body["value"], rest.body, "{name}: the transports disagree");
        Ok(rest.body.clone())
    } else {
        assert_eq!(convex.status, 560, "{name}: REST failed ({}), Convex answered {}", rest.text, convex.text);
        assert_eq!(convex.body["status"], "error", "{name}");
        assert_eq!(convex.body["errorData"]["code"], rest.body["code"], "{name}: the transports disagree");
        assert_eq!(convex.body["errorMessage"], rest.body["message"], "{name}");
        Err((rest.status, rest.code().to_string()))
    }
}

/// Four sites: s1, s2 and s3 of owner o1, s4 of owner o2.
pub async fn sites(fed: &Fed) {
    for (id, owner) in [("s1", "o1"), ("s2", "o1"), ("s3", "o1"), ("s4", "o2")] {
        fed.app.site_with(id, "BRL", owner).await;
    }
}

// rule: FED-04
backend_test!(grants_are_provisioned_checked_and_revoked, fed_builder, |fed| {
    sites(&fed).await;
    let put = |sites: Value, perms: Value| {
        let app = &fed.app;
        async move {
            app.put(
                "/v1/federation/grants/conn_1",
                json!({"organizationId": ORG, "ownerId": "o1", "siteIds": sites, "permissions": perms}),
            )
            .await
        }
    };
    put(json!([]), json!(null)).await.err(400, "INVALID_ARGUMENT");
    put(json!(["s1", "s1"]), json!(null)).await.err(400, "INVALID_ARGUMENT");
    let eleven: Vec<String> = (0..11).map(|i| format!("x{i}")).collect();
    put(json!(eleven), json!(null)).await.err(400, "INVALID_ARGUMENT");
    put(json!(["bad site"]), json!(null)).await.err(400, "INVALID_ARGUMENT");
    put(json!(["nope"]), json!(null)).await.err(404, "NOT_FOUND");
    put(json!(["s1", "s4"]), json!(null)).await.err(403, "FEDERATION_SITE_DENIED");
    put(json!(["s1"]), json!(["analytics:admin"])).await.err(400, "INVALID_ARGUMENT");
    put(json!(["s1"]), json!([CONFIGURE, CONFIGURE])).await.err(400, "INVALID_ARGUMENT");
    let extra = fed
        .app
        .put("/v1/federation/grants/conn_1", json!({"organizationId": ORG, "ownerId": "o1", "siteIds": ["s1"], "x": 1}))
        .await;
    extra.err(400, "INVALID_ARGUMENT");
    fed.app.put("/v1/federation/grants/bad%20id", json!({})).await.err(400, "INVALID_ARGUMENT");
    fed.app.with_key(None).put("/v1/federation/grants/conn_1", json!({})).await.err(401, "UNAUTHENTICATED");
    assert_eq!(fed.app.count("federation_grants").await, 0, "nothing written by a refused call");

    let created = put(json!(["s1", "s2"]), json!(null)).await;
    assert_eq!(created.status, 201);
    assert_eq!(
        created.body,
        json!({"connectionId": CONN, "organizationId": ORG, "ownerId": "o1", "siteIds": ["s1", "s2"],
            "permissions": [], "revokedAt": null, "createdAt": T0, "updatedAt": T0})
    );
    fed.app.clock.advance(1_000);
    let updated = put(json!(["s2", "s3"]), json!([PUBLIC, CONFIGURE])).await;
    assert_eq!(updated.status, 200);
    assert_eq!(updated.body["siteIds"], json!(["s2", "s3"]));
    assert_eq!(updated.body["permissions"], json!([CONFIGURE, PUBLIC]));
    assert_eq!((updated.body["createdAt"].as_i64(), updated.body["updatedAt"].as_i64()), (Some(T0), Some(T0 + 1_000)));

    let revoked = fed.revoke(CONN).await.ok();
    assert_eq!(revoked["grant"]["revokedAt"], json!(T0 + 1_000));
    assert_eq!(revoked["metaRemoved"], json!(false));
    assert_eq!(fed.app.get("/v1/federation/grants/conn_1").await.ok()["revokedAt"], json!(T0 + 1_000));
    fed.revoke("conn_9").await.err(404, "NOT_FOUND");
    // Provisioning again clears revokedAt.
    fed.app.clock.advance(1_000);
    let again = put(json!(["s1"]), json!(null)).await.ok();
    assert_eq!(again["revokedAt"], Value::Null);
    assert_eq!(again["permissions"], json!([]));
});

// rule: FED-03
backend_test!(the_local_grant_is_the_authority, fed_builder, |fed| {
    sites(&fed).await;
    let token = fed.token(&[READ]);
    Fed::expect_err(fed.both(Some(&token), "connectionStatus", json!({})).await, 403, "FEDERATION_CONNECTION_DENIED");
    // The grant of another organization: the token's organization does not match.
    fed.grant_for(CONN, "org_2", "o1", &["s1"], &[]).await.ok();
    Fed::expect_err(fed.both(Some(&token), "listSites", json!({})).await, 403, "FEDERATION_CONNECTION_DENIED");
    fed.grant(&["s1", "s2"], &[]).await;
    let status = fed.both(Some(&token), "connectionStatus", json!({})).await.unwrap();
    assert_eq!(
        status,
        json!({"status": "active", "protocol": "rastro-federation/1", "capabilities": ["configure", "leads", "metaAds", "siteMap", "visitorProfiles", "people", "trackedLinks"],
            "siteCount": 2, "permissions": [READ]})
    );
    // Revoked mid-session: the same (cached) token is denied at once.
    fed.revoke(CONN).await.ok();
    Fed::expect_err(fed.both(Some(&token), "listSites", json!({})).await, 403, "FEDERATION_CONNECTION_DENIED");
    fed.grant(&["s1"], &[]).await;
    assert!(fed.both(Some(&token), "listSites", json!({})).await.is_ok());
    // A malformed grant (written by hand) denies too.
    fed.app
        .state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            diesel::sql_query("UPDATE federation_grants SET site_ids = 'not json'").execute(c)?;
            Ok(())
        })
        .await
        .unwrap();
    Fed::expect_err(fed.both(Some(&token), "listSites", json!({})).await, 403, "FEDERATION_CONNECTION_DENIED");
});

// rule: FED-06
backend_test!(the_manifest_needs_no_token_and_names_what_is_on, fed_builder, |fed| {
    let manifest = fed.both(None, "manifest", json!({})).await.unwrap();
    assert_eq!(manifest["protocol"], "rastro-federation/1");
    assert_eq!(
        manifest["capabilities"],
        json!(["configure", "leads", "metaAds", "siteMap", "visitorProfiles", "people", "trackedLinks"])
    );
    // Every function but those of metaLeads, off by default (LEADADS.md §2).
    let names: Vec<&str> = Function::ALL
        .iter()
        .filter(|f| f.spec().capability != rastrod::service::api::Capability::MetaLeads)
        .map(|f| f.name())
        .collect();
    assert_eq!(manifest["functions"], json!(names));
    for name in ["leadsReport", "leadsDaily", "metaConnection", "setMetaEventMap", "updateSite"] {
        assert!(names.contains(&name), "{name}");
    }
    assert_eq!(manifest["limits"]["maxSites"], 10);
    assert_eq!(manifest["limits"]["maxDailyDays"], 92);
    assert_eq!(fed.app.get("/federation/manifest").await.ok(), manifest);
    // A garbage token does not matter to the manifest; unknown arguments do.
    assert!(fed.both(Some("garbage"), "manifest", json!({})).await.is_ok());
    Fed::expect_err(fed.both(None, "manifest", json!({"x": 1})).await, 400, "INVALID_ARGUMENT");
});

// rule: FED-06
backend_test!(meta_ads_off_hides_and_refuses_the_meta_functions, meta_ads_off_builder, |fed| {
    sites(&fed).await;
    fed.grant(&["s1"], &[CONFIGURE]).await;
    let manifest = fed.both(None, "manifest", json!({})).await.unwrap();
    assert_eq!(
        manifest["capabilities"],
        json!(["configure", "leads", "siteMap", "visitorProfiles", "people", "trackedLinks"])
    );
    let listed: Vec<String> = serde_json::from_value(manifest["functions"].clone()).unwrap();
    assert!(listed.contains(&"leadsDaily".to_string()));
    assert!(!listed.iter().any(|n| n.to_lowercase().contains("meta")), "{listed:?}");
    let token = fed.token(&[READ, CONFIGURE]);
    for (name, args) in [
        ("metaStatus", json!({"siteIds": ["s1"]})),
        ("metaConversions", json!({"siteId": "s1"})),
        ("metaConnection", json!({})),
        ("metaEventMap", json!({"siteId": "s1"})),
        ("metaUnlinkPreview", json!({"siteId": "s1", "adAccountId": LOJA_X})),
        ("syncMetaNow", json!({"siteId": "s1"})),
        ("linkMetaAdAccount", json!({"siteId": "s1", "adAccountId": LOJA_X})),
        ("connectMeta", json!({"accessToken": "any-token"})),
    ] {
        Fed::expect_err(fed.both(Some(&token), name, args).await, 400, "FEDERATION_INVALID_SCOPE");
    }
    let status = fed.both(Some(&token), "connectionStatus", json!({})).await.unwrap();
    assert_eq!(
        status["capabilities"],
        json!(["configure", "leads", "siteMap", "visitorProfiles", "people", "trackedLinks"])
    );
});

// rule: FED-06
backend_test!(leads_off_hides_and_refuses_the_lead_functions, leads_off_builder, |fed| {
    sites(&fed).await;
    fed.grant(&["s1"], &[]).await;
    let manifest = fed.both(None, "manifest", json!({})).await.unwrap();
    assert_eq!(manifest["capabilities"], json!(["configure", "siteMap", "visitorProfiles", "people", "trackedLinks"]));
    assert_eq!(
        manifest["functions"],
        json!([
            "manifest",
            "connectionStatus",
            "listSites",
            "siteSettings",
            "updateSite",
            "overview",
            "liveVisitors",
            "getSession",
            "listSessions",
            "sessionJourney",
            "visitorJourney",
            "dataCoverage",
            "listConversions",
            "revenueSummary",
            "goalsReport",
            "funnelsReport",
            "previewFunnel",
            "affiliatesReport",
            "listGoals",
            "upsertGoal",
            "removeGoal",
            "listFunnels",
            "upsertFunnel",
            "removeFunnel",
            "listAffiliates",
            "upsertAffiliate",
            "removeAffiliate",
            "retentionStatus",
            "setRetentionPolicy",
            "disableRetentionPolicy",
            "vitalsReport",
            "siteMap",
            "getVisitorProfile",
            "listPeople",
            "listTrackedLinks",
            "createTrackedLink",
            "updateTrackedLink",
            "deleteTrackedLink"
        ])
    );
    let token = fed.token(&[READ]);
    let args = json!({"siteIds": ["s1"], "from": T0 - DAY, "to": T0});
    Fed::expect_err(fed.both(Some(&token), "leadsReport", args).await, 400, "FEDERATION_INVALID_SCOPE");
    // metaAds on without leads does not start.
    let env: std::collections::BTreeMap<String, String> =
        [("RASTRO_FEDERATION_LEADS".to_string(), "false".to_string())].into();
    assert!(rastrod::config::Config::load_from(None, &env).is_err());
});

// rule: FED-07
backend_test!(connection_status_is_redacted_and_list_sites_shows_five_fields, fed_builder, |fed| {
    sites(&fed).await;
    fed.app.patch("/v1/sites/s2", json!({"domains": ["loja.example.com"]})).await.ok();
    fed.grant(&["s2", "s1"], &[CONFIGURE]).await;
    let token = fed.token(&[READ, CONFIGURE]);
    let status = fed.both(Some(&token), "connectionStatus", json!({})).await.unwrap();
    assert_eq!(status["permissions"], json!([READ, CONFIGURE]));
    let text = status.to_string();
    for secret in [CONN, ORG, "o1", OWNER] {
        assert!(!text.contains(secret), "connectionStatus leaks {secret}: {text}");
    }
    let listed = fed.both(Some(&token), "listSites", json!({})).await.unwrap();
    assert_eq!(
        listed,
        json!([
            {"siteId": "s2", "name": "Site s2", "currency": "BRL", "timezone": "America/Sao_Paulo", "cookieless": false},
            {"siteId": "s1", "name": "Site s1", "currency": "BRL", "timezone": "America/Sao_Paulo", "cookieless": false},
        ])
    );
});

// rule: FED-05
backend_test!(site_lists_are_bounded_and_inside_the_grant, fed_builder, |fed| {
    sites(&fed).await;
    fed.grant(&["s1", "s2"], &[]).await;
    let token = fed.token(&[READ]);
    let report = |ids: Value| json!({"siteIds": ids, "from": T0 - DAY, "to": T0});
    let t = Some(token.as_str());
    let eleven: Vec<String> = (0..11).map(|i| format!("s{i}")).collect();
    for ids in [json!([]), json!(["s1", "s1"]), json!(eleven), json!(["bad site"]), json!(["x".repeat(65)])] {
        Fed::expect_err(fed.both(t, "leadsReport", report(ids.clone())).await, 400, "FEDERATION_INVALID_SCOPE");
        let daily = json!({"siteIds": ids, "from": T0 - DAY, "to": T0});
        Fed::expect_err(fed.both(t, "leadsDaily", daily).await, 400, "FEDERATION_INVALID_SCOPE");
    }
    for ids in [json!(["s3"]), json!(["s1", "s4"]), json!(["nowhere"])] {
        Fed::expect_err(fed.both(t, "leadsReport", report(ids.clone())).await, 403, "FEDERATION_SITE_DENIED");
        let list = json!({"siteIds": ids, "from": T0 - DAY, "to": T0});
        Fed::expect_err(fed.both(t, "listLeads", list).await, 403, "FEDERATION_SITE_DENIED");
    }
    let journey = json!({"siteId": "s3", "leadId": "l1"});
    Fed::expect_err(fed.both(t, "leadJourney", journey).await, 403, "FEDERATION_SITE_DENIED");
    let journey = json!({"siteId": "", "leadId": "l1"});
    Fed::expect_err(fed.both(t, "leadJourney", journey).await, 400, "FEDERATION_INVALID_SCOPE");
    Fed::expect_err(fed.both(t, "metaEventMap", json!({"siteId": "s4"})).await, 403, "FEDERATION_SITE_DENIED");
    // Arguments the function does not take, or of the wrong type.
    let bad = json!({"siteIds": ["s1"], "from": "yesterday", "to": T0});
    Fed::expect_err(fed.both(t, "leadsReport", bad).await, 400, "INVALID_ARGUMENT");
    let bad = json!({"siteIds": ["s1"], "from": T0 - DAY, "to": T0, "ownerId": "o1"});
    Fed::expect_err(fed.both(t, "leadsReport", bad).await, 400, "INVALID_ARGUMENT");
    let bad = json!({"siteIds": ["s1"], "from": T0, "to": T0 - DAY});
    Fed::expect_err(fed.both(t, "leadsReport", bad).await, 400, "INVALID_ARGUMENT");
});

// rule: LEAD-03
backend_test!(lead_reads_match_the_host_api_and_never_carry_the_click_id, fed_builder, |fed| {
    sites(&fed).await;
    fed.grant(&["s1", "s2"], &[]).await;
    let click = "fbclid-SECRET-CLICK-42";
    let extra = json!({"clickId": click, "campaignId": "101", "campaignName": "Black Friday", "adsetId": "201",
        "adId": "301", "adName": "Vídeo oferta"});
    let lead = fed.app.lead("s1", "k1", T0 - 3_600_000, extra).await.ok();
    fed.app.lead("s2", "k2", T0 - 7_200_000, json!({"origin": "organic"})).await.ok();
    let body = json!({"stage": "won", "revenueCents": 45990, "eventId": "k1-won", "occurredAt": T0 - 1_000});
    fed.app.stage("s1", "k1", body).await.ok();
    let token = fed.token(&[READ]);
    let t = Some(token.as_str());
    let (from, to) = (T0 - 2 * DAY, T0);

    let report = fed.both(t, "leadsReport", json!({"siteIds": ["s1", "s2"], "from": from, "to": to})).await.unwrap();
    assert_eq!(report, fed.app.report(&["s1", "s2"], from, to).await);
    assert_eq!(report["totals"]["leads"], 2);
    assert_eq!(report["totals"]["revenueCents"], 45990);

    let listed = fed.both(t, "listLeads", json!({"siteIds": ["s1", "s2"], "from": from, "to": to})).await.unwrap();
    let host = fed.app.get(&format!("/v1/leads?siteIds=s1,s2&from={from}&to={to}")).await.ok();
    assert_eq!(listed, host);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let page = json!({"siteIds": ["s1", "s2"], "from": from, "to": to, "limit": 1});
    assert_eq!(fed.both(t, "listLeads", page).await.unwrap().as_array().unwrap().len(), 1);

    let lead_id = lead["leadId"].as_str().unwrap();
    let journey = fed.both(t, "leadJourney", json!({"siteId": "s1", "leadId": lead_id})).await.unwrap();
    assert_eq!(journey, fed.app.get(&format!("/v1/sites/s1/leads/{lead_id}/journey")).await.ok());
    assert_eq!(journey["ad"]["campaignName"], "Black Friday");
    Fed::expect_err(fed.both(t, "leadJourney", json!({"siteId": "s1", "leadId": "nope"})).await, 404, "NOT_FOUND");

    let daily_args = json!({"siteIds": ["s1"], "from": from, "to": to, "origin": "ctwa_ad"});
    let daily = fed.both(t, "leadsDaily", daily_args.clone()).await.unwrap();
    assert_eq!(daily, fed.app.post("/v1/reports/leads-daily", daily_args).await.ok());
    let too_long = json!({"siteIds": ["s1"], "from": T0 - 100 * DAY, "to": T0});
    Fed::expect_err(fed.both(t, "leadsDaily", too_long).await, 400, "INVALID_ARGUMENT");

    for v in [&report, &listed, &journey, &daily] {
        let text = v.to_string();
        assert!(!text.contains(click) && !text.contains("clickId"), "a federated read carries the click id: {text}");
    }
});

// rule: FED-08
// rule: FED-17
backend_test!(configure_needs_the_permission_on_token_and_grant, fed_builder, |fed| {
    sites(&fed).await;
    fed.app.patch("/v1/sites/s1", json!({"domains": ["loja.example.com"]})).await.ok();
    let reader = fed.token(&[READ]);
    let admin = fed.token(&[READ, CONFIGURE]);
    fed.grant(&["s1", "s2"], &[]).await;
    let site = json!({"siteId": "s1"});
    let update = json!({"siteId": "s1", "name": "Loja Nova"});
    for token in [&reader, &admin] {
        let t = Some(token.as_str());
        Fed::expect_err(fed.both(t, "siteSettings", site.clone()).await, 403, "FEDERATION_CONFIGURE_FORBIDDEN");
        Fed::expect_err(fed.both(t, "updateSite", update.clone()).await, 403, "FEDERATION_CONFIGURE_FORBIDDEN");
    }
    fed.grant(&["s1", "s2"], &[CONFIGURE]).await;
    let t = Some(reader.as_str());
    Fed::expect_err(fed.both(t, "siteSettings", site.clone()).await, 403, "FEDERATION_CONFIGURE_FORBIDDEN");
    let t = Some(admin.as_str());
    let settings = fed.both(t, "siteSettings", site.clone()).await.unwrap();
    assert_eq!(
        settings,
        json!({"name": "Site s1", "domains": ["loja.example.com"], "timezone": "America/Sao_Paulo",
            "currency": "BRL", "cookieless": false, "routePatterns": [], "regrouping": false})
    );
    Fed::expect_err(fed.both(t, "siteSettings", json!({"siteId": "s3"})).await, 403, "FEDERATION_SITE_DENIED");

    let change = json!({"siteId": "s1", "name": "Loja Nova", "domains": ["nova.example.com"],
        "timezone": "Europe/Lisbon", "routePatterns": ["/pedido/:codigo"]});
    let updated = fed.rest(t, "updateSite", change).await.ok();
    assert_eq!(updated["name"], "Loja Nova");
    assert_eq!(updated["routePatterns"], json!(["/pedido/:codigo"]));
    let convex = fed.convex(t, "updateSite", json!({"siteId": "s1", "name": "Loja Nova 2"})).await;
    assert_eq!(convex.body["value"]["name"], "Loja Nova 2", "{}", convex.text);
    assert_eq!(convex.body["value"]["domains"], json!(["nova.example.com"]));
    let host = fed.app.get("/v1/sites/s1").await.ok();
    assert_eq!((host["timezone"].as_str(), host["currency"].as_str()), (Some("Europe/Lisbon"), Some("BRL")));
    // Currency and cookieless stay outside; patterns are bounded.
    for bad in [
        json!({"siteId": "s1", "currency": "USD"}),
        json!({"siteId": "s1", "cookieless": true}),
        json!({"siteId": "s1", "routePatterns": vec!["/a"; 33]}),
        json!({"siteId": "s1", "routePatterns": ["/".repeat(257)]}),
        json!({"siteId": "s1", "timezone": "Mars/Olympus"}),
    ] {
        Fed::expect_err(fed.both(t, "updateSite", bad).await, 400, "INVALID_ARGUMENT");
    }
    Fed::expect_err(fed.both(t, "updateSite", json!({"siteId": "s4"})).await, 403, "FEDERATION_SITE_DENIED");
    // Configure functions of the Meta side need it too.
    let t = Some(reader.as_str());
    for (name, args) in [
        ("connectMeta", json!({"accessToken": "any-token"})),
        ("disconnectMeta", json!({})),
        ("setMetaEventMap", json!({"siteId": "s1", "columns": {}})),
        ("linkMetaAdAccount", json!({"siteId": "s1", "adAccountId": LOJA_X})),
        ("syncMetaNow", json!({"siteId": "s1"})),
    ] {
        Fed::expect_err(fed.both(t, name, args).await, 403, "FEDERATION_CONFIGURE_FORBIDDEN");
    }
});

// rule: FED-09
// rule: PUB-02
// rule: PUB-03
backend_test!(public_links_see_only_their_surface, fed_builder, |fed| {
    sites(&fed).await;
    let public = fed.key.sign(&with(claims(&[PUBLIC]), json!({"rastro_site_ids": ["s2"]})));
    let t = Some(public.as_str());
    // While the grant does not list analytics:public, every call is refused.
    fed.grant(&["s1", "s2"], &[]).await;
    for name in ["connectionStatus", "listSites"] {
        Fed::expect_err(fed.both(t, name, json!({})).await, 403, "FEDERATION_PUBLIC_FORBIDDEN");
    }
    fed.grant(&["s1", "s2"], &[PUBLIC]).await;
    let status = fed.both(t, "connectionStatus", json!({})).await.unwrap();
    assert_eq!((status["siteCount"].as_i64(), &status["permissions"]), (Some(1), &json!([PUBLIC])));
    let listed = fed.both(t, "listSites", json!({})).await.unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["siteId"], "s2");
    for (name, args) in [
        ("leadsReport", json!({"siteIds": ["s2"], "from": T0 - DAY, "to": T0})),
        ("listLeads", json!({"siteIds": ["s2"], "from": T0 - DAY, "to": T0})),
        ("leadJourney", json!({"siteId": "s2", "leadId": "x"})),
        ("leadsDaily", json!({"siteIds": ["s2"], "from": T0 - DAY, "to": T0})),
        ("metaStatus", json!({"siteIds": ["s2"]})),
        ("metaConversions", json!({"siteId": "s2"})),
        ("metaConnection", json!({})),
        ("metaEventMap", json!({"siteId": "s2"})),
        ("siteSettings", json!({"siteId": "s2"})),
        ("setMetaEventMap", json!({"siteId": "s2", "columns": {}})),
    ] {
        Fed::expect_err(fed.both(t, name, args).await, 403, "FEDERATION_PUBLIC_FORBIDDEN");
    }
    // A public link naming a site outside the grant.
    let outside = fed.key.sign(&with(claims(&[PUBLIC]), json!({"rastro_site_ids": ["s2", "s3"]})));
    Fed::expect_err(fed.both(Some(&outside), "listSites", json!({})).await, 403, "FEDERATION_SITE_DENIED");
    // A public token without its sites is malformed.
    let bare = fed.key.sign(&claims(&[PUBLIC]));
    Fed::expect_err(fed.both(Some(&bare), "listSites", json!({})).await, 401, "FEDERATION_INVALID_CLAIMS");
});

/// The host's own owner: links and a pixel made outside the dashboard.
const HOST_OWNER: &str = "agency:host";

async fn host_connect(fed: &Fed, owner: &str) {
    fed.app.put(&format!("/v1/meta/owners/{owner}/connection"), json!({"accessToken": "any-token"})).await.ok();
}

async fn host_link(fed: &Fed, site: &str, owner: &str, account: &str) {
    fed.app
        .post(&format!("/v1/sites/{site}/ad-accounts"), json!({"ownerKey": owner, "adAccountId": account}))
        .await
        .ok();
}

fn pixel_of(account: &str) -> &'static str {
    rastrod::meta::fake::sample_pixels().iter().find(|p| p.account == account).expect("a sample pixel").id
}

// rule: FED-10
// rule: FED-11
// rule: FED-13
// rule: FED-14
// rule: FED-16
backend_test!(every_function_on_both_transports_acting_as_the_connection, fed_builder, |fed| {
    sites(&fed).await;
    fed.grant(&["s1", "s2"], &[CONFIGURE]).await;
    let admin = fed.token(&[READ, CONFIGURE]);
    let t = Some(admin.as_str());
    fed.app
        .put(
            "/v1/sites/s1/pipeline",
            json!({"columns": [{"key": "novo", "name": "Novo"}, {"key": "agendado", "name": "Agendado"}]}),
        )
        .await
        .ok();
    fed.app.put("/v1/sites/s2/pipeline", json!({"columns": [{"key": "novo", "name": "Novo"}]})).await.ok();

    // Reads before any Meta connection.
    assert_eq!(fed.both(t, "metaConnection", json!({})).await.unwrap(), Value::Null);
    let map = fed.both(t, "metaEventMap", json!({"siteId": "s1", "now": T0})).await.unwrap();
    assert_eq!(map, fed.app.get(&format!("/v1/sites/s1/event-map?now={T0}")).await.ok());

    // connectMeta (action) by the login code on REST, by a pasted token on Convex.
    let code = json!({"code": "code-system", "redirectUri": "https://rastro.test/meta/retorno"});
    let listing = fed.rest(t, "connectMeta", code).await.ok();
    assert_eq!(listing["adAccounts"].as_array().unwrap().len(), 4, "{listing}");
    let pasted = fed.convex(t, "connectMeta", json!({"accessToken": "any-token"})).await;
    assert_eq!(pasted.body["value"], listing, "{}", pasted.text);
    // No argument names an owner: the connection is the owner.
    let named = json!({"siteId": "s1", "adAccountId": LOJA_X, "ownerKey": HOST_OWNER});
    Fed::expect_err(fed.both(t, "linkMetaAdAccount", named).await, 400, "INVALID_ARGUMENT");
    Fed::expect_err(fed.both(t, "connectMeta", json!({})).await, 400, "INVALID_ARGUMENT");
    let refreshed = fed.both(t, "refreshMetaAccounts", json!({})).await.unwrap();
    assert_eq!(refreshed, listing);

    // linkMetaAdAccount on REST, as the connection's owner.
    let link = fed.rest(t, "linkMetaAdAccount", json!({"siteId": "s1", "adAccountId": LOJA_X})).await.ok();
    assert_eq!((link["siteId"].as_str(), link["ownerKey"].as_str()), (Some("s1"), Some(OWNER)));
    let again = fed.convex(t, "linkMetaAdAccount", json!({"siteId": "s1", "adAccountId": LOJA_X})).await;
    assert_eq!(again.body["value"]["ownerKey"], OWNER, "{}", again.text);

    // The host links accounts of its own: one outside the grant, one inside.
    host_connect(&fed, HOST_OWNER).await;
    host_link(&fed, "s3", HOST_OWNER, PET_MANIA).await;
    host_link(&fed, "s2", HOST_OWNER, CAFE_BROOKLYN).await;
    let view = fed.both(t, "metaConnection", json!({})).await.unwrap();
    let account =
        |id: &str| view["adAccounts"].as_array().unwrap().iter().find(|a| a["adAccountId"] == id).unwrap().clone();
    assert_eq!(
        (account(LOJA_X)["linkedSiteId"].clone(), account(LOJA_X)["linkedOutsideScope"].clone()),
        (json!("s1"), json!(false))
    );
    assert_eq!(
        (account(PET_MANIA)["linkedSiteId"].clone(), account(PET_MANIA)["linkedOutsideScope"].clone()),
        (Value::Null, json!(true))
    );
    assert_eq!(account(CAFE_BROOKLYN)["linkedSiteId"], "s2");
    assert_eq!(account(CASA_LISBOA)["linkedOutsideScope"], json!(false));
    assert!(!view.to_string().contains("s3"), "the site outside the grant never shows");
    let refreshed = fed.both(t, "refreshMetaAccounts", json!({})).await.unwrap();
    assert!(!refreshed.to_string().contains("\"s3\""), "{refreshed}");

    // Never take or undo another owner's work (CONFLICT).
    let take = json!({"siteId": "s2", "adAccountId": CAFE_BROOKLYN});
    Fed::expect_err(fed.both(t, "linkMetaAdAccount", take.clone()).await, 409, "CONFLICT");
    Fed::expect_err(fed.both(t, "unlinkMetaAdAccount", take).await, 409, "CONFLICT");
    let elsewhere = json!({"siteId": "s1", "adAccountId": PET_MANIA});
    Fed::expect_err(fed.both(t, "linkMetaAdAccount", elsewhere).await, 409, "CONFLICT");
    fed.app.put("/v1/sites/s2/pixel", json!({"ownerKey": HOST_OWNER, "pixelId": pixel_of(LOJA_X)})).await.ok();
    let pixel = json!({"siteId": "s2", "pixelId": pixel_of(PET_MANIA)});
    Fed::expect_err(fed.both(t, "setMetaPixel", pixel).await, 409, "CONFLICT");
    Fed::expect_err(fed.both(t, "removeMetaPixel", json!({"siteId": "s2"})).await, 409, "CONFLICT");
    let map = json!({"siteId": "s2", "columns": {"novo": "Lead"}});
    Fed::expect_err(fed.both(t, "setMetaEventMap", map).await, 409, "CONFLICT");

    // setMetaPixel (action) from the listing: enabled unless told otherwise, owned by the connection.
    let set = fed.rest(t, "setMetaPixel", json!({"siteId": "s1", "pixelId": pixel_of(LOJA_X)})).await.ok();
    assert_eq!(
        (set["enabled"].clone(), set["source"].clone(), set["ownerKey"].clone()),
        (json!(true), json!("connection"), json!(OWNER))
    );
    let off = json!({"siteId": "s1", "pixelId": pixel_of(LOJA_X), "enabled": false, "sendLeadEvent": true});
    let off = fed.convex(t, "setMetaPixel", off).await;
    assert_eq!(off.body["value"]["enabled"], false, "{}", off.text);
    let unknown = json!({"siteId": "s1", "pixelId": "999999"});
    Fed::expect_err(fed.both(t, "setMetaPixel", unknown).await, 404, "NOT_FOUND");
    // With its own token, the pixel is checked against Meta and sealed.
    let own = json!({"siteId": "s1", "pixelId": pixel_of(LOJA_X), "accessToken": "pixel-token"});
    let own = fed.rest(t, "setMetaPixel", own).await.ok();
    assert_eq!((own["source"].as_str(), own["ownerKey"].as_str()), (Some("token"), Some(OWNER)));
    assert!(!own.to_string().contains("pixel-token"));

    // metaStatus marks what this connection made (`own`); the sync may be running, so the two
    // transports are compared on what it does not touch.
    let args = json!({"siteIds": ["s1", "s2"], "now": T0});
    let rest = fed.rest(t, "metaStatus", args.clone()).await.ok();
    let convex = fed.convex(t, "metaStatus", args).await;
    assert_eq!(convex.body["status"], "success", "{}", convex.text);
    for status in [&rest, &convex.body["value"]] {
        assert_eq!((status[0]["siteId"].as_str(), status[1]["siteId"].as_str()), (Some("s1"), Some("s2")));
        assert_eq!(status[0]["adAccounts"][0]["adAccountId"], LOJA_X);
        assert_eq!(status[0]["adAccounts"][0]["own"], true, "{status}");
        assert_eq!(status[0]["pixel"]["own"], true, "{status}");
        assert_eq!(status[1]["adAccounts"][0]["own"], false, "{status}");
        assert_eq!(status[1]["pixel"]["own"], false, "{status}");
        assert!(!status.to_string().contains("pixel-token"), "never a token");
    }
    Fed::expect_err(fed.both(t, "metaStatus", json!({"siteIds": ["s3"]})).await, 403, "FEDERATION_SITE_DENIED");
    Fed::expect_err(fed.both(t, "metaStatus", json!({"siteIds": []})).await, 400, "FEDERATION_INVALID_SCOPE");
    // metaUnlinkPreview and metaConversions read like the host's routes.
    let args = json!({"siteId": "s1", "adAccountId": LOJA_X});
    let rest = fed.rest(t, "metaUnlinkPreview", args.clone()).await.ok();
    let convex = fed.convex(t, "metaUnlinkPreview", args).await;
    for preview in [&rest, &convex.body["value"]] {
        for field in ["spendCents", "currency", "days", "campaigns", "partial"] {
            assert!(preview.get(field).is_some(), "{field}: {preview}");
        }
    }
    let outside = json!({"siteId": "s3", "adAccountId": PET_MANIA});
    Fed::expect_err(fed.both(t, "metaUnlinkPreview", outside).await, 403, "FEDERATION_SITE_DENIED");
    let conversions = fed.both(t, "metaConversions", json!({"siteId": "s1", "limit": 10})).await.unwrap();
    assert_eq!(conversions, fed.app.get("/v1/sites/s1/meta/conversions?limit=10").await.ok());
    Fed::expect_err(
        fed.both(t, "metaConversions", json!({"siteId": "s1", "limit": 51})).await,
        400,
        "INVALID_ARGUMENT",
    );
    Fed::expect_err(fed.both(t, "metaConversions", json!({"siteId": "s4"})).await, 403, "FEDERATION_SITE_DENIED");
    // syncMetaNow (mutation): the site's linked accounts are asked to sync.
    assert_eq!(fed.both(t, "syncMetaNow", json!({"siteId": "s1"})).await.unwrap(), json!({"accounts": 1}));
    Fed::expect_err(fed.both(t, "syncMetaNow", json!({"siteId": "s3"})).await, 403, "FEDERATION_SITE_DENIED");

    // setMetaEventMap (mutation) on the connection's own pixel, both transports.
    let map = json!({"siteId": "s1", "columns": {"agendado": "Schedule"}, "sendLeadEvent": false});
    let saved = fed.both(t, "setMetaEventMap", map).await.unwrap();
    assert_eq!(saved["columns"][1]["event"], "Schedule");
    let bad = json!({"siteId": "s1", "columns": {"agendado": "Purchase"}});
    Fed::expect_err(fed.both(t, "setMetaEventMap", bad).await, 400, "INVALID_ARGUMENT");
    let read = fed.both(t, "metaEventMap", json!({"siteId": "s1"})).await.unwrap();
    assert_eq!(read["columns"][1]["event"], "Schedule");

    // removeMetaPixel on REST, then again on Convex: nothing left.
    assert_eq!(fed.rest(t, "removeMetaPixel", json!({"siteId": "s1"})).await.ok(), json!({"removed": true}));
    let gone = fed.convex(t, "removeMetaPixel", json!({"siteId": "s1"})).await;
    assert_eq!((gone.status, gone.body["errorData"]["code"].as_str()), (560, Some("NOT_FOUND")));
    // unlinkMetaAdAccount on Convex, then on REST.
    let unlink = json!({"siteId": "s1", "adAccountId": LOJA_X});
    let done = fed.convex(t, "unlinkMetaAdAccount", unlink.clone()).await;
    assert_eq!(done.body["value"], json!({"removed": true}), "{}", done.text);
    fed.rest(t, "unlinkMetaAdAccount", unlink).await.err(404, "NOT_FOUND");

    // disconnectMeta (mutation): REST forgets, Convex finds nothing more.
    assert_eq!(fed.rest(t, "disconnectMeta", json!({})).await.ok(), json!({"removed": true}));
    let nothing = fed.convex(t, "disconnectMeta", json!({})).await;
    assert_eq!(nothing.body["value"], json!({"removed": false}), "{}", nothing.text);
    assert_eq!(fed.both(t, "metaConnection", json!({})).await.unwrap(), Value::Null);
    Fed::expect_err(fed.both(t, "refreshMetaAccounts", json!({})).await, 404, "NOT_FOUND");
    // The host's own owner kept everything it made.
    let host_view = fed.app.get(&format!("/v1/meta/owners/{HOST_OWNER}/connection")).await.ok();
    assert_eq!(host_view["status"], "connected");
});

// rule: FED-12
backend_test!(whole_owner_writes_are_refused_while_the_owner_feeds_a_site_outside, fed_builder, |fed| {
    sites(&fed).await;
    fed.grant(&["s1", "s2"], &[CONFIGURE]).await;
    let admin = fed.token(&[READ, CONFIGURE]);
    let t = Some(admin.as_str());
    fed.both(t, "connectMeta", json!({"accessToken": "any-token"})).await.unwrap();
    fed.both(t, "linkMetaAdAccount", json!({"siteId": "s1", "adAccountId": LOJA_X})).await.unwrap();
    // The host (or an older, wider grant) had the connection's owner feed s3 and s4.
    host_link(&fed, "s3", OWNER, CASA_LISBOA).await;
    fed.app.put("/v1/sites/s4/pixel", json!({"ownerKey": OWNER, "pixelId": pixel_of(PET_MANIA)})).await.ok();
    for (name, args) in [
        ("connectMeta", json!({"accessToken": "any-token"})),
        ("refreshMetaAccounts", json!({})),
        ("disconnectMeta", json!({})),
    ] {
        let rest = fed.rest(t, name, args.clone()).await;
        rest.err(403, "FEDERATION_SITE_DENIED");
        assert!(rest.body["message"].as_str().unwrap().contains("s3, s4"), "{}", rest.text);
        let convex = fed.convex(t, name, args).await;
        assert_eq!(convex.body["errorData"]["code"], "FEDERATION_SITE_DENIED");
    }
    assert_eq!(fed.app.count("site_ad_accounts").await, 2, "nothing was removed");
    // Per-site writes inside the grant still work.
    fed.rest(t, "unlinkMetaAdAccount", json!({"siteId": "s1", "adAccountId": LOJA_X})).await.ok();
    fed.app.delete(&format!("/v1/sites/s3/ad-accounts/{CASA_LISBOA}")).await.ok();
    fed.app.delete("/v1/sites/s4/pixel").await.ok();
    assert!(fed.both(t, "refreshMetaAccounts", json!({})).await.is_ok());
    assert_eq!(fed.rest(t, "disconnectMeta", json!({})).await.ok(), json!({"removed": true}));
});

// rule: FED-15
backend_test!(revoking_the_grant_forgets_the_meta_owner_in_the_same_transaction, fed_builder, |fed| {
    sites(&fed).await;
    fed.grant(&["s1", "s2"], &[CONFIGURE]).await;
    let admin = fed.token(&[READ, CONFIGURE]);
    let t = Some(admin.as_str());
    fed.both(t, "connectMeta", json!({"accessToken": "any-token"})).await.unwrap();
    fed.both(t, "linkMetaAdAccount", json!({"siteId": "s1", "adAccountId": LOJA_X})).await.unwrap();
    fed.rest(t, "setMetaPixel", json!({"siteId": "s2", "pixelId": pixel_of(PET_MANIA)})).await.ok();
    host_connect(&fed, HOST_OWNER).await;
    host_link(&fed, "s2", HOST_OWNER, CAFE_BROOKLYN).await;
    assert_eq!(fed.app.count("meta_connections").await, 2);

    let revoked = fed.revoke(CONN).await.ok();
    assert_eq!(revoked["metaRemoved"], true);
    assert_eq!(fed.app.count("meta_connections").await, 1, "only the host's owner is left");
    assert_eq!(fed.app.count("site_ad_accounts").await, 1);
    assert_eq!(fed.app.count("site_pixels").await, 0);
    assert_eq!(fed.app.get(&format!("/v1/meta/owners/{OWNER}/connection")).await.ok(), Value::Null);
    Fed::expect_err(fed.both(t, "metaConnection", json!({})).await, 403, "FEDERATION_CONNECTION_DENIED");

    // Reprovisioned, the connection starts with no Meta setup; removeFederatedMetaConnection alone does the same.
    fed.grant(&["s1", "s2"], &[CONFIGURE]).await;
    assert_eq!(fed.both(t, "metaConnection", json!({})).await.unwrap(), Value::Null);
    fed.both(t, "connectMeta", json!({"accessToken": "any-token"})).await.unwrap();
    let removed = fed.app.delete(&format!("/v1/federation/connections/{CONN}/meta")).await.ok();
    assert_eq!(removed, json!({"removed": true}));
    assert_eq!(fed.both(t, "metaConnection", json!({})).await.unwrap(), Value::Null);
    assert!(fed.both(t, "listSites", json!({})).await.is_ok(), "the grant itself stays");
});

// rule: FED-16
backend_test!(the_convex_wire_format_is_convex_s, fed_builder, |fed| {
    sites(&fed).await;
    fed.grant(&["s1"], &[CONFIGURE]).await;
    let admin = fed.token(&[READ, CONFIGURE]);
    let t = Some(admin.as_str());
    // A function through the wrong kind is an error, as on Convex.
    for (kind, name, args) in [
        ("query", "updateSite", json!({"siteId": "s1", "name": "X"})),
        ("mutation", "listSites", json!({})),
        ("action", "setMetaEventMap", json!({"siteId": "s1", "columns": {}})),
        ("query", "connectMeta", json!({"accessToken": "any-token"})),
    ] {
        let a = fed.convex_as(t, kind, name, args).await;
        assert_eq!((a.status, a.body["errorData"]["code"].as_str()), (560, Some("INVALID_ARGUMENT")), "{}", a.text);
        assert!(a.body["errorMessage"].as_str().unwrap().contains(kind), "{}", a.text);
    }
    assert_eq!(fed.app.get("/v1/sites/s1").await.ok()["name"], "Site s1", "the wrong kind changed nothing");
    // /api/function takes any kind, args as the object itself.
    let body = json!({"path": "rastroFederation:listSites", "format": "convex_encoded_json", "args": {}});
    let req = fed
        .app
        .http
        .post(format!("{}/api/function", fed.app.base))
        .header("content-type", "application/json")
        .bearer_auth(&admin)
        .body(body.to_string());
    assert_eq!(answer(req).await.body["value"][0]["siteId"], "s1");
    // Convex-encoded integers are numbers.
    let limit = base64::engine::general_purpose::STANDARD.encode(1i64.to_le_bytes());
    let args = json!({"siteIds": ["s1"], "from": T0 - DAY, "to": T0, "limit": {"$integer": limit}});
    assert_eq!(fed.convex(t, "listLeads", args).await.body["status"], "success");
    // Unknown functions and modules.
    let a = fed.convex_as(t, "query", "noSuchFunction", json!({})).await;
    assert_eq!((a.status, a.body["errorData"]["code"].as_str()), (560, Some("NOT_FOUND")));
    fed.rest(t, "noSuchFunction", json!({})).await.err(404, "NOT_FOUND");
    let body = json!({"path": "messages:list", "args": [{}]});
    let req = fed
        .app
        .http
        .post(format!("{}/api/query", fed.app.base))
        .header("content-type", "application/json")
        .body(body.to_string());
    assert_eq!(answer(req).await.body["errorData"]["code"], "NOT_FOUND");
    // A malformed envelope is a plain 400, which the client raises as an Error.
    for body in ["not json", "[]", r#"{"args": [{}]}"#, r#"{"path": "rastroFederation:listSites", "args": [{}, {}]}"#] {
        let req = fed
            .app
            .http
            .post(format!("{}/api/query", fed.app.base))
            .header("content-type", "application/json")
            .bearer_auth(&admin)
            .body(body);
        let a = answer(req).await;
        assert_eq!((a.status, a.code()), (400, "INVALID_ARGUMENT"), "{body}: {}", a.text);
    }
    // Browser dashboards: the CORS preflight and any origin on every answer.
    for path in ["/federation/listSites", "/api/query", "/api/mutation"] {
        let req = fed.app.http.request(reqwest::Method::OPTIONS, format!("{}{path}", fed.app.base));
        let res = req.header("origin", "https://www.amagerastro.com").send().await.unwrap();
        assert_eq!(res.status().as_u16(), 204, "{path}");
        let allowed = res.headers()["access-control-allow-headers"].to_str().unwrap().to_string();
        assert!(allowed.contains("authorization") && allowed.contains("convex-client"), "{allowed}");
    }
    let res = fed.app.http.post(format!("{}/federation/listSites", fed.app.base)).send().await.unwrap();
    assert_eq!((res.status().as_u16(), res.headers()["access-control-allow-origin"].to_str().unwrap()), (401, "*"));
    let body = json!({"path": "rastroFederation:manifest", "args": [{}]});
    let res = fed
        .app
        .http
        .post(format!("{}/api/query", fed.app.base))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["access-control-allow-origin"], "*");
    // REST: an empty body is `{}`; a non-object is refused; the body limit holds.
    let req = fed.app.http.post(format!("{}/federation/listSites", fed.app.base)).bearer_auth(&admin);
    assert_eq!(answer(req).await.status, 200);
    fed.rest(t, "listSites", json!([1])).await.err(400, "INVALID_ARGUMENT");
    let huge = "x".repeat(300 * 1024);
    let req = fed
        .app
        .http
        .post(format!("{}/federation/listSites", fed.app.base))
        .header("content-type", "application/json")
        .bearer_auth(&admin)
        .body(huge);
    assert_eq!(answer(req).await.code(), "PAYLOAD_TOO_LARGE");
});
