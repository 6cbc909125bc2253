//! Identified people over HTTP and the federated API (PPL-01 to
//! PPL-15): identify and its identity map, aliases and the sessions, numbers,
//! journeys and profiles they join, the people list and its search, forgetting
//! a person, the capability switches, and a canary run of the real binary that
//! looks for an externalId everywhere.

use serde_json::{Value, json};

use crate::analytics::outbox::queued;
use crate::analytics::{HOST, analytics_builder, drain, pageview, reader, site, track};
use crate::backend_test;
use crate::common::{Answer, Backend, DAY, T0, TestApp};
use crate::federation::{Fed, FedBuilder, PUBLIC, READ, claims, with};

const MINUTE: i64 = 60_000;
const ANON: &str = "v_anonymous0001";

async fn identify(app: &TestApp, site_id: &str, body: Value) -> Answer {
    app.post(&format!("/v1/sites/{site_id}/analytics/identify"), body).await
}

/// A site on the tracker's host, of another owner.
async fn site_of(app: &TestApp, id: &str, owner: &str) {
    app.post(
        "/v1/sites",
        json!({"siteId": id, "name": id, "currency": "BRL", "timezone": "America/Sao_Paulo", "ownerId": owner,
            "domains": [HOST]}),
    )
    .await
    .ok();
}

fn public(fed: &Fed, sites: &[&str]) -> String {
    fed.key.sign(&with(claims(&[PUBLIC]), json!({"rastro_site_ids": sites, "exp": T0 / 1000 + 86_400})))
}

fn day_range() -> (i64, i64) {
    let d = T0 - T0.rem_euclid(DAY);
    (d, d + DAY - 1)
}

fn page(numbers: i64, cursor: Value) -> Value {
    json!({"numItems": numbers, "cursor": cursor})
}

// rule: PPL-01
// rule: PPL-02
backend_test!(one_id_per_owner_and_201_once_per_site, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "loja2", false).await;
    site_of(app, "outra", "o2").await;
    let first = identify(app, "loja", json!({"externalId": "user-1"})).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let id = first.body["visitorId"].as_str().unwrap().to_string();
    assert!(id.starts_with("u_") && id.len() == 24, "{id}");
    assert_eq!((first.body["created"].as_bool(), first.body["aliased"].as_bool()), (Some(true), Some(false)));
    let again = identify(app, "loja", json!({"externalId": "user-1"})).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, json!({"visitorId": id, "created": false, "aliased": false}));
    // Another site of the same owner: the same id, a new profile there.
    let other_site = identify(app, "loja2", json!({"externalId": "user-1"})).await;
    assert_eq!((other_site.status, other_site.body["visitorId"].as_str()), (201, Some(id.as_str())));
    // Another owner: another id.
    let other_owner = identify(app, "outra", json!({"externalId": "user-1"})).await;
    assert_eq!(other_owner.status, 201);
    assert_ne!(other_owner.body["visitorId"], json!(id));
    assert_ne!(identify(app, "loja", json!({"externalId": "user-2"})).await.body["visitorId"], json!(id));
    identify(app, "nope", json!({"externalId": "user-1"})).await.err(404, "NOT_FOUND");
    let health = app.with_key(None).get("/rastro/health").await.ok();
    assert_eq!(health["features"]["identify"], true);
    identify(app, "loja", json!({"externalId": "user-1", "extra": 1})).await.err(400, "INVALID_ARGUMENT");
    assert_eq!(app.count("web_identities").await, 3);
});

// rule: PPL-03
backend_test!(without_the_secrets_key_identify_is_503_and_stores_nothing, |app| {
    site(&app, "loja", false).await;
    let a = identify(&app, "loja", json!({"externalId": "user-1", "visitorId": ANON, "name": "Ana"})).await;
    a.err(503, "SECRETS_KEY_MISSING");
    for table in ["web_identities", "web_profiles", "web_aliases", "web_profile_terms"] {
        assert_eq!(app.count(table).await, 0, "{table}");
    }
});

