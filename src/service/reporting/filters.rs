//! `filters` (REPORTING §3): `[{dim, op, values}]`, at most 10, all of them
//! must hold (AND); within one, any of its 1–20 values (OR). Checked once
//! here; each report says which dimensions it takes, and an unknown
//! dimension or operator, or one the report does not take, is
//! `INVALID_ARGUMENT` naming the argument (never echoing the value).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum Op {
    Is,
    IsNot,
    Contains,
    NotContains,
}

impl Op {
    /// The operator keeps the rows that match none of the values.
    pub fn negated(self) -> bool {
        matches!(self, Op::IsNot | Op::NotContains)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// The dimension: `origin`, `campaign`, `adSet`, `ad`, `stage`, `column`, `channel` for the leads.
    pub dim: String,
    pub op: Op,
    /// 1–20 values, each 1–256 characters; the filter holds when any matches.
    pub values: Vec<String>,
}

pub const MAX_FILTERS: usize = 10;
pub const MAX_VALUES: usize = 20;
const MAX_VALUE_LEN: usize = 256;

/// The leads' dimensions (`leadsReport`, `leadsDaily`, `listLeads`, `leads.csv`).
pub const LEAD_DIMENSIONS: [&str; 7] = ["origin", "campaign", "adSet", "ad", "stage", "column", "channel"];

/// Checks `filters` against the dimensions a report takes.
pub fn check(filters: &[Filter], dimensions: &[&str]) -> Result<()> {
    if filters.len() > MAX_FILTERS {
        return Err(Error::invalid(format!("filters may hold at most {MAX_FILTERS} filters")));
    }
    for f in filters {
        if !dimensions.contains(&f.dim.as_str()) {
            return Err(Error::invalid(format!(
                "filters: a dimension this report does not take (it takes {})",
                dimensions.join(", ")
            )));
        }
        if f.values.is_empty() || f.values.len() > MAX_VALUES {
            return Err(Error::invalid(format!("filters: each filter takes 1-{MAX_VALUES} values")));
        }
        if f.values.iter().any(|v| v.is_empty() || v.chars().count() > MAX_VALUE_LEN || v.chars().any(char::is_control))
        {
            return Err(Error::invalid(format!(
                "filters: each value is 1-{MAX_VALUE_LEN} characters without control characters"
            )));
        }
    }
    Ok(())
}

/// Whether `value` (null as the empty text) passes `f`.
pub fn matches(f: &Filter, value: Option<&str>) -> bool {
    let v = value.unwrap_or("");
    let any = match f.op {
        Op::Is | Op::IsNot => f.values.iter().any(|x| x == v),
        Op::Contains | Op::NotContains => f.values.iter().any(|x| v.to_lowercase().contains(&x.to_lowercase())),
    };
    any != f.op.negated()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(dim: &str, op: Op, values: &[&str]) -> Filter {
        Filter { dim: dim.into(), op, values: values.iter().map(|v| v.to_string()).collect() }
    }

    // rule: REP-08
    #[test]
    fn filters_are_checked_without_echoing_and_match_as_said() {
        assert!(check(&[f("origin", Op::Is, &["ctwa_ad"])], &LEAD_DIMENSIONS).is_ok());
        let e = check(&[f("secret-dim", Op::Is, &["x"])], &LEAD_DIMENSIONS).unwrap_err();
        assert!(!e.message.contains("secret-dim"), "{}", e.message);
        assert!(check(&[f("origin", Op::Is, &[])], &LEAD_DIMENSIONS).is_err());
        assert!(check(&vec![f("origin", Op::Is, &["a"]); 11], &LEAD_DIMENSIONS).is_err());
        assert!(matches(&f("stage", Op::Is, &["won", "qualified"]), Some("won")));
        assert!(!matches(&f("stage", Op::IsNot, &["won"]), Some("won")));
        assert!(matches(&f("column", Op::IsNot, &["fechado"]), None));
        assert!(matches(&f("campaign", Op::Contains, &["black"]), Some("Black Friday")));
        assert!(matches(&f("campaign", Op::NotContains, &["black"]), Some("Natal")));
    }
}
