//! The shared frontier: one crawl's queues, seen-set, in-flight URLs, workers and politeness
//! budgets in a PostgreSQL database, so many workers (each `archiver crawl` on its own machine,
//! with its own output folder) crawl one frontier.
//!
//! # Why a synchronous client on its own thread
//! The crawl engine calls the [`Frontier`] trait synchronously, under its state lock, exactly as
//! it calls the SQLite frontier. The `postgres` crate is tokio-postgres behind a private
//! single-thread runtime; it cannot be entered from the engine's runtime threads, so the
//! connection lives on a thread of its own and each call is a closure sent to it. The engine
//! stays as it is, and the same thread renews this worker's heartbeat and leases between calls,
//! whatever the engine is doing.
//!
//! # Consistency without long transactions
//! Two workers must never hold row locks for long or in different orders (that is how shared
//! queues deadlock). So changes are buffered in memory and written by one short transaction
//! (`flush`, at `commit` and before any read that needs them): seen keys first, sorted, then the
//! queue rows, then the site counters locked in id order. A URL that two workers found at the
//! same moment is queued once: the seen-set insert (`ON CONFLICT DO NOTHING RETURNING`) decides
//! which push is real. `pop` is one statement that moves the first row of a site (requisites
//! first, then pages, each in push order) to `flight` under this worker's name. A deadlock or
//! serialisation failure is retried; any other error stops the crawl, which resumes from the
//! last commit.
//!
//! # Liveness
//! Every worker has a row in `workers` whose `heartbeat` its connection thread renews every
//! third of `lease_seconds`, together with the expiry of the budgets it leases. A worker whose
//! heartbeat is older than `lease_seconds` is dead: its in-flight URLs are queued again by
//! whichever worker looks next ([`Frontier::poll`]), and its leases lapse.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use url::Url;

use crate::frontier::sqlite::CrawlIdentity;
use crate::frontier::{seen_key, Candidate, Frontier, FrontierError, Lease, SiteFacts};

/// Bumped whenever the tables change meaning: another format is refused, not guessed at.
const FORMAT_VERSION: i32 = 1;

/// Every table lives in this schema, so the crawl can share a database with other data.
const SCHEMA_NAME: &str = "archiver";

/// Held (as a transaction advisory lock) while a worker creates or checks the tables, so two
/// workers starting at once do not both create them. ("ArcP".)
const SETUP_LOCK: i64 = 0x4172_6350;

const SCHEMA: &str = "
CREATE TABLE crawl (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    format integer NOT NULL,
    name text NOT NULL,
    seeds text NOT NULL,
    created timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE sites (
    id bigserial PRIMARY KEY,
    origin text NOT NULL UNIQUE,
    accepted bigint NOT NULL DEFAULT 0,
    queued bigint NOT NULL DEFAULT 0,
    suspended_until timestamptz,
    round integer NOT NULL DEFAULT 0,
    retry_after_ms bigint
);
CREATE INDEX sites_with_work ON sites (id) WHERE queued > 0;
CREATE TABLE queue (
    id bigserial PRIMARY KEY,
    site bigint NOT NULL,
    kind smallint NOT NULL,
    key text NOT NULL,
    url text NOT NULL,
    path text NOT NULL,
    via text,
    attempts integer NOT NULL
);
CREATE INDEX queue_order ON queue (site, kind DESC, id);
CREATE TABLE seen (key text PRIMARY KEY);
CREATE TABLE flight (
    key text PRIMARY KEY,
    site text NOT NULL,
    url text NOT NULL,
    path text NOT NULL,
    via text,
    attempts integer NOT NULL,
    worker text NOT NULL,
    since timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX flight_worker ON flight (worker);
CREATE TABLE workers (
    name text PRIMARY KEY,
    started timestamptz NOT NULL DEFAULT now(),
    heartbeat timestamptz NOT NULL DEFAULT now(),
    done bigint NOT NULL DEFAULT 0,
    ended timestamptz
);
CREATE TABLE budgets (
    key text PRIMARY KEY,
    holder text,
    expires timestamptz,
    last_end timestamptz,
    next_allowed timestamptz,
    fetches bigint NOT NULL DEFAULT 0
);
";

/// How to reach the database and who this worker is.
#[derive(Debug, Clone)]
pub struct PostgresSettings {
    /// `postgresql://user[:password]@host[:port]/database` (or libpq's `key=value` form).
    pub url: String,
    /// This worker's name in the database (`host~pid`, as in its WARC names).
    pub worker: String,
    /// A worker silent this long is dead: its leases lapse and its in-flight URLs are requeued.
    pub lease: Duration,
}

/// The database as named in messages: its URL without the password.
pub fn shown(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => "the database".to_string(),
    }
}

/// A PostgreSQL error as one line: the server's own message when there is one.
fn describe(e: &postgres::Error) -> String {
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

/// Deadlocks and serialisation failures: the transaction may simply be run again.
fn retryable(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED)
        || e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE)
}

