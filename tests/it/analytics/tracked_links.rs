//! Tracked links (TLINK-01 to TLINK-10): the four federated functions on both
//! transports, their configure scope, the redirect `GET /rastro/l/{siteId}/{slug}`
//! over HTTP (parameters, clicks, bot hits, 404s), the capability switch, and
//! the dashboard's "Links" screen in Chromium.

use serde_json::{Value, json};

use crate::analytics::{HOST, UA, site};
use crate::backend_test;
use crate::common::{Backend, DAY, T0, TestApp};
use crate::federation::{CONFIGURE, Fed, FedBuilder, PUBLIC, READ, answer, claims, fed_builder, with};

/// Behind a proxy on loopback: `X-Forwarded-For` names the client, so a test
/// can click from several addresses.
fn links_builder(backend: Backend) -> FedBuilder {
    fed_builder(backend).env("RASTRO_TRUSTED_PROXIES", "127.0.0.1")
}

/// Tracked links switched off.
fn links_off_builder(backend: Backend) -> FedBuilder {
    links_builder(backend).env("RASTRO_FEDERATION_TRACKED_LINKS", "false")
}

/// A token with `perms` valid for two months of the test's clock.
fn token(fed: &Fed, perms: &[&str]) -> String {
    fed.key.sign(&with(claims(perms), json!({"exp": T0 / 1000 + 60 * 86_400})))
}

/// The site `loja` on `loja.example.com`, a reader's and a configurer's tokens.
async fn setup(fed: &Fed) -> (String, String) {
    site(&fed.app, "loja", false).await;
    site(&fed.app, "outra", false).await;
    fed.grant(&["loja", "outra"], &[READ, CONFIGURE]).await;
    (token(fed, &[READ]), token(fed, &[READ, CONFIGURE]))
}

fn new_link(slug: &str, destination: &str) -> Value {
    json!({"siteId": "loja", "slug": slug, "destination": destination, "platform": "instagram", "channel": "bio",
        "campaign": "natal", "createdBy": "ana@example.com"})
}

/// `args` with `extra` merged over it.
fn merged(mut args: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    args
}

async fn create(fed: &Fed, token: &str, args: Value) -> String {
    let a = fed.rest(Some(token), "createTrackedLink", args).await;
    a.body.as_str().unwrap_or_else(|| panic!("a link id: {}", a.text)).to_string()
}

async fn list(fed: &Fed, token: &str, now: i64) -> Vec<Value> {
    let v = fed.both(Some(token), "listTrackedLinks", json!({"siteId": "loja", "now": now})).await.unwrap();
    v.as_array().unwrap().clone()
}

async fn listed(fed: &Fed, token: &str, slug: &str, now: i64) -> Value {
    list(fed, token, now).await.into_iter().find(|l| l["slug"] == slug).unwrap_or_else(|| panic!("{slug} listed"))
}

/// A client that does not follow redirects.
fn no_follow() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// `GET` (or `HEAD`) of a redirect path from `ip` with `ua`: status, Location, Cache-Control, body.
async fn visit(app: &TestApp, method: &str, path: &str, ip: &str, ua: &str) -> (u16, String, String, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let req = no_follow()
        .request(method, format!("{}{path}", app.base))
        .header("user-agent", ua)
        .header("x-forwarded-for", ip);
    let res = req.send().await.unwrap();
    let header = |n: &str| res.headers().get(n).map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    let (status, location, cache) = (res.status().as_u16(), header("location"), header("cache-control"));
    let body = serde_json::from_str(&res.text().await.unwrap()).unwrap_or(Value::Null);
    (status, location, cache, body)
}

async fn click(app: &TestApp, path: &str, ip: &str) -> u16 {
    visit(app, "GET", path, ip, UA).await.0
}

#[track_caller]
fn counts(link: &Value) -> (i64, i64, i64, i64) {
    let n = |a: &str, b: &str| link[a][b].as_i64().unwrap();
    (n("clicks", "total"), n("clicks", "last30d"), n("botHits", "total"), n("botHits", "last30d"))
}

