//! Visitor sets per page and per source in the hour tier (issue 25, item
//! 4): an hourly overview counts its pages' and sources' distinct visitors
//! from rollups, not from every retained event of its hours. What must hold:
//! the counts equal a hand count, they outlive the events' retention, and a
//! site upgraded from a version without these sets still counts the hours
//! before them from their events (migration 27's `web_hour_sets_from`).

use std::collections::{BTreeMap, BTreeSet};

use diesel::RunQueryDsl;
use serde_json::{Value, json};

use crate::analytics::{analytics_builder, drain, import, reader, site};
use crate::backend_test;
use crate::common::{DAY, T0, TestApp};
use crate::federation::{CONFIGURE, Fed, READ};

const HOUR: i64 = 3_600_000;
const PATHS: [&str; 3] = ["/", "/p/1", "/blog/a"];
const SOURCES: [Option<&str>; 2] = [None, Some("google")];

/// The UTC day three days before T0's.
fn day() -> i64 {
    T0 - T0.rem_euclid(DAY) - 3 * DAY
}

/// Pageviews in hours `hours` of `day()`: three visitors an hour out of
/// twelve, who come back in other hours on other pages; a visitor always
/// comes from the same source (none or google).
fn lines(hours: std::ops::Range<i64>, tag: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for h in hours {
        for k in 0..3 {
            let v = (h * 5 + k * 7) % 12;
            let mut line = json!({"type": "pageview", "occurredAt": day() + h * HOUR + k * 60_000,
                "visitorId": format!("v_hour{v:08}"), "pageviewId": format!("p_{tag}{h:012}{k:04}"),
                "path": PATHS[((h * k + v) % 3) as usize]});
            if let Some(s) = SOURCES[(v * v % 3) as usize] {
                line["source"] = json!(s);
            }
            out.push(line);
        }
    }
    out
}

/// Distinct visitors per key.
type PerKey = BTreeMap<String, usize>;

/// Distinct visitors per page and per source (`(direct)` without one), by hand.
fn hand_count(lines: &[Value]) -> (PerKey, PerKey) {
    let mut pages: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    let mut sources: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for l in lines {
        let v = l["visitorId"].as_str().unwrap();
        pages.entry(l["path"].as_str().unwrap().into()).or_default().insert(v);
        sources.entry(l["source"].as_str().unwrap_or("(direct)").into()).or_default().insert(v);
    }
    let len = |m: BTreeMap<String, BTreeSet<&str>>| m.into_iter().map(|(k, s)| (k, s.len())).collect();
    (len(pages), len(sources))
}

async fn hourly(fed: &Fed) -> Value {
    let args = json!({"siteIds": ["loja"], "from": day(), "to": day() + 24 * HOUR - 1, "interval": "hour"});
    fed.both(Some(&reader(fed)), "overview", args).await.unwrap()
}

/// The answer's visitors per page and per source.
fn answered(o: &Value) -> (PerKey, PerKey) {
    let of = |panel: &str, key: &str| {
        o[panel]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r[key].as_str().unwrap().to_string(), r["visitors"].as_u64().unwrap() as usize))
            .collect()
    };
    (of("pages", "route"), of("sources", "source"))
}

async fn run(app: &TestApp, statement: String) {
    app.state.cx.write_plain(move |c| Ok(diesel::sql_query(statement).execute(c)?)).await.unwrap();
}

/// A day of retention for the detail (the events `day()` holds go), the aggregates kept.
async fn purge_events(app: &TestApp, at_least: usize) {
    let policy = json!({"siteId": "loja", "eventsDays": 1, "sessionsDays": 1, "conversionsDays": 1,
        "profilesDays": 1, "aggregatesDays": 3650});
    app.post("/v1/analytics/setRetentionPolicy", policy).await.ok();
    assert!(rastrod::actors::retention::drain(&app.state.cx).await.unwrap() >= at_least as u64);
}