/// Runs one transaction, again after a deadlock or serialisation failure (up to ten more tries):
/// nothing of a failed try stays, so the same inputs are simply given again.
fn with_retries<T>(
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
type Task = Box<dyn FnOnce(&mut Client) + Send>;

/// The connection, on its own thread (see the module documentation).
struct Db {
    tx: Option<mpsc::Sender<Task>>,
    thread: Option<JoinHandle<()>>,
}

/// What the connection thread does when no call is waiting.
struct Beat {
    worker: String,
    lease: Duration,
}

impl Db {
    fn connect(url: &str, beat: Beat) -> Result<Db, String> {
        let config: postgres::Config = url
            .parse()
            .map_err(|e: postgres::Error| format!("not a PostgreSQL address: {}", describe(&e)))?;
        let (tx, rx) = mpsc::channel::<Task>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
        let thread = std::thread::Builder::new()
            .name("frontier-db".into())
            .spawn(move || {
                let mut config = config;
                config.connect_timeout(Duration::from_secs(10));
                let mut client = match config.connect(NoTls) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("cannot connect: {}", describe(&e))));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                serve(&mut client, &rx, &beat);
            })
            .map_err(|e| format!("cannot start the database thread: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Db {
                tx: Some(tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the database thread stopped".into()),
        }
    }

    /// Runs `f` on the connection and waits for its answer.
    fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> R + Send + 'static,
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

impl Drop for Db {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The connection thread's loop: calls as they come, and the heartbeat at least every third of
/// the lease, so a busy worker is never taken for a dead one.
fn serve(client: &mut Client, rx: &mpsc::Receiver<Task>, beat: &Beat) {
    let every = (beat.lease / 3).max(Duration::from_millis(200));
    let mut last = Instant::now();
    loop {
        let wait = every.saturating_sub(last.elapsed());
        match rx.recv_timeout(wait) {
            Ok(task) => task(client),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        if last.elapsed() >= every {
            // A failed beat is retried at the next one; calls report their own errors.
            let _ = heartbeat(client, beat);
            last = Instant::now();
        }
    }
}

fn heartbeat(client: &mut Client, beat: &Beat) -> Result<(), postgres::Error> {
    let lease = beat.lease.as_secs_f64();
    client.execute(
        "UPDATE workers SET heartbeat = now() WHERE name = $1",
        &[&beat.worker],
    )?;
    client.execute(
        "UPDATE budgets SET expires = now() + $2 * interval '1 second' WHERE holder = $1",
        &[&beat.worker, &lease],
    )?;
    Ok(())
}

/// A queued URL waiting in memory for the next flush.
#[derive(Debug, Clone)]
struct Pending {
    site: String,
    key: String,
    candidate: Candidate,
    /// A first push (counted in `accepted`), not a retry.
    counted: bool,
}

/// Everything changed since the last flush.
#[derive(Debug, Default)]
struct Buffer {
    seen: Vec<String>,
    pushes: Vec<Pending>,
    done: Vec<String>,
    /// Budgets given back: key and the pause (ms) before its next request.
    paused: Vec<(String, i64)>,
}

impl Buffer {
    fn is_empty(&self) -> bool {
        self.seen.is_empty()
            && self.pushes.is_empty()
            && self.done.is_empty()
            && self.paused.is_empty()
    }
}

/// A frontier shared through PostgreSQL: see the module documentation.
pub struct PostgresFrontier {
    db: Db,
    shown: String,
    worker: String,
    lease: Duration,
    buf: Buffer,
    /// Seen keys known to this worker (its own and those it asked about), so a link found on
    /// every page of a site costs one query, not one per page.
    seen_here: HashSet<String>,
    /// Queued URLs per site as last read from the database, plus this worker's unflushed pushes.
    queued: HashMap<String, usize>,
    accepted: HashMap<String, u64>,
    /// Set by the first failed change: later changes fail too rather than write half of one.
    broken: Option<String>,
    /// Calls made to the database (each one round trip, or a few for a flush), for the
    /// benchmarks and run.log.
    calls: u64,
}

impl std::fmt::Debug for PostgresFrontier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresFrontier")
            .field("database", &self.shown)
            .field("worker", &self.worker)
            .finish_non_exhaustive()
    }
}

/// Page (0) or requisite (1); requisites are taken first.
fn kind_of(c: &Candidate) -> i16 {
    i16::from(c.is_requisite())
}

/// A row read back from `queue` or `flight`.
type RawRow = (String, String, Option<String>, i32);

fn row_candidate(shown: &str, site: &str, raw: RawRow) -> Result<Candidate, FrontierError> {
    let bad =
        |what: &str, v: &str| FrontierError(format!("{shown}: corrupt {what} {v:?} in {site}"));
    let (url, path, via, attempts) = raw;
    let url = Url::parse(&url).map_err(|_| bad("URL", &url))?;
    let via = match via {
        Some(v) => Some(Url::parse(&v).map_err(|_| bad("via URL", &v))?),
        None => None,
    };
    let attempts =
        u32::try_from(attempts).map_err(|_| bad("attempt count", &attempts.to_string()))?;
    Ok(Candidate {
        url,
        path,
        via,
        attempts,
    })
}

impl PostgresFrontier {
    /// Connects, creates the crawl's tables if this is the first worker, or checks that the
    /// database holds this profile's crawl (another crawl is refused, naming both), and
    /// registers this worker.
    pub fn open(
        settings: &PostgresSettings,
        identity: &CrawlIdentity,
    ) -> Result<PostgresFrontier, FrontierError> {
        let shown = shown(&settings.url);
        let fail = |msg: String| FrontierError(format!("{shown}: {msg}"));
        let db = Db::connect(
            &settings.url,
            Beat {
                worker: settings.worker.clone(),
                lease: settings.lease,
            },
        )
        .map_err(fail)?;
        let id = identity.clone();
        let worker = settings.worker.clone();
        let stored = db
            .call(move |c| setup(c, &id, &worker))
            .map_err(fail)?
            .map_err(|e| {
                fail(format!(
                    "cannot set up the crawl's tables: {}",
                    describe(&e)
                ))
            })?;
        if let Some(stored) = stored {
            return Err(fail(stored));
        }
        Ok(PostgresFrontier {
            db,
            shown,
            worker: settings.worker.clone(),
            lease: settings.lease,
            buf: Buffer::default(),
            seen_here: HashSet::new(),
            queued: HashMap::new(),
            accepted: HashMap::new(),
            broken: None,
            calls: 0,
        })
    }

    /// Database calls so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// This worker's name in the database.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    fn err(&self, doing: &str, e: &postgres::Error) -> FrontierError {
        FrontierError(format!("{}: {doing}: {}", self.shown, describe(e)))
    }

    /// Runs a database call; a failure marks the frontier broken.
    fn run<R: Send + 'static>(
        &mut self,
        doing: &str,
        f: impl FnOnce(&mut Client) -> Result<R, postgres::Error> + Send + 'static,
    ) -> Result<R, FrontierError> {
        if let Some(why) = &self.broken {
            return Err(FrontierError(format!(
                "{}: stopped after an earlier error: {why}",
                self.shown
            )));
        }
        self.calls += 1;
        let out = match self.db.call(f) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(self.err(doing, &e)),
            Err(e) => Err(FrontierError(format!("{}: {doing}: {e}", self.shown))),
        };
        if let Err(e) = &out {
            self.broken = Some(e.0.clone());
        }
        out
    }

    /// Writes the buffered changes in one transaction (see the module documentation).
    fn flush(&mut self) -> Result<(), FrontierError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let worker = self.worker.clone();
        let counts = self.run("cannot write the frontier", move |c| {
            with_retries(|| write(c, &buf, &worker))
        })?;
        for (origin, accepted, queued) in counts {
            self.accepted.insert(origin.clone(), accepted);
            self.queued.insert(origin, queued);
        }
        Ok(())
    }

    /// `seen_key`s of URLs unknown to this worker: asks the database about them.
    fn known_seen(&mut self, key: String) -> Result<bool, FrontierError> {
        self.run("cannot read the seen-set", move |c| {
            let row = c.query_opt("SELECT 1 FROM seen WHERE key = $1", &[&key])?;
            Ok(row.is_some())
        })
    }
}

