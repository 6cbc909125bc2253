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

/// A struct declared with [`row!`](crate::row).
pub trait Row {
    /// The table the row belongs to.
    const TABLE: &'static str;
    /// Its columns in field order, comma-separated.
    const COLUMNS: &'static str;
    /// How many columns.
    const WIDTH: usize;
    /// Binds every field, in order.
    fn bind(&self, q: &mut RawQuery);
}

/// A field's value as a bind of [`RawQuery`].
pub trait BindValue {
    fn bind_to(&self, q: &mut RawQuery);
}

impl BindValue for String {
    fn bind_to(&self, q: &mut RawQuery) {
        q.text(self.as_str());
    }
}
impl BindValue for &str {
    fn bind_to(&self, q: &mut RawQuery) {
        q.text(*self);
    }
}
impl BindValue for i64 {
    fn bind_to(&self, q: &mut RawQuery) {
        q.int(*self);
    }
}
impl BindValue for bool {
    fn bind_to(&self, q: &mut RawQuery) {
        q.boolean(*self);
    }
}
impl BindValue for Vec<u8> {
    fn bind_to(&self, q: &mut RawQuery) {
        q.bytes(self.clone());
    }
}
impl BindValue for Option<String> {
    fn bind_to(&self, q: &mut RawQuery) {
        q.opt_text(self.as_deref());
    }
}
impl BindValue for Option<&str> {
    fn bind_to(&self, q: &mut RawQuery) {
        q.opt_text(*self);
    }
}
impl BindValue for Option<i64> {
    fn bind_to(&self, q: &mut RawQuery) {
        q.opt_int(*self);
    }
}

/// Binds per statement at most: under SQLite's oldest limit (999), so a
/// statement's text has a few shapes and each stays prepared.
const BINDS_PER_STATEMENT: usize = 960;

/// Inserts `rows` with one multi-row statement per chunk, each followed by
/// `tail` (an `ON CONFLICT …` clause, or empty). An upsert must not meet one
/// key twice in a chunk (PostgreSQL refuses to change a row twice).
pub fn insert<R: Row, B: Borrow<R>>(conn: &mut AnyConnection, rows: &[B], tail: &str) -> QueryResult<usize> {
    let per = (BINDS_PER_STATEMENT / R::WIDTH).max(1);
    let mut n = 0;
    for chunk in rows.chunks(per) {
        let mut q = RawQuery::prepared(format!("INSERT INTO {} ({}) VALUES ", R::TABLE, R::COLUMNS));
        q.rows(chunk.len(), R::WIDTH);
        for r in chunk {
            r.borrow().bind(&mut q);
        }
        q.push(tail);
        n += q.execute(conn)?;
    }
    Ok(n)
}

/// Adds `rows` to the counters they name: a row whose `key` columns are
/// stored adds each of its `sums` columns to the stored ones (the rollups'
/// additive upsert, the same on both backends), a new one is inserted.
pub fn add<R: Row, B: Borrow<R>>(conn: &mut AnyConnection, rows: &[B], key: &str, sums: &[&str]) -> QueryResult<usize> {
    insert::<R, B>(conn, rows, &adding(R::TABLE, key, sums))
}

fn adding(table: &str, key: &str, sums: &[&str]) -> String {
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
    RawQuery::prepared(format!("SELECT {} FROM {} {rest}", R::COLUMNS, R::TABLE))
}

/// Declares a row struct of a `db::schema` table and implements
/// [`Row`](crate::db::row::Row) for it. A struct without a lifetime can also
/// be read: by a raw statement (`QueryableByName`, its SQL types from the
/// schema) or by the query builder (`Selectable`, `Queryable`); one that
/// borrows is written only.
///
/// ```ignore
/// crate::row! {
///     #[derive(Debug)]
///     pub struct HitRow<'a> in web_goal_hits {
///         pub site_id: &'a str,
///         pub at: i64,
///     }
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
        $crate::row!(@impl $name<$lt>, $table, $f0 $(, $f)*);
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident in $table:ident {
            $(#[$fm0:meta])* $fv0:vis $f0:ident : $t0:ty
            $(, $(#[$fm:meta])* $fv:vis $f:ident : $t:ty)* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(diesel::QueryableByName, diesel::Queryable, diesel::Selectable)]
        #[diesel(table_name = $crate::db::schema::$table)]
        $vis struct $name {
            $(#[$fm0])* $fv0 $f0: $t0,
            $($(#[$fm])* $fv $f: $t,)*
        }
        $crate::row!(@impl $name, $table, $f0 $(, $f)*);
    };
    (@impl $name:ident $(<$lt:lifetime>)?, $table:ident, $f0:ident $(, $f:ident)*) => {
        impl $(<$lt>)? $crate::db::row::Row for $name $(<$lt>)? {
            const TABLE: &'static str = stringify!($table);
            const COLUMNS: &'static str = concat!(stringify!($f0) $(, ", ", stringify!($f))*);
            const WIDTH: usize = 1 $(+ { let _ = stringify!($f); 1 })*;
            fn bind(&self, q: &mut $crate::db::sql::RawQuery) {
                $crate::db::row::BindValue::bind_to(&self.$f0, q);
                $($crate::db::row::BindValue::bind_to(&self.$f, q);)*
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::Row;

    crate::row! {
        struct Hit<'a> in web_goal_hits {
            site_id: &'a str,
            goal_id: &'a str,
            at: i64,
            event_id: &'a str,
        }
    }

    #[test]
    fn columns_width_and_binds_follow_the_fields() {
        assert_eq!(Hit::TABLE, "web_goal_hits");
        assert_eq!(Hit::COLUMNS, "site_id, goal_id, at, event_id");
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
}
