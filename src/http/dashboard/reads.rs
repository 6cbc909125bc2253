//! The dashboard's reads: the same service calls the host routes make, for
//! the signed-in operator (any operator may read). The lead report comes back
//! with its derived metrics already computed and formatted by
//! `service::metrics`, so the page never computes a ratio itself.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};

use super::session::signed_in;
use crate::clock::utc_day_start;
use crate::error::Result;
use crate::service::leads::metrics::{RowCounts, format_money, format_return, return_band, row_metrics};
use crate::service::leads::{self, board as pipeline, reports};
use crate::service::meta::{connection as meta_connection, conversions, status as meta_status, sync as meta_sync};
use crate::service::sites;
use crate::state::AppState;

pub async fn list_sites(st: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse> {
    signed_in(&req)?;
    Ok(HttpResponse::Ok().json(st.cx.read(sites::list).await?))
}

fn count(v: &Value, k: &str) -> i64 {
    v[k].as_i64().unwrap_or(0)
}

/// The row's money and ratios, formatted (`—` for unknown, never `R$ 0`).
/// Ratios only from a row the spend bought, and none with a currency mismatch
/// (METRIC-03): `paid` says whether this row is one.
fn fmt_row(row: &Value, revenue_currency: &str, spend_currency: Option<&str>, paid: bool, mismatch: bool) -> Value {
    let spend = row["spendCents"].as_i64();
    let counts = RowCounts {
        leads: count(row, "leads"),
        qualified: count(row, "qualified"),
        won: count(row, "won"),
        revenue_cents: count(row, "revenueCents"),
        spend_cents: if paid && !mismatch { spend } else { None },
    };
    let m = row_metrics(counts);
    let sc = spend_currency.unwrap_or(revenue_currency);
    json!({
        "revenue": format_money(Some(counts.revenue_cents), revenue_currency),
        "spend": format_money(spend, sc),
        "costPerLead": format_money(m.cost_per_lead_cents, sc),
        "costPerQualified": format_money(m.cost_per_qualified_cents, sc),
        "costPerSale": format_money(m.cost_per_sale_cents, sc),
        "returnOnSpend": format_return(m.return_on_spend),
        "band": return_band(m.return_on_spend),
    })
}

/// Adds `fmt` to the totals, each origin, every campaign, ad set and ad row and
/// each site's row.
pub fn with_metrics(report: &reports::LeadsReport, site_rows: &[sites::Site]) -> Result<Value> {
    let mut v = serde_json::to_value(report).map_err(crate::error::Error::internal)?;
    let cur = report.currency.clone().unwrap_or_else(|| "BRL".into());
    let spend_cur = report.spend_currency.clone();
    let mismatch = report.currency_mismatch;
    let f = |row: &Value, paid: bool| fmt_row(row, &cur, spend_cur.as_deref(), paid, mismatch);
    v["totals"]["fmt"] = f(&v["totals"], false);
    if let Some(origins) = v["origins"].as_array_mut() {
        for o in origins {
            let paid = o["origin"] == reports::PAID_ORIGIN;
            o["fmt"] = f(o, paid);
        }
    }
    if let Some(campaigns) = v["campaigns"].as_array_mut() {
        for c in campaigns {
            c["fmt"] = f(c, true);
            for a in c["adsets"].as_array_mut().into_iter().flatten() {
                a["fmt"] = f(a, true);
                for ad in a["ads"].as_array_mut().into_iter().flatten() {
                    ad["fmt"] = f(ad, true);
                }
            }
        }
    }
    for s in v["bySite"].as_array_mut().into_iter().flatten() {
        let site_cur = site_rows
            .iter()
            .find(|r| s["siteId"] == r.site_id.as_str())
            .map_or_else(|| cur.clone(), |r| r.currency.clone());
        let mut paid = s["paid"].clone();
        paid["spendCents"] = s["spendCents"].clone();
        let row_mismatch = s["currencyMismatch"].as_bool().unwrap_or(false);
        let sc = s["spendCurrency"].as_str().map(str::to_string);
        s["fmt"] = fmt_row(&s.clone(), &site_cur, sc.as_deref(), false, row_mismatch);
        s["paidFmt"] = fmt_row(&paid, &site_cur, sc.as_deref(), true, row_mismatch);
    }
    Ok(v)
}

/// "Todos os clientes" reads every client's sites in one report, up to this
/// many (the federated and host reports keep their ten).
pub const ALL_CLIENTS_MAX: usize = 500;

pub async fn leads_report(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<reports::LeadsReportArgs>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let args = body.into_inner();
    reports::check_report_of(&args, ALL_CLIENTS_MAX)?;
    let caps = reports::Caps { max_sites: ALL_CLIENTS_MAX, ..reports::Caps::from_config(&st.cx.config) };
    let ids = args.site_ids.clone();
    let (report, site_rows) = st
        .cx
        .read(move |c| {
            let report = reports::leads_report(c, args, caps)?;
            let rows = sites::list(c)?.into_iter().filter(|s| ids.contains(&s.site_id)).collect::<Vec<_>>();
            Ok((report, rows))
        })
        .await?;
    Ok(HttpResponse::Ok().json(with_metrics(&report, &site_rows)?))
}

pub async fn leads_daily(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<reports::LeadsDailyArgs>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let args = body.into_inner();
    reports::check_daily_of(&args, ALL_CLIENTS_MAX)?;
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| reports::leads_daily_of(c, args, ALL_CLIENTS_MAX)).await?))
}

