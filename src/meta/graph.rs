//! The one Graph API client of the daemon (pinned version, token in a header: CONN-11).
//!
//! - The Graph version is pinned ([`GRAPH_VERSION`]); the base URL is configurable (the fake
//!   Graph API on loopback in demos and tests, `https://graph.facebook.com` otherwise).
//! - A token travels only in the `Authorization: Bearer` header. The exceptions are Meta's:
//!   `/oauth/access_token` takes the app secret and the code (or short-lived token) in a form
//!   body, and `/debug_token` takes the inspected token as `input_token` in the query (the
//!   app's token `<app id>|<app secret>` in the header). A `next` page URL is followed with
//!   any `access_token` stripped from it, and only on the Graph origin (else its `after`
//!   cursor is used on the original call).
//! - Every answer, success or error, has its usage headers read into [`Usage`]: successes
//!   come back as [`Graph<T>`] so a caller can back off past 75% before Meta throttles.
//! - Every failure is one [`GraphError`], classified by Meta's code/subcode with the one table
//!   [`classify`]. No error, log line or Debug print carries a token, secret, code, URL or any
//!   text of Meta's answer (which can echo what was sent).

mod errors;
mod leads;
mod login;
mod types;
mod usage;

use std::time::Duration;

use chrono::NaiveDate;
use reqwest::{RequestBuilder, Url};
use serde::Serialize;
use serde_json::Value;

use crate::config::Secret;

pub use errors::{ErrorClass, GraphError, TOO_MUCH_DATA_SUBCODE, classify};
pub use leads::{FormLead, GraphForm, GraphPage, LeadStub, Question, parse_graph_time};
pub use types::{
    AdAccount, AdRow, CreativeType, CustomData, Download, InsightRow, Insights, Me, Pixel, ServerEvent, TokenGrant,
    TokenInfo, UserData, decimal_to_cents,
};
pub use usage::{HIGH_USAGE_PCT, Usage};

use errors::{Endpoint, GraphErrorBody};

/// The Graph API version every call pins.
pub const GRAPH_VERSION: &str = "v25.0";
/// Meta's Graph API.
pub const DEFAULT_BASE_URL: &str = "https://graph.facebook.com";
/// The most events one `POST /{pixel_id}/events` takes.
pub const MAX_EVENTS_PER_BATCH: usize = 1000;
/// Rows per page asked of insights by default (the contract's `limit=5000`).
pub const INSIGHTS_PAGE_LIMIT: u32 = 5000;
/// The most pages one read follows (a guard against a `next` that never ends).
pub const MAX_PAGES: usize = 200;
/// The largest Graph answer read (an insights page of 5,000 rows is ~2.5 MB).
const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;
/// Ad ids per `filtering` call of [`GraphClient::ads`] (keeps URLs short).
const ADS_FILTER_CHUNK: usize = 50;
const AD_ACCOUNT_FIELDS: &str = "id,account_id,name,currency,timezone_name,account_status";
const INSIGHTS_FIELDS: &str =
    "ad_id,ad_name,adset_id,adset_name,campaign_id,campaign_name,spend,impressions,clicks,date_start,date_stop";
/// The contract's catalog fields, plus the child attachments that tell a carousel SHARE from a link.
const AD_FIELDS: &str = "id,name,effective_status,adset_id,campaign_id,\
creative{object_type,thumbnail_url,object_story_spec{link_data{child_attachments{link}}}}";

/// A successful answer and the usage headers that came with it (for a paginated read,
/// the worst usage over its pages).
#[derive(Debug, Clone, PartialEq)]
pub struct Graph<T> {
    pub value: T,
    pub usage: Usage,
}

impl<T> Graph<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Graph<U> {
        Graph { value: f(self.value), usage: self.usage }
    }
}

/// The Graph API client. Cheap to clone (the connection pools are shared).
#[derive(Clone)]
pub struct GraphClient {
    /// Graph calls: no redirects followed (a redirect would not be Meta's API).
    api: reqwest::Client,
    /// Thumbnail downloads: no auth, a few redirects within the allowed URLs.
    files: reqwest::Client,
    /// `{base}/v25.0/`, None when the configured base URL does not parse.
    root: Option<Url>,
    timeout: Duration,
}

