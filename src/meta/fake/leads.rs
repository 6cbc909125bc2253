//! Meta Lead Ads on the fake Graph API (LEADADS.md §8): the sample agency's
//! Pages with their Page tokens (`GET /me/accounts`), the `subscribed_apps`
//! edge, each Page's forms with their questions, and the leads tests make.
//!
//! * `POST /__fake/leadgen` `{"pageId", "formId", "adId"?, "organic"?,
//!   "createdTime"? (epoch s), "fieldData"? [{"name", "values"}], "deliverTo"?,
//!   "appSecret"?, "drop"?}` makes a lead (answers `{"leadgenId",
//!   "webhookStatus"}`) and, with `deliverTo`, posts Meta's `leadgen` webhook
//!   for it there, signed with `appSecret` (`X-Hub-Signature-256`), unless
//!   `drop` (a webhook Meta never sent: only reconciliation finds the lead).
//! * A Page's routes take that Page's token only (else code 210, a
//!   permission error); faults (`/__fake/faults`) meet these routes like any.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Shared;
use super::reply::{Field, GraphError, Query, get, select};
use super::sample;

/// A sample Page: id, name, the tasks the agency's user has on it, its forms.
pub struct SamplePage {
    pub id: &'static str,
    pub name: &'static str,
    pub tasks: &'static [&'static str],
    pub forms: &'static [SampleForm],
}

pub struct SampleForm {
    pub id: &'static str,
    pub name: &'static str,
    /// `(key, label, type)`.
    pub questions: &'static [(&'static str, &'static str, &'static str)],
}

pub const PAGE_LOJA_X: &str = "500100200301";
pub const PAGE_PET_MANIA: &str = "500100200302";
pub const PAGE_CAFE: &str = "500100200303";
pub const FORM_ORCAMENTO: &str = "600100200301";
pub const FORM_AGENDA: &str = "600100200302";
pub const FORM_PET: &str = "600100200303";
/// The prefix of every fake Page token: `rastro-fake-page-token:<page id>`.
pub const PAGE_TOKEN_PREFIX: &str = "rastro-fake-page-token:";

const ALL_TASKS: &[&str] = &["ADVERTISE", "ANALYZE", "CREATE_CONTENT", "MANAGE", "MESSAGING", "MODERATE"];

static PAGES: &[SamplePage] = &[
    SamplePage {
        id: PAGE_LOJA_X,
        name: "Loja X",
        tasks: ALL_TASKS,
        forms: &[
            SampleForm {
                id: FORM_ORCAMENTO,
                name: "Orçamento",
                questions: &[
                    ("full_name", "Nome completo", "FULL_NAME"),
                    ("email", "E-mail", "EMAIL"),
                    ("phone_number", "Telefone", "PHONE"),
                    ("interesse", "Qual seu interesse?", "CUSTOM"),
                ],
            },
            SampleForm {
                id: FORM_AGENDA,
                name: "Agendamento",
                questions: &[
                    ("full_name", "Nome completo", "FULL_NAME"),
                    ("phone_number", "Telefone", "PHONE"),
                    ("melhor_horario", "Melhor horário", "CUSTOM"),
                ],
            },
        ],
    },
    SamplePage {
        id: PAGE_PET_MANIA,
        name: "Pet Mania",
        tasks: &["ADVERTISE", "ANALYZE"],
        forms: &[SampleForm {
            id: FORM_PET,
            name: "Banho e tosa",
            questions: &[("full_name", "Nome completo", "FULL_NAME"), ("phone_number", "Telefone", "PHONE")],
        }],
    },
    // The agency only reads this Page's insights: Meta answers none of its leads.
    SamplePage { id: PAGE_CAFE, name: "Café Brooklyn", tasks: &["ANALYZE"], forms: &[] },
];

pub fn sample_pages() -> &'static [SamplePage] {
    PAGES
}

pub fn page_token(page_id: &str) -> String {
    format!("{PAGE_TOKEN_PREFIX}{page_id}")
}

fn page(id: &str) -> Option<&'static SamplePage> {
    PAGES.iter().find(|p| p.id == id)
}

