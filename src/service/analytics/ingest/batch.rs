//! A tracker batch as `POST /rastro/events` receives it (TRK-13, TRK-16):
//! the batch's shape (a failure refuses the whole batch with 400) and each
//! event's checks (a failure rejects that event alone). Unknown fields are
//! ignored at both levels, so a cached older tracker keeps working.

use serde_json::{Map, Value};
use url::Url;

use crate::error::{Error, Result};
use crate::service::analytics::ingest::urls;
use crate::service::analytics::vocabulary::LineType;
use crate::service::validate;

pub const MAX_EVENTS: usize = 50;
const MAX_PROPERTIES: usize = 30;
const MAX_PROPERTY_KEY: usize = 64;
const MAX_PROPERTY_STRING: usize = 256;
const MAX_VITAL_MS: i64 = 600_000;
const MAX_ENGAGED_MS: i64 = 86_400_000;

#[derive(Debug, Clone)]
pub struct Batch {
    pub site_id: String,
    pub visitor_id: Option<String>,
    pub sent_at: Option<i64>,
    pub hash: bool,
    pub bot: bool,
    pub language: Option<String>,
    pub events: Vec<Value>,
}

fn field<'a>(o: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    o.get(name).filter(|v| !v.is_null())
}

/// A JSON integer, or a float without a fraction (`438.0`) within i64: a
/// JavaScript number is a float, and every other JSON body reads such a
/// number as the integer (`http::json`), so the tracker's does too.
fn whole(v: &Value) -> Option<i64> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    v.as_i64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && (-LIMIT..LIMIT).contains(f)).map(|f| f as i64))
}

fn wrong(name: &str) -> Error {
    Error::invalid(format!("`{name}` has the wrong type or is out of bounds"))
}

