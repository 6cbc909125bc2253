//! What the Graph calls return, parsed into rastrod's shapes (integer cents, dates,
//! creative types), and the Conversions API event.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Secret;

/// `GET /me`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Me {
    pub id: String,
    #[serde(default)]
    pub name: String,
}

/// One row of `GET /me/adaccounts`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AdAccount {
    /// `act_<digits>`.
    pub id: String,
    #[serde(default)]
    pub account_id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub currency: String,
    #[serde(default)]
    pub timezone_name: String,
    #[serde(default)]
    pub account_status: i64,
}

/// A pixel (dataset): one row of `GET /act_…/adspixels`, or `GET /{pixel_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Pixel {
    pub id: String,
    #[serde(default)]
    pub name: String,
}

/// One ad on one account-local day, from `GET /act_…/insights?level=ad&time_increment=1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsightRow {
    pub ad_id: String,
    pub ad_name: String,
    pub adset_id: String,
    pub adset_name: String,
    pub campaign_id: String,
    pub campaign_name: String,
    /// Meta's decimal string in the account currency, in integer cents rounded half-up.
    pub spend_cents: i64,
    pub impressions: i64,
    pub clicks: i64,
    /// `date_start`: the ad account's local date.
    pub date: NaiveDate,
}

/// The rows of one insights read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Insights {
    pub rows: Vec<InsightRow>,
    /// Not every row came: a later page answered "too much data", or the page cap was hit.
    /// (Too much data on the FIRST page is an error instead, so the caller splits the range.)
    pub truncated: bool,
}

/// What an ad's creative is, as rastrod reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreativeType {
    Video,
    Image,
    Carousel,
    Other,
}

impl CreativeType {
    pub fn as_str(self) -> &'static str {
        match self {
            CreativeType::Video => "video",
            CreativeType::Image => "image",
            CreativeType::Carousel => "carousel",
            CreativeType::Other => "other",
        }
    }

    /// VIDEO → video, PHOTO → image, CAROUSEL or SHARE with several child attachments →
    /// carousel, anything else (a plain link SHARE, STATUS, none) → other.
    pub fn from_creative(object_type: Option<&str>, child_attachments: usize) -> CreativeType {
        match object_type.map(str::to_ascii_uppercase).as_deref() {
            Some("VIDEO") => CreativeType::Video,
            Some("PHOTO") => CreativeType::Image,
            Some("CAROUSEL") => CreativeType::Carousel,
            Some("SHARE") if child_attachments > 1 => CreativeType::Carousel,
            _ => CreativeType::Other,
        }
    }
}

/// One row of the catalog (`GET /act_…/ads`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdRow {
    pub id: String,
    pub name: String,
    pub effective_status: String,
    pub adset_id: String,
    pub campaign_id: String,
    pub creative_id: Option<String>,
    pub creative_type: CreativeType,
    /// Meta's raw `thumbnail_url` (fetch it with `GraphClient::download`).
    pub thumbnail_url: Option<String>,
}

/// A thumbnail's bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Download {
    pub bytes: Vec<u8>,
    /// The answer's `Content-Type` without parameters, lowercased (always `image/…`).
    pub content_type: String,
}

impl std::fmt::Debug for Download {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Download").field("bytes", &self.bytes.len()).field("content_type", &self.content_type).finish()
    }
}

/// A token from `POST /oauth/access_token`. Debug redacts the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    pub access_token: Secret,
    pub token_type: Option<String>,
    /// Seconds; absent when Meta does not say (ask `debug_token`).
    pub expires_in: Option<i64>,
}

/// What `GET /debug_token` says about a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    pub is_valid: bool,
    /// Epoch seconds; None when the token never expires (Meta's 0) or Meta did not say.
    pub expires_at: Option<i64>,
    /// `SYSTEM_USER`, `USER`, `PAGE` …
    pub token_type: Option<String>,
    pub app_id: Option<String>,
    pub user_id: Option<String>,
    pub scopes: Vec<String>,
}

/// One Conversions API event, as `POST /{pixel_id}/events` takes it.
/// Debug leaves the hashed user data out.
#[derive(Clone, PartialEq, Serialize)]
pub struct ServerEvent {
    pub event_name: String,
    /// Epoch seconds.
    pub event_time: i64,
    pub event_id: String,
    pub action_source: String,
    /// `business_messaging` only: the channel (`whatsapp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messaging_channel: Option<String>,
    /// `website` only: the page the event belongs to (the visit's landing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_source_url: Option<String>,
    pub user_data: UserData,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_data: Option<CustomData>,
}

impl std::fmt::Debug for ServerEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerEvent")
            .field("event_name", &self.event_name)
            .field("event_time", &self.event_time)
            .field("event_id", &self.event_id)
            .field("action_source", &self.action_source)
            .field("messaging_channel", &self.messaging_channel)
            .field("event_source_url", &self.event_source_url)
            .field("user_data", &"<hashed>")
            .field("custom_data", &self.custom_data)
            .finish()
    }
}

