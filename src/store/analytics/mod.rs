//! Web analytics rows (STORE-01 to STORE-09): what acceptance writes (events,
//! sessions, the (site, visitor) state, the rollup outbox), the rollups the
//! report actors keep, and the reads over both.

pub mod click_ids;
pub mod conversions;
pub mod definitions;
mod events;
mod filtered;
pub mod funnel_layout;
pub mod funnels;
pub mod goals;
mod imports;
mod keys;
pub mod links;
pub mod live_counts;
mod outbox;
mod outbox_pack;
pub mod people;
mod reads;
pub mod regroup;
pub mod retention;
pub mod rollups;
mod salts;
mod sessions;
pub mod site_map;
mod visitors;
pub mod vitals;
pub mod whatsapp_refs;

use diesel::{QueryResult, QueryableByName};

use crate::db::AnyConnection;
#[allow(unused_imports)]
use crate::db::row::{self, Row};
use crate::db::sql::{InList, RawQuery, placeholders};

pub use events::*;
pub use filtered::*;
pub use imports::*;
pub use keys::*;
pub use outbox::*;
pub use reads::*;
pub use salts::*;
pub use sessions::*;
pub use visitors::*;