/// `[A-Za-z0-9_-]{8,64}`: a visitor id as a browser or the import sends it.
pub fn is_visitor_id(s: &str) -> bool {
    (8..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `p_` + 16–32 base64url chars.
pub fn is_pageview_id(s: &str) -> bool {
    s.strip_prefix("p_").is_some_and(|r| {
        (16..=32).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

/// Check 2 of §3.3: the batch's shape (rule TRK-13, TRK-21).
pub fn parse(body: &[u8]) -> Result<Batch> {
    let value: Value = serde_json::from_slice(body).map_err(|_| Error::invalid("the body must be a JSON object"))?;
    let Value::Object(o) = value else { return Err(Error::invalid("the body must be a JSON object")) };
    let site_id = match o.get("siteId") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(wrong("siteId")),
        None => return Err(Error::invalid("missing field `siteId`")),
    };
    validate::site_id(&site_id)?;
    let events = match o.get("events") {
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(wrong("events")),
        None => return Err(Error::invalid("missing field `events`")),
    };
    if events.is_empty() || events.len() > MAX_EVENTS {
        return Err(Error::invalid(format!("events must hold 1-{MAX_EVENTS} events")));
    }
    let visitor_id = match field(&o, "visitorId") {
        None => None,
        Some(Value::String(s)) if is_visitor_id(s) && !s.starts_with("c_") => Some(s.clone()),
        Some(_) => return Err(Error::invalid("visitorId must be 8-64 of [A-Za-z0-9_-], not starting c_")),
    };
    let sent_at = match field(&o, "sentAt") {
        None => None,
        Some(v) => {
            let ms = whole(v).ok_or_else(|| wrong("sentAt"))?;
            // Within the times every argument takes, so the skew arithmetic cannot overflow.
            validate::time("sentAt", ms)?;
            Some(ms)
        }
    };
    let flag = |name: &str| match field(&o, name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(wrong(name)),
    };
    let hash = flag("hash")?;
    let bot = flag("bot")?;
    let language = match field(&o, "language") {
        None => None,
        Some(Value::String(s)) => urls::language(s),
        Some(_) => return Err(wrong("language")),
    };
    Ok(Batch { site_id, visitor_id, sent_at, hash, bot, language, events })
}

/// A stored event's bounded properties (rule TRK-22): up to 30 keys of 1–64
/// chars mapping to a string ≤ 256 chars, a finite number or a bool; any other
/// property is dropped. `strict` (the import, the ledger) refuses instead.
pub fn properties(v: Option<&Value>, strict: bool) -> Result<Option<Map<String, Value>>> {
    let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(None) };
    let out_of_bounds = || Error::invalid("a property is out of bounds");
    let Value::Object(o) = v else { return if strict { Err(out_of_bounds()) } else { Ok(None) } };
    let mut out = Map::new();
    for (k, val) in o {
        let key_ok = (1..=MAX_PROPERTY_KEY).contains(&k.chars().count());
        let val_ok = match val {
            Value::String(s) => s.chars().count() <= MAX_PROPERTY_STRING,
            Value::Number(n) => n.as_f64().is_some_and(f64::is_finite),
            Value::Bool(_) => true,
            _ => false,
        };
        if !key_ok || !val_ok || out.len() >= MAX_PROPERTIES {
            if strict {
                return Err(out_of_bounds());
            }
            continue;
        }
        out.insert(k.clone(), val.clone());
    }
    Ok((!out.is_empty()).then_some(out))
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vitals {
    pub lcp: Option<i64>,
    pub inp: Option<i64>,
    /// CLS × 10⁴, rounded.
    pub cls: Option<i64>,
    pub fcp: Option<i64>,
    pub ttfb: Option<i64>,
}

impl Vitals {
    pub fn is_empty(&self) -> bool {
        self.lcp.is_none() && self.inp.is_none() && self.cls.is_none() && self.fcp.is_none() && self.ttfb.is_none()
    }
}

/// What an imported line says of itself beyond a tracker event (IMP-01,
/// IMP-07): its line number, a stored path instead of a URL, and the session's
/// attribution and client when the line opens a session.
#[derive(Debug, Clone, Default)]
pub struct LineOrigin {
    pub line: usize,
    pub path: Option<String>,
    pub source: Option<String>,
    pub medium: Option<String>,
    pub campaign: Option<String>,
    pub term: Option<String>,
    pub content: Option<String>,
    pub device: Option<String>,
    pub browser: Option<String>,
    pub os: Option<String>,
    pub country: Option<String>,
    pub region: Option<String>,
    pub language: Option<String>,
    /// An affiliate's slug: tags the session it opens when one exists (§4.4).
    pub affiliate: Option<String>,
}

/// One event that passed its checks.
#[derive(Debug, Clone)]
pub enum Incoming {
    Pageview {
        ts: Option<i64>,
        pageview_id: String,
        url: Url,
        referrer: Option<String>,
        properties: Option<Map<String, Value>>,
        origin: Option<Box<LineOrigin>>,
    },
    Custom {
        ts: Option<i64>,
        url: Url,
        name: String,
        properties: Option<Map<String, Value>>,
        origin: Option<Box<LineOrigin>>,
    },
    Vitals {
        pageview_id: String,
        vitals: Vitals,
    },
    Engagement {
        pageview_id: String,
        engaged_ms: i64,
    },
}

fn ms_metric(o: &Map<String, Value>, name: &str) -> Option<i64> {
    o.get(name).and_then(whole).filter(|v| (0..=MAX_VITAL_MS).contains(v))
}

/// The vitals of an event (rule TRK-32): each metric out of bounds dropped alone.
pub fn vitals_of(o: &Map<String, Value>) -> Vitals {
    let cls = o
        .get("cls")
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite() && (0.0..=100.0).contains(c))
        .map(|c| (c * 10_000.0).round() as i64);
    Vitals {
        lcp: ms_metric(o, "lcp"),
        inp: ms_metric(o, "inp"),
        cls,
        fcp: ms_metric(o, "fcp"),
        ttfb: ms_metric(o, "ttfb"),
    }
}

/// Whether a custom event's name is reserved: another line type's (a custom
/// event named `pageview` would read as one in an export).
pub fn is_reserved_name(name: &str) -> bool {
    match LineType::parse(name) {
        Some(LineType::Pageview | LineType::Engagement | LineType::Vitals) => true,
        Some(LineType::Event) | None => false,
    }
}

/// Check 7 of §3.3 for one event (rule TRK-16): None rejects it. The domain
/// check and the pageview-id checks that need stored rows come later.
pub fn check_event(v: &Value) -> Option<Incoming> {
    let o = v.as_object()?;
    let ts = match field(o, "ts") {
        None => None,
        Some(t) => Some(whole(t).filter(|t| *t >= 0)?),
    };
    let pageview_id =
        || field(o, "pageviewId").and_then(Value::as_str).filter(|p| is_pageview_id(p)).map(str::to_string);
    let url = || field(o, "url").and_then(Value::as_str).and_then(urls::parse_page_url);
    match LineType::parse(o.get("type").and_then(Value::as_str)?)? {
        LineType::Pageview => {
            let referrer = match field(o, "referrer") {
                None => None,
                Some(Value::String(s)) if s.len() <= urls::MAX_URL_BYTES => Some(s.clone()),
                Some(_) => return None,
            };
            let properties = properties(o.get("properties"), false).ok()?;
            Some(Incoming::Pageview {
                ts,
                pageview_id: pageview_id()?,
                url: url()?,
                referrer,
                properties,
                origin: None,
            })
        }
        LineType::Event => {
            let name = field(o, "name").and_then(Value::as_str)?;
            if !(1..=120).contains(&name.chars().count()) || is_reserved_name(name) {
                return None;
            }
            let properties = properties(o.get("properties"), false).ok()?;
            Some(Incoming::Custom { ts, url: url()?, name: name.to_string(), properties, origin: None })
        }
        LineType::Vitals => {
            let vitals = vitals_of(o);
            (!vitals.is_empty()).then_some(())?;
            Some(Incoming::Vitals { pageview_id: pageview_id()?, vitals })
        }
        LineType::Engagement => {
            let engaged_ms = field(o, "engagedMs").and_then(whole).filter(|e| (0..=MAX_ENGAGED_MS).contains(e))?;
            Some(Incoming::Engagement { pageview_id: pageview_id()?, engaged_ms })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn batch(v: Value) -> Result<Batch> {
        parse(v.to_string().as_bytes())
    }

    // rule: TRK-13
    #[test]
    fn the_batch_shape_is_checked_first() {
        let ev = json!({"type": "pageview"});
        assert!(parse(b"[1,2]").is_err());
        assert!(parse(b"not json").is_err());
        assert!(batch(json!({"events": [ev]})).is_err());
        assert!(batch(json!({"siteId": "s"})).is_err());
        assert!(batch(json!({"siteId": "s", "events": []})).is_err());
        assert!(batch(json!({"siteId": "s", "events": vec![ev.clone(); 51]})).is_err());
        assert!(batch(json!({"siteId": "s", "events": [ev], "visitorId": "short"})).is_err());
        assert!(batch(json!({"siteId": "s", "events": [ev], "visitorId": "c_abcdefghij"})).is_err());
        assert!(batch(json!({"siteId": "s", "events": vec![ev.clone(); 50], "visitorId": "v_abcdefghij"})).is_ok());
    }

    // rule: TRK-21
    #[test]
    fn unknown_fields_are_ignored_and_known_ones_typed() {
        let ev = json!({"type": "pageview", "future": 1});
        let b = batch(json!({"siteId": "s", "events": [ev], "newThing": {"x": 1}})).unwrap();
        assert_eq!(b.events.len(), 1);
        assert!(batch(json!({"siteId": "s", "events": [ev], "sentAt": "soon"})).is_err());
        // A whole number written as a float is that integer; a fraction or a time out of range is not.
        assert_eq!(batch(json!({"siteId": "s", "events": [ev], "sentAt": 438.0})).unwrap().sent_at, Some(438));
        for bad in [json!(438.5), json!(-1), json!(i64::MIN), json!(1e300), json!(u64::MAX)] {
            assert!(batch(json!({"siteId": "s", "events": [ev], "sentAt": bad})).is_err(), "{bad}");
        }
        assert!(batch(json!({"siteId": "s", "events": [ev], "hash": "yes"})).is_err());
        let pv =
            json!({"type": "pageview", "pageviewId": "p_0123456789abcdef", "url": "https://a.com/", "unknown": true});
        assert!(check_event(&pv).is_some());
        let mut whole_ts = pv.clone();
        whole_ts["ts"] = json!(1_764_500_000_000.0);
        assert!(matches!(check_event(&whole_ts), Some(Incoming::Pageview { ts: Some(1_764_500_000_000), .. })));
        let mut bad_ts = pv.clone();
        bad_ts["ts"] = json!("yesterday");
        assert!(check_event(&bad_ts).is_none());
    }

    // rule: TRK-16
    #[test]
    fn bad_events_are_rejected_one_by_one() {
        let bad = [
            json!({"type": "click", "url": "https://a.com/"}),
            json!({"type": "pageview", "pageviewId": "p_0123456789abcdef", "url": "javascript:alert(1)"}),
            json!({"type": "pageview", "pageviewId": "p_short", "url": "https://a.com/"}),
            json!({"type": "event", "name": "pageview", "url": "https://a.com/"}),
            json!({"type": "event", "name": "", "url": "https://a.com/"}),
            json!({"type": "event", "name": "x".repeat(121), "url": "https://a.com/"}),
            json!({"type": "vitals", "pageviewId": "p_0123456789abcdef", "lcp": -1}),
            json!({"type": "engagement", "pageviewId": "p_0123456789abcdef", "engagedMs": 86_400_001}),
        ];
        for e in bad {
            assert!(check_event(&e).is_none(), "{e}");
        }
    }

    // rule: TRK-22
    #[test]
    fn properties_over_the_bounds_are_dropped() {
        let mut props = Map::new();
        for i in 0..31 {
            props.insert(format!("k{i:02}"), json!(i));
        }
        props.insert("long".into(), json!("x".repeat(257)));
        props.insert("obj".into(), json!({"a": 1}));
        props.insert("arr".into(), json!([1]));
        props.insert("nul".into(), Value::Null);
        props.insert("k".repeat(65), json!(1));
        let kept = properties(Some(&Value::Object(props)), false).unwrap().unwrap();
        assert_eq!(kept.len(), 30);
        assert!(kept.values().all(Value::is_number));
        assert!(properties(Some(&json!({"a": [1]})), true).is_err());
    }

    // rule: TRK-32
    #[test]
    fn vitals_out_of_bounds_are_dropped_alone_and_cls_rounded() {
        let o = json!({"lcp": 2100, "inp": 600_001, "cls": 0.123456, "fcp": -5, "ttfb": 300});
        let v = vitals_of(o.as_object().unwrap());
        assert_eq!(v, Vitals { lcp: Some(2100), inp: None, cls: Some(1235), fcp: None, ttfb: Some(300) });
        let o = json!({"cls": 100.5});
        assert!(vitals_of(o.as_object().unwrap()).is_empty());
    }
}
