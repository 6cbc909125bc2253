//! `liveVisitors`' count (OVR-12) against the visitor rows themselves, at
//! many instants, after every kind of write that moves a visitor row: a new
//! visitor, a visitor coming back, identify handing a row to its person
//! (SES-19), forgetting a person; and the rows shown, the latest of all the
//! sites asked. On PostgreSQL the count is read from the
//! counters its triggers keep per 10-second bucket (migration 31) and the
//! rows of the window's two edge buckets; before the counters' horizon,
//! from the rows alone. Either way it must be the rows' count exactly.

use serde_json::json;

use rastrod::clock::Clock;

use crate::analytics::{analytics_builder, drain, pageview, reader, site, track};
use crate::backend_test;
use crate::common::{T0, TestApp};
use crate::federation::{Fed, READ};

const SECOND: i64 = 1_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;
/// The live window (`RASTRO_LIVE_WINDOW`'s default).
const WINDOW: i64 = 5 * MINUTE;

/// The rows live at `now` in these sites, straight from the table, latest
/// first: `last_at` descending, then site and visitor by bytes.
async fn rows_live(app: &TestApp, sites: &'static [&'static str], now: i64) -> Vec<(String, String)> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        site_id: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        visitor_id: String,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        last_at: i64,
    }
    let ins = sites.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "SELECT site_id, visitor_id, last_at FROM web_visitors WHERE site_id IN ({ins}) \
         AND last_at >= {} AND last_at <= {now} AND NOT handed_over",
        now - WINDOW
    );
    let mut rows = app
        .state
        .cx
        .read(move |c| {
            use diesel::RunQueryDsl;
            Ok(diesel::sql_query(&sql).load::<Row>(c)?)
        })
        .await
        .unwrap();
    rows.sort_by(|a, b| {
        b.last_at.cmp(&a.last_at).then_with(|| (&a.site_id, &a.visitor_id).cmp(&(&b.site_id, &b.visitor_id)))
    });
    rows.into_iter().map(|r| (r.site_id, r.visitor_id)).collect()
}

/// `liveVisitors`' count equals the rows' at each of `nows` (instants far
/// from the clock, so the read is the database's, not the read cache's),
/// and the rows it shows are the latest of all the sites asked, ties at
/// the cut included in their order.
async fn same_counts(fed: &Fed, token: &str, nows: impl Iterator<Item = i64>) -> usize {
    let mut live = 0;
    for now in nows {
        for sites in [&["loja"][..], &["loja", "outra"][..]] {
            let a = fed.rest(Some(token), "liveVisitors", json!({"siteIds": sites, "now": now, "limit": 3})).await;
            assert_eq!(a.status, 200, "{}", a.text);
            let rows = rows_live(&fed.app, sites, now).await;
            assert_eq!(a.body["count"].as_i64(), Some(rows.len() as i64), "{sites:?} at {now}");
            let shown: Vec<(String, String)> = a.body["visitors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| (v["siteId"].as_str().unwrap().to_string(), v["visitorId"].as_str().unwrap().to_string()))
                .collect();
            assert_eq!(shown, rows[..rows.len().min(3)], "{sites:?} at {now}");
            live += rows.len();
        }
    }
    live
}

// rule: OVR-12
// rule: SES-19
backend_test!(the_live_count_is_the_rows_count_at_every_instant, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "outra", false).await;
    fed.grant(&["loja", "outra"], &[READ]).await;
    let t = reader(&fed);
    // 24 visitors one every 7 s over both sites, then the first six again
    // (their rows move to a later bucket).
    let host = |i: usize| if i.is_multiple_of(3) { "outra" } else { "loja" };
    for i in 0..24 {
        track(app, host(i), &format!("v_visitor{i:04}"), vec![pageview(&format!("a{i}"), "/")]).await;
        if i.is_multiple_of(4) {
            // A visitor of the other site at the same instant: a tie at the
            // cut of the latest rows, across the sites.
            let other = if host(i) == "loja" { "outra" } else { "loja" };
            track(app, other, &format!("v_visitor{:04}", 100 + i), vec![pageview(&format!("t{i}"), "/")]).await;
        }
        app.clock.advance(7 * SECOND);
    }
    for i in 0..6 {
        track(app, host(i), &format!("v_visitor{i:04}"), vec![pageview(&format!("b{i}"), "/x")]).await;
        app.clock.advance(3 * SECOND);
    }
    // Identify hands visitor 1's row to its person; visitor 2's person is then forgotten.
    let mut persons = Vec::new();
    for (visitor, person) in [("v_visitor0001", "cliente-1"), ("v_visitor0002", "cliente-2")] {
        let who = json!({"externalId": person, "visitorId": visitor});
        let a = app.post("/v1/sites/loja/analytics/identify", who).await;
        assert_eq!(a.status, 201, "{}", a.text);
        persons.push(a.body["visitorId"].as_str().unwrap().to_string());
    }
    let person = persons.pop().unwrap();
    track(app, "loja", &person, vec![pageview("c2", "/obrigado")]).await;
    assert_eq!(app.delete(&format!("/v1/sites/loja/analytics/people/{person}")).await.ok()["removed"], true);
    let end = app.clock.now_ms();
    // An hour on, the report actor drops no bucket the instants below need.
    app.clock.advance(HOUR);
    drain(app).await;
    // Every 2.5 s from before the first visit to past the last window's end.
    let nows = || (0..).map(|k| T0 - 10 * SECOND + k * 2_500).take_while(|n| *n <= end + WINDOW + 10 * SECOND);
    assert!(same_counts(&fed, &t, nows()).await > 0, "some instants see visitors");
    if app.state.cx.backend() == rastrod::db::Backend::Postgres {
        assert!(app.count("web_live_counts").await > 0, "PostgreSQL keeps its counters");
    }
    // Hours later the counters of then are gone: the rows answer, the same.
    app.clock.advance(3 * HOUR);
    drain(app).await;
    same_counts(&fed, &t, nows().step_by(7)).await;
});
