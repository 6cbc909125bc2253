//! diesel queries grouped by bounded context (`leads`: sites, leads, the
//! board, the lead rollups; `meta`: connections, links, pixels, the sync's
//! state, spend and catalog, the conversions queue; `federation`: grants;
//! `operators`: the dashboard's operators, sessions and failed sign-ins). Plain functions over `&mut AnyConnection`;
//! callers run them through `Db::run` (reads) or `Db::write` (group commit).
//!
//! Single-row lookups end in `get_result`, never `first`: diesel binds
//! `first`'s `LIMIT 1` as a parameter, SQLite plans around a bound LIMIT and
//! then prepares the statement again every time it is bound (a tenth of the
//! writer's time went to re-preparing). Insertable rows say
//! `treat_none_as_default_value = false`: a `None` binds NULL (every nullable
//! column defaults to NULL anyway) instead of changing the statement's text to
//! `DEFAULT`, so each insert has one text, prepared once and cached by type.

pub mod analytics;
pub mod federation;
pub mod leads;
pub mod meta;
pub mod operators;