/// Creates the schema on first use, or checks it; registers the worker. `Ok(Some(msg))` when
/// the database belongs to another crawl or format.
fn setup(
    c: &mut Client,
    identity: &CrawlIdentity,
    worker: &str,
) -> Result<Option<String>, postgres::Error> {
    let mut tx = c.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SETUP_LOCK])?;
    tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {SCHEMA_NAME}"))?;
    tx.batch_execute(&format!("SET LOCAL search_path = {SCHEMA_NAME}"))?;
    let exists = tx
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 \
             AND table_name = 'crawl'",
            &[&SCHEMA_NAME],
        )?
        .get::<_, i64>(0)
        > 0;
    let seeds = serde_json::to_string(&identity.seeds).unwrap_or_default();
    if !exists {
        tx.batch_execute(SCHEMA)?;
        tx.execute(
            "INSERT INTO crawl (format, name, seeds) VALUES ($1, $2, $3)",
            &[&FORMAT_VERSION, &identity.name, &seeds],
        )?;
    } else {
        let row = tx.query_opt("SELECT format, name, seeds FROM crawl", &[])?;
        let Some(row) = row else {
            return Ok(Some(
                "the archiver tables are there but name no crawl: drop the schema \
                 `archiver` or use another database"
                    .into(),
            ));
        };
        let format: i32 = row.get(0);
        if format != FORMAT_VERSION {
            return Ok(Some(format!(
                "frontier format {format}, but this archiver reads format {FORMAT_VERSION}: \
                 finish that crawl with the archiver that started it"
            )));
        }
        let stored = CrawlIdentity {
            name: row.get(1),
            seeds: serde_json::from_str(row.get::<_, &str>(2)).unwrap_or_default(),
        };
        if !stored.same_crawl(identity) {
            return Ok(Some(format!(
                "this database holds crawl {}, not this profile's crawl {}: use another \
                 database, or the profile that started it",
                stored.describe(),
                identity.describe()
            )));
        }
    }
    tx.execute(
        "INSERT INTO workers (name) VALUES ($1) ON CONFLICT (name) DO UPDATE \
         SET heartbeat = now(), ended = NULL",
        &[&worker],
    )?;
    tx.commit()?;
    // For the life of the connection (SET LOCAL ended with the transaction).
    c.batch_execute(&format!("SET search_path = {SCHEMA_NAME}"))?;
    // A commit returns without waiting for its WAL to reach the disk: every call is one round
    // trip instead of one disk flush (one worker made 15 fetches/s of an ideal 200 with them).
    // A crash of the database server can lose its last fraction of a second of commits, never
    // corrupt it: those URLs are fetched again, and no worker fetches meanwhile (each stops at
    // the lost connection), so no pause is cut short.
    c.batch_execute("SET synchronous_commit = off")?;
    Ok(None)
}

