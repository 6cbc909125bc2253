//! Storage: one `AnyConnection` over SQLite and PostgreSQL, picked by the URL
//! scheme; a read pool; group-commit writers; migrations embedded per backend.

mod durable;
pub mod row;
pub mod schema;
pub mod sql;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::error::{Error, Result};
pub use writer::{Lane, Stats as WriterStats, Writer};

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/postgres");

#[derive(diesel::MultiConnection)]
pub enum AnyConnection {
    Postgresql(diesel::PgConnection),
    Sqlite(diesel::SqliteConnection),
}

impl AnyConnection {
    pub fn is_sqlite(&self) -> bool {
        matches!(self, AnyConnection::Sqlite(_))
    }
}

/// A database URL, parsed once; a bad URL is an error, never a stray SQLite file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

impl DbUrl {
    pub fn parse(url: &str) -> std::result::Result<DbUrl, String> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err("sqlite:// needs a path, such as sqlite://./data/rastrod.db".into());
            }
            Ok(DbUrl::Sqlite(PathBuf::from(path)))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(DbUrl::Postgres(url.to_string()))
        } else {
            Err("expected sqlite://path or postgres://...".into())
        }
    }
}

/// Opens connections of the URL's backend, with SQLite's pragmas set on each
/// and every finished statement counted in `queries`.
#[derive(Debug, Clone)]
pub struct Manager {
    url: DbUrl,
    queries: Arc<AtomicU64>,
}

/// Counts the statements a connection finished (ok or failed): one relaxed
/// add per statement, never the SQL itself.
fn count_queries(conn: &mut impl Connection, queries: &Arc<AtomicU64>) {
    let queries = queries.clone();
    conn.set_instrumentation(move |event: diesel::connection::InstrumentationEvent<'_>| {
        if let diesel::connection::InstrumentationEvent::FinishQuery { .. } = event {
            queries.fetch_add(1, Ordering::Relaxed);
        }
    });
}

fn sqlite_pragmas(conn: &mut SqliteConnection) -> QueryResult<()> {
    // busy_timeout first: setting WAL while another connection opens needs it.
    conn.batch_execute(
        "PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; \
         PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON;",
    )
}

/// SQLite's process-wide settings, made once before this process's first
/// connection:
/// - multi-thread mode: a connection takes no mutex of its own on each call
///   (each bind, each column read). Every connection here is used by one
///   thread at a time (diesel's connections are not `Sync`; the pool and
///   the writer hand them over whole), which is all that mode asks. In the
///   default, serialized mode those locks were about 6 % of the writer
///   thread.
/// - no memory statistics: each of SQLite's allocations otherwise takes a
///   process-wide mutex to count itself, and nothing here reads the counts.
fn sqlite_process_settings() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use libsqlite3_sys::{SQLITE_CONFIG_MEMSTATUS, SQLITE_CONFIG_MULTITHREAD, SQLITE_OK, sqlite3_config};
        // SAFETY: `sqlite3_config` must run before SQLite initializes and
        // while no other thread calls it; this crate opens every connection
        // after this `Once` has run. Should SQLite already be initialized
        // (something else in the process opened a database first), each
        // call answers SQLITE_MISUSE and changes nothing: connections then
        // keep their mutexes, which is only slower.
        let multi = unsafe { sqlite3_config(SQLITE_CONFIG_MULTITHREAD) };
        let stats = unsafe { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0 as std::os::raw::c_int) };
        if multi != SQLITE_OK || stats != SQLITE_OK {
            tracing::warn!(multi, stats, "SQLite was initialized before its settings; connections keep their mutexes");
        }
    });
}

impl r2d2::ManageConnection for Manager {
    type Connection = AnyConnection;
    type Error = ConnectionError;

    fn connect(&self) -> std::result::Result<AnyConnection, ConnectionError> {
        match &self.url {
            DbUrl::Sqlite(path) => {
                sqlite_process_settings();
                let mut conn = SqliteConnection::establish(&path.to_string_lossy())?;
                count_queries(&mut conn, &self.queries);
                sqlite_pragmas(&mut conn).map_err(ConnectionError::CouldntSetupConfiguration)?;
                Ok(AnyConnection::Sqlite(conn))
            }
            DbUrl::Postgres(url) => {
                let mut conn = PgConnection::establish(url)?;
                count_queries(&mut conn, &self.queries);
                Ok(AnyConnection::Postgresql(conn))
            }
        }
    }

