//! `loadgen analytics-poll`: `--dashboards` dashboards polling
//! `POST /federation/liveVisitors` every `--interval-ms` (each over the same
//! `--sites` sites, as a team of one agency watches its clients' live view),
//! while the tracker posts `--pageviews-per-sec` pageviews spread over those
//! sites. Two phases of `--seconds` each: the tracker alone, then the tracker
//! with the dashboards polling. The daemon's SQL statements in each phase
//! (`rastrod_db_queries_total`) give what the polling costs the database:
//! the difference, per second and per poll, beside the polls per second.
//! The read cache (STORE-08) is what keeps it low: a site's live
//! state is read at most once per tracker commit of that site and per
//! `RASTRO_READ_CACHE_TTL`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{
    AnyResult, Conn, FED_AUDIENCE, FED_ISSUER, all_ok, machine_line, metric, metrics_page, pct, phase, request,
    tracker_request, wait_ready,
};

#[derive(clap::Args)]
pub struct PollArgs {
    /// Dashboards: each a grant over every site, a token and one keep-alive connection.
    #[arg(long, default_value_t = 200)]
    dashboards: usize,
    /// Sites every dashboard watches (1-10).
    #[arg(long, default_value_t = 10)]
    sites: usize,
    /// Each dashboard's poll period.
    #[arg(long, default_value_t = 5_000)]
    interval_ms: u64,
    /// Length of each phase (tracker alone, then tracker and polling).
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Tracker pageviews per second over all the sites, in both phases.
    #[arg(long, default_value_t = 10)]
    pageviews_per_sec: u64,
    #[command(flatten)]
    daemon: super::DaemonArgs,
}

/// Creates the sites `live-00`… over the host API.
pub(crate) async fn create_sites(addr: &str, key: &str, pid: &str, sites: usize) -> AnyResult<()> {
    let create = {
        let (addr, key) = (addr.to_string(), key.to_string());
        Arc::new(move |_c: usize, s: usize| {
            let body = format!(
                r#"{{"siteId":"{}","name":"Live {s}","currency":"BRL","timezone":"America/Sao_Paulo","ownerId":"agency","domains":["loja.example.com"]}}"#,
                poll_site(s)
            );
            request("POST", "/v1/sites", &addr, &key, Some(&body))
        })
    };
    all_ok(&phase("sites", addr, 1, sites, &[201], pid, create).await?, "creating the sites")
}

pub(crate) fn poll_site(s: usize) -> String {
    format!("live-{s:02}")
}

/// Pageviews at `rate` per second over the sites until `stop`; answers how many were accepted.
pub(crate) async fn tracker_traffic(
    addr: String,
    sites: usize,
    rate: u64,
    stop: Arc<AtomicBool>,
    seq: Arc<AtomicUsize>,
) -> AnyResult<usize> {
    let mut c = Conn::open(&addr).await?;
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut accepted = 0;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let i = seq.fetch_add(1, Ordering::Relaxed);
        let body = format!(
            r#"{{"siteId":"{}","visitorId":"v_poll{:014}","events":[{{"type":"pageview","pageviewId":"p_poll{i:016}","url":"https://loja.example.com/p/{}"}}]}}"#,
            poll_site(i % sites),
            i % 5_000,
            i % 7
        );
        if c.roundtrip(&tracker_request(&addr, &body)).await?.status == 200 {
            accepted += 1;
        }
    }
    Ok(accepted)
}

