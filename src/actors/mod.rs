//! The actors: the supervisor of one `AccountSync` per linked ad account (and
//! the pixel senders). They are started by `start` for the daemon and the tests.

pub mod account_sync;
pub mod pixel_sender;
pub mod supervisor;

use actix::Actor;

use crate::state::AppState;

/// Starts the account-sync supervisor and makes it reachable from the state.
pub fn start(state: &AppState) {
    let addr = supervisor::Supervisor::new(state.clone()).start();
    let _ = state.sync.set(addr);
}