/// One flush: seen keys, queue rows, in-flight list, site counters and budget pauses, in that
/// order. Returns the new counters (origin, accepted, queued) of every site it changed.
fn write(
    c: &mut Client,
    buf: &Buffer,
    worker: &str,
) -> Result<Vec<(String, u64, usize)>, postgres::Error> {
    let mut tx = c.transaction()?;
    // 1. Seen keys, sorted so two workers lock them in the same order. Keys another worker
    // inserted first are not new: their pushes are that worker's.
    let mut seen = buf.seen.clone();
    seen.sort_unstable();
    seen.dedup();
    let fresh: HashSet<String> = if seen.is_empty() {
        HashSet::new()
    } else {
        tx.query(
            "INSERT INTO seen (key) SELECT k FROM unnest($1::text[]) AS k ORDER BY k \
             ON CONFLICT DO NOTHING RETURNING key",
            &[&seen],
        )?
        .into_iter()
        .map(|r| r.get(0))
        .collect()
    };
    let marked: HashSet<&String> = seen.iter().collect();
    let pushes: Vec<&Pending> = buf
        .pushes
        .iter()
        .filter(|p| !p.counted || !marked.contains(&p.key) || fresh.contains(&p.key))
        .collect();
    // 2. The in-flight list: finished URLs (ours) and URLs queued again (anyone's).
    if !buf.done.is_empty() {
        tx.execute(
            "DELETE FROM flight WHERE key = ANY($1) AND worker = $2",
            &[&buf.done, &worker],
        )?;
        let n = i64::try_from(buf.done.len()).unwrap_or(i64::MAX);
        tx.execute(
            "UPDATE workers SET done = done + $2 WHERE name = $1",
            &[&worker, &n],
        )?;
    }
    let mut counts = Vec::new();
    if !pushes.is_empty() {
        let keys: Vec<&str> = pushes.iter().map(|p| p.key.as_str()).collect();
        tx.execute("DELETE FROM flight WHERE key = ANY($1)", &[&keys])?;
        // 3. Site rows, then their ids.
        let mut origins: Vec<&str> = pushes.iter().map(|p| p.site.as_str()).collect();
        origins.sort_unstable();
        origins.dedup();
        tx.execute(
            "INSERT INTO sites (origin) SELECT o FROM unnest($1::text[]) AS o ORDER BY o \
             ON CONFLICT DO NOTHING",
            &[&origins],
        )?;
        // Locked in id order: two flushes on the same sites wait for each other, never cross.
        let ids: HashMap<String, i64> = tx
            .query(
                "SELECT origin, id FROM sites WHERE origin = ANY($1) ORDER BY id FOR UPDATE",
                &[&origins],
            )?
            .into_iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        // 4. Queue rows, in push order (ids come from a sequence, in the order given).
        let mut site_ids: Vec<i64> = Vec::new();
        let mut kinds: Vec<i16> = Vec::new();
        let (mut keys, mut urls, mut paths): (Vec<&str>, Vec<&str>, Vec<&str>) = Default::default();
        let mut vias: Vec<Option<&str>> = Vec::new();
        let mut attempts: Vec<i32> = Vec::new();
        let mut per_site: HashMap<i64, (i64, i64)> = HashMap::new();
        for p in &pushes {
            let id = ids.get(&p.site).copied().unwrap_or(-1);
            site_ids.push(id);
            kinds.push(kind_of(&p.candidate));
            keys.push(&p.key);
            urls.push(p.candidate.url.as_str());
            paths.push(&p.candidate.path);
            vias.push(p.candidate.via.as_ref().map(Url::as_str));
            attempts.push(i32::try_from(p.candidate.attempts).unwrap_or(i32::MAX));
            let e = per_site.entry(id).or_default();
            e.0 += i64::from(p.counted);
            e.1 += 1;
        }
        tx.execute(
            "INSERT INTO queue (site, kind, key, url, path, via, attempts) \
             SELECT s, k, y, u, p, v, a FROM unnest($1::bigint[], $2::smallint[], $3::text[], \
             $4::text[], $5::text[], $6::text[], $7::integer[]) WITH ORDINALITY \
             AS t(s, k, y, u, p, v, a, n) ORDER BY n",
            &[&site_ids, &kinds, &keys, &urls, &paths, &vias, &attempts],
        )?;
        // 5. Site counters.
        let mut sites: Vec<(i64, (i64, i64))> = per_site.into_iter().collect();
        sites.sort_unstable();
        for (id, (acc, q)) in sites {
            let row = tx.query_one(
                "UPDATE sites SET accepted = accepted + $2, queued = queued + $3 WHERE id = $1 \
                 RETURNING origin, accepted, queued",
                &[&id, &acc, &q],
            )?;
            counts.push((
                row.get::<_, String>(0),
                u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
                usize::try_from(row.get::<_, i64>(2)).unwrap_or(0),
            ));
        }
    }
    // 6. Budgets given back, with the pause their last answer calls for, counted from the
    // database's clock (one clock for every worker).
    for (key, ms) in &buf.paused {
        tx.execute(
            "UPDATE budgets SET holder = NULL, expires = NULL, \
             last_end = CASE WHEN $3::float8 > 0 THEN now() ELSE last_end END, \
             next_allowed = GREATEST(coalesce(next_allowed, now()), \
                                     now() + $3::float8 * interval '1 millisecond'), \
             fetches = fetches + (CASE WHEN $3::float8 > 0 THEN 1 ELSE 0 END) \
             WHERE key = $1 AND holder = $2",
            &[key, &worker, &(*ms as f64)],
        )?;
    }
    tx.commit()?;
    Ok(counts)
}

impl Frontier for PostgresFrontier {
    fn mark_seen(&mut self, url: &Url) -> Result<bool, FrontierError> {
        let key = seen_key(url);
        if self.seen_here.contains(&key) {
            return Ok(false);
        }
        let known = self.known_seen(key.clone())?;
        self.seen_here.insert(key.clone());
        if !known {
            self.buf.seen.push(key);
        }
        Ok(!known)
    }

    fn push(&mut self, site: &str, candidate: Candidate) -> Result<(), FrontierError> {
        let key = seen_key(&candidate.url);
        *self.accepted.entry(site.to_string()).or_default() += 1;
        *self.queued.entry(site.to_string()).or_default() += 1;
        self.buf.pushes.push(Pending {
            site: site.to_string(),
            key,
            candidate,
            counted: true,
        });
        Ok(())
    }

    fn push_retry(&mut self, site: &str, candidate: Candidate) -> Result<(), FrontierError> {
        let key = seen_key(&candidate.url);
        *self.queued.entry(site.to_string()).or_default() += 1;
        self.buf.pushes.push(Pending {
            site: site.to_string(),
            key,
            candidate,
            counted: false,
        });
        Ok(())
    }

    fn pop(&mut self, site: &str) -> Result<Option<Candidate>, FrontierError> {
        self.flush()?;
        let origin = site.to_string();
        let worker = self.worker.clone();
        let row = self.run("cannot take the next URL", move |c| {
            with_retries(|| take(c, &origin, &worker))
        })?;
        match row {
            None => {
                self.queued.insert(site.to_string(), 0);
                Ok(None)
            }
            Some((raw, left)) => {
                self.queued.insert(site.to_string(), left);
                row_candidate(&self.shown, site, raw).map(Some)
            }
        }
    }

