//! The SQLite database: one writer thread, read-only connections for readers.
//!
//! Invariant: only the `sqlite-writer` thread holds a read-write connection.
//! Every write is a job on its channel; the writer runs whatever is waiting in one
//! transaction (each job inside its own savepoint, so one failing job does not
//! undo the others) and answers each caller after the commit.

mod backup;
pub mod check;
pub mod migrations;

pub use backup::backup;

/// The database file in the data directory (the server, `backup`, `import-kasm`).
pub const FILE: &str = "vrrp-monitor.db";

/// A row id derived from what a provisioning file names (`kind` "webhook" or
/// "silence", and its name): a UUID (version 8) from SHA-256, so a file's item
/// keeps its id across reloads, restarts and both servers of a pair.
pub fn stable_id(kind: &str, name: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("vrrp-monitor {kind}\0{name}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .to_string()
}

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

#[derive(Debug)]
pub enum DbError {
    Sqlite(rusqlite::Error),
    /// The disk holding the database is full: nothing was written. The writer logs
    /// the streak once; callers refuse the write without logging it again.
    StorageFull,
    /// The writer thread is gone (the server is stopping).
    WriterGone,
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::Sqlite(e) => write!(f, "database error: {e}"),
            DbError::StorageFull => write!(f, "the disk holding the database is full"),
            DbError::WriterGone => write!(f, "database writer has stopped"),
        }
    }
}

impl std::error::Error for DbError {}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        if is_disk_full(&e) {
            DbError::StorageFull
        } else {
            DbError::Sqlite(e)
        }
    }
}

impl DbError {
    /// Logs a failed write with `context`, unless the disk is full: that is logged
    /// once per streak by the writer, not once per refused write.
    pub fn log_write_failure(&self, context: std::fmt::Arguments<'_>) {
        match self {
            DbError::StorageFull => log::debug!("{context}: {self}"),
            _ => log::error!("{context}: {self}"),
        }
    }
}

fn is_disk_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

/// Why a batch's transaction did not commit, as every job of it is told.
#[derive(Clone, Debug)]
struct CommitFailure {
    storage_full: bool,
    text: String,
}

impl CommitFailure {
    fn of(e: &rusqlite::Error) -> CommitFailure {
        CommitFailure {
            storage_full: is_disk_full(e),
            text: e.to_string(),
        }
    }
}

/// What the writer does with a job once the transaction committed or failed.
type Completion = Box<dyn FnOnce(Result<(), CommitFailure>) + Send>;
/// A write: runs on the writer's connection (or, when no transaction could be
/// begun, is told why without running) and says whether it succeeded.
type WriteJob = Box<dyn FnOnce(Result<&Connection, CommitFailure>) -> (bool, Completion) + Send>;

/// Most jobs batched into one transaction.
const MAX_BATCH: usize = 256;
/// Read-only connections kept open for reuse.
const READ_POOL: usize = 8;

pub struct Db {
    path: PathBuf,
    writer: Sender<WriteJob>,
    readers: Mutex<Vec<Connection>>,
    /// Dropped with the `Db`: ends `sqlite-checkpoint`.
    _checkpoint_stop: Sender<()>,
}

