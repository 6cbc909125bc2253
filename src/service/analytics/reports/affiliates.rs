//! `affiliatesReport` (rule ARPT-16): the current
//! affiliates by slug with their tagged sessions started in the range and
//! their attributed conversions in it, from the per-day affiliate counters;
//! conversions of removed affiliates go to `unlisted`, which `totals` include.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::rollup::buckets::DAY_MS;
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::conversions as store;
use crate::store::analytics::definitions as defs_store;

const REPORT_MAX_DAYS: i64 = 366;

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AffiliatesArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
}

/// Complete UTC days (rule ARPT-02).
pub fn check_days(from: i64, to: i64, max_days: i64) -> Result<()> {
    validate::range(from, to, max_days)?;
    if from.rem_euclid(DAY_MS) != 0 || (to + 1).rem_euclid(DAY_MS) != 0 {
        return Err(Error::invalid("from and to must bound complete UTC days (00:00:00.000 to 23:59:59.999)"));
    }
    Ok(())
}

pub fn affiliates_report(conn: &mut AnyConnection, a: AffiliatesArgs) -> Result<Value> {
    check_days(a.from, a.to, REPORT_MAX_DAYS)?;
    let site = sites::get(conn, &a.site_id)?;
    let mut current = defs_store::affiliates(conn, &a.site_id, false).map_err(db)?;
    current.sort_by(|x, y| x.slug.cmp(&y.slug));
    let sums = store::affiliate_sums(conn, &a.site_id, a.from, a.to + 1).map_err(db)?;
    let mut totals = store::AffiliateSum {
        affiliate_id: String::new(),
        sessions: 0,
        conversions: 0,
        revenue_cents: 0,
        commission_cents: 0,
    };
    let mut unlisted = (0, 0, 0);
    for s in &sums {
        totals.sessions += s.sessions;
        totals.conversions += s.conversions;
        totals.revenue_cents += s.revenue_cents;
        totals.commission_cents += s.commission_cents;
        if !current.iter().any(|c| c.id == s.affiliate_id) {
            unlisted.0 += s.conversions;
            unlisted.1 += s.revenue_cents;
            unlisted.2 += s.commission_cents;
        }
    }
    let rows: Vec<Value> = current
        .iter()
        .map(|c| {
            let s = sums.iter().find(|s| s.affiliate_id == c.id);
            let get = |f: fn(&store::AffiliateSum) -> i64| s.map_or(0, f);
            json!({
                "affiliateId": c.id, "slug": c.slug, "name": c.name, "commissionBps": c.commission_bps,
                "windowDays": c.window_days, "sessions": get(|s| s.sessions), "conversions": get(|s| s.conversions),
                "revenueCents": get(|s| s.revenue_cents), "commissionCents": get(|s| s.commission_cents),
            })
        })
        .collect();
    Ok(json!({
        "siteId": a.site_id, "from": a.from, "to": a.to, "currency": site.currency,
        "affiliates": rows,
        "unlisted": {"conversions": unlisted.0, "revenueCents": unlisted.1, "commissionCents": unlisted.2},
        "totals": {"sessions": totals.sessions, "conversions": totals.conversions,
            "revenueCents": totals.revenue_cents, "commissionCents": totals.commission_cents},
    }))
}
