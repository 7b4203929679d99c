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
//! queues deadlock). So changes are buffered in memory and written by one statement (`flush`,
//! at `commit` and before any read that needs them; data-modifying CTEs make it atomic): seen
//! keys, sorted; the in-flight list; site counters upserted in origin order; queue rows; the
//! budgets given back. A URL that two workers found at the same moment is queued once: the
//! seen-set insert (`ON CONFLICT DO NOTHING RETURNING`) decides which push is real. `pop` is one
//! statement that moves the first row of a site (requisites first, then pages, each in push
//! order) to `flight` under this worker's name. A deadlock or serialisation failure is retried;
//! any other error stops the crawl, which resumes from the last commit.
//!
//! # Round trips
//! The database's latency, not its work, bounds a worker. Every statement is prepared once per
//! connection (a text statement costs two round trips: prepare, then run), a page's links are
//! seen-checked in one query, and a budget given back rides with the commit of its URL: a URL
//! costs about a lease, a pop and a flush, plus one seen-check per page.
//!
//! # Liveness
//! Every worker has a row in `workers` whose `heartbeat` its connection thread renews every
//! third of `lease_seconds`, together with the expiry of the budgets it leases. A worker whose
//! heartbeat is older than `lease_seconds` is dead: its in-flight URLs are queued again by
//! whichever worker looks next ([`Frontier::poll`]), and its leases lapse.
//!
//! # Files
//! `conn` (the connection thread, prepared statements, heartbeat, error text), `schema`
//! (tables, setup, the crawl's identity), `queue` (the statements that move many rows: flush,
//! take, reap), `sites` (per-site state shared beyond the queues: suspensions, refusals,
//! robots.txt, payload digests), `status` (`archiver status`); this file holds the frontier.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use url::Url;

use crate::frontier::sqlite::CrawlIdentity;
use crate::frontier::{
    seen_key, Candidate, Frontier, FrontierError, Lease, SharedRobots, SiteFacts,
};

mod conn;
mod queue;
mod schema;
mod sites;
mod status;

pub use status::{status, Status, WorkerStatus};

use conn::{describe, with_retries, Beat, Conn, Db};
use queue::{reap, take, write};
use schema::setup;

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

/// The database as named in messages: its address with every password masked.
pub fn shown(url: &str) -> String {
    crate::frontier::mask_secrets(url)
}

/// A queued URL waiting in memory for the next flush.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    site: String,
    key: String,
    candidate: Candidate,
    /// A first push (counted in `accepted`), not a retry.
    counted: bool,
}

/// Everything changed since the last flush.
#[derive(Debug, Default)]
pub(super) struct Buffer {
    seen: Vec<String>,
    pushes: Vec<Pending>,
    done: Vec<String>,
    /// Budgets given back: key, the pause (ms) before its next request, the backoff (ms).
    paused: Vec<(String, i64, i64)>,
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
    /// Shared with the payload digests' handle ([`Frontier::shared_digests`]).
    db: std::sync::Arc<Db>,
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
    /// Calls made to the database (each one statement), for the benchmarks and run.log.
    calls: u64,
    /// Each budget's backoff as its last holder left it, read with this worker's lease.
    backoffs: HashMap<String, Duration>,
    /// Each site's refusals in a row across workers, as last read (with a pop) or counted.
    streaks: HashMap<String, u32>,
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
pub(super) fn kind_of(c: &Candidate) -> i16 {
    i16::from(c.is_requisite())
}

/// A row read back from `queue` or `flight`.
pub(super) type RawRow = (String, String, Option<String>, i32);

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
            .call(move |c| {
                // About a dozen statements, once per worker.
                c.count(12);
                setup(&mut c.client, &id, &worker)
            })
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
            db: std::sync::Arc::new(db),
            shown,
            worker: settings.worker.clone(),
            lease: settings.lease,
            buf: Buffer::default(),
            seen_here: HashSet::new(),
            queued: HashMap::new(),
            accepted: HashMap::new(),
            broken: None,
            calls: 0,
            backoffs: HashMap::new(),
            streaks: HashMap::new(),
        })
    }

    /// Database calls so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Round trips to the database server so far (heartbeats included).
    pub fn round_trips(&self) -> u64 {
        self.db.trips.load(std::sync::atomic::Ordering::Relaxed)
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
        f: impl FnOnce(&mut Conn) -> Result<R, postgres::Error> + Send + 'static,
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

    /// Writes the buffered changes in one statement (see the module documentation).
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

    /// Which of these `seen_key`s another worker has seen: one query for all of them.
    fn known_seen(&mut self, keys: Vec<String>) -> Result<HashSet<String>, FrontierError> {
        if keys.is_empty() {
            return Ok(HashSet::new());
        }
        self.run("cannot read the seen-set", move |c| {
            let rows = c.query("SELECT key FROM seen WHERE key = ANY($1)", &[&keys])?;
            Ok(rows.into_iter().map(|r| r.get(0)).collect())
        })
    }
}