// rule: PPL-05
// rule: PPL-09
// rule: SES-19
// rule: STORE-06
// rule: OVR-14
// rule: ARPT-07
backend_test!(an_alias_joins_its_session_number_journey_and_profile, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, PUBLIC]).await;
    let t = reader(&fed);
    // An earlier visit of the anonymous id, closed an hour and more before.
    app.clock.set(T0 - 120 * MINUTE);
    let earlier = track(app, "loja", ANON, vec![pageview("0", "/antes")]).await["sessionId"].clone();
    app.clock.set(T0);
    let s = track(app, "loja", ANON, vec![pageview("1", "/")]).await["sessionId"].clone();
    assert_ne!(earlier, s);
    app.clock.advance(MINUTE);
    let body = json!({"externalId": "user-1", "visitorId": ANON, "name": "José Silva", "email": "Jose@Example.COM"});
    let a = identify(app, "loja", body).await;
    assert_eq!((a.status, a.body["aliased"].as_bool()), (201, Some(true)), "{}", a.text);
    let u = a.body["visitorId"].as_str().unwrap().to_string();
    // The login mid-visit: the identified id's next event joins the same session, and so does the alias's.
    app.clock.advance(MINUTE);
    assert_eq!(track(app, "loja", &u, vec![pageview("2", "/conta")]).await["sessionId"], s);
    app.clock.advance(MINUTE);
    assert_eq!(track(app, "loja", ANON, vec![pageview("3", "/p/1")]).await["sessionId"], s);

    let profile = json!({"visitorId": u, "name": "José Silva", "email": "jose@example.com"});
    let got = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": s})).await.unwrap();
    assert_eq!((got["visitorId"].as_str(), got["pageviews"].as_i64()), (Some(u.as_str()), Some(3)));
    assert_eq!(got["profile"], profile);
    let (from, to) = day_range();
    let list = fed
        .both(
            Some(&t),
            "listSessions",
            json!({"siteId": "loja", "from": from, "to": to, "paginationOpts": page(10, Value::Null)}),
        )
        .await
        .unwrap();
    let rows = list["page"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "the login split no session");
    assert_eq!((&rows[0]["sessionId"], &rows[1]["sessionId"]), (&s, &earlier));
    assert_eq!(rows[1]["visitorId"], ANON, "the earlier session stays the alias's");
    for row in rows {
        assert_eq!(row["profile"], profile, "the alias's sessions carry the person's profile too");
    }
    let now = T0 + 3 * MINUTE;
    let live = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": now})).await.unwrap();
    assert_eq!(live["count"], 1, "one live visitor, not two: {live}");
    assert_eq!(
        (live["visitors"][0]["visitorId"].as_str(), &live["visitors"][0]["profile"]),
        (Some(u.as_str()), &profile)
    );
    // From the database too (a reader's `now` away from the server clock).
    let past = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": now + 60_000})).await.unwrap();
    assert_eq!((past["count"].as_i64(), &past["visitors"][0]["profile"]), (Some(1), &profile));

    // The profile, by the identified id or by its alias; counters over both.
    let by_u = fed.both(Some(&t), "getVisitorProfile", json!({"siteId": "loja", "visitorId": u})).await.unwrap();
    let by_alias = fed.both(Some(&t), "getVisitorProfile", json!({"siteId": "loja", "visitorId": ANON})).await.unwrap();
    assert_eq!(by_u, by_alias);
    assert_eq!(
        (
            by_u["sessions"].as_i64(),
            by_u["pageviews"].as_i64(),
            by_u["conversions"].as_i64(),
            by_u["revenueCents"].as_i64()
        ),
        (Some(2), Some(4), Some(0), Some(0))
    );
    assert_eq!(
        (by_u["identifiedAt"].as_i64(), by_u["firstSeenAt"].as_i64()),
        (Some(T0 + MINUTE), Some(T0 - 120 * MINUTE))
    );
    assert_eq!((by_u["lastSeenAt"].as_i64(), &by_u["attributes"]), (Some(T0 + 3 * MINUTE), &json!({})));
    // A reader only, on its granted sites.
    Fed::expect_err(
        fed.both(None, "getVisitorProfile", json!({"siteId": "loja", "visitorId": u})).await,
        401,
        "FEDERATION_UNAUTHENTICATED",
    );
    Fed::expect_err(
        fed.both(Some(&t), "getVisitorProfile", json!({"siteId": "outra", "visitorId": u})).await,
        403,
        "FEDERATION_SITE_DENIED",
    );
    let unknown =
        fed.both(Some(&t), "getVisitorProfile", json!({"siteId": "loja", "visitorId": "v_nobody00001"})).await;
    assert_eq!(unknown.unwrap(), Value::Null);

    // The journey of the alias is the person's: the identified id, three events.
    let j = fed
        .both(Some(&t), "visitorJourney", json!({"siteIds": ["loja"], "visitorId": ANON, "from": from, "to": to}))
        .await
        .unwrap();
    assert_eq!(j["visitorId"], json!(u));
    let paths: Vec<&str> = j["events"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, vec!["/antes", "/", "/conta", "/p/1"]);

    // One visitor in the rollups: the identified id took the alias's number.
    drain(app).await;
    let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
    assert_eq!((o["totals"]["visitors"].as_i64(), o["totals"]["pageviews"].as_i64()), (Some(1), Some(4)));

    // A public link: no profile functions, no profile on live rows.
    let p = public(&fed, &["loja"]);
    for (name, args) in [
        ("getVisitorProfile", json!({"siteId": "loja", "visitorId": u})),
        ("listPeople", json!({"siteId": "loja", "paginationOpts": page(10, Value::Null)})),
    ] {
        Fed::expect_err(fed.both(Some(&p), name, args).await, 403, "FEDERATION_PUBLIC_FORBIDDEN");
    }
    let pl = fed.both(Some(&p), "liveVisitors", json!({"siteIds": ["loja"], "now": now})).await.unwrap();
    assert!(pl["visitors"][0].get("profile").is_none(), "{pl}");
});