// rule: TLINK-01
// rule: TLINK-02
backend_test!(links_are_created_and_listed_newest_first, links_builder, |fed| {
    let (reader, conf) = setup(&fed).await;
    assert_eq!(fed.both(Some(&reader), "listTrackedLinks", json!({"siteId": "loja", "now": T0})).await, Ok(json!([])));
    // The id is a bare JSON string, on either transport.
    let first = fed.rest(Some(&conf), "createTrackedLink", new_link("bio", "https://loja.example.com/oferta")).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.body.as_str().expect("a JSON string").to_string();
    assert!(first.starts_with("l_") && first.len() == 26, "{first}");
    assert!(first[2..].chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)), "{first}");
    let convex = fed.convex(Some(&conf), "createTrackedLink", new_link("stories", &format!("https://{HOST}/"))).await;
    assert_eq!(convex.body["status"], "success", "{}", convex.text);
    let second = convex.body["value"].as_str().expect("a JSON string").to_string();
    // rule: MAN-04 — a mutation called as a query is refused.
    let as_query =
        fed.convex_as(Some(&conf), "query", "createTrackedLink", new_link("x", "https://loja.example.com/")).await;
    assert_eq!((as_query.status, &as_query.body["errorData"]["code"]), (560, &json!("INVALID_ARGUMENT")));
    fed.app.clock.advance(1_000);
    let third =
        create(&fed, &conf, merged(new_link("reels", "https://LOJA.example.com/x?a=1"), json!({"campaign": null})))
            .await;
    // createdAt desc, then linkId desc (two links of one millisecond).
    let rows = list(&fed, &reader, T0).await;
    let ids: Vec<&str> = rows.iter().map(|l| l["linkId"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![third.as_str(), second.as_str(), first.as_str()]);
    assert!(second > first);
    assert_eq!(
        rows[0],
        json!({"linkId": third, "slug": "reels", "path": "/rastro/l/loja/reels",
            "destination": "https://loja.example.com/x?a=1", "platform": "instagram", "channel": "bio",
            "campaign": null, "disabled": false, "createdBy": "ana@example.com", "createdAt": T0 + 1_000,
            "updatedAt": T0 + 1_000, "clicks": {"total": 0, "last30d": 0}, "botHits": {"total": 0, "last30d": 0}})
    );
    assert_eq!(rows[2]["campaign"], "natal");
    // The same functions on the host API (host key, every site, configure).
    let by_host = fed.app.post("/v1/analytics/createTrackedLink", new_link("host", "https://loja.example.com/")).await;
    let by_host = by_host.ok().as_str().expect("a JSON string").to_string();
    let host_list = fed.app.post("/v1/analytics/listTrackedLinks", json!({"siteId": "loja", "now": T0})).await.ok();
    assert_eq!(host_list[0]["linkId"], json!(by_host));
    let removed =
        fed.app.post("/v1/analytics/deleteTrackedLink", json!({"siteId": "loja", "linkId": by_host})).await.ok();
    assert_eq!(removed, json!({"removed": true}));
    // Another site lists its own links only.
    let other = fed.both(Some(&reader), "listTrackedLinks", json!({"siteId": "outra", "now": T0})).await;
    assert_eq!(other, Ok(json!([])));

    // A slug in use is CONFLICT; the same slug on another site is fine.
    let taken = fed.rest(Some(&conf), "createTrackedLink", new_link("bio", "https://loja.example.com/")).await;
    taken.err(409, "CONFLICT");
    site(&fed.app, "terceira", false).await;
    fed.grant(&["loja", "outra", "terceira"], &[READ, CONFIGURE]).await;
    create(&fed, &conf, merged(new_link("bio", "https://loja.example.com/"), json!({"siteId": "terceira"}))).await;

    // Destinations: absolute http(s), ≤ 2000 bytes, no userinfo, on a site domain (IDNA-ASCII, port only when named).
    fed.app.patch("/v1/sites/loja", json!({"domains": [HOST, "xn--loj-gla.com", "localhost:8080"]})).await.ok();
    for ok in ["https://lojá.com/p", "http://localhost:8080/a", "https://loja.example.com:443/"] {
        let slug = format!("ok-{}", ok.len());
        create(&fed, &conf, new_link(&slug, ok)).await;
    }
    let long = format!("https://{HOST}/{}", "a".repeat(2000));
    for bad in [
        "/oferta",
        "loja.example.com/oferta",
        "ftp://loja.example.com/",
        "javascript:alert(1)",
        "https://user:senha@loja.example.com/",
        "https://user@loja.example.com/",
        "https://evil.example.com/",
        "https://loja.example.com.evil.com/",
        "https://loja.example.com:8443/",
        "http://localhost/",
        "http://localhost:9090/",
        long.as_str(),
    ] {
        let a = fed.rest(Some(&conf), "createTrackedLink", new_link("nope", bad)).await;
        assert_eq!((a.status, a.code()), (400, "INVALID_ARGUMENT"), "{bad}: {}", a.text);
    }
    // The other fields.
    let c101 = "c".repeat(101);
    let by129 = "b".repeat(129);
    let s65 = "s".repeat(65);
    let p33 = "p".repeat(33);
    for extra in [
        json!({"slug": "-bio"}),
        json!({"slug": "Bio"}),
        json!({"slug": "bio_2"}),
        json!({"slug": ""}),
        json!({"slug": s65}),
        json!({"platform": "Instagram"}),
        json!({"platform": ""}),
        json!({"platform": p33}),
        json!({"channel": "bio link"}),
        json!({"campaign": ""}),
        json!({"campaign": c101}),
        json!({"createdBy": ""}),
        json!({"createdBy": by129}),
        json!({"disabled": true}),
        json!({"slug": 7}),
    ] {
        let a = fed
            .rest(
                Some(&conf),
                "createTrackedLink",
                merged(new_link("fine", &format!("https://{HOST}/")), extra.clone()),
            )
            .await;
        assert_eq!((a.status, a.code()), (400, "INVALID_ARGUMENT"), "{extra}: {}", a.text);
    }
    // A reader's `now` is required and must be a time.
    let a = fed.rest(Some(&reader), "listTrackedLinks", json!({"siteId": "loja"})).await;
    a.err(400, "INVALID_ARGUMENT");
    let a = fed.rest(Some(&reader), "listTrackedLinks", json!({"siteId": "loja", "now": -1})).await;
    a.err(400, "INVALID_ARGUMENT");
    let a = fed.rest(Some(&reader), "listTrackedLinks", json!({"siteId": "loja", "now": T0, "limit": 5})).await;
    a.err(400, "INVALID_ARGUMENT");
    assert_eq!(list(&fed, &reader, T0).await.len(), 6);
});

