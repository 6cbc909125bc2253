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
use super::{GRAPH_VERSION, Shared, capi, login, png};

/// Request bodies up to 16 MiB (a full events batch is well under).
pub const MAX_BODY_BYTES: usize = 16 << 20;
/// The largest `limit` of insights; other lists too.
pub const MAX_LIMIT: usize = 5_000;
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
        ("POST", [id, "events"]) if sample::pixel(id).is_some() => capi::events(state, id, json),
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

#[cfg(test)]
mod tests {
    use super::*;

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
