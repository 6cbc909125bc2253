//! The few places where raw SQL is clearer than the DSL through `MultiConnection`
//! (grouped sums, upserts that add): written once with `?` placeholders and
//! translated to `$n` for PostgreSQL. Both backends take the same
//! `INSERT … ON CONFLICT … DO UPDATE` syntax.

use std::borrow::Cow;

use super::AnyConnection;

/// Translates `?` placeholders to the connection's dialect.
pub fn dialect<'a>(conn: &AnyConnection, sql: &'a str) -> Cow<'a, str> {
    if conn.is_sqlite() {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(ch);
        }
    }
    Cow::Owned(out)
}

/// `(?, ?, ?)` with `n` placeholders, for `IN` lists.
pub fn placeholders(n: usize) -> String {
    let mut s = String::with_capacity(n * 3 + 2);
    s.push('(');
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('?');
    }
    s.push(')');
    s
}

/// An `IN` list of a hot read whose length changes from call to call. On
/// SQLite the list is padded to the next power of two by repeating its last
/// value (the set it names is the same), so the read has a few statement
/// texts and each connection prepares each once instead of parsing and
/// planning it on every call. On PostgreSQL the list is exact and the
/// statement is not prepared: a prepared statement there may keep the
/// generic plan it chose while a table was empty (a scan).
pub struct InList {
    len: usize,
    sqlite: bool,
}

impl InList {
    /// The list for `n` values on `conn`'s backend.
    pub fn on(conn: &AnyConnection, n: usize) -> Self {
        let sqlite = conn.is_sqlite();
        InList { len: if sqlite { n.next_power_of_two() } else { n }, sqlite }
    }

    /// `(?, …, ?)`, as many as the list binds.
    pub fn placeholders(&self) -> String {
        placeholders(self.len)
    }

    /// The statement around the list: prepared where the list is padded.
    pub fn query(&self, sql: String) -> RawQuery {
        if self.sqlite { RawQuery::prepared(sql) } else { RawQuery::new(sql) }
    }

    /// Binds `values` (not empty), then the last again up to the list's length.
    pub fn texts<S: AsRef<str>>(&self, q: &mut RawQuery, values: &[S]) {
        self.bind(q, values, |q, v| {
            q.text(v.as_ref());
        });
    }

    /// Binds `values` (not empty), then the last again up to the list's length.
    pub fn ints(&self, q: &mut RawQuery, values: &[i64]) {
        self.bind(q, values, |q, v| {
            q.int(*v);
        });
    }

