//! `affiliatesReport` (rule ARPT-16): the current
//! affiliates by slug with their tagged sessions started in the range and
//! their attributed conversions in it, from the per-day affiliate counters;
//! conversions of removed affiliates go to `unlisted`, which `totals` include.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::DAY_MS;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::{approximate, zone};
use crate::service::reporting::timezone;
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::conversions as store;
use crate::store::analytics::definitions as defs_store;

const REPORT_MAX_DAYS: i64 = 366;

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AffiliatesArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    /// Whole local days of this IANA zone, or `"site"` (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
}

/// Complete UTC days (rule ARPT-02).
pub fn check_days(from: i64, to: i64, max_days: i64) -> Result<()> {
    validate::range(from, to, max_days)?;
    if from.rem_euclid(DAY_MS) != 0 || (to + 1).rem_euclid(DAY_MS) != 0 {
        return Err(Error::invalid("from and to must bound complete UTC days (00:00:00.000 to 23:59:59.999)"));
    }
    Ok(())
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffiliateRow {
    pub affiliate_id: String,
    pub slug: String,
    pub name: String,
    pub commission_bps: i64,
    pub window_days: i64,
    pub sessions: i64,
    pub conversions: i64,
    pub revenue_cents: i64,
    pub commission_cents: i64,
}

/// Conversions of affiliates removed since.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Unlisted {
    pub conversions: i64,
    pub revenue_cents: i64,
    pub commission_cents: i64,
}

#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffiliateTotals {
    pub sessions: i64,
    pub conversions: i64,
    pub revenue_cents: i64,
    pub commission_cents: i64,
}

/// The `affiliatesReport` answer (rule ARPT-16).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffiliatesReport {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    pub currency: String,
    pub affiliates: Vec<AffiliateRow>,
    pub unlisted: Unlisted,
    /// Every affiliate's, the unlisted included.
    pub totals: AffiliateTotals,
    /// With `timezone`: the zone whose days the range is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The days whose figures read rows retention has deleted (REPORTING §1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate_days: Option<Vec<i64>>,
}

pub fn affiliates_report(conn: &mut AnyConnection, a: AffiliatesArgs) -> Result<AffiliatesReport> {
    let zone = zone::of_site(conn, &a.site_id, a.timezone.as_deref(), (a.from, a.to), REPORT_MAX_DAYS, || {
        check_days(a.from, a.to, REPORT_MAX_DAYS)
    })?;
    let site = sites::get(conn, &a.site_id)?;
    let mut current = defs_store::affiliates(conn, &a.site_id, false).map_err(db)?;
    current.sort_by(|x, y| x.slug.cmp(&y.slug));
    let read = approximate::rows_read(zone, false, (a.from, a.to));
    let approximate_days = approximate::days(conn, std::slice::from_ref(&a.site_id), zone, (a.from, a.to), &read)?;
    let sums = match zone {
        None => store::affiliate_sums(conn, &a.site_id, a.from, a.to + 1).map_err(db)?,
        Some(_) => sums_of_any_range(conn, &a.site_id, a.from, a.to)?,
    };
    let mut totals = AffiliateTotals::default();
    let mut unlisted = Unlisted::default();
    for s in &sums {
        totals.sessions += s.sessions;
        totals.conversions += s.conversions;
        totals.revenue_cents += s.revenue_cents;
        totals.commission_cents += s.commission_cents;
        if !current.iter().any(|c| c.id == s.affiliate_id) {
            unlisted.conversions += s.conversions;
            unlisted.revenue_cents += s.revenue_cents;
            unlisted.commission_cents += s.commission_cents;
        }
    }
    let rows = current
        .iter()
        .map(|c| {
            let s = sums.iter().find(|s| s.affiliate_id == c.id);
            let get = |f: fn(&store::AffiliateSum) -> i64| s.map_or(0, f);
            AffiliateRow {
                affiliate_id: c.id.clone(),
                slug: c.slug.clone(),
                name: c.name.clone(),
                commission_bps: c.commission_bps,
                window_days: c.window_days,
                sessions: get(|s| s.sessions),
                conversions: get(|s| s.conversions),
                revenue_cents: get(|s| s.revenue_cents),
                commission_cents: get(|s| s.commission_cents),
            }
        })
        .collect();
    Ok(AffiliatesReport {
        site_id: a.site_id,
        from: a.from,
        to: a.to,
        currency: site.currency,
        affiliates: rows,
        unlisted,
        totals,
        timezone: zone.map(|z| z.name().to_string()),
        approximate_days,
    })
}

/// The affiliates' sums of `[from, to]` for local days: the day counters of
/// the whole UTC days inside, the rows of the hours around them.
fn sums_of_any_range(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> Result<Vec<store::AffiliateSum>> {
    let (days, edges) = timezone::utc_days_inside(from, to);
    let mut parts = Vec::new();
    if let Some((start, end)) = days {
        parts.extend(store::affiliate_sums(conn, site_id, start, end).map_err(db)?);
    }
    for (a, b) in edges {
        parts.extend(store::affiliate_sums_of_rows(conn, site_id, a, b + 1).map_err(db)?);
    }
    let mut by_id: std::collections::BTreeMap<String, store::AffiliateSum> = std::collections::BTreeMap::new();
    for p in parts {
        let e = by_id.entry(p.affiliate_id.clone()).or_insert(store::AffiliateSum {
            affiliate_id: p.affiliate_id.clone(),
            sessions: 0,
            conversions: 0,
            revenue_cents: 0,
            commission_cents: 0,
        });
        e.sessions += p.sessions;
        e.conversions += p.conversions;
        e.revenue_cents += p.revenue_cents;
        e.commission_cents += p.commission_cents;
    }
    Ok(by_id.into_values().collect())
}
