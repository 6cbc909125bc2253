//! The Conversions API sender benchmark (issue 5, "Performance"; a benchmark, not a test).
//!
//! ```text
//! cargo build --release --features bench --bin capibench
//! target/release/capibench                      # 200 pixels × 500 leads = 100,000 conversions
//! target/release/capibench --sites 200 --leads-per-site 500 --concurrency 64 --sim-workers 1
//! ```
//!
//! It starts its own tiny Graph simulator (actix-web on 127.0.0.1:0) that answers
//! `GET /v25.0/{id}` with the pixel and `POST /v25.0/{id}/events` by counting the events of
//! the batch (`data`) and answering `{"events_received": n}`. The daemon runs in-process on
//! a fresh SQLite file: sites are created, each gets a pixel with its own token and
//! `sendLeadEvent` on, then leads with a `meta` hash are recorded (`recordLead`, so each
//! queues one `Lead` conversion) with the senders stopped, many writes in flight so group
//! commit batches them. Then the pixel senders start and `Drain` runs until the simulator
//! has counted every event. Printed: the queueing rate, events/s delivered, the Graph
//! requests made (and events per request) and the peak RSS (`VmHWM`).

mod bench_util;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use bench_util::{TempDir, cpu_secs, mib, proc_status_bytes};
use clap::Parser;
use rastrod::actors::pixel_sender;
use rastrod::clock::SystemClock;
use rastrod::config::{Config, LogFormat, Secret};
use rastrod::service::leads::{self, RecordLead};
use rastrod::service::meta::connection::SecretString;
use rastrod::service::meta::links::{self as meta_links, SetSitePixel};
use rastrod::service::sites::{self, CreateSite};
use rastrod::state::AppState;

#[derive(Parser, Clone)]
#[command(name = "capibench", about = "rastrod's Conversions API sender benchmark: events/s, Graph requests, memory.")]
struct Cli {
    /// Sites, one pixel each.
    #[arg(long, default_value_t = 200)]
    sites: usize,
    /// Leads recorded per site (one `Lead` conversion each).
    #[arg(long, default_value_t = 500)]
    leads_per_site: usize,
    /// Lead writes in flight while queueing.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Worker threads of the Graph simulator.
    #[arg(long, default_value_t = 1)]
    sim_workers: usize,
    /// Give up waiting for delivery after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
}

type AnyResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    rastrod::telemetry::init("error", LogFormat::Text);
    let outcome = (|| -> AnyResult<()> {
        let dir = TempDir::new("rastrod_capibench")?;
        actix_web::rt::System::new().block_on(async { bench(&cli, &dir.0).await })
    })();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capibench: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------
// The Graph simulator.

#[derive(Default)]
struct Sim {
    base_url: String,
    pixel_gets: AtomicU64,
    event_posts: AtomicU64,
    events: AtomicU64,
    other: AtomicU64,
}

impl Sim {
    fn requests(&self) -> u64 {
        self.pixel_gets.load(Ordering::Relaxed)
            + self.event_posts.load(Ordering::Relaxed)
            + self.other.load(Ordering::Relaxed)
    }
}

fn json_ok(body: String) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(body)
}

async fn sim_node(sim: web::Data<Sim>, path: web::Path<String>) -> HttpResponse {
    sim.pixel_gets.fetch_add(1, Ordering::Relaxed);
    let id = path.into_inner();
    json_ok(serde_json::json!({"id": id, "name": format!("Pixel {id}")}).to_string())
}

async fn sim_events(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    sim.event_posts.fetch_add(1, Ordering::Relaxed);
    // Counted without building the events: the simulator's memory stays out of the daemon's peak RSS.
    #[derive(serde::Deserialize)]
    struct Batch {
        data: Vec<serde::de::IgnoredAny>,
    }
    let n = serde_json::from_slice::<Batch>(&body).ok().map(|b| b.data.len());
    let Some(n) = n else {
        return HttpResponse::BadRequest()
            .content_type("application/json")
            .body(r#"{"error":{"message":"bad body","type":"OAuthException","code":100,"fbtrace_id":"bench"}}"#);
    };
    sim.events.fetch_add(n as u64, Ordering::Relaxed);
    json_ok(format!(r#"{{"events_received":{n},"messages":[],"fbtrace_id":"bench"}}"#))
}

async fn sim_other(sim: web::Data<Sim>) -> HttpResponse {
    sim.other.fetch_add(1, Ordering::Relaxed);
    HttpResponse::BadRequest()
        .content_type("application/json")
        .body(r#"{"error":{"message":"unknown path","type":"OAuthException","code":100,"fbtrace_id":"bench"}}"#)
}

fn start_sim(workers: usize) -> AnyResult<web::Data<Sim>> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let sim = web::Data::new(Sim { base_url: format!("http://{}", listener.local_addr()?), ..Sim::default() });
    let data = sim.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(64 << 20))
            .route("/v25.0/{id}", web::get().to(sim_node))
            .route("/v25.0/{id}/events", web::post().to(sim_events))
            .default_service(web::to(sim_other))
    })
    .workers(workers.max(1))
    .disable_signals()
    .listen(listener)?
    .run();
    actix_web::rt::spawn(server);
    Ok(sim)
}

