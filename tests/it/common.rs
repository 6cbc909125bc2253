//! The test harness: `TestApp` starts the daemon through `server::start`, the
//! function `rastrod serve` runs, on a loopback port over a fresh database (a
//! new SQLite file, or a new PostgreSQL schema when `RASTRO_TEST_DATABASE_URL`
//! is set), with a manual clock. `backend_test!` turns one async test body into
//! a SQLite test and a PostgreSQL test, and ends each with `finish`: the
//! actors settled, nothing may be left half-done (a write still queued in the
//! group-commit writer, a lease still held), then the production shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;

use diesel::Connection;
use diesel::connection::SimpleConnection;
use rastrod::clock::ManualClock;
use rastrod::config::{Config, Secret};
use rastrod::http::AppState;
use rastrod::server::RunningServer;
use serde_json::Value;

pub const HOST_KEY: &str = "test-host-key-0123456789";
/// 2026-11-30T12:00:00Z: the manual clock's start.
pub const T0: i64 = 1_796_040_000_000;
pub const DAY: i64 = 86_400_000;
pub const HOUR: i64 = 3_600_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs `$body` (an async block using `$app`) once per backend, over the app
/// `$builder(backend).start()` makes (default: [`plain_builder`]), then calls
/// `$app.finish()`, which fails the test if anything is left half-done.
///
/// `$builder` is any `fn(Backend) -> B` whose `B` has `async fn start(self) ->
/// Option<A>` and `A` an `async fn finish(self)`: a [`TestAppBuilder`] (a
/// `TestApp`), or a fixture around one (the federation tests' `Fed`). `start`
/// answers None when the backend is not available (PostgreSQL without
/// `RASTRO_TEST_DATABASE_URL`): the test then says it skipped.
///
/// `backend_test!(slow: name, ...)` puts the pair in the slow tier: their
/// paths read `name::slow::sqlite` and `name::slow::postgres` (see [`slow_tier`]).
#[macro_export]
macro_rules! backend_test {
    (slow: $name:ident, $builder:path, |$app:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::backend_test!(slow, $builder, |$app| $body);
        }
    };
    ($name:ident, |$app:ident| $body:block) => {
        $crate::backend_test!($name, $crate::common::plain_builder, |$app| $body);
    };
    ($name:ident, $builder:path, |$app:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[actix_web::test]
            async fn sqlite() {
                let $app = $builder($crate::common::Backend::Sqlite).start().await.expect("SQLite is always there");
                let () = $body;
                $app.finish().await;
            }
            #[actix_web::test]
            async fn postgres() {
                let Some($app) = $builder($crate::common::Backend::Postgres).start().await else {
                    return;
                };
                let () = $body;
                $app.finish().await;
            }
        }
    };
}

/// Puts plain async tests in the slow tier: `slow_tests!(a, b);` after
/// `async fn a()` and `async fn b()` (written without a test attribute) runs
/// them as the tests `slow::a` and `slow::b` of the file's module.
#[macro_export]
macro_rules! slow_tests {
    ($($name:ident),+ $(,)?) => {
        mod slow {
            $(
                #[actix_web::test]
                async fn $name() {
                    super::$name().await
                }
            )+
        }
    };
}

/// The slow tier is the tests whose path has a `slow` segment: the browser
/// tests, the crash tests that kill the real binary, the schemathesis run and
/// the Convex client; `cargo test -- --skip slow::` runs the rest (README,
/// "Tests"). What only a slow test may do (start a browser, spawn the binary to
/// kill it, run schemathesis or Node) calls this first, so a slow test left
/// outside the tier fails instead of slowing the fast one down. libtest names
/// each test's thread after the test; a thread without such a name (a test run
/// on the main thread) is not checked.
pub fn slow_tier(what: &str) {
    let thread = std::thread::current();
    let Some(name) = thread.name() else { return };
    if name != "main" {
        assert!(
            name.contains("slow::"),
            "{name} {what}, which only a test of the slow tier may do: mark it with \
             `backend_test!(slow: ...)` or `slow_tests!(...)` (tests/it/common.rs)"
        );
    }
}

