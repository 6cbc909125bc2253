//! The Graph routes (under `/v25.0`; any `/vNN.N` prefix is accepted) and the
//! thumbnails (`GET /fake-media/thumbnails/{ad_id}.png`, no token needed).
//!
//! Every request is logged, then meets the first armed fault whose `match` is
//! in its path, then (Graph routes) the token check, then its handler.

use std::time::Duration;

use actix_web::http::header::AUTHORIZATION;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::NaiveDate;
use serde_json::{Value, json};

use super::faults::{FaultKind, LoggedRequest};
use super::reply::{self, Field, GraphError, Query, Usage, get, paginate, parse_fields, parse_query, select};
use super::sample::{self, SAMPLE_USER_ID, SAMPLE_USER_NAME, cents_to_decimal};
use super::{GRAPH_VERSION, Shared, login, png};

/// Request bodies up to 16 MiB (a full events batch is well under).
pub const MAX_BODY_BYTES: usize = 16 << 20;
/// The largest `limit` of insights; other lists too.
pub const MAX_LIMIT: usize = 5_000;
/// Events per `/events` batch.
pub const MAX_EVENTS: usize = 1_000;
/// Meta's `action_source` values.
const ACTION_SOURCES: [&str; 9] = [
    "email",
    "website",
    "app",
    "phone_call",
    "chat",
    "physical_store",
    "system_generated",
    "business_messaging",
    "other",
];
/// `user_data` keys that must be SHA-256 hashed (lowercase hex).
const HASHED_KEYS: [&str; 10] = ["em", "ph", "fn", "ln", "ct", "st", "zp", "country", "ge", "db"];
/// The event names Meta takes on `business_messaging` (Conversions API for
/// Business Messaging); any other (`Lead` among them) is refused with
/// [`MESSAGING_EVENT_INVALID`].
const MESSAGING_EVENTS: [&str; 14] = [
    "LeadSubmitted",
    "Purchase",
    "QualifiedLead",
    "InitiateCheckout",
    "AddToCart",
    "ViewContent",
    "OrderCreated",
    "OrderShipped",
    "OrderDelivered",
    "OrderCanceled",
    "OrderReturned",
    "CartAbandoned",
    "RatingProvided",
    "ReviewProvided",
];
/// Meta's error subcode for an event name `business_messaging` does not take
/// ("Messaging Event Invalid Event Type"), under code 100.
pub const MESSAGING_EVENT_INVALID: i64 = 2_804_066;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/fake-media/thumbnails/{name}", web::get().to(thumbnail))
        .route("/{version}/dialog/oauth", web::get().to(super::dialog::dialog))
        .default_service(web::to(graph));
}

fn usage(state: &Shared, path: &str) -> Usage {
    Usage { pct: state.control().config.usage_pct, regain_minutes: 0, insights: path.contains("/insights") }
}

/// Logs the request and applies the fault it meets. `Err` = the answer is the fault's.
async fn preamble(state: &Shared, req: &HttpRequest, body: &[u8], event_ids: &[&str]) -> Result<(), HttpResponse> {
    let path = req.path().to_string();
    let fault = {
        let mut c = state.control();
        c.log(LoggedRequest {
            method: req.method().to_string(),
            path: path.clone(),
            query: req.query_string().to_string(),
            authorization: req.headers().contains_key(AUTHORIZATION),
            body_bytes: body.len(),
        });
        c.take_fault(&path, event_ids)
    };
    let Some(fault) = fault else { return Ok(()) };
    let mut u = usage(state, &path);
    let insights = u.insights;
    let err = match fault.kind {
        FaultKind::Slow => {
            actix_web::rt::time::sleep(Duration::from_millis(fault.delay_ms.unwrap_or(0))).await;
            return Ok(());
        }
        FaultKind::Throttle => {
            u.pct = fault.usage_pct.unwrap_or(100.0);
            u.regain_minutes = fault.regain_minutes.unwrap_or(0);
            GraphError::throttled(insights)
        }
        FaultKind::ServerError => GraphError::server_error(),
        FaultKind::TokenRefused => GraphError::expired_token(),
        FaultKind::TooMuchData => GraphError::too_much_data(),
        FaultKind::Permission => GraphError::permission(),
        FaultKind::LeadExpired => GraphError::new(400, 100, Some(33), "(#100) Object does not exist"),
        FaultKind::RejectBatch => GraphError::invalid("(#100) Invalid parameter")
            .user_msg(format!("The event {} is invalid.", fault.bad_event_id.unwrap_or_default())),
    };
    tracing::debug!(path = %path, kind = ?fault.kind, "fake graph: fault served");
    Err(err.reply(u))
}

