//! REP-01: every read function's answer over the demo, byte for byte as the
//! seeds' clients get it today, kept in `tests/golden/rep01/` (one file per call). Local days,
//! comparisons and filters are optional arguments: without them nothing may
//! move. Both backends must give the same bytes.
//!
//! `RASTRO_GOLDEN_UPDATE=1 cargo test --test it reporting::golden` rewrites the
//! file after a change that is meant to alter an answer (say why in the commit).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::{DAY, T0};
use crate::federation::{CONFIGURE, Fed, ORG, READ, fed_builder};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/rep01");
const SITES: [&str; 2] = ["loja-x", "pet-mania"];

/// The demo (leads, spend, 90 days of web analytics) at T0, rolled up.
async fn seeded(fed: &Fed) {
    crate::dashboard::demo(&fed.app).await;
    assert!(rastrod::demo::analytics::seed(&fed.app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(&fed.app).await;
    fed.grant_for(crate::federation::CONN, ORG, "demo-owner", &SITES, &[READ, CONFIGURE]).await.ok();
}

/// Stand-ins for what differs between runs by design: generated ids carry
/// random bits, page cursors are sealed with a per-run key. Each distinct value gets
/// one numbered stand-in in order of appearance, so equal ids stay equal; the
/// answer's bytes are otherwise kept as sent (key order, number spelling).
#[derive(Default)]
struct Normalizer {
    seen: BTreeMap<String, String>,
}

impl Normalizer {
    fn collect(&mut self, key: Option<&str>, v: &Value) {
        match v {
            Value::String(s) => {
                let random = is_generated_id(s) || key.is_some_and(|k| k.to_ascii_lowercase().contains("cursor"));
                if random && !self.seen.contains_key(s) {
                    let n = self.seen.len();
                    self.seen.insert(s.clone(), format!("<random {n}>"));
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.collect(key, i)),
            Value::Object(map) => map.iter().for_each(|(k, i)| self.collect(Some(k), i)),
            _ => {}
        }
    }

    /// The answer's text with every random value replaced by its stand-in.
    fn text(&mut self, text: &str) -> String {
        let parsed: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        self.collect(None, &parsed);
        let mut out = text.to_string();
        for (value, stand_in) in &self.seen {
            out = out.replace(&format!("\"{value}\""), &format!("\"{stand_in}\""));
        }
        out
    }
}

/// The daemon's generated ids (`src/ids.rs`): a short prefix and 24 hex digits
/// (time first, then random bits), or 22 random base64url characters.
fn is_generated_id(s: &str) -> bool {
    let Some((prefix, rest)) = s.split_once('_') else { return false };
    let short = (1..=3).contains(&prefix.len()) && prefix.bytes().all(|b| b.is_ascii_lowercase());
    let hex = rest.len() == 24 && rest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let b64 = matches!(prefix, "v" | "u")
        && rest.len() == 22
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    short && (hex || b64)
}

/// Calls `name` with `args` on the federated API: the status and the body's bytes.
async fn call(fed: &Fed, token: &str, name: &str, args: Value) -> (u16, String) {
    let a = fed.rest(Some(token), name, args).await;
    (a.status, a.text)
}

fn golden_file(label: &str) -> std::path::PathBuf {
    std::path::Path::new(GOLDEN).join(format!("{}.json", label.replace('/', ".")))
}

// rule: REP-01
backend_test!(without_the_new_arguments_every_answer_is_todays, fed_builder, |fed| {
    seeded(&fed).await;
    let token = fed.token(&[READ, CONFIGURE]);
    let today = T0 - T0.rem_euclid(DAY);
    let (d7, d30, d90, d366) = (today - 7 * DAY, today - 30 * DAY, today - 90 * DAY, today - 366 * DAY);
    let end = today - 1;
    let both = json!(SITES);
    let mut calls: Vec<(String, Value)> = vec![
        ("manifest".into(), json!({})),
        ("connectionStatus".into(), json!({})),
        ("listSites".into(), json!({})),
        ("siteSettings".into(), json!({"siteId": "loja-x"})),
        ("leadsReport".into(), json!({"siteIds": both, "from": d30, "to": end})),
        ("leadsReport/7d".into(), json!({"siteIds": ["pet-mania"], "from": d7, "to": end})),
        ("leadsDaily".into(), json!({"siteIds": both, "from": d30, "to": end})),
        // `paid` is every paid origin (the seed's meaning, LA-18); before Lead Ads it was
        // read as a literal origin and answered zeros, the one answer this file changed on purpose.
        ("leadsDaily/paid".into(), json!({"siteIds": both, "from": d30, "to": end, "origin": "paid"})),
        ("listLeads".into(), json!({"siteIds": both, "from": d30, "to": end, "limit": 25})),
        ("metaStatus".into(), json!({"siteIds": both, "now": T0})),
        ("metaConversions".into(), json!({"siteId": "loja-x", "limit": 20})),
        ("metaEventMap".into(), json!({"siteId": "loja-x", "now": T0})),
        ("overview".into(), json!({"siteIds": both, "from": d30, "to": end})),
        ("overview/90d".into(), json!({"siteIds": ["loja-x"], "from": d90, "to": end})),
        ("overview/366d".into(), json!({"siteIds": both, "from": d366, "to": end})),
        ("overview/hours".into(), json!({"siteIds": ["loja-x"], "from": today - DAY, "to": end, "interval": "hour"})),
        (
            "overview/partial".into(),
            json!({"siteIds": ["loja-x"], "from": today - DAY + 3_600_000 * 5, "to": end - 3_600_000 * 7, "interval": "hour"}),
        ),
        ("liveVisitors".into(), json!({"siteIds": both, "now": T0, "limit": 20})),
        (
            "listSessions".into(),
            json!({"siteId": "loja-x", "from": d7, "to": end, "paginationOpts": {"numItems": 5, "cursor": null}}),
        ),
        ("dataCoverage".into(), json!({"siteId": "loja-x", "from": d90, "to": end, "now": T0})),
        (
            "listConversions".into(),
            json!({"siteId": "loja-x", "from": d30, "to": end, "paginationOpts": {"numItems": 10, "cursor": null}}),
        ),
        ("revenueSummary".into(), json!({"siteIds": both, "from": d30, "to": end})),
        ("goalsReport".into(), json!({"siteId": "loja-x", "from": d30, "to": end})),
        ("funnelsReport".into(), json!({"siteId": "loja-x", "from": d30, "to": end})),
        ("affiliatesReport".into(), json!({"siteId": "loja-x", "from": d30, "to": end})),
        ("listGoals".into(), json!({"siteId": "loja-x"})),
        ("listFunnels".into(), json!({"siteId": "loja-x"})),
        ("listAffiliates".into(), json!({"siteId": "loja-x"})),
        ("retentionStatus".into(), json!({"siteId": "loja-x", "now": T0})),
        ("vitalsReport".into(), json!({"siteId": "loja-x", "from": d30, "to": end})),
        ("siteMap".into(), json!({"siteIds": both, "from": d30, "to": end})),
        ("listPeople".into(), json!({"siteId": "loja-x", "paginationOpts": {"numItems": 10, "cursor": null}})),
        ("listTrackedLinks".into(), json!({"siteId": "loja-x", "now": T0})),
    ];
    let mut answers: Vec<(String, u16, String)> = Vec::new();
    for (label, args) in calls.drain(..) {
        let name = label.split('/').next().unwrap().to_string();
        let (status, text) = call(&fed, &token, &name, args).await;
        answers.push((label, status, text));
    }
    let body = |label: &str| -> Value {
        let (_, _, text) = answers.iter().find(|(l, _, _)| l == label).unwrap();
        serde_json::from_str(text).unwrap()
    };
    // The reads that take an id: the first session, visitor and lead above.
    let session = body("listSessions")["page"][0].clone();
    let (sid, vid) = (session["sessionId"].clone(), session["visitorId"].clone());
    let lead = body("listLeads")[0].clone();
    assert!(sid.is_string() && vid.is_string() && lead["leadId"].is_string(), "the demo has sessions and leads");
    let by_id = [
        ("getSession", json!({"siteId": "loja-x", "sessionId": sid})),
        (
            "sessionJourney",
            json!({"siteId": "loja-x", "sessionId": sid, "from": d7, "to": end,
            "paginationOpts": {"numItems": 50, "cursor": null}}),
        ),
        ("visitorJourney", json!({"siteIds": ["loja-x"], "visitorId": vid, "from": d30, "to": end, "limit": 20})),
        ("getVisitorProfile", json!({"siteId": "loja-x", "visitorId": vid})),
        ("leadJourney", json!({"siteId": lead["siteId"], "leadId": lead["leadId"]})),
    ];
    for (name, args) in by_id {
        let (status, text) = call(&fed, &token, name, args).await;
        answers.push((name.to_string(), status, text));
    }
    let update = std::env::var_os("RASTRO_GOLDEN_UPDATE").is_some();
    if update {
        std::fs::create_dir_all(GOLDEN).unwrap();
    }
    let mut normalizer = Normalizer::default();
    for (label, status, text) in &answers {
        assert_eq!(*status, 200, "{label}: {text}");
        let got = normalizer.text(text) + "\n";
        let file = golden_file(label);
        if update {
            std::fs::write(&file, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&file).unwrap_or_else(|_| panic!("{} is missing", file.display()));
        assert!(got == want, "{label} no longer answers what it did (REP-01):\n got: {got}\nwant: {want}");
    }
    // Nothing left over: every golden file is one of the calls above.
    let files = std::fs::read_dir(GOLDEN).unwrap().count();
    assert_eq!(files, answers.len(), "a golden file without its call in this test");
});
