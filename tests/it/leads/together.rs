//! recordLead calls that arrive while the writer is busy are written
//! together, in one write (issue 25, LEAD-12): new keys with one statement
//! per table, and a key met twice, a key already stored, a board column
//! and an unknown site each answered as if alone.

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

/// The calls, in their order: (key, extra fields, the site when not the test's own).
fn calls() -> Vec<(&'static str, Value, Option<&'static str>)> {
    let ad = |name: &str| {
        json!({"campaignId": "c1", "campaignName": "Natal", "adsetId": "s1", "adsetName": "Público",
            "adId": "a1", "adName": name})
    };
    vec![
        ("k1", ad("Vídeo"), None),
        ("k2", ad("Vídeo oferta"), None),
        ("k1", json!({"eventId": "k1-second", "label": "Ana"}), None),
        ("k0", json!({"eventId": "k0-second", "label": "Bia"}), None),
        ("k5", json!({}), Some("nope")),
        ("k3", json!({"column": "negociando"}), None),
        ("k4", json!({"origin": "organic"}), None),
    ]
}

fn body(key: &str, extra: &Value) -> Value {
    let mut b = json!({"leadKey": key, "eventId": format!("{key}-new"), "occurredAt": T0, "origin": "ctwa_ad"});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

/// What a site's leads read as, its id left out.
async fn seen(app: &TestApp, site: &str) -> (Value, Vec<String>) {
    let r = app.post("/v1/reports/leads", json!({"siteIds": [site], "from": T0 - DAY, "to": T0 + DAY})).await.ok();
    let report: Value = serde_json::from_str(&r.to_string().replace(site, "SITE")).unwrap();
    let leads = app.get(&format!("/v1/leads?siteIds={site}&from={}&to={}", T0 - DAY, T0 + DAY)).await.ok();
    let mut rows: Vec<String> = leads
        .as_array()
        .unwrap()
        .iter()
        .map(|l| format!("{} {} {} {} {}", l["leadKey"], l["label"], l["origin"], l["adName"], l["stage"]))
        .collect();
    rows.sort();
    (report, rows)
}

// rule: LEAD-12
// rule: LEAD-01
backend_test!(record_lead_calls_waiting_together_are_written_in_one_write, |app| {
    for s in ["together", "alone"] {
        app.site(s).await;
        assert_eq!(app.lead(s, "k0", T0, json!({})).await.status, 201);
    }
    let k0 = app.get(&format!("/v1/leads?siteIds=together&from={}&to={}", T0 - DAY, T0 + DAY)).await.ok()[0]["leadId"]
        .clone();
    let cx = app.state.cx.clone();
    let writes = |cx: &rastrod::service::context::Context| cx.storage_stats().writer.writes;
    let before = writes(&cx);
    let (release, blocker) = hold_writer(&cx).await;
    let mut pending = Vec::new();
    for (i, (key, extra, site)) in calls().into_iter().enumerate() {
        let req = app.host_request(reqwest::Method::POST, &format!("/v1/sites/{}/leads", site.unwrap_or("together")));
        let req = req.header("content-type", "application/json").body(body(key, &extra).to_string());
        pending.push(tokio::spawn(async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }));
        wait_queued(i + 1, || rastrod::service::leads::queued_calls(&cx)).await;
    }
    assert_eq!(writes(&cx), before, "nothing written while the writer is held");
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    let mut answers = Vec::new();
    for p in pending {
        answers.push(p.await.unwrap());
    }
    assert_eq!(writes(&cx) - before, crate::common::writers(&cx) + 1, "the held writes and one for the seven calls");
    assert_eq!(rastrod::service::leads::queued_calls(&cx), 0);
    let statuses: Vec<u16> = answers.iter().map(|a| a.0).collect();
    assert_eq!(statuses, [201, 201, 200, 200, 404, 201, 201], "{answers:?}");
    assert_eq!(answers[4].1["code"], "NOT_FOUND");
    assert_eq!(answers[2].1["leadId"], answers[0].1["leadId"], "the key met twice is one lead");
    assert_eq!(answers[3].1["leadId"], k0, "a stored key is a repeat");
    // The same calls one by one on another site read the same.
    for (key, extra, site) in calls() {
        let s = if site.is_some() { "nope" } else { "alone" };
        app.post(&format!("/v1/sites/{s}/leads"), body(key, &extra)).await;
    }
    let (together, alone) = (seen(&app, "together").await, seen(&app, "alone").await);
    assert_eq!(together, alone);
    // And right in itself: five leads, two on the ad, a blank filled by the repeat.
    assert_eq!(together.0["totals"]["leads"], 5, "{}", together.0);
    assert!(together.1.iter().any(|r| r.starts_with("\"k1\" \"Ana\" \"ctwa_ad\"")), "{:?}", together.1);
    assert_eq!(together.0["campaigns"][0]["adsets"][0]["ads"][0]["leads"], 2, "{}", together.0);
    let k2 = answers[1].1["leadId"].as_str().unwrap();
    let journey = app.get(&format!("/v1/sites/together/leads/{k2}/journey")).await.ok();
    assert!(journey.to_string().contains("\"k2-new\""), "the new lead's event: {journey}");
});

