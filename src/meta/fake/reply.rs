//! How the fake answers: Graph error bodies, usage headers on every answer,
//! cursor pagination with absolute `next` URLs, and `fields` selection.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde_json::{Map, Value, json};

use super::sample::SAMPLE_BUSINESS_ID;

/// What the usage headers of one answer report.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// Percentage reported by all three headers.
    pub pct: f64,
    /// `estimated_time_to_regain_access`, minutes.
    pub regain_minutes: u64,
    /// `ads_insights` or `ads_management` in `X-Business-Use-Case-Usage`.
    pub insights: bool,
}

impl Usage {
    fn headers(&self) -> [(&'static str, String); 3] {
        let pct = self.pct;
        let whole = pct.round() as i64;
        let kind = if self.insights { "ads_insights" } else { "ads_management" };
        [
            ("X-App-Usage", json!({"call_count": whole, "total_time": whole, "total_cputime": whole}).to_string()),
            (
                "X-Ad-Account-Usage",
                json!({
                    "acc_id_util_pct": pct,
                    "reset_time_duration": self.regain_minutes * 60,
                    "ads_api_access_tier": "standard_access"
                })
                .to_string(),
            ),
            (
                "X-Business-Use-Case-Usage",
                json!({ SAMPLE_BUSINESS_ID: [{
                    "type": kind,
                    "call_count": whole,
                    "total_cputime": whole,
                    "total_time": whole,
                    "estimated_time_to_regain_access": self.regain_minutes
                }]})
                .to_string(),
            ),
        ]
    }
}

/// A Graph answer: a JSON body with the usage headers.
pub fn json_reply(status: StatusCode, body: &Value, usage: Usage) -> HttpResponse {
    let mut r = HttpResponse::build(status);
    for h in usage.headers() {
        r.insert_header(h);
    }
    r.insert_header(("x-fb-trace-id", "fake")).json(body)
}

pub fn ok(body: &Value, usage: Usage) -> HttpResponse {
    json_reply(StatusCode::OK, body, usage)
}

/// A Graph error in Meta's shape.
#[derive(Debug, Clone)]
pub struct GraphError {
    pub status: StatusCode,
    pub code: i64,
    pub subcode: Option<i64>,
    pub message: String,
    pub user_msg: Option<String>,
    pub transient: bool,
}

impl GraphError {
    pub fn new(status: u16, code: i64, subcode: Option<i64>, message: impl Into<String>) -> GraphError {
        GraphError {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
            code,
            subcode,
            message: message.into(),
            user_msg: None,
            transient: false,
        }
    }

    pub fn user_msg(mut self, msg: impl Into<String>) -> GraphError {
        self.user_msg = Some(msg.into());
        self
    }

    pub fn transient(mut self) -> GraphError {
        self.transient = true;
        self
    }

    /// Code 100: a bad parameter or an unknown object.
    pub fn invalid(message: impl Into<String>) -> GraphError {
        GraphError::new(400, 100, None, message)
    }

    pub fn unsupported(method: &str, id: &str) -> GraphError {
        GraphError::new(
            400,
            100,
            Some(33),
            format!(
                "Unsupported {} request. Object with ID '{id}' does not exist, cannot be loaded due to missing \
                 permissions, or does not support this operation.",
                method.to_ascii_lowercase()
            ),
        )
    }

    /// Code 190 subcode 463: the answer to a token containing `invalid`.
    pub fn expired_token() -> GraphError {
        GraphError::new(400, 190, Some(463), "Error validating access token: Session has expired")
    }

    pub fn missing_token() -> GraphError {
        GraphError::new(
            400,
            190,
            None,
            "An active access token must be used to query information about the current user.",
        )
    }

    pub fn too_much_data() -> GraphError {
        GraphError::new(
            500,
            1,
            Some(1_487_534),
            "Please reduce the amount of data you're asking for, then retry your request",
        )
    }

    pub fn server_error() -> GraphError {
        GraphError::new(500, 2, None, "An unexpected error has occurred. Please retry your request later.").transient()
    }

    pub fn permission() -> GraphError {
        GraphError::new(403, 200, None, "(#200) Requires ads_management permission to manage the object")
    }