    fn done(&mut self, url: &Url) -> Result<(), FrontierError> {
        self.buf.done.push(seen_key(url));
        Ok(())
    }

    fn queued(&self, site: &str) -> usize {
        self.queued.get(site).copied().unwrap_or(0)
    }

    fn total_queued(&self) -> usize {
        self.queued.values().sum()
    }

    fn accepted(&self, site: &str) -> u64 {
        self.accepted.get(site).copied().unwrap_or(0)
    }

    fn drain(&mut self, site: &str) -> Result<Vec<Candidate>, FrontierError> {
        self.flush()?;
        let origin = site.to_string();
        let rows = self.run("cannot drop a site's queue", move |c| {
            let mut tx = c.transaction()?;
            let rows = tx.query(
                "WITH d AS (DELETE FROM queue WHERE site = \
                 (SELECT id FROM sites WHERE origin = $1) \
                 RETURNING id, kind, url, path, via, attempts) \
                 SELECT url, path, via, attempts FROM d ORDER BY kind, id",
                &[&origin],
            )?;
            tx.execute("UPDATE sites SET queued = 0 WHERE origin = $1", &[&origin])?;
            tx.commit()?;
            Ok(rows
                .into_iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect::<Vec<RawRow>>())
        })?;
        self.queued.insert(site.to_string(), 0);
        rows.into_iter()
            .map(|raw| row_candidate(&self.shown, site, raw))
            .collect()
    }

    fn sites_with_work(&mut self) -> Result<Vec<String>, FrontierError> {
        self.flush()?;
        let rows = self.run("cannot read the sites", |c| {
            Ok(c.query(
                "SELECT origin, queued, accepted FROM sites WHERE queued > 0 ORDER BY id",
                &[],
            )?
            .into_iter()
            .map(|r| {
                (
                    r.get::<_, String>(0),
                    usize::try_from(r.get::<_, i64>(1)).unwrap_or(0),
                    u64::try_from(r.get::<_, i64>(2)).unwrap_or(0),
                )
            })
            .collect::<Vec<_>>())
        })?;
        // What the database says replaces what this worker believed (others pop and push too).
        self.queued.clear();
        let mut out = Vec::with_capacity(rows.len());
        for (origin, queued, accepted) in rows {
            self.queued.insert(origin.clone(), queued);
            self.accepted.insert(origin.clone(), accepted);
            out.push(origin);
        }
        Ok(out)
    }

    fn in_flight(&mut self) -> Result<Vec<(String, Candidate)>, FrontierError> {
        self.flush()?;
        let worker = self.worker.clone();
        let lease = self.lease.as_secs_f64();
        let rows = self.run("cannot read the in-flight list", move |c| {
            Ok(c.query(
                "SELECT f.site, f.url, f.path, f.via, f.attempts FROM flight f \
                 WHERE f.worker = $1 OR NOT EXISTS (SELECT 1 FROM workers w \
                 WHERE w.name = f.worker AND w.ended IS NULL \
                 AND w.heartbeat > now() - $2 * interval '1 second')",
                &[&worker, &lease],
            )?
            .into_iter()
            .map(|r| {
                (
                    r.get::<_, String>(0),
                    (r.get(1), r.get(2), r.get(3), r.get(4)),
                )
            })
            .collect::<Vec<(String, RawRow)>>())
        })?;
        rows.into_iter()
            .map(|(site, raw)| {
                let c = row_candidate(&self.shown, &site, raw)?;
                Ok((site, c))
            })
            .collect()
    }

    fn commit(&mut self) -> Result<(), FrontierError> {
        if let Some(why) = &self.broken {
            return Err(FrontierError(format!(
                "{}: stopped after an earlier error: {why}",
                self.shown
            )));
        }
        self.flush()
    }

    fn lease(&mut self, budget: &str) -> Result<Lease, FrontierError> {
        let key = budget.to_string();
        let worker = self.worker.clone();
        let lease = self.lease.as_secs_f64();
        let row = self.run("cannot lease a politeness budget", move |c| {
            // An upsert that takes the budget only when it is free, ours or lapsed: one atomic
            // statement; a budget held by a live worker is left alone (no row comes back).
            c.query_opt(
                "INSERT INTO budgets AS b (key, holder, expires) \
                 VALUES ($1, $2, now() + $3 * interval '1 second') \
                 ON CONFLICT (key) DO UPDATE SET holder = $2, \
                 expires = now() + $3 * interval '1 second' \
                 WHERE b.holder IS NULL OR b.holder = $2 OR b.expires < now() \
                 RETURNING GREATEST(0, EXTRACT(EPOCH FROM (b.next_allowed - now())) * 1000)::float8",
                &[&key, &worker, &lease],
            )
        })?;
        Ok(match row {
            None => Lease::Busy,
            Some(r) => {
                let ms: Option<f64> = r.get(0);
                Lease::Granted(Duration::from_secs_f64(ms.unwrap_or(0.0).max(0.0) / 1000.0))
            }
        })
    }

    fn give_back(&mut self, budget: &str, pause: Duration) -> Result<(), FrontierError> {
        let ms = i64::try_from(pause.as_millis()).unwrap_or(i64::MAX);
        self.buf.paused.push((budget.to_string(), ms));
        self.flush()
    }

    fn poll(&mut self) -> Result<Vec<String>, FrontierError> {
        self.flush()?;
        let lease = self.lease.as_secs_f64();
        self.run("cannot requeue a dead worker's URLs", move |c| {
            with_retries(|| reap(c, lease))
        })?;
        self.sites_with_work()
    }

