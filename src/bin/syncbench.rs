//! The account sync benchmark (issue 4, "Performance"; a benchmark, not a test).
//!
//! ```text
//! cargo build --release --features bench --bin syncbench
//! target/release/syncbench                          # 500 accounts × 50 ads, concurrency 4 (the default)
//! target/release/syncbench --concurrency 4,16,32    # one fresh process per value, then a summary
//! target/release/syncbench --database-url postgres://root@127.0.0.1:5432/test
//! ```
//!
//! It starts its own tiny Graph simulator (actix-web on 127.0.0.1:0) that answers at once
//! exactly what the sync calls: `/me`, `/me/adaccounts` (cursor pages of 100), and for each
//! account `/adspixels` (none), `/insights` (every ad spending "12.34" on every day of the
//! asked range, one page) and `/ads` (the catalog, no thumbnails), counting the requests of
//! each account. The daemon runs in-process on a fresh database (SQLite in a temp folder, or
//! a fresh PostgreSQL schema) with a `ManualClock`: sites are created, the owner connected,
//! every account linked; the account actors are started with nothing due (that is where the
//! idle memory per actor is measured), then the supervisor's `RunDue` runs the full 90-day
//! backfill of every account (honouring `RASTRO_SYNC_MAX_CONCURRENT`) and is timed. Then the
//! clock walks 24 hours in 45-minute steps (crossing 04:00 local, the daily run), `RunDue` at
//! each step, for the Graph calls per account per day at steady state. Peak RSS is the
//! process's `VmHWM`.

mod bench_util;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bench_util::{mib, proc_status_bytes};
use chrono::{NaiveDate, TimeZone};
use clap::Parser;
use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel::sql_types::BigInt;
use rastrod::actors::supervisor::{Children, RunDue};
use rastrod::clock::{HOUR_MS, MINUTE_MS, ManualClock};
use rastrod::config::{Config, LogFormat, Secret};
use rastrod::db::sql::RawQuery;
use rastrod::service::meta::connection::{self as meta_connection, SecretString, SetMetaConnection};
use rastrod::service::meta::links::{self as meta_links, LinkAdAccount};
use rastrod::service::meta::sync::Outcome;
use rastrod::service::sites::{self, CreateSite};
use rastrod::state::AppState;
use serde::Deserialize;

// ---------------------------------------------------------------------------
// Live heap bytes (a counting allocator): the idle actor's footprint without RSS noise.

struct Counting;

static HEAP_NOW: AtomicUsize = AtomicUsize::new(0);
static HEAP_PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) };
        HEAP_NOW.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                HEAP_NOW.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

fn grew(n: usize) {
    let now = HEAP_NOW.fetch_add(n, Ordering::Relaxed) + n;
    HEAP_PEAK.fetch_max(now, Ordering::Relaxed);
}

#[global_allocator]
static ALLOC: Counting = Counting;

// ---------------------------------------------------------------------------
// The command line.

#[derive(Parser, Clone)]
#[command(name = "syncbench", about = "rastrod's account sync benchmark: backfill time, Graph calls, memory.")]
struct Cli {
    /// RASTRO_SYNC_MAX_CONCURRENT; a comma-separated list runs one fresh process per value.
    #[arg(long, default_value = "4", value_delimiter = ',')]
    concurrency: Vec<usize>,
    /// Linked ad accounts (10 per site).
    #[arg(long, default_value_t = 500)]
    accounts: usize,
    /// Ads per account, every one spending every day.
    #[arg(long, default_value_t = 50)]
    ads: usize,
    /// Hours of steady state walked in 45-minute steps after the backfill.
    #[arg(long, default_value_t = 24)]
    steady_hours: i64,
    /// Worker threads of the Graph simulator.
    #[arg(long, default_value_t = 1)]
    sim_workers: usize,
    /// Run against this database instead of a fresh SQLite file (postgres://... gets a fresh schema).
    #[arg(long)]
    database_url: Option<String>,
    /// Internal: run one concurrency in this process.
    #[arg(long, hide = true)]
    child: bool,
}

type AnyResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = std::env::var("SYNCBENCH_LOG").unwrap_or_else(|_| "error".into());
    rastrod::telemetry::init(&filter, LogFormat::Text);
    let outcome = if cli.child || cli.concurrency.len() == 1 { bench(&cli) } else { parent(&cli) };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("syncbench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One child process per concurrency (each its own peak RSS), then a summary.
fn parent(cli: &Cli) -> AnyResult<()> {
    let exe = std::env::current_exe()?;
    let mut results: Vec<BTreeMap<String, String>> = Vec::new();
    for &n in &cli.concurrency {
        let mut cmd = Command::new(&exe);
        cmd.arg("--child")
            .arg("--concurrency")
            .arg(n.to_string())
            .arg("--accounts")
            .arg(cli.accounts.to_string())
            .arg("--ads")
            .arg(cli.ads.to_string())
            .arg("--steady-hours")
            .arg(cli.steady_hours.to_string())
            .arg("--sim-workers")
            .arg(cli.sim_workers.to_string());
        if let Some(url) = &cli.database_url {
            cmd.arg("--database-url").arg(url);
        }
        let mut child = cmd.stdout(Stdio::piped()).spawn()?;
        let out = child.stdout.take().ok_or("no stdout from the child")?;
        for line in BufReader::new(out).lines() {
            let line = line?;
            println!("{line}");
            if let Some(rest) = line.strip_prefix("RESULT ") {
                results.push(
                    rest.split_whitespace()
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                );
            }
        }
        if !child.wait()?.success() {
            return Err(format!("the run at concurrency {n} failed").into());
        }
        println!();
    }
    println!("summary ({} accounts × {} ads, fake Graph answering at once)", cli.accounts, cli.ads);
    println!(
        "{:>11}  {:>11}  {:>14}  {:>16}  {:>13}  {:>13}",
        "concurrency", "backfill s", "calls/account", "calls/acct/day", "peak RSS MiB", "idle B/actor"
    );
    for r in &results {
        let g = |k: &str| r.get(k).map_or("?", String::as_str);
        println!(
            "{:>11}  {:>11}  {:>14}  {:>16}  {:>13}  {:>13}",
            g("concurrency"),
            g("backfill_s"),
            g("backfill_calls_per_account"),
            g("steady_calls_per_account_day"),
            g("peak_rss_mib"),
            g("idle_heap_bytes_per_actor")
        );
    }
    let best = results
        .iter()
        .filter_map(|r| Some((r.get("backfill_s")?.parse::<f64>().ok()?, r.get("concurrency")?.clone())))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((secs, n)) = best {
        println!("best: concurrency {n}, full backfill in {secs:.2} s (target ≤ 60 s)");
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The Graph simulator.

const FIRST_ACCOUNT: u64 = 1_000_000_001;
const ENDPOINTS: [&str; 3] = ["adspixels", "insights", "ads"];

struct Sim {
    base_url: String,
    accounts: usize,
    ads: usize,
    /// Per account: adspixels, insights, ads.
    counts: Vec<[AtomicU64; 3]>,
    me: AtomicU64,
    adaccounts: AtomicU64,
    other: AtomicU64,
    insight_rows: AtomicU64,
}

impl Sim {
    fn account_index(&self, node: &str) -> Option<usize> {
        let n: u64 = node.strip_prefix("act_")?.parse().ok()?;
        let i = usize::try_from(n.checked_sub(FIRST_ACCOUNT)?).ok()?;
        (i < self.accounts).then_some(i)
    }

    /// (per-account calls of each endpoint summed over accounts, the account-less calls).
    fn totals(&self) -> ([u64; 3], u64) {
        let mut t = [0u64; 3];
        for c in &self.counts {
            for (k, v) in c.iter().enumerate() {
                t[k] += v.load(Ordering::Relaxed);
            }
        }
        let rest = self.me.load(Ordering::Relaxed)
            + self.adaccounts.load(Ordering::Relaxed)
            + self.other.load(Ordering::Relaxed);
        (t, rest)
    }

    fn max_per_account(&self) -> u64 {
        self.counts.iter().map(|c| c.iter().map(|v| v.load(Ordering::Relaxed)).sum::<u64>()).max().unwrap_or(0)
    }
}

fn json_ok(body: String) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(body)
}

fn graph_error(code: i64, message: &str) -> HttpResponse {
    HttpResponse::BadRequest().content_type("application/json").body(
        serde_json::json!({"error": {"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "bench"}})
            .to_string(),
    )
}

async fn sim_me(sim: web::Data<Sim>) -> HttpResponse {
    sim.me.fetch_add(1, Ordering::Relaxed);
    json_ok(r#"{"id":"10001","name":"Bench Owner"}"#.to_string())
}

#[derive(Deserialize)]
struct PageQuery {
    limit: Option<usize>,
    after: Option<String>,
    time_range: Option<String>,
}

#[derive(Deserialize)]
struct TimeRange {
    since: String,
    until: String,
}

impl TimeRange {
    fn dates(&self) -> Option<(NaiveDate, NaiveDate)> {
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
        Some((d(&self.since)?, d(&self.until)?))
    }
}

async fn sim_edge(
    sim: web::Data<Sim>,
    path: web::Path<(String, String)>,
    q: web::Query<PageQuery>,
    req: HttpRequest,
) -> HttpResponse {
    let (node, edge) = path.into_inner();
    if req.headers().get("authorization").is_none() {
        sim.other.fetch_add(1, Ordering::Relaxed);
        return graph_error(190, "no token");
    }
    if node == "me" && edge == "adaccounts" {
        sim.adaccounts.fetch_add(1, Ordering::Relaxed);
        return ad_accounts(&sim, &q);
    }
    let Some(i) = sim.account_index(&node) else {
        sim.other.fetch_add(1, Ordering::Relaxed);
        return graph_error(100, "unknown object");
    };
    let Some(k) = ENDPOINTS.iter().position(|e| *e == edge) else {
        sim.other.fetch_add(1, Ordering::Relaxed);
        return graph_error(100, "unknown edge");
    };
    sim.counts[i][k].fetch_add(1, Ordering::Relaxed);
    let acct = FIRST_ACCOUNT + i as u64;
    match edge.as_str() {
        "adspixels" => json_ok(r#"{"data":[]}"#.to_string()),
        "ads" => json_ok(ads(acct, sim.ads)),
        _ => {
            let Some(range) = q.time_range.as_deref().and_then(|r| serde_json::from_str::<TimeRange>(r).ok()?.dates())
            else {
                return graph_error(100, "time_range is required");
            };
            let (body, rows) = insights(acct, sim.ads, range.0, range.1);
            sim.insight_rows.fetch_add(rows, Ordering::Relaxed);
            json_ok(body)
        }
    }
}

fn ad_accounts(sim: &Sim, q: &PageQuery) -> HttpResponse {
    let limit = q.limit.unwrap_or(25).clamp(1, 100);
    let start = q.after.as_deref().and_then(|a| a.parse::<usize>().ok()).unwrap_or(0).min(sim.accounts);
    let end = (start + limit).min(sim.accounts);
    let data: Vec<serde_json::Value> = (start..end)
        .map(|i| {
            let n = FIRST_ACCOUNT + i as u64;
            serde_json::json!({
                "id": format!("act_{n}"),
                "account_id": n.to_string(),
                "name": format!("Bench account {}", i + 1),
                "currency": "BRL",
                "timezone_name": "America/Sao_Paulo",
                "account_status": 1
            })
        })
        .collect();
    let mut paging = serde_json::json!({"cursors": {"before": start.to_string(), "after": end.to_string()}});
    if end < sim.accounts {
        paging["next"] = serde_json::Value::String(format!(
            "{}/v25.0/me/adaccounts?fields=id%2Caccount_id%2Cname%2Ccurrency%2Ctimezone_name%2Caccount_status&limit={limit}&after={end}",
            sim.base_url
        ));
    }
    json_ok(serde_json::json!({"data": data, "paging": paging}).to_string())
}

/// Ad `a` of account `acct`: its id, adset and campaign (10 ads an adset, 5 adsets a campaign).
fn ad_ids(acct: u64, a: usize) -> (String, String, String) {
    (format!("{acct}0{a:04}"), format!("{acct}1{:04}", a / 10), format!("{acct}2{:04}", a / 50))
}

fn insights(acct: u64, ads: usize, since: NaiveDate, until: NaiveDate) -> (String, u64) {
    let mut out = String::with_capacity(360 * ads * 31);
    out.push_str(r#"{"data":["#);
    let mut rows = 0u64;
    let mut day = since;
    while day <= until {
        let d = day.format("%Y-%m-%d").to_string();
        for a in 0..ads {
            let (ad, adset, campaign) = ad_ids(acct, a);
            if rows > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                r#"{{"ad_id":"{ad}","ad_name":"Ad {a}","adset_id":"{adset}","adset_name":"Adset {}","campaign_id":"{campaign}","campaign_name":"Campaign {}","spend":"12.34","impressions":"1000","clicks":"37","date_start":"{d}","date_stop":"{d}"}}"#,
                a / 10,
                a / 50
            );
            rows += 1;
        }
        day = match day.succ_opt() {
            Some(next) => next,
            None => break,
        };
    }
    out.push_str(r#"],"paging":{"cursors":{"before":"0","after":"0"}}}"#);
    (out, rows)
}

fn ads(acct: u64, ads: usize) -> String {
    let mut out = String::with_capacity(220 * ads);
    out.push_str(r#"{"data":["#);
    for a in 0..ads {
        let (ad, adset, campaign) = ad_ids(acct, a);
        if a > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            r#"{{"id":"{ad}","name":"Ad {a}","effective_status":"ACTIVE","adset_id":"{adset}","campaign_id":"{campaign}","creative":{{"id":"{ad}9","object_type":"VIDEO"}}}}"#
        );
    }
    out.push_str(r#"],"paging":{"cursors":{"before":"0","after":"0"}}}"#);
    out
}

async fn start_sim(accounts: usize, ads: usize, workers: usize) -> AnyResult<web::Data<Sim>> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let base_url = format!("http://{}", listener.local_addr()?);
    let sim = web::Data::new(Sim {
        base_url,
        accounts,
        ads,
        counts: (0..accounts).map(|_| Default::default()).collect(),
        me: AtomicU64::new(0),
        adaccounts: AtomicU64::new(0),
        other: AtomicU64::new(0),
        insight_rows: AtomicU64::new(0),
    });
    let data = sim.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/v25.0/me", web::get().to(sim_me))
            .route("/v25.0/{node}/{edge}", web::get().to(sim_edge))
    })
    .workers(workers.max(1))
    .disable_signals()
    .listen(listener)?
    .run();
    actix_web::rt::spawn(server);
    Ok(sim)
}

// ---------------------------------------------------------------------------
// A fresh database.

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{prefix}_{}_{}", std::process::id(), nanos % 1_000_000_000)
}

struct FreshDb {
    url: String,
    dir: PathBuf,
    pg: Option<(String, String)>,
}

impl FreshDb {
    fn new(base: Option<&str>) -> AnyResult<FreshDb> {
        let dir = std::env::temp_dir().join(unique("rastrod_syncbench"));
        std::fs::create_dir_all(&dir)?;
        match base {
            None => {
                let url = format!("sqlite://{}", dir.join("rastrod.db").display());
                Ok(FreshDb { url, dir, pg: None })
            }
            Some(base) if base.starts_with("postgres://") || base.starts_with("postgresql://") => {
                let schema = unique("syncbench");
                let mut conn = diesel::PgConnection::establish(base)?;
                conn.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
                let sep = if base.contains('?') { '&' } else { '?' };
                let url = format!("{base}{sep}options=-csearch_path%3D{schema}");
                Ok(FreshDb { url, dir, pg: Some((base.to_string(), schema)) })
            }
            Some(other) => {
                Err(format!("--database-url {other}: expected postgres://... (omit it for a fresh SQLite file)").into())
            }
        }
    }
}

impl Drop for FreshDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some((base, schema)) = &self.pg
            && let Ok(mut conn) = diesel::PgConnection::establish(base)
        {
            let _ = conn.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}

// ---------------------------------------------------------------------------
// One run.

const OWNER: &str = "bench";
const ACCOUNTS_PER_SITE: usize = 10;

fn bench(cli: &Cli) -> AnyResult<()> {
    let concurrency = cli.concurrency.first().copied().unwrap_or(4);
    let fresh = FreshDb::new(cli.database_url.as_deref())?;
    let cli = cli.clone();
    // The actors and their timers die with the System.
    actix_web::rt::System::new().block_on(async move { bench_in_system(&cli, concurrency, &fresh).await })
}

async fn count(state: &AppState, sql: &'static str) -> AnyResult<i64> {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let rows = state.cx.read(move |c| Ok(RawQuery::new(sql).load::<N>(c)?)).await?;
    Ok(rows.first().map_or(0, |r| r.n))
}

/// Points every account's next run at `at`.
async fn set_next_run_at(state: &AppState, at: i64) -> AnyResult<()> {
    state
        .cx
        .write_plain(move |c| {
            for mut row in rastrod::store::meta::sync::all(c)? {
                row.next_run_at = at;
                rastrod::store::meta::sync::save(c, &row)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}

async fn run_due(state: &AppState) -> AnyResult<BTreeMap<String, Vec<Outcome>>> {
    let sup = state.actors.sync.get().ok_or("the supervisor is not running")?;
    Ok(sup.send(RunDue).await??)
}

/// Tallies the outcomes of a RunDue: "Synced(Backfill)" → n, …
fn tally(out: &BTreeMap<String, Vec<Outcome>>, failures: &mut Vec<String>) -> BTreeMap<String, usize> {
    let mut t = BTreeMap::new();
    for outcomes in out.values() {
        for o in outcomes {
            let key = match o {
                Outcome::Failed(why) => {
                    if failures.len() < 3 {
                        failures.push(why.clone());
                    }
                    "Failed".to_string()
                }
                other => format!("{other:?}"),
            };
            *t.entry(key).or_insert(0) += 1;
        }
    }
    t
}

fn show_tally(t: &BTreeMap<String, usize>) -> String {
    t.iter().map(|(k, v)| format!("{k}×{v}")).collect::<Vec<_>>().join(", ")
}

async fn bench_in_system(cli: &Cli, concurrency: usize, fresh: &FreshDb) -> AnyResult<()> {
    let (accounts, ads) = (cli.accounts, cli.ads);
    if accounts == 0 || ads == 0 {
        return Err("--accounts and --ads must be positive".into());
    }
    let sim = start_sim(accounts, ads, cli.sim_workers).await?;
    let env: BTreeMap<String, String> = [
        ("RASTRO_DATABASE_URL", fresh.url.clone()),
        ("RASTRO_DATA_DIR", fresh.dir.join("data").display().to_string()),
        ("RASTRO_SECRETS_KEY", rastrod::ids::secrets_key().unwrap()),
        ("RASTRO_META_GRAPH_URL", sim.base_url.clone()),
        ("RASTRO_SYNC_MAX_CONCURRENT", concurrency.to_string()),
        ("RASTRO_LOG", "error".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let config = Config::load_from(None, &env)?;
    let backend = if fresh.pg.is_some() { "PostgreSQL" } else { "SQLite" };
    let backfill_days = config.sync_backfill_days;
    // Noon in São Paulo: the daily run (04:00 local) is crossed during the steady state.
    let t0 = chrono_tz::America::Sao_Paulo
        .with_ymd_and_hms(2026, 11, 30, 12, 0, 0)
        .single()
        .ok_or("a valid start time")?
        .timestamp_millis();
    let clock = ManualClock::new(t0);
    let state = rastrod::server::open_state(config, clock.clone()).await?;
    println!(
        "syncbench: {accounts} accounts × {ads} ads, {backend}, RASTRO_SYNC_MAX_CONCURRENT={concurrency}, \
         Graph simulator at {} ({} worker(s))",
        sim.base_url, cli.sim_workers
    );

    // Sites, the connection, the links.
    let setup = Instant::now();
    let sites_n = accounts.div_ceil(ACCOUNTS_PER_SITE);
    for s in 0..sites_n {
        let input = CreateSite {
            site_id: format!("bench-{s:03}"),
            name: format!("Bench site {s}"),
            currency: "BRL".into(),
            timezone: "America/Sao_Paulo".into(),
            owner_id: "bench-owner".into(),
            domains: None,
            cookieless: None,
        };
        let now = state.now();
        state.cx.write_plain(move |c| sites::create(c, now, input)).await?;
    }
    let input = SetMetaConnection { access_token: SecretString(Secret::new("t")) };
    meta_connection::set_connection(&state.cx, OWNER, input).await?;
    for s in 0..sites_n {
        let now = state.now();
        let ids: Vec<String> = (s * ACCOUNTS_PER_SITE..((s + 1) * ACCOUNTS_PER_SITE).min(accounts))
            .map(|i| format!("act_{}", FIRST_ACCOUNT + i as u64))
            .collect();
        let site = format!("bench-{s:03}");
        state
            .cx
            .write_plain(move |c| {
                for id in ids {
                    let input = LinkAdAccount { owner_key: OWNER.into(), ad_account_id: id, only_own: false };
                    meta_links::link(c, now, &site, input)?;
                }
                Ok(())
            })
            .await?;
    }
    // Nothing due when the actors start (their rows point a month away), so the idle
    // footprint is measured first; then every row is due again and RunDue runs the backfill.
    set_next_run_at(&state, t0 + 30 * 24 * HOUR_MS).await?;
    let (setup_calls, setup_rest) = sim.totals();
    println!(
        "setup: {sites_n} sites, connected, {accounts} linked in {:.2} s ({} adspixels + {setup_rest} me/adaccounts calls)",
        setup.elapsed().as_secs_f64(),
        setup_calls[0]
    );

    // Idle actors.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rss0, heap0) = (proc_status_bytes("VmRSS"), HEAP_NOW.load(Ordering::Relaxed));
    rastrod::actors::start(&state.cx, &state.actors);
    let sup = state.actors.sync.get().ok_or("the supervisor is not running")?.clone();
    let wait_from = Instant::now();
    loop {
        let live = sup.send(Children).await?;
        if live >= accounts {
            break;
        }
        if wait_from.elapsed() > Duration::from_secs(60) {
            return Err(format!("only {live} of {accounts} account actors started").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let every actor's first schedule read land.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss1, heap1) = (proc_status_bytes("VmRSS"), HEAP_NOW.load(Ordering::Relaxed));
    let heap_per_actor = heap1.saturating_sub(heap0) / accounts;
    let rss_per_actor = rss1.saturating_sub(rss0) / accounts as u64;
    println!(
        "idle actors: {accounts} started; live heap +{:.2} MiB = {heap_per_actor} B per actor; \
         RSS +{:.2} MiB = {rss_per_actor} B per actor (target ≤ 16384 B)",
        mib(heap1.saturating_sub(heap0) as u64),
        mib(rss1.saturating_sub(rss0))
    );

    // The full backfill.
    set_next_run_at(&state, t0).await?;
    let before = sim.totals();
    let mut failures = Vec::new();
    let started = Instant::now();
    let out = run_due(&state).await?;
    let backfill_s = started.elapsed().as_secs_f64();
    let after = sim.totals();
    let per_edge: Vec<u64> = (0..3).map(|k| after.0[k] - before.0[k]).collect();
    let calls: u64 = per_edge.iter().sum();
    let backfill_calls_per_account = calls as f64 / accounts as f64;
    let spend_rows = count(&state, "SELECT COUNT(*) AS n FROM ad_spend").await?;
    let expected_rows = (accounts * ads) as i64 * i64::from(backfill_days);
    println!(
        "backfill: {backfill_s:.2} s wall for {accounts} accounts ({:.1} accounts/s); runs: {}",
        accounts as f64 / backfill_s,
        show_tally(&tally(&out, &mut failures))
    );
    println!(
        "backfill: {calls} Graph calls = {backfill_calls_per_account:.2} per account (insights {:.2}, ads {:.2}, adspixels {:.2}; \
         max {} for one account); {} insights rows served; ad_spend holds {spend_rows} rows (expected {expected_rows})",
        per_edge[1] as f64 / accounts as f64,
        per_edge[2] as f64 / accounts as f64,
        per_edge[0] as f64 / accounts as f64,
        sim.max_per_account(),
        sim.insight_rows.load(Ordering::Relaxed)
    );
    let w = state.cx.storage_stats().writer;
    println!("backfill: writer stats {w:?}");
    println!(
        "backfill: peak RSS so far {:.1} MiB, peak live heap {:.1} MiB",
        mib(proc_status_bytes("VmHWM")),
        mib(HEAP_PEAK.load(Ordering::Relaxed) as u64)
    );

    // Steady state.
    let step = 45 * MINUTE_MS;
    let steps = (cli.steady_hours * HOUR_MS).div_euclid(step).max(1);
    let span_days = (steps * step) as f64 / (24 * HOUR_MS) as f64;
    let before = sim.totals();
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    let mut steady_wall = Duration::ZERO;
    let mut slowest = Duration::ZERO;
    for _ in 0..steps {
        clock.advance(step);
        let t = Instant::now();
        let out = run_due(&state).await?;
        let took = t.elapsed();
        steady_wall += took;
        slowest = slowest.max(took);
        for (k, v) in tally(&out, &mut failures) {
            *runs.entry(k).or_insert(0) += v;
        }
    }
    let after = sim.totals();
    let per_edge: Vec<u64> = (0..3).map(|k| after.0[k] - before.0[k]).collect();
    let calls: u64 = per_edge.iter().sum();
    let per_account_day = calls as f64 / accounts as f64 / span_days;
    println!(
        "steady state: {steps} steps of 45 min ({:.2} days, crossing 04:00 local); runs: {}",
        span_days,
        show_tally(&runs)
    );
    println!(
        "steady state: {calls} Graph calls = {per_account_day:.2} per account per day (insights {:.2}, ads {:.2}; target ≤ 40); \
         RunDue took {:.2} s in all, slowest step {:.2} s",
        per_edge[1] as f64 / accounts as f64 / span_days,
        per_edge[2] as f64 / accounts as f64 / span_days,
        steady_wall.as_secs_f64(),
        slowest.as_secs_f64()
    );
    if !failures.is_empty() {
        println!("failures (first few): {failures:?}");
    }
    let peak_rss = proc_status_bytes("VmHWM");
    println!(
        "memory: peak RSS (VmHWM) {:.1} MiB (target ≤ 200 MiB); peak live heap {:.1} MiB; RSS now {:.1} MiB",
        mib(peak_rss),
        mib(HEAP_PEAK.load(Ordering::Relaxed) as u64),
        mib(proc_status_bytes("VmRSS"))
    );
    println!(
        "RESULT concurrency={concurrency} backfill_s={backfill_s:.2} backfill_calls_per_account={backfill_calls_per_account:.2} \
         steady_calls_per_account_day={per_account_day:.2} peak_rss_mib={:.1} idle_heap_bytes_per_actor={heap_per_actor} \
         idle_rss_bytes_per_actor={rss_per_actor} spend_rows={spend_rows}",
        mib(peak_rss)
    );
    state.cx.close();
    Ok(())
}
