//! The fake's Conversions API (`POST /{pixel}/events`): each event checked
//! as Meta documents it (names, action sources, hashed user data, the
//! business-messaging channel, `fbc`), refused with Meta's codes, and logged
//! for the tests.

use serde_json::{Value, json};

use super::Shared;
use super::reply::GraphError;

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
pub fn events(state: &Shared, pixel: &str, body: Option<&Value>) -> Result<Value, GraphError> {
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
}
