//! Conditions on a lead's columns as SQL (the reports' filters, REPORTING §3):
//! `IN` / `NOT IN` the values, or `LIKE` any of them (case-insensitive for
//! ASCII letters on both backends), each condition a ` AND (…)` of its own. A
//! missing value (no column, no campaign) compares as the empty text.

use crate::db::sql::{RawQuery, placeholders};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadColumn {
    Origin,
    CampaignId,
    AdsetId,
    AdId,
    Stage,
    ColumnKey,
}

impl LeadColumn {
    fn sql(self) -> &'static str {
        match self {
            LeadColumn::Origin => "origin",
            LeadColumn::CampaignId => "campaign_id",
            LeadColumn::AdsetId => "adset_id",
            LeadColumn::AdId => "ad_id",
            LeadColumn::Stage => "stage",
            LeadColumn::ColumnKey => "column_key",
        }
    }

    /// The column is also a key of `lead_rollups` (else only the leads hold it).
    pub fn in_rollups(self) -> bool {
        !matches!(self, LeadColumn::Stage | LeadColumn::ColumnKey)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    Is,
    IsNot,
    Contains,
    NotContains,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub column: LeadColumn,
    pub how: Match,
    pub values: Vec<String>,
}

/// `%value%` for `LIKE … ESCAPE '\'`, lowercased (ASCII), its wildcards escaped.
fn pattern(v: &str) -> String {
    let mut p = String::with_capacity(v.len() + 2);
    p.push('%');
    for c in v.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c.to_ascii_lowercase());
    }
    p.push('%');
    p
}

/// Appends ` AND (…)` for each condition.
pub fn push(q: &mut RawQuery, conditions: &[Condition]) {
    for c in conditions {
        let col = format!("COALESCE({}, '')", c.column.sql());
        match c.how {
            Match::Is | Match::IsNot => {
                let not = if c.how == Match::IsNot { "NOT " } else { "" };
                q.push(&format!(" AND {col} {not}IN {}", placeholders(c.values.len()))).texts(&c.values);
            }
            Match::Contains | Match::NotContains => {
                let not = if c.how == Match::NotContains { "NOT " } else { "" };
                let any = vec![format!("LOWER({col}) LIKE ? ESCAPE '\\'"); c.values.len()].join(" OR ");
                q.push(&format!(" AND {not}({any})"));
                for v in &c.values {
                    q.text(pattern(v));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_the_wildcards() {
        assert_eq!(pattern("Black_50%"), "%black\\_50\\%%");
    }
}
