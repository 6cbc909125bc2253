//! The daily salts of cookieless visitor ids.

#[allow(unused_imports)]
use super::*;

crate::row! {
    pub(super) struct SaltRow in web_salts {
        salt: Vec<u8>,
    }
}

/// The day's salt: created once for every process of the database, then read.
pub fn salt(conn: &mut AnyConnection, day: i64, fresh: [u8; 32]) -> QueryResult<Vec<u8>> {
    let mut q = RawQuery::new("INSERT INTO web_salts (day, salt) VALUES (?, ?) ON CONFLICT (day) DO NOTHING");
    q.int(day).bytes(fresh.to_vec());
    q.execute(conn)?;
    let mut q = RawQuery::new("SELECT salt FROM web_salts WHERE day = ?");
    q.int(day);
    Ok(q.load::<SaltRow>(conn)?.into_iter().next().map(|r| r.salt).unwrap_or_default())
}

/// Salts 48 hours past their day's end go (rule SES-04).
pub fn delete_salts_before(conn: &mut AnyConnection, day: i64) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_salts WHERE day < ?");
    q.int(day);
    q.execute(conn)
}
