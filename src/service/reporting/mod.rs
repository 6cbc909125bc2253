//! What every report takes beside its own arguments (REPORTING.md): the
//! comparison with an earlier range (`compare`) and the filters (`filters`). Below the contexts whose
//! reports use it (leads, web analytics); it knows none of them.

pub mod compare;
pub mod filters;
