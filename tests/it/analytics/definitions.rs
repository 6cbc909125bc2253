//! The configure scope's definitions over the federated API (CFG-01
//! to CFG-11): goals, funnels and affiliates, their caps, uniqueness and ids, and
//! the configure gate for read-only and public tokens.

use serde_json::{Value, json};

use crate::analytics::{analytics_builder, site};
use crate::backend_test;
use crate::common::T0;
use crate::federation::{CONFIGURE, Fed, PUBLIC, READ, claims, with};

/// A token with the configure scope, valid for a month of the test's clock.
pub fn configurer(fed: &Fed) -> String {
    fed.key.sign(&with(claims(&[READ, CONFIGURE]), json!({"exp": T0 / 1000 + 30 * 86_400})))
}

/// A write that is not idempotent (a create, a remove): once, over REST or
/// Convex (`convex`), expecting success.
pub async fn write(fed: &Fed, token: &str, name: &str, args: Value, convex: bool) -> Value {
    if convex {
        let a = fed.convex(Some(token), name, args).await;
        assert_eq!((a.status, a.body["status"].as_str()), (200, Some("success")), "{name}: {}", a.text);
        a.body["value"].clone()
    } else {
        let a = fed.rest(Some(token), name, args).await;
        assert_eq!(a.status, 200, "{name}: {}", a.text);
        a.body
    }
}

pub fn goal(key: &str, matcher: Value) -> Value {
    json!({"siteId": "loja", "key": key, "name": format!("Goal {key}"), "matcher": matcher})
}

pub fn path(p: &str) -> Value {
    json!({"kind": "pageview", "path": p})
}

pub fn event(n: &str) -> Value {
    json!({"kind": "event", "name": n})
}

