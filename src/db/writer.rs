//! Group commit. A writer thread owns a write connection; writes arrive as
//! jobs in one queue, and every job waiting when a transaction starts joins
//! it, each in its own savepoint (the only job of a batch needs none: the
//! transaction is its own). SQLite has one writer thread; PostgreSQL
//! more (`RASTRO_DATABASE_WRITERS`): the first takes every job in order, the
//! others only jobs of [`Lane::Any`], so those commit beside the first's.
//! The first serves ordered jobs first: while one waits, it batches them
//! alone, every other batch at least (see [`Taker`]), so a lead's write
//! never waits for the commit of the tracker's writes queued before it.
//! All of them are answered after the one commit, so a write is
//! acknowledged only once it is durable, at the cost of one fsync per batch
//! instead of one per write. SQLite allows one writer at a time anyway; on
//! PostgreSQL the same batching saves round trips and fsyncs. On SQLite the
//! fsync itself runs on a thread of its own (`db::durable`): the writer goes
//! on with the next batch while the disk confirms the last, whose writes are
//! answered once it has.
//!
//! A large write (an import, a rollup batch, a retention batch) goes alone:
//! its own transaction, no savepoint. In SQLite every statement that ends
//! inside a savepoint trims the in-memory statement journal by walking it
//! from the start, and that journal holds every page the savepoint changed,
//! so a write of thousands of statements in one savepoint cost time square
//! in its size (an import of 10,000 lines spent three quarters of its time
//! there). Alone, a failing write rolls its own transaction back.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use diesel::Connection;
use diesel::connection::SimpleConnection;

use super::AnyConnection;
use super::durable::{Completion, Durability, SyncFn, Syncer};
use crate::error::{Code, Error, Result};

/// Runs a write, told whether it is its batch's only one; answers its
/// completion and whether its transaction may commit.
type Run = Box<dyn FnOnce(&mut AnyConnection, bool) -> (Completion, bool) + Send>;

/// A write: run in a savepoint of a shared batch, or alone in its own
/// transaction (where it answers whether that transaction may commit).
struct Job {
    alone: bool,
    lane: Lane,
    run: Run,
}

/// The writes waiting, in submission order, shared by the writer threads.
#[derive(Default)]
struct Queue {
    state: Mutex<Waiting>,
    ready: std::sync::Condvar,
}

