//! SQLite: a commit's fsync off the writer's thread (issue 25, STORE-15).
//!
//! With `synchronous = FULL` SQLite fsyncs the WAL inside every `COMMIT`, so
//! the one writer thread spent about half of its time waiting for the disk
//! under recordLead's load, and no write could start meanwhile. The write
//! connection now runs `synchronous = NORMAL` (SQLite's own syncs at
//! checkpoints and at a WAL's reuse stay) and hands each commit's answers to
//! the [`Syncer`]: a thread that fsyncs the WAL once for every commit made
//! since its last fsync and only then answers their writes. The writer builds
//! the next batch while the disk confirms the last one. `FULL` is exactly
//! `NORMAL` plus that fsync after each commit, so what an answer promises is
//! unchanged: an acknowledged write survives a power cut, and a write lost to
//! one was never acknowledged.
//!
//! What changes is that a commit is visible to the read connections a moment
//! before it is durable. A read that may have seen such a commit waits for it
//! to be durable before it answers ([`Durability::settle`], in `Db::run`), so
//! nothing a power cut could still take back leaves the daemon either.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// A write's answer, given once its commit is durable (or failed).
pub(super) type Completion = Box<dyn FnOnce(Result<()>) + Send>;

/// How the sync thread makes the commits so far durable: `fdatasync` of the
/// WAL in production ([`wal_sync`]); a test holds it to watch what waits.
pub(crate) type SyncFn = Box<dyn FnMut() -> std::io::Result<()> + Send>;

/// Commits made visible and commits made durable, numbered in commit order.
#[derive(Debug)]
pub(crate) struct Durability {
    committed: AtomicU64,
    durable: tokio::sync::watch::Sender<u64>,
}

impl Default for Durability {
    fn default() -> Self {
        Durability { committed: AtomicU64::new(0), durable: tokio::sync::watch::Sender::new(0) }
    }
}

