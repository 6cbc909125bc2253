//! The load harness (a benchmark, not a test). Build it with the daemon in
//! release mode and run it from the target folder:
//!
//! ```text
//! cargo build --release --features bench --bins
//! target/release/loadgen ingest                 # recordLead vs GET /v1/ping over HTTP
//! target/release/loadgen report                 # leadsReport over 1,000,000 leads, SQLite
//! target/release/loadgen report --database-url postgres://root@127.0.0.1:5432/test
//! target/release/loadgen federation             # 200 dashboards polling metaStatus vs GET /v1/ping
//! target/release/loadgen events                 # the tracker's POST /rastro/events vs GET /v1/ping
//! target/release/loadgen events --expired 5000000   # the same while retention deletes 5M expired events
//! target/release/loadgen analytics-reports      # (alias `overview`) 10 sites × 366 days, every analytics read timed
//! target/release/loadgen analytics-poll         # 200 dashboards polling liveVisitors every 5 s
//! ```
//!
//! `ingest` starts `rastrod serve` (the binary next to this one) as a child
//! process on a fresh SQLite file and a free loopback port, creates a site, then
//! sends `--requests` recordLead calls (unique leadKeys, ad ids and names) from
//! `--connections` keep-alive HTTP/1.1 connections, then as many `GET /v1/ping`,
//! and prints the rates, latencies and their ratio. The child inherits the
//! environment, so `RASTRO_WORKERS`, `RASTRO_WRITE_BATCH_MAX` and the like apply
//! to it; the database URL, the listen address and the host key are the
//! harness's own.
//!
//! `report` fills a fresh database in-process through the service functions the
//! host API calls (`sites::create`, `leads::record`, `leads::set_stage`), many
//! leads per transaction, then times `leads_report` as the HTTP handler runs it
//! (on the read pool).
//!
//! `federation` makes an ES256 (P-256) key pair, writes its JWKS to a temp
//! file and starts `rastrod serve` with the federated API on
//! (`RASTRO_FEDERATION_ISSUER`, `_AUDIENCE`, `_JWKS` pointing at that file).
//! Over the host API it creates `--dashboards` × `--sites-per-dashboard` sites
//! (an owner per dashboard) and a grant per dashboard (`PUT
//! /v1/federation/grants/dash-NNNN`), then signs one token per dashboard (an
//! hour, `analytics:read`). After a warm-up that calls once per dashboard at
//! least, every dashboard polls `POST /federation/metaStatus` over its own
//! sites on its own keep-alive connection in a closed loop (`--requests` in
//! all; the JWT is checked on every call, the grant read on every call), then
//! as many `GET /v1/ping` go over as many connections. It prints the rates,
//! latencies, their ratio against the targets (≥ 50 % of ping, p99 ≤ 20 ms),
//! the daemon's SQL statements during the metaStatus phase
//! (`rastrod_db_queries_total` on `/metrics`, before and after) per second and
//! per request, and any answer that was not 200.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[path = "bench_util/analytics_poll.rs"]
mod analytics_poll;
#[path = "bench_util/analytics_reports.rs"]
mod analytics_reports;
#[path = "bench_util/expired_fill.rs"]
mod expired_fill;

use clap::{Args, Parser, Subcommand};
use diesel::Connection;
use diesel::connection::SimpleConnection;
use rastrod::clock::{DAY_MS, HOUR_MS};
use rastrod::config::LogFormat;
use rastrod::db::{Backend, Db};
use rastrod::error::Error;
use rastrod::service::leads::reports::{LeadsReportArgs, leads_report};
use rastrod::service::leads::{self, RecordLead, SetLeadStage, Stage};
use rastrod::service::sites::{self, CreateSite};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Parser)]
#[command(
    name = "loadgen",
    about = "rastrod's load harness: ingest rate over HTTP, report latency over 1M leads, dashboards polling metaStatus."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start rastrod on a fresh SQLite file; drive recordLead, then GET /v1/ping; compare.
    Ingest(IngestArgs),
    /// Fill a fresh database with leads through the services, then time leadsReport.
    Report(ReportArgs),
    /// Start rastrod with federation on; dashboards poll metaStatus with their JWTs, then GET /v1/ping; compare.
    Federation(FederationArgs),
    /// Start rastrod; the tracker's POST /rastro/events (one pageview per request, then 50-event
    /// batches), then GET /v1/ping; rollup lag, bytes per stored pageview, peak RSS.
    Events(EventsArgs),
    /// Fill a fresh database through the import (goals, funnels, vitals, the site map) and identified
    /// people, then time overview, liveVisitors, goalsReport, funnelsReport, affiliatesReport,
    /// vitalsReport, siteMap and listPeople in process.
    #[command(visible_alias = "overview")]
    AnalyticsReports(AnalyticsReportsArgs),
    /// Start rastrod with federation on; dashboards poll liveVisitors every 5 s while the tracker
    /// posts pageviews; the database statements the polling costs against the polls.
    AnalyticsPoll(analytics_poll::PollArgs),
}

#[derive(Args)]
struct AnalyticsReportsArgs {
    /// Events to import (pageviews, custom events, vitals), spread over the sites and days.
    #[arg(long, default_value_t = 1_000_000)]
    events: usize,
    #[arg(long, default_value_t = 10)]
    sites: usize,
    #[arg(long, default_value_t = 366)]
    days: i64,
    /// Timed runs of each read.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Identified people on the first site (listPeople's searches).
    #[arg(long, default_value_t = 1_000_000)]
    profiles: usize,
    /// Default: a fresh SQLite file in the temp folder. postgres://... gets a fresh schema.
    #[arg(long)]
    database_url: Option<String>,
    /// Keep the database (SQLite file or PostgreSQL schema) and print its URL.
    #[arg(long)]
    keep: bool,
    /// Skip the event fill: time the reads on the database at --database-url (a --keep run's URL).
    #[arg(long, requires = "database_url")]
    existing: bool,
    /// Time only the reads whose name starts with this (e.g. `funnelsReport`), for profiling.
    #[arg(long)]
    only: Option<String>,
}

#[derive(Args)]
struct EventsArgs {
    /// One-pageview requests, and as many pings.
    #[arg(long, default_value_t = 100_000)]
    requests: usize,
    /// 50-event batch requests.
    #[arg(long, default_value_t = 2_000)]
    batches: usize,
    /// Distinct visitors the requests come from (each a browser sending its pageviews in order).
    #[arg(long, default_value_t = 20_000)]
    visitors: usize,
    #[arg(long, default_value_t = 64)]
    connections: usize,
    #[arg(long, default_value_t = 5_000)]
    warmup: usize,
    /// Events 100 days old the retention actor deletes (policy: events 30 days) while the phases run.
    #[arg(long, default_value_t = 0)]
    expired: usize,
    #[command(flatten)]
    daemon: DaemonArgs,
}

