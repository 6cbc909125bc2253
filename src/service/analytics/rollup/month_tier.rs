//! The month build (for STORE-05 over long ranges): a site that had data before
//! the month tier existed gets its earlier months' breakdowns and visitor
//! sets summed from its day rows, the latest month first, one (site, month)
//! per transaction, each moving the site's `complete_from` back by a month
//! (to 0 once no earlier day row is left). The site's row is locked for the
//! step, and every writer of month rows share-locks it while it adds (see
//! [`r::month_tiers`]), so a month is built from day rows no writer is still
//! changing, and is kept by the writers from then on.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::vocabulary::Tier;
use crate::store::analytics::rollups as r;

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

/// Builds one month of one site; answers false when no site has a month left to build.
pub fn build_step(conn: &mut AnyConnection) -> Result<bool> {
    let Some((site, _)) = r::month_tier_pending(conn).map_err(db)? else { return Ok(false) };
    let from = match r::lock_month_tier(conn, &site).map_err(db)? {
        Some(from) if from > 0 => from,
        // Another process finished the site meanwhile.
        _ => return Ok(true),
    };
    let Some(first) = r::earliest_before(conn, &site, Tier::Day.as_str(), from).map_err(db)? else {
        r::set_month_tier(conn, &site, 0).map_err(db)?;
        return Ok(true);
    };
    let month = r::month_start(from - 1);
    r::sum_breakdowns(conn, &site, (Tier::Day.as_str(), Tier::Month.as_str()), month, from).map_err(db)?;
    r::delete_sets(conn, &site, Tier::Month.as_str(), month).map_err(db)?;
    let mut sets: BTreeMap<(String, String), RoaringBitmap> = BTreeMap::new();
    for row in r::sets_of_site(conn, &site, Tier::Day.as_str(), month, from).map_err(db)? {
        *sets.entry((row.dim, row.key)).or_default() |=
            RoaringBitmap::deserialize_from(&row.bits[..]).map_err(Error::internal)?;
    }
    for ((dim, key), set) in sets {
        let mut bytes = Vec::with_capacity(set.serialized_size());
        set.serialize_into(&mut bytes).map_err(Error::internal)?;
        r::put_set(conn, (&site, Tier::Month.as_str(), month, &dim, &key), bytes).map_err(db)?;
    }
    r::set_month_tier(conn, &site, if first >= month { 0 } else { month }).map_err(db)?;
    Ok(true)
}