async fn thumbnail(state: web::Data<Shared>, req: HttpRequest, name: web::Path<String>) -> HttpResponse {
    if let Err(r) = preamble(&state, &req, &[], &[]).await {
        return r;
    }
    match name.strip_suffix(".png").and_then(sample::ad_by_id) {
        Some(ad) => HttpResponse::Ok()
            .content_type("image/png")
            .insert_header(("Cache-Control", "public, max-age=86400"))
            .body(png::thumbnail(ad.id)),
        None => HttpResponse::NotFound().content_type("text/plain").body("no such thumbnail"),
    }
}

/// The bearer token of a request (`Authorization: Bearer …` or `OAuth …`).
fn bearer(req: &HttpRequest) -> Option<String> {
    let v = req.headers().get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = v.split_once(' ')?;
    let token = token.trim();
    (["bearer", "oauth"].contains(&scheme.to_ascii_lowercase().as_str()) && !token.is_empty())
        .then(|| token.to_string())
}

fn check_token(token: Option<String>) -> Result<String, GraphError> {
    let token = token.ok_or_else(GraphError::missing_token)?;
    if token.contains("invalid") {
        return Err(GraphError::expired_token());
    }
    Ok(token)
}

/// The ids of the events of an `/events` body (for `reject_batch`).
fn event_ids(body: &Value) -> Vec<&str> {
    body.get("data")
        .and_then(Value::as_array)
        .map(|d| d.iter().filter_map(|e| e.get("event_id").and_then(Value::as_str)).collect())
        .unwrap_or_default()
}

/// Counts a Graph request in flight for as long as it lives (a dropped one too).
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(state: &'a Shared) -> InFlight<'a> {
        let mut c = state.control();
        c.in_flight += 1;
        c.peak_in_flight = c.peak_in_flight.max(c.in_flight);
        InFlight(state)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut c = self.0.control();
        c.in_flight = c.in_flight.saturating_sub(1);
    }
}

async fn graph(state: web::Data<Shared>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let _counted = InFlight::enter(&state);
    let path = req.path().to_string();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let is_events = req.method() == "POST" && segs.last() == Some(&"events");
    let json_body: Option<Value> = if is_events { serde_json::from_slice(&body).ok() } else { None };
    let ids = json_body.as_ref().map(event_ids).unwrap_or_default();
    if let Err(r) = preamble(&state, &req, &body, &ids).await {
        return r;
    }
    let u = usage(&state, &path);
    match route(&state, &req, &segs, &body, json_body.as_ref()) {
        Ok(v) => reply::ok(&v, u),
        Err(e) => e.reply(u),
    }
}

