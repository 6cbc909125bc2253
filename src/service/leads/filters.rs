//! The leads' dimensions of the reports' filters (REPORTING §3, rule REP-08)
//! as conditions on the leads' columns: `origin`, `campaign`, `adSet` and
//! `ad` (ids), `stage` (the lead's stage now), `column` (its board column now)
//! and `channel` (`whatsapp` or `form`, which the origin decides).

use super::Channel;
use crate::error::Result;
use crate::service::reporting::filters::{self, Filter, LEAD_DIMENSIONS, Op};
use crate::store::leads::conditions::{Condition, LeadColumn, Match};

fn how(op: Op) -> Match {
    match op {
        Op::Is => Match::Is,
        Op::IsNot => Match::IsNot,
        Op::Contains => Match::Contains,
        Op::NotContains => Match::NotContains,
    }
}

/// The conditions of `filters`, checked (INVALID_ARGUMENT for a dimension that is not the leads').
pub fn conditions(list: &[Filter]) -> Result<Vec<Condition>> {
    filters::check(list, &LEAD_DIMENSIONS)?;
    Ok(list.iter().map(condition).collect())
}

fn condition(f: &Filter) -> Condition {
    let column = match f.dim.as_str() {
        "origin" => LeadColumn::Origin,
        "campaign" => LeadColumn::CampaignId,
        "adSet" => LeadColumn::AdsetId,
        "ad" => LeadColumn::AdId,
        "stage" => LeadColumn::Stage,
        "column" => LeadColumn::ColumnKey,
        // `channel`: the channels the filter keeps, as the origins that make them.
        _ => return channel(f),
    };
    Condition { column, how: how(f.op), values: f.values.clone() }
}

fn channel(f: &Filter) -> Condition {
    let form_origins: Vec<String> = Channel::FORM_ORIGINS.iter().map(|o| o.to_string()).collect();
    let (form, whatsapp) = (filters::matches(f, Some("form")), filters::matches(f, Some("whatsapp")));
    let (how, values) = match (form, whatsapp) {
        (true, false) => (Match::Is, form_origins),
        (false, true) => (Match::IsNot, form_origins),
        // Both kept: a condition every lead meets (an origin is never empty).
        (true, true) => (Match::IsNot, vec![String::new()]),
        (false, false) => (Match::Is, vec![String::new()]),
    };
    Condition { column: LeadColumn::Origin, how, values }
}
