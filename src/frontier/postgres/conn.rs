//! The connection on its own thread, its heartbeat, and how its errors read.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement};

/// A PostgreSQL error as one line: the server's own message when there is one.
pub(super) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

/// Why a connection failed, never quoting its password (whatever the driver's text holds).
pub(super) fn connect_error(e: &postgres::Error, config: &postgres::Config) -> String {
    let mut msg = format!("cannot connect: {}", describe(e));
    if let Some(pw) = config
        .get_password()
        .and_then(|p| std::str::from_utf8(p).ok())
    {
        if !pw.is_empty() {
            msg = msg.replace(pw, crate::frontier::MASK);
        }
    }
    crate::frontier::mask_secrets(&msg)
}

/// Deadlocks and serialisation failures: the transaction may simply be run again.
pub(super) fn retryable(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED)
        || e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE)
}

/// Runs one transaction, again after a deadlock or serialisation failure (up to ten more tries):
/// nothing of a failed try stays, so the same inputs are simply given again.
pub(super) fn with_retries<T>(
    mut attempt: impl FnMut() -> Result<T, postgres::Error>,
) -> Result<T, postgres::Error> {
    let mut tries = 0;
    loop {
        match attempt() {
            Err(e) if retryable(&e) && tries < 10 => tries += 1,
            other => return other,
        }
    }
}

/// A statement's parameters.
pub(super) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// The client with the statements it has prepared. A statement given as text costs two round
/// trips (prepare, then run); prepared once per connection, every later use costs one.
pub(super) struct Conn {
    pub(super) client: Client,
    prepared: HashMap<&'static str, Statement>,
    /// Round trips so far (statements sent, prepares, transaction starts and ends).
    trips: Arc<AtomicU64>,
}

impl Conn {
    /// Counts `n` round trips made through `client` directly.
    pub(super) fn count(&self, n: u64) {
        self.trips.fetch_add(n, Ordering::Relaxed);
    }

    fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.prepared.get(sql) {
            self.count(1);
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.count(2);
        self.prepared.insert(sql, s.clone());
        Ok(s)
    }

    pub(super) fn query(
        &mut self,
        sql: &'static str,
        p: Params,
    ) -> Result<Vec<Row>, postgres::Error> {
        let st = self.statement(sql)?;
        self.client.query(&st, p)
    }

    pub(super) fn query_opt(
        &mut self,
        sql: &'static str,
        p: Params,
    ) -> Result<Option<Row>, postgres::Error> {
        let st = self.statement(sql)?;
        self.client.query_opt(&st, p)
    }

    pub(super) fn query_one(
        &mut self,
        sql: &'static str,
        p: Params,
    ) -> Result<Row, postgres::Error> {
        let st = self.statement(sql)?;
        self.client.query_one(&st, p)
    }

    pub(super) fn execute(&mut self, sql: &'static str, p: Params) -> Result<u64, postgres::Error> {
        let st = self.statement(sql)?;
        self.client.execute(&st, p)
    }
}

type Task = Box<dyn FnOnce(&mut Conn) + Send>;

/// The connection, on its own thread (see the module documentation).
pub(super) struct Db {
    tx: Option<mpsc::Sender<Task>>,
    /// Round trips made on the connection (its thread counts them).
    pub(super) trips: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

/// What the connection thread does when no call is waiting.
pub(super) struct Beat {
    pub(super) worker: String,
    pub(super) lease: Duration,
}

impl Db {
    pub(super) fn connect(url: &str, beat: Beat) -> Result<Db, String> {
        let config: postgres::Config = url
            .parse()
            .map_err(|e: postgres::Error| format!("not a PostgreSQL address: {}", describe(&e)))?;
        let (tx, rx) = mpsc::channel::<Task>();
        let trips = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&trips);
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
        let thread = std::thread::Builder::new()
            .name("frontier-db".into())
            .spawn(move || {
                let mut config = config;
                config.connect_timeout(Duration::from_secs(10));
                let client = match config.connect(NoTls) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(connect_error(&e, &config)));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let mut conn = Conn {
                    client,
                    prepared: HashMap::new(),
                    trips: counted,
                };
                serve(&mut conn, &rx, &beat);
            })
            .map_err(|e| format!("cannot start the database thread: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Db {
                tx: Some(tx),
                trips,
                thread: Some(thread),
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the database thread stopped".into()),
        }
    }

    /// Runs `f` on the connection and waits for its answer.
    pub(super) fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Conn) -> R + Send + 'static,
    ) -> Result<R, String> {
        let (rtx, rrx) = mpsc::sync_channel(1);
        let task: Task = Box::new(move |c| {
            let _ = rtx.send(f(c));
        });
        self.tx
            .as_ref()
            .ok_or("the database connection is closed")?
            .send(task)
            .map_err(|_| "the database connection is closed")?;
        rrx.recv()
            .map_err(|_| "the database thread stopped".to_string())
    }
}

impl Db {
    /// Runs `f` on the connection without waiting for it (its result is its own business).
    pub(super) fn send(&self, f: impl FnOnce(&mut Conn) + Send + 'static) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Box::new(f));
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The longest time between two heartbeats, whatever the lease: the heartbeat also moves on
/// the rate marks of `archiver status` (at the first beat 30 s after the last move), so the
/// marks move every 30 to 40 s and the rate's window is 30 to about 70 s: about the last minute.
const BEAT_AT_MOST: Duration = Duration::from_secs(10);

/// The connection thread's loop: calls as they come, and the heartbeat at least every third of
/// the lease (and every [`BEAT_AT_MOST`]), so a busy worker is never taken for a dead one.
fn serve(conn: &mut Conn, rx: &mpsc::Receiver<Task>, beat: &Beat) {
    let every = (beat.lease / 3).clamp(Duration::from_millis(200), BEAT_AT_MOST);
    let mut last = Instant::now();
    loop {
        let wait = every.saturating_sub(last.elapsed());
        match rx.recv_timeout(wait) {
            Ok(task) => task(conn),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        if last.elapsed() >= every {
            // A failed beat is retried at the next one; calls report their own errors.
            let _ = heartbeat(conn, beat);
            last = Instant::now();
        }
    }
}

fn heartbeat(conn: &mut Conn, beat: &Beat) -> Result<(), postgres::Error> {
    let lease = beat.lease.as_secs_f64();
    // One statement: the worker's heartbeat, its rate marks (moved on at most every 30 s:
    // `archiver status` reads its rate over about the last minute from them) and the expiry
    // of every budget it holds.
    conn.execute(
        "WITH w AS (UPDATE workers SET heartbeat = now(), \
           prev_done = CASE WHEN mark_at <= now() - interval '30 seconds' THEN mark_done ELSE prev_done END, \
           prev_at = CASE WHEN mark_at <= now() - interval '30 seconds' THEN mark_at ELSE prev_at END, \
           mark_done = CASE WHEN mark_at <= now() - interval '30 seconds' THEN done ELSE mark_done END, \
           mark_at = CASE WHEN mark_at <= now() - interval '30 seconds' THEN now() ELSE mark_at END \
           WHERE name = $1) \
         UPDATE budgets SET expires = now() + $2 * interval '1 second' WHERE holder = $1",
        &[&beat.worker, &lease],
    )?;
    Ok(())
}
