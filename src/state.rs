//! What every handler and service action can reach: storage, the clock, the
//! configuration, the one Graph client and the secrets key.

use std::sync::{Arc, OnceLock};

use actix::Addr;

use crate::actors::pixel_sender::PixelSenders;
use crate::clock::SharedClock;
use crate::config::Config;
use crate::crypto::SecretsKey;
use crate::db::Db;
use crate::error::{Code, Error, Result};
use crate::http::metrics::Metrics;
use crate::meta::graph::GraphClient;

#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub clock: SharedClock,
    pub config: Arc<Config>,
    pub metrics: Arc<Metrics>,
    pub graph: Arc<GraphClient>,
    /// None without `RASTRO_SECRETS_KEY`: connecting Meta is SECRETS_KEY_MISSING.
    pub secrets: Option<SecretsKey>,
    /// Answers of polled reads (meta.status), valid until the next write.
    pub reads: Arc<crate::service::read_cache::ReadCache<crate::service::meta::status::StatusAnswer>>,
    /// The account-sync supervisor, once the actors are started.
    pub sync: Arc<std::sync::OnceLock<actix::Addr<crate::actors::supervisor::Supervisor>>>,
    /// The fake Graph API this process runs (`RASTRO_META_FAKE=true`), if any.
    pub fake: Option<Arc<crate::meta::fake::FakeGraph>>,
    /// The supervisor of the pixel senders, once started (`actors::pixel_sender::start_pixel_senders`).
    pub pixels: Arc<OnceLock<Addr<PixelSenders>>>,
    /// The federated API's verifier (JWKS and verified tokens, cached) and capabilities.
    pub federation: Arc<crate::federation::Federation>,
}

impl AppState {
    /// The state over `db`, calling the Graph API at `graph_url` (the configured
    /// one, or the fake's when `RASTRO_META_FAKE` is on).
    pub fn new(db: Db, clock: SharedClock, config: Arc<Config>, graph_url: &str) -> Self {
        let secrets = config.secrets_key.as_ref().map(|k| SecretsKey::from_base64(k).expect("checked at start-up"));
        let graph = Arc::new(GraphClient::new(graph_url, config.meta_request_timeout));
        let federation = Arc::new(crate::federation::Federation::new(&config, db.clone()));
        AppState {
            db,
            clock,
            config,
            metrics: Arc::new(Metrics::default()),
            graph,
            secrets,
            fake: None,
            federation,
            pixels: Arc::default(),
            sync: Default::default(),
            reads: Default::default(),
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Tells the sync supervisor the links or tokens changed (a lost wake-up only
    /// delays: the periodic sweep reads the same rows).
    pub fn sync_changed(&self) {
        if let Some(addr) = self.sync.get() {
            addr.do_send(crate::actors::supervisor::Reconcile);
        }
    }

    pub fn secrets(&self) -> Result<&SecretsKey> {
        self.secrets.as_ref().ok_or_else(|| {
            Error::new(Code::SecretsKeyMissing, "RASTRO_SECRETS_KEY is not set: Meta tokens cannot be stored")
        })
    }
}