// rule: TLINK-03
// rule: CFG-07
backend_test!(links_are_updated_by_id_and_keep_their_slug, links_builder, |fed| {
    let (reader, conf) = setup(&fed).await;
    let id = create(&fed, &conf, new_link("bio", "https://loja.example.com/a")).await;
    let elsewhere =
        create(&fed, &conf, merged(new_link("bio", "https://loja.example.com/b"), json!({"siteId": "outra"}))).await;
    fed.app.clock.advance(5_000);
    let change = json!({"siteId": "loja", "linkId": id, "destination": "https://loja.example.com/c?z=9",
        "platform": "tiktok", "channel": "perfil", "campaign": null, "disabled": true});
    // Both transports answer the link id as a JSON string.
    assert_eq!(fed.both(Some(&conf), "updateTrackedLink", change).await, Ok(json!(id)));
    let l = listed(&fed, &reader, "bio", T0).await;
    assert_eq!(
        (&l["destination"], &l["platform"], &l["channel"], &l["campaign"], &l["disabled"]),
        (&json!("https://loja.example.com/c?z=9"), &json!("tiktok"), &json!("perfil"), &Value::Null, &json!(true))
    );
    assert_eq!((l["createdAt"].as_i64(), l["updatedAt"].as_i64()), (Some(T0), Some(T0 + 5_000)));
    // Only what is named changes.
    let only = json!({"siteId": "loja", "linkId": id, "campaign": "verao"});
    fed.rest(Some(&conf), "updateTrackedLink", only).await.ok();
    let l = listed(&fed, &reader, "bio", T0).await;
    assert_eq!((&l["campaign"], &l["platform"], &l["disabled"]), (&json!("verao"), &json!("tiktok"), &json!(true)));
    // `slug` is not an updatable field.
    let a = fed.rest(Some(&conf), "updateTrackedLink", json!({"siteId": "loja", "linkId": id, "slug": "nova"})).await;
    a.err(400, "INVALID_ARGUMENT");
    for bad in [
        json!({"destination": "https://evil.example.com/"}),
        json!({"platform": "Tik Tok"}),
        json!({"channel": ""}),
        json!({"campaign": ""}),
        json!({"disabled": "yes"}),
    ] {
        let a = fed
            .rest(Some(&conf), "updateTrackedLink", merged(json!({"siteId": "loja", "linkId": id}), bad.clone()))
            .await;
        assert_eq!((a.status, a.code()), (400, "INVALID_ARGUMENT"), "{bad}: {}", a.text);
    }
    assert_eq!(listed(&fed, &reader, "bio", T0).await["slug"], "bio");
    // An unknown link, or another site's, is NOT_FOUND on update and {removed: false} on delete.
    for link in ["l_000000000000000000000000", elsewhere.as_str()] {
        let a = fed
            .both(Some(&conf), "updateTrackedLink", json!({"siteId": "loja", "linkId": link, "disabled": true}))
            .await;
        Fed::expect_err(a, 404, "NOT_FOUND");
        let a = fed.both(Some(&conf), "deleteTrackedLink", json!({"siteId": "loja", "linkId": link})).await;
        assert_eq!(a, Ok(json!({"removed": false})));
    }
    let theirs = fed.both(Some(&reader), "listTrackedLinks", json!({"siteId": "outra", "now": T0})).await.unwrap();
    assert_eq!(theirs[0]["disabled"], false, "the other site's link is untouched");
});