pub fn run(a: PollArgs) -> AnyResult<()> {
    if a.dashboards == 0 || a.seconds == 0 || a.interval_ms == 0 || !(1..=10).contains(&a.sites) {
        return Err("--dashboards, --seconds and --interval-ms must be positive, --sites 1-10".into());
    }
    let env = [
        ("RASTRO_TRACKER_IP_RATE", "100000000".to_string()),
        ("RASTRO_TRACKER_NEW_VISITOR_RATE", "100000000".to_string()),
    ];
    let super::Federated { mut daemon, signer, kid, backend, _jwks: jwks } = super::federated_daemon(&a.daemon, &env)?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        println!("{}", machine_line());
        println!(
            "daemon pid {pid} on {addr}, {backend}; {} dashboards × {} sites polling liveVisitors every {} ms; \
             {} pageviews/s; two phases of {} s",
            a.dashboards, a.sites, a.interval_ms, a.pageviews_per_sec, a.seconds
        );
        let sites: Vec<String> = (0..a.sites).map(poll_site).collect();
        create_sites(&addr, &key, &pid, a.sites).await?;
        let grant = {
            let (addr, key, sites) = (addr.clone(), key.clone(), sites.clone());
            Arc::new(move |_c: usize, d: usize| {
                let body = serde_json::json!({ "organizationId": "org-agency", "ownerId": "agency", "siteIds": sites });
                request("PUT", &format!("/v1/federation/grants/poll-{d:04}"), &addr, &key, Some(&body.to_string()))
            })
        };
        all_ok(&phase("grants", &addr, 16, a.dashboards, &[201], &pid, grant).await?, "provisioning the grants")?;
        let now_s =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs();
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.clone());
        let mut tokens = Vec::with_capacity(a.dashboards);
        for d in 0..a.dashboards {
            let claims = serde_json::json!({
                "iss": FED_ISSUER, "aud": FED_AUDIENCE, "sub": format!("user-{d:04}"),
                "iat": now_s, "exp": now_s + 3600,
                "rastro_connection_id": format!("poll-{d:04}"), "rastro_organization_id": "org-agency",
                "rastro_permissions": ["analytics:read"],
            });
            tokens.push(jsonwebtoken::encode(&header, &claims, &signer).map_err(|e| format!("signing: {e}"))?);
        }

        // Phase 1: the tracker alone.
        let seq = Arc::new(AtomicUsize::new(0));
        let phase_len = Duration::from_secs(a.seconds);
        let m0 = metrics_page(&addr, &key).await?;
        let stop = Arc::new(AtomicBool::new(false));
        let traffic =
            tokio::spawn(tracker_traffic(addr.clone(), a.sites, a.pageviews_per_sec, stop.clone(), seq.clone()));
        tokio::time::sleep(phase_len).await;
        stop.store(true, Ordering::Relaxed);
        let base_accepted = traffic.await??;
        let m1 = metrics_page(&addr, &key).await?;

        // Phase 2: the tracker and the dashboards, each polling on its own period (starts spread over it).
        let stop = Arc::new(AtomicBool::new(false));
        let traffic =
            tokio::spawn(tracker_traffic(addr.clone(), a.sites, a.pageviews_per_sec, stop.clone(), seq.clone()));
        let start = Instant::now();
        let mut polls = Vec::with_capacity(a.dashboards);
        for (d, token) in tokens.into_iter().enumerate() {
            let (addr, sites) = (addr.clone(), sites.clone());
            let offset = Duration::from_millis(a.interval_ms * d as u64 / a.dashboards as u64);
            let period = Duration::from_millis(a.interval_ms);
            polls.push(tokio::spawn(async move {
                let mut c: Option<Conn> = None;
                let (mut lat, mut bad, mut visible) = (Vec::new(), 0usize, 0i64);
                let mut next = start + offset;
                while next < start + phase_len {
                    tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
                    next += period;
                    let now_ms = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_err(|e| e.to_string())?
                        .as_millis() as i64;
                    let body = serde_json::json!({ "siteIds": sites, "now": now_ms }).to_string();
                    let req = request("POST", "/federation/liveVisitors", &addr, &token, Some(&body));
                    let t = Instant::now();
                    // A keep-alive connection idle for a poll period may have been closed by the
                    // server: a browser opens another, and so does this dashboard (timed with it).
                    let r = match c.as_mut() {
                        Some(conn) => match conn.roundtrip(&req).await {
                            Ok(r) => r,
                            Err(_) => c.insert(Conn::open(&addr).await?).roundtrip(&req).await?,
                        },
                        None => c.insert(Conn::open(&addr).await?).roundtrip(&req).await?,
                    };
                    lat.push(t.elapsed().as_micros() as u32);
                    if r.status == 200 {
                        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
                        visible = v["count"].as_i64().unwrap_or(0);
                    } else {
                        bad += 1;
                    }
                }
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>((lat, bad, visible))
            }));
        }
        let (mut lat, mut bad, mut visible) = (Vec::new(), 0, 0);
        for p in polls {
            let (l, b, v) = p.await??;
            lat.extend(l);
            bad += b;
            visible = visible.max(v);
        }
        let elapsed = start.elapsed().max(phase_len);
        stop.store(true, Ordering::Relaxed);
        let poll_accepted = traffic.await??;
        let m2 = metrics_page(&addr, &key).await?;
        lat.sort_unstable();

        let q = |a: &str, b: &str| {
            metric(b, "rastrod_db_queries_total").zip(metric(a, "rastrod_db_queries_total")).map(|(y, x)| y - x)
        };
        let (base_q, poll_q) = (q(&m0, &m1).unwrap_or(f64::NAN), q(&m1, &m2).unwrap_or(f64::NAN));
        let secs = a.seconds as f64;
        let polls_per_sec = lat.len() as f64 / elapsed.as_secs_f64();
        let extra = (poll_q - base_q).max(0.0);
        println!();
        println!(
            "tracker alone:     {base_accepted} pageviews accepted in {secs:.0} s; {base_q:.0} statements = {:.1}/s",
            base_q / secs
        );
        println!(
            "tracker + polling: {poll_accepted} pageviews accepted; {} liveVisitors polls = {polls_per_sec:.1}/s \
             (p50 {:.2} ms, p99 {:.2} ms, {bad} not 200; up to {visible} visitors live in an answer); \
             {poll_q:.0} statements = {:.1}/s",
            lat.len(),
            pct(&lat, 50.0) as f64 / 1000.0,
            pct(&lat, 99.0) as f64 / 1000.0,
            poll_q / secs
        );
        println!(
            "the polling cost {extra:.0} statements = {:.1} statements/s against {polls_per_sec:.1} polls/s \
             ({:.3} statements per poll, each poll over {} sites; target: database reads ≪ requests)",
            extra / secs,
            extra / lat.len().max(1) as f64,
            a.sites
        );
        println!("{}", machine_line());
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    daemon.stop();
    drop(jwks);
    outcome
}
