//! The values an acceptance passes between its steps: the visit, what
//! [`super::load`] read ([`Loaded`]) and what [`super::decide::decide`] made
//! of it ([`Plan`]), which [`super::write`] applies.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::crypto::SecretsKey;
use crate::secret::Secret;
use crate::service::analytics::definitions::{Matcher, Step};
use crate::service::analytics::ingest::agent::Agent;
use crate::service::analytics::ingest::session_cache::{KeptSession, SessionSource};
use crate::store::analytics::funnels::StepRow;
use crate::store::analytics::whatsapp_refs::NewRef;
use crate::store::analytics::{EventRow, OutboxRow, SessionRow, VisitorRow};

/// What a batch's events share: the site, the visitor, the clock and the client.
#[derive(Debug, Clone)]
pub struct Visit {
    pub site_id: String,
    pub domains: Vec<String>,
    pub route_patterns: Vec<String>,
    pub visitor_id: String,
    pub received_at: i64,
    pub sent_at: Option<i64>,
    pub hash: bool,
    pub redact: bool,
    pub language: Option<String>,
    pub agent: Agent,
    pub country: Option<String>,
    pub region: Option<String>,
    pub idle_ms: i64,
    pub max_ms: i64,
    /// The import (§4.4): event times are exact (no skew correction), an
    /// event older than the visitor's latest is refused, no domain check.
    pub trusted: bool,
    /// Seals the `fbclid` of a session's landing (rule WA-33); None (no
    /// secrets key, the import): no fbclid is kept.
    pub click_key: Option<SecretsKey>,
    /// The request's raw user agent, only while a landing's fbclid can be
    /// kept (`click_key`): sealed beside it for Meta's `client_user_agent`
    /// (WA-33), never stored otherwise (TRK-25).
    pub user_agent: Option<Secret>,
    /// The visitor's current session as this process last wrote it (rule
    /// STORE-12): used only if its version is still the stored one.
    pub kept_session: Option<Arc<KeptSession>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub accepted: usize,
    pub rejected: usize,
    pub session_id: Option<String>,
    /// Sessions this batch opened.
    pub sessions: usize,
    /// Where the visitor's current session came from (rule STORE-12).
    pub session_source: SessionSource,
    /// The visitor's current session as this write left it, with its
    /// version, for the tracker to keep once committed; None when the
    /// write did not move it.
    pub left_session: Option<Arc<KeptSession>>,
}

/// What the decision reads, all of it before any write.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The (site, visitor) state, its row locked for the transaction.
    pub visitor: VisitorRow,
    /// The visitor's current session, when it is still stored.
    pub current: Option<SessionRow>,
    /// Its stored version, and whether it was the kept row (rule STORE-12).
    pub current_version: Option<i64>,
    pub session_source: SessionSource,
    /// The site's active goals.
    pub goals: Vec<(String, Matcher)>,
    /// The stored pageviews the batch names (by pageview id).
    pub stored: Vec<EventRow>,
    /// The sessions of the stored pageviews an engagement names (by id).
    pub sessions: HashMap<String, SessionRow>,
    /// The site's affiliates the batch's landings name: lowercased slug → id.
    pub affiliates: HashMap<String, String>,
    /// The (session, goal) pairs the current session has completed.
    pub session_goals: HashSet<(String, String)>,
    /// The site's funnels and their steps (for the step index).
    pub funnels: Vec<(String, Vec<Step>)>,
}

/// A session the batch opened, or one it changed.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionWrite {
    Insert(SessionRow),
    Update(SessionRow),
}

/// The visitor's state after the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisitorState {
    pub session_id: String,
    pub session_started_at: i64,
    pub last_at: i64,
    pub current_path: String,
    pub current_route: String,
    pub sessions: i64,
    /// Its session belongs to another id: identify handed it to the person
    /// this (alias) id names, and the alias's event went on in it (rule
    /// SES-19). Such a row is not a live visitor of its own.
    pub handed_over: bool,
}

/// What becomes of the visitor's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VisitorWrite {
    /// A pageview or custom event moved the visitor.
    Update(VisitorState),
    /// Nothing moved it: the row goes if the lock made it (it has no session).
    DropIfEmpty,
}

/// A goal completion (rule ARPT-10), and whether it is its session's first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalHit {
    pub goal_id: String,
    pub session_id: String,
    pub session_start: i64,
    pub at: i64,
    pub event_id: String,
    pub first_in_session: bool,
}

/// The writes of one batch, applied by [`write`] in this order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub outcome: Outcome,
    /// New pageviews and custom events.
    pub events: Vec<EventRow>,
    /// Their rows in the funnels' step index.
    pub funnel_steps: Vec<StepRow>,
    /// Stored pageviews whose engagement or vitals changed.
    pub measured: Vec<EventRow>,
    pub sessions: Vec<SessionWrite>,
    pub visitor: VisitorWrite,
    pub hits: Vec<GoalHit>,
    /// One row per change the rollups apply.
    pub outbox: Vec<OutboxRow>,
    /// The `fbclid` of each session opened by a landing that carried one,
    /// sealed by the write (rule WA-33).
    pub click_ids: Vec<LandingClickId>,
    /// The references of the batch's WhatsApp taps, in their order (rule WA-02).
    pub whatsapp_refs: Vec<NewRef>,
}

/// A new session's landing `fbclid` (rule WA-33), in memory only until the
/// write seals it.
#[derive(Debug, Clone)]
pub struct LandingClickId {
    pub session_id: String,
    pub fbclid: Secret,
    pub landed_at: i64,
    /// The landing request's user agent (WA-33).
    pub user_agent: Option<Secret>,
}