impl Db {
    /// Opens (creating if needed) the database, applies migrations and starts the
    /// writer thread.
    pub fn open(path: &Path, now: &str) -> Result<(Db, JoinHandle<()>), OpenError> {
        check::existing_file(path, migrations::MIGRATIONS.len() as i64)
            .map_err(OpenError::Refused)?;
        let mut conn = Connection::open(path).map_err(OpenError::Open)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA foreign_keys = ON;
             PRAGMA busy_timeout = 5000;",
        )
        .map_err(OpenError::Open)?;
        let applied = migrations::apply(&mut conn, now).map_err(OpenError::Migration)?;
        for name in applied {
            log::info!("Applied database migration {name}");
        }
        // SQLite's own checkpoint runs inside the commit that crosses 1,000 WAL
        // pages: at 5,000 readings a second that is a few times a second, and
        // every agent thread waiting on that commit waits for the copy too. A
        // connection of its own checkpoints beside the writer instead (WAL
        // lets the two run at once); the writer only appends.
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(OpenError::Open)?;
        let checkpointer = Connection::open(path).map_err(OpenError::Open)?;
        let (tx, rx) = unbounded::<WriteJob>();
        let handle = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || run_writer(conn, rx))
            .map_err(OpenError::Thread)?;
        let (checkpoint_stop, stop) = bounded::<()>(0);
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || run_checkpoints(checkpointer, stop))
            .map_err(OpenError::Thread)?;
        Ok((
            Db {
                path: path.to_owned(),
                writer: tx,
                readers: Mutex::new(Vec::new()),
                _checkpoint_stop: checkpoint_stop,
            },
            handle,
        ))
    }

    /// Jobs waiting for the writer thread (a gauge in `/metrics`): each is a
    /// caller blocked until its transaction commits.
    pub fn queued_writes(&self) -> usize {
        self.writer.len()
    }

    /// Queues an empty job and returns at once: the receiver gets `true` once the
    /// writer thread reached it and its batch committed (`false`: the commit
    /// failed). The heartbeat's sign that the writer is working; it
    /// waits with its own deadline instead of blocking like [`write`](Self::write).
    pub fn probe_writer(&self) -> Receiver<bool> {
        let (tx, rx) = bounded(1);
        let job: WriteJob = Box::new(move |_conn| {
            let completion: Completion = Box::new(move |commit| {
                let _ = tx.send(commit.is_ok());
            });
            (true, completion)
        });
        // A writer that is gone drops the sender: the receiver then says so.
        let _ = self.writer.send(job);
        rx
    }

    /// Runs `f` on the writer thread inside the current batch's transaction.
    /// Returns after the transaction committed; a failed commit is an error.
    pub fn write<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        self.write_then(f, |_| {})
    }

    /// As [`write`](Self::write); then, once the transaction committed and still
    /// on the writer thread, `committed` is given what `f` returned (before the
    /// caller is answered). State kept beside the database (the cluster history's
    /// mirror) changes this way in commit order, and only with what committed.
    pub fn write_then<T, E, F, G>(&self, f: F, committed: G) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        G: FnOnce(&mut T) + Send + 'static,
    {
        let (reply_tx, reply_rx) = reply::<Result<T, E>>();
        let job: WriteJob = Box::new(move |conn| {
            let result = match conn {
                Ok(conn) => f(conn),
                Err(why) => Err(E::from(commit_error(why))),
            };
            let ok = result.is_ok();
            let completion: Completion = Box::new(move |commit| {
                let answer = match commit {
                    Ok(()) => result.map(|mut value| {
                        committed(&mut value);
                        value
                    }),
                    Err(why) => Err(E::from(commit_error(why))),
                };
                reply_tx.send(answer);
            });
            (ok, completion)
        });
        self.writer
            .send(job)
            .map_err(|_| E::from(DbError::WriterGone))?;
        reply_rx
            .recv()
            .ok_or_else(|| E::from(DbError::WriterGone))?
    }

    /// Runs `f` on a read-only connection.
    pub fn read<T, E, F>(&self, f: F) -> Result<T, E>
    where
        E: From<DbError>,
        F: FnOnce(&Connection) -> Result<T, E>,
    {
        let conn = match self.readers.lock().pop() {
            Some(c) => c,
            None => self.open_reader().map_err(E::from)?,
        };
        let result = f(&conn);
        let mut pool = self.readers.lock();
        if pool.len() < READ_POOL {
            pool.push(conn);
        }
        result
    }

    /// Whether the database file can be queried now, on a fresh connection (a pooled
    /// one could answer from its cache after the file broke).
    pub fn is_healthy(&self) -> bool {
        self.open_reader()
            .and_then(|c| {
                c.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
                    r.get::<_, i64>(0)
                })
                .map_err(DbError::from)
            })
            .is_ok()
    }

    fn open_reader(&self) -> Result<Connection, DbError> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // Readers are many and short-lived; the default 2 MiB page cache each would
        // dominate the server's memory. The OS page cache serves repeats anyway.
        conn.execute_batch("PRAGMA cache_size = -256")?;
        Ok(conn)
    }
}

