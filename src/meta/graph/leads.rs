//! The Graph calls of Meta Lead Ads (LEADADS.md §3–§5): an owner's Pages with
//! their Page tokens, the app's `leadgen` subscription of a Page, a Page's
//! forms, and one lead. A lead's answers are personal data: [`FormLead`]'s
//! Debug prints none of them, and no error carries any text of Meta's answer.

use serde::Deserialize;
use serde_json::Value;

use super::errors::Endpoint;
use super::{Graph, GraphClient, GraphError, check_id, malformed, rows_from};
use crate::config::Secret;

const PAGE_FIELDS: &str = "id,name,tasks,access_token";
const FORM_FIELDS: &str = "id,name,status,questions";
const LEAD_FIELDS: &str = "created_time,field_data,ad_id,adset_id,campaign_id,form_id,is_organic,platform";

/// One row of `GET /me/accounts`: a Page the token manages, with its Page token.
#[derive(Clone, Deserialize)]
pub struct GraphPage {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub tasks: Vec<String>,
    #[serde(default, deserialize_with = "secret")]
    pub access_token: Option<Secret>,
}

fn secret<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|s| !s.is_empty()).map(Secret::new))
}

impl GraphPage {
    /// Meta answers a Page's leads to a token whose tasks include ADVERTISE or MANAGE.
    pub fn can_retrieve_leads(&self) -> bool {
        self.tasks.iter().any(|t| t == "ADVERTISE" || t == "MANAGE")
    }
}

impl std::fmt::Debug for GraphPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphPage").field("id", &self.id).field("tasks", &self.tasks).finish_non_exhaustive()
    }
}

/// A form's question (never an answer).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize, utoipa::ToSchema)]
pub struct Question {
    pub key: String,
    #[serde(default)]
    pub label: String,
    #[serde(default, rename = "type")]
    pub kind: String,
}

/// One row of `GET /{page-id}/leadgen_forms`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GraphForm {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub questions: Vec<Question>,
}

/// `GET /{leadgen-id}`: one lead. `answers` are the person's: in memory only.
#[derive(Clone, Default)]
pub struct FormLead {
    /// Epoch milliseconds (Meta's ISO 8601 `created_time`), None when unreadable.
    pub created_ms: Option<i64>,
    pub ad_id: Option<String>,
    pub adset_id: Option<String>,
    pub campaign_id: Option<String>,
    pub form_id: Option<String>,
    pub is_organic: bool,
    pub platform: Option<String>,
    /// `(question key, first value)` of `field_data`.
    pub answers: Vec<(String, String)>,
}

impl FormLead {
    /// The first answer to the question `key`.
    pub fn answer(&self, key: &str) -> Option<&str> {
        self.answers.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

impl std::fmt::Debug for FormLead {
    /// Never an answer: only how many there are.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FormLead")
            .field("created_ms", &self.created_ms)
            .field("ad_id", &self.ad_id)
            .field("form_id", &self.form_id)
            .field("is_organic", &self.is_organic)
            .field("answers", &self.answers.len())
            .finish()
    }
}

/// Meta's times: `2026-11-30T12:00:00+0000` (or RFC 3339), or epoch seconds.
pub fn parse_graph_time(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().map(|s| s * 1000),
        Value::String(s) => chrono::DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%z")
            .or_else(|_| chrono::DateTime::parse_from_rfc3339(s))
            .ok()
            .map(|t| t.timestamp_millis())
            .or_else(|| s.parse::<i64>().ok().map(|secs| secs * 1000)),
        _ => None,
    }
}

fn opt_id(v: &Value, key: &str) -> Option<String> {
    match v.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

fn parse_lead(v: &Value) -> Option<FormLead> {
    let mut answers = Vec::new();
    for field in v.get("field_data").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        let name = field.get("name").and_then(Value::as_str)?;
        let first = field.get("values").and_then(Value::as_array).and_then(|vs| vs.first());
        let value = match first {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        answers.push((name.to_string(), value));
    }
    Some(FormLead {
        created_ms: v.get("created_time").and_then(parse_graph_time),
        ad_id: opt_id(v, "ad_id"),
        adset_id: opt_id(v, "adset_id"),
        campaign_id: opt_id(v, "campaign_id"),
        form_id: opt_id(v, "form_id"),
        is_organic: v.get("is_organic").and_then(Value::as_bool).unwrap_or(false),
        platform: v.get("platform").and_then(Value::as_str).map(str::to_string),
        answers,
    })
}

/// One row of `GET /{form-id}/leads`: ids and the time only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadStub {
    pub id: String,
    pub created_ms: Option<i64>,
    pub ad_id: Option<String>,
}