fn route(
    state: &Shared,
    req: &HttpRequest,
    segs: &[&str],
    body: &[u8],
    json: Option<&Value>,
) -> Result<Value, GraphError> {
    let method = req.method().as_str();
    let Some((version, rest)) = segs.split_first() else {
        return Err(GraphError::invalid(format!("Unknown path: use /{GRAPH_VERSION}/…")));
    };
    if !is_version(version) {
        return Err(GraphError::invalid(format!("Unknown path components: start with /{GRAPH_VERSION}")));
    }
    let q = parse_query(req.query_string())?;
    // The two routes whose secrets do not travel as a user token.
    match (method, rest) {
        ("POST", ["oauth", "access_token"]) => return login::access_token(state, body),
        ("GET", ["debug_token"]) => {
            let app = check_token(bearer(req))?;
            return login::debug_token(state, &q, &app);
        }
        _ => {}
    }
    let token = check_token(bearer(req))?;
    let fields: Option<Vec<Field>> = get(&q, "fields").map(parse_fields);
    let fields = fields.as_deref();
    let self_url = format!("{}{}", state.base_url, req.path());
    let list = |items: Vec<Value>| paginate(items, &q, req.query_string(), &self_url, MAX_LIMIT);
    if let Some(answer) = super::leads::route(state, method, rest, &token, &q, fields, &list) {
        return answer;
    }
    match (method, rest) {
        ("GET", ["me"]) => Ok(select(json!({"id": SAMPLE_USER_ID, "name": SAMPLE_USER_NAME}), fields, &["id"])),
        ("GET", ["me", "adaccounts"]) => list(
            sample::sample_accounts()
                .iter()
                .filter(|a| grants(&token, a.id))
                .map(|a| select(account_json(a), fields, &["id"]))
                .collect(),
        ),
        ("GET", [id]) if sample::account(id).is_some() => {
            Ok(select(account_json(sample::account(id).unwrap_or(&sample::sample_accounts()[0])), fields, &["id"]))
        }
        ("GET", [id]) if sample::pixel(id).is_some() => {
            let p = sample::pixel(id).map(pixel_json).unwrap_or_default();
            Ok(select(p, fields, &["id"]))
        }
        ("GET", [id, "adspixels"]) if sample::account(id).is_some() && !grants(&token, id) => {
            Err(GraphError::permission())
        }
        ("GET", [id, "adspixels"]) if sample::account(id).is_some() => list(
            sample::sample_pixels()
                .iter()
                .filter(|p| p.account == *id)
                .map(|p| select(pixel_json(p), fields, &["id"]))
                .collect(),
        ),
        ("GET", [id, "ads"]) if sample::account(id).is_some() => {
            let ads = ads(state, id, &q)?;
            list(ads.into_iter().map(|a| select(a, fields, &["id"])).collect())
        }
        ("GET", [id, "insights"]) if sample::account(id).is_some() => {
            let rows = insights(state, &token, id, &q)?;
            list(rows.into_iter().map(|r| select(r, fields, &["date_start", "date_stop"])).collect())
        }
        ("POST", [id, "events"]) if sample::pixel(id).is_some() => events(state, id, json),
        (m, [id, ..]) => Err(GraphError::unsupported(m, id)),
        (m, []) => Err(GraphError::unsupported(m, "")),
    }
}

/// What a token holding `rastro-fake-accounts:<id>+<id>…` lists: only those
/// ad accounts (`act_…`, the prefix optional). A token without it lists all.
pub const ACCOUNTS_TOKEN_PREFIX: &str = "rastro-fake-accounts:";

/// Whether `token` may read `account` (`act_…`).
fn grants(token: &str, account: &str) -> bool {
    let Some((_, rest)) = token.split_once(ACCOUNTS_TOKEN_PREFIX) else { return true };
    let ids = rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '+')).next().unwrap_or("");
    ids.split('+').any(|id| !id.is_empty() && (id == account || account.strip_prefix("act_") == Some(id)))
}

