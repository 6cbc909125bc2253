//! Filters on the leads' dimensions (REPORTING §3, rule REP-08): each report
//! against a recount of the unfiltered lead rows with the same filter applied here.

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

const D0: i64 = T0 - DAY / 2;
const HOUR: i64 = DAY / 24;

/// 60 leads over 5 days (the middle days whole, read from the rollups; the
/// range's ends partial), mixing origins (two of them form origins),
/// campaigns, ad sets, ads, stages and board columns.
async fn seed(app: &TestApp) {
    app.site("s1").await;
    app.put(
        "/v1/sites/s1/pipeline",
        json!({"columns": [{"key": "novo", "name": "Novo"}, {"key": "agendado", "name": "Agendado"}, {"key": "fechado", "name": "Fechado"}]}),
    )
    .await
    .ok();
    let origins = ["ctwa_ad", "organic", "lead_form", "lead_form_organic", "instagram_bio"];
    for i in 0..60i64 {
        let origin = origins[(i % 5) as usize];
        let column = ["novo", "agendado"][(i % 2) as usize];
        let mut extra = json!({"origin": origin, "column": column});
        if origin == "ctwa_ad" || origin == "lead_form" {
            let (c, s, a) = (i % 3, i % 4, i % 6);
            extra = json!({"origin": origin, "campaignId": format!("c{c}"), "campaignName": format!("Campanha {c}"),
                "adsetId": format!("s{c}{s}"), "adsetName": "Conjunto", "adId": format!("a{c}{s}{a}"), "adName": "Anúncio",
                "column": column});
        }
        let at = D0 - 3 * HOUR + i * 2 * HOUR;
        let key = format!("k{i:02}");
        app.lead("s1", &key, at, extra).await.ok();
        match i % 4 {
            1 => {
                app.stage("s1", &key, json!({"stage": "qualified", "eventId": "q", "occurredAt": at + 1})).await.ok();
            }
            2 => {
                let body = json!({"stage": "won", "revenueCents": 1_000 + i, "column": "fechado", "eventId": "w", "occurredAt": at + 1});
                app.stage("s1", &key, body).await.ok();
            }
            3 => {
                app.stage("s1", &key, json!({"stage": "lost", "eventId": "l", "occurredAt": at + 1})).await.ok();
            }
            _ => {}
        }
    }
}

/// The value a filter reads on a listed lead.
fn value_of(lead: &Value, dim: &str) -> String {
    let key = match dim {
        "campaign" => "campaignId",
        "adSet" => "adsetId",
        "ad" => "adId",
        other => other,
    };
    lead[key].as_str().unwrap_or("").to_string()
}

fn passes(lead: &Value, filters: &Value) -> bool {
    filters.as_array().unwrap().iter().all(|f| {
        let v = value_of(lead, f["dim"].as_str().unwrap()).to_lowercase();
        let values: Vec<String> =
            f["values"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_lowercase()).collect();
        match f["op"].as_str().unwrap() {
            "is" => values.contains(&v),
            "isNot" => !values.contains(&v),
            "contains" => values.iter().any(|x| v.contains(x.as_str())),
            _ => !values.iter().any(|x| v.contains(x.as_str())),
        }
    })
}

/// (leads, qualified, won, revenueCents) of rows.
fn counts<'a>(rows: impl Iterator<Item = &'a Value>) -> (i64, i64, i64, i64) {
    rows.fold((0, 0, 0, 0), |(l, q, w, r), x| {
        (
            l + 1,
            q + x["qualified"].as_bool().unwrap() as i64,
            w + x["won"].as_bool().unwrap() as i64,
            r + x["revenueCents"].as_i64().unwrap(),
        )
    })
}

fn c4(v: &Value) -> (i64, i64, i64, i64) {
    (
        v["leads"].as_i64().unwrap(),
        v["qualified"].as_i64().unwrap(),
        v["won"].as_i64().unwrap(),
        v["revenueCents"].as_i64().unwrap(),
    )
}

