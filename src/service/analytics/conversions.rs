//! The trusted conversion ledger (CONV-01 to CONV-07): recorded only by the
//! host, idempotent by `(siteId, conversionKey)`, attributed to a session
//! (last touch) and an affiliate (last tagged session in its window) with the
//! commission frozen on the row; and its reads, `listConversions` and
//! `revenueSummary` (§5.3).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::clock::DAY_MS;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::ids;
use crate::service::analytics::ingest::batch;
use crate::service::analytics::reports::pages::{self, Call, Page, PaginationOpts};
use crate::service::analytics::reports::session_extras::AffiliateRef;
use crate::service::analytics::reports::span::{self, Piece};
use crate::service::analytics::rollup::buckets::bucket;
use crate::service::analytics::vocabulary::{Dimension, Tier};
use crate::service::effects::{Effects, Written};
use crate::service::meta::conversions as meta_conversions;
use crate::service::reporting::compare::{self, Changes, Compare};
use crate::service::reporting::timezone;
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::conversions::{self as store, AffiliateDay, ConversionRow, Money};
use crate::store::analytics::definitions as defs_store;
use crate::store::analytics::people as people_store;
use crate::store::analytics::{self as analytics_store};

pub const MAX_LIST_CONVERSIONS: i64 = 100;
const REPORT_MAX_DAYS: i64 = 366;
/// How far back a conversion may be, before its site's creation.
const BEFORE_SITE_MS: i64 = 400 * DAY_MS;
/// How far ahead of the server clock a conversion may be.
const AHEAD_MS: i64 = 300_000;

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

/// `POST /v1/sites/{siteId}/analytics/conversions` (§4.2).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordConversion {
    /// 1–128 characters: the idempotency key, never returned.
    pub conversion_key: String,
    /// Epoch ms: at most 400 days before the site's creation, 300,000 ms after the server clock.
    pub occurred_at: i64,
    /// 1–120 characters.
    pub name: String,
    /// 0–10^13, in the site's currency.
    pub value_cents: i64,
    pub visitor_id: Option<String>,
    pub session_id: Option<String>,
    /// As tracker properties (≤ 30 keys of 1–64 chars → string ≤ 256, finite number, boolean).
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Value>,
}

/// `{conversionId, created}`.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    pub conversion_id: String,
    pub created: bool,
}

/// Rule CONV-06 (the parts that need no site).
pub fn check(a: &RecordConversion) -> Result<Option<Map<String, Value>>> {
    validate::text("conversionKey", &a.conversion_key, 1, 128)?;
    validate::text("name", &a.name, 1, 120)?;
    validate::cents("valueCents", a.value_cents)?;
    validate::time("occurredAt", a.occurred_at)?;
    if let Some(v) = &a.visitor_id {
        validate::text("visitorId", v, 1, 64)?;
    }
    if let Some(s) = &a.session_id {
        validate::text("sessionId", s, 1, 64)?;
    }
    batch::properties(a.properties.as_ref(), true)
}

/// Records a conversion (rules CONV-01 to CONV-07), in one transaction with
/// its effects on the session, the counters and the affiliate's day.
/// [`record`] with what it changed: live rows carry the session's
/// conversions and revenue, so a new one drops the site's live state.
pub fn record_written(
    conn: &mut AnyConnection,
    now: i64,
    site_id: &str,
    a: RecordConversion,
) -> Result<Written<Recorded>> {
    let recorded = record(conn, now, site_id, a)?;
    // A sale sent to the pixel (rule WA-33) wakes its sender.
    let queued = recorded.created
        && crate::store::meta::conversions::find(conn, &meta_conversions::web_event_id(&recorded.conversion_id))?
            .is_some();
    let effects =
        Effects::default().merge(Effects::live(site_id, recorded.created)).merge(Effects::lead_write(site_id, queued));
    Ok(Written::new(recorded, effects))
}