#[derive(Default)]
struct Waiting {
    jobs: std::collections::VecDeque<Job>,
    /// No write is taken any more; the threads end once theirs are done.
    closed: bool,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `job` (false once closed).
    fn push(&self, job: Job) -> bool {
        let mut w = self.lock();
        if w.closed {
            return false;
        }
        w.jobs.push_back(job);
        drop(w);
        self.ready.notify_all();
        true
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// The next batch of a writer thread, waiting for one, and whether it
    /// left writes of the other lane waiting; None once the queue is closed
    /// and holds nothing this thread may take. A write that goes alone is a
    /// batch by itself, and ends a batch that reached it.
    fn take(&self, taker: Taker, batch_max: usize) -> Option<(Vec<Job>, bool)> {
        let mut w = self.lock();
        loop {
            let serves_ordered_only = taker == Taker::OrderedFirst && w.jobs.iter().any(|j| j.lane == Lane::Ordered);
            let mine = |j: &Job| match taker {
                Taker::AnyOnly => j.lane == Lane::Any,
                Taker::Every => true,
                Taker::OrderedFirst => !serves_ordered_only || j.lane == Lane::Ordered,
            };
            if let Some(i) = w.jobs.iter().position(mine) {
                let first = w.jobs.remove(i)?;
                let mut batch = vec![first];
                if !batch[0].alone {
                    let mut k = i;
                    while batch.len() < batch_max && k < w.jobs.len() {
                        match &w.jobs[k] {
                            j if j.alone && mine(j) => break,
                            j if mine(j) => batch.extend(w.jobs.remove(k)),
                            _ => k += 1,
                        }
                    }
                }
                let skipped = serves_ordered_only && w.jobs.iter().any(|j| j.lane == Lane::Any);
                return Some((batch, skipped));
            }
            if w.closed {
                return None;
            }
            w = self.ready.wait(w).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Which writes a writer thread takes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taker {
    /// Another than the first: [`Lane::Any`] writes alone, skipping the rest.
    AnyOnly,
    /// The first thread, by default: when an ordered write is waiting, a
    /// batch of ordered writes alone, so a recordLead or a dashboard write
    /// never shares a transaction with (and waits for the commit of) a
    /// tracker batch that came before it (issue 25's flood); otherwise
    /// every write in order.
    OrderedFirst,
    /// The first thread right after a batch that left [`Lane::Any`] writes
    /// waiting: every write in order, so a steady stream of ordered writes
    /// never starves the rest (on SQLite no other thread takes them).
    Every,
}

impl Taker {
    /// What the thread takes after a batch that did or did not leave writes
    /// of the other lane waiting.
    fn next(self, skipped: bool) -> Taker {
        match self {
            Taker::AnyOnly => Taker::AnyOnly,
            _ if skipped => Taker::Every,
            _ => Taker::OrderedFirst,
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub batches: u64,
    pub writes: u64,
    pub failed_batches: u64,
    /// Writes submitted and not yet answered.
    pub pending: u64,
    /// Writer threads, each with its connection (one on SQLite).
    pub writers: usize,
}

#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    writes: AtomicU64,
    failed_batches: AtomicU64,
    /// SQLite: truncate the WAL after the next commit (see `Writer::request_wal_truncate`).
    truncate_wal: AtomicBool,
}

/// Which writer threads may run a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// The first writer, in the order submitted with every other such write:
    /// the default, and what every write had before several writers.
    Ordered,
    /// Any writer thread (the first too, after the ordered writes waiting
    /// with it, every other batch at least: see [`Taker`]): only for
    /// writes safe beside each other and beside the ordered ones: the
    /// tracker's combined writes, which lock visitors in key order and
    /// append in SQL, and are retried batch by batch should one fail (as a
    /// deadlock's victim would be).
    Any,
}

pub struct Writer {
    queue: Arc<Queue>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// How many threads `start` made (the handles go at `close`).
    writers: usize,
    counters: Arc<Counters>,
    /// Writes submitted and not yet answered; past `queue_max` new ones are
    /// refused with RATE_LIMITED instead of growing memory without bound.
    pending: Arc<AtomicU64>,
    queue_max: u64,
}

impl Writer {
    /// One writer thread per connection of `conns` (one on SQLite, which
    /// allows one writer): the first takes every write in order; on
    /// PostgreSQL the others each take the next batch of [`Lane::Any`]
    /// writes, so the server runs one batch while the daemon prepares another.
    ///
    /// `sync` (SQLite): how the first thread's commits are made durable off
    /// its path (see `db::durable`); without it each `COMMIT` fsyncs itself.
    pub(crate) fn start(
        conns: Vec<AnyConnection>,
        manager: super::Manager,
        limits: (usize, usize),
        durability: Arc<Durability>,
        mut sync: Option<SyncFn>,
    ) -> Writer {
        let (batch_max, queue_max) = limits;
        let queue = Arc::new(Queue::default());
        let counters = Arc::new(Counters::default());
        let threads = conns
            .into_iter()
            .enumerate()
            .map(|(i, conn)| {
                let (counters, manager, queue) = (counters.clone(), manager.clone(), queue.clone());
                let durable = sync.take().map(|sync| (sync, durability.clone()));
                std::thread::Builder::new()
                    .name("rastrod-writer".into())
                    .spawn(move || writer_loop(conn, &manager, &queue, (i == 0, batch_max), durable, &counters))
                    .expect("spawning a writer thread")
            })
            .collect::<Vec<_>>();
        Writer {
            queue,
            writers: threads.len(),
            threads: Mutex::new(threads),
            counters,
            pending: Arc::new(AtomicU64::new(0)),
            queue_max: queue_max as u64,
        }
    }

    /// Runs `f` in `lane`: in the next batch of a writer that takes it, in
    /// its own savepoint, or `alone`, in a transaction of its own (a large
    /// write, see the module's comment); answers its outcome once committed
    /// (or rolled back).
    pub async fn submit_in<T, F>(&self, lane: Lane, alone: bool, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut AnyConnection) -> Result<T> + Send + 'static,
    {
        if self.pending.fetch_add(1, Ordering::SeqCst) >= self.queue_max {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::new(Code::RateLimited, "too many writes queued; retry shortly"));
        }
        let pending = self.pending.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<Result<T>>();
        let run = Box::new(move |conn: &mut AnyConnection, only: bool| {
            // Shared: a savepoint, so a failing write rolls back alone and the
            // batch goes on. Alone, or the only write of its batch (the
            // tracker's combined write under load): the transaction is the
            // write's own, and a failure rolls it back. A savepoint would
            // only cost its statements and, on SQLite, a copy of every page
            // it changes in the statement journal.
            let own = alone || only;
            let outcome = if own { f(conn) } else { conn.transaction::<T, Error, _>(f) };
            let ok = !own || outcome.is_ok();
            let done = Box::new(move |commit: Result<()>| {
                pending.fetch_sub(1, Ordering::SeqCst);
                // Its own transaction: a failed write is what rolled it back: its own error first.
                let answer = if own { outcome.and_then(|v| commit.map(|()| v)) } else { commit.and(outcome) };
                let _ = tx.send(answer);
            }) as Completion;
            (done, ok)
        });
        if !self.queue.push(Job { alone, lane, run }) {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::unavailable("shutting down"));
        }
        rx.await.unwrap_or_else(|_| Err(Error::internal("a write was dropped by the writer")))
    }

    /// SQLite: after its next commit the writer runs `PRAGMA wal_checkpoint(TRUNCATE)`
    /// on its own connection, outside any transaction, before answering that
    /// batch: the database file gets the newest pages and the WAL, with every
    /// older copy of them (erased data included), is emptied. A checkpoint from
    /// another connection would take the write lock from under the writer's
    /// transactions; this one runs between them.
    pub fn request_wal_truncate(&self) {
        self.counters.truncate_wal.store(true, Ordering::SeqCst);
    }

    /// Stops taking writes, lets the queued ones commit, and joins the threads.
    pub fn close(&self) {
        self.queue.close();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for handle in threads {
            let _ = handle.join();
        }
    }

    pub fn stats(&self) -> Stats {
        Stats {
            batches: self.counters.batches.load(Ordering::Relaxed),
            writes: self.counters.writes.load(Ordering::Relaxed),
            failed_batches: self.counters.failed_batches.load(Ordering::Relaxed),
            pending: self.pending.load(Ordering::SeqCst),
            writers: self.writers,
        }
    }
}

/// Settings of the write connection alone (SQLite; the read pool keeps the
/// defaults). None weakens durability: every commit's writes still wait for
/// its fsync, on the sync thread (`db::durable`) or in the commit itself.
/// - `temp_store = MEMORY`: each write runs in its own savepoint, and SQLite
///   keeps the pages a savepoint may have to restore in a statement journal,
///   which spills to a temporary file past 64 KiB; a batch of a few dozen leads
///   went past that, so every batch wrote (and read back) a temp file.
/// - `cache_size`: 8 MiB (2,048 pages), four times the default and an eighth
///   of the 64 MiB it was. A commit drops the cache's pages past the end of
///   the file, and once a b-tree split has swapped two pages through SQLite's
///   lock-byte page number (`balance_nonroot`), that walks the whole page
///   hash, not a few buckets; random-key index splits (visitor and session
///   ids) make that most commits. With 64 MiB the walk was 13 % of the
///   writer thread under the tracker's load; a page not kept comes back from
///   the OS's page cache for a `pread`. See the README (session 27).
const SQLITE_WRITER_PRAGMAS: &str = "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -8192;";

/// With the checkpointer running, the writer checkpoints only past this many
/// WAL pages (16 MiB): a backstop, as under sustained writes the WAL can only
/// start over after a checkpoint the writer itself finished.
const SQLITE_WRITER_BACKSTOP: &str = "PRAGMA wal_autocheckpoint = 4096;";

/// The checkpointer copies the WAL into the database at most this often.
const CHECKPOINT_PAUSE: Duration = Duration::from_millis(100);

/// With the sync thread, `COMMIT` no longer fsyncs: the sync thread does,
/// before the commit's writes are answered (`db::durable`).
const SQLITE_WRITER_SYNC_OFF_PATH: &str = "PRAGMA synchronous = NORMAL;";

fn tune(conn: &mut AnyConnection, checkpointer: bool, syncer: bool) {
    if !conn.is_sqlite() {
        return;
    }
    let mut pragmas = SQLITE_WRITER_PRAGMAS.to_string();
    if checkpointer {
        pragmas.push_str(SQLITE_WRITER_BACKSTOP);
    }
    if syncer {
        pragmas.push_str(SQLITE_WRITER_SYNC_OFF_PATH);
    }
    if let Err(e) = conn.batch_execute(&pragmas) {
        tracing::warn!(error = %e, "tuning the write connection failed; writes go on with the defaults");
    }
}

/// SQLite: a thread of its own that checkpoints the WAL into the database file
/// (a PASSIVE checkpoint, which never blocks the writer) after commits, so the
/// copying and its fsyncs leave the writer's path: by default SQLite runs the
/// checkpoint inside the commit that crosses 1,000 WAL pages, and every write
/// waiting for the next batch waited for it. A checkpoint's durability is
/// SQLite's own (synchronous=FULL on this connection too); a crash mid-way
/// leaves the WAL to be replayed, as always.
struct Checkpointer {
    wake: mpsc::SyncSender<()>,
    flags: Arc<CheckpointFlags>,
    thread: JoinHandle<()>,
}

/// What the writer and the checkpointer tell each other without a wake-up:
/// a commit is only signalled through the channel while the checkpointer
/// waits for one. Every nudge during its pause or its checkpoint woke it
/// for nothing before: a futex call per commit in the writer (about 1 % of
/// it under the tracker's load) and a thread switched in and out each time.
#[derive(Default)]
struct CheckpointFlags {
    /// The checkpointer is (about to be) blocked waiting for a commit.
    idle: AtomicBool,
    /// A commit came that no checkpoint has started after.
    dirty: AtomicBool,
}

impl Checkpointer {
    fn start(manager: &super::Manager) -> Option<Checkpointer> {
        let mut conn = match r2d2::ManageConnection::connect(manager) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "no checkpointer connection; the writer checkpoints in its commits");
                return None;
            }
        };
        let (wake, rx) = mpsc::sync_channel::<()>(1);
        let flags = Arc::new(CheckpointFlags::default());
        let seen = flags.clone();
        let thread = std::thread::Builder::new().name("rastrod-checkpoint".into()).spawn(move || {
            let mut last: Option<Instant> = None;
            loop {
                // Idle first, then the check: a commit either finds it idle and
                // wakes it, or is seen here (both sides write, then read the other's flag).
                seen.idle.store(true, Ordering::SeqCst);
                if !seen.dirty.load(Ordering::SeqCst) && rx.recv().is_err() {
                    break;
                }
                seen.idle.store(false, Ordering::SeqCst);
                if let Some(t) = last
                    && !wait_until(&rx, t + CHECKPOINT_PAUSE)
                {
                    break;
                }
                // Commits from here on need the next checkpoint.
                seen.dirty.store(false, Ordering::SeqCst);
                if let Err(e) = conn.batch_execute("PRAGMA wal_checkpoint(PASSIVE)") {
                    tracing::warn!(error = %e, "WAL checkpoint failed; the next commit tries again");
                }
                last = Some(Instant::now());
            }
        });
        match thread {
            Ok(thread) => Some(Checkpointer { wake, flags, thread }),
            Err(e) => {
                tracing::warn!(error = %e, "no checkpointer thread; the writer checkpoints in its commits");
                None
            }
        }
    }

    /// After a commit: marked, and a wake-up sent only if the checkpointer waits for one.
    fn nudge(&self) {
        self.flags.dirty.store(true, Ordering::SeqCst);
        if self.flags.idle.swap(false, Ordering::SeqCst) {
            let _ = self.wake.try_send(());
        }
    }

    fn stop(self) {
        drop(self.wake);
        let _ = self.thread.join();
    }
}