#[derive(Args)]
struct FederationArgs {
    /// Dashboards: each one a grant, a token and one keep-alive connection polling in a closed loop.
    #[arg(long, default_value_t = 200)]
    dashboards: usize,
    /// Sites of each dashboard's grant, all named in each of its metaStatus calls (1-10).
    #[arg(long, default_value_t = 10)]
    sites_per_dashboard: usize,
    /// metaStatus calls, and as many pings.
    #[arg(long, default_value_t = 100_000)]
    requests: usize,
    /// metaStatus calls sent before measuring (at least one per dashboard: every token verified once).
    #[arg(long, default_value_t = 5_000)]
    warmup: usize,
    #[command(flatten)]
    daemon: DaemonArgs,
}

#[derive(Args)]
struct IngestArgs {
    /// recordLead calls, and as many pings.
    #[arg(long, default_value_t = 100_000)]
    requests: usize,
    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Pings sent before measuring anything (warms the daemon and the connections).
    #[arg(long, default_value_t = 5_000)]
    warmup: usize,
    #[command(flatten)]
    daemon: DaemonArgs,
}

/// How the HTTP benchmarks start the daemon and their client.
#[derive(Args)]
struct DaemonArgs {
    /// Threads of the client's runtime (the client shares the machine with the daemon).
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// The daemon's binary; default: `rastrod` next to this binary.
    #[arg(long)]
    rastrod: Option<PathBuf>,
    /// Serve from this database instead of a fresh SQLite file (postgres://... gets a fresh schema).
    #[arg(long)]
    database_url: Option<String>,
}

impl DaemonArgs {
    fn binary(&self) -> io::Result<PathBuf> {
        match &self.rastrod {
            Some(p) => Ok(p.clone()),
            None => Ok(std::env::current_exe()?.with_file_name("rastrod")),
        }
    }

    fn client_runtime(&self) -> io::Result<tokio::runtime::Runtime> {
        tokio::runtime::Builder::new_multi_thread().worker_threads(self.client_threads.max(1)).enable_all().build()
    }
}

#[derive(Args)]
struct ReportArgs {
    /// Default: a fresh SQLite file in the temp folder. postgres://... gets a fresh schema.
    #[arg(long)]
    database_url: Option<String>,
    /// Leads to write (spread over the sites and days).
    #[arg(long, default_value_t = 1_000_000)]
    leads: usize,
    #[arg(long, default_value_t = 10)]
    sites: usize,
    #[arg(long, default_value_t = 366)]
    days: i64,
    /// Ads per site (4 campaigns × 2 ad sets × ads/8 ads).
    #[arg(long, default_value_t = 40)]
    ads_per_site: usize,
    /// Leads per fill transaction; default 5,000 on SQLite, 500 on PostgreSQL
    /// (where every row version of an open transaction stays until it commits).
    #[arg(long)]
    batch: Option<usize>,
    /// Fill connections at once (each takes its own sites); default 1 on SQLite, 2 on PostgreSQL.
    #[arg(long)]
    fill_threads: Option<usize>,
    /// Timed runs of each report case.
    #[arg(long, default_value_t = 30)]
    iterations: usize,
    /// Keep the database (SQLite file or PostgreSQL schema) and print where it is.
    #[arg(long)]
    keep: bool,
    /// Skip the fill: time the reports on the database at --database-url as it is (after --keep).
    #[arg(long, requires = "database_url")]
    existing: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    rastrod::telemetry::init("warn", LogFormat::Text);
    let outcome = match cli.command {
        Cmd::Ingest(a) => ingest(a),
        Cmd::Report(a) => report(a),
        Cmd::Federation(a) => federation(a),
        Cmd::Events(a) => events(a),
        Cmd::AnalyticsReports(a) => analytics_reports_cmd(a),
        Cmd::AnalyticsPoll(a) => analytics_poll::run(a),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}

type AnyResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn analytics_reports_cmd(a: AnalyticsReportsArgs) -> AnyResult<()> {
    let db = if a.existing {
        FreshDb::existing(a.database_url.as_deref().unwrap_or_default())
    } else {
        let mut f = FreshDb::new(a.database_url.as_deref())?;
        f.keep = a.keep;
        f
    };
    println!("{}", machine_line());
    if db.keep {
        println!("database kept at {}", db.url);
    }
    let plan = analytics_reports::Plan {
        events: a.events,
        sites: a.sites.clamp(1, 10),
        days: a.days.clamp(1, 366),
        runs: a.runs.max(1),
        profiles: a.profiles,
        existing: a.existing,
        only: a.only,
    };
    let outcome = analytics_reports::run(&db.url, plan);
    println!("{}", machine_line());
    outcome
}

// ---------------------------------------------------------------------------
// Shared bits: fresh databases, random keys, statistics, machine load.

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{prefix}_{}_{}", std::process::id(), nanos % 1_000_000_000)
}

/// A fresh database: a SQLite file in its own temp folder, or a new PostgreSQL schema.
struct FreshDb {
    url: String,
    dir: Option<PathBuf>,
    pg: Option<(String, String)>,
    keep: bool,
}

impl FreshDb {
    fn new(base: Option<&str>) -> AnyResult<FreshDb> {
        match base {
            None => {
                let dir = std::env::temp_dir().join(unique("rastrod_loadgen"));
                std::fs::create_dir_all(&dir)?;
                let url = format!("sqlite://{}", dir.join("rastrod.db").display());
                Ok(FreshDb { url, dir: Some(dir), pg: None, keep: false })
            }
            Some(base) if base.starts_with("postgres://") || base.starts_with("postgresql://") => {
                let schema = unique("loadgen");
                let mut conn = diesel::PgConnection::establish(base)?;
                conn.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
                let sep = if base.contains('?') { '&' } else { '?' };
                let url = format!("{base}{sep}options=-csearch_path%3D{schema}");
                Ok(FreshDb { url, dir: None, pg: Some((base.to_string(), schema)), keep: false })
            }
            Some(other) => {
                Err(format!("--database-url {other}: expected postgres://... (omit it for a fresh SQLite file)").into())
            }
        }
    }

    fn existing(url: &str) -> FreshDb {
        FreshDb { url: url.to_string(), dir: None, pg: None, keep: true }
    }
}

impl Drop for FreshDb {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some((base, schema)) = &self.pg
            && let Ok(mut conn) = diesel::PgConnection::establish(base)
        {
            let _ = conn.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}

fn random_hex(bytes: usize) -> AnyResult<String> {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).map_err(|e| format!("random: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A tiny deterministic generator: the same data on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Nearest-rank percentile of sorted samples.
fn pct<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// CPU seconds (user + system) a process has used so far, from /proc (Linux).
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the name; clock ticks of 1/100 s.
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// The CPU seconds of the daemon's group-commit writer thread (`rastrod-writer`).
fn writer_cpu_seconds(pid: &str) -> Option<f64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for t in tasks.flatten() {
        let tid = t.file_name().to_string_lossy().into_owned();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap_or_default();
        if comm.trim() == "rastrod-writer" {
            return cpu_seconds(&format!("{pid}/task/{tid}"));
        }
    }
    None
}

/// Nanoseconds on CPU of every thread of this process (Linux schedstat).
fn cpu_ns_self() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks.flatten().filter_map(|t| schedstat_ns(&t.path().join("schedstat"))).sum()
}

/// Nanoseconds on CPU of every `postgres` process of the machine (the server,
/// when it runs here): what a PostgreSQL report costs the server.
fn cpu_ns_postgres() -> u64 {
    let Ok(procs) = std::fs::read_dir("/proc") else { return 0 };
    procs
        .flatten()
        .filter(|p| std::fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim() == "postgres"))
        .filter_map(|p| schedstat_ns(&p.path().join("schedstat")))
        .sum()
}

