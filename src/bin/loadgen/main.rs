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
//! target/release/loadgen leads-csv              # leads.csv of a site with 1,000,000 leads: rows/s, memory
//! target/release/loadgen lead-ads               # signed leadgen webhooks/s vs ping; webhook → handler p99
//! target/release/loadgen live-push              # 20 then 200 dashboards following live visitors over SSE
//! target/release/loadgen flood                  # leads at 200/s and an operator's first screen, then under a tracker flood
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

#[path = "../bench_util/analytics_poll.rs"]
mod analytics_poll;
#[path = "../bench_util/analytics_reports.rs"]
mod analytics_reports;
#[path = "../bench_util/expired_fill.rs"]
mod expired_fill;

mod events;
mod federation;
mod flood;
mod ingest;
mod lead_ads;
mod leads_csv;
mod live_push;
mod report;
mod shared;
#[allow(unused_imports)]
use events::*;
#[allow(unused_imports)]
use federation::*;
#[allow(unused_imports)]
use ingest::*;
#[allow(unused_imports)]
use lead_ads::*;
#[allow(unused_imports)]
use leads_csv::*;
#[allow(unused_imports)]
use report::*;
#[allow(unused_imports)]
use shared::*;

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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Cmd,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
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
    /// Fill one site with a million leads, start rastrod, download its leads.csv: rows/s and memory.
    LeadsCsv(LeadsCsvArgs),
    /// Start rastrod with Lead Ads against the fake Graph: signed leadgen webhooks (durable receipts)
    /// vs GET /v1/ping, then the time from a webhook to the handler's delivery.
    LeadAds(LeadAdsArgs),
    /// Start rastrod; dashboards follow 10 sites' live visitors over Server-Sent Events while the
    /// tracker posts; the database statements against the number of dashboards.
    LivePush(live_push::LivePushArgs),
    /// Start rastrod; leads at a steady rate and an operator's sign-in and first screen, then the same
    /// with the tracker at full speed: does the flood starve the rest?
    Flood(flood::FloodArgs),
}

#[derive(Args)]
pub(crate) struct LeadAdsArgs {
    /// Signed webhooks (one leadgen change each), and as many pings.
    #[arg(long, default_value_t = 50_000)]
    pub(crate) requests: usize,
    #[arg(long, default_value_t = 32)]
    pub(crate) connections: usize,
    #[arg(long, default_value_t = 5_000)]
    pub(crate) warmup: usize,
    /// Real leads made on the fake whose delivery to the handler is timed.
    #[arg(long, default_value_t = 200)]
    pub(crate) deliveries: usize,
    #[command(flatten)]
    pub(crate) daemon: DaemonArgs,
}

#[derive(Args)]
pub(crate) struct LeadsCsvArgs {
    /// Leads of the site (one year of them).
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) leads: usize,
    /// Leads read per query (RASTRO_LEADS_CSV_PAGE).
    #[arg(long, default_value_t = 5_000)]
    pub(crate) page: usize,
    /// Downloads of the whole file.
    #[arg(long, default_value_t = 3)]
    pub(crate) runs: usize,
    #[command(flatten)]
    pub(crate) daemon: DaemonArgs,
}

#[derive(Args)]
pub(crate) struct AnalyticsReportsArgs {
    /// Events to import (pageviews, custom events, vitals), spread over the sites and days.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) events: usize,
    #[arg(long, default_value_t = 10)]
    pub(crate) sites: usize,
    #[arg(long, default_value_t = 366)]
    pub(crate) days: i64,
    /// Timed runs of each read.
    #[arg(long, default_value_t = 20)]
    pub(crate) runs: usize,
    /// Identified people on the first site (listPeople's searches).
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) profiles: usize,
    /// Default: a fresh SQLite file in the temp folder. postgres://... gets a fresh schema.
    #[arg(long)]
    pub(crate) database_url: Option<String>,
    /// Keep the database (SQLite file or PostgreSQL schema) and print its URL.
    #[arg(long)]
    pub(crate) keep: bool,
    /// Skip the event fill: time the reads on the database at --database-url (a --keep run's URL).
    #[arg(long, requires = "database_url")]
    pub(crate) existing: bool,
    /// Time only the reads whose name starts with this (e.g. `funnelsReport`), for profiling.
    #[arg(long)]
    pub(crate) only: Option<String>,
}

#[derive(Args)]
pub(crate) struct EventsArgs {
    /// One-pageview requests, and as many pings.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) requests: usize,
    /// 50-event batch requests.
    #[arg(long, default_value_t = 2_000)]
    pub(crate) batches: usize,
    /// Distinct visitors the requests come from (each a browser sending its pageviews in order).
    #[arg(long, default_value_t = 20_000)]
    pub(crate) visitors: usize,
    #[arg(long, default_value_t = 64)]
    pub(crate) connections: usize,
    #[arg(long, default_value_t = 5_000)]
    pub(crate) warmup: usize,
    /// Events 100 days old the retention actor deletes (policy: events 30 days) while the phases run.
    #[arg(long, default_value_t = 0)]
    pub(crate) expired: usize,
    #[command(flatten)]
    pub(crate) daemon: DaemonArgs,
}

