//! Names of campaigns, ad sets and ads: the latest a lead gave (the catalog
//! sync, when it comes, takes precedence).

use std::collections::HashMap;

use crate::db::AnyConnection;
use crate::error::Result;
use crate::store::leads::rollups;

#[derive(Debug, Default)]
pub struct Names(HashMap<(String, String, String), String>);

impl Names {
    pub fn load(conn: &mut AnyConnection, site_ids: &[String]) -> Result<Names> {
        let rows = rollups::labels(conn, site_ids)?;
        Ok(Names(rows.into_iter().map(|r| ((r.site_id, r.level, r.object_id), r.name)).collect()))
    }

    pub fn get(&self, site_id: &str, level: &str, id: &str) -> Option<String> {
        if id.is_empty() {
            return None;
        }
        self.0.get(&(site_id.to_string(), level.to_string(), id.to_string())).cloned()
    }

    /// A name for `id` from any of the sites (a campaign may span sites).
    pub fn any(&self, site_ids: &[String], level: &str, id: &str) -> Option<String> {
        site_ids.iter().find_map(|s| self.get(s, level, id))
    }
}
