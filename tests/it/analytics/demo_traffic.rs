//! The demo's live traffic (`rastrod demo`'s generator): its rounds go
//! through the tracker's ingestion and keep a few visitors live on each demo
//! site, on the manual clock (the tests call its `step`, never its timer).

use rastrod::demo::analytics::PATHS;
use rastrod::demo::traffic::{self, TICK_MS};
use serde_json::{Value, json};

use crate::backend_test;
use crate::common::{T0, TestApp};

async fn live(app: &TestApp, site: &str) -> Value {
    let args = json!({"siteIds": [site], "now": app.state.now(), "limit": 100});
    app.post("/v1/analytics/liveVisitors", args).await.ok()
}

// rule: FAKE-09
backend_test!(the_demo_traffic_keeps_a_few_visitors_live_on_each_site, |app| {
    rastrod::demo::sites(&app.state.cx, T0).await.unwrap();
    let first = (T0 / TICK_MS) as u64;
    // The generator's first round, then a plain one.
    assert!(traffic::first_step(&app.state.cx, first).await.unwrap() > 0);
    app.clock.advance(TICK_MS);
    assert!(traffic::step(&app.state.cx, first + 1).await.unwrap() > 0);
    app.clock.advance(TICK_MS);
    for site in ["loja-x", "pet-mania"] {
        let l = live(&app, site).await;
        let count = l["count"].as_i64().unwrap();
        assert!((1..=6).contains(&count), "{site}: {l}");
        for v in l["visitors"].as_array().unwrap() {
            assert!(PATHS.contains(&v["currentPath"].as_str().unwrap()), "{v}");
            assert!(v["pageviews"].as_i64().unwrap() >= 1);
        }
    }
    // Ten minutes on: visitors came and went, three to six live at every round.
    for tick in first + 2..first + 42 {
        traffic::step(&app.state.cx, tick).await.unwrap();
        app.clock.advance(TICK_MS);
        if tick >= first + traffic::PERIOD {
            for site in ["loja-x", "pet-mania"] {
                let count = live(&app, site).await["count"].as_i64().unwrap();
                assert!((3..=6).contains(&count), "{site} at tick {tick}: {count}");
            }
        }
    }
    // The cookieless site's visitors are told apart by their (documentation) addresses.
    let pet = live(&app, "pet-mania").await;
    assert!(pet["visitors"].as_array().unwrap().iter().all(|v| v["visitorId"].as_str().unwrap().starts_with("c_")));
    let loja = live(&app, "loja-x").await;
    assert!(
        loja["visitors"].as_array().unwrap().iter().all(|v| v["visitorId"].as_str().unwrap().starts_with("v_live_"))
    );
});