/// Waits until `until`, swallowing wake-ups; false once the writer is gone.
fn wait_until(rx: &mpsc::Receiver<()>, until: Instant) -> bool {
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        match rx.recv_timeout(left) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
}

fn writer_loop(
    mut conn: AnyConnection,
    manager: &super::Manager,
    queue: &Queue,
    (ordered, batch_max): (bool, usize),
    durable: Option<(SyncFn, Arc<Durability>)>,
    counters: &Counters,
) {
    let checkpointer = if conn.is_sqlite() { Checkpointer::start(manager) } else { None };
    let syncer = durable.filter(|_| conn.is_sqlite()).and_then(|(sync, durability)| {
        Syncer::start(sync, durability)
            .map_err(|e| tracing::warn!(error = %e, "no sync thread; each commit fsyncs on the writer's thread"))
            .ok()
    });
    tune(&mut conn, checkpointer.is_some(), syncer.is_some());
    let mut taker = if ordered { Taker::OrderedFirst } else { Taker::AnyOnly };
    while let Some((mut batch, skipped)) = queue.take(taker, batch_max) {
        taker = taker.next(skipped);
        let size = batch.len() as u64;
        let mut number = None;
        let mut completions: Vec<Completion> = Vec::with_capacity(batch.len());
        let committed = std::panic::catch_unwind(AssertUnwindSafe(|| {
            conn.transaction::<(), Error, _>(|c| {
                let only = batch.len() == 1;
                for job in batch.drain(..) {
                    let (done, ok) = (job.run)(c, only);
                    completions.push(done);
                    if !ok {
                        // Only a write with the transaction to itself answers false: it rolls back.
                        return Err(Error::internal("the write failed; its transaction was rolled back"));
                    }
                }
                // Numbered right before its COMMIT: a read that saw the
                // commit counts it, and reads meanwhile never wait for the
                // batch's own work, only for earlier commits' fsyncs.
                number = syncer.as_ref().map(Syncer::number);
                Ok(())
            })
        }));
        // A panic is known from the unwind itself, not from the text answered for it.
        let panicked = committed.is_err();
        let outcome = match committed {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::internal("a write panicked; its batch was rolled back")),
        };
        counters.batches.fetch_add(1, Ordering::Relaxed);
        counters.writes.fetch_add(size, Ordering::Relaxed);
        if outcome.is_err() {
            counters.failed_batches.fetch_add(1, Ordering::Relaxed);
            // A broken connection (database restarted, a panic mid-transaction)
            // is replaced so the next batch starts clean.
            if conn.batch_execute("SELECT 1").is_err() || panicked {
                match r2d2::ManageConnection::connect(manager) {
                    Ok(fresh) => {
                        conn = fresh;
                        tune(&mut conn, checkpointer.is_some(), syncer.is_some());
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "reopening the write connection failed; the next batch tries again")
                    }
                }
            }
        }
        if outcome.is_ok()
            && conn.is_sqlite()
            && counters.truncate_wal.swap(false, Ordering::SeqCst)
            && let Err(e) = conn.batch_execute("PRAGMA wal_checkpoint(TRUNCATE)")
        {
            tracing::warn!(error = %e, "truncating the WAL failed; the next request tries again");
        }
        if outcome.is_ok()
            && let Some(c) = &checkpointer
        {
            c.nudge();
        }
        match (&syncer, number, &outcome) {
            (Some(syncer), Some(number), Ok(())) => syncer.committed(number, completions),
            _ => {
                for done in completions {
                    done(outcome.clone());
                }
                // A number taken is always handed back, so later ones can be marked durable.
                if let (Some(syncer), Some(number)) = (&syncer, number) {
                    syncer.committed(number, Vec::new());
                }
            }
        }
    }
    if let Some(s) = syncer {
        s.stop();
    }
    if let Some(c) = checkpointer {
        c.stop();
    }
}

