//! `archiver status`: the crawl across workers, read without registering a worker.

use std::time::Duration;

use postgres::{Client, NoTls};

use super::conn::{connect_error, describe};
use super::schema::SCHEMA_NAME;
use super::shown;
use crate::frontier::FrontierError;

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
    /// URLs finished per second over about the last minute, the live workers' added up.
    pub rate_last_minute: f64,
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
    /// Up to three of the budgets it leases now (an address, or a host under
    /// `budget = "host"`), in order.
    pub leased: Vec<String>,
    /// URLs it finished per second over about the last minute (30 to about 70 s: the window
    /// from the older of its heartbeat's two marks to now); 0 unless alive.
    pub rate_last_minute: f64,
    /// Its last batch written to the database: how long ago, URLs done, URLs queued.
    pub last_batch_age_seconds: Option<f64>,
    pub last_batch_done: i64,
    pub last_batch_queued: i64,
}

/// Leased budgets named per worker; the count says how many there are in all.
const LEASES_SHOWN: i64 = 3;

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
        .map_err(|e| fail(connect_error(&e, &config)))?;
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
        // A crawl only older workers have run (format 1 or 2; `status` never migrates) has no
        // rate marks nor batches yet: read as none.
        let format: i32 = c.query_one("SELECT format FROM crawl", &[])?.get(0);
        let per_worker = if format >= 3 {
            "CASE WHEN w.heartbeat > now() - $1 * interval '1 second' AND w.ended IS NULL \
             THEN (w.done - w.prev_done) / GREATEST(EXTRACT(EPOCH FROM now() - w.prev_at), 1) \
             ELSE 0 END::float8, \
             EXTRACT(EPOCH FROM now() - w.batch_at)::float8, w.batch_done, w.batch_queued"
        } else {
            "0::float8, NULL::float8, 0::bigint, 0::bigint"
        };
        let workers = c
            .query(
                &format!("SELECT w.name, w.heartbeat > now() - $1 * interval '1 second' AND w.ended IS NULL, \
                 w.ended IS NOT NULL, \
                 (SELECT count(*) FROM flight f WHERE f.worker = w.name), w.done, \
                 (SELECT count(*) FROM budgets b WHERE b.holder = w.name AND b.expires > now()), \
                 to_char(w.started AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), \
                 EXTRACT(EPOCH FROM now() - w.heartbeat)::float8, \
                 ARRAY(SELECT b.key FROM budgets b WHERE b.holder = w.name AND b.expires > now() \
                       ORDER BY b.key LIMIT $2), {per_worker} \
                 FROM workers w ORDER BY w.started, w.name"),
                &[&lease, &LEASES_SHOWN],
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
                leased: r.get(8),
                rate_last_minute: r.get(9),
                last_batch_age_seconds: r.get(10),
                last_batch_done: r.get(11),
                last_batch_queued: r.get(12),
            })
            .collect::<Vec<WorkerStatus>>();
        let rate_last_minute = workers.iter().map(|w| w.rate_last_minute).sum();
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
            rate_last_minute,
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
