//! `loadgen flood` (issue 25): does a tracker flood starve the rest? Two
//! phases of `--seconds` each on one daemon: leads arriving at
//! `--leads-per-sec` (recordLead over 8 keep-alive connections, paced) while
//! an operator signs in and opens the dashboard's first screen once a second
//! (the session, the clients, then Leads e gasto's three reads at once, as
//! the page makes them); then the same with the tracker posting one-pageview
//! requests at full speed from `--connections` connections. It prints the
//! latencies of each phase beside the targets (recordLead p99 ≤ 50 ms, the
//! first screen ≤ 300 ms under the flood).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{
    AdTree, AnyResult, Conn, Daemon, DaemonArgs, FreshDb, LEAD_SPREAD_DAYS, add_operator, create_site, expired_fill,
    ingest_body, machine_line, pct, request, tracker_event, tracker_request, wait_ready,
};

#[derive(clap::Args)]
pub(crate) struct FloodArgs {
    /// Tracker connections in the flood phase, each posting as fast as it is answered.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Length of each phase.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// recordLead calls per second in both phases.
    #[arg(long, default_value_t = 200)]
    leads_per_sec: u64,
    /// Distinct tracker visitors.
    #[arg(long, default_value_t = 20_000)]
    visitors: usize,
    #[command(flatten)]
    daemon: DaemonArgs,
}

const PASSWORD: &str = "loadgen-operator-password";
const LEAD_CONNECTIONS: u64 = 8;

/// Latencies of one kind of request in a phase, in microseconds.
#[derive(Default)]
struct Timings {
    us: Vec<u32>,
    failures: usize,
    first_failure: Option<String>,
}

impl Timings {
    fn add(&mut self, t: Instant, ok: bool) {
        self.us.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
        if !ok {
            self.failures += 1;
        }
    }

    fn merge(&mut self, other: Timings) {
        self.us.extend(other.us);
        self.failures += other.failures;
        self.first_failure = self.first_failure.take().or(other.first_failure);
    }

    /// A failure's answer, kept when it is the first.
    fn failed(&mut self, what: String) {
        self.first_failure.get_or_insert(what);
    }

    fn line(&mut self, name: &str, target: &str) -> String {
        self.us.sort_unstable();
        let ms = |p: f64| pct(&self.us, p) as f64 / 1000.0;
        let first =
            self.first_failure.as_deref().map(|f| format!("\n{:<13} first failure: {f}", "")).unwrap_or_default();
        format!(
            "{name:<13} {:>6} calls  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  failures {}   {target}{first}",
            self.us.len(),
            ms(50.0),
            ms(99.0),
            ms(100.0),
            self.failures
        )
    }
}

/// recordLead at `per_sec` over [`LEAD_CONNECTIONS`] connections until `stop`.
async fn leads(
    addr: String,
    key: String,
    per_sec: u64,
    next: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) -> AnyResult<Timings> {
    let tree = Arc::new(AdTree::new(1, 40));
    let t0 = 1_796_040_000_000;
    let mut tasks = Vec::new();
    for _ in 0..LEAD_CONNECTIONS {
        let (addr, key, tree, next, stop) = (addr.clone(), key.clone(), tree.clone(), next.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::open(&addr).await?;
            let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 * LEAD_CONNECTIONS / per_sec.max(1)));
            let mut timings = Timings::default();
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                let i = next.fetch_add(1, Ordering::Relaxed);
                let req = request(
                    "POST",
                    "/v1/sites/loja/leads",
                    &addr,
                    &key,
                    Some(&ingest_body(i, &tree, t0, LEAD_SPREAD_DAYS)),
                );
                let t = Instant::now();
                let res = conn.roundtrip(&req).await?;
                timings.add(t, res.status == 201);
                if res.status != 201 {
                    timings.failed(format!("{} {}", res.status, String::from_utf8_lossy(&res.body)));
                }
            }
            Ok::<_, std::io::Error>(timings)
        }));
    }
    let mut all = Timings::default();
    for t in tasks {
        all.merge(t.await??);
    }
    Ok(all)
}