    /// Code 80000 on insights (the ad account's insights budget), 17 elsewhere.
    pub fn throttled(insights: bool) -> GraphError {
        if insights {
            GraphError::new(
                400,
                80_000,
                Some(2_446_079),
                "There have been too many calls from this ad-account. Wait a bit and try again.",
            )
            .transient()
        } else {
            GraphError::new(400, 17, Some(2_446_079), "User request limit reached").transient()
        }
    }

    pub fn body(&self) -> Value {
        let mut e = json!({
            "message": self.message,
            "type": "OAuthException",
            "code": self.code,
            "fbtrace_id": "fake",
        });
        if let Some(s) = self.subcode {
            e["error_subcode"] = json!(s);
        }
        if let Some(m) = &self.user_msg {
            e["error_user_msg"] = json!(m);
        }
        if self.transient {
            e["is_transient"] = json!(true);
        }
        json!({ "error": e })
    }

    pub fn reply(&self, usage: Usage) -> HttpResponse {
        json_reply(self.status, &self.body(), usage)
    }
}

/// The query string as ordered pairs, percent-decoded.
pub type Query = Vec<(String, String)>;

pub fn parse_query(raw: &str) -> Result<Query, GraphError> {
    actix_web::web::Query::<Query>::from_query(raw)
        .map(|q| q.into_inner())
        .map_err(|e| GraphError::invalid(format!("Malformed query string: {e}")))
}

pub fn get<'a>(q: &'a Query, key: &str) -> Option<&'a str> {
    q.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

pub const DEFAULT_LIMIT: usize = 25;

fn encode_cursor(i: usize) -> String {
    format!("fake:{i}").bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_cursor(c: &str) -> Option<usize> {
    if !c.len().is_multiple_of(2) || !c.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..c.len()).step_by(2).map(|i| u8::from_str_radix(&c[i..i + 2], 16).ok()).collect();
    String::from_utf8(bytes?).ok()?.strip_prefix("fake:")?.parse().ok()
}

/// The `limit` of a list request: default 25, at most `max`.
pub fn limit(q: &Query, max: usize) -> Result<usize, GraphError> {
    match get(q, "limit") {
        None => Ok(DEFAULT_LIMIT),
        Some(s) => match s.parse::<usize>() {
            Ok(0) => Ok(DEFAULT_LIMIT),
            Ok(n) => Ok(n.min(max)),
            Err(_) => Err(GraphError::invalid(format!("(#100) Param limit must be a number, got '{s}'"))),
        },
    }
}

/// One page of `items` per `limit`, `after` and `before`, in Graph's envelope:
/// `{"data": [...], "paging": {"cursors": {"before", "after"}, "next"?, "previous"?}}`.
/// `next`/`previous` repeat the request's own query (minus any cursor or
/// token) on `self_url` (absolute, without a query).
pub fn paginate(
    items: Vec<Value>,
    q: &Query,
    raw_query: &str,
    self_url: &str,
    max: usize,
) -> Result<Value, GraphError> {
    let limit = limit(q, max)?;
    let total = items.len();
    let bad_cursor = |c: &str| GraphError::invalid(format!("(#100) Invalid cursor '{c}'"));
    let start = if let Some(c) = get(q, "after") {
        decode_cursor(c).ok_or_else(|| bad_cursor(c))? + 1
    } else if let Some(c) = get(q, "before") {
        decode_cursor(c).ok_or_else(|| bad_cursor(c))?.min(total).saturating_sub(limit)
    } else {
        0
    };
    let start = start.min(total);
    let end = match get(q, "before").filter(|_| get(q, "after").is_none()) {
        Some(c) => decode_cursor(c).unwrap_or(total).min(total),
        None => (start + limit).min(total),
    };
    let data: Vec<Value> = items.into_iter().skip(start).take(end - start).collect();
    if data.is_empty() {
        return Ok(json!({ "data": [] }));
    }
    let mut kept: Vec<&str> = raw_query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let k = p.split('=').next().unwrap_or("");
            !matches!(k, "after" | "before" | "access_token")
        })
        .collect();
    let limit_pair = format!("limit={limit}");
    if get(q, "limit").is_none() {
        kept.push(&limit_pair);
    }
    let link = |cursor_key: &str, cursor: String| {
        let mut pairs = kept.clone();
        let c = format!("{cursor_key}={cursor}");
        pairs.push(&c);
        format!("{self_url}?{}", pairs.join("&"))
    };
    let mut paging = json!({
        "cursors": { "before": encode_cursor(start), "after": encode_cursor(end - 1) },
    });
    if end < total {
        paging["next"] = json!(link("after", encode_cursor(end - 1)));
    }
    if start > 0 {
        paging["previous"] = json!(link("before", encode_cursor(start)));
    }
    Ok(json!({ "data": data, "paging": paging }))
}