/// A tool or service a test needs is missing: the test says so and skips,
/// except under `RASTRO_TEST_REQUIRE_ALL=1` (`.ci/run` sets it), where a skip
/// would hide an untested part: then the test fails with the same words.
pub fn skip_or_fail(missing: &str, install: &str) {
    let why = format!("{missing}; to install it: {install}");
    if std::env::var("RASTRO_TEST_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("RASTRO_TEST_REQUIRE_ALL=1 and {why}");
    }
    eprintln!("skipping: {why}");
}

/// One test capturing the log lines at a time: a thread's subscriber going
/// away re-decides which lines every thread's subscribers see (tracing's
/// callsite interest), so two captures at once could each miss lines.
pub static LOG_CAPTURE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The default app: no Meta.
pub fn plain_builder(backend: Backend) -> TestAppBuilder {
    TestApp::builder(backend)
}

/// The fake Graph API inside the daemon and a fresh `RASTRO_SECRETS_KEY`.
pub fn fake_meta_builder(backend: Backend) -> TestAppBuilder {
    TestApp::builder(backend)
        .env("RASTRO_META_FAKE", "true")
        .env("RASTRO_SECRETS_KEY", &rastrod::ids::secrets_key().unwrap())
}

/// A fresh database: a SQLite file in a temporary folder, or a PostgreSQL schema.
pub struct TestDb {
    pub url: String,
    dir: Option<std::path::PathBuf>,
    pg: Option<(String, String)>,
}

fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}_{}_{}_{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst), nanos)
}

impl TestDb {
    pub fn sqlite() -> TestDb {
        let dir = std::env::temp_dir().join(unique("rastrod_test"));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}", dir.join("rastrod.db").display());
        TestDb { url, dir: Some(dir), pg: None }
    }

    /// None (and a note on stderr, or a failure: [`skip_or_fail`]) when
    /// `RASTRO_TEST_DATABASE_URL` is not set.
    pub fn postgres() -> Option<TestDb> {
        let Ok(base) = std::env::var("RASTRO_TEST_DATABASE_URL") else {
            skip_or_fail(
                "PostgreSQL is not configured (RASTRO_TEST_DATABASE_URL is not set)",
                "run PostgreSQL and set RASTRO_TEST_DATABASE_URL=postgres://root@127.0.0.1:5432/test",
            );
            return None;
        };
        let schema = unique("t");
        let mut conn = diesel::PgConnection::establish(&base).expect("connecting to RASTRO_TEST_DATABASE_URL");
        conn.batch_execute(&format!("CREATE SCHEMA {schema}")).unwrap();
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-csearch_path%3D{schema}");
        Some(TestDb { url, dir: None, pg: Some((base, schema)) })
    }

    pub fn for_backend(b: Backend) -> Option<TestDb> {
        match b {
            Backend::Sqlite => Some(TestDb::sqlite()),
            Backend::Postgres => TestDb::postgres(),
        }
    }

    pub fn sqlite_path(&self) -> Option<std::path::PathBuf> {
        self.dir.as_ref().map(|d| d.join("rastrod.db"))
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
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

/// Builds a TestApp with settings of the test's choosing.
pub struct TestAppBuilder {
    backend: Backend,
    env: BTreeMap<String, String>,
    data_dir: Option<TempDir>,
}

impl TestAppBuilder {
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// A `RASTRO_DATA_DIR` of the test's own (thumbnails land there), removed with the app.
    pub fn own_data_dir(mut self) -> Self {
        let dir = TempDir::new("rastrod_test_data");
        self.env.insert("RASTRO_DATA_DIR".into(), dir.0.to_str().expect("a UTF-8 temp path").into());
        self.data_dir = Some(dir);
        self
    }

    pub async fn start(self) -> Option<TestApp> {
        let db = TestDb::for_backend(self.backend)?;
        let mut env = self.env;
        env.insert("RASTRO_DATABASE_URL".into(), db.url.clone());
        env.entry("RASTRO_HOST_API_KEY".into()).or_insert_with(|| HOST_KEY.into());
        env.entry("RASTRO_LISTEN".into()).or_insert_with(|| "127.0.0.1:0".into());
        env.entry("RASTRO_DATABASE_POOL_SIZE".into()).or_insert_with(|| "4".into());
        // One HTTP worker and a short grace: many apps run side by side on two cores.
        env.entry("RASTRO_WORKERS".into()).or_insert_with(|| "1".into());
        env.entry("RASTRO_SHUTDOWN_GRACE".into()).or_insert_with(|| "1s".into());
        let config = Config::load_from(None, &env).expect("test config");
        let clock = ManualClock::new(T0);
        let listener = rastrod::server::bind(&config).unwrap();
        let server = rastrod::server::start(config, clock.clone(), listener).await.expect("starting the test server");
        Some(TestApp {
            base: format!("http://{}", server.addr),
            http: reqwest::Client::new(),
            clock,
            state: server.state.clone(),
            server: Some(server),
            db,
            _data_dir: self.data_dir.map(Arc::new),
            key: Some(HOST_KEY.to_string()),
        })
    }
}

/// A temporary folder, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        let dir = std::env::temp_dir().join(unique(prefix));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub clock: Arc<ManualClock>,
    pub state: AppState,
    /// The daemon; None in a `with_key` copy (the original finishes it) and once finished.
    server: Option<RunningServer>,
    pub db: TestDb,
    _data_dir: Option<Arc<TempDir>>,
    key: Option<String>,
}

