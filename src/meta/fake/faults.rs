//! Fault injection, the request log, delivery counts and the `/__fake/` control
//! routes tests drive:
//!
//! * `POST /__fake/faults` `{"match", "kind", "times"?, "delayMs"?, "usagePct"?,
//!   "regainMinutes"?, "badEventId"?, "skip"?}`: the next `times` (default 1)
//!   Graph requests whose path contains `match` fail as `kind`, after the
//!   first `skip` (default 0) such requests pass untouched. `reject_batch`
//!   touches only `/events` batches holding `badEventId` and, without an
//!   explicit `times`, lasts until `/__fake/reset`.
//! * `GET /__fake/faults`: the faults still armed.
//! * `POST /__fake/config` `{"insightsRowCap"?, "usagePct"?}` / `GET`: the
//!   insights row cap (a range with more rows answers too-much-data, default
//!   50000) and the usage percentage every answer's usage headers report
//!   (default 1).
//! * `POST /__fake/reset`: faults, config, log, deliveries and events back to
//!   the start.
//! * `GET /__fake/deliveries`: `{"<event_id>": count}` of accepted events.
//! * `GET /__fake/events`: the accepted events `[{"pixelId", "testEventCode",
//!   "event"}]`, oldest first (the last 10,000).
//! * `GET /__fake/requests`: `[{"method", "path", "query", "authorization",
//!   "bodyBytes"}]`, oldest first (the last 10,000); the query verbatim, the
//!   Authorization header only as present or not, never its value.
//! * `GET /__fake/in-flight`: `{"now", "peak"}`, Graph requests being answered
//!   now and the most at once since the start (or the last reset).

use std::collections::BTreeMap;

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Shared;

/// How many requests and events the logs keep.
pub const LOG_CAP: usize = 10_000;
pub const DEFAULT_INSIGHTS_ROW_CAP: usize = 50_000;
pub const DEFAULT_USAGE_PCT: f64 = 1.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// HTTP 400, code 80000 on insights and 17 elsewhere, usage headers at `usagePct`.
    Throttle,
    /// HTTP 500, code 2.
    ServerError,
    /// Waits `delayMs` server-side, then answers normally.
    Slow,
    /// HTTP 400, code 190 subcode 463.
    TokenRefused,
    /// HTTP 500, code 1 subcode 1487534.
    TooMuchData,
    /// HTTP 400, code 100, for `/events` batches holding `badEventId`.
    RejectBatch,
    /// HTTP 403, code 200 (as Meta answers a token without the permission).
    Permission,
    /// HTTP 400, code 100 subcode 33: a lead Meta no longer serves (Lead Ads).
    LeadExpired,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    #[serde(rename = "match")]
    pub path_match: String,
    pub kind: FaultKind,
    /// Requests left to fail; `None` = until reset (reject_batch without `times`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regain_minutes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_event_id: Option<String>,
    /// Matching requests still to let through before the fault starts failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FakeConfig {
    pub insights_row_cap: usize,
    pub usage_pct: f64,
}

impl Default for FakeConfig {
    fn default() -> Self {
        FakeConfig { insights_row_cap: DEFAULT_INSIGHTS_ROW_CAP, usage_pct: DEFAULT_USAGE_PCT }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConfigPatch {
    insights_row_cap: Option<usize>,
    usage_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub authorization: bool,
    pub body_bytes: usize,
}

/// The mutable part of the fake that tests steer and read.
#[derive(Debug, Default)]
pub struct Control {
    pub faults: Vec<Fault>,
    pub config: FakeConfig,
    pub requests: Vec<LoggedRequest>,
    pub deliveries: BTreeMap<String, u64>,
    pub events: Vec<Value>,
    pub in_flight: u64,
    pub peak_in_flight: u64,
    /// Lead Ads: the leads made through `/__fake/leadgen`, as Graph answers them.
    pub leads: Vec<Value>,
    pub next_lead: u64,
    /// The Pages whose `leadgen` field the app is subscribed to.
    pub subscriptions: std::collections::BTreeSet<String>,
    /// The form-lead handler's deliveries and its next answers ([`super::handler`]).
    pub handler_deliveries: Vec<Value>,
    pub handler_statuses: std::collections::VecDeque<u16>,
}

impl Control {
    pub fn log(&mut self, r: LoggedRequest) {
        push_capped(&mut self.requests, r);
    }

    pub fn accept_event(&mut self, pixel_id: &str, test_event_code: Option<&str>, event: &Value) {
        if let Some(id) = event.get("event_id").and_then(Value::as_str) {
            *self.deliveries.entry(id.to_string()).or_default() += 1;
        }
        push_capped(&mut self.events, json!({"pixelId": pixel_id, "testEventCode": test_event_code, "event": event}));
    }

    /// The fault a request meets, if any, consuming one of its `times`.
    /// `event_ids` are the event ids of an `/events` batch (empty elsewhere):
    /// a `reject_batch` fault only meets batches holding its `badEventId`.
    pub fn take_fault(&mut self, path: &str, event_ids: &[&str]) -> Option<Fault> {
        let i = self.faults.iter_mut().position(|f| {
            let meets = path.contains(&f.path_match)
                && f.times != Some(0)
                && match f.kind {
                    FaultKind::RejectBatch => f.bad_event_id.as_deref().is_some_and(|bad| event_ids.contains(&bad)),
                    _ => true,
                };
            match &mut f.skip {
                Some(skip) if meets && *skip > 0 => {
                    *skip -= 1;
                    false
                }
                _ => meets,
            }
        })?;
        let fault = self.faults[i].clone();
        if let Some(t) = &mut self.faults[i].times {
            *t -= 1;
            if *t == 0 {
                self.faults.remove(i);
            }
        }
        Some(fault)
    }
}

fn push_capped<T>(v: &mut Vec<T>, x: T) {
    super::push_capped(v, x, LOG_CAP);
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/__fake")
            .route("/faults", web::post().to(add_fault))
            .route("/faults", web::get().to(list_faults))
            .route("/config", web::post().to(set_config))
            .route("/config", web::get().to(get_config))
            .route("/reset", web::post().to(reset))
            .route("/deliveries", web::get().to(deliveries))
            .route("/events", web::get().to(events))
            .route("/requests", web::get().to(requests))
            .route("/in-flight", web::get().to(in_flight))
            .route("/leadgen", web::post().to(super::leads::new_lead)),
    );
}

fn bad_request(msg: String) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({"error": msg}))
}

