//! An event's stored row (issue 25, "measure each index against the reads
//! that use it"): its id is unique where it is made and has no index of its
//! own (migration 35), so a pageview's later measures find the row by the
//! site and its pageview id. Migration 35 rebuilds SQLite's table; reverted
//! and applied again on a database with events, it keeps every row, and the
//! measures still land on the right one.

use serde_json::json;

use crate::analytics::{analytics_builder, pageview, site, track};
use crate::backend_test;
use crate::common::{T0, TestApp};

const MINUTE: i64 = 60_000;

/// The indexes of `web_events` whose only column is `id`.
async fn indexes_on_the_id_alone(app: &TestApp) -> i64 {
    app.state
        .cx
        .read(|c| {
            let sql = if c.is_sqlite() {
                "SELECT COUNT(*) AS n FROM pragma_index_list('web_events') l \
                 WHERE (SELECT group_concat(name) FROM pragma_index_info(l.name)) = 'id'"
            } else {
                "SELECT COUNT(*) AS n FROM pg_indexes WHERE schemaname = current_schema() \
                 AND tablename = 'web_events' AND indexdef LIKE '%(id)'"
            };
            let rows = rastrod::db::sql::RawQuery::new(sql).load::<rastrod::db::row::Count>(c)?;
            Ok(rows.first().map_or(0, |r| r.n))
        })
        .await
        .unwrap()
}

/// The stored engagement of each pageview id of `loja`, in their order.
async fn engaged(app: &TestApp, ids: &[&str]) -> Vec<Option<i64>> {
    let wanted: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    let rows = app.state.cx.read(move |c| Ok(rastrod::store::analytics::pageviews(c, "loja", &wanted)?)).await.unwrap();
    let by_id: std::collections::HashMap<_, _> =
        rows.into_iter().map(|r| (r.pageview_id.clone().unwrap_or_default(), r.engaged_ms)).collect();
    ids.iter().map(|id| by_id.get(*id).copied().flatten()).collect()
}

backend_test!(an_events_id_has_no_index_and_its_measures_find_it_by_pageview, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    app.clock.set(T0);
    let visitor = "v_visitor0001";
    track(app, "loja", visitor, vec![pageview("1", "/"), pageview("2", "/p/1")]).await;
    assert_eq!(indexes_on_the_id_alone(app).await, 0, "no index serves the id alone");
    let both = ["p_0000000000000001", "p_0000000000000002"];
    assert_eq!(engaged(app, &both).await, vec![None, None]);
    // Migration 35 undone (the id keyed again) and applied again: SQLite's
    // table rebuilt with its rows.
    crate::common::redo_migrations_through(app, "20261206000035").await;
    assert_eq!(indexes_on_the_id_alone(app).await, 0);
    app.clock.advance(MINUTE);
    let m = |id: &str, ms: i64| json!({"type": "engagement", "pageviewId": id, "engagedMs": ms});
    let a = track(app, "loja", visitor, vec![m(both[0], 4000)]).await;
    assert_eq!((a["accepted"].as_i64(), a["rejected"].as_i64()), (Some(1), Some(0)), "{a}");
    assert_eq!(engaged(app, &both).await, vec![Some(4000), None], "the first pageview's row, not the second's");
    track(app, "loja", visitor, vec![m(both[1], 7000), m(both[0], 9000)]).await;
    assert_eq!(engaged(app, &both).await, vec![Some(9000), Some(7000)]);
    let n = app
        .state
        .cx
        .read(|c| {
            let q = rastrod::db::sql::RawQuery::new("SELECT COUNT(*) AS n FROM web_events");
            Ok(q.load::<rastrod::db::row::Count>(c)?.first().map_or(0, |r| r.n))
        })
        .await
        .unwrap();
    assert_eq!(n, 2, "every event kept, none added by the measures");
});

/// The plan of the stored-pageview read for `ids` of `loja`, as text
/// (PostgreSQL's `EXPLAIN`, SQLite's `EXPLAIN QUERY PLAN` details).
async fn pageview_read_plan(app: &TestApp, ids: Vec<String>) -> String {
    #[derive(diesel::QueryableByName)]
    struct PgLine {
        #[diesel(sql_type = diesel::sql_types::Text)]
        #[diesel(column_name = "QUERY PLAN")]
        line: String,
    }
    #[derive(diesel::QueryableByName)]
    struct SqliteLine {
        #[diesel(sql_type = diesel::sql_types::Text)]
        detail: String,
    }
    app.state
        .cx
        .read(move |c| {
            let mut q = rastrod::store::analytics::pageviews_query(c, "loja", &ids);
            if c.is_sqlite() {
                q.sql.insert_str(0, "EXPLAIN QUERY PLAN ");
                Ok(q.load::<SqliteLine>(c)?.into_iter().map(|l| l.detail).collect::<Vec<_>>().join("\n"))
            } else {
                q.sql.insert_str(0, "EXPLAIN ");
                Ok(q.load::<PgLine>(c)?.into_iter().map(|l| l.line).collect::<Vec<_>>().join("\n"))
            }
        })
        .await
        .unwrap()
}

// rule: STORE-14
backend_test!(
    stored_pageviews_are_found_through_their_unique_index_whatever_the_statistics,
    analytics_builder,
    |fed| {
        use rastrod::service::effects::{Effects, Written};
        use rastrod::store::analytics::{EventRow, insert_events};
        let app = &fed.app;
        site(app, "loja", false).await;
        // A site's events written faster than statistics follow (never analyzed
        // here): PostgreSQL's planner then guesses the site holds a few rows, and
        // with an `IN` list it scanned all of them through the index by time.
        let rows: Vec<EventRow> = (0..5_000i64)
            .map(|i| EventRow {
                id: format!("e_{i:024}"),
                site_id: "loja".into(),
                session_id: format!("s_{:024}", i / 5),
                visitor_id: format!("v_{:020}", i / 5),
                kind: "pageview".into(),
                name: None,
                path: "/".into(),
                route: "/".into(),
                occurred_at: T0 + i,
                pageview_id: Some(format!("p_{i:016}")),
                properties: None,
                engaged_ms: Some(i),
                lcp: None,
                inp: None,
                cls: None,
                fcp: None,
                ttfb: None,
            })
            .collect();
        app.state.cx.write(move |c| Ok(Written::new(insert_events(c, &rows)?, Effects::quiet()))).await.unwrap();
        let ids: Vec<String> = (100..150i64).map(|i| format!("p_{i:016}")).collect();
        let plan = pageview_read_plan(app, ids.clone()).await;
        assert!(plan.contains("web_events_pageview"), "each id probes the unique index: {plan}");
        assert!(!plan.contains("web_events_site_time"), "never the site's events by time: {plan}");
        // And the read answers exactly the rows named.
        let found =
            app.state.cx.read(move |c| Ok(rastrod::store::analytics::pageviews(c, "loja", &ids)?)).await.unwrap();
        let mut engaged: Vec<i64> = found.iter().filter_map(|r| r.engaged_ms).collect();
        engaged.sort();
        assert_eq!(engaged, (100..150).collect::<Vec<i64>>());
    }
);
