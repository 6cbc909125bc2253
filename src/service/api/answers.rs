//! Answers several contexts share.

use serde::Serialize;
use utoipa::ToSchema;

/// Whether a remove found something to remove (a second remove answers false).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct Removed {
    pub removed: bool,
}