// rule: PPL-06
backend_test!(the_first_alias_wins, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let first = identify(app, "loja", json!({"externalId": "ana", "visitorId": ANON})).await.ok();
    assert_eq!(first["aliased"], true);
    let second = identify(app, "loja", json!({"externalId": "bia", "visitorId": ANON})).await.ok();
    assert_eq!((second["created"].as_bool(), second["aliased"].as_bool()), (Some(true), Some(false)));
    // The repeat of the first is still aliased.
    let repeat = identify(app, "loja", json!({"externalId": "ana", "visitorId": ANON})).await.ok();
    assert_eq!((repeat["created"].as_bool(), repeat["aliased"].as_bool()), (Some(false), Some(true)));
    let p = fed.both(Some(&t), "getVisitorProfile", json!({"siteId": "loja", "visitorId": ANON})).await.unwrap();
    assert_eq!(p["visitorId"], first["visitorId"]);
});

// rule: PPL-07
// rule: PPL-14
// rule: SES-01
backend_test!(bad_ids_and_cookieless_sites_carry_no_profile, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "semcookie", true).await;
    fed.grant(&["loja", "semcookie"], &[READ]).await;
    let t = reader(&fed);
    for bad in ["u_aaaaaaaaaaaaaaaaaaaaaa", "c_aaaaaaaaaaaaaaaaaaaaaa", "bad id!", "short"] {
        identify(app, "loja", json!({"externalId": "ana", "visitorId": bad})).await.err(400, "INVALID_ARGUMENT");
    }
    identify(app, "semcookie", json!({"externalId": "ana", "visitorId": ANON})).await.err(400, "INVALID_ARGUMENT");
    assert_eq!(app.count("web_profiles").await, 0);
    // Without a visitorId a cookieless site gets a profile, but its events never carry the id.
    let u = identify(app, "semcookie", json!({"externalId": "ana", "name": "Ana"})).await.ok()["visitorId"].clone();
    let answer = track(app, "semcookie", u.as_str().unwrap(), vec![pageview("1", "/")]).await;
    assert_eq!(answer["visitorId"], Value::Null);
    let (from, to) = day_range();
    let list = fed
        .both(
            Some(&t),
            "listSessions",
            json!({"siteId": "semcookie", "from": from, "to": to, "paginationOpts": page(5, Value::Null)}),
        )
        .await
        .unwrap();
    let row = &list["page"][0];
    assert!(row["visitorId"].as_str().unwrap().starts_with("c_"));
    assert_eq!(row["profile"], Value::Null);

    // A cookie site: the identified id carries its profile, until the site turns cookieless.
    let u = identify(app, "loja", json!({"externalId": "bia", "name": "Bia"})).await.ok()["visitorId"].clone();
    let s = track(app, "loja", u.as_str().unwrap(), vec![pageview("2", "/")]).await["sessionId"].clone();
    let args = json!({"siteId": "loja", "sessionId": s});
    assert_eq!(fed.both(Some(&t), "getSession", args.clone()).await.unwrap()["profile"]["name"], "Bia");
    let live = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": T0})).await.unwrap();
    assert_eq!(live["visitors"][0]["profile"]["name"], "Bia");
    app.patch("/v1/sites/loja", json!({"cookieless": true})).await.ok();
    assert_eq!(fed.both(Some(&t), "getSession", args).await.unwrap()["profile"], Value::Null);
    let live = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": T0 + 60_000})).await.unwrap();
    assert_eq!(live["visitors"][0]["profile"], Value::Null);
    // A u_ id another owner issued is stored as sent and carries no profile.
    site_of(app, "outra", "o2").await;
    fed.grant_for("conn_2", crate::federation::ORG, "o2", &["outra"], &[READ]).await.ok();
    let t2 = fed.key.sign(&with(claims(&[READ]), json!({"rastro_connection_id": "conn_2", "exp": T0 / 1000 + 86_400})));
    let s = track(app, "outra", u.as_str().unwrap(), vec![pageview("3", "/")]).await["sessionId"].clone();
    let got = fed.both(Some(&t2), "getSession", json!({"siteId": "outra", "sessionId": s})).await.unwrap();
    assert_eq!((&got["visitorId"], &got["profile"]), (&u, &Value::Null));
});

// rule: PPL-08
backend_test!(attributes_merge_and_stay_bounded, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let body = json!({"externalId": "ana", "name": "Ana", "email": "ANA@x.com",
        "attributes": {"plan": "pro", "seats": 3, "trial": true, "ratio": 0.5}});
    let u = identify(app, "loja", body).await.ok()["visitorId"].clone();
    let get = || fed.both(Some(&t), "getVisitorProfile", json!({"siteId": "loja", "visitorId": u}));
    assert_eq!(get().await.unwrap()["attributes"], json!({"plan": "pro", "seats": 3, "trial": true, "ratio": 0.5}));
    // Merge: null deletes a key; a given name replaces, null clears, absent keeps.
    identify(app, "loja", json!({"externalId": "ana", "name": null, "attributes": {"seats": null, "plan": "team"}}))
        .await
        .ok();
    let p = get().await.unwrap();
    assert_eq!(p["attributes"], json!({"plan": "team", "trial": true, "ratio": 0.5}));
    assert_eq!((&p["name"], p["email"].as_str()), (&Value::Null, Some("ana@x.com")));
    for bad in [
        json!({"k": {"nested": 1}}),
        json!({"k": [1]}),
        json!({"k": "v".repeat(257)}),
        json!({"bad key": 1}),
        json!({"": 1}),
        json!({"k".repeat(65): 1}),
    ] {
        identify(app, "loja", json!({"externalId": "ana", "attributes": bad})).await.err(400, "INVALID_ARGUMENT");
    }
    identify(app, "loja", json!({"externalId": "ana", "attributes": "x"})).await.err(400, "INVALID_ARGUMENT");
    identify(app, "loja", json!({"externalId": "ana", "name": "n".repeat(201)})).await.err(400, "INVALID_ARGUMENT");
    identify(app, "loja", json!({"externalId": "ana", "email": "e".repeat(255)})).await.err(400, "INVALID_ARGUMENT");
    // 47 more keys make 50; one more after the merge is refused and changes nothing.
    let more: serde_json::Map<String, Value> = (0..47).map(|i| (format!("k.{i}"), json!(i))).collect();
    identify(app, "loja", json!({"externalId": "ana", "attributes": more})).await.ok();
    assert_eq!(get().await.unwrap()["attributes"].as_object().unwrap().len(), 50);
    identify(app, "loja", json!({"externalId": "ana", "name": "X", "attributes": {"one_more": 1}}))
        .await
        .err(400, "INVALID_ARGUMENT");
    let p = get().await.unwrap();
    assert_eq!((p["attributes"].as_object().unwrap().len(), &p["name"]), (50, &Value::Null));
});