    fn is_valid(&self, conn: &mut AnyConnection) -> std::result::Result<(), ConnectionError> {
        conn.batch_execute("SELECT 1").map_err(ConnectionError::CouldntSetupConfiguration)
    }

    fn has_broken(&self, _conn: &mut AnyConnection) -> bool {
        false
    }
}

pub type Pool = r2d2::Pool<Manager>;

/// The storage handle: `run` for blocking reads on the pool, `write` for writes
/// through the group-commit writer.
#[derive(Clone)]
pub struct Db {
    pool: Pool,
    writer: Arc<Writer>,
    backend: Backend,
    /// Bumped after every committed write that may change cached reads: they are valid while it stands still.
    generation: Arc<std::sync::atomic::AtomicU64>,
    /// Statements finished on any connection of this handle (pool, writer, checkpointer).
    queries: Arc<AtomicU64>,
    /// SQLite: the commits made visible and made durable (see `db::durable`).
    durability: Arc<durable::Durability>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Db {
    /// Opens the database (creating a SQLite file and its folder on first start)
    /// and runs the pending migrations.
    pub fn open(url: &str, pool_size: u32, write_batch_max: usize, write_queue_max: usize) -> Result<Db> {
        Db::open_with_writers(url, pool_size, write_batch_max, write_queue_max, 1)
    }

    /// [`Db::open`] with `writers` write connections on PostgreSQL (SQLite
    /// always has one: it allows one writer at a time).
    pub fn open_with_writers(
        url: &str,
        pool_size: u32,
        write_batch_max: usize,
        write_queue_max: usize,
        writers: usize,
    ) -> Result<Db> {
        let url = DbUrl::parse(url).map_err(Error::invalid)?;
        let sync = match &url {
            DbUrl::Sqlite(path) => Some(durable::wal_sync(path.clone())),
            DbUrl::Postgres(_) => None,
        };
        Db::open_with_sync(url, pool_size, (write_batch_max, write_queue_max), writers, sync)
    }

    /// [`Db::open_with_writers`] with the way SQLite's commits are made
    /// durable off the writer's thread (a test holds it).
    fn open_with_sync(
        url: DbUrl,
        pool_size: u32,
        limits: (usize, usize),
        writers: usize,
        sync: Option<durable::SyncFn>,
    ) -> Result<Db> {
        if let DbUrl::Sqlite(path) = &url
            && let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| Error::internal(format!("creating {}: {e}", dir.display())))?;
        }
        let backend = match url {
            DbUrl::Sqlite(_) => Backend::Sqlite,
            DbUrl::Postgres(_) => Backend::Postgres,
        };
        let queries = Arc::new(AtomicU64::new(0));
        let manager = Manager { url, queries: queries.clone() };
        let connect = || {
            r2d2::ManageConnection::connect(&manager).map_err(|e| {
                tracing::error!(error = %e, "database connection");
                Error::unavailable(format!("cannot open the database: {}", redact_url_error(&e.to_string())))
            })
        };
        let mut first = connect()?;
        migrate(&mut first)?;
        let pool = r2d2::Pool::builder()
            .max_size(pool_size)
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(10))
            .build(manager.clone())
            .map_err(Error::from)?;
        let mut conns = vec![first];
        if backend == Backend::Postgres {
            for _ in 1..writers.max(1) {
                conns.push(connect()?);
            }
        }
        let durability = Arc::new(durable::Durability::default());
        let writer = Arc::new(Writer::start(conns, manager, limits, durability.clone(), sync));
        Ok(Db { pool, writer, backend, generation: Arc::default(), queries, durability })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Runs blocking diesel work on a pooled connection, off the async threads,
    /// and answers once every commit it may have seen is durable (STORE-15).
    pub async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        let out = self.run_unsettled(f).await;
        self.settle().await;
        out
    }

    /// [`Db::run`] answering as soon as it has read, for a check whose
    /// finding is not given out as it is (a check before a write, which is
    /// answered after its own commit): whoever answers from what it found
    /// first waits for [`Db::settle`]. Under a steady stream of writes that
    /// wait is the next fsync, which a check that finds nothing need not pay.
    pub async fn run_unsettled<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        self.on_pool(move |pool| f(&mut *pool.get()?)).await
    }

    /// Runs `f` with the pool on a blocking thread, off the async threads.
    async fn on_pool<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Pool) -> Result<T> + Send + 'static,
    {
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || f(&pool))
            .await
            .map_err(|e| Error::internal(format!("blocking task: {e}")))?
    }

    /// Waits until every commit visible now is durable (SQLite; at once on
    /// PostgreSQL): before answering from a read of [`Db::run_unsettled`].
    pub async fn settle(&self) {
        self.durability.settle().await;
    }

    /// [`Db::run`] with a second pooled connection when one is idle at once
    /// (never waited for, so two reads each holding one cannot wait on each
    /// other; a busy pool runs the work on one): for a read that fetches its
    /// next part on the second while it works on the last.
    pub async fn run_pair<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection, Option<&mut AnyConnection>) -> Result<T> + Send + 'static,
    {
        let out = self
            .on_pool(move |pool| {
                let mut conn = pool.get()?;
                let mut helper = pool.try_get();
                f(&mut conn, helper.as_deref_mut())
            })
            .await;
        self.settle().await;
        out
    }

    /// Runs `f` in its own savepoint inside the writer's next transaction and
    /// answers once that transaction is durable. Many concurrent writes share
    /// one commit (group commit); a failing one rolls back alone. The write
    /// may have changed anything: cached reads are invalidated.
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        self.write_tracked(f, |_| true).await
    }

    /// [`Db::write`] in a transaction of its own: for a large write (thousands
    /// of statements), which in a shared batch's savepoint would cost time
    /// square in its size on SQLite (see `db::writer`).
    pub async fn write_alone<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        self.write_in(Lane::Ordered, true, f, |_| true).await
    }

    /// [`Db::write_tracked`] in `lane` (`alone`: in a transaction of its own).
    pub async fn write_in<T, F, P>(&self, lane: Lane, alone: bool, f: F, changes_cached_reads: P) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
        P: FnOnce(&T) -> bool,
    {
        let out = self.writer.submit_in(lane, alone, f).await;
        if out.as_ref().map_or(true, changes_cached_reads) {
            self.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        out
    }

    /// [`Db::write`], invalidating cached reads only when `changes_cached_reads`
    /// says the committed value may have changed them (or the write failed).
    pub async fn write_tracked<T, F, P>(&self, f: F, changes_cached_reads: P) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
        P: FnOnce(&T) -> bool,
    {
        self.write_in(Lane::Ordered, false, f, changes_cached_reads).await
    }

    /// Changes after every write this process committed (or tried to) that
    /// may change what the read cache holds (see [`Db::write_tracked`]).
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// SQLite: empties the WAL through the writer (a TRUNCATE checkpoint between
    /// its transactions) and answers once that is done, so data erased by
    /// writes already answered is gone from the WAL as well as from the pages
    /// (`secure_delete` zeroes those). A no-op on PostgreSQL.
    pub async fn truncate_wal(&self) -> Result<()> {
        if self.backend != Backend::Sqlite {
            return Ok(());
        }
        self.writer.request_wal_truncate();
        self.write(|_| Ok(())).await
    }

    /// Waits for every write already submitted to commit, then stops the writer.
    pub fn close(&self) {
        self.writer.close();
    }

    pub fn pool_state(&self) -> (u32, u32) {
        let s = self.pool.state();
        (s.connections, s.idle_connections)
    }

    pub fn pool_max(&self) -> u32 {
        self.pool.max_size()
    }

    pub fn writer_stats(&self) -> writer::Stats {
        self.writer.stats()
    }

    /// SQL statements finished so far on every connection of this handle
    /// (the pool's checkout check `SELECT 1` included), for `/metrics`.
    pub fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }
}

