//! Rows that raw statements write and read (issue 21): where a dialect
//! needs SQL the query builder cannot say (multi-row upserts that add or keep
//! columns, grouped reads), one struct declared with [`row!`](crate::row)
//! gives the statement its table, its column list, its placeholders and its
//! binds, in field order, so the three cannot drift apart; its SQL types come
//! from `db::schema`, as the query builder's do.

use std::borrow::Borrow;

use diesel::QueryResult;

use super::AnyConnection;
use super::sql::RawQuery;

/// A struct declared with [`row!`](crate::row) with a table.
pub trait Row {
    /// The table the row belongs to.
    const TABLE: &'static str;
    /// Each field's column as the database spells it (from `db::schema`,
    /// so a field the table lacks does not compile), in field order.
    const NAMES: &'static [&'static str];
    /// Each field's name, in field order.
    const FIELDS: &'static [&'static str];
    /// The table's own id column, generated on insert (`generated id`):
    /// selected, never written.
    const GENERATED: Option<&'static str>;
    /// How many columns an insert writes.
    const WIDTH: usize;
    /// The column list of an insert, comma-separated.
    fn columns() -> &'static str;
    /// The select list that reads whole rows: each column, named as its
    /// field where the two differ (`ref AS reference`).
    fn select_list() -> &'static str;
    /// Binds every field, in order.
    fn bind(&self, q: &mut RawQuery);
    /// Appends every field, in order, as a row of a binary `COPY` stream
    /// ([`copy_data`]): its field count, then each field.
    fn copy_row(&self, out: &mut Vec<u8>);
}

/// The two lists of a [`Row`], built once per struct by [`row!`](crate::row).
pub fn lists(names: &[&str], fields: &[&str], generated: Option<&str>) -> (String, String) {
    let columns = names.join(", ");
    let select = generated
        .map(str::to_owned)
        .into_iter()
        .chain(names.iter().zip(fields).map(|(n, f)| if n == f { (*n).to_owned() } else { format!("{n} AS {f}") }))
        .collect::<Vec<_>>()
        .join(", ");
    (columns, select)
}

/// The SQL type a field of a Rust type is read as, for rows that are a
/// statement's projection rather than a table's (`COUNT(*) AS n`).
pub trait Sql {
    type Type;
}
impl Sql for i64 {
    type Type = diesel::sql_types::BigInt;
}
impl Sql for String {
    type Type = diesel::sql_types::Text;
}
impl Sql for bool {
    type Type = diesel::sql_types::Bool;
}
impl Sql for f64 {
    type Type = diesel::sql_types::Double;
}
impl Sql for Vec<u8> {
    type Type = diesel::sql_types::Binary;
}
impl<T: Sql> Sql for Option<T> {
    type Type = diesel::sql_types::Nullable<T::Type>;
}

/// A field's value, written the two ways a row goes to the database: as a
/// bind of [`RawQuery`], and in PostgreSQL's binary `COPY` format (its
/// length, -1 for a null, then its bytes in the type's binary form: text as
/// UTF-8, `BIGINT` as eight big-endian bytes, `BOOLEAN` as one, `BYTEA` as
/// is). The types a `row!` field may have are these.
pub trait FieldValue {
    fn bind_to(&self, q: &mut RawQuery);
    fn copy_to(&self, out: &mut Vec<u8>);
}

/// One field of a `COPY` row: its length, then its bytes.
fn copy_field(out: &mut Vec<u8>, bytes: &[u8]) {
    // A field of 2 GiB or more cannot come from a request here; were one
    // written, the stream would no longer parse and the server would
    // refuse the whole write, never store a cut value.
    let len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
}

/// A null field of a `COPY` row.
fn copy_null(out: &mut Vec<u8>) {
    out.extend_from_slice(&(-1i32).to_be_bytes());
}

