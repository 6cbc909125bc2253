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

#[cfg(test)]
mod tests {
    use super::placeholders;

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

    pub fn load<T>(&self, conn: &mut AnyConnection) -> diesel::QueryResult<Vec<T>>
    where
        T: diesel::QueryableByName<MultiBackend> + 'static,
    {
        use diesel::RunQueryDsl;
        if self.prepared { Prepared(self).load(conn) } else { self.boxed(conn).load(conn) }
    }

    pub fn execute(&self, conn: &mut AnyConnection) -> diesel::QueryResult<usize> {
        use diesel::RunQueryDsl;
        if self.prepared { Prepared(self).execute(conn) } else { self.boxed(conn).execute(conn) }
    }
}

/// A [`RawQuery`] written through diesel's query builder: the backend writes
/// its own placeholders, and the statement is safe to cache, so diesel keeps
/// it prepared per connection, keyed by its text and bind types.
pub struct Prepared<'a>(&'a RawQuery);

impl diesel::query_builder::QueryId for Prepared<'_> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl diesel::query_builder::Query for Prepared<'_> {
    type SqlType = diesel::sql_types::Untyped;
}

impl diesel::RunQueryDsl<AnyConnection> for Prepared<'_> {}

impl diesel::query_builder::QueryFragment<MultiBackend> for Prepared<'_> {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, MultiBackend>,
    ) -> diesel::QueryResult<()> {
        use diesel::sql_types::{BigInt, Binary, Bool, Nullable, Text};
        let mut binds = self.0.binds.iter();
        let mut parts = self.0.sql.split('?');
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
