//! Runs the HTTP server until SIGTERM/SIGINT, then lets in-flight requests and
//! queued writes finish before returning.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::HttpServer;

use crate::clock::SharedClock;
use crate::config::Config;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::http::{AppState, build_app};
use crate::service::context::Context;

/// Opens the database named by the config (running migrations), starts the
/// fake Graph API when `RASTRO_META_FAKE` is on, and builds the state.
pub async fn open_state(config: Config, clock: SharedClock) -> Result<AppState> {
    let db = Db::open(&config.database_url, config.database_pool_size, config.write_batch_max, config.write_queue_max)?;
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
    Ok(AppState::new(cx, fake))
}

/// Binds the configured address.
pub fn bind(config: &Config) -> Result<TcpListener> {
    TcpListener::bind(&config.listen)
        .map_err(|e| Error::unavailable(format!("cannot listen on {} (RASTRO_LISTEN): {e}", config.listen)))
}

/// Serves until a shutdown signal; then drains the group-commit writer.
pub async fn run(state: AppState, listener: TcpListener) -> Result<()> {
    let workers = match state.cx.config.workers {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    };
    let grace = state.cx.config.shutdown_grace.as_secs().max(1);
    let addr = listener.local_addr().map_err(Error::internal)?;
    if state.cx.config.host_api_keys.is_empty() {
        tracing::warn!("no host key set (RASTRO_HOST_API_KEY): the host API refuses every call");
    }
    crate::actors::start(&state.cx, &state.actors);
    let app_state = state.clone();
    let server = HttpServer::new(move || build_app(app_state.clone()))
        .workers(workers)
        .shutdown_timeout(grace)
        .listen(listener)
        .map_err(Error::internal)?
        .run();
    tracing::info!(%addr, workers, "rastrod listening");
    let outcome = server.await;
    tracing::info!("HTTP server stopped; stopping the syncs and sends");
    crate::actors::shutdown(&state.actors, state.cx.config.shutdown_grace).await;
    tracing::info!("committing queued writes");
    state.cx.db.close();
    tracing::info!("shutdown complete");
    outcome.map_err(Error::internal)
}
