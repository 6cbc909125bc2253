//! The WhatsApp references over HTTP (docs/whatsapp.md, WA-02): the
//! tracker's `whatsapp_click` events posted to `/rastro/events` as a browser
//! posts them, and what rastrod keeps of their references: the shape check,
//! upper case, the first click's 7 days, the take-over after them, the
//! lookup's window, the retention actor's sweep and a forgotten person.

use serde_json::{Value, json};

use crate::analytics::{HOST, analytics_builder, pageview, site, track};
use crate::backend_test;
use crate::common::{DAY, T0, TestApp};
use rastrod::store::analytics::whatsapp_refs::{self, RefRow};

const NUMBER: &str = "5511999990000";

/// A tap on the WhatsApp link of `path` with reference `reference`.
pub fn tap(path: &str, reference: Value) -> Value {
    json!({"type": "event", "name": "whatsapp_click", "url": format!("https://{HOST}{path}"),
        "properties": {"number": NUMBER, "ref": reference}})
}

#[derive(Debug, Clone, PartialEq, Eq, diesel::QueryableByName)]
pub struct Stored {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub site_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub reference: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub visitor_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub session_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub number: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub path: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub clicked_at: i64,
}

/// Every stored reference, by site and reference.
pub async fn refs(app: &TestApp) -> Vec<Stored> {
    app.state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            Ok(diesel::sql_query(
                "SELECT site_id, ref AS reference, visitor_id, session_id, number, path, clicked_at \
                 FROM web_whatsapp_refs ORDER BY site_id, ref",
            )
            .load::<Stored>(c)?)
        })
        .await
        .unwrap()
}

#[derive(diesel::QueryableByName)]
struct Props {
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    properties: Option<String>,
}

/// The stored properties of the site's `whatsapp_click` events, in order.
pub async fn tap_properties(app: &TestApp, site_id: &'static str) -> Vec<Value> {
    let rows = app
        .state
        .cx
        .read(move |c| {
            let mut q = rastrod::db::sql::RawQuery::new(
                "SELECT properties FROM web_events WHERE site_id = ? AND name = 'whatsapp_click' ORDER BY occurred_at, id",
            );
            q.text(site_id);
            Ok(q.load::<Props>(c)?)
        })
        .await
        .unwrap();
    rows.into_iter().map(|r| r.properties.map_or(Value::Null, |p| serde_json::from_str(&p).unwrap())).collect()
}

pub async fn lookup(app: &TestApp, site_id: &'static str, reference: &'static str, at: i64) -> Option<RefRow> {
    app.state.cx.read(move |c| Ok(whatsapp_refs::lookup(c, site_id, reference, at)?)).await.unwrap()
}

/// The session a batch's answer names.
fn session_of(answer: &Value) -> String {
    answer["sessionId"].as_str().expect("a session").to_string()
}