    fn idle_everywhere(&mut self) -> Result<bool, FrontierError> {
        self.flush()?;
        self.run("cannot read the crawl's state", |c| {
            Ok(c.query_one(
                // Suspended sites' URLs stay queued for a later run, as in a crawl of one
                // worker: the crawl does not wait for them.
                "SELECT NOT EXISTS (SELECT 1 FROM sites WHERE queued > 0 \
                 AND (suspended_until IS NULL OR suspended_until <= now())) \
                 AND NOT EXISTS (SELECT 1 FROM flight)",
                &[],
            )?
            .get(0))
        })
    }

    fn shared(&self) -> bool {
        true
    }

    fn database_calls(&self) -> u64 {
        self.calls
    }

    fn site_facts(&mut self, site: &str) -> Result<Option<SiteFacts>, FrontierError> {
        let origin = site.to_string();
        let row = self.run("cannot read a site's state", move |c| {
            c.query_opt(
                "SELECT round, EXTRACT(EPOCH FROM suspended_until)::float8, retry_after_ms \
                 FROM sites WHERE origin = $1",
                &[&origin],
            )
        })?;
        Ok(row.map(|r| facts_of(r.get(0), r.get(1), r.get(2))))
    }

    fn save_site_facts(&mut self, site: &str, facts: &SiteFacts) -> Result<(), FrontierError> {
        let origin = site.to_string();
        let round = i32::try_from(facts.round).unwrap_or(i32::MAX);
        let until = facts.until.map(|u| u as f64);
        let retry = facts
            .retry_after
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        // One row, in its own statement: no lock is held past it.
        self.run("cannot record a site's state", move |c| {
            c.execute(
                "INSERT INTO sites AS s (origin, round, suspended_until, retry_after_ms) \
                 VALUES ($1, $2, to_timestamp($3), $4) \
                 ON CONFLICT (origin) DO UPDATE SET round = GREATEST(s.round, EXCLUDED.round), \
                 suspended_until = GREATEST(s.suspended_until, EXCLUDED.suspended_until), \
                 retry_after_ms = GREATEST(s.retry_after_ms, EXCLUDED.retry_after_ms)",
                &[&origin, &round, &until, &retry],
            )
            .map(drop)
        })
    }

    fn suspended_sites(&mut self) -> Result<Vec<(String, SiteFacts)>, FrontierError> {
        let rows = self.run("cannot read the suspended sites", |c| {
            c.query(
                "SELECT origin, round, EXTRACT(EPOCH FROM suspended_until)::float8, \
                 retry_after_ms FROM sites WHERE suspended_until > now()",
                &[],
            )
        })?;
        Ok(rows
            .into_iter()
            .map(|r| (r.get(0), facts_of(r.get(1), r.get(2), r.get(3))))
            .collect())
    }

    fn leave(&mut self) -> Result<(), FrontierError> {
        self.flush()?;
        let worker = self.worker.clone();
        self.run("cannot sign off", move |c| {
            c.execute(
                "UPDATE budgets SET holder = NULL, expires = NULL WHERE holder = $1",
                &[&worker],
            )?;
            c.execute(
                "UPDATE workers SET ended = now() WHERE name = $1",
                &[&worker],
            )?;
            Ok(())
        })
    }
}

fn facts_of(round: i32, until: Option<f64>, retry_ms: Option<i64>) -> SiteFacts {
    SiteFacts {
        round: u32::try_from(round).unwrap_or(0),
        until: until.map(|u| u.max(0.0).ceil() as u64),
        retry_after: retry_ms.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
    }
}

/// Moves a site's first URL (requisites first) to this worker's in-flight list; returns it with
/// the count left in the site's queue. One statement, so nothing is half taken.
#[allow(clippy::type_complexity)]
fn take(
    c: &mut Client,
    origin: &str,
    worker: &str,
) -> Result<Option<(RawRow, usize)>, postgres::Error> {
    let row = c.query_opt(
        "WITH s AS (SELECT id FROM sites WHERE origin = $1), \
         first AS (SELECT q.id FROM queue q, s WHERE q.site = s.id \
                   ORDER BY q.kind DESC, q.id LIMIT 1 FOR UPDATE SKIP LOCKED), \
         d AS (DELETE FROM queue q USING first WHERE q.id = first.id \
               RETURNING q.site, q.key, q.url, q.path, q.via, q.attempts), \
         f AS (INSERT INTO flight (key, site, url, path, via, attempts, worker) \
               SELECT key, $1, url, path, via, attempts, $2 FROM d \
               ON CONFLICT (key) DO UPDATE SET site = EXCLUDED.site, url = EXCLUDED.url, \
               path = EXCLUDED.path, via = EXCLUDED.via, attempts = EXCLUDED.attempts, \
               worker = EXCLUDED.worker, since = now()), \
         u AS (UPDATE sites SET queued = GREATEST(queued - 1, 0) FROM d \
               WHERE sites.id = d.site RETURNING sites.queued) \
         SELECT d.url, d.path, d.via, d.attempts, (SELECT queued FROM u) FROM d",
        &[&origin, &worker],
    )?;
    Ok(row.map(|r| {
        let left: Option<i64> = r.get(4);
        (
            (r.get(0), r.get(1), r.get(2), r.get(3)),
            usize::try_from(left.unwrap_or(0)).unwrap_or(0),
        )
    }))
}