    fn bind<T>(&self, q: &mut RawQuery, values: &[T], mut one: impl FnMut(&mut RawQuery, &T)) {
        let padding = values.last().into_iter().cycle().take(self.len.saturating_sub(values.len()));
        for v in values.iter().chain(padding) {
            one(q, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::placeholders;

    #[test]
    fn a_column_with_a_nullable_value_becomes_nullable_and_a_mismatch_is_an_error() {
        use super::{Bind, Column};
        let first = Bind::Text("a".into());
        let mut c = Column::like(&first, 3);
        c.push(first).unwrap();
        c.push(Bind::OptText(None)).unwrap();
        c.push(Bind::Text("c".into())).unwrap();
        assert!(matches!(&c, Column::OptText(v) if *v == [Some("a".to_string()), None, Some("c".to_string())]));
        let mut n = Column::like(&Bind::BigInt(0), 2);
        n.push(Bind::BigInt(1)).unwrap();
        n.push(Bind::OptBigInt(None)).unwrap();
        assert!(matches!(&n, Column::OptBigInt(v) if *v == [Some(1), None]));
        let err = Column::like(&Bind::BigInt(1), 2).push(Bind::Text("secret-canary".into())).unwrap_err().to_string();
        assert!(!err.contains("secret-canary"), "no value in the message: {err}");
    }

    #[test]
    fn a_prepared_statement_splits_its_text_at_each_placeholder_once() {
        let mut q = super::RawQuery::prepared("SELECT ? + ?, 'x'");
        q.int(1).int(2);
        let p = super::Prepared::new(&q);
        assert_eq!(p.parts, ["SELECT ", " + ", ", 'x'"]);
        assert_eq!(super::Prepared::new(&super::RawQuery::prepared("SELECT 1")).parts, ["SELECT 1"]);
        assert_eq!(super::Prepared::new(&super::RawQuery::prepared("?")).parts, ["", ""]);
    }

    #[test]
    fn an_in_list_on_sqlite_is_padded_with_its_last_value_and_names_the_same_set() {
        use diesel::Connection;
        let mut conn = crate::db::AnyConnection::Sqlite(diesel::SqliteConnection::establish(":memory:").unwrap());
        super::RawQuery::new("CREATE TABLE t (id BIGINT NOT NULL, name TEXT NOT NULL)").execute(&mut conn).unwrap();
        for (id, name) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
            let mut q = super::RawQuery::new("INSERT INTO t (id, name) VALUES (?, ?)");
            q.int(id).text(name);
            q.execute(&mut conn).unwrap();
        }
        let list = super::InList::on(&conn, 3);
        assert_eq!(list.placeholders(), placeholders(4), "three values take a list of four");
        let mut q = list.query(format!("SELECT COUNT(*) AS n FROM t WHERE name IN {}", list.placeholders()));
        list.texts(&mut q, &["a", "c", "d"]);
        assert!(q.prepared && q.binds.len() == 4);
        assert_eq!(q.load::<crate::db::row::Count>(&mut conn).unwrap()[0].n, 3, "the repeated value counts once");
        let list = super::InList::on(&conn, 2);
        let mut q = list.query(format!("DELETE FROM t WHERE id IN {}", list.placeholders()));
        list.ints(&mut q, &[2, 4]);
        assert_eq!(q.execute(&mut conn).unwrap(), 2, "a list already a power of two is kept as it is");
        assert_eq!(super::InList::on(&conn, 5).placeholders(), placeholders(8));
    }

    #[test]
    fn placeholder_lists() {
        assert_eq!(placeholders(1), "(?)");
        assert_eq!(placeholders(3), "(?, ?, ?)");
        let mut q = super::RawQuery::new("VALUES ");
        q.rows(2, 3);
        assert_eq!(q.sql, "VALUES (?, ?, ?), (?, ?, ?)");
    }
}

/// A raw query built at run time: SQL with `?` placeholders and its binds in order.
#[derive(Debug, Default, Clone)]
pub struct RawQuery {
    pub sql: String,
    binds: Vec<Bind>,
    /// Prepared once per connection and statement text (see [`Prepared`]).
    prepared: bool,
}

#[derive(Debug, Clone)]
enum Bind {
    Text(String),
    BigInt(i64),
    OptText(Option<String>),
    OptBigInt(Option<i64>),
    Bytes(Vec<u8>),
    Bool(bool),
}

type MultiBackend = <AnyConnection as diesel::Connection>::Backend;

impl RawQuery {
    pub fn new(sql: impl Into<String>) -> Self {
        RawQuery { sql: sql.into(), binds: Vec::new(), prepared: false }
    }

    /// A query of a hot path whose text has a few shapes at most: each
    /// connection prepares each text once and keeps it (diesel never caches
    /// a `sql_query`, so SQLite would parse and plan it on every call).
    pub fn prepared(sql: impl Into<String>) -> Self {
        RawQuery { sql: sql.into(), binds: Vec::new(), prepared: true }
    }
    pub fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push_str(sql);
        self
    }
    /// `(?, …), (?, …)`: the placeholders of `rows` rows of `cols` columns,
    /// for a multi-row `VALUES` list (binds added by the caller, row by row).
    pub fn rows(&mut self, rows: usize, cols: usize) -> &mut Self {
        let one = placeholders(cols);
        for i in 0..rows {
            if i > 0 {
                self.sql.push_str(", ");
            }
            self.sql.push_str(&one);
        }
        self
    }
    pub fn text(&mut self, v: impl Into<String>) -> &mut Self {
        self.binds.push(Bind::Text(v.into()));
        self
    }
    pub fn texts<S: AsRef<str>>(&mut self, vs: &[S]) -> &mut Self {
        for v in vs {
            self.binds.push(Bind::Text(v.as_ref().to_string()));
        }
        self
    }
    pub fn int(&mut self, v: i64) -> &mut Self {
        self.binds.push(Bind::BigInt(v));
        self
    }
    pub fn ints(&mut self, vs: &[i64]) -> &mut Self {
        self.binds.extend(vs.iter().map(|v| Bind::BigInt(*v)));
        self
    }
    pub fn opt_text(&mut self, v: Option<impl Into<String>>) -> &mut Self {
        self.binds.push(Bind::OptText(v.map(Into::into)));
        self
    }
    pub fn opt_int(&mut self, v: Option<i64>) -> &mut Self {
        self.binds.push(Bind::OptBigInt(v));
        self
    }
    pub fn bytes(&mut self, v: Vec<u8>) -> &mut Self {
        self.binds.push(Bind::Bytes(v));
        self
    }
    pub fn boolean(&mut self, v: bool) -> &mut Self {
        self.binds.push(Bind::Bool(v));
        self
    }

    fn boxed(
        &self,
        conn: &AnyConnection,
    ) -> diesel::query_builder::BoxedSqlQuery<'static, MultiBackend, diesel::query_builder::SqlQuery> {
        let mut q = diesel::sql_query(dialect(conn, &self.sql).into_owned()).into_boxed::<MultiBackend>();
        for b in &self.binds {
            q = match b {
                Bind::Text(s) => q.bind::<diesel::sql_types::Text, _>(s.clone()),
                Bind::BigInt(i) => q.bind::<diesel::sql_types::BigInt, _>(*i),
                Bind::OptText(s) => q.bind::<diesel::sql_types::Nullable<diesel::sql_types::Text>, _>(s.clone()),
                Bind::OptBigInt(i) => q.bind::<diesel::sql_types::Nullable<diesel::sql_types::BigInt>, _>(*i),
                Bind::Bytes(b) => q.bind::<diesel::sql_types::Binary, _>(b.clone()),
                Bind::Bool(b) => q.bind::<diesel::sql_types::Bool, _>(*b),
            };
        }
        q
    }

