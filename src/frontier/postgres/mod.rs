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
//!
//! # Files
//! `conn` (the connection thread, heartbeat, error text), `schema` (tables, setup, the crawl's
//! identity), `queue` (the statements that move many rows: flush, take, reap), `status`
//! (`archiver status`); this file holds the frontier itself.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use postgres::Client;
use url::Url;

use crate::frontier::sqlite::CrawlIdentity;
use crate::frontier::{seen_key, Candidate, Frontier, FrontierError, Lease, SiteFacts};

mod conn;
mod queue;
mod schema;
mod status;

pub use status::{status, Status, WorkerStatus};

use conn::{describe, with_retries, Beat, Db};
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

#[cfg(test)]
mod tests;
