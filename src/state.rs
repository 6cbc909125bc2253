//! What every handler can reach: the services' context, the actors' handles,
//! the request metrics, the fake Graph API (when this process runs one) and
//! the federated API's verifier. Assembled once at start-up
//! (`server::open_state`); services never see it, only its [`Context`].

use std::sync::Arc;

use crate::actors::Actors;
use crate::request_metrics::Metrics;
use crate::service::context::Context;

#[derive(Clone)]
pub struct AppState {
    /// What the services take: db, clock, config, Graph client, secrets key.
    pub cx: Context,
    /// The supervisors, once started; they also receive the writes' effects.
    pub actors: Arc<Actors>,
    pub metrics: Arc<Metrics>,
    /// The fake Graph API this process runs (`RASTRO_META_FAKE=true`), if any.
    pub fake: Option<Arc<crate::meta::fake::FakeGraph>>,
    /// The federated API's verifier (JWKS and verified tokens, cached) and grant reader.
    pub federation: Arc<crate::federation::Federation>,
}

impl AppState {
    /// The state over a context whose effects go to fresh (not yet started) actors.
    pub fn new(cx: Context, fake: Option<Arc<crate::meta::fake::FakeGraph>>) -> Self {
        let actors = Arc::new(Actors::default());
        let cx = cx.with_dispatch(actors.clone());
        let federation = Arc::new(crate::federation::Federation::new(&cx));
        AppState { cx, actors, metrics: Arc::new(Metrics::default()), fake, federation }
    }

    pub fn now(&self) -> i64 {
        self.cx.now()
    }
}
