//! lead-ads: Meta's signed leadgen webhook, durable receipts per second
//! beside the no-op ping of the same run, then the time from a webhook to
//! the handler's delivery (the fake Graph as Meta, its handler as the host).

#[allow(unused_imports)]
use super::*;
use rastrod::meta::fake::leads::{FORM_ORCAMENTO, FORM_PET, PAGE_LOJA_X, PAGE_PET_MANIA, signature, webhook_body};

const APP_SECRET: &str = "rastro-fake-app-secret";

/// `POST /rastro/meta/leadgen` as Meta sends it: JSON, signed over the exact bytes.
fn leadgen_request(host: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST /rastro/meta/leadgen HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         X-Hub-Signature-256: {}\r\nContent-Length: {}\r\n\r\n",
        signature(APP_SECRET, body),
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

async fn host_call(c: &mut Conn, addr: &str, key: &str, method: &str, path: &str, body: &str) -> AnyResult<Vec<u8>> {
    let r = c.roundtrip(&request(method, path, addr, key, Some(body))).await?;
    if !(200..300).contains(&r.status) {
        return Err(format!("{method} {path}: {} {}", r.status, String::from_utf8_lossy(&r.body)).into());
    }
    Ok(r.body)
}

pub(crate) fn lead_ads(a: LeadAdsArgs) -> AnyResult<()> {
    let binary = a.daemon.binary()?;
    // The fake Graph (Meta, and the host's handler) in its own process, like the crash test's.
    let fake_port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let fake = format!("http://127.0.0.1:{fake_port}");
    let mut fake_child = Command::new(&binary)
        .args(["fake-graph", "--listen", &format!("127.0.0.1:{fake_port}")])
        .env("RASTRO_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let db = FreshDb::new(a.daemon.database_url.as_deref())?;
    let on_pg = db.pg.is_some();
    let backend = if on_pg { "PostgreSQL (fresh schema)" } else { "SQLite (fresh file, synchronous=FULL)" };
    let env = [
        ("RASTRO_META_GRAPH_URL", fake.clone()),
        ("RASTRO_META_APP_ID", rastrod::meta::fake::login::FAKE_APP_ID.to_string()),
        ("RASTRO_META_APP_SECRET", APP_SECRET.to_string()),
        ("RASTRO_SECRETS_KEY", rastrod::ids::secrets_key()?),
        ("RASTRO_FEDERATION_META_LEADS", "true".to_string()),
        ("RASTRO_META_WEBHOOK_VERIFY_TOKEN", "loadgen-verify-token-0123".to_string()),
    ];
    let mut daemon = Daemon::start(binary, db, &env)?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        let http = reqwest::Client::new();
        for _ in 0..100 {
            if http.get(format!("{fake}/__fake/deliveries")).send().await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!("{}", machine_line());
        println!("daemon pid {pid} on {addr}, {backend}; {} connections, {} webhooks", a.connections, a.requests);
        let mut c = Conn::open(&addr).await?;
        for (site, page) in [("pet-mania", PAGE_PET_MANIA), ("loja-x", PAGE_LOJA_X)] {
            let body = format!(
                r#"{{"siteId":"{site}","name":"{site}","currency":"BRL","timezone":"America/Sao_Paulo","ownerId":"o"}}"#
            );
            host_call(&mut c, &addr, &key, "POST", "/v1/sites", &body).await?;
            if site == "pet-mania" {
                host_call(&mut c, &addr, &key, "PUT", "/v1/meta/owners/agency/connection", r#"{"accessToken":"tok-agency-1"}"#).await?;
                host_call(&mut c, &addr, &key, "POST", "/v1/meta/owners/agency/lead-ads/metaPages", "{}").await?;
            }
            let link = format!(r#"{{"siteId":"{site}","pageId":"{page}"}}"#);
            host_call(&mut c, &addr, &key, "POST", "/v1/meta/owners/agency/lead-ads/linkMetaPage", &link).await?;
        }
        // Pet Mania has no handler: its receipts are stored and wait (nothing is fetched), so the
        // receipts phase measures the webhook alone.
        let ping = ping_maker(&addr, &key);
        phase("warmup", &addr, a.connections, a.warmup, &[200], &pid, ping.clone()).await?;
        let created = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs() as i64;
        let hook = {
            let addr = addr.clone();
            Arc::new(move |_c: usize, i: usize| {
                let id = format!("9{:014}", i);
                let body = webhook_body(PAGE_PET_MANIA, FORM_PET, &id, Some("120200000000001"), created).to_string();
                leadgen_request(&addr, body.as_bytes())
            })
        };
        let receipts = phase("leadgen", &addr, a.connections, a.requests, &[200], &pid, hook).await?;
        let png = phase("ping", &addr, a.connections, a.requests, &[200], &pid, ping).await?;
        receipts.print();
        png.print();
        let target = match (on_pg, receipts.rate() >= 5000.0) {
            (true, _) => "the target (≥ 5,000/s) is SQLite's",
            (false, true) => "target ≥ 5,000/s on SQLite: met",
            (false, false) => "target ≥ 5,000/s on SQLite: not met",
        };
        println!("receipts: {:.0}/s = {:.1} % of the no-op ping ({target})", receipts.rate(), 100.0 * receipts.rate() / png.rate());

        // Webhook → handler: Loja X gets the fake's handler; real leads made on the fake, their
        // signed webhooks posted by the fake, a few at a time.
        // A fresh connection: the setup's may have idled past the keep-alive during the phases.
        let mut c = Conn::open(&addr).await?;
        let handler = format!(r#"{{"url":"{fake}/__fake/handler","secret":"loadgen-handler-secret-0123456789abcdef"}}"#);
        host_call(&mut c, &addr, &key, "PUT", "/v1/sites/loja-x/meta/form-lead-handler", &handler).await?;
        let mut sent_at: BTreeMap<String, u64> = BTreeMap::new();
        let wall = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let started = Instant::now();
        for chunk in 0..a.deliveries.div_ceil(4) {
            let mut tasks = Vec::new();
            for _ in 0..4.min(a.deliveries - chunk * 4) {
                let body = serde_json::json!({"pageId": PAGE_LOJA_X, "formId": FORM_ORCAMENTO, "adId": "120200000000001",
                    "deliverTo": format!("http://{addr}/rastro/meta/leadgen"), "appSecret": APP_SECRET,
                    "fieldData": [{"name": "full_name", "values": ["Pessoa"]}, {"name": "phone_number", "values": ["+5511999990000"]}]});
                let (http, fake) = (http.clone(), fake.clone());
                let t = wall();
                tasks.push(tokio::spawn(async move {
                    let v: serde_json::Value = http.post(format!("{fake}/__fake/leadgen")).json(&body).send().await?.json().await?;
                    Ok::<_, reqwest::Error>((v["leadgenId"].as_str().unwrap_or_default().to_string(), t))
                }));
            }
            for t in tasks {
                let (id, t) = t.await??;
                sent_at.insert(id, t);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut lat_ms: Vec<u64> = Vec::new();
        while Instant::now() < deadline {
            let got: serde_json::Value = http.get(format!("{fake}/__fake/handler/deliveries")).send().await?.json().await?;
            lat_ms = got
                .as_array()
                .map(|d| {
                    d.iter()
                        .filter_map(|x| {
                            let sent = sent_at.get(x["body"]["leadgenId"].as_str()?)?;
                            Some(x["receivedAtMs"].as_u64()?.saturating_sub(*sent))
                        })
                        .collect()
                })
                .unwrap_or_default();
            if lat_ms.len() >= sent_at.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        lat_ms.sort_unstable();
        let p99 = pct(&lat_ms, 99.0);
        println!(
            "webhook → handler: {} of {} delivered in {:.1} s; p50 {} ms, p99 {} ms, max {} ms (target p99 ≤ 2,000 ms: {})",
            lat_ms.len(),
            sent_at.len(),
            started.elapsed().as_secs_f64(),
            pct(&lat_ms, 50.0),
            p99,
            lat_ms.last().copied().unwrap_or(0),
            if p99 <= 2000 && lat_ms.len() == sent_at.len() { "met" } else { "not met" }
        );
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    });
    daemon.stop();
    let _ = fake_child.kill();
    let _ = fake_child.wait();
    outcome
}