pub fn record(conn: &mut AnyConnection, now: i64, site_id: &str, a: RecordConversion) -> Result<Recorded> {
    let properties = check(&a)?;
    let site = sites::get(conn, site_id)?;
    if a.occurred_at < site.created_at - BEFORE_SITE_MS || a.occurred_at > now + AHEAD_MS {
        return Err(Error::invalid(
            "occurredAt must be at most 400 days before the site's creation and 300000 ms after the server clock",
        ));
    }
    // A repeat changes nothing (rule CONV-02).
    if let Some(existing) = store::by_key(conn, site_id, &a.conversion_key).map_err(db)? {
        return Ok(Recorded { conversion_id: existing.id, created: false });
    }
    let (session, visitor) = attribute(conn, site_id, &a)?;
    let event_id = properties.as_ref().and_then(|p| p.get("eventId")).and_then(Value::as_str).map(str::to_string);
    let (affiliate_id, commission_cents) = match &visitor {
        Some(v) => affiliate_of(conn, site_id, v, a.occurred_at, a.value_cents)?,
        None => (None, 0),
    };
    let row = ConversionRow {
        id: ids::time_ordered("cv_", now)?,
        site_id: site_id.to_string(),
        conversion_key: a.conversion_key,
        name: a.name,
        occurred_at: a.occurred_at,
        value_cents: a.value_cents,
        currency: site.currency,
        visitor_id: visitor,
        session_id: session.as_ref().map(|s| s.id.clone()),
        affiliate_id,
        commission_cents,
        properties: properties.map(|p| Value::Object(p).to_string()),
        created_at: now,
    };
    store::insert(conn, &row).map_err(db)?;
    // A sale of a visit that landed with an fbclid goes to the pixel (rule WA-33).
    if let Some(s) = &session {
        let sale = meta_conversions::WebPurchase {
            site_id,
            conversion_id: &row.id,
            session_id: &s.id,
            at: row.occurred_at,
            value_cents: row.value_cents,
            currency: &row.currency,
            event_id: event_id.as_deref(),
        };
        meta_conversions::enqueue_web_purchase(conn, now, &sale)?;
    }
    // A sale of a visit from a Meta ad counts on the ad's row too (rule WA-20).
    if let Some(s) = &session {
        crate::service::leads::web_visit::count_sale(conn, s, &row.id, row.occurred_at, row.value_cents)?;
    }
    let money = Money { conversions: 1, revenue_cents: row.value_cents, commission_cents: row.commission_cents };
    for &tier in Tier::ALL.iter().filter(|t| t.counted()) {
        store::add_counter(conn, site_id, tier.as_str(), bucket(tier, row.occurred_at), &money).map_err(db)?;
    }
    // Campaign rows count conversions by their session's campaign (§5.3).
    if let Some(campaign) = session.as_ref().and_then(|s| s.campaign.as_deref()) {
        let keyed =
            [(Dimension::CampaignConversions, campaign, 1), (Dimension::CampaignRevenue, campaign, row.value_cents)];
        crate::service::analytics::rollup::add_to_breakdowns(conn, site_id, row.occurred_at, &keyed)?;
    }
    if let Some(s) = &session {
        store::add_to_session(conn, &s.id, row.value_cents).map_err(db)?;
    }
    if let Some(aff) = &row.affiliate_id {
        let add = AffiliateDay { sessions: 0, conversions: 1, revenue_cents: row.value_cents, commission_cents };
        store::add_affiliate_day(conn, site_id, bucket(Tier::Day, row.occurred_at), aff, &add).map_err(db)?;
    }
    Ok(Recorded { conversion_id: row.id, created: true })
}

/// The session and visitor a conversion is attributed to (rules CONV-03, CONV-04).
fn attribute(
    conn: &mut AnyConnection,
    site_id: &str,
    a: &RecordConversion,
) -> Result<(Option<analytics_store::SessionRow>, Option<String>)> {
    if let Some(sid) = &a.session_id {
        // An unknown session, or another site's, leaves it unattributed (rule CONV-03).
        return Ok(match analytics_store::session(conn, sid)? {
            Some(s) if s.site_id == site_id => {
                let visitor = s.visitor_id.clone();
                (Some(s), Some(visitor))
            }
            _ => (None, None),
        });
    }
    let Some(visitor) = &a.visitor_id else { return Ok((None, None)) };
    let ids = person_ids(conn, site_id, visitor)?;
    let latest = store::sessions_of_visitors(conn, site_id, &ids, i64::MIN / 2, a.occurred_at, false, 1).map_err(db)?;
    match latest.into_iter().next() {
        Some(t) => {
            let s = analytics_store::session(conn, &t.id)?;
            Ok((s, Some(t.visitor_id)))
        }
        None => Ok((None, None)),
    }
}

/// The ids one visitor goes by on a site: its identified id and that id's
/// aliases when it is one of them (rule CONV-04), else itself.
fn person_ids(conn: &mut AnyConnection, site_id: &str, visitor: &str) -> Result<Vec<String>> {
    Ok(match people_store::canonical_of(conn, site_id, visitor).map_err(db)? {
        Some(canonical) => people_store::ids_of_person(conn, site_id, &canonical).map_err(db)?,
        None => vec![visitor.to_string()],
    })
}