async fn add_fault(state: web::Data<Shared>, body: web::Bytes) -> HttpResponse {
    let mut fault: Fault = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => return bad_request(format!("bad fault: {e}")),
    };
    if fault.kind == FaultKind::RejectBatch && fault.bad_event_id.is_none() {
        return bad_request("reject_batch needs badEventId".into());
    }
    if fault.times.is_none() && fault.kind != FaultKind::RejectBatch {
        fault.times = Some(1);
    }
    if fault.times == Some(0) {
        return bad_request("times must be at least 1".into());
    }
    tracing::debug!(?fault, "fake graph: fault armed");
    let mut c = state.control();
    c.faults.push(fault);
    HttpResponse::Ok().json(&c.faults)
}

async fn list_faults(state: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(&state.control().faults)
}

async fn set_config(state: web::Data<Shared>, body: web::Bytes) -> HttpResponse {
    let patch: ConfigPatch = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => return bad_request(format!("bad config: {e}")),
    };
    let mut c = state.control();
    if let Some(n) = patch.insights_row_cap {
        c.config.insights_row_cap = n;
    }
    if let Some(p) = patch.usage_pct {
        c.config.usage_pct = p;
    }
    HttpResponse::Ok().json(&c.config)
}

async fn get_config(state: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(&state.control().config)
}

async fn in_flight(state: web::Data<Shared>) -> HttpResponse {
    let c = state.control();
    HttpResponse::Ok().json(json!({"now": c.in_flight, "peak": c.peak_in_flight}))
}

async fn reset(state: web::Data<Shared>) -> HttpResponse {
    *state.control() = Control::default();
    HttpResponse::Ok().json(json!({"reset": true}))
}

async fn deliveries(state: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(&state.control().deliveries)
}

async fn events(state: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(&state.control().events)
}

async fn requests(state: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(&state.control().requests)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(m: &str, kind: FaultKind, times: Option<u64>, bad: Option<&str>) -> Fault {
        Fault {
            path_match: m.into(),
            kind,
            times,
            delay_ms: None,
            usage_pct: None,
            regain_minutes: None,
            bad_event_id: bad.map(Into::into),
            skip: None,
        }
    }

    #[test]
    fn faults_are_consumed_in_order() {
        let mut c = Control::default();
        c.faults.push(fault("/insights", FaultKind::Throttle, Some(2), None));
        c.faults.push(fault("/events", FaultKind::RejectBatch, None, Some("bad")));
        assert!(c.take_fault("/v25.0/me", &[]).is_none());
        assert_eq!(c.take_fault("/v25.0/act_1/insights", &[]).unwrap().kind, FaultKind::Throttle);
        assert_eq!(c.take_fault("/v25.0/act_1/insights", &[]).unwrap().kind, FaultKind::Throttle);
        assert!(c.take_fault("/v25.0/act_1/insights", &[]).is_none());
        assert!(c.take_fault("/v25.0/1/events", &["good"]).is_none());
        for _ in 0..3 {
            assert_eq!(c.take_fault("/v25.0/1/events", &["good", "bad"]).unwrap().kind, FaultKind::RejectBatch);
        }
    }

    #[test]
    fn skip_lets_the_first_matching_requests_pass() {
        let mut c = Control::default();
        c.faults.push(Fault { skip: Some(2), ..fault("/oauth/access_token", FaultKind::ServerError, Some(1), None) });
        c.faults.push(fault("/oauth", FaultKind::Throttle, Some(1), None));
        assert!(c.take_fault("/v25.0/me", &[]).is_none(), "a request that does not match skips nothing");
        // The first matching request passes the skipping fault and meets the next one.
        assert_eq!(c.take_fault("/v25.0/oauth/access_token", &[]).unwrap().kind, FaultKind::Throttle);
        assert!(c.take_fault("/v25.0/oauth/access_token", &[]).is_none());
        assert_eq!(c.take_fault("/v25.0/oauth/access_token", &[]).unwrap().kind, FaultKind::ServerError);
        assert!(c.take_fault("/v25.0/oauth/access_token", &[]).is_none());
        assert!(c.faults.is_empty());
    }
}