#[cfg(test)]
mod tests {
    use diesel::RunQueryDsl;

    use crate::db::{AnyConnection, Db};
    use crate::error::{Code, Error};

    crate::row! {
        struct N {
            n: i64,
        }
    }

    /// A job that does nothing, known by its lane and whether it goes alone.
    fn job(lane: super::Lane, alone: bool) -> super::Job {
        super::Job { alone, lane, run: Box::new(|_, _| (Box::new(|_| ()), true)) }
    }

    fn shape(batch: &[super::Job]) -> Vec<(super::Lane, bool)> {
        batch.iter().map(|j| (j.lane, j.alone)).collect()
    }

    fn take(q: &super::Queue, taker: super::Taker, max: usize) -> (Vec<(super::Lane, bool)>, bool) {
        let (batch, skipped) = q.take(taker, max).unwrap();
        (shape(&batch), skipped)
    }

    // rule: STORE-11
    #[test]
    fn the_first_writer_takes_every_write_in_order_the_others_only_any_lane_ones() {
        use super::Lane::{Any, Ordered};
        use super::Taker::{AnyOnly, Every, OrderedFirst};
        let q = super::Queue::default();
        for (lane, alone) in [(Ordered, false), (Any, false), (Ordered, false), (Any, false), (Any, true), (Any, false)]
        {
            assert!(q.push(job(lane, alone)));
        }
        // Another writer: the shared Any writes, past the ordered ones, up to the one that goes alone.
        assert_eq!(take(&q, AnyOnly, 64).0, vec![(Any, false), (Any, false)]);
        // The alone one by itself, then the last.
        assert_eq!(take(&q, AnyOnly, 64).0, vec![(Any, true)]);
        assert_eq!(take(&q, AnyOnly, 64).0, vec![(Any, false)]);
        // The ordered writes are the first writer's, in order, within the batch bound.
        assert!(q.push(job(Any, false)));
        assert_eq!(take(&q, OrderedFirst, 2), (vec![(Ordered, false), (Ordered, false)], true));
        q.close();
        assert!(!q.push(job(Ordered, false)), "closed");
        assert_eq!(take(&q, Every, 64).0, vec![(Any, false)], "what was queued is still written");
        assert!(q.take(Every, 64).is_none() && q.take(AnyOnly, 64).is_none());
    }