/// Signs in and opens the first screen once a second until `stop`.
async fn operator(addr: String, stop: Arc<AtomicBool>) -> AnyResult<(Timings, Timings)> {
    let http = reqwest::Client::builder().pool_max_idle_per_host(4).build()?;
    let (mut signin, mut screen) = (Timings::default(), Timings::default());
    let day = 86_400_000i64;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64;
    let to = now - now.rem_euclid(day) + day - 1;
    let range =
        serde_json::json!({"siteIds": ["loja"], "from": to + 1 - 30 * day, "to": to, "compare": "previousPeriod"});
    let leads_q = format!("/dashboard/api/leads?siteIds=loja&from={}&to={to}&limit=25", to + 1 - 30 * day);
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let t = Instant::now();
        let res = http
            .post(format!("http://{addr}/dashboard/api/signin"))
            .json(&serde_json::json!({"name": "bench", "password": PASSWORD}))
            .send()
            .await?;
        let ok = res.status() == 200;
        let cookie = res
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .unwrap_or_default()
            .to_string();
        let me: serde_json::Value = res.json().await.unwrap_or_default();
        let csrf = me["csrfToken"].as_str().unwrap_or_default().to_string();
        signin.add(t, ok);
        let get = |path: &str| http.get(format!("http://{addr}{path}")).header("cookie", &cookie).send();
        let post = |path: &str| {
            let req = http.post(format!("http://{addr}{path}")).header("cookie", &cookie);
            req.header("x-csrf-token", &csrf).json(&range).send()
        };
        let t = Instant::now();
        let answers = [get("/dashboard/api/session").await?, get("/dashboard/api/sites").await?];
        let (a, b, c) = tokio::join!(
            post("/dashboard/api/reports/leads"),
            post("/dashboard/api/reports/leads-daily"),
            get(&leads_q)
        );
        let statuses: Vec<u16> = answers.into_iter().chain([a?, b?, c?]).map(|r| r.status().as_u16()).collect();
        let ok = statuses.iter().all(|s| *s == 200);
        screen.add(t, ok);
        if !ok {
            screen.failed(format!("statuses (session, clients, leads, daily, list) {statuses:?}"));
        }
        tokio::time::sleep(Duration::from_secs(1).saturating_sub(started.elapsed())).await;
    }
    Ok((signin, screen))
}

/// One-pageview tracker requests at full speed until `stop`; answers how many went in.
async fn tracker(addr: String, conns: usize, visitors: usize, stop: Arc<AtomicBool>) -> AnyResult<usize> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let (addr, next, stop) = (addr.clone(), next.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::open(&addr).await?;
            let mut ok = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let body = format!(
                    r#"{{"siteId":"loja","visitorId":"v_loadgen{:014}","events":[{}]}}"#,
                    i % visitors,
                    tracker_event(i)
                );
                ok += usize::from(conn.roundtrip(&tracker_request(&addr, &body)).await?.status == 200);
            }
            Ok::<_, std::io::Error>(ok)
        }));
    }
    let mut n = 0;
    for t in tasks {
        n += t.await??;
    }
    Ok(n)
}

pub(crate) fn flood(a: FloodArgs) -> AnyResult<()> {
    if a.connections == 0 || a.seconds == 0 || a.leads_per_sec == 0 || a.visitors == 0 {
        return Err("--connections, --seconds, --leads-per-sec and --visitors must be positive".into());
    }
    let db = FreshDb::new(a.daemon.database_url.as_deref())?;
    let backend = if db.pg.is_some() { "PostgreSQL (fresh schema)" } else { "SQLite (fresh file, synchronous=FULL)" };
    let binary = a.daemon.binary()?;
    add_operator(&binary, &db.url, "bench", PASSWORD)?;
    let env = [
        ("RASTRO_TRACKER_IP_RATE", "100000000".to_string()),
        ("RASTRO_TRACKER_SITE_RATE", "100000000".to_string()),
        ("RASTRO_TRACKER_NEW_VISITOR_RATE", "100000000".to_string()),
    ];
    let mut daemon = Daemon::start(binary, db, &env)?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        println!("{}", machine_line());
        println!(
            "daemon pid {pid} on {addr}, {backend}; {} leads/s; an operator's sign-in and first screen each second; \
             then the tracker from {} connections; phases of {} s",
            a.leads_per_sec, a.connections, a.seconds
        );
        let mut c = Conn::open(&addr).await?;
        create_site(&mut c, &addr, &key, expired_fill::SITE_BODY).await?;
        let next_lead = Arc::new(AtomicUsize::new(0));
        for flooded in [false, true] {
            let stop = Arc::new(AtomicBool::new(false));
            let lead_task =
                tokio::spawn(leads(addr.clone(), key.clone(), a.leads_per_sec, next_lead.clone(), stop.clone()));
            let operator_task = tokio::spawn(operator(addr.clone(), stop.clone()));
            let tracker_task =
                flooded.then(|| tokio::spawn(tracker(addr.clone(), a.connections, a.visitors, stop.clone())));
            let started = Instant::now();
            tokio::time::sleep(Duration::from_secs(a.seconds)).await;
            stop.store(true, Ordering::Relaxed);
            let mut leads = lead_task.await??;
            let (mut signin, mut screen) = operator_task.await??;
            let tracked = match tracker_task {
                Some(t) => Some(t.await??),
                None => None,
            };
            let secs = started.elapsed().as_secs_f64();
            println!();
            match tracked {
                Some(n) => {
                    println!("flood: the tracker at full speed, {n} pageviews accepted = {:.0}/s", n as f64 / secs)
                }
                None => println!("quiet: no tracker"),
            }
            println!("{}", leads.line("recordLead", "target under the flood: p99 ≤ 50 ms"));
            println!("{}", signin.line("sign-in", "(password hashing: CPU)"));
            println!(
                "{}",
                screen.line("first screen", "target under the flood: ≤ 300 ms (session, clients, three reads)")
            );
        }
        println!("{}", machine_line());
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    daemon.stop();
    outcome
}