fn is_version(s: &str) -> bool {
    s.strip_prefix('v').is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

fn account_json(a: &sample::SampleAccount) -> Value {
    json!({
        "id": a.id,
        "account_id": a.account_id,
        "name": a.name,
        "currency": a.currency,
        "timezone_name": a.timezone,
        "account_status": 1,
    })
}

fn pixel_json(p: &sample::SamplePixel) -> Value {
    json!({ "id": p.id, "name": p.name })
}

fn ad_json(state: &Shared, a: &sample::SampleAd) -> Value {
    let account_id = a.account.trim_start_matches("act_");
    let mut creative = json!({
        "id": a.creative_id,
        "object_type": a.object_type,
        "thumbnail_url": format!("{}/fake-media/thumbnails/{}.png", state.base_url, a.id),
    });
    if a.object_type == "SHARE" {
        // Every SHARE of the sample is a carousel: Graph tells it from a plain link by its cards.
        let cards: Vec<Value> =
            (1..=3).map(|n| json!({ "link": format!("https://example.test/{}/{n}", a.id) })).collect();
        creative["object_story_spec"] = json!({ "link_data": { "child_attachments": cards } });
    }
    json!({
        "id": a.id,
        "name": a.name,
        "account_id": account_id,
        "status": a.effective_status,
        "effective_status": a.effective_status,
        "adset_id": a.adset_id,
        "campaign_id": a.campaign_id,
        "creative": creative,
    })
}

/// `GET /{act}/ads`, with the `filtering` Graph accepts on `id` / `ad.id`
/// (`IN`, `EQUAL`) and `effective_status` (`IN`).
fn ads(state: &Shared, account: &str, q: &Query) -> Result<Vec<Value>, GraphError> {
    let mut ads: Vec<&sample::SampleAd> = sample::account_ads(account).collect();
    if let Some(f) = get(q, "filtering") {
        let filters: Vec<Value> =
            serde_json::from_str(f).map_err(|e| GraphError::invalid(format!("(#100) Invalid filtering: {e}")))?;
        for f in filters {
            let field = f.get("field").and_then(Value::as_str).unwrap_or("");
            let op = f.get("operator").and_then(Value::as_str).unwrap_or("");
            let values: Vec<String> = match f.get("value") {
                Some(Value::Array(v)) => {
                    v.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string)).collect()
                }
                Some(Value::String(s)) => vec![s.clone()],
                Some(other) => vec![other.to_string()],
                None => return Err(GraphError::invalid("(#100) A filter needs a value")),
            };
            let pick: fn(&sample::SampleAd) -> &str = match field {
                "id" | "ad.id" => |a| a.id,
                "effective_status" | "ad.effective_status" => |a| a.effective_status,
                "adset.id" => |a| a.adset_id,
                "campaign.id" => |a| a.campaign_id,
                _ => return Err(GraphError::invalid(format!("(#100) Filtering field {field} is invalid"))),
            };
            match op {
                "IN" | "EQUAL" => ads.retain(|a| values.iter().any(|v| v == pick(a))),
                "NOT_IN" | "NOT_EQUAL" => ads.retain(|a| !values.iter().any(|v| v == pick(a))),
                _ => return Err(GraphError::invalid(format!("(#100) Filtering operator {op} is invalid"))),
            }
        }
    }
    Ok(ads.into_iter().map(|a| ad_json(state, a)).collect())
}

fn parse_date(s: Option<&Value>) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(s?.as_str()?, "%Y-%m-%d").ok()
}

