//! The fake Graph API server (being written).
