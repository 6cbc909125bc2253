//! The federation context: which sites a dashboard connection may read or
//! configure (the local grants). The JWT and the gates are the transport's
//! (`crate::federation`).

pub mod grant_reader;
pub mod grants;
