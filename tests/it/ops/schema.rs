//! `src/db/schema/` is written by hand (one file per context): this test
//! holds it to the database the migrations build, on both backends, so a
//! migration that adds, drops or retypes a column fails here rather than at
//! the first query that reads it.

use std::collections::BTreeMap;

use crate::backend_test;
use crate::common::*;

/// (type, nullable) per column, per table.
type Tables = BTreeMap<String, BTreeMap<String, (String, bool)>>;

/// Reads every `diesel::table!` of `src/db/schema/`: a column's SQL name is
/// its `#[sql_name]` when it has one.
fn declared() -> Tables {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/db/schema");
    let mut tables = Tables::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut current: Option<String> = None;
        let mut sql_name: Option<String> = None;
        for line in text.lines().map(str::trim) {
            if line.starts_with("diesel::table!") {
                current = None;
            } else if current.is_none() && line.ends_with('{') && line.contains('(') {
                let name = line.split_whitespace().next().unwrap().to_string();
                tables.insert(name.clone(), BTreeMap::new());
                current = Some(name);
            } else if let Some(rest) = line.strip_prefix("#[sql_name = \"") {
                sql_name = Some(rest.trim_end_matches("\"]").to_string());
            } else if let (Some(table), Some((column, ty))) = (&current, line.split_once(" -> ")) {
                let ty = ty.trim_end_matches(',');
                let (ty, nullable) = match ty.strip_prefix("Nullable<") {
                    Some(inner) => (inner.trim_end_matches('>'), true),
                    None => (ty, false),
                };
                let column = sql_name.take().unwrap_or_else(|| column.to_string());
                tables.get_mut(table).unwrap().insert(column, (ty.to_string(), nullable));
            } else if line == "}" {
                current = None;
            }
        }
    }
    tables
}

/// The migrated database's tables, with each column's declared type and
/// whether it may be NULL (a primary-key column never is).
async fn migrated(app: &TestApp) -> Tables {
    #[derive(diesel::QueryableByName)]
    struct Column {
        #[diesel(sql_type = diesel::sql_types::Text)]
        table_name: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        ty: String,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        nullable: bool,
    }
    let rows: Vec<Column> = app
        .state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            let sql = if c.is_sqlite() {
                "SELECT m.name AS table_name, p.name AS name, UPPER(p.type) AS ty, \
                 (p.\"notnull\" = 0 AND p.pk = 0) AS nullable \
                 FROM sqlite_master m, pragma_table_info(m.name) p \
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'"
            } else {
                "SELECT CAST(c.table_name AS TEXT) AS table_name, CAST(c.column_name AS TEXT) AS name, \
                 CAST(c.data_type AS TEXT) AS ty, c.is_nullable = 'YES' AS nullable \
                 FROM information_schema.columns c JOIN information_schema.tables t \
                 ON t.table_schema = c.table_schema AND t.table_name = c.table_name \
                 WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'"
            };
            Ok(diesel::sql_query(sql).load(c)?)
        })
        .await
        .unwrap();
    let mut tables = Tables::new();
    for c in rows.into_iter().filter(|c| c.table_name != "__diesel_schema_migrations") {
        tables.entry(c.table_name).or_default().insert(c.name, (c.ty, c.nullable));
    }
    tables
}

/// Whether diesel's `declared` type reads and writes the column the
/// migration made (SQLite's affinities are looser than PostgreSQL's types:
/// its INTEGER holds 64 bits, so BigInt reads it whole).
fn fits(declared: &str, migrated: &str) -> bool {
    matches!(
        (declared, migrated),
        ("Text", "TEXT" | "text")
            | ("BigInt", "BIGINT" | "INTEGER" | "bigint")
            | ("Integer", "INTEGER" | "integer")
            | ("Bool", "BOOLEAN" | "boolean")
            | ("Binary", "BLOB" | "bytea")
    )
}

/// Tables only PostgreSQL's migrations make, read by raw SQL alone: the
/// live counters its triggers keep (migration 31; SQLite counts its rows)
/// and the mark of the funnel step rows laid out (migration 36; SQLite's
/// rows are in key order already).
const POSTGRES_ONLY: &[&str] = &["web_live_counts", "web_live_horizon", "web_funnel_layouts"];

backend_test!(the_hand_written_schema_is_the_migrated_database, |app| {
    let declared = declared();
    let mut migrated = migrated(&app).await;
    let postgres = app.state.cx.backend() == rastrod::db::Backend::Postgres;
    for table in POSTGRES_ONLY {
        assert_eq!(migrated.remove(*table).is_some(), postgres, "{table} exists on PostgreSQL alone");
    }
    assert!(declared.len() > 60, "every context's schema file was read ({} tables)", declared.len());
    let names = |t: &Tables| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&declared), names(&migrated), "the same tables");
    for (table, columns) in &migrated {
        let mine = &declared[table];
        let cols = |m: &BTreeMap<String, (String, bool)>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(cols(mine), cols(columns), "{table}: the same columns");
        for (column, (ty, nullable)) in columns {
            let (my_ty, my_nullable) = &mine[column];
            assert!(fits(my_ty, ty), "{table}.{column}: {my_ty} declared, {ty} migrated");
            assert_eq!(my_nullable, nullable, "{table}.{column}: nullable");
        }
    }
});