/// Queues again the in-flight URLs of workers whose heartbeat is older than the lease (dead),
/// behind what their sites have queued; their budgets lapse on their own. Returns how many.
fn reap(c: &mut Client, lease: f64) -> Result<u64, postgres::Error> {
    let mut tx = c.transaction()?;
    let rows = tx.query(
        "DELETE FROM flight f WHERE NOT EXISTS (SELECT 1 FROM workers w \
         WHERE w.name = f.worker AND w.ended IS NULL \
         AND w.heartbeat > now() - $1 * interval '1 second') \
         RETURNING f.key, f.site, f.url, f.path, f.via, f.attempts",
        &[&lease],
    )?;
    if rows.is_empty() {
        return Ok(0);
    }
    let mut origins: Vec<String> = rows.iter().map(|r| r.get(1)).collect();
    origins.sort_unstable();
    origins.dedup();
    tx.execute(
        "INSERT INTO sites (origin) SELECT o FROM unnest($1::text[]) AS o ORDER BY o \
         ON CONFLICT DO NOTHING",
        &[&origins],
    )?;
    tx.query(
        "SELECT id FROM sites WHERE origin = ANY($1) ORDER BY id FOR UPDATE",
        &[&origins],
    )?;
    for r in &rows {
        let (key, site, url, path, via, attempts): (
            String,
            String,
            String,
            String,
            Option<String>,
            i32,
        ) = (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5));
        let kind = i16::from(
            path.chars().rev().find(|c| *c != 'R') == Some(crate::extract::Hop::Embed.letter()),
        );
        tx.execute(
            "INSERT INTO queue (site, kind, key, url, path, via, attempts) \
             SELECT id, $2, $3, $4, $5, $6, $7 FROM sites WHERE origin = $1",
            &[&site, &kind, &key, &url, &path, &via, &attempts],
        )?;
        tx.execute(
            "UPDATE sites SET queued = queued + 1 WHERE origin = $1",
            &[&site],
        )?;
    }
    tx.commit()?;
    Ok(rows.len() as u64)
}

/// What `archiver status` prints for a shared crawl.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    pub crawl: String,
    pub queued: i64,
    pub in_flight: i64,
    pub seen: i64,
    pub sites: i64,
    pub sites_with_work: i64,
    /// Sites a worker suspended (refusals, Retry-After) until a time still to come.
    pub suspended_sites: i64,
    pub workers: Vec<WorkerStatus>,
    pub leases: i64,
    pub budgets: i64,
    /// URLs finished per second: each live worker's average over its run, added up.
    pub rate_per_second: f64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkerStatus {
    pub name: String,
    pub alive: bool,
    pub ended: bool,
    pub in_flight: i64,
    pub done: i64,
    pub leases: i64,
    pub started: String,
    pub heartbeat_age_seconds: f64,
}

/// Reads the crawl's state for `archiver status` (read-only: it registers no worker).
pub fn status(url: &str, lease: Duration) -> Result<Status, FrontierError> {
    let shown_db = shown(url);
    let fail = |msg: String| FrontierError(format!("{shown_db}: {msg}"));
    let config: postgres::Config = url.parse().map_err(|e: postgres::Error| {
        fail(format!("not a PostgreSQL address: {}", describe(&e)))
    })?;
    let lease = lease.as_secs_f64();
    // `archiver status` runs outside any async runtime: the client may be used directly.
    let mut c = config
        .connect(NoTls)
        .map_err(|e| fail(format!("cannot connect: {}", describe(&e))))?;
    let q = |c: &mut Client| -> Result<Status, postgres::Error> {
        c.batch_execute(&format!("SET search_path = {SCHEMA_NAME}"))?;
        let one = |c: &mut Client, sql: &str| -> Result<i64, postgres::Error> {
            Ok(c.query_one(sql, &[])?.get(0))
        };
        let crawl: String = c.query_one("SELECT name FROM crawl", &[])?.get(0);
        let queued = one(c, "SELECT coalesce(sum(queued), 0)::bigint FROM sites")?;
        let in_flight = one(c, "SELECT count(*) FROM flight")?;
        let seen = one(c, "SELECT count(*) FROM seen")?;
        let sites = one(c, "SELECT count(*) FROM sites")?;
        let sites_with_work = one(c, "SELECT count(*) FROM sites WHERE queued > 0")?;
        let suspended_sites = one(
            c,
            "SELECT count(*) FROM sites WHERE suspended_until > now()",
        )?;
        let leases = one(
            c,
            "SELECT count(*) FROM budgets WHERE holder IS NOT NULL AND expires > now()",
        )?;
        let budgets = one(c, "SELECT count(*) FROM budgets")?;
        let workers = c
            .query(
                "SELECT w.name, w.heartbeat > now() - $1 * interval '1 second' AND w.ended IS NULL, \
                 w.ended IS NOT NULL, \
                 (SELECT count(*) FROM flight f WHERE f.worker = w.name), w.done, \
                 (SELECT count(*) FROM budgets b WHERE b.holder = w.name AND b.expires > now()), \
                 to_char(w.started AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), \
                 EXTRACT(EPOCH FROM now() - w.heartbeat)::float8 \
                 FROM workers w ORDER BY w.started, w.name",
                &[&lease],
            )?
            .into_iter()
            .map(|r| WorkerStatus {
                name: r.get(0),
                alive: r.get(1),
                ended: r.get(2),
                in_flight: r.get(3),
                done: r.get(4),
                leases: r.get(5),
                started: r.get(6),
                heartbeat_age_seconds: r.get(7),
            })
            .collect();
        // Each live worker's finished URLs over its run so far, added up.
        let rate: f64 = c
            .query_one(
                "SELECT coalesce(sum(done / GREATEST(EXTRACT(EPOCH FROM heartbeat - started), 1)), 0)::float8 \
                 FROM workers WHERE ended IS NULL \
                 AND heartbeat > now() - $1 * interval '1 second'",
                &[&lease],
            )?
            .get(0);
        Ok(Status {
            crawl,
            queued,
            in_flight,
            seen,
            sites,
            sites_with_work,
            suspended_sites,
            workers,
            leases,
            budgets,
            rate_per_second: rate,
        })
    };
    q(&mut c).map_err(|e| {
        if e.code() == Some(&postgres::error::SqlState::UNDEFINED_TABLE) {
            fail("no crawl in this database yet (no worker has started)".into())
        } else {
            fail(format!("cannot read the crawl: {}", describe(&e)))
        }
    })
}

#[cfg(test)]
#[path = "../../tests/common/pg_cluster.rs"]
mod pg_cluster;