// rule: PPL-10
// rule: PPL-11
// rule: PAGE-05
// rule: PAGE-08
backend_test!(people_list_newest_first_and_search_names_and_emails, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let people = [
        ("p1", "José Silva", "jose@example.com"),
        ("p2", "Maria Souza", "maria@loja.com.br"),
        ("p3", "Ana Maria Braga", "ana@example.com"),
        ("p4", "Zoë Ñúñez", "zoe@example.com"),
    ];
    let mut ids = Vec::new();
    for (ext, name, email) in people {
        app.clock.advance(MINUTE);
        let a = identify(app, "loja", json!({"externalId": ext, "name": name, "email": email})).await.ok();
        ids.push(a["visitorId"].as_str().unwrap().to_string());
    }
    // Two at the same millisecond: visitorId desc breaks the tie.
    app.clock.advance(MINUTE);
    for ext in ["p5", "p6"] {
        let a = identify(app, "loja", json!({"externalId": ext})).await.ok();
        ids.push(a["visitorId"].as_str().unwrap().to_string());
    }
    let list = |filter: Value, cursor: Value, n: i64| {
        let mut args = json!({"siteId": "loja", "paginationOpts": page(n, cursor)});
        if !filter.is_null() {
            args["filter"] = filter;
        }
        fed.both(Some(&t), "listPeople", args)
    };
    let mut seen: Vec<String> = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let p = list(Value::Null, cursor.clone(), 4).await.unwrap();
        assert_eq!(p.as_object().unwrap().len(), 3, "exactly page, isDone, continueCursor");
        let rows = p["page"].as_array().unwrap();
        seen.extend(rows.iter().map(|r| r["visitorId"].as_str().unwrap().to_string()));
        if p["isDone"] == true {
            break;
        }
        assert_eq!(rows.len(), 4);
        cursor = p["continueCursor"].clone();
    }
    let mut tied = vec![ids[4].clone(), ids[5].clone()];
    tied.sort();
    tied.reverse();
    let want: Vec<String> = tied.into_iter().chain(ids[..4].iter().rev().cloned()).collect();
    assert_eq!(seen, want);
    let first = list(Value::Null, Value::Null, 1).await.unwrap();
    let row = &first["page"][0];
    for key in ["visitorId", "name", "email", "attributes", "identifiedAt", "lastSeenAt", "sessions"] {
        assert!(row.get(key).is_some(), "{key} in {row}");
    }
    for n in [0, 51] {
        Fed::expect_err(list(Value::Null, Value::Null, n).await, 400, "INVALID_ARGUMENT");
    }
    // The search: accents and case fold away, any word start of the name, the email's start.
    let names = |v: Value| -> Vec<String> {
        v["page"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap_or("").to_string()).collect()
    };
    for (search, want) in [
        ("jose", vec!["José Silva"]),
        ("JOSÉ", vec!["José Silva"]),
        ("silva", vec!["José Silva"]),
        ("jose si", vec!["José Silva"]),
        ("maria", vec!["Ana Maria Braga", "Maria Souza"]),
        ("nunez", vec!["Zoë Ñúñez"]),
        ("zoe@", vec!["Zoë Ñúñez"]),
        ("maria@loja", vec!["Maria Souza"]),
        ("ilva", vec![]),
        ("example.com", vec![]),
    ] {
        let got = names(list(json!({"search": search}), Value::Null, 50).await.unwrap());
        assert_eq!(got, want, "{search}");
    }
    // A search pages by cursors bound to it.
    let p = list(json!({"search": "maria"}), Value::Null, 1).await.unwrap();
    assert_eq!(p["isDone"], false);
    let next = list(json!({"search": "maria"}), p["continueCursor"].clone(), 1).await.unwrap();
    assert_eq!(names(next.clone()), vec!["Maria Souza"]);
    assert_eq!(next["isDone"], true);
    Fed::expect_err(list(json!({"search": "ana"}), p["continueCursor"].clone(), 1).await, 400, "INVALID_ARGUMENT");
    Fed::expect_err(list(json!({"search": ""}), Value::Null, 1).await, 400, "INVALID_ARGUMENT");
    Fed::expect_err(list(json!({"search": "x".repeat(101)}), Value::Null, 1).await, 400, "INVALID_ARGUMENT");
    Fed::expect_err(list(json!({"other": 1}), Value::Null, 1).await, 400, "INVALID_ARGUMENT");
});

