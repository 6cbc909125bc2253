//! The tracker checks a batch against its process's copy of the site (issue
//! 25: no read per request), and the write reads the site again: a change
//! made by another process on the same database binds what lands at once,
//! the copy's own checks follow within `RASTRO_READ_CACHE_TTL`, and a change
//! made through this process binds the copy at once too.

use serde_json::json;

use crate::analytics::{HOST, analytics_builder, drain, reader, site, track_as};
use crate::backend_test;
use crate::common::{DAY, T0};
use crate::federation::READ;
use rastrod::service::analytics::settings;
use rastrod::service::sites::UpdateSite;

const NEW_HOST: &str = "nova.example.com";

/// A one-pageview batch of `visitor` on `host`, sent from a page of `origin`.
async fn send(
    app: &crate::common::TestApp,
    visitor: &str,
    id: &str,
    host: &str,
    path: &str,
    origin: &str,
) -> (u64, u64) {
    let body = json!({"siteId": "loja", "visitorId": visitor, "events": [
        {"type": "pageview", "pageviewId": format!("p_{id:0>16}"), "url": format!("https://{host}{path}")}]});
    let origin = format!("https://{origin}");
    let a = track_as(app, &body, &[("user-agent", crate::analytics::UA), ("origin", &origin)]).await;
    assert_eq!(a.status, 200, "{}", a.text);
    (a.body["accepted"].as_u64().unwrap(), a.body["rejected"].as_u64().unwrap())
}

// rule: TRK-17
// rule: TRK-20
// rule: ROUTE-03
// rule: STORE-10
backend_test!(
    another_process_changing_the_site_binds_the_write_at_once_and_the_checks_within_the_ttl,
    analytics_builder,
    |fed| {
        let app = &fed.app;
        site(app, "loja", false).await;
        fed.grant(&["loja"], &[READ]).await;
        // The first batch fills this process's copy of the site.
        assert_eq!(send(app, "v_visitor0001", "1", HOST, "/", HOST).await, (1, 0));
        // Another process on the same database (a handle of its own, which moves
        // nothing in this one) groups `/p/:id`.
        let other = rastrod::db::Db::open(&app.db.url, 1, 16, 16).unwrap();
        let change = |input: UpdateSite| {
            let other = other.clone();
            async move { other.write(move |c| settings::update(c, T0, "loja", input).map(|_| ())).await.unwrap() }
        };
        change(UpdateSite { route_patterns: Some(vec!["/p/:id".into()]), ..UpdateSite::default() }).await;
        // Within the TTL the copy is still the old site, but the write groups by the new patterns.
        assert_eq!(send(app, "v_visitor0002", "2", HOST, "/p/7", HOST).await, (1, 0));
        // Then it moves the site to a new host: a page of the old one passes the
        // copy's Origin check, and the write's domain check refuses its event.
        change(UpdateSite { domains: Some(vec![NEW_HOST.into()]), ..UpdateSite::default() }).await;
        assert_eq!(send(app, "v_visitor0003", "3", HOST, "/", HOST).await, (0, 1), "the write reads the new domains");
        // The copy's own checks follow once the TTL has passed.
        assert_eq!(send(app, "v_visitor0004", "4", NEW_HOST, "/", NEW_HOST).await, (0, 1), "the copy, within its TTL");
        app.clock.advance(2_001);
        assert_eq!(send(app, "v_visitor0005", "5", NEW_HOST, "/", NEW_HOST).await, (1, 0), "a new copy after the TTL");
        // A change made through this process binds its copy at once (no clock move).
        app.patch("/v1/sites/loja", json!({"domains": [HOST]})).await.ok();
        assert_eq!(send(app, "v_visitor0006", "6", HOST, "/", HOST).await, (1, 0), "this process's own change");
        assert_eq!(send(app, "v_visitor0007", "7", NEW_HOST, "/", NEW_HOST).await, (0, 1));
        drain(app).await;
        let t = reader(&fed);
        let (from, to) = (T0 - T0.rem_euclid(DAY), T0 - T0.rem_euclid(DAY) + DAY - 1);
        let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
        let mut pages: Vec<(String, i64)> = o["pages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["route"].as_str().unwrap().to_string(), p["pageviews"].as_i64().unwrap()))
            .collect();
        pages.sort();
        assert_eq!(pages, vec![("/".to_string(), 3), ("/p/:id".to_string(), 1)], "{o}");
    }
);