#[cfg(test)]
mod tests {
    use super::pg_cluster::PgCluster;
    use super::*;
    use crate::frontier::suite;

    fn ident() -> CrawlIdentity {
        CrawlIdentity {
            name: "test".into(),
            seeds: vec!["http://a/".into(), "http://b/".into()],
        }
    }

    fn settings(url: String, worker: &str) -> PostgresSettings {
        PostgresSettings {
            url,
            worker: worker.into(),
            lease: Duration::from_secs(2),
        }
    }

    fn open(url: String, worker: &str) -> PostgresFrontier {
        PostgresFrontier::open(&settings(url, worker), &ident()).unwrap()
    }

    /// The shared suite, each check on a fresh database of one real server.
    #[test]
    fn shared_suite_on_a_real_server() {
        let checks = suite::all();
        let names: Vec<String> = (0..checks.len()).map(|i| format!("suite{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let pg = PgCluster::start(&refs);
        for (check, db) in checks.iter().zip(&names) {
            let mut f = open(pg.url(db), "w1");
            check(&mut f);
            f.commit().unwrap();
            // A second worker joining sees the same crawl.
            let before = suite::snapshot(&mut f);
            let mut g = open(pg.url(db), "w1");
            assert_eq!(suite::snapshot(&mut g), before, "{db}");
        }
    }

    #[test]
    fn crawl_identity_workers_leases_and_reaping() {
        let pg = PgCluster::start(&["crawl"]);
        let url = pg.url("crawl");
        let mut a = open(url.clone(), "a");
        // Another profile's crawl is refused, naming both.
        let other = CrawlIdentity {
            name: "other".into(),
            ..ident()
        };
        let msg = PostgresFrontier::open(&settings(url.clone(), "x"), &other)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("\"test\"") && msg.contains("\"other\""),
            "{msg}"
        );
        assert!(msg.contains(&format!("127.0.0.1:{}", pg.port)), "{msg}");

        // Two workers: a URL both find is queued once.
        let mut b = open(url.clone(), "b");
        let u = Url::parse("http://s/1").unwrap();
        assert!(a.mark_seen(&u).unwrap());
        assert!(b.mark_seen(&u).unwrap());
        a.push("http://s", Candidate::seed(u.clone())).unwrap();
        b.push("http://s", Candidate::seed(u.clone())).unwrap();
        a.commit().unwrap();
        b.commit().unwrap();
        assert_eq!(a.sites_with_work().unwrap(), ["http://s"]);
        assert_eq!(a.queued("http://s"), 1);
        assert_eq!(a.accepted("http://s"), 1);

        // A budget is held by one worker at a time, and keeps its pause when it moves.
        assert!(matches!(a.lease("127.0.0.9").unwrap(), Lease::Granted(d) if d.is_zero()));
        assert!(matches!(b.lease("127.0.0.9").unwrap(), Lease::Busy));
        a.give_back("127.0.0.9", Duration::from_secs(30)).unwrap();
        match b.lease("127.0.0.9").unwrap() {
            Lease::Granted(d) => assert!(d > Duration::from_secs(25), "{d:?}"),
            Lease::Busy => panic!("given back but still busy"),
        }

        // A suspension and a Retry-After floor recorded by one worker are seen by the other;
        // larger values win.
        let until = crate::politeness::epoch_secs(std::time::SystemTime::now()) + 3600;
        let facts = SiteFacts {
            round: 2,
            until: Some(until),
            retry_after: Some(Duration::from_secs(7)),
        };
        a.save_site_facts("http://t", &facts).unwrap();
        let smaller = SiteFacts {
            round: 1,
            until: Some(until - 100),
            retry_after: None,
        };
        b.save_site_facts("http://t", &smaller).unwrap();
        assert_eq!(b.site_facts("http://t").unwrap(), Some(facts.clone()));
        assert_eq!(
            b.suspended_sites().unwrap(),
            [("http://t".to_string(), facts)]
        );
        assert_eq!(b.site_facts("http://nowhere").unwrap(), None);

        // b takes the URL and dies: after the lease a's poll queues it again.
        let c = b.pop("http://s").unwrap().unwrap();
        assert_eq!(c.url, u);
        assert!(!a.idle_everywhere().unwrap());
        drop(b); // no heartbeat any more, nor sign-off
        assert!(a.poll().unwrap().is_empty());
        // a's own heartbeat goes on while b's stops.
        std::thread::sleep(Duration::from_millis(2600));
        assert_eq!(a.poll().unwrap(), ["http://s"]);
        // b's lease lapsed too.
        assert!(matches!(a.lease("127.0.0.9").unwrap(), Lease::Granted(_)));
        let again = a.pop("http://s").unwrap().unwrap();
        assert_eq!(again.url, u);
        a.done(&again.url).unwrap();
        a.commit().unwrap();
        assert!(a.idle_everywhere().unwrap());
        let st = status(&url, Duration::from_secs(2)).unwrap();
        assert_eq!(st.crawl, "test");
        assert_eq!((st.queued, st.in_flight, st.seen), (0, 0, 1));
        let wa = st.workers.iter().find(|w| w.name == "a").unwrap();
        assert!(wa.alive && wa.done == 1, "{wa:?}");
        let wb = st.workers.iter().find(|w| w.name == "b").unwrap();
        assert!(!wb.alive, "{wb:?}");
        a.leave().unwrap();
    }

    #[test]
    fn an_unreachable_database_is_a_clear_error() {
        // A port nothing listens on (bound, then closed).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("postgresql://me:secret@127.0.0.1:{port}/crawl");
        let msg = PostgresFrontier::open(&settings(url, "w"), &ident())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("cannot connect"), "{msg}");
        assert!(!msg.contains("secret"), "{msg}");
        let msg = PostgresFrontier::open(&settings("postgresql://[".into(), "w"), &ident())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("not a PostgreSQL address"), "{msg}");
    }
}