impl FieldValue for String {
    fn bind_to(&self, q: &mut RawQuery) {
        q.text(self.as_str());
    }
    fn copy_to(&self, out: &mut Vec<u8>) {
        copy_field(out, self.as_bytes());
    }
}
impl FieldValue for &str {
    fn bind_to(&self, q: &mut RawQuery) {
        q.text(*self);
    }
    fn copy_to(&self, out: &mut Vec<u8>) {
        copy_field(out, self.as_bytes());
    }
}
impl FieldValue for i64 {
    fn bind_to(&self, q: &mut RawQuery) {
        q.int(*self);
    }
    fn copy_to(&self, out: &mut Vec<u8>) {
        copy_field(out, &self.to_be_bytes());
    }
}
impl FieldValue for bool {
    fn bind_to(&self, q: &mut RawQuery) {
        q.boolean(*self);
    }
    fn copy_to(&self, out: &mut Vec<u8>) {
        copy_field(out, &[u8::from(*self)]);
    }
}
impl FieldValue for Vec<u8> {
    fn bind_to(&self, q: &mut RawQuery) {
        q.bytes(self.clone());
    }
    fn copy_to(&self, out: &mut Vec<u8>) {
        copy_field(out, self);
    }
}
impl FieldValue for Option<String> {
    fn bind_to(&self, q: &mut RawQuery) {
        q.opt_text(self.as_deref());
    }
    fn copy_to(&self, out: &mut Vec<u8>) {
        self.as_deref().copy_to(out);
    }
}
impl FieldValue for Option<&str> {
    fn bind_to(&self, q: &mut RawQuery) {
        q.opt_text(*self);
    }
    fn copy_to(&self, out: &mut Vec<u8>) {
        match self {
            Some(v) => v.copy_to(out),
            None => copy_null(out),
        }
    }
}
impl FieldValue for Option<i64> {
    fn bind_to(&self, q: &mut RawQuery) {
        q.opt_int(*self);
    }
    fn copy_to(&self, out: &mut Vec<u8>) {
        match self {
            Some(v) => v.copy_to(out),
            None => copy_null(out),
        }
    }
}

crate::row! {
    /// The one column of a count (`SELECT COUNT(*) AS n …`).
    pub struct Count {
        pub n: i64,
    }
}

crate::row! {
    /// The one column of a list of ids (`SELECT … AS id`).
    pub struct Id {
        pub id: String,
    }
}

/// Binds per statement at most: under SQLite's oldest limit (999), so a
/// statement's text has a few shapes and each stays prepared.
pub const BINDS_PER_STATEMENT: usize = 960;

/// Inserts `rows`, followed by `tail` (an `ON CONFLICT …` clause, or empty):
/// several on PostgreSQL with one statement that binds an array per column
/// ([`RawQuery::execute_unnest`]), on SQLite with one multi-row statement per
/// chunk of [`BINDS_PER_STATEMENT`] binds. An upsert must not meet one key
/// twice in a call (PostgreSQL refuses to change a row twice in a statement).
pub fn insert<R: Row, B: Borrow<R>>(conn: &mut AnyConnection, rows: &[B], tail: &str) -> QueryResult<usize> {
    // One row stays a `VALUES` row: a single-row write (most of a rollup's,
    // a lead's) costs PostgreSQL a third more through 17 one-element arrays
    // (`loadgen events`' floor, one row per write: 3,038–3,202 against
    // 4,552–4,792 rows/s).
    if rows.len() > 1
        && let AnyConnection::Postgresql(pg) = conn
    {
        let mut q = RawQuery::default();
        for r in rows {
            r.borrow().bind(&mut q);
        }
        return q.execute_unnest(pg, R::TABLE, R::columns(), R::WIDTH, tail);
    }
    let per = (BINDS_PER_STATEMENT / R::WIDTH).max(1);
    let mut n = 0;
    for chunk in rows.chunks(per) {
        let mut q = RawQuery::prepared(format!("INSERT INTO {} ({}) VALUES ", R::TABLE, R::columns()));
        q.rows(chunk.len(), R::WIDTH);
        for r in chunk {
            r.borrow().bind(&mut q);
        }
        q.push(tail);
        n += q.execute(conn)?;
    }
    Ok(n)
}

/// A [`Row`] that PostgreSQL also takes by `COPY … FROM STDIN` in the
/// binary format (issue 25's "`COPY` … on PostgreSQL"), for the plain
/// inserts of many rows at once: the server writes the rows a page at a time
/// (one WAL record per page instead of per row) and runs no executor per
/// row. An upsert stays an `INSERT` ([`insert`]), as `COPY` has no
/// `ON CONFLICT`.
pub trait Copied: Row {
    /// Copies `data` ([`copy_data`] of rows in field order) into
    /// the row's table and columns; answers the rows copied.
    fn copy_in(pg: &mut diesel::PgConnection, data: Vec<u8>) -> QueryResult<usize>;
}

