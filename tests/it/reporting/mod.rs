//! Reports as people read them (issue 23): what the reports answer without
//! the new arguments (`golden`, REP-01), and the CSV files (`csv`).

mod analytics_filters;
mod compare;
mod csv;
mod filtered_lists;
mod filters;
mod golden;
mod local_days;