fn form_of(id: &str) -> Option<(&'static SamplePage, &'static SampleForm)> {
    PAGES.iter().find_map(|p| p.forms.iter().find(|f| f.id == id).map(|f| (p, f)))
}

/// A Page's routes take its own token only.
fn check_page_token(token: &str, page_id: &str) -> Result<(), GraphError> {
    if token == page_token(page_id) {
        Ok(())
    } else {
        Err(GraphError::new(403, 210, None, "(#210) A page access token is required to request this resource"))
    }
}

fn form_json(f: &SampleForm) -> Value {
    let questions: Vec<Value> =
        f.questions.iter().map(|(key, label, kind)| json!({"key": key, "label": label, "type": kind})).collect();
    json!({"id": f.id, "name": f.name, "status": "ACTIVE", "locale": "pt_BR", "questions": questions})
}

/// The Lead Ads routes; None when the request is not one of them.
pub fn route(
    state: &Shared,
    method: &str,
    rest: &[&str],
    token: &str,
    query: &Query,
    fields: Option<&[Field]>,
    list: &dyn Fn(Vec<Value>) -> Result<Value, GraphError>,
) -> Option<Result<Value, GraphError>> {
    Some(match (method, rest) {
        ("GET", ["me", "accounts"]) => list(
            PAGES
                .iter()
                .map(|p| {
                    let page = json!({"id": p.id, "name": p.name, "tasks": p.tasks, "category": "Shopping",
                        "access_token": page_token(p.id)});
                    select(page, fields, &["id"])
                })
                .collect(),
        ),
        ("POST" | "DELETE", [id, "subscribed_apps"]) if page(id).is_some() => check_page_token(token, id).map(|()| {
            let mut c = state.control();
            if method == "POST" {
                c.subscriptions.insert(id.to_string());
            } else {
                c.subscriptions.remove(*id);
            }
            json!({"success": true})
        }),
        ("GET", [id, "leadgen_forms"]) if page(id).is_some() => check_page_token(token, id).and_then(|()| {
            let forms = page(id).map(|p| p.forms.iter().map(|f| select(form_json(f), fields, &["id"])).collect());
            list(forms.unwrap_or_default())
        }),
        ("GET", [id, "leads"]) if form_of(id).is_some() => {
            let page_id = form_of(id).map(|(p, _)| p.id).unwrap_or_default();
            check_page_token(token, page_id).and_then(|()| {
                let since = since(query)?;
                let leads: Vec<Value> = state
                    .control()
                    .leads
                    .iter()
                    .filter(|l| l["form_id"] == *id && epoch(&l["created_time"]).is_some_and(|t| t > since))
                    .map(|l| select(l.clone(), fields, &["id"]))
                    .collect();
                list(leads)
            })
        }
        ("GET", [id]) => {
            let lead = state.control().leads.iter().find(|l| l["id"] == *id).cloned()?;
            let page_id = lead["page_id"].as_str().unwrap_or_default().to_string();
            check_page_token(token, &page_id).map(|()| select(lead, fields, &["id"]))
        }
        _ => return None,
    })
}

/// A lead's `created_time` (`2026-11-30T12:00:00+0000`) in epoch seconds.
fn epoch(v: &Value) -> Option<i64> {
    chrono::DateTime::parse_from_str(v.as_str()?, "%Y-%m-%dT%H:%M:%S%z").ok().map(|t| t.timestamp())
}