/// `GET /{act}/insights?level=ad&time_increment=1&time_range={…}`: one row per
/// ad and served date with delivery, dates ascending then ads by id. A range
/// holding more rows than the configured `insightsRowCap` is too much data.
fn insights(state: &Shared, token: &str, account: &str, q: &Query) -> Result<Vec<Value>, GraphError> {
    if get(q, "level") != Some("ad") {
        return Err(GraphError::invalid("(#100) The fake Graph serves insights at level=ad only"));
    }
    if get(q, "time_increment") != Some("1") {
        return Err(GraphError::invalid("(#100) The fake Graph serves insights with time_increment=1 only"));
    }
    let range: Value = get(q, "time_range").and_then(|s| serde_json::from_str(s).ok()).ok_or_else(|| {
        GraphError::invalid("(#100) time_range must be {\"since\":\"YYYY-MM-DD\",\"until\":\"YYYY-MM-DD\"}")
    })?;
    let (Some(since), Some(until)) = (parse_date(range.get("since")), parse_date(range.get("until"))) else {
        return Err(GraphError::invalid("(#100) time_range needs since and until as YYYY-MM-DD"));
    };
    if since > until {
        return Err(GraphError::invalid("(#100) time_range: since must not be after until"));
    }
    if (until - since).num_days() > 37 * 31 {
        return Err(GraphError::invalid("(#3018) The start date of the time range cannot be beyond 37 months"));
    }
    let shift = state.shift(token, account);
    let cap = state.control().config.insights_row_cap;
    let ads: Vec<&sample::SampleAd> = sample::account_ads(account).collect();
    let mut rows = Vec::new();
    for date in since.iter_days().take_while(|d| *d <= until) {
        let day = date.format("%Y-%m-%d").to_string();
        for a in &ads {
            let Some((cents, impressions, clicks)) = sample::sample_spend_shifted(a.id, date, shift) else {
                continue;
            };
            if rows.len() == cap {
                return Err(GraphError::too_much_data());
            }
            rows.push(json!({
                "account_id": a.account.trim_start_matches("act_"),
                "ad_id": a.id,
                "ad_name": a.name,
                "adset_id": a.adset_id,
                "adset_name": a.adset_name,
                "campaign_id": a.campaign_id,
                "campaign_name": a.campaign_name,
                "spend": cents_to_decimal(cents),
                "impressions": impressions.to_string(),
                "clicks": clicks.to_string(),
                "date_start": day,
                "date_stop": day,
            }));
        }
    }
    Ok(rows)
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Why one event is malformed, and Meta's error subcode for it when it has one.
#[derive(Debug, PartialEq, Eq)]
struct Problem {
    why: String,
    subcode: Option<i64>,
}

impl From<String> for Problem {
    fn from(why: String) -> Problem {
        Problem { why, subcode: None }
    }
}

/// `fb.1.<digits>.<non-empty>`: Meta's fbc (the click's creation time in ms, then the fbclid).
fn is_fbc(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("fb.1.") else { return false };
    let Some((ms, clid)) = rest.split_once('.') else { return false };
    !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()) && !clid.is_empty()
}

/// The checks of a `business_messaging` event (WhatsApp), as Meta documents
/// them; never echoes a value.
fn messaging_problem(obj: &serde_json::Map<String, Value>, user: &serde_json::Map<String, Value>) -> Option<Problem> {
    if obj.get("messaging_channel").and_then(Value::as_str) != Some("whatsapp") {
        return Some("on business_messaging needs messaging_channel whatsapp".to_string().into());
    }
    for k in ["ctwa_clid", "whatsapp_business_account_id"] {
        if user.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
            return Some(format!("on business_messaging (whatsapp) needs user_data.{k}").into());
        }
    }
    let name = obj["event_name"].as_str().unwrap_or("");
    if !MESSAGING_EVENTS.contains(&name) {
        let why =
            format!("has an event_name business_messaging does not take ({name}): Messaging Event Invalid Event Type");
        return Some(Problem { why, subcode: Some(MESSAGING_EVENT_INVALID) });
    }
    None
}