    // rule: STORE-13
    #[test]
    fn the_first_writer_batches_the_ordered_writes_first_and_then_every_write_in_order() {
        use super::Lane::{Any, Ordered};
        use super::Taker::{Every, OrderedFirst};
        let q = super::Queue::default();
        for (lane, alone) in [(Any, false), (Any, false), (Ordered, false), (Any, false), (Ordered, false)] {
            assert!(q.push(job(lane, alone)));
        }
        // The two ordered writes, past the tracker's before them, which wait.
        let (batch, skipped) = take(&q, OrderedFirst, 64);
        assert_eq!((batch, skipped), (vec![(Ordered, false), (Ordered, false)], true));
        assert_eq!(OrderedFirst.next(skipped), Every);
        // Another ordered write came meanwhile: the next batch is still every write in order.
        assert!(q.push(job(Ordered, false)));
        assert_eq!(take(&q, Every, 64), (vec![(Any, false), (Any, false), (Any, false), (Ordered, false)], false));
        assert_eq!(Every.next(false), OrderedFirst);
        // With no ordered write waiting, the first writer takes the others as before.
        assert!(q.push(job(Any, false)));
        assert_eq!(take(&q, OrderedFirst, 64), (vec![(Any, false)], false));
        // An ordered write that goes alone is a batch by itself, even first.
        for (lane, alone) in [(Any, false), (Ordered, true), (Ordered, false)] {
            assert!(q.push(job(lane, alone)));
        }
        assert_eq!(take(&q, OrderedFirst, 64), (vec![(Ordered, true)], true));
        assert_eq!(take(&q, Every, 64), (vec![(Any, false), (Ordered, false)], false));
    }