// rule: TLINK-04
backend_test!(a_deleted_link_frees_its_slug_and_its_counters, links_builder, |fed| {
    let (reader, conf) = setup(&fed).await;
    let id = create(&fed, &conf, new_link("bio", "https://loja.example.com/a")).await;
    assert_eq!(click(&fed.app, "/rastro/l/loja/bio", "203.0.113.1").await, 302);
    assert_eq!(visit(&fed.app, "HEAD", "/rastro/l/loja/bio", "203.0.113.1", UA).await.0, 302);
    assert_eq!(counts(&listed(&fed, &reader, "bio", T0).await), (1, 1, 1, 1));
    let removed = fed.rest(Some(&conf), "deleteTrackedLink", json!({"siteId": "loja", "linkId": id})).await.ok();
    assert_eq!(removed, json!({"removed": true}));
    assert_eq!(fed.app.count("web_link_days").await, 0, "its daily counters are purged");
    let again = fed.rest(Some(&conf), "deleteTrackedLink", json!({"siteId": "loja", "linkId": id})).await.ok();
    assert_eq!(again, json!({"removed": false}));
    assert_eq!(list(&fed, &reader, T0).await, Vec::<Value>::new());
    // The slug is free, and its new link starts from zero.
    let fresh = create(&fed, &conf, new_link("bio", "https://loja.example.com/b")).await;
    assert_ne!(fresh, id);
    assert_eq!(counts(&listed(&fed, &reader, "bio", T0).await), (0, 0, 0, 0));
});

// rule: TLINK-09
backend_test!(a_site_holds_at_most_500_links, links_builder, |fed| {
    let (reader, conf) = setup(&fed).await;
    for i in 0..500 {
        create(&fed, &conf, new_link(&format!("l{i}"), "https://loja.example.com/")).await;
    }
    let a = fed.rest(Some(&conf), "createTrackedLink", new_link("l500", "https://loja.example.com/")).await;
    a.err(400, "INVALID_ARGUMENT");
    assert_eq!(list(&fed, &reader, T0).await.len(), 500);
    // Another site has its own 500.
    create(&fed, &conf, merged(new_link("l500", "https://loja.example.com/"), json!({"siteId": "outra"}))).await;
    let manifest = fed.both(None, "manifest", json!({})).await.unwrap();
    assert_eq!(manifest["limits"]["maxTrackedLinks"], 500);
});

// rule: TLINK-05
backend_test!(the_redirect_adds_utm_and_the_request_parameters_where_missing, links_builder, |fed| {
    let (_, conf) = setup(&fed).await;
    create(&fed, &conf, new_link("bio", "https://loja.example.com/oferta?utm_source=keep&x=1#topo")).await;
    let (status, location, cache, _) =
        visit(&fed.app, "GET", "/rastro/l/loja/bio?fbclid=IwAR0abc&x=2&utm_medium=ad&gclid=G1", "203.0.113.1", UA)
            .await;
    assert_eq!(status, 302);
    assert_eq!(cache, "no-store");
    assert_eq!(
        location,
        "https://loja.example.com/oferta?utm_source=keep&x=1&utm_medium=bio&utm_campaign=natal&fbclid=IwAR0abc&gclid=G1#topo"
    );
    // No campaign: no utm_campaign; a request's own utm_campaign then passes.
    create(&fed, &conf, merged(new_link("reels", "https://loja.example.com/"), json!({"campaign": null}))).await;
    let (_, location, _, _) = visit(&fed.app, "GET", "/rastro/l/loja/reels", "203.0.113.1", UA).await;
    assert_eq!(location, "https://loja.example.com/?utm_source=instagram&utm_medium=bio");
    let (_, location, _, _) =
        visit(&fed.app, "GET", "/rastro/l/loja/reels?utm_campaign=bf%2026&utm_source=x", "203.0.113.1", UA).await;
    assert_eq!(location, "https://loja.example.com/?utm_source=instagram&utm_medium=bio&utm_campaign=bf+26");
    // The route is open: no token, no host key.
    let (status, _, _, _) = visit(&fed.app, "GET", "/rastro/l/loja/reels", "203.0.113.9", UA).await;
    assert_eq!(status, 302);
});