    /// Reads rows. A prepared read on SQLite goes to the inner connection,
    /// as [`RawQuery::execute`] does: its binds and its rows skip
    /// `MultiConnection`'s type-erased adapter.
    pub fn load<T>(&self, conn: &mut AnyConnection) -> diesel::QueryResult<Vec<T>>
    where
        T: diesel::QueryableByName<MultiBackend> + diesel::QueryableByName<diesel::sqlite::Sqlite> + 'static,
    {
        use diesel::RunQueryDsl;
        match conn {
            AnyConnection::Sqlite(inner) if self.prepared => Prepared::new(self).load(inner),
            _ if self.prepared => Prepared::new(self).load(conn),
            _ => self.boxed(conn).load(conn),
        }
    }

    pub fn execute(&self, conn: &mut AnyConnection) -> diesel::QueryResult<usize> {
        use diesel::RunQueryDsl;
        match conn {
            AnyConnection::Sqlite(inner) if self.prepared => Prepared::new(self).execute(inner),
            _ if self.prepared => Prepared::new(self).execute(conn),
            _ => self.boxed(conn).execute(conn),
        }
    }
}

/// One column of a multi-row write on PostgreSQL: every row's value of it,
/// bound as one array (see [`RawQuery::execute_unnest`]).
enum Column {
    Text(Vec<String>),
    OptText(Vec<Option<String>>),
    BigInt(Vec<i64>),
    OptBigInt(Vec<Option<i64>>),
    Bytes(Vec<Vec<u8>>),
    Bool(Vec<bool>),
}

impl Column {
    /// An empty column of `first`'s type, for `rows` values.
    fn like(first: &Bind, rows: usize) -> Self {
        match first {
            Bind::Text(_) => Column::Text(Vec::with_capacity(rows)),
            Bind::OptText(_) => Column::OptText(Vec::with_capacity(rows)),
            Bind::BigInt(_) => Column::BigInt(Vec::with_capacity(rows)),
            Bind::OptBigInt(_) => Column::OptBigInt(Vec::with_capacity(rows)),
            Bind::Bytes(_) => Column::Bytes(Vec::with_capacity(rows)),
            Bind::Bool(_) => Column::Bool(Vec::with_capacity(rows)),
        }
    }