#[derive(Args)]
pub(crate) struct FederationArgs {
    /// Dashboards: each one a grant, a token and one keep-alive connection polling in a closed loop.
    #[arg(long, default_value_t = 200)]
    pub(crate) dashboards: usize,
    /// Sites of each dashboard's grant, all named in each of its metaStatus calls (1-10).
    #[arg(long, default_value_t = 10)]
    pub(crate) sites_per_dashboard: usize,
    /// metaStatus calls, and as many pings.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) requests: usize,
    /// metaStatus calls sent before measuring (at least one per dashboard: every token verified once).
    #[arg(long, default_value_t = 5_000)]
    pub(crate) warmup: usize,
    #[command(flatten)]
    pub(crate) daemon: DaemonArgs,
}

#[derive(Args)]
pub(crate) struct IngestArgs {
    /// recordLead calls, and as many pings.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) requests: usize,
    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 64)]
    pub(crate) connections: usize,
    /// Pings sent before measuring anything (warms the daemon and the connections).
    #[arg(long, default_value_t = 5_000)]
    pub(crate) warmup: usize,
    /// The leads' `occurredAt` lie at random in this many days before the
    /// run's start (the benchmark's load); 0: each lead arrives at its call's
    /// time, as a live host sends them (the indexes by time then append).
    #[arg(long, default_value_t = ingest::LEAD_SPREAD_DAYS)]
    pub(crate) arrival_spread_days: u64,
    #[command(flatten)]
    pub(crate) daemon: DaemonArgs,
}

/// How the HTTP benchmarks start the daemon and their client.
#[derive(Args)]
pub(crate) struct DaemonArgs {
    /// Threads of the client's runtime (the client shares the machine with the daemon).
    #[arg(long, default_value_t = 1)]
    pub(crate) client_threads: usize,
    /// The daemon's binary; default: `rastrod` next to this binary.
    #[arg(long)]
    pub(crate) rastrod: Option<PathBuf>,
    /// Serve from this database instead of a fresh SQLite file (postgres://... gets a fresh schema).
    #[arg(long)]
    pub(crate) database_url: Option<String>,
}

impl DaemonArgs {
    pub(crate) fn binary(&self) -> io::Result<PathBuf> {
        match &self.rastrod {
            Some(p) => Ok(p.clone()),
            None => Ok(std::env::current_exe()?.with_file_name("rastrod")),
        }
    }

    pub(crate) fn client_runtime(&self) -> io::Result<tokio::runtime::Runtime> {
        tokio::runtime::Builder::new_multi_thread().worker_threads(self.client_threads.max(1)).enable_all().build()
    }
}

#[derive(Args)]
pub(crate) struct ReportArgs {
    /// Default: a fresh SQLite file in the temp folder. postgres://... gets a fresh schema.
    #[arg(long)]
    pub(crate) database_url: Option<String>,
    /// Leads to write (spread over the sites and days).
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) leads: usize,
    #[arg(long, default_value_t = 10)]
    pub(crate) sites: usize,
    #[arg(long, default_value_t = 366)]
    pub(crate) days: i64,
    /// Ads per site (4 campaigns × 2 ad sets × ads/8 ads).
    #[arg(long, default_value_t = 40)]
    pub(crate) ads_per_site: usize,
    /// Leads per fill transaction; default 5,000 on SQLite, 500 on PostgreSQL
    /// (where every row version of an open transaction stays until it commits).
    #[arg(long)]
    pub(crate) batch: Option<usize>,
    /// Fill connections at once (each takes its own sites); default 1 on SQLite, 2 on PostgreSQL.
    #[arg(long)]
    pub(crate) fill_threads: Option<usize>,
    /// Timed runs of each report case.
    #[arg(long, default_value_t = 30)]
    pub(crate) iterations: usize,
    /// Keep the database (SQLite file or PostgreSQL schema) and print where it is.
    #[arg(long)]
    pub(crate) keep: bool,
    /// Skip the fill: time the reports on the database at --database-url as it is (after --keep).
    #[arg(long, requires = "database_url")]
    pub(crate) existing: bool,
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
        Cmd::LeadsCsv(a) => leads_csv(a),
        Cmd::LeadAds(a) => lead_ads(a),
        Cmd::LivePush(a) => live_push::live_push(a),
        Cmd::Flood(a) => flood::flood(a),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) type AnyResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

pub(crate) fn analytics_reports_cmd(a: AnalyticsReportsArgs) -> AnyResult<()> {
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