/// A write's answer, from the writer thread to the one caller waiting for it.
/// The caller sleeps until it is sent: a channel's receive spins and yields
/// first, and with every agent's reading waiting for a commit that spinning
/// was most of an agent thread's time (commits take far longer than a spin).
struct Reply<T> {
    /// `Some(None)`: the writer let go of the job without an answer.
    slot: Mutex<Option<Option<T>>>,
    waiter: std::thread::Thread,
}

struct ReplySender<T>(Option<std::sync::Arc<Reply<T>>>);
struct ReplyReceiver<T>(std::sync::Arc<Reply<T>>);

/// A one-answer channel for the calling thread.
fn reply<T>() -> (ReplySender<T>, ReplyReceiver<T>) {
    let shared = std::sync::Arc::new(Reply {
        slot: Mutex::new(None),
        waiter: std::thread::current(),
    });
    (ReplySender(Some(shared.clone())), ReplyReceiver(shared))
}

impl<T> ReplySender<T> {
    fn send(mut self, value: T) {
        self.deliver(Some(value));
    }

    fn deliver(&mut self, value: Option<T>) {
        if let Some(shared) = self.0.take() {
            *shared.slot.lock() = Some(value);
            shared.waiter.unpark();
        }
    }
}

impl<T> Drop for ReplySender<T> {
    fn drop(&mut self) {
        self.deliver(None);
    }
}

impl<T> ReplyReceiver<T> {
    /// Waits for the answer; `None` when the job was dropped unanswered.
    fn recv(self) -> Option<T> {
        loop {
            if let Some(answer) = self.0.slot.lock().take() {
                return answer;
            }
            std::thread::park();
        }
    }
}

fn commit_error(why: CommitFailure) -> DbError {
    if why.storage_full {
        return DbError::StorageFull;
    }
    DbError::Sqlite(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
        Some(why.text),
    ))
}

#[derive(Debug)]
pub enum OpenError {
    /// The file exists but is not one we may open for writing.
    Refused(check::Refusal),
    Open(rusqlite::Error),
    Migration(migrations::MigrationError),
    Thread(std::io::Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Refused(why) => write!(f, "{why}"),
            OpenError::Open(e) => write!(f, "cannot open the database: {e}"),
            OpenError::Migration(e) => write!(f, "{e}"),
            OpenError::Thread(e) => write!(f, "cannot start the database writer: {e}"),
        }
    }
}

/// How often the checkpointer copies the WAL back: about as often as SQLite's
/// 1,000-page rule did at 5,000 readings a second.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// The `sqlite-checkpoint` loop: a PASSIVE checkpoint (it copies what no reader
/// still needs and never waits for anyone) every [`CHECKPOINT_EVERY`], until the
/// `Db` is dropped (its end of `stop` goes with it).
fn run_checkpoints(conn: Connection, stop: Receiver<()>) {
    while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
        stop.recv_timeout(CHECKPOINT_EVERY)
    {
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            log::debug!("WAL checkpoint: {e}");
        }
    }
}

/// Runs a statement without parsing it again: every job's savepoint costs two,
/// and at 5,000 readings a second parsing them showed in the writer's profile.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute([])
}

fn run_writer(conn: Connection, inbox: Receiver<WriteJob>) {
    // The savepoints and the statements of the hot jobs (readings, activity).
    conn.set_prepared_statement_cache_capacity(64);
    let mut full = FullDiskStreak::default();
    while let Ok(first) = inbox.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match inbox.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let mut completions = Vec::with_capacity(jobs.len());
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            let failure = CommitFailure::of(&e);
            if !full.failed(&failure, jobs.len()) {
                log::error!("Cannot begin a database transaction: {e}");
            }
            for job in jobs {
                let (_, completion) = job(Err(failure.clone()));
                completion(Err(failure.clone()));
            }
            continue;
        }
        let mut wrote = false;
        let batch = jobs.len();
        for job in jobs {
            let _ = run_cached(&conn, "SAVEPOINT job");
            let (ok, completion) = job(Ok(&conn));
            if ok {
                let _ = run_cached(&conn, "RELEASE job");
                wrote = true;
            } else {
                let _ = run_cached(&conn, "ROLLBACK TO job");
                let _ = run_cached(&conn, "RELEASE job");
            }
            completions.push(completion);
        }
        let commit = conn.execute_batch("COMMIT").map_err(|e| {
            let failure = CommitFailure::of(&e);
            if !full.failed(&failure, batch) {
                log::error!("Database commit failed: {e}");
            }
            let _ = conn.execute_batch("ROLLBACK");
            failure
        });
        if commit.is_ok() && wrote {
            full.committed();
        }
        for completion in completions {
            completion(commit.clone());
        }
    }
}