/// The affiliate of the visitor's latest tagged session within that
/// affiliate's window, existing now; the commission frozen (rule CONV-05).
fn affiliate_of(
    conn: &mut AnyConnection,
    site_id: &str,
    visitor: &str,
    occurred_at: i64,
    value_cents: i64,
) -> Result<(Option<String>, i64)> {
    let ids = person_ids(conn, site_id, visitor)?;
    let earliest = occurred_at - 365 * DAY_MS;
    let tagged = store::sessions_of_visitors(conn, site_id, &ids, earliest, occurred_at, true, 50).map_err(db)?;
    let mut affiliates: HashMap<String, Option<defs_store::AffiliateRow>> = HashMap::new();
    for s in tagged {
        let Some(aid) = s.affiliate_id else { continue };
        let aff = match affiliates.get(&aid) {
            Some(a) => a.clone(),
            None => {
                let a = defs_store::affiliate(conn, &aid).map_err(db)?.filter(|a| a.removed_at.is_none());
                affiliates.insert(aid.clone(), a.clone());
                a
            }
        };
        let Some(aff) = aff else { continue };
        if s.started_at >= occurred_at - aff.window_days * DAY_MS {
            let commission = (i128::from(value_cents) * i128::from(aff.commission_bps) / 10_000) as i64;
            return Ok((Some(aff.id), commission));
        }
    }
    Ok((None, 0))
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListConversionsArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    pub pagination_opts: PaginationOpts,
}

fn affiliate_ref(conn: &mut AnyConnection, id: &str) -> Result<Option<AffiliateRef>> {
    Ok(defs_store::affiliate(conn, id).map_err(db)?.map(|a| AffiliateRef { affiliate_id: a.id, slug: a.slug }))
}

/// A ledger row as readers see it: never its `conversionKey` (rule ARPT-06).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conversion {
    pub conversion_id: String,
    pub name: String,
    pub occurred_at: i64,
    pub value_cents: i64,
    pub currency: String,
    pub visitor_id: Option<String>,
    pub session_id: Option<String>,
    pub affiliate: Option<AffiliateRef>,
    pub commission_cents: i64,
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Map<String, Value>>,
    pub created_at: i64,
}

fn conversion(r: &ConversionRow, affiliate: Option<AffiliateRef>) -> Conversion {
    Conversion {
        conversion_id: r.id.clone(),
        name: r.name.clone(),
        occurred_at: r.occurred_at,
        value_cents: r.value_cents,
        currency: r.currency.clone(),
        visitor_id: r.visitor_id.clone(),
        session_id: r.session_id.clone(),
        affiliate,
        commission_cents: r.commission_cents,
        properties: r.properties.as_deref().and_then(|p| serde_json::from_str(p).ok()),
        created_at: r.created_at,
    }
}

/// `listConversions`: `occurredAt` desc, id desc (rule ARPT-06).
pub fn list(conn: &mut AnyConnection, key: &[u8], a: ListConversionsArgs) -> Result<Page<Conversion>> {
    validate::range(a.from, a.to, REPORT_MAX_DAYS)?;
    let size = a.pagination_opts.check(MAX_LIST_CONVERSIONS)?;
    sites::require(conn, &a.site_id)?;
    let call = Call { function: "listConversions", scope: json!([a.site_id, a.from, a.to]) };
    let from = pages::decode(key, &call, a.pagination_opts.cursor.as_deref())?;
    let before = match &from {
        None => None,
        Some(keys) => match (keys.first().and_then(Value::as_i64), keys.get(1).and_then(Value::as_str)) {
            (Some(t), Some(id)) => Some((t, id.to_string())),
            _ => return Err(Error::invalid("the cursor is not one of this call's")),
        },
    };
    let rows = store::page(conn, &a.site_id, a.from, a.to, before, size + 1).map_err(db)?;
    let mut affiliates: HashMap<String, Option<AffiliateRef>> = HashMap::new();
    for r in &rows {
        if let Some(id) = &r.affiliate_id
            && !affiliates.contains_key(id)
        {
            let v = affiliate_ref(conn, id)?;
            affiliates.insert(id.clone(), v);
        }
    }
    let render = |r: &ConversionRow| {
        let aff = r.affiliate_id.as_ref().and_then(|id| affiliates.get(id)).cloned().flatten();
        conversion(r, aff)
    };
    Ok(pages::answer(key, &call, from, rows, size, |r| vec![json!(r.occurred_at), json!(r.id)], render))
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RevenueArgs {
    pub site_ids: Vec<String>,
    pub from: i64,
    pub to: i64,
    /// The same summary over an earlier range beside this one (REPORTING §2).
    #[serde(default)]
    pub compare: Option<Compare>,
    /// Whole local days of this IANA zone, or `"site"` (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
}

/// One site's ledger over an exact range: whole days and hours from the
/// counters, partial hours from the rows (rule ARPT-14).
pub fn money_between(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> Result<Money> {
    let mut total = Money::default();
    for piece in span::pieces(from, to) {
        let m = match piece {
            Piece::Rows(a, b) => store::sum_between(conn, site_id, a, b),
            Piece::Tier(tier, a, b) => store::counters_between(conn, site_id, tier.as_str(), a, b),
        }
        .map_err(db)?;
        total.add(&m);
    }
    Ok(total)
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteRevenue {
    pub site_id: String,
    pub currency: String,
    pub conversions: i64,
    pub revenue_cents: i64,
    pub commission_cents: i64,
    pub net_revenue_cents: i64,
}

/// The `revenueSummary` answer: money totals null across two currencies.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevenueSummary {
    pub currency: Option<String>,
    pub conversions: i64,
    pub revenue_cents: Option<i64>,
    pub commission_cents: Option<i64>,
    pub net_revenue_cents: Option<i64>,
    pub by_site: Vec<SiteRevenue>,
    /// With `timezone`: the zone whose days the range is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// With `compare`: the earlier range's totals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<RevenueComparison>,
    /// With `compare`: each total's change against the earlier range, as a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
}

/// The totals of `revenueSummary` (what a comparison sets side by side).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevenueTotals {
    pub conversions: i64,
    pub revenue_cents: Option<i64>,
    pub commission_cents: Option<i64>,
    pub net_revenue_cents: Option<i64>,
}

/// The earlier range of a compared `revenueSummary`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevenueComparison {
    pub from: i64,
    pub to: i64,
    pub totals: RevenueTotals,
}

