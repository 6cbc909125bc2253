//! CSV files of the reports (REPORTING.md §5, rule REP-10): the same answer
//! as the JSON function, as a table a spreadsheet opens. `writer` writes RFC
//! 4180 records (formula-safe), `table` turns a JSON answer into rows,
//! `reports` serves `POST /v1/reports/{name}.csv` and `leads` streams
//! `GET /v1/sites/{siteId}/leads.csv` page by page (REP-11).

pub mod leads;
pub mod reports;
pub mod table;
pub mod writer;

use actix_web::web;

/// `text/csv` with its charset and header row, as RFC 4180 §3 registers it.
pub const CONTENT_TYPE: &str = "text/csv; charset=utf-8; header=present";

/// The host's CSV routes (after `/reports/leads` and `/reports/leads-daily`:
/// any other `/reports/{file}` is a CSV's name, or 404).
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/reports/{file}", web::post().to(reports::report_csv))
        .route("/sites/{siteId}/leads.csv", web::get().to(leads::leads_csv));
}

/// `Content-Disposition` that saves the file as `name`.
fn attachment(name: &str) -> (&'static str, String) {
    ("content-disposition", format!("attachment; filename=\"{name}\""))
}

/// The zone a file's times are written in: the arguments' `timezone` when it
/// names an IANA zone, else UTC (as the answers' own days are).
fn zone_of(name: Option<&str>) -> chrono_tz::Tz {
    name.and_then(|n| n.parse().ok()).unwrap_or(chrono_tz::UTC)
}