impl std::fmt::Debug for GraphClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphClient")
            .field("root", &self.root.as_ref().map(Url::as_str))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Pages read by one paginated call.
struct Pages {
    rows: Vec<Value>,
    usage: Usage,
    pages: usize,
    /// The read stopped on this error (rows before it are kept).
    error: Option<GraphError>,
    /// The read stopped at [`MAX_PAGES`] with more to come.
    capped: bool,
}

impl Pages {
    /// All rows, or the error that stopped the read.
    fn complete(self) -> Result<(Vec<Value>, Usage), GraphError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok((self.rows, self.usage)),
        }
    }
}

enum ReadFail {
    Transport(reqwest::Error),
    TooLarge,
}

impl GraphClient {
    /// A client for `base_url` (e.g. `https://graph.facebook.com` or `http://127.0.0.1:port`),
    /// with `timeout` for each request, from connecting to the end of the body.
    pub fn new(base_url: &str, timeout: Duration) -> GraphClient {
        let root = Url::parse(&format!("{}/{GRAPH_VERSION}/", base_url.trim().trim_end_matches('/')))
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
        let builder = || {
            reqwest::Client::builder()
                .timeout(timeout)
                .connect_timeout(timeout)
                .user_agent(concat!("rastrod/", env!("CARGO_PKG_VERSION")))
        };
        let api = builder().redirect(reqwest::redirect::Policy::none()).build().expect("building the HTTP client");
        let files = builder()
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                if attempt.previous().len() >= 3 || !allowed_external_url(attempt.url()) {
                    attempt.stop()
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .expect("building the HTTP client");
        GraphClient { api, files, root, timeout }
    }

    /// `GET /me?fields=id,name`: checks a token and says whose it is.
    pub async fn me(&self, token: &Secret) -> Result<Graph<Me>, GraphError> {
        let op = "me";
        let url = self.url(op, "me", &[("fields", "id,name")])?;
        let (v, usage) = self.call(op, Endpoint::Api, self.api.get(url).bearer_auth(token.expose())).await?;
        Ok(Graph { value: from_value(op, v, usage)?, usage })
    }

    /// `GET /me/adaccounts`, every page.
    pub async fn ad_accounts(&self, token: &Secret) -> Result<Graph<Vec<AdAccount>>, GraphError> {
        let op = "ad_accounts";
        let url = self.url(op, "me/adaccounts", &[("fields", AD_ACCOUNT_FIELDS), ("limit", "100")])?;
        let (rows, usage) = self.pages(op, token, url).await.complete()?;
        Ok(Graph { value: rows_from(op, rows, usage)?, usage })
    }

    /// `GET /{act_id}/adspixels`, every page.
    pub async fn pixels(&self, token: &Secret, act_id: &str) -> Result<Graph<Vec<Pixel>>, GraphError> {
        let op = "pixels";
        check_id(op, act_id)?;
        let url = self.url(op, &format!("{act_id}/adspixels"), &[("fields", "id,name"), ("limit", "100")])?;
        let (rows, usage) = self.pages(op, token, url).await.complete()?;
        Ok(Graph { value: rows_from(op, rows, usage)?, usage })
    }

    /// `GET /{pixel_id}?fields=id,name`: checks a token reaches a pixel (dataset).
    pub async fn pixel(&self, token: &Secret, pixel_id: &str) -> Result<Graph<Pixel>, GraphError> {
        let op = "pixel";
        check_id(op, pixel_id)?;
        let url = self.url(op, pixel_id, &[("fields", "id,name")])?;
        let (v, usage) = self.call(op, Endpoint::Api, self.api.get(url).bearer_auth(token.expose())).await?;
        Ok(Graph { value: from_value(op, v, usage)?, usage })
    }

    /// `GET /{act_id}/insights?level=ad&time_increment=1` from `since` to `until` (account-local
    /// dates, inclusive), `page_limit` rows per page, every page.
    ///
    /// Too much data on the first page is an error ([`ErrorClass::TooMuchData`]: ask for a
    /// smaller range); on a later page, or past [`MAX_PAGES`], the rows that came are returned
    /// with `truncated` set.
    pub async fn insights(
        &self,
        token: &Secret,
        act_id: &str,
        since: NaiveDate,
        until: NaiveDate,
        page_limit: u32,
    ) -> Result<Graph<Insights>, GraphError> {
        let op = "insights";
        check_id(op, act_id)?;
        if since > until {
            return Err(GraphError::local(op, ErrorClass::Invalid, "the range ends before it starts"));
        }
        let range = serde_json::json!({"since": since.to_string(), "until": until.to_string()}).to_string();
        let limit = page_limit.max(1).to_string();
        let url = self.url(
            op,
            &format!("{act_id}/insights"),
            &[
                ("level", "ad"),
                ("time_increment", "1"),
                ("time_range", &range),
                ("fields", INSIGHTS_FIELDS),
                ("limit", &limit),
            ],
        )?;
        let pages = self.pages(op, token, url).await;
        let mut truncated = pages.capped;
        match pages.error {
            Some(e) if e.class == ErrorClass::TooMuchData && pages.pages > 0 => truncated = true,
            Some(e) => return Err(e),
            None => {}
        }
        let usage = pages.usage;
        let rows = pages
            .rows
            .iter()
            .map(types::parse_insight_row)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| malformed(op, usage))?;
        Ok(Graph { value: Insights { rows, truncated }, usage })
    }