// rule: LEAD-11
backend_test!(replays_arriving_together_are_read_together_each_exactly, |app| {
    for s in ["s1", "s2"] {
        app.site(s).await;
    }
    let id = |a: &Answer| a.body["leadId"].as_str().unwrap().to_string();
    let s1c1 = id(&app.lead("s1", "c1", T0, json!({"eventId": "e1"})).await);
    let s1c2 = id(&app.lead("s1", "c2", T0, json!({"eventId": "e2"})).await);
    let s2c1 = id(&app.lead("s2", "c1", T0, json!({"eventId": "e2"})).await);
    // (site, key, event): three repeats, and three calls whose site, key and
    // event each exist, but never the three together.
    let calls = [
        ("s1", "c1", "e1"),
        ("s1", "c2", "e2"),
        ("s2", "c1", "e2"),
        ("s1", "c1", "e2"),
        ("s2", "c2", "e2"),
        ("s2", "c1", "e1"),
    ];
    let store_answers = app.state.cx.read(move |c| Ok(rastrod::store::leads::repeats_of(c, &calls)?)).await.unwrap();
    assert_eq!(store_answers, [Some(s1c1.clone()), Some(s1c2.clone()), Some(s2c1.clone()), None, None, None]);
    // Over HTTP at once, the writer held: the repeats are answered from the
    // read, the others wait for the writer.
    let cx = app.state.cx.clone();
    let (release, blocker) = hold_writer(&cx).await;
    let pending: Vec<_> = calls
        .iter()
        .map(|&(site, key, event)| {
            let req = app.host_request(reqwest::Method::POST, &format!("/v1/sites/{site}/leads"));
            let body = json!({"leadKey": key, "eventId": event, "occurredAt": T0, "origin": "ctwa_ad"});
            let req = req.header("content-type", "application/json").body(body.to_string());
            tokio::spawn(async move {
                let r = req.send().await.unwrap();
                (r.status().as_u16(), r.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut pending = pending.into_iter();
    let mut answers = Vec::new();
    for p in pending.by_ref().take(3) {
        let answered = tokio::time::timeout(std::time::Duration::from_secs(20), p).await;
        answers.push(answered.expect("a repeat is answered while the writer is held").unwrap());
    }
    let expected: Vec<(u16, Value)> =
        [&s1c1, &s1c2, &s2c1].into_iter().map(|id| (200, json!({"leadId": id, "created": false}))).collect();
    assert_eq!(answers, expected);
    wait_queued(3, || rastrod::service::leads::queued_calls(&cx)).await;
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    let mut rest = Vec::new();
    for p in pending {
        rest.push(p.await.unwrap());
    }
    let statuses: Vec<u16> = rest.iter().map(|a| a.0).collect();
    assert_eq!(statuses, [200, 201, 200], "a new event of s1's c1, s2's new c2, a new event of s2's c1: {rest:?}");
    assert_eq!(rest[0].1["leadId"], json!(s1c1));
    assert_eq!(rest[2].1["leadId"], json!(s2c1));
});