// rule: OVR-09
// rule: OVR-05
backend_test!(hourly_page_and_source_visitors_come_from_hour_sets_and_outlive_the_events, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let lines = lines(0..12, "a");
    let a = import(app, "loja", "hours", &lines).await;
    assert_eq!(a.status, 201, "{}", a.text);
    drain(app).await;
    let o = hourly(&fed).await;
    let want = hand_count(&lines);
    assert_eq!(answered(&o), want);
    // Visitors come back across hours and pages: each page and source has its own count.
    assert_eq!(want.0.values().copied().collect::<BTreeSet<_>>().len(), 3, "{want:?}");
    assert_eq!(want.1.len(), 2, "{want:?}");
    assert!(o.get("approximateDays").is_none());

    // The events go (a day of retention); the hour sets stay with the aggregates.
    purge_events(app, lines.len()).await;
    let after = hourly(&fed).await;
    assert_eq!(answered(&after), want, "counted from the sets, not the purged events");
    assert!(after.get("approximateDays").is_none(), "nothing read from purged rows: {after}");
});

// rule: OVR-09
backend_test!(hours_before_a_sites_hour_sets_are_counted_from_their_events, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    // Six hours applied by a version that kept no page or source sets per hour…
    let early = lines(0..6, "a");
    assert_eq!(import(app, "loja", "early", &early).await.status, 201);
    drain(app).await;
    run(app, "DELETE FROM web_visitor_sets WHERE tier = 'h' AND dim IN ('page', 'source')".into()).await;
    // …upgraded then: its hour sets are complete from hour 6.
    run(app, format!("INSERT INTO web_hour_sets_from (site_id, complete_from) VALUES ('loja', {})", day() + 6 * HOUR))
        .await;
    let late = lines(6..12, "b");
    assert_eq!(import(app, "loja", "late", &late).await.status, 201);
    drain(app).await;
    let all: Vec<Value> = early.iter().chain(&late).cloned().collect();
    let want = hand_count(&all);
    assert_eq!(answered(&hourly(&fed).await), want, "the early hours from their events, the rest from the sets");

    // Without the bound the early hours' visitors would be missed: the bound is what counts them.
    run(app, "DELETE FROM web_hour_sets_from".into()).await;
    let (pages, sources) = answered(&hourly(&fed).await);
    assert!(pages.values().sum::<usize>() < want.0.values().sum::<usize>(), "{pages:?} against {:?}", want.0);
    assert!(sources.values().sum::<usize>() < want.1.values().sum::<usize>());

    // With the bound back and the events purged, the early hours are said approximate, the rest not.
    run(app, format!("INSERT INTO web_hour_sets_from (site_id, complete_from) VALUES ('loja', {})", day() + 6 * HOUR))
        .await;
    purge_events(app, all.len()).await;
    let early_hours: Vec<i64> = (0..6).map(|h| day() + h * HOUR).collect();
    assert_eq!(hourly(&fed).await["approximateDays"], json!(early_hours));
});

// Migration 27's bound for a site that already had rollups: an hour
// boundary after the migration's clock, so no event applied before it
// falls in a complete hour.
backend_test!(the_migration_bounds_a_site_with_data_after_its_clock, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    assert_eq!(import(app, "loja", "hours", &lines(0..2, "a")).await.status, 201);
    drain(app).await;
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let bound = app
        .state
        .cx
        .write_plain(|c| {
            let up = if c.is_sqlite() {
                include_str!("../../../migrations/sqlite/2026-12-05-000027_hour_key_sets/up.sql")
            } else {
                include_str!("../../../migrations/postgres/2026-12-05-000027_hour_key_sets/up.sql")
            };
            // The table as the migration left it, then its one statement again.
            diesel::sql_query("DELETE FROM web_hour_sets_from").execute(c)?;
            diesel::sql_query(&up[up.find("INSERT INTO").unwrap()..]).execute(c)?;
            Ok(diesel::sql_query("SELECT complete_from AS n FROM web_hour_sets_from WHERE site_id = 'loja'")
                .get_result::<rastrod::db::row::Count>(c)?
                .n)
        })
        .await
        .unwrap();
    assert_eq!(bound % HOUR, 0, "an hour boundary");
    assert!(bound > before + HOUR && bound <= before + 2 * HOUR, "the hour after the next: {bound} at {before}");
});
