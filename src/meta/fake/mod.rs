//! The fake Graph API: a real HTTP server on a loopback port that speaks the
//! Graph paths rastrod uses (`/tmp`'s contract, `v25.0`) and serves the sample
//! agency of [`sample`]. It exists for demos and tests (`RASTRO_META_FAKE=true`,
//! `rastrod fake-graph`) and must never serve a customer.
//!
//! * Any bearer token works except one containing `invalid`, refused on every
//!   route like an expired token (code 190, subcode 463); no token is refused
//!   with code 190 too. A token containing `rastro-fake-sample-token:<days>`
//!   moves every date by `<days>` days (see [`sample`] for the shift).
//! * A token containing `rastro-fake-accounts:<id>+<id>…` (ids `act_…`, the
//!   prefix optional) is granted only those ad accounts: `GET /me/adaccounts`
//!   lists only them and `GET /act_…/adspixels` of any other is a permission
//!   error (code 200), as for a business that shared fewer accounts.
//! * Login (`POST /oauth/access_token`, `GET /debug_token`): see [`login`].
//! * Conversions (`POST /{pixel_id}/events`) are validated, counted per
//!   `event_id` and kept in memory; nothing leaves the machine. Each shape is
//!   checked as Meta documents it (rule WA-34): `business_messaging` needs
//!   `messaging_channel: whatsapp`, `user_data.ctwa_clid` and
//!   `whatsapp_business_account_id`, and an event name that channel takes
//!   (`Lead` is refused with code 100, subcode 2804066); an `fbc` must be
//!   `fb.1.<ms>.<fbclid>`.
//! * Lead Ads (Pages, forms, leads, signed `leadgen` webhooks): see [`leads`];
//!   a form-lead handler as a host runs one: see [`handler`].
//! * Tests steer it through `/__fake/` (see [`faults`]): faults, config, the
//!   request log, the delivery counts.
//!
//! Every Graph answer carries the usage headers (low values by default).

pub mod capi;
pub mod dialog;
pub mod faults;
pub mod handler;
pub mod leads;
pub mod login;
pub mod png;
pub mod reply;
pub mod routes;
pub mod sample;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpServer, web};

pub use sample::{
    SAMPLE_DAYS, SAMPLE_LAST_DAY, SampleAccount, SampleAd, SamplePixel, default_shift_days, sample_accounts,
    sample_ads, sample_pixels, sample_spend, sample_spend_shifted, sample_token_for_last_day, token_shift,
};

/// The Graph version the fake serves (and the client pins).
pub const GRAPH_VERSION: &str = "v25.0";

/// The warning printed whenever the fake runs.
pub const NEVER_FOR_CUSTOMERS: &str =
    "the fake Meta Graph API is running: it serves made-up data and accepts any token; never use it for a customer";

/// Appends `x`, dropping the oldest once `cap` are kept (the fake's logs).
fn push_capped<T>(v: &mut Vec<T>, x: T, cap: usize) {
    if v.len() >= cap {
        v.remove(0);
    }
    v.push(x);
}

/// A running fake Graph server.
pub struct FakeGraph {
    /// `http://127.0.0.1:PORT`, without the version (the client adds `/v25.0`).
    pub base_url: String,
    handle: ServerHandle,
    shared: web::Data<Shared>,
}

impl FakeGraph {
    /// Stops the server, letting requests in flight finish.
    pub async fn stop(self) {
        self.handle.stop(true).await;
    }

    /// The default date shift of an account (tokens without
    /// `rastro-fake-sample-token:<days>`): its served last day is
    /// `SAMPLE_LAST_DAY + shift`, yesterday in its timezone when the fake started.
    pub fn default_shift(&self, account_id: &str) -> Option<i64> {
        self.shared.default_shift.get(account_id).copied()
    }

    /// The accepted deliveries per `event_id` (what `GET /__fake/deliveries` answers).
    pub fn deliveries(&self) -> BTreeMap<String, u64> {
        self.shared.control().deliveries.clone()
    }
}

/// A token the fake issued through `/oauth/access_token`.
#[derive(Debug, Clone, Copy)]
pub struct Issued {
    /// Epoch seconds; 0 = never.
    pub expires_at: i64,
}

/// State shared by the fake's handlers.
pub struct Shared {
    pub base_url: String,
    pub started_ms: i64,
    /// Per ad account: the shift of tokens that do not pin one.
    pub default_shift: BTreeMap<&'static str, i64>,
    control: Mutex<faults::Control>,
    issued: Mutex<HashMap<String, Issued>>,
}

impl Shared {
    fn new(base_url: String, started_ms: i64) -> Shared {
        let default_shift =
            sample_accounts().iter().map(|a| (a.id, default_shift_days(a.timezone, started_ms))).collect();
        Shared {
            base_url,
            started_ms,
            default_shift,
            control: Mutex::new(faults::Control::default()),
            issued: Mutex::new(HashMap::new()),
        }
    }

    pub fn control(&self) -> MutexGuard<'_, faults::Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn issued(&self) -> MutexGuard<'_, HashMap<String, Issued>> {
        self.issued.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The shift for `account` under `token`.
    pub fn shift(&self, token: &str, account: &str) -> i64 {
        token_shift(token).unwrap_or_else(|| self.default_shift.get(account).copied().unwrap_or(0))
    }
}

/// Starts the fake on `addr` (e.g. `127.0.0.1:0` for a free port), with the
/// sample's default last day set from the system clock. Must run inside an
/// actix System.
pub async fn start(addr: &str) -> std::io::Result<FakeGraph> {
    start_at(addr, chrono::Utc::now().timestamp_millis()).await
}

/// [`start`] as if the clock read `now_ms` (epoch milliseconds): tokens that
/// pin no shift see the sample end on the day before `now_ms` in each account's
/// timezone.
pub async fn start_at(addr: &str, now_ms: i64) -> std::io::Result<FakeGraph> {
    let listener = std::net::TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    let base_url = format!("http://{local}");
    let shared = web::Data::new(Shared::new(base_url.clone(), now_ms));
    let data = shared.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(routes::MAX_BODY_BYTES))
            .configure(handler::configure)
            .configure(faults::configure)
            .configure(routes::configure)
    })
    .workers(1)
    .disable_signals()
    .listen(listener)?
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    tracing::warn!(base_url = %base_url, "{NEVER_FOR_CUSTOMERS}");
    Ok(FakeGraph { base_url, handle, shared })
}