/// `COPY table (columns) FROM STDIN (FORMAT binary)` of `data`, the body of
/// [`Copied::copy_in`] that [`row!`](crate::row) writes for a row `written by copy`.
pub fn copy_into<T, C>(pg: &mut diesel::PgConnection, table: T, columns: C, data: Vec<u8>) -> QueryResult<usize>
where
    T: diesel::Table,
    C: diesel::pg::CopyTarget<Table = T>,
{
    use diesel::ExecuteCopyFromDsl;
    diesel::copy_from(table)
        .from_raw_data(columns, move |w| {
            w.write_all(&data).map_err(|e| diesel::result::Error::SerializationError(Box::new(e)))
        })
        .with_format(diesel::pg::CopyFormat::Binary)
        .execute(pg)
}

/// Rows from which a plain insert goes as a `COPY` on PostgreSQL: below it
/// the prepared `UNNEST` statement is as fast (a client writing the same
/// `web_events` rows over two connections: level at 10 rows a write, `COPY`
/// a fifth to two thirds faster from 50).
pub const COPY_FROM_ROWS: usize = 32;

/// Inserts `rows` as [`insert`] does without a tail, but by `COPY` on
/// PostgreSQL once they are [`COPY_FROM_ROWS`] or more. A row that breaks a
/// constraint fails the write either way.
pub fn insert_copied<R: Copied, B: Borrow<R>>(conn: &mut AnyConnection, rows: &[B]) -> QueryResult<usize> {
    if rows.len() >= COPY_FROM_ROWS
        && let AnyConnection::Postgresql(pg) = conn
    {
        return R::copy_in(pg, copy_data::<R, B>(rows));
    }
    insert::<R, B>(conn, rows, "")
}

/// Adds `rows` to the counters they name: a row whose `key` columns are
/// stored adds each of its `sums` columns to the stored ones (the rollups'
/// additive upsert, the same on both backends), a new one is inserted.
pub fn add<R: Row, B: Borrow<R>>(conn: &mut AnyConnection, rows: &[B], key: &str, sums: &[&str]) -> QueryResult<usize> {
    insert::<R, B>(conn, rows, &adding(R::TABLE, key, sums))
}

/// The tail of [`add`]: on the `key`'s conflict, each of `sums` adds the
/// new row's value to the stored one.
pub fn adding(table: &str, key: &str, sums: &[&str]) -> String {
    let mut tail = format!(" ON CONFLICT ({key}) DO UPDATE SET ");
    for (i, c) in sums.iter().enumerate() {
        if i > 0 {
            tail.push_str(", ");
        }
        tail.push_str(&format!("{c} = {table}.{c} + excluded.{c}"));
    }
    tail
}

/// `SELECT <columns> FROM <table> ` followed by `rest` (a `WHERE`, an order),
/// prepared: a read of whole rows whose text has few shapes.
pub fn select<R: Row>(rest: &str) -> RawQuery {
    RawQuery::prepared(format!("SELECT {} FROM {} {rest}", R::select_list(), R::TABLE))
}

/// The backend of [`AnyConnection`], which rows are read from.
pub type Backend = <AnyConnection as diesel::Connection>::Backend;