    fn db() -> (Db, std::path::PathBuf) {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let dir = std::env::temp_dir().join(format!("rastrod_writer_{}_{nanos}", std::process::id()));
        let db = Db::open(&format!("sqlite://{}", dir.join("w.db").display()), 2, 64, 1_000).unwrap();
        (db, dir)
    }

    fn insert(c: &mut AnyConnection, x: i64) -> crate::error::Result<()> {
        diesel::sql_query(format!("INSERT INTO t (x) VALUES ({x})")).execute(c)?;
        Ok(())
    }

    async fn rows(db: &Db) -> i64 {
        db.run(|c| Ok(diesel::sql_query("SELECT COUNT(*) AS n FROM t").get_result::<N>(c)?.n)).await.unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_only_write_of_a_batch_has_the_transaction_to_itself() {
        let (db, dir) = db();
        db.write(|c| Ok(diesel::sql_query("CREATE TABLE t (x BIGINT NOT NULL)").execute(c)?)).await.unwrap();
        // One write at a time, each the only one of its batch: no savepoint,
        // so a failure rolls back the transaction, the rows it wrote with it,
        // and answers its own error; the next write goes on.
        let failing = db
            .write(|c| {
                insert(c, 1)?;
                insert(c, 2)?;
                Err::<(), _>(Error::invalid("the only write fails"))
            })
            .await
            .unwrap_err();
        assert_eq!(failing.code, Code::InvalidArgument, "its own error, not the rollback's: {failing}");
        assert!(failing.to_string().contains("the only write fails"), "{failing}");
        assert_eq!(rows(&db).await, 0, "nothing it wrote is kept");
        db.write(|c| insert(c, 3)).await.unwrap();
        assert_eq!(rows(&db).await, 1);
        let stats = db.writer_stats();
        assert_eq!(stats.failed_batches, 1);
        db.close();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_alone_write_commits_or_rolls_back_by_itself_and_shared_ones_go_on() {
        let (db, dir) = db();
        db.write(|c| Ok(diesel::sql_query("CREATE TABLE t (x BIGINT NOT NULL)").execute(c)?)).await.unwrap();
        // Shared and alone writes queued at once, a failing one of each kind among them.
        let mut tasks = Vec::new();
        for i in 0..40i64 {
            let db = db.clone();
            tasks.push(tokio::spawn(async move {
                let fail = i % 10 == 3;
                let write = move |c: &mut AnyConnection| {
                    for k in 0..50 {
                        insert(c, i * 100 + k)?;
                    }
                    if fail { Err(Error::invalid(format!("write {i} fails"))) } else { Ok(i) }
                };
                if i % 2 == 0 { db.write_alone(write).await } else { db.write(write).await }
            }));
        }
        for (i, t) in tasks.into_iter().enumerate() {
            match t.await.unwrap() {
                Ok(v) => assert_eq!(v, i as i64),
                Err(e) => {
                    assert_eq!(i % 10, 3, "write {i} failed: {e}");
                    assert_eq!(e.code, Code::InvalidArgument, "its own error, not the rollback's");
                    assert!(e.to_string().contains(&format!("write {i} fails")), "{e}");
                }
            }
        }
        assert_eq!(rows(&db).await, 36 * 50, "every write but the four failing ones, whole");
        db.close();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_checkpointer_copies_a_stream_of_commits_and_the_first_commit_after_a_quiet_spell() {
        #[derive(diesel::QueryableByName)]
        struct Pages {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let (db, dir) = db();
        let file = dir.join("w.db");
        // The database's size as its readers see it (the WAL's pages included).
        let logical = || async {
            db.run(|c| {
                let q = "SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()";
                Ok(diesel::sql_query(q).get_result::<Pages>(c)?.n as u64)
            })
            .await
            .unwrap()
        };
        // Waits (a condition, polled) until the file itself holds every page: all checkpointed.
        let copied = |want: u64| {
            for _ in 0..2_000 {
                if std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) == want {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            panic!("the WAL was never checkpointed into the file ({want} bytes)");
        };
        db.write(|c| Ok(diesel::sql_query("CREATE TABLE t (x BIGINT NOT NULL, pad TEXT)").execute(c)?)).await.unwrap();
        let fill = |from: i64| {
            move |c: &mut AnyConnection| {
                let values: Vec<String> = (from..from + 200).map(|i| format!("({i}, printf('%.500c', 'x'))")).collect();
                Ok(diesel::sql_query(format!("INSERT INTO t (x, pad) VALUES {}", values.join(", "))).execute(c)?)
            }
        };
        // A stream of commits, each nudging the checkpointer while it pauses or works.
        for k in 0..20 {
            db.write(fill(k * 200)).await.unwrap();
        }
        let streamed = logical().await;
        copied(streamed);
        // All copied and quiet; then one commit, which alone must wake the checkpointer.
        db.write(fill(1_000_000)).await.unwrap();
        let last = logical().await;
        assert!(last > streamed, "the last commit added pages");
        copied(last);
        assert_eq!(rows(&db).await, 21 * 200);
        db.close();
        let _ = std::fs::remove_dir_all(dir);
    }
}