    /// `GET /{act_id}/ads`, every page: the whole catalog, or only the ads in `only_ids`
    /// (asked in chunks with `filtering`; an empty list asks nothing).
    pub async fn ads(
        &self,
        token: &Secret,
        act_id: &str,
        only_ids: Option<&[String]>,
    ) -> Result<Graph<Vec<AdRow>>, GraphError> {
        let op = "ads";
        check_id(op, act_id)?;
        let path = format!("{act_id}/ads");
        let base: [(&str, &str); 4] =
            [("fields", AD_FIELDS), ("thumbnail_width", "320"), ("thumbnail_height", "320"), ("limit", "500")];
        let mut urls = Vec::new();
        match only_ids {
            None => urls.push(self.url(op, &path, &base)?),
            Some(ids) => {
                for chunk in ids.chunks(ADS_FILTER_CHUNK) {
                    let filter = serde_json::json!([{"field": "id", "operator": "IN", "value": chunk}]).to_string();
                    let mut params = base.to_vec();
                    params.push(("filtering", &filter));
                    urls.push(self.url(op, &path, &params)?);
                }
            }
        }
        let mut usage = Usage::default();
        let mut ads = Vec::new();
        for url in urls {
            let (rows, u) = self.pages(op, token, url).await.complete().map_err(|mut e| {
                e.usage = usage.merge(e.usage);
                e
            })?;
            usage = usage.merge(u);
            for row in &rows {
                ads.push(types::parse_ad_row(row).ok_or_else(|| malformed(op, usage))?);
            }
        }
        Ok(Graph { value: ads, usage })
    }