    /// Adds one row's value; a nullable value in a column that had none so
    /// far makes the column nullable. Any other mismatch is the caller's bug.
    fn push(&mut self, b: Bind) -> diesel::QueryResult<()> {
        match (&mut *self, b) {
            (Column::Text(v), Bind::Text(s)) => v.push(s),
            (Column::OptText(v), Bind::OptText(s)) => v.push(s),
            (Column::OptText(v), Bind::Text(s)) => v.push(Some(s)),
            (Column::BigInt(v), Bind::BigInt(i)) => v.push(i),
            (Column::OptBigInt(v), Bind::OptBigInt(i)) => v.push(i),
            (Column::OptBigInt(v), Bind::BigInt(i)) => v.push(Some(i)),
            (Column::Bytes(v), Bind::Bytes(b)) => v.push(b),
            (Column::Bool(v), Bind::Bool(b)) => v.push(b),
            (Column::Text(v), Bind::OptText(s)) => {
                let mut o: Vec<Option<String>> = std::mem::take(v).into_iter().map(Some).collect();
                o.push(s);
                *self = Column::OptText(o);
            }
            (Column::BigInt(v), Bind::OptBigInt(i)) => {
                let mut o: Vec<Option<i64>> = std::mem::take(v).iter().copied().map(Some).collect();
                o.push(i);
                *self = Column::OptBigInt(o);
            }
            // Never the value itself in the message: it may be personal data.
            _ => return Err(diesel::result::Error::QueryBuilderError("a column's values differ in type".into())),
        }
        Ok(())
    }
}

impl RawQuery {
    /// `INSERT INTO {table} ({columns}) SELECT … FROM UNNEST($1, …, $n)`,
    /// then `tail`, on PostgreSQL: every row of a multi-row write in one
    /// statement whose text depends only on the table and tail (issue 25's
    /// "`UNNEST` arrays on PostgreSQL"), so it is parsed and planned once per
    /// connection whatever the number of rows, and binds one array per column
    /// instead of a value per cell. The rows go in their order (the
    /// ordinality), as a `VALUES` list's do. `self` holds only the binds,
    /// `width` per row, row after row.
    pub fn execute_unnest(
        self,
        conn: &mut diesel::PgConnection,
        table: &str,
        columns: &str,
        width: usize,
        tail: &str,
    ) -> diesel::QueryResult<usize> {
        use diesel::RunQueryDsl;
        if self.binds.is_empty() || width == 0 {
            return Ok(0);
        }
        if !self.binds.len().is_multiple_of(width) {
            return Err(diesel::result::Error::QueryBuilderError("a row without all its binds".into()));
        }
        let rows = self.binds.len() / width;
        let mut cols: Vec<Column> = Vec::with_capacity(width);
        for (i, b) in self.binds.into_iter().enumerate() {
            if i < width {
                cols.push(Column::like(&b, rows));
            }
            cols[i % width].push(b)?;
        }
        let head = format!("INSERT INTO {table} ({columns}) SELECT {columns} FROM UNNEST(");
        let rest = format!(") WITH ORDINALITY AS u({columns}, rastro_ord) ORDER BY rastro_ord{tail}");
        Unnest { head, columns: cols, rest }.execute(conn)
    }
}

/// The statement of [`RawQuery::execute_unnest`], kept prepared per
/// connection by its text like [`Prepared`].
struct Unnest {
    head: String,
    columns: Vec<Column>,
    rest: String,
}

impl diesel::query_builder::QueryId for Unnest {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl diesel::query_builder::Query for Unnest {
    type SqlType = diesel::sql_types::Untyped;
}

impl diesel::RunQueryDsl<diesel::PgConnection> for Unnest {}

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for Unnest {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        use diesel::sql_types::{Array, BigInt, Binary, Bool, Nullable, Text};
        out.push_sql(&self.head);
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                out.push_sql(", ");
            }
            match c {
                Column::Text(v) => out.push_bind_param::<Array<Text>, Vec<String>>(v)?,
                Column::OptText(v) => out.push_bind_param::<Array<Nullable<Text>>, Vec<Option<String>>>(v)?,
                Column::BigInt(v) => out.push_bind_param::<Array<BigInt>, Vec<i64>>(v)?,
                Column::OptBigInt(v) => out.push_bind_param::<Array<Nullable<BigInt>>, Vec<Option<i64>>>(v)?,
                Column::Bytes(v) => out.push_bind_param::<Array<Binary>, Vec<Vec<u8>>>(v)?,
                Column::Bool(v) => out.push_bind_param::<Array<Bool>, Vec<bool>>(v)?,
            }
        }
        out.push_sql(&self.rest);
        Ok(())
    }
}

