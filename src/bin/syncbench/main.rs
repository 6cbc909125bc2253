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

#[path = "../bench_util/mod.rs"]
mod bench_util;
mod cli;
mod fresh_db;
mod graph_sim;
mod heap;
mod run;
#[allow(unused_imports)]
use cli::*;
#[allow(unused_imports)]
use fresh_db::*;
#[allow(unused_imports)]
use graph_sim::*;
#[allow(unused_imports)]
use heap::*;
#[allow(unused_imports)]
use run::*;

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
