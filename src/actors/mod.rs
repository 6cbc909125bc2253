//! Actors (actix): long-lived workers driven by persisted rows. Messages are
//! wake-ups; the rows are the truth.

pub mod pixel_sender;