/// SHA-256 hex hashes, as Meta asks for them, and the ids Meta takes as
/// they are (click ids among them: Debug prints none of it).
#[derive(Clone, PartialEq, Eq, Default, Serialize)]
pub struct UserData {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ph: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub external_id: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub country: Vec<String>,
    /// Conversion Leads: Meta's lead id (the leadgen id), sent as is, not hashed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead_id: Option<String>,
    /// `business_messaging` on WhatsApp: the click-to-WhatsApp ad's click id, as is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctwa_clid: Option<String>,
    /// `business_messaging` on WhatsApp: the business's WhatsApp Business Account id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whatsapp_business_account_id: Option<String>,
    /// `website`: the Facebook click id as `fb.1.<ms>.<fbclid>`, as is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fbc: Option<String>,
    /// `website`: the browser's user agent, as is (Meta requires it there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_user_agent: Option<String>,
}

impl std::fmt::Debug for UserData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UserData(<hashed>)")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CustomData {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Conversion Leads: `crm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_source: Option<String>,
    /// Conversion Leads: the CRM's name (`rastrod`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead_event_source: Option<String>,
}

/// A decimal string ("12.345") in integer cents, rounded half-up (half away from zero for a
/// negative amount). None for anything that is not a plain decimal.
pub fn decimal_to_cents(s: &str) -> Option<i64> {
    let s = s.trim();
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let int: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac = frac.as_bytes();
    let digit = |i: usize| frac.get(i).map_or(0, |b| i64::from(b - b'0'));
    let mut cents = int.checked_mul(100)?.checked_add(digit(0) * 10 + digit(1))?;
    if digit(2) >= 5 {
        cents = cents.checked_add(1)?;
    }
    Some(if negative { -cents } else { cents })
}

