//! The zone of a one-site report's days (REPORTING §1, rule REP-03): with
//! `timezone` the range is checked as whole local days of it (`"site"` being
//! the site's own zone); without, by the report's own UTC check.

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::reporting::timezone::{self, Zone};
use crate::service::sites;

pub fn of_site(
    conn: &mut AnyConnection,
    site_id: &str,
    arg: Option<&str>,
    range: (i64, i64),
    max_days: i64,
    utc_check: impl FnOnce() -> Result<()>,
) -> Result<Option<Zone>> {
    let Some(arg) = arg else {
        utc_check()?;
        return Ok(None);
    };
    let site = sites::require(conn, site_id)?;
    timezone::checked_range(Some(arg), &[&site.timezone], range, max_days)
}
