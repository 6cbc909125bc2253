//! Two transactions of two connections to one PostgreSQL, as two processes
//! would run them: the first holds its transaction open until the second is
//! seen waiting for a lock, so a test proves what happens when they meet.

/// A migrated PostgreSQL database of its own and a connection to it (None
/// when PostgreSQL is not configured).
pub(crate) fn pg_database() -> Option<(crate::common::TestDb, rastrod::db::AnyConnection)> {
    let db = crate::common::TestDb::postgres()?;
    let mut conn = pg_connect(&db.url);
    rastrod::db::migrate(&mut conn).unwrap();
    Some((db, conn))
}

fn pg_connect(url: &str) -> rastrod::db::AnyConnection {
    use diesel::Connection;
    rastrod::db::AnyConnection::Postgresql(diesel::PgConnection::establish(url).unwrap())
}

/// Runs `first` and `second` in two transactions of two connections to the
/// database at `url`, as two processes' report actors would: `first` does
/// its work and holds its transaction open until `second` is seen waiting
/// for a lock (a condition, not a time), then commits; `second` then ends.
pub(crate) fn two_at_once<F, S>(url: &str, main: &mut rastrod::db::AnyConnection, first: F, second: S)
where
    F: FnOnce(&mut rastrod::db::AnyConnection) -> rastrod::error::Result<()> + Send,
    S: FnOnce(&mut rastrod::db::AnyConnection) -> rastrod::error::Result<()> + Send,
{
    use diesel::{Connection, RunQueryDsl};
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let waiter = format!("second-{}-{n}", std::process::id());
    let (done, go) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
    std::thread::scope(|s| {
        let (mut a, mut b) = (pg_connect(url), pg_connect(url));
        diesel::sql_query(format!("SET application_name = '{waiter}'")).execute(&mut b).unwrap();
        let a = s.spawn(move || {
            a.transaction::<_, rastrod::error::Error, _>(|c| {
                first(c)?;
                done.0.send(()).unwrap();
                go.1.recv().unwrap();
                Ok(())
            })
        });
        done.1.recv().unwrap();
        let b = s.spawn(move || b.transaction::<_, rastrod::error::Error, _>(second));
        #[derive(diesel::QueryableByName)]
        struct Waiting {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let sql = format!(
            "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE application_name = '{waiter}' AND wait_event_type = 'Lock'"
        );
        let mut polls = 0;
        while diesel::sql_query(&sql).load::<Waiting>(main).unwrap()[0].n == 0 {
            polls += 1;
            if b.is_finished() || polls == 2_000 {
                // The first commits before the panic, or the scope would wait for it forever.
                go.0.send(()).unwrap();
                panic!("the second transaction never waited for the first");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        go.0.send(()).unwrap();
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
}
