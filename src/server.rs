//! Starting and stopping the daemon. [`start`] is the one start-up path: it is
//! what `rastrod serve` and `rastrod demo` run and what the integration tests
//! run (with a manual clock), so a test exercises exactly the production
//! wiring: the state, the actors, the pixel senders and the HTTP server.
//! [`RunningServer::stop`] is the one shutdown path: in-flight requests
//! finish, then the group-commit writer commits what is queued.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_http::{HttpService, KeepAlive};
use actix_service::{ServiceFactoryExt, map_config};
use actix_web::dev::AppConfig;
use actix_web::dev::ServerHandle;

use crate::clock::SharedClock;
use crate::config::Config;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::http::AppState;
use crate::service::context::Context;

/// Opens the database named by the config (running migrations), starts the
/// fake Graph API when `RASTRO_META_FAKE` is on, and builds the state. Nothing
/// runs yet: the benchmarks and in-process tests that want no HTTP server
/// start from here; everything else goes through [`start`].
pub async fn open_state(config: Config, clock: SharedClock) -> Result<AppState> {
    let db = Db::open_with_writers(
        &config.database_url,
        config.database_pool_size,
        config.write_batch_max,
        config.write_queue_max,
        config.database_writers,
    )?;
    let fake = if config.meta_fake {
        let fake = crate::meta::fake::start("127.0.0.1:0")
            .await
            .map_err(|e| Error::internal(format!("starting the fake Graph API: {e}")))?;
        Some(Arc::new(fake))
    } else {
        None
    };
    // The fake is wired in here, like any Graph URL: its address, and its own
    // app for the login when no real app is configured.
    let graph_url = fake.as_ref().map_or_else(|| config.meta_graph_url.clone(), |f| f.base_url.clone());
    let mut cx = Context::new(db, clock, Arc::new(config), &graph_url)?;
    if fake.is_some() && cx.meta_app.is_none() {
        cx = cx.with_meta_app(Some(crate::meta::fake::login::fake_app()));
    }
    let moved = crate::actors::report::pack_legacy(&cx).await?;
    if moved > 0 {
        tracing::info!(rows = moved, "rollup outbox rows of an older version moved into packs");
    }
    Ok(AppState::new(cx, fake))
}

/// Binds the configured address.
pub fn bind(config: &Config) -> Result<TcpListener> {
    TcpListener::bind(&config.listen)
        .map_err(|e| Error::unavailable(format!("cannot listen on {} (RASTRO_LISTEN): {e}", config.listen)))
}

/// How the HTTP server runs: `rastrod serve` with its signals, tests without.
pub struct ServeOptions {
    pub workers: usize,
    /// Stop on SIGTERM/SIGINT (off in tests, which stop through the handle).
    pub signals: bool,
}

/// The HTTP server over `listener`, not yet awaited. actix-web's `HttpServer`
/// is not used: serving `HttpService` through `actix_server` directly lets
/// every accepted socket be counted against its client address before the
/// HTTP dispatcher sees it (`http::connections`).
pub fn http_server(state: &AppState, listener: TcpListener, opts: ServeOptions) -> Result<actix_server::Server> {
    crate::http::errors::register_parse_error_bodies();
    let config = &state.cx.config;
    let workers = opts.workers.max(1);
    let per_worker = config.max_connections.div_ceil(workers).max(1);
    let per_ip = crate::http::connections::PerIp::new(config.max_connections_per_ip);
    let addr = listener.local_addr().map_err(Error::internal)?;
    let mut builder = actix_server::Server::build()
        .workers(workers)
        .max_concurrent_connections(per_worker)
        .shutdown_timeout(config.shutdown_grace.as_secs().max(1));
    if !opts.signals {
        builder = builder.disable_signals();
    }
    let shutdown = builder.graceful_shutdown_signal();
    let app_state = state.clone();
    let builder = builder
        .listen("rastrod", listener, move || {
            let shutdown = shutdown.clone();
            let app = crate::http::build_app(app_state.clone());
            let app = actix_service::IntoServiceFactory::into_factory(app)
                .map_err(|err: actix_web::Error| err.error_response());
            let http = HttpService::build()
                // actix-web's defaults: headers within 5 s, idle keep-alive 5 s.
                .keep_alive(KeepAlive::Timeout(Duration::from_secs(5)))
                .client_request_timeout(Duration::from_secs(5))
                .client_disconnect_timeout(Duration::from_secs(1))
                .graceful_shutdown_signal(move || {
                    let signal = shutdown.clone();
                    async move { signal.notified().await }
                })
                .local_addr(addr)
                .finish(map_config(app, |_| AppConfig::default()))
                .tcp();
            crate::http::connections::gate(http, per_ip.clone())
        })
        .map_err(Error::internal)?;
    Ok(builder.run())
}

