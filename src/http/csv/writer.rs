//! RFC 4180 records: comma-separated, CRLF-terminated, a field quoted when it
//! holds a comma, a quote, CR or LF (its quotes doubled). Text a spreadsheet
//! would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or CR) is
//! prefixed with `'`, so an ad or goal named `=HYPERLINK(…)` stays text; the
//! figures this module writes itself (counts, money, times) are left as they are.

use std::fmt::Write;

/// One field of a record.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text that came from someone else (names, labels, routes): neutralised.
    Text(String),
    /// A figure written by rastrod (a count, an amount, a time): kept as is.
    Figure(String),
    Empty,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
}

/// Starts of a cell that spreadsheets read as a formula.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Appends one record (with its CRLF) to `out`.
pub fn record(out: &mut String, cells: &[Cell]) {
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match cell {
            Cell::Empty => {}
            Cell::Figure(s) => field(out, s),
            Cell::Text(s) if s.starts_with(FORMULA_STARTS) => field(out, &format!("'{s}")),
            Cell::Text(s) => field(out, s),
        }
    }
    out.push_str("\r\n");
}

fn field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\r', '\n']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// A header record from column names.
pub fn header(out: &mut String, names: &[&str]) {
    let cells: Vec<Cell> = names.iter().map(|n| Cell::Figure((*n).to_string())).collect();
    record(out, &cells);
}

/// An amount in cents as a decimal with a `.` point: `-1234` → `-12.34`.
pub fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    let mut s = String::with_capacity(12);
    let _ = write!(s, "{sign}{}.{:02}", abs / 100, abs % 100);
    s
}

/// An epoch-ms time as ISO 8601 with milliseconds in `tz` (`Z` for UTC).
pub fn time(ms: i64, tz: chrono_tz::Tz) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => t.with_timezone(&tz).to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        None => ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(cells: &[Cell]) -> String {
        let mut s = String::new();
        record(&mut s, cells);
        s
    }

    // rule: REP-10
    #[test]
    fn fields_are_quoted_as_rfc_4180_says_and_formulas_neutralised() {
        assert_eq!(line(&[Cell::text("a"), Cell::Empty, Cell::Figure("12.50".into())]), "a,,12.50\r\n");
        assert_eq!(
            line(&[Cell::text("São Paulo, SP"), Cell::text("diz \"oi\"")]),
            "\"São Paulo, SP\",\"diz \"\"oi\"\"\"\r\n"
        );
        assert_eq!(line(&[Cell::text("duas\nlinhas")]), "\"duas\nlinhas\"\r\n");
        for danger in ["=HYPERLINK(\"x\")", "+5511999", "-1+1", "@SUM(A1)", "\tx"] {
            assert!(line(&[Cell::text(danger)]).trim_start_matches('"').starts_with('\''), "{danger}");
        }
        // A negative figure of ours stays a number.
        assert_eq!(line(&[Cell::Figure(money(-1234))]), "-12.34\r\n");
    }

    #[test]
    fn money_and_times() {
        assert_eq!(
            (money(0), money(5), money(123_456), money(-5)),
            ("0.00".into(), "0.05".into(), "1234.56".into(), "-0.05".into())
        );
        assert_eq!(time(1_795_996_800_000, chrono_tz::UTC), "2026-11-30T00:00:00.000Z");
        assert_eq!(time(1_795_996_800_000, chrono_tz::America::Sao_Paulo), "2026-11-29T21:00:00.000-03:00");
    }
}