// rule: PPL-12
// rule: PPL-13
// rule: STORE-05
backend_test!(forgetting_rewrites_the_ids_and_a_new_identify_starts_afresh, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "loja2", false).await;
    fed.grant(&["loja", "loja2"], &[READ]).await;
    let t = reader(&fed);
    let s = track(app, "loja", ANON, vec![pageview("1", "/")]).await["sessionId"].clone();
    let u =
        identify(app, "loja", json!({"externalId": "ana", "visitorId": ANON, "name": "Ana"})).await.ok()["visitorId"]
            .as_str()
            .unwrap()
            .to_string();
    app.clock.advance(MINUTE);
    track(app, "loja", &u, vec![pageview("2", "/conta")]).await;
    drain(app).await;
    let (from, to) = day_range();
    let visitors = async || {
        let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
        o["totals"]["visitors"].as_i64()
    };
    assert_eq!(visitors().await, Some(1));
    // A pageview still queued for the rollups when the person is forgotten.
    track(app, "loja", &u, vec![pageview("3", "/fim")]).await;
    assert!(queued(app).await.iter().any(|o| o.visitor_id == u));

    let removed = app.delete(&format!("/v1/sites/loja/analytics/people/{u}")).await.ok();
    assert_eq!(removed, json!({"removed": true}));
    let left = queued(app).await;
    assert_eq!(left.len(), 1);
    assert!(left.iter().all(|o| o.visitor_id != u && o.visitor_id != ANON), "the queued row's id is rewritten");
    for id in [u.as_str(), ANON] {
        let p = fed.both(Some(&t), "getVisitorProfile", json!({"siteId": "loja", "visitorId": id})).await.unwrap();
        assert_eq!(p, Value::Null, "{id}");
        let j = fed
            .both(Some(&t), "visitorJourney", json!({"siteIds": ["loja"], "visitorId": id, "from": from, "to": to}))
            .await
            .unwrap();
        assert_eq!(j["events"], json!([]), "{id}");
    }
    let session = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": s})).await.unwrap();
    let fresh = session["visitorId"].as_str().unwrap().to_string();
    assert!(fresh.starts_with("v_") && fresh != ANON, "{fresh}");
    assert_eq!((session["pageviews"].as_i64(), &session["profile"]), (Some(3), &Value::Null));
    assert_eq!(left[0].visitor_id, fresh, "the queued row joins the same fresh id");
    let j = fed
        .both(Some(&t), "visitorJourney", json!({"siteIds": ["loja"], "visitorId": fresh, "from": from, "to": to}))
        .await
        .unwrap();
    assert_eq!(j["events"].as_array().unwrap().len(), 3, "all the person's events under one fresh id");
    // Counts unchanged, now and after later events.
    drain(app).await;
    assert_eq!(visitors().await, Some(1));
    assert_eq!(app.count("web_aliases").await, 0);
    assert_eq!(app.delete(&format!("/v1/sites/loja/analytics/people/{u}")).await.ok(), json!({"removed": false}));
    app.delete("/v1/sites/nope/analytics/people/u_x").await.err(404, "NOT_FOUND");
    // No other site kept the person: the same externalId is a new person.
    let again = identify(app, "loja", json!({"externalId": "ana"})).await.ok();
    assert_ne!(again["visitorId"], json!(u));
    // With another site of the owner keeping a profile, the id stays.
    let u2 = again["visitorId"].clone();
    identify(app, "loja2", json!({"externalId": "ana"})).await.ok();
    app.delete(&format!("/v1/sites/loja/analytics/people/{}", u2.as_str().unwrap())).await.ok();
    assert_eq!(identify(app, "loja", json!({"externalId": "ana"})).await.ok()["visitorId"], u2);
});

fn profiles_off(backend: Backend) -> FedBuilder {
    analytics_builder(backend).env("RASTRO_FEDERATION_VISITOR_PROFILES", "false")
}

fn people_off(backend: Backend) -> FedBuilder {
    analytics_builder(backend).env("RASTRO_FEDERATION_PEOPLE", "false")
}

// rule: PPL-15
// rule: OVR-14
backend_test!(visitor_profiles_off_hides_the_function_and_the_profile_key, profiles_off, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let m = fed.both(None, "manifest", json!({})).await.unwrap();
    assert!(!m["functions"].as_array().unwrap().contains(&json!("getVisitorProfile")));
    assert!(m["functions"].as_array().unwrap().contains(&json!("listPeople")));
    assert!(!m["capabilities"].as_array().unwrap().contains(&json!("visitorProfiles")));
    let u = identify(app, "loja", json!({"externalId": "ana", "name": "Ana"})).await.ok()["visitorId"].clone();
    let args = json!({"siteId": "loja", "visitorId": u});
    Fed::expect_err(fed.both(Some(&t), "getVisitorProfile", args).await, 400, "FEDERATION_INVALID_SCOPE");
    let s = track(app, "loja", u.as_str().unwrap(), vec![pageview("1", "/")]).await["sessionId"].clone();
    let got = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": s})).await.unwrap();
    assert!(got.get("profile").is_none(), "{got}");
    let live = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": T0})).await.unwrap();
    assert!(live["visitors"][0].get("profile").is_none(), "{live}");
    let people = fed.both(Some(&t), "listPeople", json!({"siteId": "loja", "paginationOpts": page(5, Value::Null)}));
    assert_eq!(people.await.unwrap()["page"][0]["name"], "Ana");
});