/// A `fields` parameter: `id,name,creative{object_type,thumbnail_url}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub sub: Option<Vec<Field>>,
}

pub fn parse_fields(s: &str) -> Vec<Field> {
    fn parse(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Vec<Field> {
        let mut out = Vec::new();
        let mut name = String::new();
        let mut sub = None;
        while let Some(c) = chars.next() {
            match c {
                '{' => sub = Some(parse(chars)),
                '}' => break,
                ',' => {
                    if !name.trim().is_empty() {
                        out.push(Field { name: name.trim().to_string(), sub: sub.take() });
                    }
                    name.clear();
                }
                c => name.push(c),
            }
        }
        if !name.trim().is_empty() {
            out.push(Field { name: name.trim().to_string(), sub });
        }
        out
    }
    parse(&mut s.chars().peekable())
}

/// Keeps the requested fields of `obj` (and `always`); nested selections
/// apply one level down. Without `fields`, the whole object.
pub fn select(obj: Value, fields: Option<&[Field]>, always: &[&str]) -> Value {
    let (Some(fields), Value::Object(mut map)) = (fields, obj.clone()) else {
        return obj;
    };
    let mut out = Map::new();
    for a in always {
        if let Some(v) = map.remove(*a) {
            out.insert((*a).to_string(), v);
        }
    }
    for f in fields {
        if let Some(v) = map.remove(&f.name) {
            let v = match &f.sub {
                Some(sub) => select(v, Some(sub), &["id"]),
                None => v,
            };
            out.insert(f.name.clone(), v);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        for i in [0, 1, 24, 5000] {
            assert_eq!(decode_cursor(&encode_cursor(i)), Some(i));
        }
        assert_eq!(decode_cursor("zz"), None);
        assert_eq!(decode_cursor("abc"), None);
    }

    #[test]
    fn pages() {
        let items: Vec<Value> = (0..7).map(|i| json!({ "id": i })).collect();
        let q = parse_query("fields=id&limit=3").unwrap();
        let p = paginate(items.clone(), &q, "fields=id&limit=3", "http://x/v25.0/me/adaccounts", 100).unwrap();
        assert_eq!(p["data"].as_array().unwrap().len(), 3);
        let next = p["paging"]["next"].as_str().unwrap();
        assert!(next.starts_with("http://x/v25.0/me/adaccounts?fields=id&limit=3&after="));
        let raw = next.split_once('?').unwrap().1;
        let p2 = paginate(items.clone(), &parse_query(raw).unwrap(), raw, "http://x", 100).unwrap();
        assert_eq!(p2["data"][0]["id"], 3);
        let raw3 = p2["paging"]["next"].as_str().unwrap().split_once('?').unwrap().1.to_string();
        let p3 = paginate(items.clone(), &parse_query(&raw3).unwrap(), &raw3, "http://x", 100).unwrap();
        assert_eq!(p3["data"].as_array().unwrap().len(), 1);
        assert!(p3["paging"].get("next").is_none());
        let prev = p3["paging"]["previous"].as_str().unwrap().split_once('?').unwrap().1.to_string();
        let p4 = paginate(items, &parse_query(&prev).unwrap(), &prev, "http://x", 100).unwrap();
        assert_eq!(p4["data"][0]["id"], 3);
        assert_eq!(p4["data"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn field_selection() {
        let f = parse_fields("id,name,creative{object_type,thumbnail_url}");
        assert_eq!(f.len(), 3);
        assert_eq!(f[2].sub.as_ref().unwrap().len(), 2);
        let obj = json!({"id": "1", "name": "n", "status": "ACTIVE", "creative": {"id": "c", "object_type": "VIDEO", "body": "x"}});
        let s = select(obj, Some(&f), &["id"]);
        assert_eq!(s, json!({"id": "1", "name": "n", "creative": {"id": "c", "object_type": "VIDEO"}}));
    }
}