// ---------------------------------------------------------------------------
// The run.

fn site_id(s: usize) -> String {
    format!("capi-{s:04}")
}

async fn bench(cli: &Cli, dir: &std::path::Path) -> AnyResult<()> {
    let (sites_n, per_site) = (cli.sites, cli.leads_per_site);
    if sites_n == 0 || per_site == 0 {
        return Err("--sites and --leads-per-site must be positive".into());
    }
    let total = (sites_n * per_site) as u64;
    let sim = start_sim(cli.sim_workers)?;
    let env: BTreeMap<String, String> = [
        ("RASTRO_DATABASE_URL", format!("sqlite://{}", dir.join("rastrod.db").display())),
        ("RASTRO_DATA_DIR", dir.join("data").display().to_string()),
        ("RASTRO_SECRETS_KEY", rastrod::ids::secrets_key().unwrap()),
        ("RASTRO_META_GRAPH_URL", sim.base_url.clone()),
        ("RASTRO_LOG", "error".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let config = Config::load_from(None, &env)?;
    let batch_max = config.capi_batch_max;
    let state = rastrod::server::open_state(config, Arc::new(SystemClock)).await?;
    println!(
        "capibench: {sites_n} pixels × {per_site} leads = {total} conversions, SQLite, \
         RASTRO_CAPI_BATCH_MAX={batch_max}, Graph simulator at {} ({} worker(s))",
        sim.base_url, cli.sim_workers
    );

    // Sites and their pixels (each its own token, sendLeadEvent on).
    let setup = Instant::now();
    for s in 0..sites_n {
        let input = CreateSite {
            site_id: site_id(s),
            name: format!("Capi site {s}"),
            currency: "BRL".into(),
            timezone: "America/Sao_Paulo".into(),
            owner_id: "bench-owner".into(),
            domains: None,
            cookieless: None,
        };
        let now = state.now();
        state.cx.write_plain(move |c| sites::create(c, now, input)).await?;
        let pixel = SetSitePixel {
            pixel_id: format!("{}", 9_000_000_000u64 + s as u64),
            owner_key: None,
            access_token: Some(SecretString(Secret::new(format!("t{s}")))),
            enabled: Some(true),
            test_event_code: None,
            send_lead_event: Some(true),
            send_click_ids: None,
            whatsapp_business_account_id: None,
            only_own: false,
        };
        meta_links::set_pixel(&state.cx, &site_id(s), pixel).await?;
    }
    println!(
        "setup: {sites_n} sites + pixels in {:.2} s ({} Graph requests)",
        setup.elapsed().as_secs_f64(),
        sim.requests()
    );
    let requests_before = sim.requests();

    // Queue every conversion with the senders stopped.
    let queue_start = Instant::now();
    let queue_cpu = cpu_secs();
    let next = Rc::new(AtomicUsize::new(0));
    let errors = Rc::new(AtomicUsize::new(0));
    let first_error: Rc<std::cell::RefCell<Option<String>>> = Rc::default();
    let mut workers = Vec::new();
    for _ in 0..cli.concurrency.max(1) {
        let (state, next, errors, first_error) = (state.clone(), next.clone(), errors.clone(), first_error.clone());
        workers.push(actix_web::rt::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i as u64 >= total {
                    break;
                }
                let (s, l) = (i % sites_n, i / sites_n);
                let now = state.now();
                let input = RecordLead {
                    meta: Some(serde_json::json!({"ph": [format!("{:064x}", i as u64 + 1)]})),
                    ..RecordLead::new(format!("lead-{l}"), format!("ev-{s}-{l}"), now, "whatsapp")
                };
                let site = site_id(s);
                if let Err(e) = state.cx.write(move |c| leads::record(c, now, &site, input)).await {
                    errors.fetch_add(1, Ordering::Relaxed);
                    first_error.borrow_mut().get_or_insert_with(|| e.to_string());
                }
            }
        }));
    }
    for w in workers {
        w.await?;
    }
    let queue_secs = queue_start.elapsed().as_secs_f64();
    let queue_cpu = cpu_secs() - queue_cpu;
    let errors = errors.load(Ordering::Relaxed);
    if errors > 0 {
        return Err(format!(
            "{errors} lead writes failed, the first: {}",
            first_error.borrow().clone().unwrap_or_default()
        )
        .into());
    }
    let pending = count_pending(&state).await?;
    println!(
        "queue: {total} leads recorded in {queue_secs:.2} s = {:.0} leads/s ({pending} conversions pending), \
         {queue_cpu:.2} CPU s used, RSS {:.1} MiB",
        total as f64 / queue_secs,
        mib(proc_status_bytes("VmRSS"))
    );
    if pending != total {
        return Err(format!("expected {total} pending conversions, found {pending}").into());
    }

    // Deliver: start the senders, drain until the simulator has every event.
    let send_start = Instant::now();
    let send_cpu = cpu_secs();
    pixel_sender::start_pixel_senders(&state.cx, &state.actors);
    let deadline = Duration::from_secs(cli.timeout_secs);
    let mut drains = 0u32;
    let mut sent = 0u64;
    let mut failed = 0u64;
    while sim.events.load(Ordering::Relaxed) < total {
        let round = pixel_sender::drain(&state.actors).await?;
        drains += 1;
        sent += round.sent;
        failed += round.failed;
        if sim.events.load(Ordering::Relaxed) >= total {
            break;
        }
        if count_pending(&state).await? == 0 && sim.events.load(Ordering::Relaxed) < total {
            // Nothing left in the queue; give in-flight sends a moment, then stop.
            actix_web::rt::time::sleep(Duration::from_millis(50)).await;
            if count_pending(&state).await? == 0 {
                break;
            }
        }
        if send_start.elapsed() > deadline {
            return Err(format!(
                "timed out after {} s with {} of {total} events delivered",
                cli.timeout_secs,
                sim.events.load(Ordering::Relaxed)
            )
            .into());
        }
    }
    let send_secs = send_start.elapsed().as_secs_f64();
    let send_cpu = cpu_secs() - send_cpu;
    let events = sim.events.load(Ordering::Relaxed);
    let posts = sim.event_posts.load(Ordering::Relaxed);
    let requests = sim.requests() - requests_before;
    let pending = count_pending(&state).await?;
    let rate = events as f64 / send_secs;
    let per_request = events as f64 / requests.max(1) as f64;
    let peak = proc_status_bytes("VmHWM");
    println!(
        "send: {events} events delivered in {send_secs:.2} s = {rate:.0} events/s \
         ({drains} drain(s); drains counted sent={sent} failed={failed}; {pending} still pending); \
         {send_cpu:.2} CPU s used (simulator included) = {:.0} events per CPU s",
        events as f64 / send_cpu.max(0.01)
    );
    println!(
        "graph: {requests} requests during delivery ({posts} event POSTs), {per_request:.1} events per request \
         ({:.0}× fewer than one request per event)",
        events as f64 / requests.max(1) as f64
    );
    println!("memory: peak RSS (VmHWM) {:.1} MiB", mib(peak));
    let ok_rate = rate >= 20_000.0;
    let ok_requests = requests * 100 <= total;
    println!(
        "target: ≥ 20,000 events/s: {}; ≥ 100× fewer requests than events: {}",
        if ok_rate { "met" } else { "MISSED" },
        if ok_requests { "met" } else { "MISSED" }
    );
    println!(
        "RESULT events={events} send_s={send_secs:.3} events_per_s={rate:.0} requests={requests} \
         events_per_request={per_request:.1} queue_s={queue_secs:.3} queue_per_s={:.0} peak_rss_mib={:.1}",
        total as f64 / queue_secs,
        mib(peak)
    );
    state.cx.close();
    if events < total {
        return Err(format!("only {events} of {total} events reached the simulator").into());
    }
    Ok(())
}

async fn count_pending(state: &AppState) -> AnyResult<u64> {
    let sites = rastrod::service::meta::conversions::sites_with_pending(&state.cx).await?;
    if sites.is_empty() {
        return Ok(0);
    }
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let rows = state.cx.read(|c| Ok(rastrod::db::sql::RawQuery::new(PENDING_SQL).load::<N>(c)?)).await?;
    Ok(rows.first().map_or(0, |r| u64::try_from(r.n).unwrap_or(0)))
}

const PENDING_SQL: &str = "SELECT COUNT(*) AS n FROM conversions WHERE status = 'pending'";