/// A run of commits refused because the disk is full: one line when it starts and
/// one when a write lands again, however many writes were refused between.
#[derive(Default)]
struct FullDiskStreak {
    since: Option<(std::time::Instant, u64)>,
}

impl FullDiskStreak {
    /// Counts a failed batch; false when the failure is not a full disk (the caller
    /// logs it as usual).
    fn failed(&mut self, failure: &CommitFailure, jobs: usize) -> bool {
        if !failure.storage_full {
            return false;
        }
        match &mut self.since {
            Some((_, refused)) => *refused += jobs as u64,
            None => {
                log::error!(
                    "Database writes fail: the disk holding the data directory is full. \
                     Reads go on; writes are answered 503 and agents' events are not \
                     acknowledged (they offer them again) until space is freed"
                );
                self.since = Some((std::time::Instant::now(), jobs as u64));
            }
        }
        true
    }

    fn committed(&mut self) {
        if let Some((since, refused)) = self.since.take() {
            log::warn!(
                "Database writes work again after the disk was full for {} s ({refused} writes refused)",
                since.elapsed().as_secs()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_temp() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let (db, _writer) = Db::open(&dir.path().join("t.db"), "now").unwrap();
        db.write(|c| Ok::<_, DbError>(c.execute_batch("CREATE TABLE t (v INTEGER UNIQUE)")?))
            .unwrap();
        (dir, db)
    }

    fn count(db: &Db) -> i64 {
        db.read(|c| Ok::<_, DbError>(c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))?))
            .unwrap()
    }

    #[test]
    fn concurrent_writers_all_land_and_a_failing_job_undoes_only_itself() {
        let (_dir, db) = open_temp();
        let db = std::sync::Arc::new(db);
        let threads: Vec<_> = (0..16)
            .map(|i| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for j in 0..50 {
                        let v = i * 1000 + j;
                        // Every fifth job inserts and then fails: its insert must vanish
                        // while the jobs batched with it stay.
                        let fail = j % 5 == 0;
                        let r = db.write(move |c| {
                            c.execute("INSERT INTO t (v) VALUES (?1)", [v])?;
                            if fail {
                                c.execute("INSERT INTO t (v) VALUES (?1)", [v])?;
                            }
                            Ok::<_, DbError>(())
                        });
                        assert_eq!(r.is_err(), fail);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(count(&db), 16 * 40);
    }

    #[test]
    fn readers_see_committed_writes() {
        let (_dir, db) = open_temp();
        db.write(|c| Ok::<_, DbError>(c.execute("INSERT INTO t (v) VALUES (1)", [])?))
            .unwrap();
        assert_eq!(count(&db), 1);
        assert!(db.is_healthy());
    }

    #[test]
    fn the_committed_hook_runs_on_the_writer_in_order_and_only_after_a_commit() {
        let (_dir, db) = open_temp();
        let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
        for (v, refused) in [(1, false), (2, false), (2, true), (3, false)] {
            let seen = seen.clone();
            let r = db.write_then(
                move |c| {
                    Ok::<_, DbError>(c.execute("INSERT INTO t (v) VALUES (?1)", [v]).map(|_| v)?)
                },
                move |v| {
                    let thread = std::thread::current().name().map(str::to_owned);
                    seen.lock().push((*v, thread));
                },
            );
            assert_eq!(r.is_err(), refused);
        }
        let writer = Some("sqlite-writer".to_owned());
        assert_eq!(
            *seen.lock(),
            vec![(1, writer.clone()), (2, writer.clone()), (3, writer)],
            "the refused second insert of 2 is not seen"
        );
    }
}