// rule: REP-08
backend_test!(lead_filters_keep_the_leads_a_recount_keeps, |app| {
    seed(&app).await;
    let (from, to) = (D0 - 2 * HOUR, D0 + 4 * DAY + 5 * HOUR);
    let all = app.get(&format!("/v1/leads?siteIds=s1&from={from}&to={to}&limit=100")).await.ok();
    let all = all.as_array().unwrap().clone();
    assert!(all.len() > 50);
    let (d_from, d_to) = (D0 - DAY, D0 + 5 * DAY - 1);
    let all_days = app.get(&format!("/v1/leads?siteIds=s1&from={d_from}&to={d_to}&limit=100")).await.ok();
    let all_days = all_days.as_array().unwrap().clone();
    assert!(all_days.len() > all.len(), "the days hold more than the range");
    let cases = [
        json!([{"dim": "origin", "op": "is", "values": ["ctwa_ad", "organic"]}]),
        json!([{"dim": "campaign", "op": "isNot", "values": ["c1"]}]),
        json!([{"dim": "adSet", "op": "contains", "values": ["S2"]}]),
        json!([{"dim": "ad", "op": "notContains", "values": ["a0"]}, {"dim": "origin", "op": "is", "values": ["ctwa_ad"]}]),
        json!([{"dim": "stage", "op": "is", "values": ["won"]}]),
        json!([{"dim": "stage", "op": "isNot", "values": ["lost", "new"]}, {"dim": "campaign", "op": "is", "values": ["c0", "c2"]}]),
        json!([{"dim": "column", "op": "is", "values": ["agendado"]}]),
        json!([{"dim": "column", "op": "isNot", "values": ["fechado"]}]),
        json!([{"dim": "channel", "op": "is", "values": ["form"]}]),
        json!([{"dim": "channel", "op": "isNot", "values": ["form"]}, {"dim": "stage", "op": "contains", "values": ["qual"]}]),
    ];
    for filters in cases {
        let kept: Vec<&Value> = all.iter().filter(|l| passes(l, &filters)).collect();
        assert!(!kept.is_empty() && kept.len() < all.len(), "{filters}: a case that tells");
        let want = counts(kept.iter().copied());
        // leadsReport: totals, and the origins add up.
        let r = app
            .post("/v1/reports/leads", json!({"siteIds": ["s1"], "from": from, "to": to, "filters": filters}))
            .await
            .ok();
        assert_eq!(c4(&r["totals"]), want, "{filters}: leadsReport totals");
        let by_origin: i64 = r["origins"].as_array().unwrap().iter().map(|o| o["leads"].as_i64().unwrap()).sum();
        assert_eq!(by_origin, want.0, "{filters}: origins");
        assert_eq!(r["totals"]["spendCents"], Value::Null, "spend is not said under filters");
        // The tree holds the kept leads that came from an ad.
        let tree: i64 = r["campaigns"].as_array().unwrap().iter().map(|c| c["leads"].as_i64().unwrap()).sum();
        assert_eq!(tree, kept.iter().filter(|l| l["adId"].is_string()).count() as i64, "{filters}: tree");
        // leadsDaily over the same leads (its range is whole days: the days of the range).
        let daily = app
            .post("/v1/reports/leads-daily", json!({"siteIds": ["s1"], "from": d_from, "to": d_to, "filters": filters}))
            .await
            .ok();
        let daily_leads: i64 = daily.as_array().unwrap().iter().map(|d| d["leads"].as_i64().unwrap()).sum();
        let in_days = all_days.iter().filter(|l| passes(l, &filters)).count() as i64;
        assert_eq!(daily_leads, in_days, "{filters}: leadsDaily");
        // listLeads and leads.csv (the filters as JSON in the query): the same leads, in order.
        let q = urlencode(&filters.to_string());
        let listed = app.get(&format!("/v1/leads?siteIds=s1&from={from}&to={to}&limit=100&filters={q}")).await.ok();
        let ids = |rows: &[&Value]| rows.iter().map(|l| l["leadId"].as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(ids(&listed.as_array().unwrap().iter().collect::<Vec<_>>()), ids(&kept), "{filters}: listLeads");
        let csv = app.get(&format!("/v1/sites/s1/leads.csv?from={from}&to={to}&filters={q}")).await;
        assert_eq!(csv.status, 200);
        assert_eq!(csv.text.matches("\r\n").count() - 1, kept.len(), "{filters}: leads.csv");
    }
    // Paging through a filtered list keeps every kept lead once.
    let filters = json!([{"dim": "stage", "op": "isNot", "values": ["lost"]}]);
    let q = urlencode(&filters.to_string());
    let (mut seen, mut before) = (Vec::new(), None::<(i64, String)>);
    loop {
        let mut path = format!("/v1/leads?siteIds=s1&from={from}&to={to}&limit=7&filters={q}");
        if let Some((at, id)) = &before {
            path.push_str(&format!("&before={at}&beforeLeadId={id}"));
        }
        let page = app.get(&path).await.ok();
        let page = page.as_array().unwrap().clone();
        let Some(last) = page.last() else { break };
        before = Some((last["firstAt"].as_i64().unwrap(), last["leadId"].as_str().unwrap().to_string()));
        seen.extend(page.iter().map(|l| l["leadId"].as_str().unwrap().to_string()));
    }
    assert_eq!(seen.len(), all.iter().filter(|l| passes(l, &filters)).count());
    // Errors name the argument and never echo it.
    let bad = app
        .post("/v1/reports/leads", json!({"siteIds": ["s1"], "from": from, "to": to, "filters": [{"dim": "s3cr3t", "op": "is", "values": ["x"]}]}))
        .await;
    bad.err(400, "INVALID_ARGUMENT");
    assert!(!bad.text.contains("s3cr3t") && bad.text.contains("filters"), "{}", bad.text);
    let bad = app.post("/v1/reports/leads", json!({"siteIds": ["s1"], "from": from, "to": to, "filters": [{"dim": "stage", "op": "like", "values": ["x"]}]})).await;
    bad.err(400, "INVALID_ARGUMENT");
    app.get(&format!("/v1/leads?siteIds=s1&from={from}&to={to}&filters=notjson")).await.err(400, "INVALID_ARGUMENT");
});