impl GraphClient {
    /// `GET /{form-id}/leads?fields=id,created_time,ad_id&filtering=[time_created > since]`,
    /// every page (`since` in epoch seconds).
    pub async fn form_leads(
        &self,
        page_token: &Secret,
        form_id: &str,
        since_secs: i64,
    ) -> Result<Graph<Vec<LeadStub>>, GraphError> {
        let op = "form_leads";
        check_id(op, form_id)?;
        let filter =
            serde_json::json!([{"field": "time_created", "operator": "GREATER_THAN", "value": since_secs}]).to_string();
        let params = [("fields", "id,created_time,ad_id"), ("filtering", filter.as_str()), ("limit", "500")];
        let url = self.url(op, &format!("{form_id}/leads"), &params)?;
        let (rows, usage) = self.pages(op, page_token, url).await.complete()?;
        let stubs = rows
            .iter()
            .map(|r| {
                Some(LeadStub {
                    id: opt_id(r, "id")?,
                    created_ms: r.get("created_time").and_then(parse_graph_time),
                    ad_id: opt_id(r, "ad_id"),
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| malformed(op, usage))?;
        Ok(Graph { value: stubs, usage })
    }

    /// `GET /me/accounts?fields=id,name,tasks,access_token`: the first 100 Pages.
    pub async fn page_accounts(&self, token: &Secret) -> Result<Graph<Vec<GraphPage>>, GraphError> {
        let op = "pages";
        let url = self.url(op, "me/accounts", &[("fields", PAGE_FIELDS), ("limit", "100")])?;
        let (v, usage) = self.call(op, Endpoint::Api, self.api.get(url).bearer_auth(token.expose())).await?;
        let rows = match v.get("data") {
            Some(Value::Array(rows)) => rows.clone(),
            _ => return Err(malformed(op, usage)),
        };
        Ok(Graph { value: rows_from(op, rows, usage)?, usage })
    }

    /// `POST /{page-id}/subscribed_apps?subscribed_fields=leadgen` with the Page token.
    pub async fn subscribe_leadgen(&self, page_token: &Secret, page_id: &str) -> Result<Graph<()>, GraphError> {
        let op = "subscribe_leadgen";
        check_id(op, page_id)?;
        let url = self.url(op, &format!("{page_id}/subscribed_apps"), &[("subscribed_fields", "leadgen")])?;
        let (v, usage) = self.call(op, Endpoint::Api, self.api.post(url).bearer_auth(page_token.expose())).await?;
        match v.get("success") {
            Some(Value::Bool(true)) => Ok(Graph { value: (), usage }),
            _ => Err(malformed(op, usage)),
        }
    }

    /// `DELETE /{page-id}/subscribed_apps` with the Page token: the app no longer gets its leadgen webhooks.
    pub async fn unsubscribe_leadgen(&self, page_token: &Secret, page_id: &str) -> Result<Graph<()>, GraphError> {
        let op = "unsubscribe_leadgen";
        check_id(op, page_id)?;
        let url = self.url(op, &format!("{page_id}/subscribed_apps"), &[])?;
        let (v, usage) = self.call(op, Endpoint::Api, self.api.delete(url).bearer_auth(page_token.expose())).await?;
        match v.get("success") {
            Some(Value::Bool(true)) => Ok(Graph { value: (), usage }),
            _ => Err(malformed(op, usage)),
        }
    }

    /// `GET /{page-id}/leadgen_forms?fields=id,name,status,questions`, every page.
    pub async fn forms(&self, page_token: &Secret, page_id: &str) -> Result<Graph<Vec<GraphForm>>, GraphError> {
        let op = "forms";
        check_id(op, page_id)?;
        let url = self.url(op, &format!("{page_id}/leadgen_forms"), &[("fields", FORM_FIELDS), ("limit", "100")])?;
        let (rows, usage) = self.pages(op, page_token, url).await.complete()?;
        Ok(Graph { value: rows_from(op, rows, usage)?, usage })
    }

    /// `GET /{leadgen-id}?fields=…`: one lead, with its answers (in memory only).
    pub async fn form_lead(&self, page_token: &Secret, leadgen_id: &str) -> Result<Graph<FormLead>, GraphError> {
        let op = "form_lead";
        check_id(op, leadgen_id)?;
        let url = self.url(op, leadgen_id, &[("fields", LEAD_FIELDS)])?;
        let (v, usage) = self.call(op, Endpoint::Api, self.api.get(url).bearer_auth(page_token.expose())).await?;
        let lead = parse_lead(&v).ok_or_else(|| malformed(op, usage))?;
        Ok(Graph { value: lead, usage })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_leads_parse() {
        assert_eq!(parse_graph_time(&Value::String("2026-11-30T12:00:00+0000".into())), Some(1_796_040_000_000));
        assert_eq!(parse_graph_time(&serde_json::json!(1_796_040_000)), Some(1_796_040_000_000));
        let lead = parse_lead(&serde_json::json!({
            "created_time": "2026-11-30T12:00:00+0000", "ad_id": "301", "is_organic": false,
            "field_data": [{"name": "full_name", "values": ["Ana"]}]
        }))
        .unwrap();
        assert_eq!(lead.answer("full_name"), Some("Ana"));
        assert!(!format!("{lead:?}").contains("Ana"), "Debug prints no answer");
    }
}
