//! `loadgen live-push`: dashboards following `--sites` sites' live visitors
//! over Server-Sent Events (`GET /dashboard/api/live/stream`, issue 24)
//! while the tracker posts `--pageviews-per-sec` pageviews over those sites.
//! Three phases of `--seconds` each: the tracker alone, then with a tenth of
//! `--dashboards` streams open, then with all of them. The daemon's SQL
//! statements in each phase (`rastrod_db_queries_total`) beside the pushes
//! the streams received show what following costs the database: it should
//! not grow with the number of dashboards (one read per site and commit,
//! shared by every stream).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use super::analytics_poll::{create_sites, poll_site, tracker_traffic};
use super::{AnyResult, Daemon, DaemonArgs, FreshDb, machine_line, metric, metrics_page, wait_ready};

#[derive(clap::Args)]
pub(crate) struct LivePushArgs {
    /// Dashboards in the last phase (a tenth of them in the one before).
    #[arg(long, default_value_t = 200)]
    dashboards: usize,
    /// Sites every dashboard follows (1-10).
    #[arg(long, default_value_t = 10)]
    sites: usize,
    /// Length of each phase.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Tracker pageviews per second over all the sites, in every phase.
    #[arg(long, default_value_t = 10)]
    pageviews_per_sec: u64,
    #[command(flatten)]
    daemon: DaemonArgs,
}

const PASSWORD: &str = "loadgen-operator-password";

/// Opens `n` streams; each counts the `live` events it reads until `stop`.
async fn follow(
    http: &reqwest::Client,
    url: &str,
    cookie: &str,
    n: usize,
    stop: Arc<AtomicBool>,
    pushes: Arc<AtomicUsize>,
) -> AnyResult<Vec<tokio::task::JoinHandle<()>>> {
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        let mut res = http.get(url).header("cookie", cookie).send().await?;
        if res.status() != 200 {
            return Err(format!("the stream answered {}", res.status()).into());
        }
        let (stop, pushes) = (stop.clone(), pushes.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match tokio::time::timeout(Duration::from_millis(500), res.chunk()).await {
                    Ok(Ok(Some(chunk))) => {
                        let n = chunk.windows(11).filter(|w| *w == b"event: live").count();
                        pushes.fetch_add(n, Ordering::Relaxed);
                    }
                    Ok(_) => return,
                    Err(_) => {}
                }
            }
        }));
    }
    Ok(tasks)
}

pub(crate) fn live_push(a: LivePushArgs) -> AnyResult<()> {
    if a.dashboards < 10 || a.seconds == 0 || !(1..=10).contains(&a.sites) {
        return Err("--dashboards must be at least 10, --seconds positive, --sites 1-10".into());
    }
    let db = FreshDb::new(a.daemon.database_url.as_deref())?;
    let binary = a.daemon.binary()?;
    // The operator the dashboards sign in as, made before the daemon starts.
    super::add_operator(&binary, &db.url, "bench", PASSWORD)?;
    let env = [
        ("RASTRO_TRACKER_IP_RATE", "100000000".to_string()),
        ("RASTRO_TRACKER_NEW_VISITOR_RATE", "100000000".to_string()),
    ];
    let mut daemon = Daemon::start(binary, db, &env)?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        println!("{}", machine_line());
        println!(
            "daemon pid {pid} on {addr}; {} then {} dashboards following {} sites over SSE; {} pageviews/s; phases of {} s",
            a.dashboards / 10,
            a.dashboards,
            a.sites,
            a.pageviews_per_sec,
            a.seconds
        );
        create_sites(&addr, &key, &pid, a.sites).await?;
        let http = reqwest::Client::builder().pool_max_idle_per_host(0).build()?;
        let signin = http
            .post(format!("http://{addr}/dashboard/api/signin"))
            .json(&serde_json::json!({"name": "bench", "password": PASSWORD}))
            .send()
            .await?;
        let cookie = signin
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .ok_or("no session cookie")?
            .to_string();
        let sites: Vec<String> = (0..a.sites).map(poll_site).collect();
        let url = format!("http://{addr}/dashboard/api/live/stream?siteIds={}", sites.join(","));
        let seq = Arc::new(AtomicUsize::new(0));
        let secs = a.seconds as f64;
        let mut baseline = 0.0;
        for dashboards in [0, a.dashboards / 10, a.dashboards] {
            let (stop, pushes) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
            let streams = follow(&http, &url, &cookie, dashboards, stop.clone(), pushes.clone()).await?;
            let m0 = metrics_page(&addr, &key).await?;
            pushes.store(0, Ordering::Relaxed);
            let traffic_stop = Arc::new(AtomicBool::new(false));
            let traffic =
                tokio::spawn(tracker_traffic(addr.clone(), a.sites, a.pageviews_per_sec, traffic_stop.clone(), seq.clone()));
            tokio::time::sleep(Duration::from_secs(a.seconds)).await;
            traffic_stop.store(true, Ordering::Relaxed);
            let accepted = traffic.await??;
            let m1 = metrics_page(&addr, &key).await?;
            let received = pushes.load(Ordering::Relaxed);
            stop.store(true, Ordering::Relaxed);
            for s in streams {
                let _ = s.await;
            }
            let q = metric(&m1, "rastrod_db_queries_total")
                .zip(metric(&m0, "rastrod_db_queries_total"))
                .map_or(f64::NAN, |(y, x)| y - x);
            if dashboards == 0 {
                baseline = q / secs;
            }
            println!(
                "{dashboards:>4} dashboards: {accepted} pageviews accepted; {:.1} statements/s ({:+.1}/s over the tracker alone); \
                 {received} pushes received = {:.1}/s ({:.2} per dashboard per second)",
                q / secs,
                q / secs - baseline,
                received as f64 / secs,
                received as f64 / secs / dashboards.max(1) as f64
            );
        }
        println!("target: the statements per second do not grow with the dashboards (one read per site and commit)");
        println!("{}", machine_line());
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    daemon.stop();
    outcome
}
