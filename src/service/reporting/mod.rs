//! What every report takes beside its own arguments (REPORTING.md): the
//! comparison with an earlier range (`compare`), the filters (`filters`) and the zone of its days (`timezone`). Below the contexts whose
//! reports use it (leads, web analytics); it knows none of them.

pub mod compare;
pub mod filters;
pub mod timezone;