/// An answer: status and JSON body (Null when the body is not JSON).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

impl Answer {
    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }
    #[track_caller]
    pub fn ok(self) -> Value {
        assert!((200..300).contains(&self.status), "expected success, got {} {}", self.status, self.text);
        self.body
    }
    #[track_caller]
    pub fn err(&self, status: u16, code: &str) {
        assert_eq!((self.status, self.code()), (status, code), "body: {}", self.text);
    }
}

impl TestApp {
    pub fn builder(backend: Backend) -> TestAppBuilder {
        TestAppBuilder { backend, env: BTreeMap::new(), data_dir: None }
    }

    pub fn backend(&self) -> Backend {
        if self.db.url.starts_with("sqlite") { Backend::Sqlite } else { Backend::Postgres }
    }

    /// The same app, calling without a host key (or with another one).
    pub fn with_key(&self, key: Option<&str>) -> TestApp {
        TestApp {
            base: self.base.clone(),
            http: self.http.clone(),
            clock: self.clock.clone(),
            state: self.state.clone(),
            server: None,
            db: TestDb { url: self.db.url.clone(), dir: None, pg: None },
            _data_dir: self._data_dir.clone(),
            key: key.map(str::to_string),
        }
    }

    pub async fn request(&self, method: &str, path: &str, body: Option<Value>) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.http.request(method, format!("{}{}", self.base, path));
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b.to_string());
        }
        self.send(req).await
    }

    /// A request with the host key, for a test that reads the response's headers or bytes.
    pub fn host_request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let req = self.http.request(method, format!("{}{}", self.base, path));
        match &self.key {
            Some(k) => req.bearer_auth(k),
            None => req,
        }
    }

    /// Sends a raw body (malformed JSON, huge payloads).
    pub async fn raw(&self, method: &str, path: &str, body: impl Into<reqwest::Body>) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.http.request(method, format!("{}{}", self.base, path)).body(body);
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        self.send(req.header("content-type", "application/json")).await
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Answer {
        let res = req.send().await.expect("request");
        let status = res.status().as_u16();
        let text = res.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer { status, body, text }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.request("GET", path, None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> Answer {
        self.request("POST", path, Some(body)).await
    }
    pub async fn put(&self, path: &str, body: Value) -> Answer {
        self.request("PUT", path, Some(body)).await
    }
    pub async fn patch(&self, path: &str, body: Value) -> Answer {
        self.request("PATCH", path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> Answer {
        self.request("DELETE", path, None).await
    }

    /// Creates a site with BRL and São Paulo time unless told otherwise.
    pub async fn site(&self, id: &str) -> Value {
        self.site_with(id, "BRL", "o1").await
    }

    pub async fn site_with(&self, id: &str, currency: &str, owner: &str) -> Value {
        self.post(
            "/v1/sites",
            serde_json::json!({"siteId": id, "name": format!("Site {id}"), "currency": currency,
                "timezone": "America/Sao_Paulo", "ownerId": owner}),
        )
        .await
        .ok()
    }

    /// recordLead with the fields a test cares about merged over sane defaults.
    pub async fn lead(&self, site: &str, key: &str, at: i64, extra: Value) -> Answer {
        let mut body =
            serde_json::json!({"leadKey": key, "eventId": format!("{key}-new"), "occurredAt": at, "origin": "ctwa_ad"});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                b.insert(k.clone(), v.clone());
            }
        }
        self.post(&format!("/v1/sites/{site}/leads"), body).await
    }

    pub async fn stage(&self, site: &str, key: &str, body: Value) -> Answer {
        self.post(&format!("/v1/sites/{site}/leads/{key}/stage"), body).await
    }

    pub async fn report(&self, sites: &[&str], from: i64, to: i64) -> Value {
        self.post("/v1/reports/leads", serde_json::json!({"siteIds": sites, "from": from, "to": to})).await.ok()
    }

    /// Counts rows of a table straight from the database (to prove nothing was written).
    pub async fn count(&self, table: &'static str) -> i64 {
        #[derive(diesel::QueryableByName)]
        struct N {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        self.state
            .cx
            .read(move |c| {
                use diesel::RunQueryDsl;
                let rows: Vec<N> =
                    diesel::sql_query(format!("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM {table}")).load(c)?;
                Ok(rows[0].n)
            })
            .await
            .unwrap()
    }
}

impl TestApp {
    /// Ends the test: lets the actors settle, asserts nothing is left
    /// half-done (no write queued in the group-commit writer, no lease held on
    /// an account sync or a conversion), then stops the daemon the way
    /// SIGTERM does. `backend_test!` calls it after every body; a test that
    /// starts its own apps calls it on each.
    pub async fn finish(mut self) {
        let server = self.server.take().expect("finish() on the app that started the server, once");
        self.settle().await;
        // Quiescence, not a schedule. The test's own writes were all answered
        // before it got here, so a write still queued is background work (a
        // WAL scrub, a batch of unlinked spend) or one that never completes;
        // a lease still held is a run in flight (one the settle cannot wait
        // for: an actor stopped by an unlink finishes its drain untracked) or
        // one abandoned. The first kind ends in moments on the stopped clock,
        // the second never: a bounded wait tells them apart.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let (mut pending, mut held) = self.half_done().await;
        while (pending > 0 || !held.is_empty()) && std::time::Instant::now() < deadline {
            actix_web::rt::time::sleep(std::time::Duration::from_millis(10)).await;
            (pending, held) = self.half_done().await;
        }
        assert_eq!(pending, 0, "writes still queued in the group-commit writer at the end");
        // No test leaves a lease on purpose: the crash tests run the real binary, not a TestApp.
        assert!(held.is_empty(), "leases still held at the end of the test: {held:?}");
        server.stop().await.expect("stopping the daemon");
    }

    /// Waits for the actors' runs in flight and runs what they have due now
    /// (by the manual clock, which stands still here): a sync run or a send a
    /// test set going in the background ends before the checks read the rows.
    async fn settle(&self) {
        if let Some(sync) = self.state.actors.sync.get() {
            sync.send(rastrod::actors::supervisor::RunDue)
                .await
                .expect("the sync supervisor is alive")
                .expect("settling the account syncs");
        }
        if self.state.actors.pixels.get().is_some() {
            rastrod::actors::pixel_sender::drain(&self.state.actors).await.expect("settling the pixel senders");
        }
        if self.state.actors.page_leads.get().is_some() {
            rastrod::actors::page_leads::drain(&self.state.actors).await.expect("settling the Page actors");
        }
    }

    /// Writes queued in the group-commit writer, and the rows whose lease is still held.
    async fn half_done(&self) -> (u64, Vec<String>) {
        (self.state.cx.storage_stats().writer.pending, self.held_leases().await)
    }

    /// Rows whose lease is still held: `account_syncs:<account>`, `conversions:<event>`
    /// and (Lead Ads) `meta_page_links:<page>`.
    pub async fn held_leases(&self) -> Vec<String> {
        #[derive(diesel::QueryableByName)]
        struct Held {
            #[diesel(sql_type = diesel::sql_types::Text)]
            row: String,
        }
        self.state
            .cx
            .read(|c| {
                use diesel::RunQueryDsl;
                let rows: Vec<Held> = diesel::sql_query(
                    "SELECT 'account_syncs:' || ad_account_id AS row FROM account_syncs WHERE lease_run_id IS NOT NULL \
                     UNION ALL SELECT 'conversions:' || event_id AS row FROM conversions WHERE lease_owner IS NOT NULL \
                     UNION ALL SELECT 'meta_page_links:' || page_id AS row FROM meta_page_links \
                     WHERE lease_owner IS NOT NULL",
                )
                .load(c)?;
                Ok(rows.into_iter().map(|h| h.row).collect())
            })
            .await
            .expect("reading the leases")
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let Some(server) = self.server.take() else { return };
        // The stop command is sent now; nothing here can await its completion.
        drop(server.handle().stop(false));
        if !std::thread::panicking() {
            panic!("a TestApp must end with `app.finish().await` (backend_test! calls it after the body)");
        }
    }
}

#[allow(dead_code)]
pub fn secret(s: &str) -> Secret {
    Secret::new(s)
}

/// A free loopback port for a child process, drawn outside Linux's ephemeral
/// range (32768–60999): a port the kernel hands to another test's `bind(0)`
/// between our probe and the child's bind can then never be this one.
/// `s` percent-encoded for a query string (RFC 3986's unreserved characters kept).
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

pub fn free_port() -> u16 {
    loop {
        let mut b = [0u8; 2];
        getrandom::fill(&mut b).unwrap();
        let port = 20_000 + u16::from_le_bytes(b) % 12_000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Waits (bounded: 20 s) until a spawned daemon at `base` answers `/health`.
pub async fn wait_healthy(http: &reqwest::Client, base: &str) {
    for _ in 0..400 {
        if http.get(format!("{base}/health")).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        // An async wait: the test's runtime (and any server on it) keeps running.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the daemon at {base} did not come up");
}

/// The crash test's processes, killed on drop whatever happens.
pub struct Proc(pub std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The kills' moments: a seeded generator (splitmix64), so a failing run is
/// repeated with `RASTRO_TEST_SEED=<the printed seed>`; without it the seed
/// comes from the system's random source and is printed.
pub struct Moments(u64);

impl Moments {
    pub fn from_env() -> Moments {
        let seed = std::env::var("RASTRO_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b).unwrap();
            u64::from_le_bytes(b)
        });
        eprintln!("kill moments: RASTRO_TEST_SEED={seed}");
        Moments(seed)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

pub async fn wait_for(http: &reqwest::Client, url: &str) {
    for _ in 0..200 {
        if http.get(url).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        actix_web::rt::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{url} did not come up");
}

/// `rastrod fake-graph` as its own process on a free port, up: the process and its base URL
/// (the crash tests' Meta, whose counts survive the daemon's kills).
pub async fn fake_graph_process(http: &reqwest::Client) -> (Proc, String) {
    let port = free_port();
    let proc = Proc(
        std::process::Command::new(env!("CARGO_BIN_EXE_rastrod"))
            .args(["fake-graph", "--listen", &format!("127.0.0.1:{port}")])
            .env("RASTRO_LOG", "error")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    wait_for(http, &format!("{base}/__fake/deliveries")).await;
    (proc, base)
}

/// Every writer thread held (one on SQLite, `RASTRO_DATABASE_WRITERS` on
/// PostgreSQL), each by a write of its own that waits until the answered
/// sender sends (or is dropped), so the writes submitted meanwhile queue
/// behind them; the handle answers the held writes' outcome. The holds go
/// alone (a transaction each), so no two of them share a thread. It returns
/// once every hold is inside its write: a write submitted after it cannot
/// be taken before, or beside, a hold (the writer may otherwise still be
/// choosing its next batch when the caller's writes arrive).
pub async fn hold_writer(
    cx: &rastrod::service::context::Context,
) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<rastrod::error::Result<()>>) {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let opener = gate.clone();
    std::thread::spawn(move || {
        let _ = held.recv();
        *opener.0.lock().unwrap() = true;
        opener.1.notify_all();
    });
    use rastrod::db::Lane;
    // The first writer takes the ordered lane, every other one the other lane.
    let lanes = std::iter::once(Lane::Ordered).chain((1..writers(cx)).map(|_| Lane::Any));
    let entered = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let inside = |n: u64| {
        let entered = entered.clone();
        async move { wait_queued(n as usize, || entered.load(std::sync::atomic::Ordering::SeqCst) as usize).await }
    };
    let mut holds = Vec::new();
    for (n, lane) in lanes.enumerate() {
        let (cx, gate, entered) = (cx.clone(), gate.clone(), entered.clone());
        holds.push(tokio::spawn(async move {
            cx.write_in(lane, true, move |_| {
                entered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let open = gate.0.lock().unwrap();
                drop(gate.1.wait_while(open, |open| !*open).unwrap());
                Ok(rastrod::service::effects::Written::plain(()))
            })
            .await
        }));
        // The first writer's hold is inside before the others are queued:
        // had it been taken while another lane's write waited, the first
        // writer would next take every write in order (`Taker::Every`), and
        // a test of the ordered writes' own batch would see them shared.
        if n == 0 {
            inside(1).await;
        }
    }
    let blocker = tokio::spawn(async move {
        for h in holds {
            h.await.unwrap()?;
        }
        Ok(())
    });
    inside(writers(cx)).await;
    (release, blocker)
}

/// The writer threads of this process (what [`hold_writer`] holds).
pub fn writers(cx: &rastrod::service::context::Context) -> u64 {
    cx.storage_stats().writer.writers as u64
}

/// Waits (5 s at most) until `queued()` counts `n`, then checks it does.
pub async fn wait_queued(n: usize, queued: impl Fn() -> usize) {
    for _ in 0..500 {
        if queued() == n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(queued(), n, "items queued for the combined write");
}

/// Reverts the app database's migrations down to and including `version`
/// (e.g. "20261206000035"), then applies them all again: what an upgrade
/// does to a database that has rows.
pub async fn redo_migrations_through(app: &TestApp, version: &'static str) {
    use rastrod::service::effects::{Effects, Written};
    app.state
        .cx
        .write_alone(move |c| {
            rastrod::db::revert_through(c, version)?;
            rastrod::db::migrate(c)?;
            Ok(Written::new((), Effects::quiet()))
        })
        .await
        .unwrap();
}