fn schedstat_ns(path: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.split_whitespace().next()?.parse().ok()
}

fn machine_line() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("machine: {cores} cores, load average {}", loadavg())
}

// ---------------------------------------------------------------------------
// ingest: recordLead and GET /v1/ping over keep-alive HTTP/1.1.

/// The daemon as a child process; killed (and its database removed) on drop.
struct Daemon {
    child: Option<Child>,
    addr: String,
    key: String,
    _db: FreshDb,
}

impl Daemon {
    fn start(binary: PathBuf, db: FreshDb, env: &[(&str, String)]) -> AnyResult<Daemon> {
        if !binary.exists() {
            return Err(format!(
                "{} not found: build it with `cargo build --release --features bench --bins`",
                binary.display()
            )
            .into());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = format!("127.0.0.1:{port}");
        let key = format!("loadgen-{}", random_hex(16)?);
        let child = Command::new(&binary)
            .arg("serve")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("RASTRO_DATABASE_URL", &db.url)
            .env("RASTRO_HOST_API_KEY", &key)
            .env("RASTRO_LISTEN", &addr)
            .env("RASTRO_LOG", std::env::var("RASTRO_LOG").unwrap_or_else(|_| "warn".into()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        Ok(Daemon { child: Some(child), addr, key, _db: db })
    }

    fn pid(&self) -> String {
        self.child.as_ref().map(|c| c.id().to_string()).unwrap_or_default()
    }

    /// SIGTERM, then a wait for the graceful shutdown (queued writes commit).
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One keep-alive HTTP/1.1 connection: writes a request, reads one
/// Content-Length-framed response.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

struct Response {
    status: u16,
    body: Vec<u8>,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl Conn {
    async fn open(addr: &str) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn { stream, buf: Vec::with_capacity(8192) })
    }

    async fn roundtrip(&mut self, request: &[u8]) -> io::Result<Response> {
        self.stream.write_all(request).await?;
        let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
        loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buf[..end]).map_err(|_| bad("non-UTF-8 response head"))?;
                let mut lines = head.split("\r\n");
                let status: u16 = lines
                    .next()
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| bad("bad status line"))?;
                let mut length = None;
                for line in lines {
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse::<usize>().ok();
                        } else if k.eq_ignore_ascii_case("transfer-encoding") {
                            return Err(bad("chunked responses are not supported by this client"));
                        }
                    }
                }
                let length = length.ok_or_else(|| bad("response without Content-Length"))?;
                let total = end + 4 + length;
                while self.buf.len() < total {
                    if self.stream.read_buf(&mut self.buf).await? == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                }
                let body = self.buf[end + 4..total].to_vec();
                self.buf.drain(..total);
                return Ok(Response { status, body });
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }
}

fn request(method: &str, path: &str, host: &str, key: &str, body: Option<&str>) -> Vec<u8> {
    let mut r = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n");
    if let Some(b) = body {
        r.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}", b.len()));
    } else {
        r.push_str("\r\n");
    }
    r.into_bytes()
}

/// The ads a load-test site's leads come from: (campaign, ad set, ad) ids and names.
struct AdTree {
    ads: Vec<[String; 6]>,
}

impl AdTree {
    fn new(site_no: usize, ads: usize) -> AdTree {
        let ads = (0..ads.max(1))
            .map(|a| {
                let (c, s) = (a % 4, (a / 4) % 2);
                [
                    format!("1202{site_no:04}{c:010}"),
                    format!("Campanha {c} do site {site_no}"),
                    format!("1203{site_no:04}{c:05}{s:05}"),
                    format!("Público {s} da campanha {c}"),
                    format!("1204{site_no:04}{a:010}"),
                    format!("Anúncio {a}: vídeo oferta"),
                ]
            })
            .collect();
        AdTree { ads }
    }
}

/// The recordLead body of lead `i`: 80% from an ad (ids, names, click id), the rest organic.
fn ingest_body(i: usize, tree: &AdTree, t0: i64) -> String {
    let mut rng = Lcg(i as u64 ^ 0x9e37_79b9_7f4a_7c15);
    let occurred = t0 - (rng.below(30 * DAY_MS as u64) as i64);
    if rng.below(10) < 8 {
        let [cid, cname, sid, sname, aid, aname] = &tree.ads[rng.below(tree.ads.len() as u64) as usize];
        format!(
            r#"{{"leadKey":"wa:5511{i:09}","eventId":"ev-{i}-new","occurredAt":{occurred},"label":"Cliente {i}","origin":"ctwa_ad","adId":"{aid}","adsetId":"{sid}","campaignId":"{cid}","adName":"{aname}","adsetName":"{sname}","campaignName":"{cname}","clickId":"ARAkLkA8rmlYlW{i:012}"}}"#
        )
    } else {
        format!(
            r#"{{"leadKey":"wa:5511{i:09}","eventId":"ev-{i}-new","occurredAt":{occurred},"label":"Cliente {i}","origin":"organic"}}"#
        )
    }
}

struct PhaseResult {
    name: &'static str,
    count: usize,
    elapsed: Duration,
    lat_us: Vec<u32>,
    statuses: BTreeMap<u16, usize>,
    first_bad: Option<String>,
    server_cpu: Option<f64>,
    writer_cpu: Option<f64>,
    client_cpu: Option<f64>,
}

impl PhaseResult {
    fn rate(&self) -> f64 {
        self.count as f64 / self.elapsed.as_secs_f64()
    }

    fn print(&self) {
        let ms = |us: u32| us as f64 / 1000.0;
        println!(
            "{:<11} {:>8} req in {:>6.2} s = {:>8.0} req/s   p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms",
            self.name,
            self.count,
            self.elapsed.as_secs_f64(),
            self.rate(),
            ms(pct(&self.lat_us, 50.0)),
            ms(pct(&self.lat_us, 99.0)),
            ms(self.lat_us.last().copied().unwrap_or(0)),
        );
        let per = |cpu: Option<f64>| cpu.map_or("?".into(), |c| format!("{:.1} µs", c * 1e6 / self.count as f64));
        println!(
            "{:<11} statuses {:?}; CPU per request: daemon {} (of which the writer thread {}), client {}",
            "",
            self.statuses,
            per(self.server_cpu),
            per(self.writer_cpu),
            per(self.client_cpu)
        );
        if let Some(b) = &self.first_bad {
            println!("{:<11} first unexpected answer: {b}", "");
        }
    }
}

