//! The Graph API client (being written).
