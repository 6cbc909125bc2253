//! diesel queries grouped by aggregate. Plain functions over `&mut AnyConnection`;
//! callers run them through `Db::run` (reads) or `Db::write` (group commit).

pub mod conversions;
pub mod leads;
pub mod meta;
pub mod pipeline;
pub mod rollups;
pub mod sites;
pub mod sync;
