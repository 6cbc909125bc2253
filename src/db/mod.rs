//! Storage: one `AnyConnection` over SQLite and PostgreSQL, picked by the URL
//! scheme; a read pool; one group-commit writer; migrations embedded per backend.

pub mod schema;
pub mod sql;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::error::{Error, Result};
pub use writer::Writer;

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

/// Opens connections of the URL's backend, with SQLite's pragmas set on each.
#[derive(Debug, Clone)]
pub struct Manager {
    url: DbUrl,
}

fn sqlite_pragmas(conn: &mut SqliteConnection) -> QueryResult<()> {
    // busy_timeout first: setting WAL while another connection opens needs it.
    conn.batch_execute(
        "PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; \
         PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON;",
    )
}

impl r2d2::ManageConnection for Manager {
    type Connection = AnyConnection;
    type Error = ConnectionError;

    fn connect(&self) -> std::result::Result<AnyConnection, ConnectionError> {
        match &self.url {
            DbUrl::Sqlite(path) => {
                let mut conn = SqliteConnection::establish(&path.to_string_lossy())?;
                sqlite_pragmas(&mut conn).map_err(ConnectionError::CouldntSetupConfiguration)?;
                Ok(AnyConnection::Sqlite(conn))
            }
            DbUrl::Postgres(url) => Ok(AnyConnection::Postgresql(PgConnection::establish(url)?)),
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Db {
    /// Opens the database (creating a SQLite file and its folder on first start)
    /// and runs the pending migrations.
    pub fn open(url: &str, pool_size: u32, write_batch_max: usize) -> Result<Db> {
        let url = DbUrl::parse(url).map_err(Error::invalid)?;
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
        let manager = Manager { url };
        let mut first = r2d2::ManageConnection::connect(&manager).map_err(|e| {
            tracing::error!(error = %e, "database connection");
            Error::unavailable(format!("cannot open the database: {}", redact_url_error(&e.to_string())))
        })?;
        migrate(&mut first)?;
        let pool = r2d2::Pool::builder()
            .max_size(pool_size)
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(10))
            .build(manager.clone())
            .map_err(Error::from)?;
        let writer = Arc::new(Writer::start(first, manager, write_batch_max));
        Ok(Db { pool, writer, backend })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Runs blocking diesel work on a pooled connection, off the async threads.
    pub async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = pool.get()?;
            f(&mut conn)
        })
        .await
        .map_err(|e| Error::internal(format!("blocking task: {e}")))?
    }

    /// Runs `f` in its own savepoint inside the writer's next transaction and
    /// answers once that transaction is durable. Many concurrent writes share
    /// one commit (group commit); a failing one rolls back alone.
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        self.writer.submit(f).await
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
}

/// Runs the pending migrations of the connection's backend.
pub fn migrate(conn: &mut AnyConnection) -> Result<()> {
    let migrations = if conn.is_sqlite() { SQLITE_MIGRATIONS } else { POSTGRES_MIGRATIONS };
    conn.run_pending_migrations(migrations).map_err(|e| Error::internal(format!("migrations: {e}")))?;
    Ok(())
}

/// Connection errors from libpq may echo the URL; keep passwords out of messages.
fn redact_url_error(msg: &str) -> String {
    if msg.contains("password") { "authentication or connection failed".into() } else { msg.to_string() }
}
