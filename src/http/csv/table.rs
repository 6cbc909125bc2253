//! A report's JSON answer as one CSV table: the rows are the objects found
//! along a path of arrays (`campaigns` → `adsets` → `ads`), each carrying the
//! identity of the rows above it; a row's scalar fields are its columns
//! (nested objects as `paid.leads`), in the order they first appear (the
//! answer's keys are sorted, so columns are too, after the carried ones). So the
//! file says what the JSON says, field by field, with three rewrites a person
//! opening it in a spreadsheet expects:
//! - amounts in cents (`revenueCents`) become decimals with a `.` point under
//!   the name without `Cents` (`revenue`);
//! - times (`…At`, `dayStart`, `bucketStart`) become ISO 8601 in the asked zone;
//! - what could name a person or a click (`leadKey`, `clickId`, free-form
//!   `properties`, contacts) is left out, and arrays inside a row are other tables.

use serde_json::{Map, Value};

use super::writer::{self, Cell};

/// One level of the path: the array's key and the fields of its rows that
/// the rows below carry, renamed (`("name", "campaignName")`).
#[derive(Debug, Clone, Copy)]
pub struct Level {
    pub key: &'static str,
    pub carry: &'static [(&'static str, &'static str)],
}

/// The path from the answer to its rows; an empty path means the answer is the array.
pub type Path = &'static [Level];

/// Fields never written to a CSV: contacts, click ids, free-form properties.
const NEVER: [&str; 9] =
    ["leadKey", "clickId", "fbclid", "gclid", "phone", "email", "properties", "contact", "userData"];

/// Keys whose numbers are epoch-ms times.
fn is_time(key: &str) -> bool {
    key.ends_with("At") || matches!(key, "dayStart" | "bucketStart" | "from" | "to")
}

/// The table: its columns and rows of cells.
#[derive(Debug, Default)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// Writes the header and every row.
    pub fn csv(&self) -> String {
        let mut out = String::new();
        let names: Vec<&str> = self.columns.iter().map(String::as_str).collect();
        writer::header(&mut out, &names);
        for row in &self.rows {
            writer::record(&mut out, row);
        }
        out
    }
}

/// The rows of `answer` along `path`, in the zone `tz`.
pub fn table(answer: &Value, path: Path, tz: chrono_tz::Tz) -> Table {
    let mut flat: Vec<Vec<(String, Cell)>> = Vec::new();
    walk(answer, path, Vec::new(), tz, &mut flat);
    let mut columns: Vec<String> = Vec::new();
    for row in &flat {
        for (name, _) in row {
            if !columns.contains(name) {
                columns.push(name.clone());
            }
        }
    }
    let rows = flat
        .into_iter()
        .map(|row| {
            columns
                .iter()
                .map(|c| row.iter().find(|(n, _)| n == c).map_or(Cell::Empty, |(_, cell)| cell.clone()))
                .collect()
        })
        .collect();
    Table { columns, rows }
}

/// The items at one level: an array's elements, or an object as one row (`totals`).
fn items(node: Option<&Value>) -> Vec<&Value> {
    match node {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(obj @ Value::Object(_)) => vec![obj],
        _ => Vec::new(),
    }
}

fn walk(node: &Value, path: Path, carried: Vec<(String, Cell)>, tz: chrono_tz::Tz, out: &mut Vec<Vec<(String, Cell)>>) {
    let Some((level, deeper)) = path.split_first() else {
        // An empty path: the answer is the array of rows.
        for item in node.as_array().into_iter().flatten() {
            out.push(row(item, &carried, tz));
        }
        return;
    };
    for item in items(node.get(level.key)) {
        if deeper.is_empty() {
            out.push(row(item, &carried, tz));
        } else {
            let mut carry = carried.clone();
            carry.extend(carried_fields(item, level.carry, tz));
            walk(item, deeper, carry, tz, out);
        }
    }
}

fn row(item: &Value, carried: &[(String, Cell)], tz: chrono_tz::Tz) -> Vec<(String, Cell)> {
    let mut row = carried.to_vec();
    if let Some(obj) = item.as_object() {
        fields(obj, "", tz, &mut row);
    }
    row
}

fn carried_fields(item: &Value, carry: &[(&str, &str)], tz: chrono_tz::Tz) -> Vec<(String, Cell)> {
    carry.iter().filter_map(|(from, to)| item.get(*from).map(|v| ((*to).to_string(), cell(from, v, tz)))).collect()
}

/// A row's scalar fields, nested objects flattened under `prefix.`.
fn fields(obj: &Map<String, Value>, prefix: &str, tz: chrono_tz::Tz, row: &mut Vec<(String, Cell)>) {
    for (key, v) in obj {
        if NEVER.contains(&key.as_str()) {
            continue;
        }
        match v {
            Value::Array(_) => {}
            Value::Object(inner) => fields(inner, &format!("{prefix}{key}."), tz, row),
            _ => {
                let name = key.strip_suffix("Cents").filter(|n| !n.is_empty()).unwrap_or(key);
                row.push((format!("{prefix}{name}"), cell(key, v, tz)));
            }
        }
    }
}

fn cell(key: &str, v: &Value, tz: chrono_tz::Tz) -> Cell {
    match v {
        Value::Null => Cell::Empty,
        Value::Bool(b) => Cell::Figure(b.to_string()),
        Value::Number(n) => match n.as_i64() {
            Some(i) if key.ends_with("Cents") => Cell::Figure(writer::money(i)),
            Some(i) if is_time(key) => Cell::Figure(writer::time(i, tz)),
            _ => Cell::Figure(n.to_string()),
        },
        Value::String(s) => Cell::Text(s.clone()),
        // Arrays and objects are not cells (see `fields`).
        _ => Cell::Empty,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ADS: Path = &[
        Level { key: "campaigns", carry: &[("campaignId", "campaignId"), ("name", "campaignName")] },
        Level { key: "adsets", carry: &[("adsetId", "adsetId"), ("name", "adsetName")] },
        Level { key: "ads", carry: &[] },
    ];

    // rule: REP-10
    #[test]
    fn rows_carry_their_parents_money_is_decimal_and_contacts_stay_out() {
        let answer = json!({"campaigns": [{"campaignId": "c1", "name": "=Black", "leads": 3, "adsets": [
            {"adsetId": "s1", "name": "Mulheres", "ads": [
                {"adId": "a1", "leads": 2, "revenueCents": 12345, "paid": {"leads": 1}, "leadKey": "+5511999", "updatedAt": 0},
                {"adId": "a2", "leads": 1, "revenueCents": null, "extra": "x"}]}]}]});
        let t = table(&answer, ADS, chrono_tz::UTC);
        assert_eq!(
            t.columns,
            [
                "campaignId",
                "campaignName",
                "adsetId",
                "adsetName",
                "adId",
                "leads",
                "paid.leads",
                "revenue",
                "updatedAt",
                "extra"
            ]
        );
        assert_eq!(
            t.csv(),
            "campaignId,campaignName,adsetId,adsetName,adId,leads,paid.leads,revenue,updatedAt,extra\r\n\
             c1,'=Black,s1,Mulheres,a1,2,1,123.45,1970-01-01T00:00:00.000Z,\r\n\
             c1,'=Black,s1,Mulheres,a2,1,,,,x\r\n"
        );
    }

    #[test]
    fn an_answer_that_is_an_array_is_its_rows() {
        let t = table(&json!([{"dayStart": 0, "leads": 1}]), &[], chrono_tz::America::Sao_Paulo);
        assert_eq!(t.csv(), "dayStart,leads\r\n1969-12-31T21:00:00.000-03:00,1\r\n");
    }
}