/// Why one event is malformed, if it is.
fn event_problem(e: &Value) -> Option<Problem> {
    let Some(obj) = e.as_object() else { return Some("is not an object".to_string().into()) };
    let nonempty = |k: &str| obj.get(k).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    for k in ["event_name", "event_id", "action_source"] {
        if !nonempty(k) {
            return Some(format!("needs a non-empty string {k}").into());
        }
    }
    if !obj.get("event_time").is_some_and(|t| t.is_i64() || t.is_u64()) {
        return Some("needs an integer event_time (epoch seconds)".to_string().into());
    }
    let source = obj["action_source"].as_str().unwrap_or("");
    if !ACTION_SOURCES.contains(&source) {
        return Some(format!("has an unknown action_source {source}").into());
    }
    let Some(user) = obj.get("user_data").and_then(Value::as_object).filter(|u| !u.is_empty()) else {
        return Some("needs a non-empty user_data object".to_string().into());
    };
    if source == "business_messaging"
        && let Some(p) = messaging_problem(obj, user)
    {
        return Some(p);
    }
    // Meta's parameter reference: a website event names its page and the browser's user agent.
    if source == "website" {
        if !obj.get("event_source_url").and_then(Value::as_str).is_some_and(|u| u.starts_with("http")) {
            return Some("a website event needs event_source_url".to_string().into());
        }
        if user.get("client_user_agent").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Some("a website event needs user_data.client_user_agent".to_string().into());
        }
    }
    if let Some(fbc) = user.get("fbc")
        && !fbc.as_str().is_some_and(is_fbc)
    {
        return Some("has a user_data.fbc not of the form fb.1.<creation time ms>.<fbclid>".to_string().into());
    }
    for k in HASHED_KEYS {
        let Some(v) = user.get(k) else { continue };
        let ok = match v {
            Value::String(s) => is_sha256_hex(s),
            Value::Array(a) => a.iter().all(|x| x.as_str().is_some_and(is_sha256_hex)),
            _ => false,
        };
        if !ok {
            return Some(format!("user_data.{k} must be SHA-256 hex (lowercase), never the raw value").into());
        }
    }
    if let Some(custom) = obj.get("custom_data") {
        let Some(custom) = custom.as_object() else { return Some("custom_data must be an object".to_string().into()) };
        if custom.get("value").is_some_and(|v| !v.is_number()) {
            return Some("custom_data.value must be a number".to_string().into());
        }
        if custom.get("currency").is_some_and(|c| c.as_str().is_none_or(|c| c.len() != 3)) {
            return Some("custom_data.currency must be a 3-letter code".to_string().into());
        }
    }
    None
}

