//! The funnel step rows of a complete day laid out in key order, on
//! PostgreSQL (issue 25, `funnelsReport` ≤ 300 ms at 10M events).
//!
//! A report reads a funnel's rows of its range by the key `(funnel, day,
//! visitor)`. SQLite keeps them in that order (`WITHOUT ROWID`); a
//! PostgreSQL heap keeps them where they were written, and a row is written
//! again each time its visitor adds an event, so a day's rows of one funnel
//! lie among every other funnel's: a 90-day report read about a page per row
//! (session 34: 2,216 pages for 5,888 rows at 1M events; at 10M those pages
//! no longer fit in the server's buffers). Once a UTC day is complete, and
//! a day more has passed for late writes, the layout actor rewrites that
//! day's rows of each site in key order, one (site, day) per transaction;
//! the rows fill pages one after the other (210 pages for the same rows).
//! Nothing is read or counted differently: only where the rows lie.
//!
//! The mark (`web_funnel_layouts`) is the only state: a restart goes on
//! from it. A funnel being rebuilt leaves its site alone until the rebuild
//! ends, which starts the site over; an import of past events moves the
//! mark back to its earliest day.

use crate::clock::DAY_MS;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::store::analytics::funnel_layout as store;
use crate::store::analytics::funnels::{day_of, rebuilding};

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

/// The last day that may be laid out at `now`: complete a day ago.
pub fn last_day(now: i64) -> i64 {
    day_of(now) - 2 * DAY_MS
}

/// Lays out the next day of the first site that has one; answers false
/// when every site is laid out through [`last_day`] (always on SQLite).
pub fn step(conn: &mut AnyConnection, now: i64) -> Result<bool> {
    if conn.is_sqlite() {
        return Ok(false);
    }
    for (site_id, funnel_ids) in store::funnels_by_site(conn).map_err(db)? {
        if !rebuilding(conn, &site_id).map_err(db)?.is_empty() {
            continue;
        }
        let through = store::lock(conn, &site_id).map_err(db)?;
        let Some(day) = store::next_day(conn, &funnel_ids, through, last_day(now)).map_err(db)? else {
            continue;
        };
        store::lay_out(conn, &funnel_ids, day).map_err(db)?;
        store::set(conn, &site_id, day).map_err(db)?;
        return Ok(true);
    }
    Ok(false)
}

/// Rows were added to the site's days from `at`'s on (an import of past
/// events): those days are laid out again.
pub fn reopen(conn: &mut AnyConnection, site_id: &str, at: i64) -> Result<()> {
    if conn.is_sqlite() {
        return Ok(());
    }
    store::reopen(conn, site_id, day_of(at)).map_err(db)?;
    Ok(())
}

/// A funnel of the site was rebuilt, its rows written again over every
/// day: the site is laid out from its first day.
pub fn restart(conn: &mut AnyConnection, site_id: &str) -> Result<()> {
    if conn.is_sqlite() {
        return Ok(());
    }
    store::forget(conn, site_id).map_err(db)?;
    Ok(())
}