impl RevenueSummary {
    fn totals(&self) -> RevenueTotals {
        RevenueTotals {
            conversions: self.conversions,
            revenue_cents: self.revenue_cents,
            commission_cents: self.commission_cents,
            net_revenue_cents: self.net_revenue_cents,
        }
    }
}

/// `revenueSummary` (rule ARPT-15): per site in request order; across two
/// currencies the money totals are `null`.
pub fn revenue_summary(conn: &mut AnyConnection, a: RevenueArgs) -> Result<RevenueSummary> {
    validate::site_ids(&a.site_ids)?;
    // The ledger is exact to the millisecond (ARPT-14): a zone's days are only a check.
    let zone = match a.timezone.as_deref() {
        None => timezone::checked_range(None, &[], (a.from, a.to), REPORT_MAX_DAYS)?,
        Some(arg) => {
            let rows = sites::require_many(conn, &a.site_ids)?;
            let zones: Vec<&str> = rows.iter().map(|s| s.timezone.as_str()).collect();
            timezone::checked_range(Some(arg), &zones, (a.from, a.to), REPORT_MAX_DAYS)?
        }
    };
    if let Some(compare) = a.compare {
        let (from, to) = compare.range_in(zone, a.from, a.to)?;
        let before = revenue_summary(conn, RevenueArgs { from, to, compare: None, ..a.clone() })?.totals();
        let mut main = revenue_summary(conn, RevenueArgs { compare: None, ..a })?;
        main.change = Some(compare::changes_of(&main.totals(), &before));
        main.comparison = Some(RevenueComparison { from, to, totals: before });
        return Ok(main);
    }
    let rows = sites::require_many(conn, &a.site_ids)?;
    let currency_of: HashMap<String, String> = rows.iter().map(|s| (s.id.clone(), s.currency.clone())).collect();
    let mut total = Money::default();
    let mut by_site = Vec::new();
    let mut currencies: Vec<&str> = Vec::new();
    for id in &a.site_ids {
        let m = money_between(conn, id, a.from, a.to)?;
        total.add(&m);
        let currency = currency_of.get(id).map(String::as_str).unwrap_or("");
        if !currencies.contains(&currency) {
            currencies.push(currency);
        }
        by_site.push(SiteRevenue {
            site_id: id.clone(),
            currency: currency.to_string(),
            conversions: m.conversions,
            revenue_cents: m.revenue_cents,
            commission_cents: m.commission_cents,
            net_revenue_cents: m.revenue_cents - m.commission_cents,
        });
    }
    let single = currencies.len() == 1;
    let money = |v: i64| single.then_some(v);
    Ok(RevenueSummary {
        currency: single.then(|| currencies[0].to_string()),
        conversions: total.conversions,
        revenue_cents: money(total.revenue_cents),
        commission_cents: money(total.commission_cents),
        net_revenue_cents: money(total.revenue_cents - total.commission_cents),
        by_site,
        timezone: zone.map(|z| z.name().to_string()),
        comparison: None,
        change: None,
    })
}