// rule: PPL-15
backend_test!(people_off_hides_list_people, people_off, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let m = fed.both(None, "manifest", json!({})).await.unwrap();
    assert!(!m["functions"].as_array().unwrap().contains(&json!("listPeople")));
    assert!(!m["capabilities"].as_array().unwrap().contains(&json!("people")));
    assert!(m["capabilities"].as_array().unwrap().contains(&json!("visitorProfiles")));
    assert_eq!(m["limits"]["maxPeoplePage"], 50);
    let args = json!({"siteId": "loja", "paginationOpts": page(5, Value::Null)});
    Fed::expect_err(fed.both(Some(&t), "listPeople", args).await, 400, "FEDERATION_INVALID_SCOPE");
});

// rule: STORE-08
backend_test!(live_profiles_come_from_the_cache_until_an_identify, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    track(app, "loja", ANON, vec![pageview("1", "/")]).await;
    let cx = &app.state.cx;
    let args = || rastrod::service::analytics::reports::live::LiveArgs {
        site_ids: vec!["loja".into()],
        now: T0,
        limit: None,
        filters: Vec::new(),
    };
    let first = serde_json::to_value(
        rastrod::service::analytics::reports::live::live_visitors_with(cx, args(), false, 10, true).await.unwrap(),
    )
    .unwrap();
    assert_eq!(first["visitors"][0]["profile"], Value::Null);
    let before = cx.storage_stats().queries;
    for _ in 0..10 {
        assert_eq!(
            serde_json::to_value(
                rastrod::service::analytics::reports::live::live_visitors_with(cx, args(), false, 10, true)
                    .await
                    .unwrap()
            )
            .unwrap(),
            first
        );
    }
    assert_eq!(cx.storage_stats().queries, before, "ten polls, no database read");
    identify(app, "loja", json!({"externalId": "ana", "visitorId": ANON, "name": "Ana"})).await.ok();
    let after = serde_json::to_value(
        rastrod::service::analytics::reports::live::live_visitors_with(cx, args(), false, 10, true).await.unwrap(),
    )
    .unwrap();
    assert_eq!((after["count"].as_i64(), after["visitors"][0]["profile"]["name"].as_str()), (Some(1), Some("Ana")));
});

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

// rule: PPL-04
#[actix_web::test]
async fn no_external_id_leaves_the_real_binary() {
    use std::process::{Command, Stdio};

    use crate::common::{HOST_KEY, TestDb, free_port};

    let db = TestDb::sqlite();
    let dir = db.sqlite_path().unwrap().parent().unwrap().to_path_buf();
    let logs = crate::common::TempDir::new("rastrod_people_canary");
    let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() % 1_000_000_007;
    let canary = format!("CANARYexternal{n}x");
    let port = free_port();
    let key = rastrod::ids::secrets_key().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rastrod"))
        .arg("serve")
        .env("RASTRO_DATABASE_URL", &db.url)
        .env("RASTRO_HOST_API_KEY", HOST_KEY)
        .env("RASTRO_LISTEN", format!("127.0.0.1:{port}"))
        .env("RASTRO_LOG", "debug")
        .env("RASTRO_SECRETS_KEY", &key)
        .stdout(Stdio::from(std::fs::File::create(logs.0.join("stdout.log")).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(logs.0.join("stderr.log")).unwrap()))
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    crate::common::wait_healthy(&http, &base).await;
    let mut answers: Vec<String> = Vec::new();
    let mut call = async |method: &str, path: &str, body: String, expect: u16| {
        let req = http
            .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), format!("{base}{path}"))
            .bearer_auth(HOST_KEY)
            .header("content-type", "application/json")
            .body(body);
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        assert_eq!(status, expect, "{method} {path}: {text}");
        answers.push(text);
    };
    let site = json!({"siteId": "loja", "name": "Loja", "currency": "BRL", "timezone": "America/Sao_Paulo",
        "ownerId": "o1", "domains": [HOST]});
    call("POST", "/v1/sites", site.to_string(), 201).await;
    let path = "/v1/sites/loja/analytics/identify";
    let ok = json!({"externalId": canary, "visitorId": ANON, "name": "Ana"});
    call("POST", path, ok.to_string(), 201).await;
    call("POST", path, ok.to_string(), 200).await;
    // Refusals of every kind with the canary in the body.
    call("POST", path, json!({"externalId": canary, "attributes": {"k": [1]}}).to_string(), 400).await;
    call("POST", path, json!({"externalId": canary, "visitorId": "u_aaaaaaaaaaaa"}).to_string(), 400).await;
    call("POST", path, json!({"externalId": canary, "bogus": canary}).to_string(), 400).await;
    call("POST", path, json!({"externalId": [canary]}).to_string(), 400).await;
    call("POST", path, format!("{{\"externalId\": \"{canary}\""), 400).await;
    call("POST", "/v1/sites/nope/analytics/identify", ok.to_string(), 404).await;
    let metrics = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();

    let status = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success());
    let mut db_bytes = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().starts_with("rastrod.db") {
            db_bytes.push((entry.file_name(), std::fs::read(entry.path()).unwrap()));
        }
    }
    assert!(!db_bytes.is_empty());
    let log =
        [std::fs::read(logs.0.join("stdout.log")).unwrap(), std::fs::read(logs.0.join("stderr.log")).unwrap()].concat();
    let log_text = String::from_utf8_lossy(&log).to_string();
    assert!(log_text.contains("DEBUG"), "debug logging was on");
    for a in &answers {
        assert!(!a.contains(&canary), "the externalId in an answer: {a}");
    }
    assert!(!log_text.contains(&canary), "the externalId in the log");
    assert!(!metrics.contains(&canary), "the externalId in /metrics");
    for (name, bytes) in &db_bytes {
        assert!(!contains(bytes, &canary), "the externalId in {name:?}");
    }
    // What the identity map holds: HMAC-SHA256 under the HKDF-derived identity key.
    let k = rastrod::crypto::SecretsKey::from_base64(&rastrod::config::Secret::new(key)).unwrap();
    let hash = k.identity_hash("o1", &canary);
    assert!(db_bytes.iter().any(|(_, bytes)| contains(bytes, &hash)), "the identity map holds the HMAC");
}