// rule: TLINK-06
// rule: TLINK-07
backend_test!(clicks_count_once_per_address_and_window_and_bots_apart, links_builder, |fed| {
    let (reader, conf) = setup(&fed).await;
    create(&fed, &conf, new_link("bio", "https://loja.example.com/")).await;
    let path = "/rastro/l/loja/bio";
    assert_eq!(click(&fed.app, path, "203.0.113.1").await, 302);
    // A repeat from the same address within RASTRO_LINK_CLICK_WINDOW (10 s) is redirected, uncounted.
    fed.app.clock.advance(9_999);
    assert_eq!(click(&fed.app, path, "203.0.113.1").await, 302);
    assert_eq!(counts(&listed(&fed, &reader, "bio", T0).await), (1, 1, 0, 0));
    // Another address counts; the first one counts again once its window is over.
    assert_eq!(click(&fed.app, path, "2001:db8::1").await, 302);
    fed.app.clock.advance(1);
    assert_eq!(click(&fed.app, path, "203.0.113.1").await, 302);
    assert_eq!(counts(&listed(&fed, &reader, "bio", T0).await), (3, 3, 0, 0));
    // A bot UA, an empty UA and HEAD are redirected and add bot hits, never clicks (nor windows).
    let googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    assert_eq!(visit(&fed.app, "GET", path, "203.0.113.7", googlebot).await.0, 302);
    assert_eq!(visit(&fed.app, "GET", path, "203.0.113.7", "").await.0, 302);
    let (status, location, cache, _) = visit(&fed.app, "HEAD", path, "203.0.113.7", UA).await;
    assert_eq!((status, cache.as_str()), (302, "no-store"));
    assert!(location.starts_with("https://loja.example.com/?utm_source=instagram"), "{location}");
    assert_eq!(counts(&listed(&fed, &reader, "bio", T0).await), (3, 3, 3, 3));
    assert_eq!(click(&fed.app, path, "203.0.113.7").await, 302);
    assert_eq!(counts(&listed(&fed, &reader, "bio", T0).await), (4, 4, 3, 3));

    // rule: TLINK-01 — last30d is the UTC day of `now` and the 29 before, whole days.
    let today = T0 - T0.rem_euclid(DAY);
    fed.app.clock.set(today + 29 * DAY + 1);
    assert_eq!(click(&fed.app, path, "203.0.113.1").await, 302);
    let now = today + 29 * DAY + 1;
    assert_eq!(counts(&listed(&fed, &reader, "bio", now).await), (5, 5, 3, 3));
    assert_eq!(counts(&listed(&fed, &reader, "bio", today + 30 * DAY).await), (5, 1, 3, 0));
    assert_eq!(counts(&listed(&fed, &reader, "bio", today - 1).await), (5, 0, 3, 0));
    // Totals are all-time whatever `now` says.
    assert_eq!(counts(&listed(&fed, &reader, "bio", today + 400 * DAY).await), (5, 0, 3, 0));
});

// rule: TLINK-08
backend_test!(unknown_disabled_deleted_or_off_domain_links_are_404, links_builder, |fed| {
    let (_, conf) = setup(&fed).await;
    let id = create(&fed, &conf, new_link("bio", "https://loja.example.com/")).await;
    let expect_404 = |path: &'static str| {
        let app = &fed.app;
        async move {
            for method in ["GET", "HEAD"] {
                let (status, location, _, body) = visit(app, method, path, "203.0.113.1", UA).await;
                assert_eq!((status, location.as_str()), (404, ""), "{method} {path}");
                if method == "GET" {
                    assert_eq!(body["code"], "NOT_FOUND", "{path}");
                }
            }
        }
    };
    assert_eq!(click(&fed.app, "/rastro/l/loja/bio", "203.0.113.1").await, 302);
    expect_404("/rastro/l/loja/nope").await;
    expect_404("/rastro/l/outra/bio").await;
    expect_404("/rastro/l/ninguem/bio").await;
    expect_404("/rastro/l/loja/BIO").await;
    expect_404("/rastro/l/loja/bio%2Fx").await;
    expect_404("/rastro/l/loja/%FF").await;
    expect_404("/rastro/l/%00/bio").await;
    expect_404("/rastro/l/..%2F/bio").await;
    // Disabled, then enabled again.
    let off = json!({"siteId": "loja", "linkId": id, "disabled": true});
    fed.rest(Some(&conf), "updateTrackedLink", off).await.ok();
    expect_404("/rastro/l/loja/bio").await;
    let on = json!({"siteId": "loja", "linkId": id, "disabled": false});
    fed.rest(Some(&conf), "updateTrackedLink", on).await.ok();
    assert_eq!(click(&fed.app, "/rastro/l/loja/bio", "203.0.113.2").await, 302);
    // The destination's host left the site's domains.
    fed.app.patch("/v1/sites/loja", json!({"domains": ["nova.example.com"]})).await.ok();
    expect_404("/rastro/l/loja/bio").await;
    fed.app.patch("/v1/sites/loja", json!({"domains": [HOST]})).await.ok();
    assert_eq!(click(&fed.app, "/rastro/l/loja/bio", "203.0.113.3").await, 302);
    // Deleted.
    fed.rest(Some(&conf), "deleteTrackedLink", json!({"siteId": "loja", "linkId": id})).await.ok();
    expect_404("/rastro/l/loja/bio").await;
    // Another method on the route is 405.
    let post = no_follow().post(format!("{}/rastro/l/loja/bio", fed.app.base)).send().await.unwrap();
    assert_eq!(post.status().as_u16(), 405);
});

