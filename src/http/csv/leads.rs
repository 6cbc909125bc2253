//! `GET /v1/sites/{siteId}/leads.csv?from&to[&timezone&filters]`: every lead of the
//! range that arrived in it, newest first, written page by page as it is read
//! (rule REP-11: memory stays flat whatever the number of leads). Never a
//! contact or a click id: the lead key (often a phone number) stays out too.

use actix_web::web::Bytes;
use actix_web::{HttpResponse, web};
use serde::Deserialize;

use super::writer::{self, Cell};
use super::{CONTENT_TYPE, attachment, zone_of};
use crate::error::Result;
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::http::paged_body;
use crate::service::leads::reads;
use crate::service::leads::{Channel, Lead};
use crate::service::{sites, validate};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LeadsCsvQuery {
    /// Epoch ms, inclusive: leads whose first arrival is in `[from, to]`.
    from: i64,
    /// Epoch ms, inclusive; at most 366 UTC days after `from`.
    to: i64,
    /// The IANA zone the arrival times are written in (default UTC).
    timezone: Option<String>,
    /// A JSON array of filters on the leads' dimensions, as on `listLeads`.
    filters: Option<String>,
}

const COLUMNS: [&str; 15] = [
    "leadId",
    "arrival",
    "origin",
    "channel",
    "campaignId",
    "campaign",
    "adSetId",
    "adSet",
    "adId",
    "ad",
    "stage",
    "column",
    "revenue",
    "currency",
    "label",
];

fn text(v: &Option<String>) -> Cell {
    v.as_ref().map_or(Cell::Empty, |s| Cell::text(s.clone()))
}

fn lead_record(out: &mut String, l: &Lead, currency: &str, tz: chrono_tz::Tz) {
    let channel = match l.channel {
        Channel::Whatsapp => "whatsapp",
        Channel::Form => "form",
    };
    writer::record(
        out,
        &[
            Cell::text(l.lead_id.clone()),
            Cell::Figure(writer::time(l.first_at, tz)),
            Cell::text(l.origin.clone()),
            Cell::Figure(channel.into()),
            text(&l.campaign_id),
            text(&l.campaign_name),
            text(&l.adset_id),
            text(&l.adset_name),
            text(&l.ad_id),
            text(&l.ad_name),
            Cell::Figure(l.stage.as_str().into()),
            text(&l.column),
            Cell::Figure(writer::money(l.revenue_cents)),
            Cell::Figure(currency.into()),
            text(&l.label),
        ],
    );
}

/// Every lead of the range as CSV, streamed (rules REP-10, REP-11).
#[utoipa::path(get, path = "/v1/sites/{siteId}/leads.csv", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path), LeadsCsvQuery),
    responses((status = 200, content_type = "text/csv", body = String,
        description = "RFC 4180, UTF-8, a header row: leadId, arrival, origin, channel, campaignId, campaign, adSetId, \
            adSet, adId, ad, stage, column, revenue, currency, label; newest first"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn leads_csv(
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<LeadsCsvQuery>,
) -> Result<HttpResponse> {
    let (site_id, q) = (path.into_inner(), q.into_inner());
    validate::range(q.from, q.to, 366)?;
    if let Some(tz) = &q.timezone {
        validate::timezone(tz)?;
    }
    let tz = zone_of(q.timezone.as_deref());
    let filters = reads::filters_param(q.filters.as_deref())?;
    let conditions = std::sync::Arc::new(crate::service::leads::filters::conditions(&filters)?);
    let sid = site_id.clone();
    // Checked before the status is sent: an unknown site is a 404, not an empty file.
    let currency = st.cx.read(move |c| Ok(sites::get(c, &sid)?.currency)).await?;
    let mut head = String::new();
    writer::header(&mut head, &COLUMNS);
    let (cx, page, from, to) = (st.cx.clone(), st.cx.config.leads_csv_page as i64, q.from, q.to);
    // The state: the header still to send, then the position after the last row sent.
    let start: (Option<String>, Option<(i64, String)>, bool) = (Some(head), None, false);
    let body = paged_body::paged(start, move |(head, before, done)| {
        let (cx, site, currency, conditions) = (cx.clone(), site_id.clone(), currency.clone(), conditions.clone());
        async move {
            if let Some(head) = head {
                return Ok(Some((Bytes::from(head), (None, before, false))));
            }
            if done {
                return Ok(None);
            }
            let after = before.clone();
            let leads = cx.read(move |c| reads::export_page(c, &site, from, to, after, page, &conditions)).await?;
            if leads.is_empty() {
                return Ok(None);
            }
            let mut out = String::with_capacity(leads.len() * 160);
            for l in &leads {
                lead_record(&mut out, l, &currency, tz);
            }
            let last = leads.last().map(|l| (l.first_at, l.lead_id.clone()));
            let done = (leads.len() as i64) < page;
            Ok(Some((Bytes::from(out), (None, last, done))))
        }
    });
    Ok(HttpResponse::Ok().content_type(CONTENT_TYPE).insert_header(attachment("leads.csv")).streaming(body))
}