/// Sends `count` requests made by `make(c, i)` over `conns` connections; each
/// connection (number `c`) takes the next index `i` until none is left.
async fn phase<F>(
    name: &'static str,
    addr: &str,
    conns: usize,
    count: usize,
    expect: &'static [u16],
    daemon_pid: &str,
    make: Arc<F>,
) -> AnyResult<PhaseResult>
where
    F: Fn(usize, usize) -> Vec<u8> + Send + Sync + 'static,
{
    let mut opened = Vec::with_capacity(conns);
    for _ in 0..conns {
        opened.push(Conn::open(addr).await?);
    }
    let next = Arc::new(AtomicUsize::new(0));
    let (server0, writer0, client0) = (cpu_seconds(daemon_pid), writer_cpu_seconds(daemon_pid), cpu_seconds("self"));
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(conns);
    for (c, mut conn) in opened.into_iter().enumerate() {
        let (next, make) = (next.clone(), make.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(count / conns + 1);
            let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
            let mut first_bad = None;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let req = make(c, i);
                let t = Instant::now();
                let res = conn
                    .roundtrip(&req)
                    .await
                    .map_err(|e| io::Error::new(e.kind(), format!("{name} request {i}: {e}")))?;
                lat.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                *statuses.entry(res.status).or_default() += 1;
                if !expect.contains(&res.status) && first_bad.is_none() {
                    first_bad = Some(format!("{} {}", res.status, String::from_utf8_lossy(&res.body)));
                }
            }
            Ok::<_, io::Error>((lat, statuses, first_bad))
        }));
    }
    let mut lat_us = Vec::with_capacity(count);
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    let mut first_bad = None;
    for t in tasks {
        let (lat, st, bad) = t.await??;
        lat_us.extend(lat);
        for (k, v) in st {
            *statuses.entry(k).or_default() += v;
        }
        first_bad = first_bad.or(bad);
    }
    let elapsed = start.elapsed();
    let (server1, writer1, client1) = (cpu_seconds(daemon_pid), writer_cpu_seconds(daemon_pid), cpu_seconds("self"));
    lat_us.sort_unstable();
    Ok(PhaseResult {
        name,
        count,
        elapsed,
        lat_us,
        statuses,
        first_bad,
        server_cpu: server0.zip(server1).map(|(a, b)| b - a),
        writer_cpu: writer0.zip(writer1).map(|(a, b)| b - a),
        client_cpu: client0.zip(client1).map(|(a, b)| b - a),
    })
}

