//! Reports that keep only some sessions (REPORTING §3): `filters` and
//! `breakdown` read the range's own rows, since the rollups count every
//! session. `dims` says what each dimension reads; `kept` which sessions and
//! events a set of filters keeps.

pub mod dims;
pub mod kept;
