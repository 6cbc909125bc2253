//! meta.status's pixel part and `own`, asked with and without an owner.

use serde_json::json;

use crate::backend_test;
use crate::common::*;

async fn status(app: &TestApp, body: serde_json::Value) -> serde_json::Value {
    app.post("/v1/meta/status", body).await.ok()[0].clone()
}

// rule: STATUS-04
backend_test!(pixel_source_name_test_mode_and_own, fake_meta_builder, |app| {
    app.site("s1").await;
    app.put("/v1/meta/owners/agency/connection", json!({"accessToken": "rastro-fake-sample-token:0"})).await.ok();
    app.post("/v1/sites/s1/ad-accounts", json!({"ownerKey": "agency", "adAccountId": "act_1029384756"})).await.ok();

    // No pixel: disabled, nothing named, `own` false for any owner.
    let none = status(&app, json!({"siteIds": ["s1"], "ownerKey": "agency"})).await;
    assert_eq!(none["pixel"]["enabled"], false);
    assert_eq!(none["pixel"]["pixelId"], serde_json::Value::Null);
    assert_eq!(none["pixel"]["own"], false);

    app.put("/v1/sites/s1/pixel", json!({"ownerKey": "agency", "pixelId": "111222333444", "testEventCode": "TEST123"}))
        .await
        .ok();
    let mine = status(&app, json!({"siteIds": ["s1"], "ownerKey": "agency"})).await;
    let expected_name = rastrod::meta::fake::sample_pixels()
        .iter()
        .find(|p| p.id == "111222333444")
        .map(|p| p.name.to_string())
        .unwrap();
    assert_eq!(mine["pixel"]["source"], "connection");
    assert_eq!(mine["pixel"]["name"], expected_name.as_str());
    assert_eq!(mine["pixel"]["testMode"], true);
    assert_eq!(mine["pixel"]["own"], true);
    assert_eq!(mine["adAccounts"][0]["own"], true);
    assert_eq!(mine["pixel"]["lastError"], serde_json::Value::Null);

    // Another owner sees the same pixel as not its own; without an owner `own` is absent.
    let theirs = status(&app, json!({"siteIds": ["s1"], "ownerKey": "someone-else"})).await;
    assert_eq!(theirs["pixel"]["own"], false);
    assert_eq!(theirs["adAccounts"][0]["own"], false);
    let plain = status(&app, json!({"siteIds": ["s1"]})).await;
    assert!(plain["pixel"].get("own").is_none() && plain["adAccounts"][0].get("own").is_none());

    // A reconnect whose token no longer lists the pixel's account: PIXEL_NOT_GRANTED.
    app.put(
        "/v1/meta/owners/agency/connection",
        json!({"accessToken": "rastro-fake-sample-token:0+rastro-fake-accounts:act_2038475610"}),
    )
    .await
    .ok();
    let lost = status(&app, json!({"siteIds": ["s1"]})).await;
    assert_eq!(lost["pixel"]["lastError"], "PIXEL_NOT_GRANTED");
    assert_eq!(lost["adAccounts"][0]["lastError"], "AD_ACCOUNT_NOT_GRANTED");
    assert_eq!(lost["adAccounts"][0]["syncState"], "error");

    // A pixel with its own token says so.
    app.put("/v1/sites/s1/pixel", json!({"accessToken": "own-pixel-token", "pixelId": "111222333444"})).await.ok();
    let own_token = status(&app, json!({"siteIds": ["s1"]})).await;
    assert_eq!(own_token["pixel"]["source"], "token");
    assert_eq!(own_token["pixel"]["testMode"], false);
    let body = app.post("/v1/meta/status", json!({"siteIds": ["s1"]})).await.text;
    assert!(!body.contains("own-pixel-token") && !body.contains("rastro-fake-sample-token"), "never a token");
});