async fn wait_ready(addr: &str, key: &str) -> AnyResult<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let req = request("GET", "/health", addr, key, None);
    loop {
        if let Ok(mut c) = Conn::open(addr).await
            && let Ok(r) = c.roundtrip(&req).await
            && r.status == 200
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err("the daemon did not answer /health within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `POST /v1/sites` with `body`, expecting 201.
async fn create_site(c: &mut Conn, addr: &str, key: &str, body: &str) -> AnyResult<()> {
    let r = c.roundtrip(&request("POST", "/v1/sites", addr, key, Some(body))).await?;
    if r.status != 201 {
        return Err(format!("creating the site: {} {}", r.status, String::from_utf8_lossy(&r.body)).into());
    }
    Ok(())
}

/// The authenticated no-op request every benchmark compares with: `GET /v1/ping`.
fn ping_maker(addr: &str, key: &str) -> Arc<impl Fn(usize, usize) -> Vec<u8> + Send + Sync + 'static> {
    let req = request("GET", "/v1/ping", addr, key, None);
    Arc::new(move |_c: usize, _i: usize| req.clone())
}

/// A counter of the daemon's /metrics page.
fn metric(page: &str, name: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
}

fn ingest(a: IngestArgs) -> AnyResult<()> {
    if a.connections == 0 || a.requests == 0 {
        return Err("--connections and --requests must be positive".into());
    }
    let binary = a.daemon.binary()?;
    let db = FreshDb::new(a.daemon.database_url.as_deref())?;
    let backend = if db.pg.is_some() { "PostgreSQL (fresh schema)" } else { "SQLite (fresh file, synchronous=FULL)" };
    let mut daemon = Daemon::start(binary, db, &[])?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        println!("{}", machine_line());
        println!(
            "daemon pid {pid} on {addr}, {backend}; {} connections, {} client thread(s), {} requests per phase",
            a.connections, a.daemon.client_threads, a.requests
        );
        let mut c = Conn::open(&addr).await?;
        let site = r#"{"siteId":"loadgen","name":"Load test","currency":"BRL","timezone":"America/Sao_Paulo","ownerId":"loadgen"}"#;
        create_site(&mut c, &addr, &key, site).await?;
        let metrics0 = String::from_utf8_lossy(&c.roundtrip(&request("GET", "/metrics", &addr, &key, None)).await?.body).into_owned();

        let ping = ping_maker(&addr, &key);
        if a.warmup > 0 {
            phase("warmup", &addr, a.connections, a.warmup, &[200], &pid, ping.clone()).await?;
        }
        let tree = Arc::new(AdTree::new(1, 40));
        let t0 = 1_796_040_000_000; // 2026-11-30T12:00:00Z; leads of the 30 days before it
        let record = {
            let (addr, key) = (addr.clone(), key.clone());
            Arc::new(move |_c: usize, i: usize| {
                request("POST", "/v1/sites/loadgen/leads", &addr, &key, Some(&ingest_body(i, &tree, t0)))
            })
        };
        let rec = phase("recordLead", &addr, a.connections, a.requests, &[201], &pid, record).await?;
        // A fresh connection: the first one idled past the daemon's keep-alive timeout.
        let mut c = Conn::open(&addr).await?;
        let metrics1 = String::from_utf8_lossy(&c.roundtrip(&request("GET", "/metrics", &addr, &key, None)).await?.body).into_owned();
        let png = phase("ping", &addr, a.connections, a.requests, &[200], &pid, ping).await?;

        println!();
        rec.print();
        png.print();
        let ratio = rec.rate() / png.rate();
        println!(
            "ratio recordLead/ping = {:.1} %  (target ≥ 50 %; recordLead p99 {:.2} ms, target ≤ 50 ms)",
            ratio * 100.0,
            pct(&rec.lat_us, 99.0) as f64 / 1000.0
        );
        let diff = |name: &str| Some(metric(&metrics1, name)? - metric(&metrics0, name)?);
        if let (Some(batches), Some(writes)) = (diff("rastrod_db_write_batches_total"), diff("rastrod_db_writes_total"))
            && batches > 0.0
        {
            println!(
                "group commit during recordLead: {writes:.0} writes in {batches:.0} transactions ({:.1} writes per commit, {:.0} commits/s)",
                writes / batches,
                batches / rec.elapsed.as_secs_f64()
            );
        }
        println!("{}", machine_line());
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    daemon.stop();
    outcome
}

// ---------------------------------------------------------------------------
// events: the tracker's ingestion.

const EVENTS_UA: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const EVENTS_PATHS: &[&str] = &["/", "/p/1", "/p/2", "/p/3", "/blog/como-escolher", "/carrinho", "/checkout", "/sobre"];

/// A tracker request: `POST /rastro/events` as a browser sends it (text/plain, a UA, the page's Origin).
fn tracker_request(host: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /rastro/events HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {EVENTS_UA}\r\nOrigin: https://loja.example.com\r\n\
         Content-Type: text/plain;charset=UTF-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Event `i` of the run: visitor `i % visitors`, a fresh pageview id, a path, sometimes a landing with UTM.
fn tracker_event(i: usize) -> String {
    let path = EVENTS_PATHS[i % EVENTS_PATHS.len()];
    let query = if i.is_multiple_of(7) { "?utm_source=ig&utm_medium=social&utm_campaign=natal" } else { "" };
    format!(
        r#"{{"type":"pageview","pageviewId":"p_loadgen{i:016}","url":"https://loja.example.com{path}{query}","referrer":"https://www.google.com/"}}"#
    )
}

fn peak_rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
}

fn events(a: EventsArgs) -> AnyResult<()> {
    if a.connections == 0 || a.requests == 0 || a.visitors == 0 {
        return Err("--connections, --requests and --visitors must be positive".into());
    }
    let binary = a.daemon.binary()?;
    let db = FreshDb::new(a.daemon.database_url.as_deref())?;
    let sqlite_file = db.dir.as_ref().map(|d| d.join("rastrod.db"));
    let backend = if db.pg.is_some() { "PostgreSQL (fresh schema)" } else { "SQLite (fresh file, synchronous=FULL)" };
    let db_url = db.url.clone();
    if a.expired > 0 {
        expired_fill::fill(&db_url, a.expired)?;
    }
    let cutoff =
        expired_fill::cutoff(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64);
    // Limits far above the load: this measures ingestion, not the limiter.
    let env = [
        ("RASTRO_TRACKER_IP_RATE", "100000000".to_string()),
        ("RASTRO_TRACKER_SITE_RATE", "100000000".to_string()),
        ("RASTRO_TRACKER_NEW_VISITOR_RATE", "100000000".to_string()),
        // The retention actor's first round 3 s after the start (during the warm-up), when there is a backlog.
        ("RASTRO_RETENTION_INTERVAL", if a.expired > 0 { "3s" } else { "1h" }.to_string()),
    ];
    let mut daemon = Daemon::start(binary, db, &env)?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        println!("{}", machine_line());
        println!(
            "daemon pid {pid} on {addr}, {backend}; {} connections, {} visitors, {} one-pageview requests, {} 50-event batches",
            a.connections, a.visitors, a.requests, a.batches
        );
        let mut c = Conn::open(&addr).await?;
        if a.expired == 0 {
            create_site(&mut c, &addr, &key, expired_fill::SITE_BODY).await?;
        }
        let ping = ping_maker(&addr, &key);
        if a.warmup > 0 {
            phase("warmup", &addr, a.connections, a.warmup, &[200], &pid, ping.clone()).await?;
        }
        let store = rastrod::db::Db::open(&db_url, 1, 1, 16)?;
        if a.expired > 0 {
            // The deletion must be under way when the measured phases start.
            let t = Instant::now();
            while expired_fill::left(&store, cutoff).await? >= a.expired as i64 && t.elapsed() < Duration::from_secs(30) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        let (expired0, deleting) = (expired_fill::left(&store, cutoff).await?, Instant::now());
        let visitors = a.visitors;
        let one = {
            let addr = addr.clone();
            Arc::new(move |_c: usize, i: usize| {
                let body = format!(r#"{{"siteId":"loja","visitorId":"v_loadgen{:014}","events":[{}]}}"#, i % visitors, tracker_event(i));
                tracker_request(&addr, &body)
            })
        };
        let pv = phase("pageview", &addr, a.connections, a.requests, &[200], &pid, one).await?;
        let offset = a.requests;
        let batch = {
            let addr = addr.clone();
            Arc::new(move |_c: usize, i: usize| {
                let events: Vec<String> = (0..50).map(|k| tracker_event(offset + i * 50 + k)).collect();
                let body = format!(r#"{{"siteId":"loja","visitorId":"v_loadgenb{:013}","events":[{}]}}"#, i, events.join(","));
                tracker_request(&addr, &body)
            })
        };
        let bt = if a.batches > 0 { Some(phase("batch50", &addr, a.connections, a.batches, &[200], &pid, batch).await?) } else { None };
        let (expired1, during) = (expired_fill::left(&store, cutoff).await?, deleting.elapsed());
        // Rollup lag: how long until the report actor has applied everything accepted.
        let lag_start = Instant::now();
        loop {
            let left = store.run(|c| Ok(rastrod::store::analytics::outbox_len(c)?)).await?;
            if left == 0 {
                break;
            }
            if lag_start.elapsed() > Duration::from_secs(120) {
                return Err(format!("{left} events still not applied after 120 s").into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let drain = lag_start.elapsed();
        let mut c = Conn::open(&addr).await?;
        let png = phase("ping", &addr, a.connections, a.requests, &[200], &pid, ping).await?;
        let _ = c.roundtrip(&request("GET", "/health", &addr, &key, None)).await;

        println!();
        pv.print();
        if let Some(b) = &bt {
            b.print();
            println!("{:<11} = {:.0} events/s in 50-event batches", "", b.rate() * 50.0);
        }
        png.print();
        println!(
            "ratio pageview/ping = {:.1} %; pageview p99 {:.2} ms (target ≥ 20,000 events/s and p99 ≤ 25 ms on SQLite, ≥ 5,000/s on PostgreSQL)",
            pv.rate() / png.rate() * 100.0,
            pct(&pv.lat_us, 99.0) as f64 / 1000.0
        );
        println!("rollups: the outbox was empty {:.0} ms after the last answer (target: trail ≤ 2 s)", drain.as_secs_f64() * 1000.0);
        if a.expired > 0 {
            let gone = expired0 - expired1;
            println!(
                "retention: {gone} expired events deleted during the phases ({:.1} s) = {:.0} rows/s; {expired1} left then",
                during.as_secs_f64(),
                gone as f64 / during.as_secs_f64()
            );
            let t = Instant::now();
            while expired_fill::left(&store, cutoff).await? > 0 && t.elapsed() < Duration::from_secs(1_800) {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            let total = deleting.elapsed().as_secs_f64();
            println!("retention: all {} expired events gone {total:.1} s after the first measured request = {:.0} rows/s over the whole run", expired0, expired0 as f64 / total);
        }
        if let Some(kib) = peak_rss_kib(&pid) {
            println!("daemon peak RSS {:.1} MiB (target ≤ 150 MB)", kib as f64 / 1024.0);
        }
        if let Some(file) = &sqlite_file {
            let stored = (a.requests + a.batches * 50) as f64;
            let bytes: u64 = ["", "-wal"]
                .iter()
                .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", file.display())).ok())
                .map(|m| m.len())
                .sum();
            println!("SQLite file and WAL: {:.1} MiB = {:.0} bytes per stored pageview, rollups included (target ≤ 150)", bytes as f64 / 1_048_576.0, bytes as f64 / stored);
        }
        println!("{}", machine_line());
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    daemon.stop();
    outcome
}

// ---------------------------------------------------------------------------
// federation: dashboards polling metaStatus through the federated API.

const FED_ISSUER: &str = "https://loadgen.invalid/federation";
const FED_AUDIENCE: &str = "https://loadgen.invalid/product";

/// A file removed on drop (the JWKS the daemon reads).
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn b64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An ES256 (P-256) key pair: the signer of the dashboards' tokens and its public JWK.
fn es256_key(kid: &str) -> AnyResult<(jsonwebtoken::EncodingKey, serde_json::Value)> {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map_err(|e| format!("generating the signing key: {e}"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
        .map_err(|e| format!("reading the signing key: {e}"))?;
    // The uncompressed point: 0x04 || x (32 bytes) || y (32 bytes).
    let point = pair.public_key().as_ref();
    let jwk = serde_json::json!({
        "kty": "EC", "crv": "P-256", "x": b64url(&point[1..33]), "y": b64url(&point[33..65]),
        "kid": kid, "use": "sig", "alg": "ES256",
    });
    Ok((jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref()), jwk))
}

fn dash_site(d: usize, s: usize) -> String {
    format!("dash-{d:04}-site-{s:02}")
}

/// Every answer of a setup phase had the expected status.
fn all_ok(p: &PhaseResult, what: &str) -> AnyResult<()> {
    let bad: usize = p.statuses.iter().filter(|(s, _)| !(200..300).contains(*s)).map(|(_, n)| n).sum();
    if bad > 0 {
        return Err(format!("{what}: {bad} failed, first: {}", p.first_bad.as_deref().unwrap_or("?")).into());
    }
    Ok(())
}

/// The daemon's /metrics page, over a fresh connection.
async fn metrics_page(addr: &str, key: &str) -> AnyResult<String> {
    let mut c = Conn::open(addr).await?;
    Ok(String::from_utf8_lossy(&c.roundtrip(&request("GET", "/metrics", addr, key, None)).await?.body).into_owned())
}

/// The daemon on a fresh database with the federated API on, trusting a
/// fresh ES256 key (its JWKS in a temp file kept while this lives).
struct Federated {
    daemon: Daemon,
    signer: jsonwebtoken::EncodingKey,
    kid: String,
    backend: &'static str,
    _jwks: TempFile,
}

fn federated_daemon(args: &DaemonArgs, extra_env: &[(&str, String)]) -> AnyResult<Federated> {
    let binary = args.binary()?;
    let kid = format!("loadgen-{}", random_hex(4)?);
    let (signer, jwk) = es256_key(&kid)?;
    let jwks = TempFile(std::env::temp_dir().join(format!("{}.jwks.json", unique("rastrod_loadgen"))));
    std::fs::write(&jwks.0, serde_json::json!({ "keys": [jwk] }).to_string())?;
    let db = FreshDb::new(args.database_url.as_deref())?;
    let backend = if db.pg.is_some() { "PostgreSQL (fresh schema)" } else { "SQLite (fresh file)" };
    let mut env = vec![
        ("RASTRO_FEDERATION_ISSUER", FED_ISSUER.to_string()),
        ("RASTRO_FEDERATION_AUDIENCE", FED_AUDIENCE.to_string()),
        ("RASTRO_FEDERATION_JWKS", jwks.0.display().to_string()),
    ];
    env.extend(extra_env.iter().cloned());
    let daemon = Daemon::start(binary, db, &env)?;
    Ok(Federated { daemon, signer, kid, backend, _jwks: jwks })
}

fn federation(a: FederationArgs) -> AnyResult<()> {
    if a.dashboards == 0 || a.requests == 0 || !(1..=10).contains(&a.sites_per_dashboard) {
        return Err("--dashboards and --requests must be positive, --sites-per-dashboard 1-10".into());
    }
    let Federated { mut daemon, signer, kid, backend, _jwks: jwks } = federated_daemon(&a.daemon, &[])?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        println!("{}", machine_line());
        let (dashboards, per) = (a.dashboards, a.sites_per_dashboard);
        println!(
            "daemon pid {pid} on {addr}, {backend}; {dashboards} dashboards × {per} sites, one keep-alive connection each, \
             {} client thread(s), {} requests per phase",
            a.daemon.client_threads, a.requests
        );

        // Setup over the host API: the sites, one owner per dashboard, then a grant per dashboard.
        let t = Instant::now();
        let setup_conns = dashboards.min(32);
        let create = {
            let (addr, key) = (addr.clone(), key.clone());
            Arc::new(move |_c: usize, i: usize| {
                let (d, s) = (i / per, i % per);
                let body = format!(
                    r#"{{"siteId":"{}","name":"Dashboard {d} site {s}","currency":"BRL","timezone":"America/Sao_Paulo","ownerId":"owner-{d:04}"}}"#,
                    dash_site(d, s)
                );
                request("POST", "/v1/sites", &addr, &key, Some(&body))
            })
        };
        let sites = phase("sites", &addr, setup_conns, dashboards * per, &[201], &pid, create).await?;
        all_ok(&sites, "creating the sites")?;
        let grant = {
            let (addr, key) = (addr.clone(), key.clone());
            Arc::new(move |_c: usize, d: usize| {
                let sites: Vec<String> = (0..per).map(|s| dash_site(d, s)).collect();
                let body = serde_json::json!({
                    "organizationId": format!("org-{d:04}"), "ownerId": format!("owner-{d:04}"), "siteIds": sites,
                });
                request("PUT", &format!("/v1/federation/grants/dash-{d:04}"), &addr, &key, Some(&body.to_string()))
            })
        };
        let grants = phase("grants", &addr, setup_conns, dashboards, &[201], &pid, grant).await?;
        all_ok(&grants, "provisioning the grants")?;

        // One token per dashboard (ES256, an hour), and its metaStatus request over its own sites.
        let now_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_millis()
                as i64;
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.clone());
        let mut requests = Vec::with_capacity(dashboards);
        for d in 0..dashboards {
            let claims = serde_json::json!({
                "iss": FED_ISSUER, "aud": FED_AUDIENCE, "sub": format!("user-{d:04}"),
                "iat": now_ms / 1000, "exp": now_ms / 1000 + 3600,
                "rastro_connection_id": format!("dash-{d:04}"), "rastro_organization_id": format!("org-{d:04}"),
                "rastro_permissions": ["analytics:read"],
            });
            let token = jsonwebtoken::encode(&header, &claims, &signer).map_err(|e| format!("signing: {e}"))?;
            let sites: Vec<String> = (0..per).map(|s| dash_site(d, s)).collect();
            let body = serde_json::json!({ "siteIds": sites, "now": now_ms }).to_string();
            requests.push(request("POST", "/federation/metaStatus", &addr, &token, Some(&body)));
        }
        println!(
            "setup: {} sites and {dashboards} grants over the host API in {:.1} s",
            dashboards * per,
            t.elapsed().as_secs_f64()
        );
        let requests = Arc::new(requests);
        let poll = {
            let r = requests.clone();
            Arc::new(move |c: usize, _i: usize| r[c].clone())
        };
        // Every dashboard at least once: each token verified (then cached until its exp).
        let warm = phase("warmup", &addr, dashboards, a.warmup.max(dashboards), &[200], &pid, poll.clone()).await?;
        all_ok(&warm, "warming up metaStatus")?;

        let metrics0 = metrics_page(&addr, &key).await?;
        let meta = phase("metaStatus", &addr, dashboards, a.requests, &[200], &pid, poll).await?;
        let metrics1 = metrics_page(&addr, &key).await?;
        let ping = ping_maker(&addr, &key);
        let png = phase("ping", &addr, dashboards, a.requests, &[200], &pid, ping).await?;

        println!();
        meta.print();
        png.print();
        let errors = a.requests - meta.statuses.get(&200).copied().unwrap_or(0);
        if errors > 0 {
            println!(
                "metaStatus errors: {errors} answers were not 200; the first: {}",
                meta.first_bad.as_deref().unwrap_or("?")
            );
        }
        let ratio = meta.rate() / png.rate();
        let p99_ms = pct(&meta.lat_us, 99.0) as f64 / 1000.0;
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        println!(
            "ratio metaStatus/ping = {:.1} %  (target ≥ 50 %: {}); metaStatus p99 {p99_ms:.2} ms (target ≤ 20 ms: {})",
            ratio * 100.0,
            verdict(ratio >= 0.5),
            verdict(p99_ms <= 20.0),
        );
        let queries = metric(&metrics1, "rastrod_db_queries_total").zip(metric(&metrics0, "rastrod_db_queries_total"));
        match queries {
            Some((q1, q0)) => {
                let (q, secs) = (q1 - q0, meta.elapsed.as_secs_f64());
                println!(
                    "DB during metaStatus: {q:.0} statements = {:.0} queries/s vs {:.0} req/s \
                     ({:.3} queries per request)",
                    q / secs,
                    meta.rate(),
                    q / a.requests as f64
                );
            }
            None => println!("DB during metaStatus: ? (no rastrod_db_queries_total on /metrics)"),
        }
        println!("{}", machine_line());
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    daemon.stop();
    drop(jwks);
    outcome
}

// ---------------------------------------------------------------------------
// report: fill through the services, then time leads_report.

/// Day 0 of the filled range: 366 days ending on 2026-11-29 (UTC).
const FILL_END_DAY: i64 = 1_796_040_000_000 / DAY_MS * DAY_MS;

struct FillPlan {
    sites: usize,
    days: i64,
    leads: usize,
    day0: i64,
    trees: Vec<AdTree>,
}

impl FillPlan {
    fn site_id(n: usize) -> String {
        format!("site-{n:02}")
    }
}

/// One lead of the fill: what recordLead gets, and the stage moves after it.
fn fill_lead(
    plan: &FillPlan,
    site_no: usize,
    seq: usize,
    occurred: i64,
    rng: &mut Lcg,
) -> (RecordLead, Vec<SetLeadStage>) {
    let lead_key = format!("wa:55{site_no:02}{seq:09}");
    let from_ad = rng.below(100) < 75;
    let origin = if from_ad { "ctwa_ad" } else { ["organic", "instagram_bio", "site"][rng.below(3) as usize] };
    let mut input = RecordLead {
        label: Some(format!("Cliente {seq}")),
        ..RecordLead::new(lead_key, format!("ev-{site_no}-{seq}-new"), occurred, origin)
    };
    if from_ad {
        let tree = &plan.trees[site_no];
        // A skewed pick: a few ads bring most leads, as in real accounts.
        let n = tree.ads.len() as u64;
        let pick = (rng.below(n) * rng.below(n) / n.max(1)) as usize;
        let [cid, cname, sid, sname, aid, aname] = &tree.ads[pick];
        input.campaign_id = Some(cid.clone());
        input.campaign_name = Some(cname.clone());
        input.adset_id = Some(sid.clone());
        input.adset_name = Some(sname.clone());
        input.ad_id = Some(aid.clone());
        input.ad_name = Some(aname.clone());
        input.click_id = Some(format!("ARAkLkA8rmlYlW{site_no:02}{seq:010}"));
    }
    let mut moves = Vec::new();
    let roll = rng.below(100);
    if roll < 25 {
        let at = occurred + HOUR_MS + rng.below(2 * DAY_MS as u64) as i64;
        moves.push(SetLeadStage {
            stage: Some(Stage::Qualified),
            column: None,
            revenue_cents: None,
            event_id: format!("ev-{site_no}-{seq}-q"),
            occurred_at: at,
            meta: None,
        });
        if roll < 8 {
            moves.push(SetLeadStage {
                stage: Some(Stage::Won),
                column: None,
                revenue_cents: Some(5_000 + rng.below(200_000) as i64),
                event_id: format!("ev-{site_no}-{seq}-w"),
                occurred_at: at + DAY_MS,
                meta: None,
            });
        }
    }
    (input, moves)
}

/// Writes the leads of the sites `site_nos`, day by day in time order, `batch` per transaction.
async fn fill_sites(
    db: Db,
    plan: Arc<FillPlan>,
    site_nos: Vec<usize>,
    batch: usize,
    done: Arc<AtomicUsize>,
) -> AnyResult<usize> {
    // Cell i = (day, site) gets floor((i+1)·L/C) − floor(i·L/C) leads: exactly L in all.
    let cells = plan.sites * plan.days as usize;
    let upto = |i: usize| (i as u128 * plan.leads as u128 / cells as u128) as usize;
    let mut rng = Lcg(0x5eed ^ site_nos.first().copied().unwrap_or(0) as u64);
    let mut pending: Vec<(String, RecordLead, Vec<SetLeadStage>)> = Vec::with_capacity(batch);
    let mut seq = vec![0usize; plan.sites];
    let mut written = 0;
    for day in 0..plan.days {
        for &s in &site_nos {
            let cell = day as usize * plan.sites + s;
            let n = upto(cell + 1) - upto(cell);
            let mut times: Vec<i64> =
                (0..n).map(|_| plan.day0 + day * DAY_MS + rng.below(DAY_MS as u64) as i64).collect();
            times.sort_unstable();
            for t in times {
                seq[s] += 1;
                let (input, moves) = fill_lead(&plan, s, seq[s], t, &mut rng);
                pending.push((FillPlan::site_id(s), input, moves));
            }
        }
        let last = day == plan.days - 1;
        while pending.len() >= batch || (last && !pending.is_empty()) {
            let take = pending.len().min(batch);
            let chunk: Vec<_> = pending.drain(..take).collect();
            let n = chunk.len();
            db.run(move |conn| {
                conn.transaction::<(), Error, _>(|c| {
                    for (site, input, moves) in chunk {
                        let now = input.occurred_at + 1_000;
                        let key = input.lead_key.clone();
                        leads::record(c, now, &site, input)?;
                        for m in moves {
                            let now = m.occurred_at + 1_000;
                            leads::set_stage(c, now, &site, &key, m)?;
                        }
                    }
                    Ok(())
                })
            })
            .await?;
            written += n;
            done.fetch_add(n, Ordering::Relaxed);
        }
    }
    Ok(written)
}

struct Case {
    name: String,
    site_ids: Vec<String>,
    from: i64,
    to: i64,
}

fn report(a: ReportArgs) -> AnyResult<()> {
    if a.sites == 0 || a.sites > 10 || a.days < 1 || a.days > 366 || a.batch == Some(0) {
        return Err("--sites must be 1-10, --days 1-366, --batch positive".into());
    }
    let fresh = if a.existing {
        FreshDb::existing(a.database_url.as_deref().unwrap_or_default())
    } else {
        let mut f = FreshDb::new(a.database_url.as_deref())?;
        f.keep = a.keep;
        f
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let threads = a.fill_threads.unwrap_or(if fresh.pg.is_some() { 2 } else { 1 }).clamp(1, a.sites);
        let batch = a.batch.unwrap_or(if fresh.pg.is_some() { 500 } else { 5_000 });
        let db = Db::open(&fresh.url, (threads as u32 + 2).max(4), 256, 100_000)?;
        let backend = match db.backend() {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        };
        println!("{}", machine_line());
        let plan = Arc::new(FillPlan {
            sites: a.sites,
            days: a.days,
            leads: a.leads,
            day0: FILL_END_DAY - a.days * DAY_MS,
            trees: (0..a.sites).map(|s| AdTree::new(s, a.ads_per_site)).collect(),
        });
        if !a.existing {
            println!(
                "filling {backend}: {} leads over {} sites × {} days, {} ads per site, {} per transaction, {threads} connection(s)",
                a.leads, a.sites, a.days, a.ads_per_site, batch
            );
            for s in 0..a.sites {
                let input = CreateSite {
                    site_id: FillPlan::site_id(s),
                    name: format!("Site {s}"),
                    currency: "BRL".into(),
                    timezone: "America/Sao_Paulo".into(),
                    owner_id: "loadgen".into(),
                    domains: None,
                    cookieless: None,
                };
                db.write(move |c| sites::create(c, plan_now(), input)).await?;
            }
            let done = Arc::new(AtomicUsize::new(0));
            let start = Instant::now();
            let mut tasks = Vec::new();
            for t in 0..threads {
                let site_nos: Vec<usize> = (0..a.sites).filter(|s| s % threads == t).collect();
                tasks.push(tokio::spawn(fill_sites(db.clone(), plan.clone(), site_nos, batch, done.clone())));
            }
            let progress = {
                let done = done.clone();
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_secs(15)).await;
                        let n = done.load(Ordering::Relaxed);
                        let secs = start.elapsed().as_secs_f64();
                        eprintln!("  … {n} leads in {secs:.0} s ({:.0} leads/s)", n as f64 / secs);
                    }
                })
            };
            // PostgreSQL: autovacuum does this in production (it is off on some
            // test servers); without it every counter update leaves a dead row
            // version behind and the rollups the reports read grow tenfold.
            let vacuum = (db.backend() == Backend::Postgres).then(|| {
                let db = db.clone();
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        let _ = db
                            .run(|c| c.batch_execute("VACUUM lead_rollups, ad_labels, leads").map_err(Error::from))
                            .await;
                    }
                })
            });
            let mut written = 0;
            for t in tasks {
                written += t.await??;
            }
            progress.abort();
            if let Some(v) = vacuum {
                v.abort();
            }
            let secs = start.elapsed().as_secs_f64();
            println!("fill: {written} leads in {secs:.1} s = {:.0} leads/s (record + set_stage through the services)", written as f64 / secs);
            if db.backend() == Backend::Postgres {
                // What autovacuum would have done by the time anyone reads a report.
                let t = Instant::now();
                db.run(|c| c.batch_execute("VACUUM ANALYZE").map_err(Error::from)).await?;
                println!("VACUUM ANALYZE (autovacuum's job in production) took {:.1} s", t.elapsed().as_secs_f64());
            }
        }
        #[derive(diesel::QueryableByName)]
        struct N {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let counts = db
            .run(|c| {
                use diesel::RunQueryDsl;
                let q = |c: &mut rastrod::db::AnyConnection, t: &str| {
                    diesel::sql_query(format!("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM {t}")).get_result::<N>(c).map(|r| r.n)
                };
                Ok((q(c, "leads")?, q(c, "lead_events")?, q(c, "lead_rollups")?))
            })
            .await?;
        println!("rows: {} leads, {} lead_events, {} lead_rollups", counts.0, counts.1, counts.2);

        let all: Vec<String> = (0..a.sites).map(FillPlan::site_id).collect();
        let (day0, end) = (plan.day0, plan.day0 + a.days * DAY_MS);
        let sp = 3 * HOUR_MS; // America/Sao_Paulo midnight in UTC
        let cases = [
            Case { name: format!("{} sites × {} UTC days", a.sites, a.days), site_ids: all.clone(), from: day0, to: end - 1 },
            Case {
                name: format!("{} sites × {} São Paulo days", a.sites, a.days - 1),
                site_ids: all.clone(),
                from: day0 + sp,
                to: end - DAY_MS + sp - 1,
            },
            Case { name: "1 site × 30 UTC days".into(), site_ids: all[..1].to_vec(), from: end - 30 * DAY_MS, to: end - 1 },
            Case {
                name: "1 site × 30 São Paulo days".into(),
                site_ids: all[..1].to_vec(),
                from: end - 31 * DAY_MS + sp,
                to: end - DAY_MS + sp - 1,
            },
        ];
        let pg = db.backend() == Backend::Postgres;
        println!(
            "\nleadsReport on {backend} ({} timed runs each, after 2 untimed; CPU = this process{}):",
            a.iterations,
            if pg { " + every postgres process" } else { "" }
        );
        for case in &cases {
            let mut times = Vec::with_capacity(a.iterations);
            let mut cpu = Vec::with_capacity(a.iterations);
            let mut summary = String::new();
            for i in 0..a.iterations + 2 {
                let args = LeadsReportArgs { site_ids: case.site_ids.clone(), from: case.from, to: case.to };
                let cpu0 = cpu_ns_self() + if pg { cpu_ns_postgres() } else { 0 };
                let t = Instant::now();
                let r = db.run(move |c| leads_report(c, args, 12_000)).await?;
                let el = t.elapsed();
                let cpu1 = cpu_ns_self() + if pg { cpu_ns_postgres() } else { 0 };
                if i >= 2 {
                    times.push(el);
                    cpu.push(Duration::from_nanos(cpu1.saturating_sub(cpu0)));
                }
                let ads: usize = r.campaigns.iter().flat_map(|c| &c.adsets).map(|s| s.ads.len()).sum();
                summary = format!(
                    "{} leads, {} qualified, {} won, {} ad rows{}",
                    r.totals.leads,
                    r.totals.qualified,
                    r.totals.won,
                    ads,
                    if r.report_incomplete { ", incomplete" } else { "" }
                );
            }
            times.sort_unstable();
            cpu.sort_unstable();
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            println!(
                "  {:<30} p50 {:>7.1} ms  p99 {:>7.1} ms  min {:>7.1} ms  CPU p50 {:>6.1} ms  ({summary})",
                case.name,
                ms(pct(&times, 50.0)),
                ms(pct(&times, 99.0)),
                ms(times.first().copied().unwrap_or_default()),
                ms(pct(&cpu, 50.0)),
            );
        }
        println!("{}", machine_line());
        if a.keep {
            println!("kept the database: {}", fresh.url);
        }
        db.close();
        drop(fresh);
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    })
}

/// The recording time of the sites (before every lead).
fn plan_now() -> i64 {
    FILL_END_DAY - 400 * DAY_MS
}