/// Runs the pending migrations of the connection's backend.
pub fn migrate(conn: &mut AnyConnection) -> Result<()> {
    let migrations = if conn.is_sqlite() { SQLITE_MIGRATIONS } else { POSTGRES_MIGRATIONS };
    conn.run_pending_migrations(migrations).map_err(|e| Error::internal(format!("migrations: {e}")))?;
    Ok(())
}

/// Reverts the applied migrations of the connection's backend, newest
/// first, through the one whose version is `version` (`20261205000028` for
/// `2026-12-05-000028_…`): the round-trip tests of a migration that converts
/// data. Answers how many were reverted.
pub fn revert_through(conn: &mut AnyConnection, version: &str) -> Result<usize> {
    let mut n = 0;
    loop {
        let migrations = if conn.is_sqlite() { SQLITE_MIGRATIONS } else { POSTGRES_MIGRATIONS };
        let reverted =
            conn.revert_last_migration(migrations).map_err(|e| Error::internal(format!("migrations: {e}")))?;
        n += 1;
        if reverted.to_string() == version {
            return Ok(n);
        }
    }
}

/// Connection errors from libpq may echo the URL; keep passwords out of messages.
fn redact_url_error(msg: &str) -> String {
    if msg.contains("password") { "authentication or connection failed".into() } else { msg.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    fn temp_db(queue_max: usize) -> (Db, PathBuf) {
        let dir = std::env::temp_dir().join(format!("rastrod-db-{}-{}", std::process::id(), queue_max));
        let _ = std::fs::remove_dir_all(&dir);
        let url = format!("sqlite://{}", dir.join("t.db").display());
        (Db::open(&url, 2, 64, queue_max).unwrap(), dir)
    }

    fn count(db: &Db) -> i64 {
        crate::row! {
            struct N {
                n: i64,
            }
        }
        let mut conn = db.pool.get().unwrap();
        let rows: Vec<N> = diesel::sql_query("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM t").load(&mut conn).unwrap();
        rows[0].n
    }

    /// Holds the writer thread inside a job until the returned sender fires.
    fn block_writer(db: &Db) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<Result<()>>) {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        let db2 = db.clone();
        let handle = tokio::spawn(async move {
            db2.write(move |_| {
                started_tx.send(()).unwrap();
                wait.recv().unwrap();
                Ok(())
            })
            .await
        });
        started.recv().unwrap();
        (release, handle)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_waiting_together_share_one_commit_and_fail_alone() {
        let (db, dir) = temp_db(100);
        db.write(|c| c.batch_execute("CREATE TABLE t (x BIGINT)").map_err(Error::from)).await.unwrap();
        let before = db.writer_stats().batches;
        let (release, blocker) = block_writer(&db);
        let insert = |x: i64, fail: bool| {
            let db = db.clone();
            tokio::spawn(async move {
                db.write(move |c| {
                    c.batch_execute(&format!("INSERT INTO t VALUES ({x})"))?;
                    if fail { Err(Error::invalid("refused")) } else { Ok(()) }
                })
                .await
            })
        };
        let (a, b, c) = (insert(1, false), insert(2, true), insert(3, false));
        while db.writer_stats().pending < 4 {
            tokio::task::yield_now().await;
        }
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        assert!(a.await.unwrap().is_ok());
        assert_eq!(b.await.unwrap().unwrap_err().code, Code::InvalidArgument);
        assert!(c.await.unwrap().is_ok());
        assert_eq!(count(&db), 2, "the failed write rolled back alone");
        assert_eq!(db.writer_stats().batches - before, 2, "the three waiting writes shared one transaction");
        db.close();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_refuses_with_rate_limited_and_a_closed_writer_with_unavailable() {
        let (db, dir) = temp_db(2);
        let (release, blocker) = block_writer(&db);
        let db2 = db.clone();
        let queued = tokio::spawn(async move { db2.write(|_| Ok(1)).await });
        while db.writer_stats().pending < 2 {
            tokio::task::yield_now().await;
        }
        let refused = db.write(|_| Ok(2)).await.unwrap_err();
        assert_eq!(refused.code, Code::RateLimited);
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        assert_eq!(queued.await.unwrap().unwrap(), 1);
        db.close();
        assert_eq!(db.write(|_| Ok(3)).await.unwrap_err().code, Code::Unavailable);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_statement_is_counted_on_the_pool_and_the_writer() {
        let (db, dir) = temp_db(7);
        let before = db.queries();
        db.run(|c| c.batch_execute("SELECT 1").map_err(Error::from)).await.unwrap();
        let after_read = db.queries();
        // The pool's checkout check and the statement itself.
        assert!(after_read >= before + 2, "{before} -> {after_read}");
        db.write(|c| c.batch_execute("CREATE TABLE q (x BIGINT)").map_err(Error::from)).await.unwrap();
        let after_write = db.queries();
        // The statement and the writer's transaction (the only write of its
        // batch has no savepoint).
        assert!(after_write >= after_read + 3, "{after_read} -> {after_write}");
        db.close();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn urls_pick_the_backend_and_refuse_the_rest() {
        assert_eq!(DbUrl::parse("sqlite://./data/x.db").unwrap(), DbUrl::Sqlite(PathBuf::from("./data/x.db")));
        assert_eq!(DbUrl::parse("sqlite:///var/lib/x.db").unwrap(), DbUrl::Sqlite(PathBuf::from("/var/lib/x.db")));
        assert!(matches!(DbUrl::parse("postgres://u@h/db").unwrap(), DbUrl::Postgres(_)));
        assert!(DbUrl::parse("mysql://h/db").is_err());
        assert!(DbUrl::parse("sqlite://").is_err());
        assert!(DbUrl::parse("./data/x.db").is_err());
    }
}
