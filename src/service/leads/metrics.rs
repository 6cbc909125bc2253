//! Derived metrics, computed one way for every reader (METRIC-01, METRIC-02: `rowMetrics`,
//! `returnBand`, `formatReturn`, `formatMoney`). rastrod stores totals and never
//! a ratio; these pure, null-safe helpers derive the ratios from a row the
//! spend bought (an ad, ad set or campaign row, the `ctwa_ad` origin, or a
//! site's `paid`), never with `currencyMismatch`.

use serde::Serialize;
use utoipa::ToSchema;

/// The counters a ratio is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowCounts {
    pub leads: i64,
    pub qualified: i64,
    pub won: i64,
    pub revenue_cents: i64,
    pub spend_cents: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RowMetrics {
    pub cost_per_lead_cents: Option<i64>,
    pub cost_per_qualified_cents: Option<i64>,
    pub cost_per_sale_cents: Option<i64>,
    pub return_on_spend: Option<f64>,
}

fn cost(spend: Option<i64>, count: i64) -> Option<i64> {
    let spend = spend?;
    // Rounded half up to whole cents.
    (count > 0).then(|| (spend * 2 + count) / (count * 2))
}

/// Without spend every figure is null; a count of zero gives a null cost; a
/// spend of zero gives a null return.
pub fn row_metrics(r: RowCounts) -> RowMetrics {
    RowMetrics {
        cost_per_lead_cents: cost(r.spend_cents, r.leads),
        cost_per_qualified_cents: cost(r.spend_cents, r.qualified),
        cost_per_sale_cents: cost(r.spend_cents, r.won),
        return_on_spend: r.spend_cents.filter(|s| *s > 0).map(|s| r.revenue_cents as f64 / s as f64),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReturnBand {
    Strong,
    Ok,
    Weak,
}

/// `strong` from 8x, `ok` from 4x, else `weak`; null for an unknown return.
pub fn return_band(r: Option<f64>) -> Option<ReturnBand> {
    let r = r?;
    Some(if r >= 8.0 {
        ReturnBand::Strong
    } else if r >= 4.0 {
        ReturnBand::Ok
    } else {
        ReturnBand::Weak
    })
}

/// `9,3x` (one decimal, pt-BR comma) or an em dash for an unknown return.
pub fn format_return(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() => format!("{:.1}x", r).replace('.', ","),
        _ => "—".to_string(),
    }
}

/// What Meta delivered for a row's spend: impressions and clicks as counts,
/// and their ratios written out (click-through rate, cost per click, cost
/// per thousand impressions); an em dash where a count is zero or unknown.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub impressions: String,
    pub clicks: String,
    pub ctr: String,
    pub cpc: String,
    pub cpm: String,
}

/// An integer with pt-BR thousands (`12.345`), or an em dash for unknown.
pub fn format_count(n: Option<i64>) -> String {
    let Some(n) = n else { return "—".to_string() };
    let digits = n.unsigned_abs().to_string();
    let mut out = String::from(if n < 0 { "-" } else { "" });
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push('.');
        }
        out.push(ch);
    }
    out
}

/// A row's delivery from its impressions, clicks and spend (in `currency`).
pub fn delivery(impressions: Option<i64>, clicks: Option<i64>, spend_cents: Option<i64>, currency: &str) -> Delivery {
    let positive = |n: Option<i64>| n.filter(|n| *n > 0);
    let ctr = positive(impressions).zip(clicks).map(|(i, c)| c as f64 / i as f64);
    // Costs rounded half up to the cent, as the other costs are.
    let per =
        |count: Option<i64>, scale: i64| positive(count).zip(spend_cents).map(|(n, s)| (2 * s * scale + n) / (2 * n));
    Delivery {
        impressions: format_count(impressions),
        clicks: format_count(clicks),
        ctr: ctr.map_or_else(|| "—".to_string(), |r| format!("{:.2}%", r * 100.0).replace('.', ",")),
        cpc: format_money(per(clicks, 1), currency),
        cpm: format_money(per(impressions, 1000), currency),
    }
}

