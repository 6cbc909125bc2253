//! What a session row measures, the same at acceptance (the rollups'
//! deltas) and in the reads: whether it bounced, and its duration.

use crate::store::analytics::SessionRow;

/// The longest a session can last.
pub const MAX_SESSION_MS: i64 = 86_400_000;

/// 1 when the session is one pageview and nothing else.
pub fn bounce(s: &SessionRow) -> i64 {
    i64::from(s.pageviews == 1 && s.events == 0)
}

/// `durationMs` (rule SES-17).
pub fn duration(s: &SessionRow) -> i64 {
    (s.last_at.max(s.end_at) - s.started_at).clamp(0, MAX_SESSION_MS)
}
