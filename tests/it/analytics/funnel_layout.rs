//! The funnel step rows of complete days laid out in key order on
//! PostgreSQL (`service::analytics::reports::funnel_layout`, `actors::layout`): the rows and
//! the reports stay what they were, only where the rows lie changes; a day
//! is laid out once it is complete and a day more has passed, once, again
//! after an import into it or a rebuild; a writer appending meanwhile loses
//! nothing. SQLite keeps the rows in key order already and lays out nothing.

use diesel::RunQueryDsl;
use serde_json::json;

use super::definitions::{configurer, write};
use super::funnels::{checkout, checkout_day, expected, today};
use super::{analytics_builder, drain, import};
use crate::backend_test;
use crate::common::{DAY, T0, TestApp};

#[derive(diesel::QueryableByName)]
struct Placed {
    #[diesel(sql_type = diesel::sql_types::Text)]
    visitor_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    at: String,
}

/// PostgreSQL: the day's rows in key order, each with where it lies in the
/// heap (page, item).
async fn placement(app: &TestApp, day: i64) -> Vec<(String, (u32, u32))> {
    app.state
        .cx
        .read(move |c| {
            let sql = format!(
                "SELECT visitor_id, ctid::text AS at FROM web_funnel_days WHERE day = {day} ORDER BY funnel_id, visitor_id"
            );
            let rows: Vec<Placed> = diesel::sql_query(sql).load(c)?;
            Ok(rows
                .into_iter()
                .map(|p| {
                    let (page, item) = p.at.trim_matches(['(', ')']).split_once(',').unwrap();
                    (p.visitor_id, (page.parse().unwrap(), item.parse().unwrap()))
                })
                .collect())
        })
        .await
        .unwrap()
}

fn in_key_order(rows: &[(String, (u32, u32))]) -> bool {
    rows.windows(2).all(|w| w[0].1 < w[1].1)
}

async fn lay_out(app: &TestApp) -> usize {
    rastrod::actors::layout::drain(&app.state.cx).await.unwrap()
}

// rule: ARPT-11
backend_test!(a_complete_day_is_laid_out_once_in_key_order_and_reads_the_same, analytics_builder, |fed| {
    let app = &fed.app;
    let pg = app.backend() == crate::common::Backend::Postgres;
    let t = checkout_day(&fed).await;
    let (d0, d1) = today();
    let ask = json!({"siteId": "loja", "from": d0, "to": d1});
    let before = fed.both(Some(&t), "funnelsReport", ask.clone()).await.unwrap();
    expected(&before["funnels"][0], "checkout");
    if pg {
        // Rows written again as their visitors came back lie out of key order.
        let rows = placement(app, d0).await;
        assert_eq!(
            rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
            ["v_visitor000a", "v_visitor000b", "v_visitor000c", "v_visitor000d"]
        );
        assert!(!in_key_order(&rows), "{rows:?}");
    }

    // The day just ended, and a day later still open to late writes: nothing.
    assert_eq!(lay_out(app).await, 0);
    app.clock.advance(DAY);
    assert_eq!(lay_out(app).await, 0);
    // A day after that it is laid out, once.
    app.clock.advance(DAY);
    assert_eq!(lay_out(app).await, usize::from(pg));
    assert_eq!(lay_out(app).await, 0);
    if pg {
        let rows = placement(app, d0).await;
        assert_eq!(rows.len(), 4);
        assert!(in_key_order(&rows), "{rows:?}");
    }
    let after = fed.both(Some(&t), "funnelsReport", ask.clone()).await.unwrap();
    assert_eq!(after, before);

    // An import into that day: laid out again, the new visitor counted.
    let line = |kind: &str, at: i64, extra: serde_json::Value| {
        let mut l = json!({"type": kind, "occurredAt": at, "visitorId": "v_importedvisitor0001"});
        l.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        l
    };
    let lines = [line("pageview", d0 + 1_000, json!({"pageviewId": "p_imported000000000001", "path": "/produto/8"}))];
    let answer = import(app, "loja", "past-1", &lines).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    drain(app).await;
    assert_eq!(lay_out(app).await, usize::from(pg));
    if pg {
        let rows = placement(app, d0).await;
        assert_eq!(rows.len(), 5);
        assert!(in_key_order(&rows), "{rows:?}");
    }
    let imported = fed.both(Some(&t), "funnelsReport", ask.clone()).await.unwrap();
    assert_eq!(imported["funnels"][0]["entered"], 5);

    // A funnel whose steps change is rebuilt: the site is laid out again from its first day.
    let mut same = checkout("checkout");
    same["funnelId"] = before["funnels"][0]["funnelId"].clone();
    same["steps"].as_array_mut().unwrap().remove(1);
    write(&fed, &configurer(&fed), "upsertFunnel", same, false).await;
    drain(app).await;
    assert_eq!(lay_out(app).await, usize::from(pg));
    let rebuilt = fed.both(Some(&t), "funnelsReport", ask).await.unwrap();
    assert_eq!(rebuilt["funnels"][0]["entered"], 5);
});

/// A writer appending to a row while its day is laid out, in either order,
/// as two processes would: the second waits for the first, and the row
/// holds both what it had and what was appended.
// rule: STORE-04
#[test]
fn an_append_meeting_a_layout_is_kept_in_either_order() {
    use rastrod::store::analytics::funnel_layout as layout;
    use rastrod::store::analytics::funnels::{self, StepRow};
    let Some((db, mut conn)) = crate::two_transactions::pg_database() else { return };
    let step = |visitor: &str, at: i64, id: &str| StepRow {
        funnel_id: "f_1".into(),
        visitor_id: visitor.into(),
        at,
        event_id: id.into(),
        steps: 1,
    };
    let day = T0 - T0.rem_euclid(DAY);
    let first = vec![step("v_visitor000b", T0, "e_b1"), step("v_visitor000a", T0, "e_a1")];
    funnels::insert_steps(&mut conn, "loja", &first).unwrap();
    let ids = vec!["f_1".to_string()];
    let entries = |conn: &mut rastrod::db::AnyConnection| -> Vec<(String, Vec<String>)> {
        funnels::days_between(conn, "f_1", i64::MIN, i64::MAX, 10)
            .unwrap()
            .into_iter()
            .map(|d| (d.visitor_id.clone(), funnels::unpack(&d.entries).map(|e| e.event_id.to_text()).collect()))
            .collect()
    };
    for (n, layout_first) in [(2, true), (3, false)] {
        let appended = vec![step("v_visitor000a", T0 + n, &format!("e_a{n}"))];
        let ids = ids.clone();
        let lay = move |c: &mut rastrod::db::AnyConnection| Ok(layout::lay_out(c, &ids, day).map(|_| ())?);
        let add =
            move |c: &mut rastrod::db::AnyConnection| Ok(funnels::insert_steps(c, "loja", &appended).map(|_| ())?);
        if layout_first {
            crate::two_transactions::two_at_once(&db.url, &mut conn, lay, add);
        } else {
            crate::two_transactions::two_at_once(&db.url, &mut conn, add, lay);
        }
    }
    let a: Vec<String> = ["e_a1", "e_a2", "e_a3"].map(String::from).to_vec();
    assert_eq!(
        entries(&mut conn),
        vec![("v_visitor000a".to_string(), a), ("v_visitor000b".to_string(), vec!["e_b1".to_string()])]
    );
}
