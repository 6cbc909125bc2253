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
    }
}

/// A raw query built at run time: SQL with `?` placeholders and its binds in order.
#[derive(Debug, Default, Clone)]
pub struct RawQuery {
    pub sql: String,
    binds: Vec<Bind>,
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
        RawQuery { sql: sql.into(), binds: Vec::new() }
    }
    pub fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push_str(sql);
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
        self.boxed(conn).load(conn)
    }

    pub fn execute(&self, conn: &mut AnyConnection) -> diesel::QueryResult<usize> {
        use diesel::RunQueryDsl;
        self.boxed(conn).execute(conn)
    }
}
