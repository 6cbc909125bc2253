//! Meta Lead Ads across kill -9 of the real binary (LA-16): while webhooks
//! arrive, reconciliation reads the forms and the Page's actor fetches,
//! records and delivers, the daemon is SIGKILLed at random moments and
//! restarted. In the end every receipt the daemon acknowledged (and every
//! lead whose webhook was dropped, found by reconciliation) is exactly one
//! lead and reached the handler; a delivery repeats only when a kill fell
//! between the handler's 2xx and the receipt's commit. The slow tier.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rastrod::meta::fake::leads::{FORM_AGENDA, FORM_ORCAMENTO, PAGE_LOJA_X};
use serde_json::{Value, json};

use crate::common::{HOST_KEY, Moments, Proc, TestDb, free_port, wait_for};

fn texts(path: &std::path::Path, sql: &str) -> Vec<String> {
    use diesel::{Connection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct T {
        #[diesel(sql_type = diesel::sql_types::Text)]
        v: String,
    }
    let mut c = diesel::SqliteConnection::establish(&path.to_string_lossy()).unwrap();
    diesel::sql_query(sql).load::<T>(&mut c).unwrap().into_iter().map(|t| t.v).collect()
}

// rule: LA-16
async fn a_kill_9_loses_no_acknowledged_form_lead_and_makes_none_twice() {
    const KILLS: usize = 5;
    const PER_ROUND: usize = 40;
    crate::common::slow_tier("kills the real binary");
    let bin = env!("CARGO_BIN_EXE_rastrod");
    let http = reqwest::Client::new();
    let (_fake, fake) = crate::common::fake_graph_process(&http).await;
    let db = TestDb::sqlite();
    let path = db.sqlite_path().unwrap();
    let key = rastrod::ids::secrets_key().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let start = || {
        Proc(
            Command::new(bin)
                .arg("serve")
                .env("RASTRO_DATABASE_URL", &db.url)
                .env("RASTRO_HOST_API_KEY", HOST_KEY)
                .env("RASTRO_LISTEN", format!("127.0.0.1:{port}"))
                .env("RASTRO_SECRETS_KEY", &key)
                .env("RASTRO_META_GRAPH_URL", &fake)
                .env("RASTRO_META_APP_ID", rastrod::meta::fake::login::FAKE_APP_ID)
                .env("RASTRO_META_APP_SECRET", "rastro-fake-app-secret")
                .env("RASTRO_FEDERATION_META_LEADS", "true")
                .env("RASTRO_META_WEBHOOK_VERIFY_TOKEN", "verify-token-0123456789")
                .env("RASTRO_META_LEADS_LEASE", "2s")
                .env("RASTRO_META_LEADS_RETRY_STEPS", "200ms")
                .env("RASTRO_META_LEADS_RECONCILE", "2s")
                .env("RASTRO_META_LEADS_SWEEP_INTERVAL", "1s")
                .env("RASTRO_META_LEADS_HANDLER_TIMEOUT", "1s")
                .env("RASTRO_CAPI_RETRY_STEPS", "200ms,400ms,800ms,1s,1s,1s")
                .env("RASTRO_META_REQUEST_TIMEOUT", "1s")
                .env("RASTRO_LOG", "error")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let call = |method: reqwest::Method, path: &str, body: Value| {
        let (http, url) = (http.clone(), format!("{base}{path}"));
        async move {
            let r = http.request(method, url).bearer_auth(HOST_KEY).json(&body).send().await.unwrap();
            let status = r.status();
            assert!(status.is_success(), "{status}: {}", r.text().await.unwrap_or_default());
        }
    };
    let started = Instant::now();
    let mut daemon = start();
    wait_for(&http, &format!("{base}/health")).await;
    let site = json!({"siteId": "loja-x", "name": "Loja X", "currency": "BRL", "timezone": "America/Sao_Paulo",
        "ownerId": "o1"});
    call(reqwest::Method::POST, "/v1/sites", site).await;
    call(reqwest::Method::PUT, "/v1/meta/owners/agency/connection", json!({"accessToken": "tok-agency-1"})).await;
    call(reqwest::Method::POST, "/v1/meta/owners/agency/lead-ads/metaPages", json!({})).await;
    let link = json!({"siteId": "loja-x", "pageId": PAGE_LOJA_X});
    call(reqwest::Method::POST, "/v1/meta/owners/agency/lead-ads/linkMetaPage", link).await;
    let handler = json!({"url": format!("{fake}/__fake/handler"), "secret": "handler-secret-0123456789abcdef-0123"});
    call(reqwest::Method::PUT, "/v1/sites/loja-x/meta/form-lead-handler", handler).await;
    // The handler is away now and then: deliveries retry across the kills.
    let away = json!({"statuses": [503, 200, 200, 500, 200, 200, 200, 429]});
    http.post(format!("{fake}/__fake/handler/respond")).json(&away).send().await.unwrap();

    let mut moments = Moments::from_env();
    let (mut acknowledged, mut made) = (Vec::new(), Vec::new());
    for k in 0..KILLS {
        let mut tasks = Vec::new();
        let (acked, mut first_ack) = tokio::sync::mpsc::unbounded_channel::<()>();
        for i in 0..PER_ROUND {
            // One in five webhooks never comes: only reconciliation finds its lead.
            let drop = i % 5 == 4;
            let form = if i % 2 == 0 { FORM_ORCAMENTO } else { FORM_AGENDA };
            let body = json!({"pageId": PAGE_LOJA_X, "formId": form,
                "deliverTo": format!("{base}/rastro/meta/leadgen"), "appSecret": "rastro-fake-app-secret",
                "drop": drop, "fieldData": [{"name": "full_name", "values": [format!("Pessoa {k}-{i}")]}]});
            let (http, fake, acked) = (http.clone(), fake.clone(), acked.clone());
            tasks.push(actix_web::rt::spawn(async move {
                let a: Value =
                    http.post(format!("{fake}/__fake/leadgen")).json(&body).send().await.unwrap().json().await.unwrap();
                let ok = a["webhookStatus"] == 200;
                if ok {
                    let _ = acked.send(());
                }
                (a["leadgenId"].as_str().unwrap().to_string(), ok)
            }));
        }
        // Even rounds are killed at a moment counted from the round's start,
        // which on a busy machine may fall before any webhook is answered;
        // odd ones from the round's first acknowledged webhook, so some
        // acknowledged receipts always meet a kill (a bounded wait: a daemon
        // that acknowledges nothing fails the assertion below).
        let moment = moments.below(400);
        if k % 2 == 1 {
            let _ = actix_web::rt::time::timeout(Duration::from_secs(30), first_ack.recv()).await;
            eprintln!("kill {k}: {moment} ms after the round's first acknowledged webhook");
        } else {
            eprintln!("kill {k}: {moment} ms after the round's webhooks started");
        }
        actix_web::rt::time::sleep(Duration::from_millis(moment)).await;
        daemon.0.kill().unwrap();
        daemon.0.wait().unwrap();
        for t in tasks {
            let (id, ok) = t.await.unwrap();
            if ok {
                acknowledged.push(id.clone());
            }
            made.push(id);
        }
        daemon = start();
        wait_for(&http, &format!("{base}/health")).await;
    }
    assert!(!acknowledged.is_empty(), "some webhooks were acknowledged");

    // Every lead Meta holds ends delivered (reconciliation finds the dropped
    // and unanswered ones): a bounded real-time wait.
    let delivered_sql = "SELECT leadgen_id AS v FROM meta_lead_receipts WHERE status = 'delivered'";
    let deadline = Instant::now() + Duration::from_secs(60);
    while texts(&path, delivered_sql).len() < made.len() && Instant::now() < deadline {
        actix_web::rt::time::sleep(Duration::from_millis(250)).await;
    }
    let _ = Command::new("kill").arg("-TERM").arg(daemon.0.id().to_string()).status();
    let _ = daemon.0.wait();

    let receipts = texts(&path, "SELECT leadgen_id AS v FROM meta_lead_receipts");
    let keys = texts(&path, "SELECT lead_key AS v FROM leads");
    let delivered = texts(&path, delivered_sql);
    for id in &acknowledged {
        assert!(receipts.contains(id), "acknowledged {id} has its receipt");
    }
    for id in &made {
        assert_eq!(keys.iter().filter(|k| **k == format!("fbl_{id}")).count(), 1, "{id} is exactly one lead");
        assert!(delivered.contains(id), "{id} was delivered");
    }
    assert_eq!(keys.len(), made.len(), "no other lead");
    let got: Vec<Value> =
        http.get(format!("{fake}/__fake/handler/deliveries")).send().await.unwrap().json().await.unwrap();
    let mut per_lead: BTreeMap<String, usize> = BTreeMap::new();
    for d in got.iter().filter(|d| d["status"].as_u64().is_some_and(|s| (200..300).contains(&s))) {
        *per_lead.entry(d["body"]["leadgenId"].as_str().unwrap().to_string()).or_default() += 1;
    }
    for id in &made {
        assert!(per_lead.get(id).is_some_and(|n| *n >= 1), "{id} reached the handler");
    }
    let repeats: usize = per_lead.values().map(|n| n - 1).sum();
    println!(
        "form leads {}: acknowledged webhooks {}, accepted deliveries {}, repeats {repeats}; {:.1} s",
        made.len(),
        acknowledged.len(),
        per_lead.values().sum::<usize>(),
        started.elapsed().as_secs_f64()
    );
    assert!(repeats <= KILLS, "a delivery repeats only when a kill fell between the 2xx and the commit");
}

crate::slow_tests!(a_kill_9_loses_no_acknowledged_form_lead_and_makes_none_twice);