/// A JSON number or a numeric string as i64 (Meta sends counts as strings).
fn count(v: Option<&Value>) -> Option<i64> {
    match v {
        None | Some(Value::Null) => Some(0),
        Some(Value::String(s)) => s.trim().parse().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        _ => None,
    }
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// One insights row; None when a number or the date cannot be read.
pub(crate) fn parse_insight_row(v: &Value) -> Option<InsightRow> {
    let spend_cents = match v.get("spend") {
        None | Some(Value::Null) => 0,
        Some(Value::String(s)) => decimal_to_cents(s)?,
        Some(Value::Number(n)) => decimal_to_cents(&n.to_string())?,
        _ => return None,
    };
    let date = v.get("date_start")?.as_str()?.parse::<NaiveDate>().ok()?;
    let ad_id = text(v.get("ad_id"));
    if ad_id.is_empty() {
        return None;
    }
    Some(InsightRow {
        ad_id,
        ad_name: text(v.get("ad_name")),
        adset_id: text(v.get("adset_id")),
        adset_name: text(v.get("adset_name")),
        campaign_id: text(v.get("campaign_id")),
        campaign_name: text(v.get("campaign_name")),
        spend_cents,
        impressions: count(v.get("impressions"))?,
        clicks: count(v.get("clicks"))?,
        date,
    })
}

/// One catalog row; None without an id.
pub(crate) fn parse_ad_row(v: &Value) -> Option<AdRow> {
    let id = text(v.get("id"));
    if id.is_empty() {
        return None;
    }
    let creative = v.get("creative").filter(|c| c.is_object());
    let object_type = creative.and_then(|c| c.get("object_type")).and_then(Value::as_str);
    let children = creative
        .and_then(|c| c.pointer("/object_story_spec/link_data/child_attachments"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    Some(AdRow {
        id,
        name: text(v.get("name")),
        effective_status: text(v.get("effective_status")),
        adset_id: text(v.get("adset_id")),
        campaign_id: text(v.get("campaign_id")),
        creative_id: creative.map(|c| text(c.get("id"))).filter(|s| !s.is_empty()),
        creative_type: CreativeType::from_creative(object_type, children),
        thumbnail_url: creative.and_then(|c| c.get("thumbnail_url")).and_then(Value::as_str).map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spend_rounds_half_up_to_cents() {
        let cases = [
            ("12.345", Some(1235)),
            ("0.004", Some(0)),
            ("0.005", Some(1)),
            ("123.45", Some(12345)),
            ("0", Some(0)),
            ("7", Some(700)),
            ("7.1", Some(710)),
            ("0.99", Some(99)),
            ("0.995", Some(100)),
            ("19.9949999", Some(1999)),
            ("1234567.891", Some(123456789)),
            (".5", Some(50)),
            (" 3.20 ", Some(320)),
            ("-1.005", Some(-101)),
            ("", None),
            (".", None),
            ("1,50", None),
            ("1e3", None),
            ("abc", None),
            ("1.2.3", None),
            ("99999999999999999999", None),
        ];
        for (s, want) in cases {
            assert_eq!(decimal_to_cents(s), want, "{s:?}");
        }
    }

    #[test]
    fn insight_rows() {
        let row = parse_insight_row(&json!({
            "ad_id": "6001", "ad_name": "Ad", "adset_id": "5001", "adset_name": "Set",
            "campaign_id": "4001", "campaign_name": "Camp", "spend": "12.345",
            "impressions": "1000", "clicks": "37", "date_start": "2026-10-01", "date_stop": "2026-10-01"
        }))
        .unwrap();
        assert_eq!(row.spend_cents, 1235);
        assert_eq!((row.impressions, row.clicks), (1000, 37));
        assert_eq!(row.date, NaiveDate::from_ymd_opt(2026, 10, 1).unwrap());
        assert_eq!(row.campaign_name, "Camp");
        // Missing counts are zero; bad ones fail the row.
        let sparse = parse_insight_row(&json!({"ad_id":"1","spend":"0.004","date_start":"2026-10-02"})).unwrap();
        assert_eq!((sparse.spend_cents, sparse.impressions, sparse.clicks), (0, 0, 0));
        assert!(parse_insight_row(&json!({"ad_id":"1","spend":"x","date_start":"2026-10-02"})).is_none());
        assert!(parse_insight_row(&json!({"ad_id":"1","clicks":"3.5","date_start":"2026-10-02"})).is_none());
        assert!(parse_insight_row(&json!({"ad_id":"1","date_start":"02/10/2026"})).is_none());
        assert!(parse_insight_row(&json!({"spend":"1","date_start":"2026-10-02"})).is_none());
    }

    #[test]
    fn creative_types() {
        use CreativeType::*;
        assert_eq!(CreativeType::from_creative(Some("VIDEO"), 0), Video);
        assert_eq!(CreativeType::from_creative(Some("PHOTO"), 0), Image);
        assert_eq!(CreativeType::from_creative(Some("SHARE"), 3), Carousel);
        assert_eq!(CreativeType::from_creative(Some("SHARE"), 1), Other);
        assert_eq!(CreativeType::from_creative(Some("SHARE"), 0), Other);
        assert_eq!(CreativeType::from_creative(Some("CAROUSEL"), 0), Carousel);
        assert_eq!(CreativeType::from_creative(Some("STATUS"), 0), Other);
        assert_eq!(CreativeType::from_creative(None, 0), Other);
        let names: Vec<_> = [Video, Image, Carousel, Other].iter().map(|t| t.as_str()).collect();
        assert_eq!(names, ["video", "image", "carousel", "other"]);

        let ad = parse_ad_row(&json!({
            "id": "6001", "name": "Carrossel", "effective_status": "ACTIVE", "adset_id": "5", "campaign_id": "4",
            "creative": {"id": "9", "object_type": "SHARE", "thumbnail_url": "https://x.test/t.png?a=1&b=2",
                "object_story_spec": {"link_data": {"child_attachments": [{"link": "a"}, {"link": "b"}]}}}
        }))
        .unwrap();
        assert_eq!(ad.creative_type, Carousel);
        assert_eq!(ad.thumbnail_url.as_deref(), Some("https://x.test/t.png?a=1&b=2"));
        assert_eq!(ad.creative_id.as_deref(), Some("9"));
        let bare = parse_ad_row(&json!({"id": "6002"})).unwrap();
        assert_eq!((bare.creative_type, bare.thumbnail_url, bare.creative_id), (Other, None, None));
    }

    #[test]
    fn debug_prints_no_secret_or_hash() {
        let grant = TokenGrant {
            access_token: Secret::new("EAAcanary0123456789"),
            token_type: Some("bearer".into()),
            expires_in: None,
        };
        assert!(!format!("{grant:?}").contains("EAAcanary"));
        let ev = ServerEvent {
            event_name: "Purchase".into(),
            event_time: 1,
            event_id: "e".into(),
            action_source: "chat".into(),
            messaging_channel: None,
            event_source_url: None,
            user_data: UserData { ph: vec!["deadbeefhash".into()], ..Default::default() },
            custom_data: None,
        };
        assert!(!format!("{ev:?}").contains("deadbeefhash"));
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["user_data"], json!({"ph": ["deadbeefhash"]}));
        assert!(json.get("custom_data").is_none());
        assert!(json.get("messaging_channel").is_none());
        // Click ids are sent as they are, and printed nowhere (rules WA-31, WA-33).
        let clicked = ServerEvent {
            messaging_channel: Some("whatsapp".into()),
            user_data: UserData {
                ctwa_clid: Some("ctwacanary".into()),
                fbc: Some("fb.1.1.fbccanary".into()),
                client_user_agent: Some("Mozilla/5.0 uacanary".into()),
                ..Default::default()
            },
            ..ev
        };
        assert!(!format!("{clicked:?}").contains("canary"));
        let json = serde_json::to_value(&clicked).unwrap();
        assert_eq!(
            json["user_data"],
            json!({"ctwa_clid": "ctwacanary", "fbc": "fb.1.1.fbccanary", "client_user_agent": "Mozilla/5.0 uacanary"})
        );
        assert_eq!(json["messaging_channel"], "whatsapp");
    }
}