    /// Fetches a thumbnail (no auth header): https, or http on loopback only; at most
    /// `max_bytes`; the answer must be an `image/…`.
    pub async fn download(&self, url: &str, max_bytes: usize) -> Result<Download, GraphError> {
        let op = "download";
        let url = Url::parse(url)
            .ok()
            .filter(allowed_external_url)
            .ok_or_else(|| GraphError::local(op, ErrorClass::Invalid, "not an allowed thumbnail URL"))?;
        let mut resp = self.files.get(url).send().await.map_err(|e| GraphError::transport(op, &e, Usage::default()))?;
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            return Err(GraphError::from_answer(op, Endpoint::Api, status, None, Usage::default()));
        }
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let not_image = |msg: &str| {
            let mut e = GraphError::local(op, ErrorClass::Invalid, msg);
            e.http_status = Some(status);
            e
        };
        if !content_type.starts_with("image/") {
            return Err(not_image("the answer is not an image"));
        }
        let bytes = read_capped(&mut resp, max_bytes).await.map_err(|f| match f {
            ReadFail::Transport(e) => GraphError::transport(op, &e, Usage::default()),
            ReadFail::TooLarge => not_image("the image is over the size cap"),
        })?;
        Ok(Download { bytes, content_type })
    }

    /// `POST /{pixel_id}/events` with up to [`MAX_EVENTS_PER_BATCH`] events (a
    /// [`ServerEvent`] or any JSON value each); returns Meta's `events_received`. An empty
    /// slice sends nothing. One invalid event rejects the whole batch (code 100).
    pub async fn send_events<E: Serialize>(
        &self,
        token: &Secret,
        pixel_id: &str,
        events: &[E],
        test_event_code: Option<&str>,
    ) -> Result<Graph<u64>, GraphError> {
        let op = "send_events";
        check_id(op, pixel_id)?;
        if events.is_empty() {
            return Ok(Graph { value: 0, usage: Usage::default() });
        }
        if events.len() > MAX_EVENTS_PER_BATCH {
            return Err(GraphError::local(op, ErrorClass::Invalid, "more than 1000 events in one batch"));
        }
        #[derive(Serialize)]
        struct Body<'a, E> {
            data: &'a [E],
            #[serde(skip_serializing_if = "Option::is_none")]
            test_event_code: Option<&'a str>,
        }
        let url = self.url(op, &format!("{pixel_id}/events"), &[])?;
        let req = self.api.post(url).bearer_auth(token.expose()).json(&Body { data: events, test_event_code });
        let (v, usage) = self.call(op, Endpoint::Api, req).await?;
        let received = match v.get("events_received") {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        let received = received.ok_or_else(|| malformed(op, usage))?;
        Ok(Graph { value: received, usage })
    }

    /// `{base}/v25.0/{path}?{params}`.
    fn url(&self, op: &'static str, path: &str, params: &[(&str, &str)]) -> Result<Url, GraphError> {
        let root =
            self.root.as_ref().ok_or_else(|| GraphError::local(op, ErrorClass::Invalid, "bad Graph base URL"))?;
        let mut url = root.join(path).map_err(|_| GraphError::local(op, ErrorClass::Invalid, "bad Graph path"))?;
        if !params.is_empty() {
            url.query_pairs_mut().extend_pairs(params);
        }
        Ok(url)
    }

    /// Sends one request and reads its answer: the JSON of a success, or the classified error.
    async fn call(
        &self,
        op: &'static str,
        endpoint: Endpoint,
        req: RequestBuilder,
    ) -> Result<(Value, Usage), GraphError> {
        let result = self.call_inner(op, endpoint, req).await;
        match &result {
            Ok((_, usage)) => tracing::debug!(op, max_pct = ?usage.max_pct, "graph answer"),
            Err(e) => tracing::debug!(
                op,
                class = ?e.class,
                code = ?e.code,
                subcode = ?e.subcode,
                http_status = ?e.http_status,
                max_pct = ?e.usage.max_pct,
                "graph error"
            ),
        }
        result
    }

    async fn call_inner(
        &self,
        op: &'static str,
        endpoint: Endpoint,
        req: RequestBuilder,
    ) -> Result<(Value, Usage), GraphError> {
        let mut resp = req.send().await.map_err(|e| GraphError::transport(op, &e, Usage::default()))?;
        let status = resp.status().as_u16();
        let usage = Usage::from_headers(resp.headers());
        let body = read_capped(&mut resp, MAX_ANSWER_BYTES).await.map_err(|f| match f {
            ReadFail::Transport(e) => GraphError::transport(op, &e, usage),
            ReadFail::TooLarge => GraphError {
                http_status: Some(status),
                usage,
                ..GraphError::local(op, ErrorClass::Invalid, "the answer is too large")
            },
        })?;
        if !(200..300).contains(&status) {
            let err = GraphErrorBody::parse(&body);
            return Err(GraphError::from_answer(op, endpoint, status, err.as_ref(), usage));
        }
        let v: Value = serde_json::from_slice(&body)
            .map_err(|_| GraphError { http_status: Some(status), ..malformed(op, usage) })?;
        if let Some(err) = GraphErrorBody::from_value(&v) {
            return Err(GraphError::from_answer(op, endpoint, status, Some(&err), usage));
        }
        Ok((v, usage))
    }

    /// Follows a paginated read from `first` until its last page, an error or [`MAX_PAGES`].
    async fn pages(&self, op: &'static str, token: &Secret, first: Url) -> Pages {
        let mut p = Pages { rows: Vec::new(), usage: Usage::default(), pages: 0, error: None, capped: false };
        let mut url = first;
        loop {
            let req = self.api.get(url.clone()).bearer_auth(token.expose());
            let (mut v, usage) = match self.call(op, Endpoint::Api, req).await {
                Ok(answer) => answer,
                Err(mut e) => {
                    e.usage = p.usage.merge(e.usage);
                    p.usage = e.usage;
                    p.error = Some(e);
                    return p;
                }
            };
            p.usage = p.usage.merge(usage);
            p.pages += 1;
            match v.get_mut("data").map(Value::take) {
                Some(Value::Array(rows)) => p.rows.extend(rows),
                _ => {
                    p.error = Some(malformed(op, p.usage));
                    return p;
                }
            }
            match self.next_page(&url, v.get("paging")) {
                Some(next) if next != url => {
                    if p.pages >= MAX_PAGES {
                        p.capped = true;
                        return p;
                    }
                    url = next;
                }
                _ => return p,
            }
        }
    }

    /// The next page: Meta's `next` (stripped of any `access_token`) when it is on the Graph
    /// origin and version, else the current URL with the `after` cursor. None on the last page.
    fn next_page(&self, current: &Url, paging: Option<&Value>) -> Option<Url> {
        let paging = paging?;
        let next = paging.get("next").and_then(Value::as_str)?;
        if let Ok(mut url) = Url::parse(next)
            && self.on_graph(&url)
        {
            strip_param(&mut url, "access_token");
            return Some(url);
        }
        let after = paging.pointer("/cursors/after").and_then(Value::as_str).filter(|a| !a.is_empty())?;
        let mut url = current.clone();
        strip_param(&mut url, "after");
        url.query_pairs_mut().append_pair("after", after);
        Some(url)
    }

    /// Whether `url` is under `{base}/v25.0/` (same scheme, host and port).
    fn on_graph(&self, url: &Url) -> bool {
        let Some(root) = &self.root else { return false };
        url.scheme() == root.scheme()
            && url.host_str() == root.host_str()
            && url.port_or_known_default() == root.port_or_known_default()
            && url.path().starts_with(root.path())
            && url.username().is_empty()
            && url.password().is_none()
    }
}