// rule: PPL-10
// rule: PPL-11
// A search many profiles match walks the list instead of sorting its
// matches: the same pages either way.
backend_test!(a_search_many_profiles_match_pages_the_same_way, analytics_builder, |fed| {
    use rastrod::store::analytics::people::{self as store, ProfileRow, Search};
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    app.state
        .cx
        .write_plain(|c| {
            for i in 0..5_100i64 {
                let name = if i % 2 == 0 { format!("Ana {i}") } else { format!("Ana Maria {i}") };
                let p = ProfileRow {
                    site_id: "loja".into(),
                    visitor_id: format!("u_{i:022}"),
                    name: Some(name.clone()),
                    email: None,
                    attributes: "{}".into(),
                    identified_at: T0 + i / 3,
                    first_seen_at: T0,
                    last_seen_at: T0,
                };
                store::insert_profile(c, &p)?;
                let terms = rastrod::service::analytics::people::search::terms(Some(&name), None);
                store::set_terms(c, "loja", &p.visitor_id, &terms)?;
            }
            Ok(())
        })
        .await
        .unwrap();
    // "ana" matches every profile (past the walk's threshold), "ana m" half of them.
    for (search, matching) in [("ana", 5_100usize), ("ana m", 2_550)] {
        let (walk, sorted) = app
            .state
            .cx
            .read(move |c| {
                let walk = store::people_page(c, "loja", Search::Walk(search), None, 120)?;
                let sorted = store::people_page(c, "loja", Search::FromTerms(search), None, 120)?;
                Ok((walk, sorted))
            })
            .await
            .unwrap();
        assert_eq!(walk, sorted, "{search}");
        assert_eq!(walk.len(), 120.min(matching));
        let args = json!({"siteId": "loja", "filter": {"search": search}, "paginationOpts": page(50, Value::Null)});
        let first = fed.both(Some(&t), "listPeople", args).await.unwrap();
        let ids: Vec<&str> =
            first["page"].as_array().unwrap().iter().map(|r| r["visitorId"].as_str().unwrap()).collect();
        let want: Vec<&str> = walk[..50].iter().map(|p| p.visitor_id.as_str()).collect();
        assert_eq!(ids, want, "{search}");
        let args = json!({"siteId": "loja", "filter": {"search": search},
            "paginationOpts": page(50, first["continueCursor"].clone())});
        let second = fed.both(Some(&t), "listPeople", args).await.unwrap();
        let ids: Vec<&str> =
            second["page"].as_array().unwrap().iter().map(|r| r["visitorId"].as_str().unwrap()).collect();
        let want: Vec<&str> = walk[50..100].iter().map(|p| p.visitor_id.as_str()).collect();
        assert_eq!(ids, want, "{search}: the second page");
    }
});

#[derive(Debug, diesel::QueryableByName)]
struct EventSession {
    #[diesel(sql_type = diesel::sql_types::Text)]
    path: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    name: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Text)]
    visitor_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    session_id: String,
}