// rule: CFG-01
backend_test!(the_writes_need_the_configure_scope, links_builder, |fed| {
    let (reader, conf) = setup(&fed).await;
    let id = create(&fed, &conf, new_link("bio", "https://loja.example.com/")).await;
    let writes = [
        ("createTrackedLink", new_link("outro", "https://loja.example.com/")),
        ("updateTrackedLink", json!({"siteId": "loja", "linkId": id, "disabled": true})),
        ("deleteTrackedLink", json!({"siteId": "loja", "linkId": id})),
    ];
    // A read-only token.
    for (name, args) in writes.clone() {
        Fed::expect_err(fed.both(Some(&reader), name, args).await, 403, "FEDERATION_CONFIGURE_FORBIDDEN");
    }
    // A configure token on a grant without configure.
    fed.grant(&["loja", "outra"], &[READ]).await;
    for (name, args) in writes.clone() {
        Fed::expect_err(fed.both(Some(&conf), name, args).await, 403, "FEDERATION_CONFIGURE_FORBIDDEN");
    }
    // The reader still lists; nothing changed.
    let rows = list(&fed, &reader, T0).await;
    assert_eq!((rows.len(), &rows[0]["disabled"]), (1, &json!(false)));
    // A public token may call none of the four.
    fed.grant(&["loja", "outra"], &[READ, CONFIGURE, PUBLIC]).await;
    let public = fed
        .key
        .sign(&with(claims(&[PUBLIC, CONFIGURE]), json!({"rastro_site_ids": ["loja"], "exp": T0 / 1000 + 86_400})));
    let mut all = writes.to_vec();
    all.push(("listTrackedLinks", json!({"siteId": "loja", "now": T0})));
    for (name, args) in all {
        Fed::expect_err(fed.both(Some(&public), name, args).await, 403, "FEDERATION_PUBLIC_FORBIDDEN");
    }
    // A site outside the grant.
    let a = fed.both(Some(&conf), "listTrackedLinks", json!({"siteId": "nenhum", "now": T0})).await;
    Fed::expect_err(a, 403, "FEDERATION_SITE_DENIED");
    let a = fed
        .both(
            Some(&conf),
            "createTrackedLink",
            merged(new_link("x", "https://loja.example.com/"), json!({"siteId": "nenhum"})),
        )
        .await;
    Fed::expect_err(a, 403, "FEDERATION_SITE_DENIED");
});