// rule: WA-02
backend_test!(a_reference_binds_its_first_click_for_seven_days, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "outra", false).await;

    // Two taps of one visit: each reference in upper case, bound to the click.
    let taps = vec![
        pageview("1", "/p/1"),
        crate::analytics::whatsapp_refs::tap("/p/1?x=1", json!("r7k2qx")),
        crate::analytics::whatsapp_refs::tap("/p/2", json!("W4ZAP2")),
    ];
    let a = track(app, "loja", "v_visitor000a", taps).await;
    assert_eq!(a["accepted"], 3, "{a}");
    let sa = session_of(&a);
    let first =
        |reference: &str, visitor: &str, session: &str, path: &str, at: i64| crate::analytics::whatsapp_refs::Stored {
            site_id: "loja".into(),
            reference: reference.into(),
            visitor_id: visitor.into(),
            session_id: session.into(),
            number: NUMBER.into(),
            path: path.into(),
            clicked_at: at,
        };
    assert_eq!(
        crate::analytics::whatsapp_refs::refs(app).await,
        [first("R7K2QX", "v_visitor000a", &sa, "/p/1", T0), first("W4ZAP2", "v_visitor000a", &sa, "/p/2", T0)]
    );

    // Any other shape: the event is stored, its `ref` is not, and nothing is bound.
    let bad = [json!("R7K2Q0"), json!("R7K2QXA"), json!("R7K2Q"), json!("OOOOOO"), json!(123456), json!(true)];
    let events: Vec<Value> = bad.iter().map(|r| crate::analytics::whatsapp_refs::tap("/p/3", r.clone())).collect();
    let b = track(app, "loja", "v_visitor000b", events).await;
    assert_eq!(b["accepted"], 6, "every event is kept: {b}");
    let props = crate::analytics::whatsapp_refs::tap_properties(app, "loja").await;
    assert_eq!(props.len(), 8);
    let mut kept: Vec<&str> = props.iter().filter_map(|p| p["ref"].as_str()).collect();
    kept.sort();
    assert_eq!(kept, ["R7K2QX", "W4ZAP2"], "stored in upper case");
    let dropped = props.iter().filter(|p| **p == json!({"number": NUMBER})).count();
    assert_eq!(dropped, 6, "each bad ref is dropped, the rest of its event kept: {props:?}");
    assert_eq!(crate::analytics::whatsapp_refs::refs(app).await.len(), 2);

    // The same reference again within its 7 days (3 days on, then exactly 7):
    // the event is stored, the reference keeps its first click.
    for later in [3 * DAY, 7 * DAY] {
        app.clock.set(T0 + later);
        let c =
            track(app, "loja", "v_visitor000c", vec![crate::analytics::whatsapp_refs::tap("/p/9", json!("R7K2QX"))])
                .await;
        assert_eq!(c["accepted"], 1);
        let r = crate::analytics::whatsapp_refs::refs(app).await;
        assert_eq!(r[0], first("R7K2QX", "v_visitor000a", &sa, "/p/1", T0), "{later}");
    }
    // Another site's same reference is its own.
    let o =
        track(app, "outra", "v_visitor000c", vec![crate::analytics::whatsapp_refs::tap("/o", json!("R7K2QX"))]).await;
    let r = crate::analytics::whatsapp_refs::refs(app).await;
    assert_eq!((r.len(), r[2].site_id.as_str(), r[2].session_id.clone()), (3, "outra", session_of(&o)));

    // The lookup: from the click to 7 days after it, on its own site.
    let look = crate::analytics::whatsapp_refs::lookup;
    let found = look(app, "loja", "R7K2QX", T0 + DAY).await.expect("bound");
    assert_eq!(
        (
            found.visitor_id.as_str(),
            found.session_id.as_str(),
            found.number.as_str(),
            found.path.as_str(),
            found.clicked_at
        ),
        ("v_visitor000a", sa.as_str(), NUMBER, "/p/1", T0)
    );
    assert!(look(app, "loja", "R7K2QX", T0).await.is_some(), "at the click");
    assert!(look(app, "loja", "R7K2QX", T0 + 7 * DAY).await.is_some(), "7 days on");
    assert_eq!(look(app, "loja", "R7K2QX", T0 + 7 * DAY + 1).await, None, "past the 7 days");
    assert_eq!(look(app, "loja", "R7K2QX", T0 - 1).await, None, "before the click");
    assert_eq!(look(app, "loja", "R7K2Q0", T0).await, None);
    assert_eq!(look(app, "nada", "R7K2QX", T0).await, None);

    // Past its 7 days the reference is the next click's.
    app.clock.set(T0 + 7 * DAY + 1);
    let d = track(
        app,
        "loja",
        "v_visitor000d",
        vec![pageview("4", "/"), crate::analytics::whatsapp_refs::tap("/p/4", json!("r7K2Qx"))],
    )
    .await;
    let sd = session_of(&d);
    let r = crate::analytics::whatsapp_refs::refs(app).await;
    assert_eq!(r[0], first("R7K2QX", "v_visitor000d", &sd, "/p/4", T0 + 7 * DAY + 1));
    assert_eq!(look(app, "loja", "R7K2QX", T0 + 7 * DAY + 1).await.map(|f| f.visitor_id), Some("v_visitor000d".into()));

    // The retention actor deletes what is past its 7 days, with no policy:
    // W4ZAP2 (clicked at T0) goes, outra's (T0 + 7 days) not yet.
    assert_eq!(rastrod::actors::retention::drain(&app.state.cx).await.unwrap(), 1);
    let left: Vec<(String, String)> =
        crate::analytics::whatsapp_refs::refs(app).await.into_iter().map(|r| (r.site_id, r.reference)).collect();
    assert_eq!(left, [("loja".to_string(), "R7K2QX".to_string()), ("outra".to_string(), "R7K2QX".to_string())]);
    app.clock.set(T0 + 14 * DAY + 1);
    assert_eq!(rastrod::actors::retention::drain(&app.state.cx).await.unwrap(), 1, "outra's, 7 days and 1 ms old");
    assert_eq!(crate::analytics::whatsapp_refs::refs(app).await.len(), 1);
});

