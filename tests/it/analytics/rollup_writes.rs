//! A rollup batch's writes (issue 25): the counters, breakdowns and goal
//! counters of every key go in one statement per table, and the visitor
//! sets in a few (the absent ones inserted, every one read row-locked, the
//! grown ones written back), so a batch over many pages is not a statement
//! (on PostgreSQL a round trip) per key. The sets stay exact: a set stored
//! by an earlier batch is united with the new visitors, not replaced.

use roaring::RoaringBitmap;

use crate::analytics::{analytics_builder, drain, pageview, site, track};
use crate::backend_test;
use crate::common::{T0, TestApp};

const PAGES: usize = 40;

/// One pageview from each of `PAGES` new visitors, each on a page of its own.
async fn round(app: &TestApp, tag: &str) {
    for i in 0..PAGES {
        let visitor = format!("v_{tag}{i:08}");
        track(app, "loja", &visitor, vec![pageview(&format!("{tag}{i}"), &format!("/p/{i}"))]).await;
    }
}

/// Applies the queued events; answers how many, and the statements the database ran meanwhile.
async fn drain_counted(app: &TestApp) -> (usize, u64) {
    let before = app.state.cx.storage_stats().queries;
    let applied = drain(app).await;
    (applied, app.state.cx.storage_stats().queries - before)
}

/// Members of the site's stored visitor sets of `tier` and dimension `dim`, per key.
async fn set_sizes(app: &TestApp, tier: &'static str, dim: &'static str) -> Vec<(String, u64)> {
    let rows = app
        .state
        .cx
        .read(move |c| {
            let mut q = rastrod::db::sql::RawQuery::new(
                "SELECT key, bits FROM web_visitor_sets WHERE site_id = ? AND tier = ? AND dim = ? ORDER BY key",
            );
            q.text("loja").text(tier).text(dim);
            Ok(q.load::<KeyBits>(c)?)
        })
        .await
        .unwrap();
    rows.into_iter().map(|r| (r.key, RoaringBitmap::deserialize_from(&r.bits[..]).unwrap().len())).collect()
}

#[derive(diesel::QueryableByName)]
struct KeyBits {
    #[diesel(sql_type = diesel::sql_types::Text)]
    key: String,
    #[diesel(sql_type = diesel::sql_types::Binary)]
    bits: Vec<u8>,
}

// rule: STORE-04
backend_test!(a_rollup_batch_writes_many_keys_with_a_few_statements, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    app.clock.set(T0);
    // 40 pages: in each of three tiers a breakdown and a visitor set per
    // page, beside the sessions' breakdowns and the site's whole sets; a
    // statement per key would be several hundred.
    round(app, "a").await;
    let (applied, first) = drain_counted(app).await;
    assert_eq!(applied, PAGES);
    // The same keys again, now stored: each set is united with new visitors.
    round(app, "b").await;
    let (applied, second) = drain_counted(app).await;
    assert_eq!(applied, PAGES);
    for (what, statements) in [("new keys", first), ("stored keys", second)] {
        assert!(statements <= 40, "{what}: {statements} statements for a batch over {PAGES} pages");
    }
    let whole = set_sizes(app, "d", "").await;
    assert_eq!(whole, vec![(String::new(), 2 * PAGES as u64)], "the day's visitors, both rounds");
    let pages = set_sizes(app, "d", "page").await;
    assert_eq!(pages.len(), PAGES);
    assert!(pages.iter().all(|(_, n)| *n == 2), "each page's two visitors: {pages:?}");
});
