//! The rollup outbox in packs (issue 25): each write leaves one row per site
//! holding its events' rollup rows, applied and deleted whole; the rows an
//! older version left one per event are moved into packs at start and
//! applied once.

use serde_json::json;

use rastrod::service::effects::{Effects, Written};
use rastrod::store::analytics::{self as store, OutboxRow};

use crate::analytics::{analytics_builder, custom, day_range, drain, pageview, reader, site, track};
use crate::backend_test;
use crate::common::TestApp;
use crate::federation::{Fed, READ};

/// Every queued row, in order, read from the packs as the report actor reads them.
pub async fn queued(app: &TestApp) -> Vec<OutboxRow> {
    app.state
        .cx
        .write_alone(|c| {
            let packs = store::take_outbox(c, usize::MAX >> 1)?;
            Ok(Written::new(packs.into_iter().flat_map(|p| p.rows).collect(), Effects::quiet()))
        })
        .await
        .unwrap()
}

async fn totals(fed: &Fed, site: &str) -> (i64, i64, i64, i64) {
    let (from, to) = day_range();
    let t = reader(fed);
    let o = fed.both(Some(&t), "overview", json!({"siteIds": [site], "from": from, "to": to})).await.unwrap();
    let n = |k: &str| o["totals"][k].as_i64().unwrap();
    (n("visitors"), n("sessions"), n("pageviews"), o["events"].as_array().unwrap().len() as i64)
}

// rule: STORE-04
backend_test!(
    a_writes_rows_are_one_pack_per_site_and_an_older_versions_rows_are_packed_once,
    analytics_builder,
    |fed| {
        let app = &fed.app;
        site(app, "loja", false).await;
        site(app, "dolar", false).await;
        fed.grant(&["loja", "dolar"], &[READ]).await;
        let three = vec![pageview("1", "/"), pageview("2", "/p/1"), custom("signup", "/p/1")];
        track(app, "loja", "v_visitor0001", three).await;
        assert_eq!(app.count("web_outbox_packs").await, 1, "the request's three rows in one pack");
        let rows = queued(app).await;
        assert_eq!(rows.len(), 3);
        assert_eq!(rows.iter().map(|o| o.kind.as_str()).collect::<Vec<_>>(), ["pageview", "pageview", "event"]);
        assert!(rows.iter().all(|o| o.site_id == "loja" && o.visitor_id == "v_visitor0001"));
        let len = app.state.cx.read(|c| Ok(store::outbox_len(c)?)).await.unwrap();
        assert_eq!(len, 3, "the outbox's length counts rows, not packs");

        // The same rows as an older version wrote them, one per event, in the
        // table it had: migration 37 undone and applied again, then the start's move.
        app.state
            .cx
            .write_alone(move |c| {
                let packs = store::take_outbox(c, 1000)?;
                store::delete_outbox(c, &packs.iter().map(|p| p.id).collect::<Vec<_>>())?;
                rastrod::db::row::insert::<OutboxRow, _>(c, &rows, "")?;
                Ok(Written::new((), Effects::quiet()))
            })
            .await
            .unwrap();
        crate::common::redo_migrations_through(app, "20261207000037").await;
        assert_eq!((app.count("web_outbox").await, app.count("web_outbox_packs").await), (3, 0));
        assert_eq!(rastrod::actors::report::pack_legacy(&app.state.cx).await.unwrap(), 3);
        assert_eq!((app.count("web_outbox").await, app.count("web_outbox_packs").await), (0, 1));
        assert_eq!(rastrod::actors::report::pack_legacy(&app.state.cx).await.unwrap(), 0, "moved once");
        // After the start, writes go to packs; each site's rows of a write make their own.
        track(app, "dolar", "v_visitor0002", vec![pageview("3", "/")]).await;
        assert_eq!(app.count("web_outbox_packs").await, 2);
        assert_eq!(drain(app).await, 4);
        assert_eq!(drain(app).await, 0, "each row applied once");
        assert_eq!(app.count("web_outbox_packs").await, 0);
        assert_eq!(totals(&fed, "loja").await, (1, 1, 2, 1));
        assert_eq!(totals(&fed, "dolar").await, (1, 1, 1, 0));
    }
);

fn visitors(packs: &[store::Pack]) -> Vec<&str> {
    packs.iter().flat_map(|p| p.rows.iter().map(|o| o.visitor_id.as_str())).collect()
}

/// Two processes' report actors on PostgreSQL: while one holds the oldest
/// pack, the other takes the next one (not the held one, and not nothing).
// rule: STORE-04
#[test]
fn a_report_actor_takes_the_packs_after_those_another_process_holds() {
    use diesel::Connection;
    let Some((db, mut conn)) = crate::two_transactions::pg_database() else { return };
    for visitor in ["v_visitor0001", "v_visitor0002", "v_visitor0003"] {
        let row = OutboxRow {
            site_id: "loja".into(),
            visitor_id: visitor.into(),
            session_id: "s_1".into(),
            kind: "pageview".into(),
            route: "/".into(),
            ..OutboxRow::default()
        };
        store::insert_outbox(&mut conn, &[row]).unwrap();
    }
    let mut other = rastrod::db::AnyConnection::Postgresql(diesel::PgConnection::establish(&db.url).unwrap());
    conn.transaction::<_, diesel::result::Error, _>(|a| {
        let held = store::take_outbox(a, 1)?;
        assert_eq!(visitors(&held), ["v_visitor0001"]);
        other.transaction::<_, diesel::result::Error, _>(|b| {
            assert_eq!(visitors(&store::take_outbox(b, 1)?), ["v_visitor0002"], "the next pack");
            assert_eq!(
                visitors(&store::take_outbox(b, 5)?),
                ["v_visitor0002", "v_visitor0003"],
                "its own again, and the rest"
            );
            Ok(())
        })
    })
    .unwrap();
}