pub async fn list_leads(
    st: web::Data<AppState>,
    req: HttpRequest,
    q: web::Query<leads::reads::ListLeads>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let q = q.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| leads::reads::list(c, q)).await?))
}

pub async fn lead_journey(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let (site, lead) = path.into_inner();
    let (journey, currency) =
        st.cx.read(move |c| Ok((leads::reads::journey(c, &site, &lead)?, sites::get(c, &site)?.currency))).await?;
    let mut v = serde_json::to_value(&journey).map_err(crate::error::Error::internal)?;
    for e in v["history"].as_array_mut().into_iter().flatten() {
        let cents = e["revenueCents"].as_i64();
        e["revenue"] = json!(format_money(cents, &currency));
    }
    Ok(HttpResponse::Ok().json(v))
}

pub async fn meta_connection(st: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse> {
    let s = signed_in(&req)?;
    let (key, owner) = (st.cx.secrets.clone(), s.operator.owner_key);
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| meta_connection::view(c, key.as_ref(), &owner)).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusArgs {
    site_ids: Vec<String>,
}

/// metaStatus for every site asked (ten at a time, the service's cap), as the
/// operator's owner (each link and pixel says `own`), with the server's clock.
pub async fn meta_status(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<StatusArgs>,
) -> Result<HttpResponse> {
    let s = signed_in(&req)?;
    let ids = body.into_inner().site_ids;
    if ids.is_empty() || ids.len() > 200 {
        return Err(crate::error::Error::invalid("siteIds holds 1-200 sites"));
    }
    let now = utc_day_start(st.now());
    let mut out: Vec<Value> = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(10) {
        let args = meta_status::MetaStatusArgs {
            site_ids: chunk.to_vec(),
            now: Some(now),
            owner_key: Some(s.operator.owner_key.clone()),
        };
        let answer = meta_status::status_cached(&st.cx, args).await?;
        let v = serde_json::to_value(&*answer).map_err(crate::error::Error::internal)?;
        out.extend(v.as_array().cloned().unwrap_or_default());
    }
    Ok(HttpResponse::Ok().json(out))
}

pub async fn event_map(st: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> Result<HttpResponse> {
    signed_in(&req)?;
    // The day's start, as the seed's dashboard passes it.
    let (site, now) = (path.into_inner(), utc_day_start(st.now()));
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| pipeline::event_map(c, &site, Some(now))).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FeedQuery {
    /// Comma-separated sites; the feed merges their conversions, newest first.
    site_ids: String,
    limit: Option<i64>,
}

/// The conversions feed across the asked sites' pixels, newest first.
pub async fn conversions_feed(
    st: web::Data<AppState>,
    req: HttpRequest,
    q: web::Query<FeedQuery>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let q = q.into_inner();
    let ids: Vec<String> = q.site_ids.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    if ids.is_empty() || ids.len() > 200 {
        return Err(crate::error::Error::invalid("siteIds holds 1-200 sites"));
    }
    let limit = q.limit.unwrap_or(30);
    let rows = st
        .cx
        .read(move |c| {
            let mut all = Vec::new();
            for id in &ids {
                let currency = sites::get(c, id)?.currency;
                for r in conversions::list(c, id, Some(limit), None, None)? {
                    all.push((id.clone(), currency.clone(), r));
                }
            }
            all.sort_by(|a, b| b.2.created_at.cmp(&a.2.created_at).then(b.2.event_id.cmp(&a.2.event_id)));
            all.truncate(limit.clamp(1, 50) as usize);
            Ok(all)
        })
        .await?;
    let out: Vec<Value> = rows
        .into_iter()
        .map(|(site, currency, r)| {
            let value = format_money(r.value_cents, &currency);
            let mut v = serde_json::to_value(r).unwrap_or_default();
            v["siteId"] = json!(site);
            v["valueFmt"] = json!(value);
            v
        })
        .collect();
    Ok(HttpResponse::Ok().json(out))
}

pub async fn unlink_preview(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let (site, account) = path.into_inner();
    let p = st.cx.read(move |c| meta_sync::unlink_preview(c, &site, &account)).await?;
    let mut v = serde_json::to_value(&p).map_err(crate::error::Error::internal)?;
    let cur = v["currency"].as_str().unwrap_or("BRL").to_string();
    v["spend"] = json!(format_money(v["spendCents"].as_i64(), &cur));
    Ok(HttpResponse::Ok().json(v))
}