/// `POST /{pixel}/events`: the whole batch is accepted, or rejected with code 100.
fn events(state: &Shared, pixel: &str, body: Option<&Value>) -> Result<Value, GraphError> {
    let body = body.ok_or_else(|| GraphError::invalid("(#100) The body must be JSON: {\"data\": [...]}"))?;
    let data = body
        .get("data")
        .and_then(Value::as_array)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| GraphError::invalid("(#100) The parameter data is required"))?;
    if data.len() > MAX_EVENTS {
        return Err(GraphError::invalid(format!("(#100) data holds {} events, at most {MAX_EVENTS}", data.len())));
    }
    let test_code = match body.get("test_event_code") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(GraphError::invalid("(#100) test_event_code must be a string")),
    };
    for (i, e) in data.iter().enumerate() {
        if let Some(p) = event_problem(e) {
            let error = GraphError::new(400, 100, p.subcode, "(#100) Invalid parameter");
            return Err(error.user_msg(format!("Event {i} {}.", p.why)));
        }
    }
    let mut c = state.control();
    for e in data {
        c.accept_event(pixel, test_code, e);
    }
    Ok(json!({ "events_received": data.len(), "messages": [], "fbtrace_id": "fake" }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Value {
        json!({
            "event_name": "Purchase",
            "event_time": 1_764_460_800,
            "event_id": "e1",
            "action_source": "chat",
            "user_data": {"ph": ["a".repeat(64)], "external_id": ["raw-is-fine"]},
            "custom_data": {"value": 459.9, "currency": "BRL"}
        })
    }

    #[test]
    fn event_validation() {
        assert_eq!(event_problem(&good()), None);
        for (k, v) in [
            ("event_name", json!("")),
            ("event_time", json!("1764460800")),
            ("event_id", Value::Null),
            ("action_source", json!("telepathy")),
            ("user_data", json!({})),
            ("custom_data", json!({"value": "459.9"})),
        ] {
            let mut e = good();
            e[k] = v;
            assert!(event_problem(&e).is_some(), "{k}");
        }
        let mut e = good();
        e["user_data"]["ph"] = json!(["5511999990000"]);
        assert!(event_problem(&e).unwrap().why.contains("SHA-256"));
    }

    fn messaging() -> Value {
        json!({
            "event_name": "LeadSubmitted",
            "event_time": 1_764_460_800,
            "event_id": "e1",
            "action_source": "business_messaging",
            "messaging_channel": "whatsapp",
            "user_data": {"ctwa_clid": "ARAkLkA8rmlYlW", "whatsapp_business_account_id": "104996632576012"}
        })
    }

    // rule: WA-34
    #[test]
    fn business_messaging_is_checked_as_meta_documents_it() {
        assert!(event_problem(&messaging()).is_none());
        for name in MESSAGING_EVENTS {
            let mut e = messaging();
            e["event_name"] = json!(name);
            assert!(event_problem(&e).is_none(), "{name}");
        }
        // Lead (and any name the channel does not take): subcode 2804066.
        for name in ["Lead", "Schedule", "Contact", "MyCustomEvent"] {
            let mut e = messaging();
            e["event_name"] = json!(name);
            let p = event_problem(&e).expect(name);
            assert_eq!(p.subcode, Some(MESSAGING_EVENT_INVALID), "{name}");
        }
        let broken = [
            ("messaging_channel", Value::Null),
            ("messaging_channel", json!("messenger")),
            ("user_data", json!({"whatsapp_business_account_id": "104996632576012"})),
            ("user_data", json!({"ctwa_clid": "ARAkLkA8rmlYlW"})),
            ("user_data", json!({"ctwa_clid": "", "whatsapp_business_account_id": "104996632576012"})),
        ];
        for (k, v) in broken {
            let mut e = messaging();
            e[k] = v.clone();
            let p = event_problem(&e).unwrap_or_else(|| panic!("{k}: {v}"));
            assert_eq!(p.subcode, None);
            assert!(!p.why.contains("ARAkLkA8rmlYlW"), "never echoes the click id");
        }
    }

    // rule: WA-34
    #[test]
    fn an_fbc_must_be_metas_shape() {
        let website = |fbc: Value| {
            json!({"event_name": "Purchase", "event_time": 1_764_460_800, "event_id": "conv:cv_1",
                "action_source": "website", "event_source_url": "https://loja.example.com/p/1",
                "user_data": {"fbc": fbc, "client_user_agent": "Mozilla/5.0"}, "custom_data": {"value": 10.0, "currency": "BRL"}})
        };
        assert!(event_problem(&website(json!("fb.1.1764460800123.IwAR2x_Yz"))).is_none());
        // A website event without its page or the browser's user agent is refused.
        let mut no_url = website(json!("fb.1.1764460800123.IwAR2x_Yz"));
        no_url.as_object_mut().unwrap().remove("event_source_url");
        assert!(event_problem(&no_url).unwrap().why.contains("event_source_url"));
        let mut no_agent = website(json!("fb.1.1764460800123.IwAR2x_Yz"));
        no_agent["user_data"].as_object_mut().unwrap().remove("client_user_agent");
        assert!(event_problem(&no_agent).unwrap().why.contains("client_user_agent"));
        for bad in [
            json!("IwAR2x_Yz"),
            json!("fb.1.1764460800123."),
            json!("fb.1..IwAR"),
            json!("fb.2.1.IwAR"),
            json!("fb.1.17x.IwAR"),
            json!(1),
        ] {
            let p = event_problem(&website(bad.clone())).unwrap_or_else(|| panic!("{bad}"));
            assert!(p.why.contains("fbc") && !p.why.contains("IwAR"), "{}", p.why);
        }
    }

    #[test]
    fn a_token_can_list_some_accounts() {
        assert!(grants("any-token", "act_1029384756"));
        let t = "tok.rastro-fake-accounts:act_1029384756+2038475610.rastro-fake-sample-token:0";
        assert!(grants(t, "act_1029384756"));
        assert!(grants(t, "act_2038475610"));
        assert!(!grants(t, "act_3047586921"));
        assert!(!grants("rastro-fake-accounts:", "act_1029384756"));
    }

    #[test]
    fn versions() {
        assert!(is_version("v25.0"));
        assert!(!is_version("v"));
        assert!(!is_version("me"));
    }
}