/// Ids that go into a path: `act_123`, `111222333444`. Anything else could change the call.
fn check_id(op: &'static str, id: &str) -> Result<(), GraphError> {
    let ok = !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok { Ok(()) } else { Err(GraphError::local(op, ErrorClass::Invalid, "not a valid Graph id")) }
}

/// URLs rastrod calls outside Graph (thumbnails, form-lead handlers): https
/// anywhere, plain http only on loopback (the fake Graph API, a local handler).
pub fn allowed_external_url(url: &Url) -> bool {
    match url.scheme() {
        "https" => url.host_str().is_some(),
        "http" => matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")),
        _ => false,
    }
}

fn strip_param(url: &mut Url, name: &str) {
    if url.query().is_none() {
        return;
    }
    let kept: Vec<(String, String)> =
        url.query_pairs().filter(|(k, _)| !k.eq_ignore_ascii_case(name)).map(|(k, v)| (k.into(), v.into())).collect();
    if kept.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(kept);
    }
}

fn malformed(op: &'static str, usage: Usage) -> GraphError {
    GraphError { usage, ..GraphError::local(op, ErrorClass::Invalid, "unreadable answer") }
}

fn from_value<T: serde::de::DeserializeOwned>(op: &'static str, v: Value, usage: Usage) -> Result<T, GraphError> {
    serde_json::from_value(v).map_err(|_| malformed(op, usage))
}

fn rows_from<T: serde::de::DeserializeOwned>(
    op: &'static str,
    rows: Vec<Value>,
    usage: Usage,
) -> Result<Vec<T>, GraphError> {
    rows.into_iter().map(|r| from_value(op, r, usage)).collect()
}

async fn read_capped(resp: &mut reqwest::Response, max: usize) -> Result<Vec<u8>, ReadFail> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(ReadFail::TooLarge);
    }
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(ReadFail::Transport)? {
        if buf.len() + chunk.len() > max {
            return Err(ReadFail::TooLarge);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

#[cfg(test)]
mod tests;
