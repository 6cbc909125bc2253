//! Board columns and the event map: the host declares its columns, an owner
//! picks which Meta event each one sends.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::{DAY_MS, utc_day_start};
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::sites;
use crate::service::validate;
use crate::store::leads::{self as lead_store, board as store, sites as site_store};

pub const MAX_COLUMNS: usize = 40;

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ColumnInput {
    pub key: String,
    /// The pt-BR name the host shows.
    pub name: String,
    pub color: Option<String>,
    pub group: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetPipeline {
    pub columns: Vec<ColumnInput>,
}

/// An event a column can send. `Purchase` never comes from a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum ColumnEvent {
    Lead,
    QualifiedLead,
    Schedule,
}

impl ColumnEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnEvent::Lead => "Lead",
            ColumnEvent::QualifiedLead => "QualifiedLead",
            ColumnEvent::Schedule => "Schedule",
        }
    }
    fn parse(s: &str) -> Option<ColumnEvent> {
        match s {
            "Lead" => Some(ColumnEvent::Lead),
            "QualifiedLead" => Some(ColumnEvent::QualifiedLead),
            "Schedule" => Some(ColumnEvent::Schedule),
            _ => None,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetEventMap {
    /// Every declared column's event (`Lead`, `QualifiedLead`, `Schedule`) or null;
    /// a column left out maps to null.
    #[schema(value_type = Object)]
    pub columns: BTreeMap<String, Option<serde_json::Value>>,
    /// Turns `Lead` on for every new lead; left out, it stays as it is.
    pub send_lead_event: Option<bool>,
    /// Acting for this owner: a site whose pixel another owner set is CONFLICT.
    pub owner_key: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Column {
    pub key: String,
    pub name: String,
    pub color: Option<String>,
    pub group: Option<String>,
    pub event: Option<ColumnEvent>,
    /// Distinct leads that entered the column in the 30 UTC days up to `now`; null without `now`.
    pub month_count: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PurchaseRow {
    /// An enabled pixel sends `Purchase` for every recorded sale.
    pub enabled: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventMap {
    pub columns: Vec<Column>,
    pub send_lead_event: bool,
    pub purchase: PurchaseRow,
}

fn check_color(c: &str) -> Result<()> {
    let hex = c.strip_prefix('#').unwrap_or("");
    if !matches!(hex.len(), 3 | 6 | 8) || !hex.chars().all(|ch| ch.is_ascii_hexdigit()) {
        return Err(Error::invalid("color must be a hex color such as #f97316"));
    }
    Ok(())
}

pub fn check_pipeline(input: &SetPipeline) -> Result<()> {
    if input.columns.len() > MAX_COLUMNS {
        return Err(Error::invalid(format!("a pipeline has at most {MAX_COLUMNS} columns")));
    }
    let mut seen = HashSet::new();
    for c in &input.columns {
        validate::key("columns[].key", &c.key)?;
        if !seen.insert(c.key.as_str()) {
            return Err(Error::invalid("column keys must be unique"));
        }
        validate::text("columns[].name", &c.name, 1, 100)?;
        if let Some(color) = &c.color {
            check_color(color)?;
        }
        validate::opt_text("columns[].group", &c.group, 100)?;
    }
    Ok(())
}

pub fn set_pipeline(conn: &mut AnyConnection, site_id: &str, input: SetPipeline) -> Result<EventMap> {
    check_pipeline(&input)?;
    sites::require(conn, site_id)?;
    // A column that stays keeps its event; one that is gone leaves the map.
    let events: BTreeMap<String, Option<String>> =
        store::list(conn, site_id)?.into_iter().map(|c| (c.key, c.event)).collect();
    let rows: Vec<store::ColumnRow> = input
        .columns
        .into_iter()
        .enumerate()
        .map(|(i, c)| store::ColumnRow {
            site_id: site_id.to_string(),
            event: events.get(&c.key).cloned().flatten(),
            key: c.key,
            position: i as i32,
            name: c.name,
            color: c.color,
            group_name: c.group,
        })
        .collect();
    store::replace(conn, site_id, &rows)?;
    event_map(conn, site_id, None)
}

pub fn set_event_map(conn: &mut AnyConnection, now: i64, site_id: &str, input: SetEventMap) -> Result<EventMap> {
    let mut parsed = BTreeMap::new();
    for (key, value) in &input.columns {
        validate::key("columns key", key)?;
        let event = match value {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) if s == "Purchase" => {
                return Err(Error::invalid("Purchase never comes from a column: it is sent when a sale is recorded"));
            }
            Some(serde_json::Value::String(s)) => Some(
                ColumnEvent::parse(s)
                    .ok_or_else(|| Error::invalid("a column maps to Lead, QualifiedLead, Schedule or null"))?,
            ),
            Some(_) => {
                return Err(Error::invalid("a column maps to Lead, QualifiedLead, Schedule or null"));
            }
        };
        parsed.insert(key.clone(), event);
    }
    if let Some(owner) = &input.owner_key {
        validate::text("ownerKey", owner, 1, 200)?;
    }
    let site = sites::require(conn, site_id)?;
    if let Some(owner) = &input.owner_key {
        crate::service::meta::links::check_event_map_owner(conn, site_id, owner)?;
    }
    let columns = store::list(conn, site_id)?;
    if let Some(unknown) = parsed.keys().find(|k| !columns.iter().any(|c| &c.key == *k)) {
        let _ = unknown;
        return Err(Error::invalid("the event map names a column the pipeline does not declare"));
    }
    for c in &columns {
        let event = parsed.get(&c.key).copied().flatten();
        store::set_event(conn, site_id, &c.key, event.map(ColumnEvent::as_str))?;
    }
    let send_lead_event = input.send_lead_event.unwrap_or(site.send_lead_event);
    site_store::set_send_lead_event(conn, site_id, send_lead_event, now)?;
    event_map(conn, site_id, None)
}

pub fn event_map(conn: &mut AnyConnection, site_id: &str, now: Option<i64>) -> Result<EventMap> {
    if let Some(n) = now {
        validate::time("now", n)?;
    }
    let site = sites::require(conn, site_id)?;
    let columns = store::list(conn, site_id)?;
    // The 30 UTC days up to `now`: today and the 29 before.
    let counts: BTreeMap<String, i64> = match now {
        Some(n) if !columns.is_empty() => {
            let today = utc_day_start(n);
            lead_store::column_entries(conn, site_id, today - 29 * DAY_MS, today + DAY_MS - 1)?.into_iter().collect()
        }
        _ => BTreeMap::new(),
    };
    let counted = now.is_some() && !columns.is_empty();
    Ok(EventMap {
        columns: columns
            .into_iter()
            .map(|c| Column {
                month_count: counted.then(|| counts.get(&c.key).copied().unwrap_or(0)),
                event: c.event.as_deref().and_then(ColumnEvent::parse),
                key: c.key,
                name: c.name,
                color: c.color,
                group: c.group_name,
            })
            .collect(),
        send_lead_event: site.send_lead_event,
        purchase: PurchaseRow { enabled: crate::service::meta::links::pixel_enabled(conn, site_id)? },
    })
}