/// A [`RawQuery`] written through diesel's query builder: the backend writes
/// its own placeholders, and the statement is safe to cache, so diesel keeps
/// it prepared per connection, keyed by its text and bind types.
pub struct Prepared<'a> {
    query: &'a RawQuery,
    /// The text around the placeholders, found once per execution: diesel
    /// walks a statement three times (its cache key, its safety, its binds),
    /// and scanning a long multi-row text for `?` on every walk was 8 %
    /// of SQLite's writer thread.
    parts: Vec<&'a str>,
}

impl<'a> Prepared<'a> {
    fn new(query: &'a RawQuery) -> Self {
        let sql = query.sql.as_str();
        let mut parts = Vec::with_capacity(query.binds.len() + 1);
        let mut start = 0;
        for at in memchr::memchr_iter(b'?', sql.as_bytes()) {
            parts.push(&sql[start..at]);
            start = at + 1;
        }
        parts.push(&sql[start..]);
        Prepared { query, parts }
    }
}

impl diesel::query_builder::QueryId for Prepared<'_> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl diesel::query_builder::Query for Prepared<'_> {
    type SqlType = diesel::sql_types::Untyped;
}

impl diesel::RunQueryDsl<AnyConnection> for Prepared<'_> {}

impl diesel::RunQueryDsl<diesel::SqliteConnection> for Prepared<'_> {}

/// Written for [`AnyConnection`]'s backend, and for SQLite's own: a write on
/// SQLite goes to the inner connection directly, since every bind passed
/// through `MultiConnection`'s type-erased collector on its way to SQLite's:
/// building the statement's cache key and binds was 20.8 % of the writer
/// thread under tracker load that way, 14.9 % directly (README, session 28).
/// Prepared reads on SQLite go there too: `row!` decodes rows of both.
impl<DB> diesel::query_builder::QueryFragment<DB> for Prepared<'_>
where
    DB: diesel::backend::Backend
        + diesel::sql_types::HasSqlType<diesel::sql_types::Text>
        + diesel::sql_types::HasSqlType<diesel::sql_types::BigInt>
        + diesel::sql_types::HasSqlType<diesel::sql_types::Binary>
        + diesel::sql_types::HasSqlType<diesel::sql_types::Bool>,
    String: diesel::serialize::ToSql<diesel::sql_types::Text, DB>,
    Option<String>: diesel::serialize::ToSql<diesel::sql_types::Nullable<diesel::sql_types::Text>, DB>,
    i64: diesel::serialize::ToSql<diesel::sql_types::BigInt, DB>,
    Option<i64>: diesel::serialize::ToSql<diesel::sql_types::Nullable<diesel::sql_types::BigInt>, DB>,
    Vec<u8>: diesel::serialize::ToSql<diesel::sql_types::Binary, DB>,
    bool: diesel::serialize::ToSql<diesel::sql_types::Bool, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: diesel::query_builder::AstPass<'_, 'b, DB>) -> diesel::QueryResult<()> {
        use diesel::sql_types::{BigInt, Binary, Bool, Nullable, Text};
        let mut binds = self.query.binds.iter();
        let mut parts = self.parts.iter();
        if let Some(first) = parts.next() {
            out.push_sql(first);
        }
        for part in parts {
            match binds.next() {
                Some(Bind::Text(s)) => out.push_bind_param::<Text, String>(s)?,
                Some(Bind::BigInt(i)) => out.push_bind_param::<BigInt, i64>(i)?,
                Some(Bind::OptText(s)) => out.push_bind_param::<Nullable<Text>, Option<String>>(s)?,
                Some(Bind::OptBigInt(i)) => out.push_bind_param::<Nullable<BigInt>, Option<i64>>(i)?,
                Some(Bind::Bytes(b)) => out.push_bind_param::<Binary, Vec<u8>>(b)?,
                Some(Bind::Bool(b)) => out.push_bind_param::<Bool, bool>(b)?,
                None => return Err(diesel::result::Error::QueryBuilderError("a placeholder without its bind".into())),
            }
            out.push_sql(part);
        }
        Ok(())
    }
}