/// `R$ 1.234,56` for BRL cents (other currencies by their code); an em dash for
/// an unknown amount, never `R$ 0`.
pub fn format_money(cents: Option<i64>, currency: &str) -> String {
    let Some(cents) = cents else { return "—".to_string() };
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    let (units, frac) = (abs / 100, abs % 100);
    let digits = units.to_string();
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push('.');
        }
        grouped.push(ch);
    }
    let symbol = match currency {
        "BRL" => "R$",
        "USD" => "US$",
        "EUR" => "€",
        other => other,
    };
    format!("{sign}{symbol} {grouped},{frac:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_is_written_out_and_null_safe() {
        let d = delivery(Some(125_000), Some(2_500), Some(50_000), "BRL");
        assert_eq!((d.impressions.as_str(), d.clicks.as_str()), ("125.000", "2.500"));
        assert_eq!(d.ctr, "2,00%");
        assert_eq!(d.cpc, "R$ 0,20");
        assert_eq!(d.cpm, "R$ 4,00");
        let none = delivery(Some(0), Some(0), None, "BRL");
        assert_eq!((none.ctr.as_str(), none.cpc.as_str(), none.cpm.as_str()), ("—", "—", "—"));
        assert_eq!(delivery(None, None, Some(10), "BRL").impressions, "—");
    }

    // rule: METRIC-01
    #[test]
    fn row_metrics_are_null_safe() {
        let none =
            row_metrics(RowCounts { leads: 10, qualified: 5, won: 2, revenue_cents: 100_000, spend_cents: None });
        assert_eq!(
            none,
            RowMetrics {
                cost_per_lead_cents: None,
                cost_per_qualified_cents: None,
                cost_per_sale_cents: None,
                return_on_spend: None
            }
        );
        let m =
            row_metrics(RowCounts { leads: 3, qualified: 0, won: 2, revenue_cents: 93_000, spend_cents: Some(10_000) });
        assert_eq!(m.cost_per_lead_cents, Some(3_333));
        assert_eq!(m.cost_per_qualified_cents, None, "a count of zero gives a null cost");
        assert_eq!(m.cost_per_sale_cents, Some(5_000));
        assert_eq!(m.return_on_spend, Some(9.3));
        let free = row_metrics(RowCounts { leads: 3, qualified: 1, won: 1, revenue_cents: 500, spend_cents: Some(0) });
        assert_eq!((free.return_on_spend, free.cost_per_lead_cents), (None, Some(0)), "zero spend: null return");
    }

    // rule: METRIC-02
    #[test]
    fn bands_and_formats() {
        assert_eq!(return_band(Some(8.0)), Some(ReturnBand::Strong));
        assert_eq!(return_band(Some(7.99)), Some(ReturnBand::Ok));
        assert_eq!(return_band(Some(4.0)), Some(ReturnBand::Ok));
        assert_eq!(return_band(Some(3.9)), Some(ReturnBand::Weak));
        assert_eq!(return_band(None), None);
        assert_eq!(format_return(Some(9.3)), "9,3x");
        assert_eq!(format_return(None), "—");
        assert_eq!(format_money(Some(123_456), "BRL"), "R$ 1.234,56");
        assert_eq!(format_money(Some(5), "BRL"), "R$ 0,05");
        assert_eq!(format_money(None, "BRL"), "—");
        assert_ne!(format_money(None, "BRL"), "R$ 0,00");
    }

    // rule: METRIC-03
    #[test]
    fn costs_come_from_what_the_spend_bought() {
        // A site's own counters include organic leads, which cost nothing: the
        // paid counters give the honest cost per lead.
        let spend = Some(30_000);
        let site_all = row_metrics(RowCounts { leads: 30, qualified: 0, won: 0, revenue_cents: 0, spend_cents: spend });
        let paid = row_metrics(RowCounts { leads: 10, qualified: 0, won: 0, revenue_cents: 0, spend_cents: spend });
        assert_eq!(paid.cost_per_lead_cents, Some(3_000));
        assert!(site_all.cost_per_lead_cents < paid.cost_per_lead_cents, "the totals would flatter the ads");
    }
}
