//! The application API: one use case per function, transport-neutral.
//!
//! Each use case is `async fn(&Context, &Caller, Args) -> Result<Answer>` in
//! the context it belongs to (`sites::api`, `leads::api`, `meta::api`, the
//! `api` module of each web-analytics folder): typed arguments decoded once
//! (`decode`), the caller's sites checked, its own transaction, a typed
//! answer. The host API, the dashboard, the federated REST route and
//! Convex's wire format only authenticate, build a [`Caller`] and go through
//! [`call`]; the function table (`functions`) names every function once.

pub mod answers;
pub mod caller;
pub mod capabilities;
pub mod decode;
mod dispatch;
pub mod functions;
pub mod manifest;

pub use answers::Removed;
pub use caller::Caller;
pub use capabilities::Capabilities;
pub use decode::NoArgs;
pub use dispatch::{Reply, Schemas, call, schemas};
pub use functions::{Capability, Function, Kind, Need, Spec};