// rule: TLINK-10
// rule: TRK-02
backend_test!(tracked_links_off_hide_the_functions_and_the_redirect, links_off_builder, |fed| {
    site(&fed.app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let manifest = fed.both(None, "manifest", json!({})).await.unwrap();
    let names: Vec<&str> = manifest["functions"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    let four = ["listTrackedLinks", "createTrackedLink", "updateTrackedLink", "deleteTrackedLink"];
    assert!(four.iter().all(|f| !names.contains(f)), "{names:?}");
    assert!(!manifest["capabilities"].as_array().unwrap().contains(&json!("trackedLinks")));
    let conf = token(&fed, &[READ, CONFIGURE]);
    let status = fed.both(Some(&conf), "connectionStatus", json!({})).await.unwrap();
    assert_eq!(status["capabilities"], manifest["capabilities"]);
    for (name, args) in [
        ("listTrackedLinks", json!({"siteId": "loja", "now": T0})),
        ("createTrackedLink", new_link("bio", "https://loja.example.com/")),
        ("updateTrackedLink", json!({"siteId": "loja", "linkId": "l_000000000000000000000000"})),
        ("deleteTrackedLink", json!({"siteId": "loja", "linkId": "l_000000000000000000000000"})),
    ] {
        Fed::expect_err(fed.both(Some(&conf), name, args).await, 400, "FEDERATION_INVALID_SCOPE");
    }
    fed.app.post("/v1/analytics/listTrackedLinks", json!({"siteId": "loja", "now": T0})).await.err(404, "NOT_FOUND");
    // A link stored while the capability was on answers 404 now.
    let args: rastrod::service::analytics::links::CreateArgs =
        serde_json::from_value(new_link("bio", "https://loja.example.com/")).unwrap();
    fed.app.state.cx.read(move |c| rastrod::service::analytics::links::create(c, T0, args)).await.unwrap();
    let (status, _, _, body) = visit(&fed.app, "GET", "/rastro/l/loja/bio", "203.0.113.1", UA).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("NOT_FOUND")));
    let health = answer(fed.app.http.get(format!("{}/rastro/health", fed.app.base))).await.ok();
    assert!(health["features"].get("trackedLinks").is_none(), "{health}");
});

// rule: TRK-02
// rule: MAN-01
backend_test!(tracked_links_on_are_advertised, links_builder, |fed| {
    let manifest = fed.both(None, "manifest", json!({})).await.unwrap();
    assert!(manifest["capabilities"].as_array().unwrap().contains(&json!("trackedLinks")));
    let names = manifest["functions"].as_array().unwrap();
    for f in ["listTrackedLinks", "createTrackedLink", "updateTrackedLink", "deleteTrackedLink"] {
        assert!(names.contains(&json!(f)), "{f}");
    }
    let health = answer(fed.app.http.get(format!("{}/rastro/health", fed.app.base))).await.ok();
    assert_eq!(health["features"]["trackedLinks"], true);
});