/// `rows` as a `COPY … FROM STDIN (FORMAT binary)` stream: PostgreSQL's
/// header, each row's fields in field order, then the trailer. Written
/// straight from the rows, with no bind in between.
pub fn copy_data<R: Row, B: Borrow<R>>(rows: &[B]) -> Vec<u8> {
    let mut out = Vec::with_capacity(21 + rows.len() * (2 + R::WIDTH * 20));
    out.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    out.extend_from_slice(&0i32.to_be_bytes()); // flags: no OIDs
    out.extend_from_slice(&0i32.to_be_bytes()); // no header extension
    for r in rows {
        r.borrow().copy_row(&mut out);
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    out
}

/// Reads the field `name` of a row being built, expected at column `*at`
/// (the select lists of [`row!`](crate::row) follow the fields' order), and
/// moves `at` past the column read. A column of another name there (a
/// hand-written select in another order, a row embedded after other
/// columns) is looked up by its name instead, so the order is a fast path,
/// never a condition: diesel's own lookup compares the name with every
/// column before it, which for a wide row (an event's 17 columns) cost more
/// than decoding its values.
#[inline]
pub fn field<'a, DB, ST, T, R>(row: &R, at: &mut usize, name: &str) -> diesel::deserialize::Result<T>
where
    DB: diesel::backend::Backend,
    R: diesel::row::NamedRow<'a, DB>,
    T: diesel::deserialize::FromSql<ST, DB>,
{
    use diesel::row::{Field as _, Row, RowIndex};
    if let Some(f) = Row::get(row, *at)
        && f.field_name() == Some(name)
    {
        *at += 1;
        return T::from_nullable_sql(f.value());
    }
    // Out of place: the field above is dropped by now, as it must be before
    // a lookup by name (SQLite's row lends its statement to one at a time).
    let index = RowIndex::<&str>::idx(row, name).ok_or_else(|| format!("Column `{name}` was not present in query"))?;
    *at = index + 1;
    let f = Row::get(row, index).ok_or_else(|| format!("Column `{name}` was not present in query"))?;
    T::from_nullable_sql(f.value())
}

/// Declares a row struct and what reads and writes it.
///
/// - `struct X in table { … }`: a row of a `db::schema` table, implementing
///   [`Row`](crate::db::row::Row). Its fields are the table's columns (by the
///   schema's Rust names; a column the database spells otherwise, such as
///   `ref`, is written and selected by its own name). Without a lifetime it
///   is also read: by a raw statement (`QueryableByName`, its SQL types from
///   the schema) or by the query builder (`Selectable`, `Queryable`); with
///   one it borrows and is written only.
/// - `struct X in table, generated id { … }`: the same, with the table's own
///   id as a first field `id: i64` that reads select and inserts leave out.
/// - `struct X in table, written by copy { … }` (after `generated id` if
///   both): the same, also [`Copied`](crate::db::row::Copied), so that
///   [`insert_copied`] writes many of them by `COPY` on PostgreSQL.
/// - `struct X { … }`: what a raw statement selects when its columns are
///   computed (`COUNT(*) AS n`); each field is read as the SQL type of its
///   Rust type ([`Sql`](crate::db::row::Sql)).
///
/// ```ignore
/// crate::row! {
///     #[derive(Debug)]
///     pub struct HitRow<'a> in web_goal_hits {
///         pub site_id: &'a str,
///         pub at: i64,
///     }
/// }
/// crate::row! {
///     struct Count { n: i64 }
/// }
/// ```
#[macro_export]
macro_rules! row {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident<$lt:lifetime> in $table:ident {
            $(#[$fm0:meta])* $fv0:vis $f0:ident : $t0:ty
            $(, $(#[$fm:meta])* $fv:vis $f:ident : $t:ty)* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name<$lt> {
            $(#[$fm0])* $fv0 $f0: $t0,
            $($(#[$fm])* $fv $f: $t,)*
        }
        $crate::row!(@impl $name<$lt> [], $table, $f0 $(, $f)*);
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident in $table:ident $(, generated $gen:ident)? $(, written by $how:ident)? {
            $(#[$fm0:meta])* $fv0:vis $f0:ident : $t0:ty
            $(, $(#[$fm:meta])* $fv:vis $f:ident : $t:ty)* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(diesel::Queryable, diesel::Selectable)]
        #[diesel(table_name = $crate::db::schema::$table)]
        $vis struct $name {
            $(
                /// The table's own id, generated on insert: read, never written.
                $vis $gen: i64,
            )?
            $(#[$fm0])* $fv0 $f0: $t0,
            $($(#[$fm])* $fv $f: $t,)*
        }
        $crate::row!(@impl $name [$($gen)?], $table, $f0 $(, $f)*);
        $crate::row!(@written [$($how)?] $name, $table, $f0 $(, $f)*);
        $crate::row!(@read $name,
            $($gen: diesel::dsl::SqlTypeOf<$crate::db::schema::$table::$gen>,)?
            $f0: diesel::dsl::SqlTypeOf<$crate::db::schema::$table::$f0>
            $(, $f: diesel::dsl::SqlTypeOf<$crate::db::schema::$table::$f>)*
        );
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(#[$fm:meta])* $fv:vis $f:ident : $t:ty
            $(, $(#[$fms:meta])* $fvs:vis $fs:ident : $ts:ty)* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(#[$fm])* $fv $f: $t,
            $($(#[$fms])* $fvs $fs: $ts,)*
        }
        $crate::row!(@read $name,
            $f: <$t as $crate::db::row::Sql>::Type
            $(, $fs: <$ts as $crate::db::row::Sql>::Type)*
        );
    };
    // Read from `AnyConnection`'s backend, and from SQLite's own: a
    // prepared read on SQLite goes to the inner connection (`RawQuery::load`).
    (@read $name:ident, $($f:ident : $st:ty),+ $(,)?) => {
        $crate::row!(@read_in $crate::db::row::Backend, $name, $($f : $st),+);
        $crate::row!(@read_in diesel::sqlite::Sqlite, $name, $($f : $st),+);
    };
    (@read_in $db:ty, $name:ident, $($f:ident : $st:ty),+) => {
        impl diesel::deserialize::QueryableByName<$db> for $name {
            fn build<'__a>(
                __row: &impl diesel::row::NamedRow<'__a, $db>,
            ) -> diesel::deserialize::Result<Self> {
                let mut __at = 0usize;
                $(let $f = $crate::db::row::field::<$db, $st, _, _>(__row, &mut __at, stringify!($f))?;)+
                Ok(Self { $($f),+ })
            }
        }
    };
    // `COPY` into the table's columns in the fields' order ([`Copied`]).
    (@written [] $($rest:tt)*) => {};
    (@written [copy] $name:ident, $table:ident, $f0:ident $(, $f:ident)*) => {
        impl $crate::db::row::Copied for $name {
            fn copy_in(pg: &mut diesel::PgConnection, data: Vec<u8>) -> diesel::QueryResult<usize> {
                $crate::db::row::copy_into(
                    pg,
                    $crate::db::schema::$table::table,
                    ($crate::db::schema::$table::$f0, $($crate::db::schema::$table::$f,)*),
                    data,
                )
            }
        }
    };
    (@generated) => { None };
    (@generated $gen:ident) => { Some(stringify!($gen)) };
    (@impl $name:ident $(<$lt:lifetime>)? [$($gen:ident)?], $table:ident, $f0:ident $(, $f:ident)*) => {
        impl $(<$lt>)? $crate::db::row::Row for $name $(<$lt>)? {
            const TABLE: &'static str = stringify!($table);
            const NAMES: &'static [&'static str] = &[
                <$crate::db::schema::$table::$f0 as diesel::Column>::NAME
                $(, <$crate::db::schema::$table::$f as diesel::Column>::NAME)*
            ];
            const FIELDS: &'static [&'static str] = &[stringify!($f0) $(, stringify!($f))*];
            const GENERATED: Option<&'static str> = $crate::row!(@generated $($gen)?);
            const WIDTH: usize = 1 $(+ { let _ = stringify!($f); 1 })*;
            fn columns() -> &'static str {
                &Self::row_lists().0
            }
            fn select_list() -> &'static str {
                &Self::row_lists().1
            }
            fn bind(&self, q: &mut $crate::db::sql::RawQuery) {
                $crate::db::row::FieldValue::bind_to(&self.$f0, q);
                $($crate::db::row::FieldValue::bind_to(&self.$f, q);)*
            }
            fn copy_row(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&(<Self as $crate::db::row::Row>::WIDTH as i16).to_be_bytes());
                $crate::db::row::FieldValue::copy_to(&self.$f0, out);
                $($crate::db::row::FieldValue::copy_to(&self.$f, out);)*
            }
        }
        impl $(<$lt>)? $name $(<$lt>)? {
            fn row_lists() -> &'static (String, String) {
                static LISTS: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
                LISTS.get_or_init(|| {
                    $crate::db::row::lists(
                        <Self as $crate::db::row::Row>::NAMES,
                        <Self as $crate::db::row::Row>::FIELDS,
                        <Self as $crate::db::row::Row>::GENERATED,
                    )
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use diesel::QueryableByName;

    use super::Row;

    crate::row! {
        struct Hit<'a> in web_goal_hits {
            site_id: &'a str,
            goal_id: &'a str,
            at: i64,
            event_id: &'a str,
        }
    }

    crate::row! {
        struct Ref in web_whatsapp_refs {
            site_id: String,
            reference: String,
        }
    }

    crate::row! {
        #[allow(dead_code)]
        struct Queued in web_outbox, generated id {
            site_id: String,
            kind: String,
        }
    }

    #[test]
    fn a_column_spelled_otherwise_is_written_by_its_name_and_selected_as_its_field() {
        assert_eq!(Ref::columns(), "site_id, ref");
        assert_eq!(Ref::select_list(), "site_id, ref AS reference");
    }

    #[test]
    fn a_generated_id_is_selected_never_written() {
        assert_eq!(Queued::columns(), "site_id, kind");
        assert_eq!(Queued::WIDTH, 2);
        assert_eq!(Queued::select_list(), "id, site_id, kind");
        let mut q = crate::db::sql::RawQuery::new("");
        Queued { id: 9, site_id: "s".into(), kind: "pageview".into() }.bind(&mut q);
        assert!(format!("{q:?}").contains(r#"binds: [Text("s"), Text("pageview")]"#), "{q:?}");
    }

    #[test]
    fn copy_data_is_postgresqls_binary_format_row_after_row() {
        use super::FieldValue;
        let rows = [
            Hit { site_id: "é", goal_id: "g", at: -2, event_id: "e" },
            Hit { site_id: "", goal_id: "", at: 1, event_id: "" },
        ];
        let got = super::copy_data::<Hit<'_>, _>(&rows);
        let mut want = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0".to_vec();
        want.extend_from_slice(&[0, 4, 0, 0, 0, 2, 0xc3, 0xa9, 0, 0, 0, 1, b'g']);
        want.extend_from_slice(&[0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 1, b'e']);
        want.extend_from_slice(&[0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
        want.extend_from_slice(&[0xff, 0xff]);
        assert_eq!(got, want);
        // The other types a row's field can have.
        let mut out = Vec::new();
        None::<String>.copy_to(&mut out);
        Some(1i64).copy_to(&mut out);
        true.copy_to(&mut out);
        vec![7u8].copy_to(&mut out);
        Some("x").copy_to(&mut out);
        assert_eq!(
            out,
            [
                0xff, 0xff, 0xff, 0xff, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 7, 0, 0, 0, 1,
                b'x'
            ]
        );
    }

    #[test]
    fn columns_width_and_binds_follow_the_fields() {
        assert_eq!(Hit::TABLE, "web_goal_hits");
        assert_eq!(Hit::columns(), "site_id, goal_id, at, event_id");
        assert_eq!(Hit::WIDTH, 4);
        let mut q = crate::db::sql::RawQuery::new("");
        Hit { site_id: "s", goal_id: "g", at: 7, event_id: "e" }.bind(&mut q);
        let binds = format!("{q:?}");
        assert!(binds.contains(r#"binds: [Text("s"), Text("g"), BigInt(7), Text("e")]"#), "{binds}");
        assert_eq!(
            super::select::<Hit>("WHERE at > ?").sql,
            "SELECT site_id, goal_id, at, event_id FROM web_goal_hits WHERE at > ?"
        );
    }

    crate::row! {
        #[derive(Debug, PartialEq, Clone)]
        struct Pair {
            n: i64,
            label: Option<String>,
        }
    }

    /// A row embedded after a column of its own, as `KeyedVisitor` embeds one.
    #[derive(Debug, PartialEq, QueryableByName)]
    struct Keyed {
        #[diesel(sql_type = diesel::sql_types::Text)]
        key: String,
        #[diesel(embed)]
        pair: Pair,
    }

    fn memory() -> crate::db::AnyConnection {
        use diesel::Connection;
        crate::db::AnyConnection::Sqlite(diesel::SqliteConnection::establish(":memory:").unwrap())
    }

    #[test]
    fn a_row_reads_its_columns_in_any_order_and_after_others() {
        let mut conn = memory();
        let read = |conn: &mut crate::db::AnyConnection, sql: &str| {
            crate::db::sql::RawQuery::new(sql).load::<Pair>(conn).map_err(|e| e.to_string())
        };
        let want = Pair { n: 7, label: Some("x".into()) };
        assert_eq!(read(&mut conn, "SELECT 7 AS n, 'x' AS label").unwrap(), std::slice::from_ref(&want));
        assert_eq!(read(&mut conn, "SELECT 'x' AS label, 7 AS n").unwrap(), std::slice::from_ref(&want), "by name");
        assert_eq!(read(&mut conn, "SELECT 1 AS other, 7 AS n, 'x' AS label").unwrap(), std::slice::from_ref(&want));
        let keyed =
            crate::db::sql::RawQuery::new("SELECT 'k' AS key, 7 AS n, NULL AS label").load::<Keyed>(&mut conn).unwrap();
        assert_eq!(keyed, [Keyed { key: "k".into(), pair: Pair { n: 7, label: None } }]);
        // A missing column is an error, never a panic.
        let missing = read(&mut conn, "SELECT 7 AS n").unwrap_err();
        assert!(missing.contains("label"), "{missing}");
    }
}