/// The stored events of site `loja`, waited for (bounded, 15 s) until `done`.
async fn events_until(app: &TestApp, what: &str, done: impl Fn(&[EventSession]) -> bool) -> Vec<EventSession> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let rows = app
            .state
            .cx
            .read(|c| {
                use diesel::RunQueryDsl;
                Ok(diesel::sql_query(
                    "SELECT path, name, visitor_id, session_id FROM web_events WHERE site_id = 'loja' \
                     ORDER BY occurred_at, id",
                )
                .load::<EventSession>(c)?)
            })
            .await
            .unwrap();
        if done(&rows) {
            return rows;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}; stored: {rows:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

// rule: SES-19
// rule: PPL-05
// A login mid-visit in a real browser: the product's backend identifies the
// tracker's anonymous id, the page applies the answered id, and the visit
// goes on in the same session.
backend_test!(slow: a_login_in_a_real_browser_keeps_the_session, analytics_builder, |fed| {
    let app = &fed.app;
    let ua_switch = format!("--user-agent={}", crate::analytics::UA);
    let Some(b) =
        crate::browser::webdriver::Browser::start_with(&["--disable-blink-features=AutomationControlled", &ua_switch]).await
    else {
        return fed.finish().await;
    };
    let port = crate::browser::tracker::pages(app.base.clone()).await;
    app.post(
        "/v1/sites",
        json!({"siteId": "loja", "name": "Loja", "currency": "BRL", "timezone": "America/Sao_Paulo", "ownerId": "o1",
            "domains": [format!("localhost:{port}")]}),
    )
    .await
    .ok();
    b.goto(&format!("http://localhost:{port}/")).await;
    let rows = events_until(app, "the first pageview", |r| !r.is_empty()).await;
    let (anon, session) = (rows[0].visitor_id.clone(), rows[0].session_id.clone());
    assert!(anon.starts_with("v_"), "{anon}");
    let a = identify(app, "loja", json!({"externalId": "cliente-42", "visitorId": anon, "name": "Ana"})).await.ok();
    let u = a["visitorId"].as_str().unwrap().to_string();
    b.js(
        &format!("rastro.identify('{u}'); history.pushState({{}}, '', '/conta'); rastro.track('logged_in');"),
        json!([]),
    )
    .await;
    let rows =
        events_until(app, "the identified events", |r| r.iter().any(|e| e.name.as_deref() == Some("logged_in"))).await;
    assert_eq!(rows.iter().filter(|e| e.path == "/conta").count(), 2, "the pageview and the event: {rows:?}");
    for e in rows.iter().filter(|e| e.path == "/conta") {
        assert_eq!((e.visitor_id.as_str(), e.session_id.as_str()), (u.as_str(), session.as_str()), "{e:?}");
    }
    assert_eq!(b.js("return localStorage.getItem('rastro_vid');", json!([])).await, json!(u));
    b.quit().await;
});

/// Migration 29 reverted and applied again on the app's database: the rows'
/// hand-over marks made anew from the aliases and the sessions.
async fn remake_handed_over_marks(app: &TestApp) {
    crate::common::redo_migrations_through(app, "20261205000029").await;
}

// rule: SES-19
// rule: OVR-12
// The alias's row keeps naming the session identify handed to the person,
// and the alias's next event goes on in it: that row is no live visitor of
// its own (the person's is) until the alias starts another session. Read
// from the database (a `now` a minute from the server clock), where the
// count walks the rows' mark instead of the aliases.
backend_test!(an_alias_row_handed_over_stays_hidden_until_the_alias_starts_another_session, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    app.clock.set(T0);
    let s = track(app, "loja", ANON, vec![pageview("1", "/")]).await["sessionId"].clone();
    app.clock.advance(MINUTE);
    let a = identify(app, "loja", json!({"externalId": "user-1", "visitorId": ANON})).await.ok();
    let u = a["visitorId"].as_str().unwrap().to_string();
    let (f, t) = (&fed, &t);
    let live = |now: i64| async move {
        let v = f.both(Some(t), "liveVisitors", json!({"siteIds": ["loja"], "now": now})).await.unwrap();
        let ids: Vec<String> =
            v["visitors"].as_array().unwrap().iter().map(|r| r["visitorId"].as_str().unwrap().to_string()).collect();
        (v["count"].as_i64().unwrap(), ids)
    };
    assert_eq!(live(T0 + 2 * MINUTE).await, (1, vec![u.clone()]), "identify marks the alias's row");
    app.clock.advance(MINUTE);
    assert_eq!(track(app, "loja", ANON, vec![pageview("2", "/p/1")]).await["sessionId"], s);
    let now = T0 + 3 * MINUTE;
    assert_eq!(live(now).await, (1, vec![u.clone()]), "the person once, not its alias too");
    remake_handed_over_marks(app).await;
    assert_eq!(live(now).await, (1, vec![u.clone()]), "the migration marks the alias's row");
    // An hour on, the alias starts a session of its own: its row is shown
    // again, the person's is out of the window.
    app.clock.advance(60 * MINUTE);
    let s2 = track(app, "loja", ANON, vec![pageview("3", "/")]).await["sessionId"].clone();
    assert_ne!(s2, s);
    let now = T0 + 63 * MINUTE;
    assert_eq!(live(now).await, (1, vec![ANON.to_string()]));
    // Both in one window: the person goes on in the handed session, the alias in its own.
    app.clock.advance(MINUTE);
    track(app, "loja", &u, vec![pageview("4", "/conta")]).await;
    let (count, mut ids) = live(now + MINUTE).await;
    ids.sort();
    let mut both = vec![ANON.to_string(), u.clone()];
    both.sort();
    assert_eq!((count, ids), (2, both));
});