// rule: WA-02
backend_test!(a_forgotten_persons_references_go, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    track(app, "loja", "v_anonymous0001", vec![crate::analytics::whatsapp_refs::tap("/", json!("HJKMNP"))]).await;
    track(app, "loja", "v_someoneelse1", vec![crate::analytics::whatsapp_refs::tap("/", json!("QRSTUV"))]).await;
    let u = app
        .post("/v1/sites/loja/analytics/identify", json!({"externalId": "ana", "visitorId": "v_anonymous0001"}))
        .await
        .ok()["visitorId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(crate::analytics::whatsapp_refs::refs(app).await.len(), 2);
    assert_eq!(app.delete(&format!("/v1/sites/loja/analytics/people/{u}")).await.ok(), json!({"removed": true}));
    let left: Vec<String> = crate::analytics::whatsapp_refs::refs(app).await.into_iter().map(|r| r.reference).collect();
    assert_eq!(left, ["QRSTUV"], "the anonymous visit's reference went with the person");
    assert_eq!(crate::analytics::whatsapp_refs::lookup(app, "loja", "HJKMNP", T0).await, None);
});

// rule: WA-02
backend_test!(one_write_of_many_taps_keeps_each_references_first_click, analytics_builder, |fed| {
    let app = &fed.app;
    let tap = |reference: String, visitor: &str, at: i64| whatsapp_refs::NewRef {
        site_id: "loja".into(),
        reference,
        visitor_id: visitor.into(),
        session_id: format!("s_{visitor}"),
        number: NUMBER.into(),
        path: "/".into(),
        clicked_at: at,
    };
    // 130 references (three statements' worth), then the same one three
    // times in the write: a second click a minute on keeps the first, a
    // third 8 days on takes it over, in the order given.
    let mut rows: Vec<whatsapp_refs::NewRef> = (0..130).map(|i| tap(format!("A{i:05}"), "v_many", T0)).collect();
    rows.extend([
        tap("R7K2QX".into(), "v_first", T0),
        tap("R7K2QX".into(), "v_second", T0 + 60_000),
        tap("R7K2QX".into(), "v_third", T0 + 8 * DAY),
    ]);
    let written = app
        .state
        .cx
        .write(move |c| {
            let n = whatsapp_refs::insert_refs(c, &rows)?;
            Ok(rastrod::service::effects::Written::new(n, rastrod::service::effects::Effects::quiet()))
        })
        .await
        .unwrap();
    assert_eq!(written, 132, "130 new, the first click, and the take-over");
    let r = crate::analytics::whatsapp_refs::refs(app).await;
    assert_eq!(r.len(), 131);
    let bound = r.iter().find(|s| s.reference == "R7K2QX").unwrap();
    assert_eq!((bound.visitor_id.as_str(), bound.clicked_at), ("v_third", T0 + 8 * DAY));
});