impl Durability {
    /// A commit about to be made; its number, for [`Durability::made_durable`].
    /// Taken before the `COMMIT`: a read that saw the commit finished after
    /// it, so the number it waits for counts it.
    fn commit(&self) -> u64 {
        self.committed.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn made_durable(&self, through: u64) {
        self.durable.send_if_modified(|d| {
            let moved = through > *d;
            *d = (*d).max(through);
            moved
        });
    }

    /// Waits until every commit visible now is durable: at once when none
    /// waits for its fsync (always on PostgreSQL, whose commits are durable
    /// before they are visible).
    pub(crate) async fn settle(&self) {
        let target = self.committed.load(Ordering::SeqCst);
        if *self.durable.borrow() >= target {
            return;
        }
        let mut rx = self.durable.subscribe();
        // The sender lives as long as `self`: the wait ends once `target` is durable.
        let _ = rx.wait_for(|d| *d >= target).await;
    }
}

/// The production [`SyncFn`]: `fdatasync` of the database's WAL, opened
/// afresh each time so a WAL SQLite removed and made again is the one synced.
/// No WAL means SQLite checkpointed every frame into the database file and
/// removed it; the database file is synced then.
pub(crate) fn wal_sync(database: PathBuf) -> SyncFn {
    let mut wal = database.clone().into_os_string();
    wal.push("-wal");
    let wal = PathBuf::from(wal);
    Box::new(move || match std::fs::File::open(&wal) {
        Ok(f) => f.sync_data(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::File::open(&database)?.sync_all(),
        Err(e) => Err(e),
    })
}

/// One commit's writes, waiting for the fsync that makes it durable.
struct Pending {
    commit: u64,
    completions: Vec<Completion>,
}

/// The thread that makes commits durable and answers their writes.
pub(super) struct Syncer {
    tx: mpsc::Sender<Pending>,
    durability: std::sync::Arc<Durability>,
    thread: JoinHandle<()>,
}

impl Syncer {
    pub(super) fn start(mut sync: SyncFn, durability: std::sync::Arc<Durability>) -> std::io::Result<Syncer> {
        let (tx, rx) = mpsc::channel::<Pending>();
        let made = durability.clone();
        let thread = std::thread::Builder::new().name("rastrod-sync".into()).spawn(move || {
            while let Ok(first) = rx.recv() {
                // One fsync for every commit made while the last one ran.
                let mut group = vec![first];
                group.extend(rx.try_iter());
                let through = group.last().map_or(0, |p| p.commit);
                let outcome = sync().map_err(|e| {
                    tracing::error!(error = %e, commits = group.len(), "the disk did not confirm committed writes");
                    Error::internal("the write was committed but the disk did not confirm it")
                });
                // Marked even when the fsync failed: readers are not held
                // forever by a disk error their writers are told about.
                made.made_durable(through);
                for pending in group {
                    for done in pending.completions {
                        done(outcome.clone());
                    }
                }
            }
        })?;
        Ok(Syncer { tx, durability, thread })
    }

    /// The number of the transaction about to commit, taken right before its
    /// `COMMIT` (see [`Durability::commit`]); [`Syncer::committed`] hands it back.
    pub(super) fn number(&self) -> u64 {
        self.durability.commit()
    }

    /// Transaction `commit` has ended: its writes (none for one that rolled
    /// back, whose writes were answered already) are answered after the
    /// fsync, which also marks its number durable, in order with the rest.
    pub(super) fn committed(&self, commit: u64, completions: Vec<Completion>) {
        let pending = Pending { commit, completions };
        if let Err(mpsc::SendError(pending)) = self.tx.send(pending) {
            // The thread is gone (it cannot panic short of a writer's answer
            // panicking): the writes are answered rather than dropped, and
            // readers are not left waiting for it.
            self.durability.made_durable(pending.commit);
            for done in pending.completions {
                done(Err(Error::internal("the write was committed but its fsync thread was gone")));
            }
        }
    }

    /// Answers every commit handed over, then ends the thread.
    pub(super) fn stop(self) {
        drop(self.tx);
        let _ = self.thread.join();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::mpsc;

    use diesel::connection::SimpleConnection;
    use diesel::{Connection, RunQueryDsl, SqliteConnection};

    use super::super::{AnyConnection, Db, DbUrl};
    use crate::error::{Code, Error};

    crate::row! {
        struct N {
            n: i64,
        }
    }

    fn count(conn: &mut AnyConnection) -> i64 {
        let rows: Vec<N> =
            diesel::sql_query("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM t").load(conn).expect("counting");
        rows[0].n
    }

    fn insert(db: &Db, x: i64) -> tokio::task::JoinHandle<crate::error::Result<()>> {
        let db = db.clone();
        tokio::spawn(async move {
            db.write(move |c| c.batch_execute(&format!("INSERT INTO t VALUES ({x})")).map_err(Error::from)).await
        })
    }

    /// A database whose commits wait for the test's word on each fsync: the
    /// sync says it started on `started`, then returns what `verdict` sends.
    fn held(dir: &Path) -> (Db, mpsc::Receiver<()>, mpsc::Sender<std::io::Result<()>>) {
        let (started_tx, started) = mpsc::channel::<()>();
        let (verdict, verdicts) = mpsc::channel::<std::io::Result<()>>();
        let sync: super::SyncFn = Box::new(move || {
            let _ = started_tx.send(());
            verdicts.recv().unwrap_or(Ok(()))
        });
        let db = Db::open_with_sync(DbUrl::Sqlite(dir.join("t.db")), 2, (64, 100), 1, Some(sync)).unwrap();
        (db, started, verdict)
    }

    // rule: STORE-15
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_commit_is_answered_and_read_only_after_its_fsync_and_a_failed_fsync_is_told() {
        let dir = std::env::temp_dir().join(format!("rastrod-durable-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (db, started, verdict) = held(&dir);
        let create = {
            let db = db.clone();
            tokio::spawn(async move {
                db.write(|c| c.batch_execute("CREATE TABLE t (x BIGINT)").map_err(Error::from)).await
            })
        };
        started.recv().unwrap();
        verdict.send(Ok(())).unwrap();
        create.await.unwrap().unwrap();

        // A read never waits for a transaction still running, only for
        // commits already made.
        let (inside_tx, inside) = mpsc::channel::<()>();
        let (go, wait) = mpsc::channel::<()>();
        let running = {
            let db = db.clone();
            tokio::spawn(async move {
                db.write(move |_| {
                    let _ = inside_tx.send(());
                    let _ = wait.recv();
                    Ok(())
                })
                .await
            })
        };
        inside.recv().unwrap();
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), db.run(|c| Ok(count(c))));
        assert_eq!(read.await.expect("a read waited for a running transaction").unwrap(), 0);
        go.send(()).unwrap();
        started.recv().unwrap();
        verdict.send(Ok(())).unwrap();
        running.await.unwrap().unwrap();

        // The commit is made and visible while its fsync is held: the writer
        // did not wait for the disk.
        let write = insert(&db, 1);
        started.recv().unwrap();
        let mut raw = SqliteConnection::establish(dir.join("t.db").to_str().unwrap()).unwrap();
        let rows: Vec<N> =
            diesel::sql_query("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM t").load(&mut raw).expect("counting");
        assert_eq!(rows[0].n, 1, "committed before its fsync");
        // A read that saw it waits for the fsync as well.
        let (read_tx, read_done) = mpsc::channel::<()>();
        let mut read = {
            let db = db.clone();
            tokio::spawn(async move {
                db.run(move |c| {
                    let n = count(c);
                    let _ = read_tx.send(());
                    Ok(n)
                })
                .await
            })
        };
        read_done.recv().unwrap();
        // Not a timing: nothing but the verdict below can end either wait,
        // and this gives a read that did not wait time to answer.
        let waited = tokio::time::timeout(std::time::Duration::from_millis(300), &mut read).await;
        assert!(waited.is_err(), "a read that saw a commit answers only once it is durable");
        assert!(!write.is_finished(), "a write is answered only once its commit is durable");
        verdict.send(Ok(())).unwrap();
        write.await.unwrap().unwrap();
        assert_eq!(read.await.unwrap().unwrap(), 1);

        // A failed fsync: the commit's writes are told; the next commit and
        // the reads go on.
        let failing = insert(&db, 2);
        started.recv().unwrap();
        verdict.send(Err(std::io::Error::other("device gone"))).unwrap();
        let e = failing.await.unwrap().unwrap_err();
        assert_eq!(e.code, Code::Internal);
        assert!(!e.message.contains("device gone"), "the disk's own words stay in the log");
        let next = insert(&db, 3);
        started.recv().unwrap();
        verdict.send(Ok(())).unwrap();
        next.await.unwrap().unwrap();
        assert_eq!(db.run(|c| Ok(count(c))).await.unwrap(), 3);
        drop(verdict);
        db.close();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_wal_is_synced_or_without_one_the_database_file() {
        let dir = std::env::temp_dir().join(format!("rastrod-wal-sync-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("x.db");
        let mut sync = super::wal_sync(db.clone());
        assert_eq!(sync().unwrap_err().kind(), std::io::ErrorKind::NotFound, "neither file: an error, never a pass");
        std::fs::write(&db, b"db").unwrap();
        sync().unwrap();
        std::fs::write(dir.join("x.db-wal"), b"wal").unwrap();
        sync().unwrap();
        let _ = std::fs::remove_dir_all(dir);
    }
}