/// The `time_created GREATER_THAN` value of `/{form}/leads`'s `filtering` (none: every lead).
fn since(q: &Query) -> Result<i64, GraphError> {
    let Some(raw) = get(q, "filtering") else { return Ok(i64::MIN) };
    let filters: Vec<Value> = serde_json::from_str(raw).map_err(|_| GraphError::invalid("(#100) Invalid filtering"))?;
    let mut since = i64::MIN;
    for f in filters {
        let ok = f["field"] == "time_created" && f["operator"] == "GREATER_THAN";
        let value = f["value"].as_i64().or_else(|| f["value"].as_str().and_then(|s| s.parse().ok()));
        match (ok, value) {
            (true, Some(v)) => since = since.max(v),
            _ => return Err(GraphError::invalid("(#100) The fake filters leads on time_created GREATER_THAN only")),
        }
    }
    Ok(since)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NewLead {
    page_id: String,
    form_id: String,
    ad_id: Option<String>,
    #[serde(default)]
    organic: bool,
    created_time: Option<i64>,
    field_data: Option<Vec<Value>>,
    deliver_to: Option<String>,
    app_secret: Option<String>,
    #[serde(default)]
    drop: bool,
}

/// Meta's webhook for one lead: `{object: "page", entry: [{id, time, changes: [{field, value}]}]}`.
pub fn webhook_body(page_id: &str, form_id: &str, leadgen_id: &str, ad_id: Option<&str>, created: i64) -> Value {
    let mut value = json!({"leadgen_id": leadgen_id, "page_id": page_id, "form_id": form_id, "created_time": created});
    if let Some(ad) = ad_id.and_then(sample::ad_by_id) {
        value["ad_id"] = json!(ad.id);
        value["adgroup_id"] = json!(ad.id);
    }
    json!({"object": "page", "entry": [{"id": page_id, "time": created, "changes": [{"field": "leadgen", "value": value}]}]})
}

/// `sha256=<hex HMAC-SHA256(secret, body)>`: Meta's `X-Hub-Signature-256`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    crate::crypto::signature_sha256(secret.as_bytes(), body)
}

/// `POST /__fake/leadgen` (served in the `/__fake` scope of `faults`).
pub async fn new_lead(state: web::Data<Shared>, body: web::Bytes) -> HttpResponse {
    let n: NewLead = match serde_json::from_slice(&body) {
        Ok(n) => n,
        Err(e) => return HttpResponse::BadRequest().json(json!({"error": format!("bad lead: {e}")})),
    };
    let Some((p, form)) = form_of(&n.form_id).filter(|(p, _)| p.id == n.page_id) else {
        return HttpResponse::BadRequest().json(json!({"error": "no such form on that Page"}));
    };
    let created = n.created_time.unwrap_or_else(|| state.started_ms.div_euclid(1000));
    let ad = n.ad_id.as_deref().and_then(sample::ad_by_id);
    let field_data = n.field_data.unwrap_or_else(|| {
        vec![
            json!({"name": "full_name", "values": ["Cliente Exemplo"]}),
            json!({"name": "phone_number", "values": ["+5511999990000"]}),
        ]
    });
    let leadgen_id = {
        let mut c = state.control();
        c.next_lead += 1;
        let id = format!("{}", 700_100_200_000_u64 + c.next_lead);
        let created_iso = chrono::DateTime::from_timestamp(created, 0)
            .map(|t| t.format("%Y-%m-%dT%H:%M:%S+0000").to_string())
            .unwrap_or_default();
        let mut lead = json!({"id": id, "page_id": p.id, "form_id": form.id, "created_time": created_iso,
            "field_data": field_data, "is_organic": n.organic || ad.is_none(), "platform": "fb"});
        if let Some(ad) = ad.filter(|_| !n.organic) {
            lead["ad_id"] = json!(ad.id);
            lead["adset_id"] = json!(ad.adset_id);
            lead["campaign_id"] = json!(ad.campaign_id);
        }
        c.leads.push(lead);
        id
    };
    let mut status = Value::Null;
    if let (Some(url), false) = (n.deliver_to, n.drop) {
        let body = webhook_body(p.id, form.id, &leadgen_id, ad.map(|a| a.id).filter(|_| !n.organic), created);
        let bytes = body.to_string().into_bytes();
        let mut req = reqwest::Client::new().post(url).header("content-type", "application/json");
        if let Some(secret) = &n.app_secret {
            req = req.header("x-hub-signature-256", signature(secret, &bytes));
        }
        status = match req.body(bytes).send().await {
            Ok(r) => json!(r.status().as_u16()),
            Err(_) => json!("unreachable"),
        };
    }
    HttpResponse::Ok().json(json!({"leadgenId": leadgen_id, "webhookStatus": status}))
}