// rule: CFG-01
backend_test!(configure_functions_need_the_scope_on_token_and_grant, analytics_builder, |fed| {
    site(&fed.app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let read_only = fed.token(&[READ]);
    let configure = configurer(&fed);
    let calls = [
        ("listGoals", json!({"siteId": "loja"})),
        ("upsertGoal", goal("signup", event("signup"))),
        ("removeGoal", json!({"siteId": "loja", "goalId": "g_000000000000000000000000"})),
        ("listFunnels", json!({"siteId": "loja"})),
        ("removeFunnel", json!({"siteId": "loja", "funnelId": "f_000000000000000000000000"})),
        ("listAffiliates", json!({"siteId": "loja"})),
        ("removeAffiliate", json!({"siteId": "loja", "affiliateId": "a_000000000000000000000000"})),
    ];
    for (name, args) in &calls {
        // Read-only token; then a configure token while the grant lacks the scope.
        Fed::expect_err(fed.both(Some(&read_only), name, args.clone()).await, 403, "FEDERATION_CONFIGURE_FORBIDDEN");
        Fed::expect_err(fed.both(Some(&configure), name, args.clone()).await, 403, "FEDERATION_CONFIGURE_FORBIDDEN");
    }
    fed.grant(&["loja"], &[READ, CONFIGURE, PUBLIC]).await;
    let public = fed.key.sign(&with(claims(&[PUBLIC]), json!({"rastro_site_ids": ["loja"]})));
    Fed::expect_err(
        fed.both(Some(&public), "upsertGoal", goal("a", event("a"))).await,
        403,
        "FEDERATION_PUBLIC_FORBIDDEN",
    );
    Fed::expect_err(
        fed.both(Some(&read_only), "upsertGoal", goal("a", event("a"))).await,
        403,
        "FEDERATION_CONFIGURE_FORBIDDEN",
    );
    let id = write(&fed, &configure, "upsertGoal", goal("signup", event("signup")), true).await;
    assert!(id.as_str().unwrap().starts_with("g_"), "{id}");
    let goals = fed.both(Some(&configure), "listGoals", json!({"siteId": "loja"})).await.unwrap();
    assert_eq!(goals[0]["goalId"], id);
    // A site outside the grant.
    Fed::expect_err(
        fed.both(Some(&configure), "listGoals", json!({"siteId": "outra"})).await,
        403,
        "FEDERATION_SITE_DENIED",
    );
});

// rule: CFG-04
// rule: CFG-05
// rule: CFG-06
// rule: CFG-07
// rule: CFG-11
backend_test!(goals_are_created_replaced_capped_and_unique, analytics_builder, |fed| {
    site(&fed.app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let t = configurer(&fed);
    let a = write(&fed, &t, "upsertGoal", goal("zeta", path("/obrigado")), false).await;
    let mut g = goal("alpha", event("signup"));
    g["valueCents"] = json!(1500);
    let b = write(&fed, &t, "upsertGoal", g, false).await;
    let list = fed.both(Some(&t), "listGoals", json!({"siteId": "loja"})).await.unwrap();
    let keys: Vec<&str> = list.as_array().unwrap().iter().map(|g| g["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["alpha", "zeta"], "by key");
    assert_eq!(list[0]["goalId"], b);
    assert_eq!(list[0]["matcher"], event("signup"));
    assert_eq!((list[0]["valueCents"].as_i64(), list[0]["active"].as_bool()), (Some(1500), Some(true)));
    assert_eq!(list[1]["valueCents"], Value::Null);

    // Replace by id: same id, new fields, createdAt kept.
    fed.app.clock.advance(1000);
    let mut r = goal("zeta", path("/obrigado/**"));
    r["goalId"] = a.clone();
    r["name"] = json!("Thanks");
    assert_eq!(fed.both(Some(&t), "upsertGoal", r).await.unwrap(), a);
    let list = fed.both(Some(&t), "listGoals", json!({"siteId": "loja"})).await.unwrap();
    assert_eq!(list[1]["name"], "Thanks");
    assert_eq!(list[1]["updatedAt"].as_i64().unwrap() - list[1]["createdAt"].as_i64().unwrap(), 1000);

    // A used key, an equal active matcher: CONFLICT; an inactive goal may share a matcher.
    Fed::expect_err(fed.both(Some(&t), "upsertGoal", goal("alpha", event("other"))).await, 409, "CONFLICT");
    Fed::expect_err(fed.both(Some(&t), "upsertGoal", goal("beta", event("signup"))).await, 409, "CONFLICT");
    let mut inactive = goal("beta", event("signup"));
    inactive["active"] = json!(false);
    write(&fed, &t, "upsertGoal", inactive, true).await;
    // Bad values.
    for bad in [
        json!({"siteId": "loja", "key": "Bad Key", "name": "x", "matcher": event("x")}),
        json!({"siteId": "loja", "key": "k", "name": "", "matcher": event("x")}),
        json!({"siteId": "loja", "key": "k", "name": "x", "matcher": path("no-slash")}),
        json!({"siteId": "loja", "key": "k", "name": "x", "matcher": {"kind": "click", "name": "x"}}),
        json!({"siteId": "loja", "key": "k", "name": "x", "matcher": event("x"), "valueCents": -1}),
        json!({"siteId": "loja", "key": "k", "name": "x", "matcher": event("x"), "valueCents": 10_000_000_000_001i64}),
        json!({"siteId": "loja", "key": "k", "name": "x", "matcher": event("x"), "extra": 1}),
    ] {
        Fed::expect_err(fed.both(Some(&t), "upsertGoal", bad).await, 400, "INVALID_ARGUMENT");
    }
    // Unknown ids: NOT_FOUND on an upsert, removed false on a remove.
    let mut unknown = goal("gamma", event("gamma"));
    unknown["goalId"] = json!("g_000000000000000000000000");
    Fed::expect_err(fed.both(Some(&t), "upsertGoal", unknown).await, 404, "NOT_FOUND");
    let removed =
        fed.both(Some(&t), "removeGoal", json!({"siteId": "loja", "goalId": "g_000000000000000000000000"})).await;
    assert_eq!(removed.unwrap(), json!({"removed": false}));
    assert_eq!(
        fed.rest(Some(&t), "removeGoal", json!({"siteId": "loja", "goalId": a})).await.body,
        json!({"removed": true})
    );
    // The key of a removed goal is free again.
    write(&fed, &t, "upsertGoal", goal("zeta", path("/z")), false).await;

    // 50 goals at most: the 51st is INVALID_ARGUMENT.
    let have = fed.both(Some(&t), "listGoals", json!({"siteId": "loja"})).await.unwrap().as_array().unwrap().len();
    for i in have..50 {
        fed.rest(Some(&t), "upsertGoal", goal(&format!("g{i:02}"), event(&format!("e{i}")))).await.ok();
    }
    Fed::expect_err(fed.both(Some(&t), "upsertGoal", goal("g99", event("e99"))).await, 400, "INVALID_ARGUMENT");
    assert_eq!(fed.both(Some(&t), "listGoals", json!({"siteId": "loja"})).await.unwrap().as_array().unwrap().len(), 50);
});

fn funnel(key: &str, steps: usize, window_ms: i64) -> Value {
    let steps: Vec<Value> =
        (0..steps).map(|i| json!({"label": format!("Step {i}"), "matcher": path(&format!("/s{i}"))})).collect();
    json!({"siteId": "loja", "key": key, "name": key, "steps": steps, "windowMs": window_ms})
}

// rule: CFG-05
// rule: CFG-07
// rule: CFG-08
backend_test!(funnels_need_two_to_ten_steps_and_a_bounded_window, analytics_builder, |fed| {
    site(&fed.app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let t = configurer(&fed);
    let id = write(&fed, &t, "upsertFunnel", funnel("checkout", 3, 3_600_000), false).await;
    assert!(id.as_str().unwrap().starts_with("f_"));
    let list = fed.both(Some(&t), "listFunnels", json!({"siteId": "loja"})).await.unwrap();
    assert_eq!(list[0]["funnelId"], id);
    assert_eq!(list[0]["steps"][2], json!({"label": "Step 2", "matcher": path("/s2")}));
    assert_eq!(list[0]["windowMs"], 3_600_000);
    for bad in [funnel("a", 1, 60_000), funnel("a", 11, 60_000), funnel("a", 2, 59_999), funnel("a", 2, 7_776_000_001)]
    {
        Fed::expect_err(fed.both(Some(&t), "upsertFunnel", bad).await, 400, "INVALID_ARGUMENT");
    }
    let mut long_label = funnel("a", 2, 60_000);
    long_label["steps"][0]["label"] = json!("x".repeat(101));
    Fed::expect_err(fed.both(Some(&t), "upsertFunnel", long_label).await, 400, "INVALID_ARGUMENT");
    // Bounds themselves are fine.
    write(&fed, &t, "upsertFunnel", funnel("ten", 10, 7_776_000_000), true).await;
    write(&fed, &t, "upsertFunnel", funnel("two", 2, 60_000), false).await;
    Fed::expect_err(fed.both(Some(&t), "upsertFunnel", funnel("checkout", 2, 60_000)).await, 409, "CONFLICT");
    let mut unknown = funnel("x", 2, 60_000);
    unknown["funnelId"] = json!("f_000000000000000000000000");
    Fed::expect_err(fed.both(Some(&t), "upsertFunnel", unknown).await, 404, "NOT_FOUND");
    let mut edit = funnel("checkout", 2, 120_000);
    edit["funnelId"] = id.clone();
    assert_eq!(fed.both(Some(&t), "upsertFunnel", edit).await.unwrap(), id);
    for i in 3..20 {
        fed.rest(Some(&t), "upsertFunnel", funnel(&format!("f{i:02}"), 2, 60_000)).await.ok();
    }
    Fed::expect_err(fed.both(Some(&t), "upsertFunnel", funnel("f99", 2, 60_000)).await, 400, "INVALID_ARGUMENT");
    assert_eq!(
        write(&fed, &t, "removeFunnel", json!({"siteId": "loja", "funnelId": id}), true).await,
        json!({"removed": true})
    );
    assert_eq!(
        fed.both(Some(&t), "removeFunnel", json!({"siteId": "loja", "funnelId": id})).await.unwrap(),
        json!({"removed": false})
    );
});

pub fn affiliate(slug: &str, bps: i64, days: i64) -> Value {
    json!({"siteId": "loja", "slug": slug, "name": format!("Affiliate {slug}"), "commissionBps": bps, "windowDays": days})
}

// rule: CFG-05
// rule: CFG-07
// rule: CFG-09
backend_test!(affiliates_have_unique_slugs_and_bounded_terms, analytics_builder, |fed| {
    site(&fed.app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let t = configurer(&fed);
    let gio = write(&fed, &t, "upsertAffiliate", affiliate("gio", 1000, 30), false).await;
    write(&fed, &t, "upsertAffiliate", affiliate("ana-2", 0, 1), true).await;
    let list = fed.both(Some(&t), "listAffiliates", json!({"siteId": "loja"})).await.unwrap();
    let slugs: Vec<&str> = list.as_array().unwrap().iter().map(|a| a["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["ana-2", "gio"], "by slug");
    assert_eq!((list[1]["affiliateId"].clone(), list[1]["commissionBps"].as_i64()), (gio.clone(), Some(1000)));
    Fed::expect_err(fed.both(Some(&t), "upsertAffiliate", affiliate("gio", 5, 5)).await, 409, "CONFLICT");
    for bad in [
        affiliate("-gio", 1, 1),
        affiliate("Gio", 1, 1),
        affiliate("x", 10_001, 1),
        affiliate("x", -1, 1),
        affiliate("x", 1, 0),
        affiliate("x", 1, 366),
    ] {
        Fed::expect_err(fed.both(Some(&t), "upsertAffiliate", bad).await, 400, "INVALID_ARGUMENT");
    }
    let mut edit = affiliate("giovana", 2500, 60);
    edit["affiliateId"] = gio.clone();
    assert_eq!(fed.both(Some(&t), "upsertAffiliate", edit).await.unwrap(), gio);
    for i in 2..100 {
        fed.rest(Some(&t), "upsertAffiliate", affiliate(&format!("a{i:03}"), 1, 1)).await.ok();
    }
    Fed::expect_err(fed.both(Some(&t), "upsertAffiliate", affiliate("a999", 1, 1)).await, 400, "INVALID_ARGUMENT");
    let mut unknown = affiliate("nobody", 1, 1);
    unknown["affiliateId"] = json!("a_000000000000000000000000");
    Fed::expect_err(fed.both(Some(&t), "upsertAffiliate", unknown).await, 404, "NOT_FOUND");
    let rm = json!({"siteId": "loja", "affiliateId": gio});
    assert_eq!(write(&fed, &t, "removeAffiliate", rm.clone(), false).await, json!({"removed": true}));
    assert_eq!(fed.both(Some(&t), "removeAffiliate", rm).await.unwrap(), json!({"removed": false}));
});

// rule: CFG-02
backend_test!(update_site_changes_only_its_four_fields, analytics_builder, |fed| {
    site(&fed.app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let t = configurer(&fed);
    let before = fed.both(Some(&t), "siteSettings", json!({"siteId": "loja"})).await.unwrap();
    for bad in
        [json!({"siteId": "loja", "name": "Nova", "currency": "USD"}), json!({"siteId": "loja", "cookieless": true})]
    {
        Fed::expect_err(fed.both(Some(&t), "updateSite", bad).await, 400, "INVALID_ARGUMENT");
    }
    assert_eq!(fed.both(Some(&t), "siteSettings", json!({"siteId": "loja"})).await.unwrap(), before, "nothing changed");
    let after = fed
        .both(
            Some(&t),
            "updateSite",
            json!({"siteId": "loja", "name": "Loja Nova", "domains": ["loja.example.com", "www.loja.example.com"],
                "timezone": "UTC", "routePatterns": ["/p/:id"]}),
        )
        .await
        .unwrap();
    assert_eq!(after["name"], "Loja Nova");
    assert_eq!(after["domains"], json!(["loja.example.com", "www.loja.example.com"]));
    assert_eq!((after["timezone"].as_str(), after["routePatterns"].clone()), (Some("UTC"), json!(["/p/:id"])));
    assert_eq!(
        (after["currency"].clone(), after["cookieless"].clone()),
        (before["currency"].clone(), before["cookieless"].clone())
    );
});
