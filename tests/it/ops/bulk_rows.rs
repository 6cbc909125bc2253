//! Multi-row writes (issue 25): every row and value written as given and in
//! its order, with one statement per table on PostgreSQL (an array bound per
//! column) and a statement per chunk of binds on SQLite.

use rastrod::db::Backend;
use rastrod::service::effects::{Effects, Written};
use rastrod::store::analytics::goals::{SessionGoalRow, insert_session_goals};
use rastrod::store::analytics::{EventRow, insert_events};

use crate::backend_test;
use crate::common::TestApp;

const ROWS: i64 = 2_000;

fn event(site: &str, i: i64) -> EventRow {
    EventRow {
        id: format!("e_{site}{i:06}"),
        site_id: site.into(),
        session_id: format!("s_{site}{}", i % 7),
        visitor_id: "v_bulk".into(),
        kind: if i % 5 == 0 { "event" } else { "pageview" }.into(),
        // Optional columns with values and without, mixed within the column.
        name: (i % 5 == 0).then(|| format!("n{i}")),
        path: format!("/p/{}", i % 11),
        route: "/p/:n".into(),
        occurred_at: 1_000 + i,
        pageview_id: (i % 5 != 0).then(|| format!("pv{i}")),
        properties: (i % 3 == 0).then(|| format!(r#"{{"i":{i},"text":"ção 'quoted' ?"}}"#)),
        engaged_ms: (i % 2 == 0).then_some(i * 10),
        lcp: None,
        inp: Some(i),
        cls: (i == 0).then_some(0),
        fcp: None,
        ttfb: Some(-i),
    }
}

/// Writes `n` events of `site` in one write: how many rows, and how many
/// statements the database ran meanwhile.
async fn insert(app: &TestApp, site: &'static str, n: i64) -> (usize, u64) {
    let rows: Vec<EventRow> = (0..n).map(|i| event(site, i)).collect();
    let before = app.state.cx.storage_stats().queries;
    let written =
        app.state.cx.write(move |c| Ok(Written::new(insert_events(c, &rows)?, Effects::quiet()))).await.unwrap();
    (written, app.state.cx.storage_stats().queries - before)
}

// rule: STORE-10
backend_test!(a_multi_row_write_keeps_every_value_in_order, |app| {
    // Each writer connection's first write runs its set-up statements too.
    for site in ["warm1", "warm2", "warm3"] {
        insert(&app, site, 1).await;
    }
    // The daemon's actors run statements of their own meanwhile, which can
    // only add to a count: the fewest of three one-row writes is the cost of
    // one row.
    let mut one = u64::MAX;
    for site in ["one1", "one2", "one3"] {
        one = one.min(insert(&app, site, 1).await.1);
    }
    let (written, many) = insert(&app, "bulk", ROWS).await;
    assert_eq!(written, ROWS as usize);
    // 2,000 rows of 17 columns are 36 chunks of SQLite's 960 binds; on
    // PostgreSQL one statement, as for one row.
    match app.state.cx.backend() {
        Backend::Postgres => assert!(many <= one + 1, "one statement for every row: {many} against {one} for one row"),
        Backend::Sqlite => assert!(many >= one + 35, "a statement per chunk: {many} against {one} for one row"),
    }

    let stored: Vec<String> = app
        .state
        .cx
        .read(|c| {
            let mut q = rastrod::db::row::select::<EventRow>("WHERE site_id = ? ORDER BY id");
            q.text("bulk");
            Ok(q.load::<EventRow>(c)?)
        })
        .await
        .unwrap()
        .iter()
        .map(|r| format!("{r:?}"))
        .collect();
    let want: Vec<String> = (0..ROWS).map(|i| format!("{:?}", event("bulk", i))).collect();
    assert_eq!(stored.len(), want.len());
    assert_eq!(stored, want, "every value as written");

    // The rows go in their order: of two rows with one key, the first one
    // stays (`ON CONFLICT DO NOTHING`).
    let kept = app
        .state
        .cx
        .write(|c| {
            let goals: Vec<String> = (0..600).map(|g| format!("g{g}")).collect();
            let rows: Vec<SessionGoalRow<'_>> = goals
                .iter()
                .enumerate()
                .flat_map(|(i, g)| {
                    let row =
                        |started_at| SessionGoalRow { session_id: "s_bulk", goal_id: g, site_id: "bulk", started_at };
                    [row(i as i64), row(-1)]
                })
                .collect();
            Ok(Written::new(insert_session_goals(c, &rows)?, Effects::quiet()))
        })
        .await
        .unwrap();
    assert_eq!(kept, 600, "each key once");
    let starts: Vec<i64> = app
        .state
        .cx
        .read(|c| {
            let mut q = rastrod::db::row::select::<SessionGoalRow<'static>>("WHERE session_id = ? ORDER BY started_at");
            q.text("s_bulk");
            Ok(q.load::<Starts>(c)?.into_iter().map(|s| s.started_at).collect())
        })
        .await
        .unwrap();
    assert_eq!(starts, (0..600).collect::<Vec<i64>>(), "the first row of each key won");

    // Nothing to write is no statement at all.
    let (none, used) = insert(&app, "none", 0).await;
    assert_eq!(none, 0);
    assert!(used < one, "an empty write binds nothing: {used} against {one}");
});

#[derive(diesel::QueryableByName)]
struct Starts {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    started_at: i64,
}

// rule: STORE-10
backend_test!(a_many_row_write_that_breaks_a_key_writes_none_of_its_rows, |app| {
    // Past `COPY_FROM_ROWS`, so PostgreSQL takes the rows by `COPY`: a
    // pageview id met twice fails the whole write, as an `INSERT` does.
    let n = rastrod::db::row::COPY_FROM_ROWS as i64 * 2;
    let mut rows: Vec<EventRow> = (0..n).map(|i| event("dup", i)).collect();
    let again = rows[1].clone();
    rows.push(EventRow { id: "e_dup_again".into(), ..again });
    let failed = app.state.cx.write(move |c| Ok(Written::new(insert_events(c, &rows)?, Effects::quiet()))).await;
    assert!(failed.is_err(), "a repeated (site, pageview) key is refused");
    let (written, _) = insert(&app, "dup2", n).await;
    assert_eq!(written, n as usize, "the next write of as many rows goes through");
    let stored = |site: &'static str| {
        app.state.cx.read(move |c| {
            let mut q = rastrod::db::sql::RawQuery::new("SELECT COUNT(*) AS n FROM web_events WHERE site_id = ?");
            q.text(site);
            Ok(q.load::<rastrod::db::row::Count>(c)?[0].n)
        })
    };
    assert_eq!(stored("dup").await.unwrap(), 0, "nothing of the refused write stays");
    assert_eq!(stored("dup2").await.unwrap(), n);
});