// The "Links" screen: the list with clicks and bot hits; an operator who may
// configure creates, disables, enables and deletes; a read-only one only reads.
backend_test!(slow: the_links_screen_in_a_real_browser, crate::common::fake_meta_builder, |app| {
    use crate::dashboard::{Dash, PASSWORD, operator};
    let Some(b) = crate::browser::webdriver::Browser::start().await else { return };
    site(&app, "loja", false).await;
    operator(&app, "dono", true, "o1").await;
    operator(&app, "leitor", false, "o1").await;
    let base = app.base.clone();
    crate::browser::sign_in(&b, &base, "dono").await;
    b.click("[data-view=links]").await;
    b.wait_for("#new-link").await;
    assert!(b.text("#links-body").await.contains("Nenhum link"));
    b.type_into("#link-slug", "bio").await;
    b.type_into("#link-destination", "https://loja.example.com/oferta").await;
    b.type_into("#link-platform", "instagram").await;
    b.type_into("#link-channel", "bio").await;
    b.type_into("#link-campaign", "natal").await;
    b.click("#create-link").await;
    b.wait_for("#links tr[data-link=bio]").await;
    assert!(b.text("tr[data-link=bio] th").await.contains("/rastro/l/loja/bio"));
    // Two clicks from two addresses and a bot hit, then the screen again.
    let plain = no_follow();
    for ua in [UA, "Mozilla/5.0 (compatible; Googlebot/2.1)"] {
        let res = plain.get(format!("{base}/rastro/l/loja/bio")).header("user-agent", ua).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 302);
    }
    b.click("[data-view=links]").await;
    b.wait_for("#links tr[data-link=bio]").await;
    assert_eq!(b.text("tr[data-link=bio] [data-col=clicks]").await, "1");
    assert_eq!(b.text("tr[data-link=bio] [data-col=clicks30]").await, "1");
    assert_eq!(b.text("tr[data-link=bio] [data-col=bots]").await, "1");
    assert_eq!(b.text("tr[data-link=bio] [data-col=bots30]").await, "1");
    assert_eq!(b.text("tr[data-link=bio] [data-col=tags]").await, "instagram · bio · natal");
    crate::browser::no_serious_violations("the links screen", b.axe().await);
    crate::browser::screenshot(&app, &b, "links").await;
    // "Baixar CSV": the host's file of the list (REP-10).
    let path = "/dashboard/api/reports/listTrackedLinks.csv?breakdown=links";
    let args = json!({"siteId": "loja", "now": app.state.now()});
    let from_page = b.js_async(crate::browser::CSV_FETCH, json!([path, args])).await;
    let from_host = app.post("/v1/reports/listTrackedLinks.csv", args).await;
    assert_eq!(from_host.status, 200, "{}", from_host.text);
    assert!(from_host.text.contains("bio") && from_host.text.contains("clicks.total"), "{}", from_host.text);
    assert_eq!(from_page.as_str().unwrap(), from_host.text);
    b.wait_for("[data-csv=links]").await;
    // A slug in use is refused on screen.
    b.type_into("#link-slug", "bio").await;
    b.type_into("#link-destination", "https://loja.example.com/").await;
    b.type_into("#link-platform", "x").await;
    b.type_into("#link-channel", "y").await;
    b.click("#create-link").await;
    b.wait_until("the refusal", "return !!document.querySelector('#links-msg [role=alert]');", json!([])).await;
    assert!(b.text("#links-msg").await.contains("slug"));
    // Disable: the redirect answers 404; enable: 302 again.
    b.click("[data-toggle=bio]").await;
    b.wait_until(
        "disabled",
        "var b = document.querySelector('[data-toggle=bio]'); return !!b && b.textContent === 'Ativar';",
        json!([]),
    )
    .await;
    let res = plain.get(format!("{base}/rastro/l/loja/bio")).header("user-agent", UA).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 404);
    b.click("[data-toggle=bio]").await;
    b.wait_until(
        "enabled",
        "var b = document.querySelector('[data-toggle=bio]'); return !!b && b.textContent === 'Desativar';",
        json!([]),
    )
    .await;
    let res = plain.get(format!("{base}/rastro/l/loja/bio")).header("user-agent", UA).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 302);
    // The read-only operator sees the list but no form, and its buttons are off; the API refuses it too.
    let (reader, _) = Dash::sign_in(&app, "leitor", PASSWORD).await;
    let refused = reader
        .write(
            "POST",
            "/dashboard/api/sites/loja/links",
            json!({"slug": "x", "destination":
        "https://loja.example.com/", "platform": "a", "channel": "b", "campaign": null}),
        )
        .await;
    assert_eq!(refused.status, 403);
    b.click("#signout").await;
    b.wait_for("#op-name").await;
    crate::browser::sign_in(&b, &base, "leitor").await;
    b.click("[data-view=links]").await;
    b.wait_for("#links tr[data-link=bio]").await;
    let form = b.js("return !!document.querySelector('#new-link');", json!([])).await;
    assert_eq!(form, json!(false));
    let off = b.js("return document.querySelector('[data-delete=bio]').disabled;", json!([])).await;
    assert_eq!(off, json!(true));
    // Back as the owner: delete.
    b.click("#signout").await;
    b.wait_for("#op-name").await;
    crate::browser::sign_in(&b, &base, "dono").await;
    b.click("[data-view=links]").await;
    b.wait_for("[data-delete=bio]").await;
    b.js("window.confirm = function () { return true; };", json!([])).await;
    b.click("[data-delete=bio]").await;
    b.wait_until("deleted", "return !document.querySelector('#links tr[data-link=bio]');", json!([])).await;
    let res = plain.get(format!("{base}/rastro/l/loja/bio")).header("user-agent", UA).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 404);
    b.quit().await;
});

// rule: RET-08
backend_test!(link_totals_survive_retention_and_old_days_go, links_builder, |fed| {
    let (reader, conf) = setup(&fed).await;
    create(&fed, &conf, new_link("bio", "https://loja.example.com/")).await;
    assert_eq!(click(&fed.app, "/rastro/l/loja/bio", "203.0.113.1").await, 302);
    assert_eq!(visit(&fed.app, "HEAD", "/rastro/l/loja/bio", "203.0.113.1", UA).await.0, 302);
    fed.app.clock.advance(40 * DAY);
    assert_eq!(click(&fed.app, "/rastro/l/loja/bio", "203.0.113.1").await, 302);
    assert_eq!(fed.app.count("web_link_days").await, 2);
    let policy = json!({"siteId": "loja", "eventsDays": 1, "sessionsDays": 1, "conversionsDays": 1,
        "profilesDays": 1, "aggregatesDays": 10});
    fed.rest(Some(&conf), "setRetentionPolicy", policy).await.ok();
    rastrod::actors::retention::drain(&fed.app.state.cx).await.unwrap();
    // The old day's row went with the aggregates; the all-time totals stay.
    assert_eq!(fed.app.count("web_link_days").await, 1);
    let now = T0 + 40 * DAY;
    assert_eq!(counts(&listed(&fed, &reader, "bio", now).await), (2, 1, 1, 0));
    assert_eq!(counts(&listed(&fed, &reader, "bio", T0).await), (2, 0, 1, 0));
});
