//! `metaFormsReport` (LA-18): per form of the site, its leads counted by
//! cohort as `leadsReport` counts them (first seen in the range, with the
//! outcomes they reached since), the spend in the range of the ads that
//! brought leads through the form, and the ratios of what that spend bought
//! (its `lead_form` leads), derived as every report derives them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::leads::metrics::{RowCounts, RowMetrics, row_metrics};
use crate::service::leads::reports::{Caps, PAID_ORIGINS, REPORT_MAX_DAYS};
use crate::service::reporting::compare::{self, Changes, Compare};
use crate::service::reporting::timezone::{self, Zone};
use crate::service::{sites, validate};
use crate::store::meta::lead_ads as store;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FormsReportArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    /// Each form beside its figures over an earlier range (REPORTING §2).
    #[serde(default)]
    pub compare: Option<Compare>,
    /// Days of this IANA zone, or `"site"`: the limit counts them and the
    /// spend is read for their dates (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
}

/// A form's figures, as compared between two ranges.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FormFigures {
    pub leads: i64,
    pub qualified: i64,
    pub won: i64,
    pub revenue_cents: i64,
    pub paid_leads: i64,
    pub spend_cents: Option<i64>,
}

/// The earlier range of a comparison.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FormsComparison {
    pub from: i64,
    pub to: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FormReportRow {
    pub form_id: String,
    pub page_id: String,
    pub name: String,
    /// Every lead of the form (paid and organic) in the cohort.
    pub leads: i64,
    pub qualified: i64,
    pub won: i64,
    pub revenue_cents: i64,
    /// The form's leads an ad paid for (`lead_form`).
    pub paid_leads: i64,
    /// Spend in the range of the ads that brought the form's leads; null while unknown (no synced ad account).
    pub spend_cents: Option<i64>,
    /// Ratios of the paid leads over the spend (null without spend).
    #[serde(flatten)]
    pub metrics: RowMetrics,
    /// With `compare`: the form's figures over the earlier range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<FormFigures>,
    /// With `compare`: each figure's change against the earlier range, as a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
}

impl FormReportRow {
    fn figures(&self) -> FormFigures {
        FormFigures {
            leads: self.leads,
            qualified: self.qualified,
            won: self.won,
            revenue_cents: self.revenue_cents,
            paid_leads: self.paid_leads,
            spend_cents: self.spend_cents,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FormsReport {
    pub site_id: String,
    pub currency: String,
    /// The spend's currency (the ad account's), when known.
    pub spend_currency: Option<String>,
    pub forms: Vec<FormReportRow>,
    /// With `timezone`: the zone whose days the range and the spend are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// With `compare`: the earlier range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<FormsComparison>,
}

pub fn check(a: &FormsReportArgs) -> Result<()> {
    validate::text("siteId", &a.site_id, 1, 64)?;
    validate::range(a.from, a.to, REPORT_MAX_DAYS + i64::from(a.timezone.is_some()))
}

pub fn forms_report(conn: &mut AnyConnection, a: &FormsReportArgs, caps: Caps) -> Result<FormsReport> {
    check(a)?;
    let zone = match a.timezone.as_deref() {
        None => None,
        Some(arg) => {
            let site = sites::require(conn, &a.site_id)?;
            timezone::checked_span(Some(arg), &[&site.timezone], (a.from, a.to), REPORT_MAX_DAYS)?
        }
    };
    let mut main = over(conn, a, (a.from, a.to), zone, caps)?;
    if let Some(compare) = a.compare {
        let (from, to) = compare.range_in(zone, a.from, a.to)?;
        let earlier = over(conn, a, (from, to), zone, caps)?;
        for row in &mut main.forms {
            let then = earlier.forms.iter().find(|f| f.form_id == row.form_id).map(FormReportRow::figures);
            // A form with no row then (listed since) compares against zeros, its spend unknown.
            let then = then.unwrap_or(FormFigures {
                leads: 0,
                qualified: 0,
                won: 0,
                revenue_cents: 0,
                paid_leads: 0,
                spend_cents: None,
            });
            row.change = Some(compare::changes_of(&row.figures(), &then));
            row.comparison = Some(then);
        }
        main.comparison = Some(FormsComparison { from, to });
    }
    Ok(main)
}

/// The report over `[from, to]`.
fn over(
    conn: &mut AnyConnection,
    a: &FormsReportArgs,
    (from, to): (i64, i64),
    zone: Option<Zone>,
    caps: Caps,
) -> Result<FormsReport> {
    let site = sites::require(conn, &a.site_id)?;
    let forms = store::forms_of_site(conn, &a.site_id)?;
    let cohorts = store::form_cohorts(conn, &a.site_id, from, to, PAID_ORIGINS[1])?;
    let ads = store::form_ads(conn, &a.site_id)?;
    let spend = crate::service::meta::spend::for_report(
        conn,
        std::slice::from_ref(&site),
        (from, to),
        zone,
        caps.spend_ad_rows,
        caps.spend_day_rows,
    )?;
    let covered = spend.sites.get(&a.site_id).is_some_and(|s| s.covered) && !spend.tree_incomplete;
    let rows = forms
        .into_iter()
        .map(|f| {
            let c = cohorts.iter().find(|c| c.form_id == f.form_id);
            let spend_cents = covered.then(|| {
                ads.iter()
                    .filter(|x| x.form_id == f.form_id)
                    .filter_map(|x| spend.ads.get(&(a.site_id.clone(), x.ad_id.clone())))
                    .map(|(amount, _, _)| amount.spend_cents)
                    .sum::<i64>()
            });
            let paid = RowCounts {
                leads: c.map_or(0, |c| c.paid_leads),
                qualified: c.map_or(0, |c| c.paid_qualified),
                won: c.map_or(0, |c| c.paid_won),
                revenue_cents: c.map_or(0, |c| c.paid_revenue_cents),
                spend_cents,
            };
            FormReportRow {
                form_id: f.form_id,
                page_id: f.page_id,
                name: f.name,
                leads: c.map_or(0, |c| c.leads),
                qualified: c.map_or(0, |c| c.qualified),
                won: c.map_or(0, |c| c.won),
                revenue_cents: c.map_or(0, |c| c.revenue_cents),
                paid_leads: paid.leads,
                spend_cents,
                metrics: row_metrics(paid),
                comparison: None,
                change: None,
            }
        })
        .collect();
    Ok(FormsReport {
        site_id: a.site_id.clone(),
        currency: site.currency,
        spend_currency: if covered { spend.currency.clone() } else { None },
        forms: rows,
        timezone: zone.map(|z| z.name().to_string()),
        comparison: None,
    })
}