/// Starts the daemon on `listener`: opens the state, starts the pixel senders
/// and the account-sync supervisor, and serves HTTP. Must run inside the actix
/// System. Answers once the server accepts connections.
pub async fn start(config: Config, clock: SharedClock, listener: TcpListener) -> Result<RunningServer> {
    start_with(config, clock, listener, async |_| Ok(())).await
}

/// [`start`], with `prepare` run on the opened state before anything else runs
/// (no actor, no request): `rastrod demo` seeds its sample there, so the actors
/// find it on their first reconcile, as they would after a restart.
pub async fn start_with<F>(
    config: Config,
    clock: SharedClock,
    listener: TcpListener,
    prepare: F,
) -> Result<RunningServer>
where
    F: AsyncFnOnce(&AppState) -> Result<()>,
{
    let addr = listener.local_addr().map_err(Error::internal)?;
    let state = open_state(config, clock).await?;
    prepare(&state).await?;
    let workers = match state.cx.config.workers {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    };
    if state.cx.config.host_api_keys.is_empty() {
        tracing::warn!("no host key set (RASTRO_HOST_API_KEY): the host API refuses every call");
    }
    crate::actors::start(&state.cx, &state.actors);
    crate::service::analytics::reports::live_publisher::start(&state.cx);
    // Signals are ours (`RunningServer::until_signal`): the shutdown order is
    // then written once, in `stop`, and a process running many servers (the
    // tests) does not stop them all on one signal.
    let server = http_server(&state, listener, ServeOptions { workers, signals: false })?;
    let handle = server.handle();
    let serving = actix_web::rt::spawn(server);
    tracing::info!(%addr, workers, "rastrod listening");
    Ok(RunningServer { state, addr, handle, serving })
}

/// A daemon started by [`start`].
pub struct RunningServer {
    /// What the handlers and actors share (the tests read the database and drive the actors through it).
    pub state: AppState,
    /// The address the server listens on (the port the kernel chose for `:0`).
    pub addr: SocketAddr,
    handle: ServerHandle,
    serving: actix_web::rt::task::JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// Serves until SIGTERM (graceful: in-flight requests get the shutdown
    /// grace) or SIGINT/SIGQUIT (at once, as actix-web does), then stops.
    pub async fn until_signal(self) -> Result<()> {
        use tokio::signal::unix::{SignalKind, signal};
        let io = |e: std::io::Error| Error::internal(format!("installing the signal handlers: {e}"));
        let mut term = signal(SignalKind::terminate()).map_err(io)?;
        let mut int = signal(SignalKind::interrupt()).map_err(io)?;
        let mut quit = signal(SignalKind::quit()).map_err(io)?;
        let graceful = tokio::select! {
            _ = term.recv() => true,
            _ = int.recv() => false,
            _ = quit.recv() => false,
        };
        tracing::info!(graceful, "shutdown signal received");
        self.shutdown(graceful).await
    }

    /// The HTTP server's handle, to stop it without waiting (from a `Drop`).
    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
    }

    /// Stops gracefully: no new connection, in-flight requests finish (within
    /// `RASTRO_SHUTDOWN_GRACE`), then the writer commits every queued write and
    /// stops. The state's database stays readable through the pool.
    pub async fn stop(self) -> Result<()> {
        self.shutdown(true).await
    }

    async fn shutdown(self, graceful: bool) -> Result<()> {
        self.handle.stop(graceful).await;
        let outcome = self.serving.await.map_err(Error::internal)?;
        tracing::info!("HTTP server stopped; stopping the syncs and sends");
        crate::actors::shutdown(&self.state.actors, self.state.cx.config.shutdown_grace).await;
        tracing::info!("committing queued writes");
        self.state.cx.close();
        tracing::info!("shutdown complete");
        outcome.map_err(Error::internal)
    }
}
