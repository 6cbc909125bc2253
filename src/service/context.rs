//! What a service needs, and nothing more: the database, the clock, the
//! configuration, the one Graph client, the secrets key, the Meta app behind
//! the login, the cache of polled reads, and where its effects go. Services
//! never see the actors, the HTTP layer or the process's state: they reach
//! the actors only through [`Dispatch`], which the actors layer implements.

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::config::Config;
use crate::crypto::SecretsKey;
use crate::db::{AnyConnection, Db, Lane};
use crate::error::{Code, Error, Result};
use crate::meta::graph::GraphClient;
use crate::service::analytics::runtime::Runtime;
use crate::service::api::Capabilities;
use crate::service::effects::{Dispatch, Effects, NoDispatch, Written};
use crate::service::read_cache::{CachedJson, ReadCache};

/// The database's figures (see [`Context::storage_stats`]).
#[derive(Debug, Clone, Copy)]
pub struct StorageStats {
    pub connections: u32,
    pub idle: u32,
    pub pool_max: u32,
    pub writer: crate::db::WriterStats,
    /// SQL statements finished so far on every connection.
    pub queries: u64,
}

pub use crate::meta::MetaApp;

#[derive(Clone)]
pub struct Context {
    /// Private: reads go through [`Context::read`], writes through
    /// [`Context::write`] and its siblings, so none forgets its effects.
    db: Db,
    pub clock: SharedClock,
    pub config: Arc<Config>,
    pub graph: Arc<GraphClient>,
    /// None without `RASTRO_SECRETS_KEY`: connecting Meta is SECRETS_KEY_MISSING.
    pub secrets: Option<SecretsKey>,
    /// None without `RASTRO_META_APP_ID`/`_SECRET` (the start-up wires in the
    /// fake Graph's app when it runs one): the login is META_LOGIN_UNAVAILABLE.
    pub meta_app: Option<MetaApp>,
    /// Answers of polled reads (meta.status), valid until the next write.
    pub reads: Arc<ReadCache<CachedJson>>,
    /// Web analytics in this process: the tracker's limits and salts, the
    /// live-visitors cache, the tracked links' click window, the cursor key.
    pub analytics: Arc<Runtime>,
    /// Writes of one kind waiting to be written together (`combine`), by kind.
    pub combiners: Arc<crate::service::combine::queue::Combiners>,
    /// The opt-in capabilities this host serves.
    capabilities: Capabilities,
    dispatch: Arc<dyn Dispatch>,
}

impl Context {
    /// A context calling the Graph API at `graph_url`; effects go nowhere
    /// until [`Context::with_dispatch`] names where.
    pub fn new(db: Db, clock: SharedClock, config: Arc<Config>, graph_url: &str) -> Result<Context> {
        let secrets = config
            .secrets_key
            .as_ref()
            .map(SecretsKey::from_base64)
            .transpose()
            .map_err(|e| Error::new(Code::SecretsKeyMissing, e.to_string()))?;
        let meta_app = match (&config.meta_app_id, &config.meta_app_secret) {
            (Some(id), Some(secret)) => Some(MetaApp { id: id.clone(), secret: secret.clone() }),
            _ => None,
        };
        let graph = Arc::new(GraphClient::new(graph_url, config.meta_request_timeout));
        let analytics = Arc::new(Runtime::new(&config));
        let capabilities = Capabilities::from_config(&config);
        Ok(Context {
            db,
            clock,
            config,
            graph,
            secrets,
            meta_app,
            reads: Arc::default(),
            analytics,
            combiners: Arc::default(),
            capabilities,
            dispatch: Arc::new(NoDispatch),
        })
    }

    pub fn with_dispatch(mut self, dispatch: Arc<dyn Dispatch>) -> Context {
        self.dispatch = dispatch;
        self
    }

    pub fn with_meta_app(mut self, app: Option<MetaApp>) -> Context {
        self.meta_app = app;
        self
    }

