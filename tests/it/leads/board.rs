//! Board columns and the event map: setPipeline, column moves on recordLead and
//! setLeadStage, setEventMap and eventMap.

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

/// Start of T0's UTC day (T0 is noon UTC).
const D0: i64 = T0 - DAY / 2;

async fn pipeline(app: &TestApp, site: &str, columns: Value) -> Answer {
    app.put(&format!("/v1/sites/{site}/pipeline"), json!({ "columns": columns })).await
}

async fn event_map(app: &TestApp, site: &str, now: Option<i64>) -> Value {
    let q = now.map(|n| format!("?now={n}")).unwrap_or_default();
    app.get(&format!("/v1/sites/{site}/event-map{q}")).await.ok()
}

async fn set_map(app: &TestApp, site: &str, body: Value) -> Answer {
    app.put(&format!("/v1/sites/{site}/event-map"), body).await
}

/// (key, event) of every column, in order.
fn events(map: &Value) -> Vec<(String, Value)> {
    map["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["key"].as_str().unwrap().to_string(), c["event"].clone()))
        .collect()
}

fn column_keys(map: &Value) -> Vec<String> {
    map["columns"].as_array().unwrap().iter().map(|c| c["key"].as_str().unwrap().to_string()).collect()
}

async fn column_of(app: &TestApp, site: &str, key: &str) -> Value {
    let rows = app
        .get(&format!("/v1/leads?siteIds={site}&from={}&to={}&limit=100", D0 - 200 * DAY, D0 + 100 * DAY))
        .await
        .ok();
    rows.as_array().unwrap().iter().find(|r| r["leadKey"] == key).expect("lead listed")["column"].clone()
}

async fn month_count(app: &TestApp, site: &str, now: i64, key: &str) -> Value {
    let m = event_map(app, site, Some(now)).await;
    m["columns"].as_array().unwrap().iter().find(|c| c["key"] == key).unwrap()["monthCount"].clone()
}

// rule: BOARD-01
backend_test!(set_pipeline_keeps_order_and_a_redeclare_replaces, |app| {
    app.site("s1").await;
    let answer = pipeline(
        &app,
        "s1",
        json!([
            {"key": "novo", "name": "Novo lead", "group": "Prospecção"},
            {"key": "agendado", "name": "Agendado", "group": "Hora do Show", "color": "#f97316"},
            {"key": "fechado", "name": "Fechado"},
        ]),
    )
    .await
    .ok();
    assert_eq!(
        answer["columns"],
        json!([
            {"key": "novo", "name": "Novo lead", "color": null, "group": "Prospecção", "event": null, "monthCount": null},
            {"key": "agendado", "name": "Agendado", "color": "#f97316", "group": "Hora do Show", "event": null, "monthCount": null},
            {"key": "fechado", "name": "Fechado", "color": null, "group": null, "event": null, "monthCount": null},
        ])
    );
    assert_eq!(event_map(&app, "s1", None).await["columns"], answer["columns"]);

    // Declared again: new names, new order, one column fewer.
    pipeline(
        &app,
        "s1",
        json!([{"key": "fechado", "name": "Venda"}, {"key": "novo", "name": "Entrada", "color": "#000"}]),
    )
    .await
    .ok();
    let m = event_map(&app, "s1", None).await;
    assert_eq!(column_keys(&m), vec!["fechado", "novo"]);
    assert_eq!((m["columns"][0]["name"].as_str(), m["columns"][1]["name"].as_str()), (Some("Venda"), Some("Entrada")));
    assert_eq!((m["columns"][1]["color"].as_str(), m["columns"][1]["group"].clone()), (Some("#000"), Value::Null));
    assert_eq!(app.count("pipeline_columns").await, 2);

    // 40 columns at most.
    let forty: Vec<Value> = (0..40).map(|i| json!({"key": format!("c{i:02}"), "name": format!("Col {i}")})).collect();
    let m = pipeline(&app, "s1", json!(forty)).await.ok();
    let expected: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
    assert_eq!(column_keys(&m), expected);
    let mut forty_one = forty.clone();
    forty_one.push(json!({"key": "c40", "name": "Col 40"}));
    pipeline(&app, "s1", json!(forty_one)).await.err(400, "INVALID_ARGUMENT");
    // Duplicate keys, empty names, bad colors: refused, the board unchanged.
    for bad in [
        json!([{"key": "a", "name": "A"}, {"key": "a", "name": "B"}]),
        json!([{"key": "a", "name": ""}]),
        json!([{"key": "", "name": "A"}]),
        json!([{"key": "a b", "name": "A"}]),
        json!([{"key": "a", "name": "A", "color": "orange"}]),
        json!([{"key": "a", "name": "x".repeat(101)}]),
        json!([{"key": "a", "name": "A", "extra": 1}]),
    ] {
        pipeline(&app, "s1", bad).await.err(400, "INVALID_ARGUMENT");
    }
    assert_eq!(column_keys(&event_map(&app, "s1", None).await), expected);
    pipeline(&app, "nope", json!([])).await.err(404, "NOT_FOUND");
    // An empty board is allowed.
    assert_eq!(pipeline(&app, "s1", json!([])).await.ok()["columns"], json!([]));
    assert_eq!(app.count("pipeline_columns").await, 0);
});

// rule: BOARD-02
backend_test!(a_column_that_goes_leaves_the_map, |app| {
    app.site("s1").await;
    pipeline(&app, "s1", json!([{"key": "a", "name": "A"}, {"key": "b", "name": "B"}, {"key": "c", "name": "C"}]))
        .await
        .ok();
    set_map(
        &app,
        "s1",
        json!({"columns": {"a": "Lead", "b": "Schedule", "c": "QualifiedLead"}, "sendLeadEvent": false}),
    )
    .await
    .ok();
    // b goes, a is renamed and moved, d is new.
    let m =
        pipeline(&app, "s1", json!([{"key": "c", "name": "C"}, {"key": "d", "name": "D"}, {"key": "a", "name": "A2"}]))
            .await
            .ok();
    assert_eq!(
        events(&m),
        vec![("c".into(), json!("QualifiedLead")), ("d".into(), Value::Null), ("a".into(), json!("Lead"))]
    );
    // b comes back: it left the map, so it has no event.
    let m = pipeline(&app, "s1", json!([{"key": "a", "name": "A"}, {"key": "b", "name": "B"}])).await.ok();
    assert_eq!(events(&m), vec![("a".into(), json!("Lead")), ("b".into(), Value::Null)]);
    assert_eq!(events(&event_map(&app, "s1", None).await), events(&m));
});

// rule: BOARD-03
backend_test!(an_undeclared_column_is_ignored_without_error, |app| {
    app.site("s1").await;
    // No board at all: the column is ignored.
    let a = app.lead("s1", "k0", T0, json!({"column": "novo"})).await;
    assert_eq!(a.status, 201);
    pipeline(&app, "s1", json!([{"key": "novo", "name": "Novo"}])).await.ok();
    // A key the board does not declare, on recordLead and setLeadStage.
    for (key, column) in [("k1", "fantasma"), ("k2", "Em negociação"), ("k3", "NOVO")] {
        let a = app.lead("s1", key, T0, json!({"column": column})).await;
        assert_eq!(a.status, 201, "{column}: {}", a.text);
        assert_eq!(column_of(&app, "s1", key).await, Value::Null);
        let moved = app.stage("s1", key, json!({"column": column, "eventId": "m1", "occurredAt": T0 + 1})).await;
        assert_eq!(moved.ok()["accepted"], false, "{column}");
        // With a stage, the stage applies and the column is ignored.
        let staged = app
            .stage("s1", key, json!({"stage": "qualified", "column": column, "eventId": "m2", "occurredAt": T0 + 2}))
            .await;
        assert_eq!(staged.ok()["accepted"], true);
        assert_eq!(column_of(&app, "s1", key).await, Value::Null);
    }
    assert_eq!(column_of(&app, "s1", "k0").await, Value::Null);
    assert_eq!(month_count(&app, "s1", D0, "novo").await, 0);
    // A declared one is taken.
    let a = app.lead("s1", "k4", T0, json!({"column": "novo"})).await;
    assert_eq!(a.status, 201);
    assert_eq!(column_of(&app, "s1", "k4").await, "novo");
    assert_eq!(month_count(&app, "s1", D0, "novo").await, 1);
});

// rule: BOARD-04
backend_test!(a_late_or_same_column_move_is_ignored, |app| {
    app.site("s1").await;
    pipeline(&app, "s1", json!([{"key": "a", "name": "A"}, {"key": "b", "name": "B"}, {"key": "c", "name": "C"}]))
        .await
        .ok();
    app.lead("s1", "k1", T0, json!({"column": "a"})).await.ok();
    let mv = |col: &str, ev: &str, at: i64| json!({"column": col, "eventId": ev, "occurredAt": at});
    assert_eq!(app.stage("s1", "k1", mv("b", "e1", T0 + 100)).await.ok()["accepted"], true);
    let events_before = app.count("lead_events").await;
    // Older than the last move: a late retry never moves the lead back.
    assert_eq!(app.stage("s1", "k1", mv("a", "late", T0 + 50)).await.ok()["accepted"], false);
    assert_eq!(app.stage("s1", "k1", mv("c", "late2", T0 + 99)).await.ok()["accepted"], false);
    // Into the column it is in.
    assert_eq!(app.stage("s1", "k1", mv("b", "same", T0 + 200)).await.ok()["accepted"], false);
    assert_eq!(app.count("lead_events").await, events_before);
    assert_eq!(column_of(&app, "s1", "k1").await, "b");
    // A stage with a stale column: the stage is taken, the lead stays in b.
    let a = app
        .stage("s1", "k1", json!({"stage": "qualified", "column": "a", "eventId": "q", "occurredAt": T0 + 60}))
        .await;
    assert_eq!(a.ok()["accepted"], true);
    assert_eq!(column_of(&app, "s1", "k1").await, "b");
    // A repeat recordLead with an older column does not move it back either.
    assert_eq!(app.lead("s1", "k1", T0 + 10, json!({"eventId": "rec2", "column": "c"})).await.status, 200);
    assert_eq!(column_of(&app, "s1", "k1").await, "b");
    // None of the ignored moves counted: c was never entered, a once (at recordLead).
    assert_eq!(month_count(&app, "s1", D0, "c").await, 0);
    assert_eq!(month_count(&app, "s1", D0, "a").await, 1);
    // A newer move goes through.
    assert_eq!(app.stage("s1", "k1", mv("c", "e2", T0 + 300)).await.ok()["accepted"], true);
    assert_eq!(column_of(&app, "s1", "k1").await, "c");
    assert_eq!(month_count(&app, "s1", D0, "c").await, 1);
});

// rule: BOARD-05
backend_test!(a_column_alone_moves_once_per_event_id, |app| {
    app.site("s1").await;
    pipeline(&app, "s1", json!([{"key": "a", "name": "A"}, {"key": "b", "name": "B"}])).await.ok();
    let id = app.lead("s1", "k1", T0, json!({})).await.ok()["leadId"].as_str().unwrap().to_string();
    let mv = json!({"column": "a", "eventId": "m1", "occurredAt": T0 + 10});
    assert_eq!(app.stage("s1", "k1", mv.clone()).await.ok(), json!({"leadId": id, "accepted": true}));
    // The stage did not change.
    let rows = app.get(&format!("/v1/leads?siteIds=s1&from={D0}&to={}", D0 + DAY - 1)).await.ok();
    assert_eq!((rows[0]["stage"].as_str(), rows[0]["column"].as_str()), (Some("new"), Some("a")));
    assert_eq!((rows[0]["qualified"].as_bool(), rows[0]["won"].as_bool()), (Some(false), Some(false)));
    // A replay of the move's eventId, even pointing elsewhere, changes nothing.
    let events = app.count("lead_events").await;
    assert_eq!(app.stage("s1", "k1", mv).await.ok()["accepted"], false);
    assert_eq!(
        app.stage("s1", "k1", json!({"column": "b", "eventId": "m1", "occurredAt": T0 + 20})).await.ok()["accepted"],
        false
    );
    assert_eq!(app.count("lead_events").await, events);
    assert_eq!(column_of(&app, "s1", "k1").await, "a");
    assert_eq!(month_count(&app, "s1", D0, "a").await, 1);
    assert_eq!(month_count(&app, "s1", D0, "b").await, 0);
    // The journey shows the move once.
    let j = app.get(&format!("/v1/sites/s1/leads/{id}/journey")).await.ok();
    let moves: Vec<&Value> = j["history"].as_array().unwrap().iter().filter(|e| e["column"] == "a").collect();
    assert_eq!(moves.len(), 1);
    assert_eq!(moves[0]["stage"], Value::Null);
    // No report counter moved.
    let r = app.report(&["s1"], D0, D0 + DAY - 1).await;
    assert_eq!((r["totals"]["leads"].as_i64(), r["totals"]["qualified"].as_i64()), (Some(1), Some(0)));
});

// rule: BOARD-06
backend_test!(set_event_map_replaces_the_whole_map, |app| {
    app.site("s1").await;
    pipeline(&app, "s1", json!([{"key": "a", "name": "A"}, {"key": "b", "name": "B"}, {"key": "c", "name": "C"}]))
        .await
        .ok();
    let m = set_map(
        &app,
        "s1",
        json!({"columns": {"a": "Lead", "b": "QualifiedLead", "c": "Schedule"}, "sendLeadEvent": false}),
    )
    .await
    .ok();
    assert_eq!(
        events(&m),
        vec![("a".into(), json!("Lead")), ("b".into(), json!("QualifiedLead")), ("c".into(), json!("Schedule"))]
    );
    // A new map replaces the old: b is null, c left out is null too.
    set_map(&app, "s1", json!({"columns": {"a": "Schedule", "b": null}, "sendLeadEvent": false})).await.ok();
    let m = event_map(&app, "s1", None).await;
    assert_eq!(events(&m), vec![("a".into(), json!("Schedule")), ("b".into(), Value::Null), ("c".into(), Value::Null)]);

    // Refused, and the map stays as it was.
    for bad in [
        json!({"columns": {"a": "Lead", "zz": "Lead"}, "sendLeadEvent": false}),
        json!({"columns": {"a": "Contact"}, "sendLeadEvent": false}),
        json!({"columns": {"a": "lead"}, "sendLeadEvent": false}),
        json!({"columns": {"a": 1}, "sendLeadEvent": false}),
        json!({"columns": {"a": ["Lead"]}, "sendLeadEvent": false}),
        json!({"columns": {"a b": "Lead"}, "sendLeadEvent": false}),
        json!({"columns": {"a": "Lead"}, "sendLeadEvent": "yes"}),
        json!({"columns": {"a": "Lead"}, "sendLeadEvent": false, "unknown": 1}),
        json!({"sendLeadEvent": true}),
    ] {
        set_map(&app, "s1", bad.clone()).await.err(400, "INVALID_ARGUMENT");
    }
    assert_eq!(events(&event_map(&app, "s1", None).await), events(&m));
    assert_eq!(event_map(&app, "s1", None).await["sendLeadEvent"], false);
    set_map(&app, "nope", json!({"columns": {}, "sendLeadEvent": false})).await.err(404, "NOT_FOUND");
    // An empty map clears every column.
    set_map(&app, "s1", json!({"columns": {}, "sendLeadEvent": false})).await.ok();
    assert!(events(&event_map(&app, "s1", None).await).iter().all(|(_, e)| e.is_null()));
});

// rule: BOARD-07
backend_test!(send_lead_event_is_kept, |app| {
    app.site("s1").await;
    app.site("s2").await;
    pipeline(&app, "s1", json!([{"key": "a", "name": "A"}])).await.ok();
    assert_eq!(event_map(&app, "s1", None).await["sendLeadEvent"], false);
    let m = set_map(&app, "s1", json!({"columns": {"a": null}, "sendLeadEvent": true})).await.ok();
    assert_eq!(m["sendLeadEvent"], true);
    // It stays across a redeclared board and a map saved without it, and is per site.
    pipeline(&app, "s1", json!([{"key": "a", "name": "A"}, {"key": "b", "name": "B"}])).await.ok();
    assert_eq!(event_map(&app, "s1", None).await["sendLeadEvent"], true);
    assert_eq!(event_map(&app, "s2", None).await["sendLeadEvent"], false);
    set_map(&app, "s1", json!({"columns": {"b": "Lead"}})).await.ok();
    assert_eq!(event_map(&app, "s1", Some(D0)).await["sendLeadEvent"], true);
    // Turned off, it says so.
    set_map(&app, "s1", json!({"columns": {"b": "Lead"}, "sendLeadEvent": false})).await.ok();
    assert_eq!(event_map(&app, "s1", None).await["sendLeadEvent"], false);
    // A site without any column may still turn it on.
    assert_eq!(set_map(&app, "s2", json!({"columns": {}, "sendLeadEvent": true})).await.ok()["sendLeadEvent"], true);
    assert_eq!(event_map(&app, "s2", None).await["sendLeadEvent"], true);
});

// rule: BOARD-09
backend_test!(event_map_counts_distinct_leads_entering_each_column_in_30_days, |app| {
    app.site("s1").await;
    app.site("s2").await;
    // Before any column: nothing to count.
    assert_eq!(event_map(&app, "s1", Some(D0)).await["columns"], json!([]));
    pipeline(
        &app,
        "s1",
        json!([{"key": "a", "name": "A", "color": "#fff", "group": "G"}, {"key": "b", "name": "B"}, {"key": "c", "name": "C"}, {"key": "d", "name": "D"}]),
    )
    .await
    .ok();
    pipeline(&app, "s2", json!([{"key": "a", "name": "A"}])).await.ok();
    set_map(&app, "s1", json!({"columns": {"b": "Schedule"}, "sendLeadEvent": true})).await.ok();
    let n = D0; // `now`, rounded to the start of its day as the dashboard does.
    let window_start = n - 29 * DAY;
    let mv = |col: &str, ev: &str, at: i64| json!({"column": col, "eventId": ev, "occurredAt": at});

    // L1 enters a long ago (outside), then b at the window's first ms, then a, b, a again.
    app.lead("s1", "l1", n - 40 * DAY, json!({"column": "a"})).await.ok();
    for (col, ev, at) in
        [("b", "1", window_start), ("a", "2", n - 10 * DAY), ("b", "3", n - 5 * DAY), ("a", "4", n - 2 * DAY)]
    {
        assert_eq!(app.stage("s1", "l1", mv(col, ev, at)).await.ok()["accepted"], true);
    }
    // L2 enters a one ms before the window, then c at the last ms of `now`'s day.
    app.lead("s1", "l2", window_start - 1, json!({"column": "a"})).await.ok();
    assert_eq!(app.stage("s1", "l2", mv("c", "1", n + DAY - 1)).await.ok()["accepted"], true);
    // L3 enters c the day after `now`: outside.
    app.lead("s1", "l3", n + DAY, json!({"column": "c"})).await.ok();
    // L4 enters a inside; a late move to d is ignored.
    app.lead("s1", "l4", n - DAY, json!({"column": "a"})).await.ok();
    assert_eq!(app.stage("s1", "l4", mv("d", "1", n - 3 * DAY)).await.ok()["accepted"], false);
    // Another site's lead in its own column a.
    app.lead("s2", "o1", n, json!({"column": "a"})).await.ok();

    // By hand: a = {l1, l4}, b = {l1}, c = {l2}, d = {}.
    let m = event_map(&app, "s1", Some(n)).await;
    assert_eq!(
        m["columns"],
        json!([
            {"key": "a", "name": "A", "color": "#fff", "group": "G", "event": null, "monthCount": 2},
            {"key": "b", "name": "B", "color": null, "group": null, "event": "Schedule", "monthCount": 1},
            {"key": "c", "name": "C", "color": null, "group": null, "event": null, "monthCount": 1},
            {"key": "d", "name": "D", "color": null, "group": null, "event": null, "monthCount": 0},
        ])
    );
    assert_eq!(m["sendLeadEvent"], true);
    assert_eq!(m["purchase"], json!({"enabled": false}));
    // Any `now` inside the same UTC day counts the same days.
    assert_eq!(event_map(&app, "s1", Some(n + DAY - 1)).await["columns"], m["columns"]);
    // A day later the window moves: b's first entry (window_start) drops out, l3 comes in.
    let later = event_map(&app, "s1", Some(n + DAY)).await;
    let counts: Vec<i64> =
        later["columns"].as_array().unwrap().iter().map(|c| c["monthCount"].as_i64().unwrap()).collect();
    assert_eq!(counts, vec![2, 1, 2, 0]);
    // Without `now`: null.
    let m = event_map(&app, "s1", None).await;
    assert!(m["columns"].as_array().unwrap().iter().all(|c| c["monthCount"].is_null()), "{m}");
    // Per site.
    assert_eq!(event_map(&app, "s2", Some(n)).await["columns"][0]["monthCount"], 1);
    // A bad `now` or an unknown query field is refused; an unknown site is NOT_FOUND.
    app.get("/v1/sites/s1/event-map?now=-1").await.err(400, "INVALID_ARGUMENT");
    app.get("/v1/sites/s1/event-map?now=abc").await.err(400, "INVALID_ARGUMENT");
    app.get("/v1/sites/s1/event-map?when=1").await.err(400, "INVALID_ARGUMENT");
    app.get("/v1/sites/nope/event-map").await.err(404, "NOT_FOUND");
});

// rule: BOARD-10
backend_test!(purchase_never_comes_from_a_column, |app| {
    app.site("s1").await;
    pipeline(&app, "s1", json!([{"key": "a", "name": "A"}, {"key": "venda", "name": "Venda"}])).await.ok();
    set_map(&app, "s1", json!({"columns": {"a": "Lead"}, "sendLeadEvent": false})).await.ok();
    let a =
        set_map(&app, "s1", json!({"columns": {"a": "Schedule", "venda": "Purchase"}, "sendLeadEvent": false})).await;
    a.err(400, "INVALID_ARGUMENT");
    assert!(a.body["message"].as_str().unwrap().contains("Purchase"), "{}", a.text);
    // Nothing changed.
    let m = event_map(&app, "s1", None).await;
    assert_eq!(events(&m), vec![("a".into(), json!("Lead")), ("venda".into(), Value::Null)]);
    // Purchase is its own row, never a column's event.
    assert_eq!(m["purchase"], json!({"enabled": false}));
    assert!(m["columns"].as_array().unwrap().iter().all(|c| c["event"] != "Purchase"));
});
