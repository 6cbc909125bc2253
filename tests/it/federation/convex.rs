//! The real client: the `convex` npm package's `ConvexHttpClient`, with
//! `setAuth(<JWT>)`, against a running rastrod (`tests/convex/client.mjs`).
//! `.ci/run` installs the package (`npm ci --prefix tests/convex`); without it
//! (or without Node.js) the test says it skipped (or fails: `skip_or_fail`).
//! It is in the slow tier (`slow_tests!`).

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::*;
use crate::federation::{CONFIGURE, READ, claims, fed_builder, sites, with};

// rule: FED-16
// rule: FED-02
async fn the_convex_npm_client_calls_the_federated_api() {
    slow_tier("runs the Convex client");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/convex");
    if !dir.join("node_modules/convex/package.json").exists() {
        skip_or_fail(
            "the convex npm package (tests/convex/node_modules/convex) is not installed",
            "npm ci --prefix tests/convex --ignore-scripts",
        );
        return;
    }
    if Command::new("node").arg("--version").output().is_err() {
        skip_or_fail("node, which runs the Convex client, is not installed", "apt-get install nodejs npm");
        return;
    }
    let fed = fed_builder(Backend::Sqlite).start().await.unwrap();
    sites(&fed).await;
    fed.grant(&["s1", "s2"], &[CONFIGURE]).await;
    fed.app.put("/v1/sites/s1/pipeline", json!({"columns": [{"key": "agendado", "name": "Agendado"}]})).await.ok();
    fed.app.lead("s1", "k1", T0 - 3_600_000, json!({"adId": "301", "campaignId": "101"})).await.ok();
    // Two visits of the day, imported, and applied to the rollups.
    let lines: Vec<Value> = (0..2)
        .map(|i| {
            json!({"type": "pageview", "occurredAt": T0 - 1_000 + i, "visitorId": format!("v_visitor000{i}"),
            "pageviewId": format!("p_{i:0>16}"), "path": "/"})
        })
        .collect();
    assert_eq!(crate::analytics::import(&fed.app, "s1", "convex", &lines).await.status, 201);
    crate::analytics::drain(&fed.app).await;
    let admin = fed.token(&[READ, CONFIGURE]);
    let reader = fed.key.sign(&with(claims(&[READ]), json!({"sub": "reader"})));
    let (from, to) = (T0 - DAY, T0);
    let args = [fed.app.base.clone(), admin, reader, "s1".into(), "s3".into(), from.to_string(), to.to_string()];
    let script = dir.join("client.mjs");
    let output = tokio::task::spawn_blocking(move || Command::new("node").arg(script).args(args).output())
        .await
        .unwrap()
        .expect("running node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "node failed: {stderr}\n{stdout}");
    let out: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("not JSON: {stdout}"));

    assert_eq!(
        out["manifest"],
        serde_json::to_value(rastrod::service::api::manifest::manifest(&fed.app.state.cx)).unwrap()
    );
    assert_eq!(out["leadsReport"], fed.app.report(&["s1"], from, to).await);
    assert_eq!(out["leadsReport"]["totals"]["leads"], 1);
    assert_eq!(out["updateSite"]["name"], "Loja pelo Convex");
    assert_eq!(fed.app.get("/v1/sites/s1").await.ok()["name"], "Loja pelo Convex");
    assert_eq!(out["setMetaEventMap"]["columns"][0]["event"], "Schedule");
    assert_eq!(out["metaConnection"], Value::Null);
    if out["manifest"]["functions"].as_array().unwrap().iter().any(|f| f == "metaStatus") {
        assert!(out["metaStatus"].is_array(), "{}", out["metaStatus"]);
    }
    assert_eq!(out["readerSites"].as_array().unwrap().len(), 2);
    // rule: MAN-04
    let day = T0 - T0.rem_euclid(DAY);
    let rest = fed
        .rest(Some(&fed.token(&[READ])), "overview", json!({"siteIds": ["s1"], "from": day, "to": day + DAY - 1}))
        .await;
    assert_eq!(out["overview"], rest.body, "the Convex client reads the REST answer");
    assert_eq!(out["overview"]["totals"]["sessions"], 2);
    let (first, second) = (&out["sessionsFirst"], &out["sessionsSecond"]);
    assert_eq!((first["page"].as_array().map(Vec::len), first["isDone"].as_bool()), (Some(1), Some(false)));
    assert_eq!((second["page"].as_array().map(Vec::len), second["isDone"].as_bool()), (Some(1), Some(true)));
    assert_ne!(first["page"][0]["sessionId"], second["page"][0]["sessionId"]);
    for (case, code) in [
        ("unauthenticated", "FEDERATION_UNAUTHENTICATED"),
        ("siteDenied", "FEDERATION_SITE_DENIED"),
        ("invalidScope", "FEDERATION_INVALID_SCOPE"),
        ("wrongKind", "INVALID_ARGUMENT"),
        ("configureForbidden", "FEDERATION_CONFIGURE_FORBIDDEN"),
    ] {
        assert_eq!(out[case]["convexError"], true, "{case}: {}", out[case]);
        assert_eq!(out[case]["code"], code, "{case}: {}", out[case]);
    }
    fed.finish().await;
}

crate::slow_tests!(the_convex_npm_client_calls_the_federated_api);