    /// Runs `f` on the read pool.
    pub async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        self.db.run(f).await
    }

    /// Runs `f` on the read pool without waiting for the durability of what
    /// it saw: for a check before a write (see `Db::run_unsettled`).
    pub async fn read_unsettled<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        self.db.run_unsettled(f).await
    }

    /// Waits until every commit visible now is durable (see `Db::settle`).
    pub async fn settle(&self) {
        self.db.settle().await;
    }

    /// Runs `f` on the read pool with a second connection when one is idle
    /// (see `Db::run_pair`).
    pub async fn read_pair<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection, Option<&mut AnyConnection>) -> Result<T> + Send + 'static,
    {
        self.db.run_pair(f).await
    }

    /// Moves on every write that may change a cached read.
    pub fn generation(&self) -> u64 {
        self.db.generation()
    }

    /// SQLite: empties the WAL through the writer (see `Db::truncate_wal`).
    pub async fn truncate_wal(&self) -> Result<()> {
        self.db.truncate_wal().await
    }

    /// Stops the writer (shutdown).
    pub fn close(&self) {
        self.db.close();
    }

    /// The pool's and the writer's figures, for `/metrics` and the benchmarks.
    pub fn storage_stats(&self) -> StorageStats {
        let (connections, idle) = self.db.pool_state();
        StorageStats {
            connections,
            idle,
            pool_max: self.db.pool_max(),
            writer: self.db.writer_stats(),
            queries: self.db.queries(),
        }
    }

    /// Which database this process runs on.
    pub fn backend(&self) -> crate::db::Backend {
        self.db.backend()
    }

    /// The same database and clock under another configuration (tests,
    /// tools that change one setting).
    pub fn reconfigured(&self, config: Arc<Config>, graph_url: &str) -> Result<Context> {
        Context::new(self.db.clone(), self.clock.clone(), config, graph_url)
    }

    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn secrets(&self) -> Result<&SecretsKey> {
        self.secrets.as_ref().ok_or_else(|| {
            Error::new(Code::SecretsKeyMissing, "RASTRO_SECRETS_KEY is not set: Meta tokens cannot be stored")
        })
    }

    /// Commits `f` through the group-commit writer, then acts on what it
    /// changed: the read cache's generation moves unless the write says it
    /// left cached reads alone, and the wake-ups go to the actors. A failed
    /// write sends no wake-up (it changed nothing) but still moves the
    /// generation (the safe side).
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<Written<T>> + Send + 'static,
    {
        let written = self.db.write_tracked(f, |w: &Written<T>| w.effects.changes_cached_reads).await?;
        self.act_on(&written.effects);
        Ok(written.value)
    }

    /// [`Context::write`] in a transaction of its own, for a large write
    /// (an import, a rollup or retention batch: see `db::writer`).
    pub async fn write_alone<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<Written<T>> + Send + 'static,
    {
        let written = self.db.write_alone(f).await?;
        self.act_on(&written.effects);
        Ok(written.value)
    }

    /// [`Context::write`] (or, `alone`, [`Context::write_alone`]) in a
    /// writer lane: [`Lane::Any`] only for writes safe beside every other
    /// (see `db::writer`).
    pub async fn write_in<T, F>(&self, lane: Lane, alone: bool, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<Written<T>> + Send + 'static,
    {
        let written = self.db.write_in(lane, alone, f, |w: &Written<T>| w.effects.changes_cached_reads).await?;
        self.act_on(&written.effects);
        Ok(written.value)
    }

    /// What a committed write changed, acted on: this process's live cache
    /// of the sites it touched (and the live states pushed to dashboards),
    /// then the actors' wake-ups.
    fn act_on(&self, effects: &Effects) {
        for site in &effects.live_changed {
            self.analytics.live.changed(site);
            self.analytics.push.changed(site);
        }
        self.dispatch.dispatch(effects);
    }

    /// [`Context::write`] for a write with no wake-up to send.
    pub async fn write_plain<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        self.write(move |c| f(c).map(Written::plain)).await
    }
}