impl Frontier for PostgresFrontier {
    fn mark_seen(&mut self, url: &Url) -> Result<bool, FrontierError> {
        Ok(self
            .mark_seen_all(&[url])?
            .first()
            .copied()
            .unwrap_or(false))
    }

    fn mark_seen_all(&mut self, urls: &[&Url]) -> Result<Vec<bool>, FrontierError> {
        let keys: Vec<String> = urls.iter().map(|u| seen_key(u)).collect();
        let mut ask: Vec<String> = keys
            .iter()
            .filter(|k| !self.seen_here.contains(*k))
            .cloned()
            .collect();
        ask.sort_unstable();
        ask.dedup();
        let known = self.known_seen(ask)?;
        Ok(keys
            .into_iter()
            .map(|key| {
                // A key twice in one batch is new the first time only.
                if !self.seen_here.insert(key.clone()) || known.contains(&key) {
                    return false;
                }
                self.buf.seen.push(key);
                true
            })
            .collect())
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
            Some(taken) => {
                self.queued.insert(site.to_string(), taken.left);
                self.streaks.insert(site.to_string(), taken.refusals);
                row_candidate(&self.shown, site, taken.row).map(Some)
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
            // One statement: the rows and the site's count go together.
            let rows = c.query(
                "WITH s AS (UPDATE sites SET queued = 0 WHERE origin = $1 RETURNING id), \
                 d AS (DELETE FROM queue WHERE site = (SELECT id FROM s) \
                 RETURNING id, kind, url, path, via, attempts) \
                 SELECT url, path, via, attempts FROM d ORDER BY kind, id",
                &[&origin],
            )?;
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
                 RETURNING GREATEST(0, EXTRACT(EPOCH FROM (b.next_allowed - now())) * 1000)::float8, \
                 b.backoff_ms",
                &[&key, &worker, &lease],
            )
        })?;
        Ok(match row {
            None => Lease::Busy,
            Some(r) => {
                let ms: Option<f64> = r.get(0);
                let backoff: i64 = r.get(1);
                self.backoffs.insert(
                    budget.to_string(),
                    Duration::from_millis(u64::try_from(backoff).unwrap_or(0)),
                );
                Lease::Granted(Duration::from_secs_f64(ms.unwrap_or(0.0).max(0.0) / 1000.0))
            }
        })
    }

    fn give_back(
        &mut self,
        budget: &str,
        pause: Duration,
        backoff: Duration,
    ) -> Result<(), FrontierError> {
        // Written with the next commit (the scheduler commits right after), in the same
        // statement as the finished URL and its outlinks.
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.buf
            .paused
            .push((budget.to_string(), ms(pause), ms(backoff)));
        self.backoffs.remove(budget);
        Ok(())
    }

    fn shared_backoff(&mut self, budget: &str) -> Option<Duration> {
        self.backoffs.get(budget).copied()
    }

    fn count_refusal(&mut self, site: &str, refused: bool) -> Result<Option<u32>, FrontierError> {
        self.refusal_streak(site, refused).map(Some)
    }

    fn shared_robots(
        &mut self,
        site: &str,
        max_age: Duration,
    ) -> Result<Option<SharedRobots>, FrontierError> {
        self.robots_of(site, max_age)
    }

    fn save_robots(&mut self, site: &str, robots: &SharedRobots) -> Result<(), FrontierError> {
        self.keep_robots(site, robots)
    }

    fn shared_digests(&self) -> Option<Box<dyn crate::frontier::SharedDigests>> {
        Some(Box::new(self.digests()))
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

    fn database_round_trips(&self) -> u64 {
        self.round_trips()
    }

    fn site_facts(&mut self, site: &str) -> Result<Option<SiteFacts>, FrontierError> {
        self.facts(site)
    }

    fn save_site_facts(&mut self, site: &str, facts: &SiteFacts) -> Result<(), FrontierError> {
        self.store_facts(site, facts)
    }

    fn suspended_sites(&mut self) -> Result<Vec<(String, SiteFacts)>, FrontierError> {
        self.suspended()
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

#[cfg(test)]
mod tests;
