//! Per-site state the workers share beyond the queues: suspensions and `Retry-After` floors,
//! refusals in a row, robots.txt answers, and the payload digests for revisit records.

use std::sync::Arc;
use std::time::Duration;

use super::conn::{describe, Db};
use super::PostgresFrontier;
use crate::frontier::{FirstCapture, FrontierError, SharedDigests, SharedRobots, SiteFacts};

impl PostgresFrontier {
    pub(super) fn facts(&mut self, site: &str) -> Result<Option<SiteFacts>, FrontierError> {
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

    pub(super) fn store_facts(
        &mut self,
        site: &str,
        facts: &SiteFacts,
    ) -> Result<(), FrontierError> {
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

    pub(super) fn suspended(&mut self) -> Result<Vec<(String, SiteFacts)>, FrontierError> {
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

    /// Counts an answer towards a site's refusals in a row, across workers. A refusal adds one
    /// (one statement; refusals are rare); a good answer clears the count only when some
    /// worker counted one (as this worker last read it, with a pop of the site), so good
    /// answers cost nothing.
    pub(super) fn refusal_streak(
        &mut self,
        site: &str,
        refused: bool,
    ) -> Result<u32, FrontierError> {
        let origin = site.to_string();
        if !refused {
            if self.streaks.get(site).copied().unwrap_or(0) == 0 {
                return Ok(0);
            }
            self.streaks.insert(origin.clone(), 0);
            self.run("cannot record a site's answer", move |c| {
                c.execute(
                    "UPDATE sites SET refusals = 0 WHERE origin = $1",
                    &[&origin],
                )
                .map(drop)
            })?;
            return Ok(0);
        }
        let key = origin.clone();
        let n: i32 = self.run("cannot record a site's refusal", move |c| {
            Ok(c.query_one(
                "INSERT INTO sites AS s (origin, refusals) VALUES ($1, 1) \
                 ON CONFLICT (origin) DO UPDATE SET refusals = s.refusals + 1 RETURNING refusals",
                &[&key],
            )?
            .get(0))
        })?;
        let n = u32::try_from(n).unwrap_or(0);
        self.streaks.insert(origin, n);
        Ok(n)
    }

    /// A site's robots.txt as some worker fetched it, if younger than `max_age`.
    pub(super) fn robots_of(
        &mut self,
        site: &str,
        max_age: Duration,
    ) -> Result<Option<SharedRobots>, FrontierError> {
        let origin = site.to_string();
        let max = max_age.as_secs_f64();
        let row = self.run("cannot read a site's robots.txt", move |c| {
            c.query_opt(
                "SELECT status, body, EXTRACT(EPOCH FROM now() - fetched)::float8 FROM robots \
                 WHERE origin = $1 AND fetched > now() - $2 * interval '1 second'",
                &[&origin, &max],
            )
        })?;
        Ok(row.and_then(|r| {
            let status = u16::try_from(r.get::<_, i32>(0)).ok()?;
            let age: f64 = r.get(2);
            Some(SharedRobots {
                status,
                body: r.get(1),
                age: Duration::try_from_secs_f64(age.max(0.0)).unwrap_or(Duration::ZERO),
            })
        }))
    }

    /// Keeps a site's robots.txt answer for the other workers (a later fetch replaces an
    /// earlier one, whoever wrote it).
    pub(super) fn keep_robots(
        &mut self,
        site: &str,
        robots: &SharedRobots,
    ) -> Result<(), FrontierError> {
        let origin = site.to_string();
        let status = i32::from(robots.status);
        let body = robots.body.clone();
        let age = robots.age.as_secs_f64();
        self.run("cannot record a site's robots.txt", move |c| {
            c.execute(
                "INSERT INTO robots AS r (origin, status, body, fetched) \
                 VALUES ($1, $2, $3, now() - $4 * interval '1 second') \
                 ON CONFLICT (origin) DO UPDATE SET status = EXCLUDED.status, \
                 body = EXCLUDED.body, fetched = EXCLUDED.fetched \
                 WHERE r.fetched < EXCLUDED.fetched",
                &[&origin, &status, &body, &age],
            )
            .map(drop)
        })
    }

    /// A handle on the shared payload digests, on this worker's connection.
    pub(super) fn digests(&self) -> PgDigests {
        PgDigests {
            db: Arc::clone(&self.db),
            shown: self.shown.clone(),
        }
    }
}

fn facts_of(round: i32, until: Option<f64>, retry_ms: Option<i64>) -> SiteFacts {
    SiteFacts {
        round: u32::try_from(round).unwrap_or(0),
        until: until.map(|u| u.max(0.0).ceil() as u64),
        retry_after: retry_ms.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
    }
}

/// The payload digests of a shared crawl (table `digests`), for the archive.
pub(super) struct PgDigests {
    db: Arc<Db>,
    shown: String,
}

impl SharedDigests for PgDigests {
    fn find(&mut self, digest: &str) -> Result<Option<FirstCapture>, FrontierError> {
        let digest = digest.to_string();
        let row = self
            .db
            .call(move |c| {
                c.query_opt(
                    "SELECT uri, date, record_id FROM digests WHERE digest = $1",
                    &[&digest],
                )
            })
            .map_err(|e| FrontierError(format!("{}: cannot read the digests: {e}", self.shown)))?
            .map_err(|e| {
                FrontierError(format!(
                    "{}: cannot read the digests: {}",
                    self.shown,
                    describe(&e)
                ))
            })?;
        Ok(row.map(|r| FirstCapture {
            uri: r.get(0),
            date: r.get(1),
            record_id: r.get(2),
        }))
    }

    fn add(&mut self, digest: &str, capture: FirstCapture) {
        let digest = digest.to_string();
        self.db.send(move |c| {
            // The first capture stored wins; a failure only costs a later full copy.
            let _ = c.execute(
                "INSERT INTO digests (digest, uri, date, record_id) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT DO NOTHING",
                &[&digest, &capture.uri, &capture.date, &capture.record_id],
            );
        });
    }
}
