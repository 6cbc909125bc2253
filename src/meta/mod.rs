//! Meta: the one Graph API client every external call goes through, and the
//! fake Graph API (a real HTTP server on loopback) for demos and tests.

pub mod fake;
pub mod graph;

/// The Meta app the Login for Business trades codes with.
#[derive(Clone)]
pub struct MetaApp {
    pub id: String,
    pub secret: crate::secret::Secret,
}
