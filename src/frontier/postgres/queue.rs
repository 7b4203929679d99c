//! The queue operations that touch many rows: a flush, a take, requeueing a dead worker's URLs.

use std::collections::HashMap;

use url::Url;

use super::conn::Conn;
use super::{kind_of, Buffer, Pending, RawRow};

/// One flush, as one statement (one round trip, atomic without a transaction of its own):
/// seen keys, the in-flight list, site counters, queue rows, budget pauses and the worker's
/// done count and last batch (for `archiver status`). Returns the new
/// counters (origin, accepted, queued) of every site it changed.
///
/// Seen keys go in sorted and site rows are upserted sorted by origin, so two workers' flushes
/// lock shared rows in the same order. A push whose key another worker inserted into `seen`
/// first is dropped: that URL is the other worker's.
const FLUSH: &str = "\
WITH fresh AS (INSERT INTO seen (key) SELECT k FROM unnest($1::text[]) AS k ORDER BY k \
               ON CONFLICT DO NOTHING RETURNING key), \
 p AS (SELECT * FROM unnest($5::text[], $6::smallint[], $7::text[], $8::text[], $9::text[], \
                            $10::text[], $11::integer[], $12::boolean[]) WITH ORDINALITY \
       AS t(site, kind, key, url, path, via, attempts, counted, n)), \
 real AS (SELECT * FROM p WHERE NOT p.counted OR NOT (p.key = ANY($1::text[])) \
          OR p.key IN (SELECT key FROM fresh)), \
 gone AS (DELETE FROM flight WHERE (key = ANY($2::text[]) AND worker = $3) \
          OR key IN (SELECT key FROM real) RETURNING 1), \
 per AS (SELECT site, sum(counted::int)::bigint AS acc, count(*)::bigint AS q \
         FROM real GROUP BY site), \
 s AS (INSERT INTO sites AS x (origin, accepted, queued) SELECT site, acc, q FROM per \
       ORDER BY site ON CONFLICT (origin) DO UPDATE \
       SET accepted = x.accepted + EXCLUDED.accepted, queued = x.queued + EXCLUDED.queued \
       RETURNING x.id, x.origin, x.accepted, x.queued), \
 ins AS (INSERT INTO queue (site, kind, key, url, path, via, attempts) \
         SELECT s.id, real.kind, real.key, real.url, real.path, real.via, real.attempts \
         FROM real JOIN s ON s.origin = real.site ORDER BY real.n RETURNING 1), \
 w AS (UPDATE workers SET done = done + $4::bigint, batch_at = now(), batch_done = $4::bigint, \
       batch_queued = (SELECT count(*) FROM ins) \
       WHERE name = $3 AND ($4::bigint > 0 OR EXISTS (SELECT 1 FROM ins)) RETURNING 1), \
 g AS (SELECT * FROM unnest($13::text[], $14::float8[], $15::bigint[]) AS g(key, ms, backoff)), \
 b AS (UPDATE budgets SET holder = NULL, expires = NULL, \
       last_end = CASE WHEN g.ms > 0 THEN now() ELSE last_end END, \
       next_allowed = GREATEST(coalesce(next_allowed, now()), \
                               now() + g.ms * interval '1 millisecond'), \
       backoff_ms = g.backoff, \
       fetches = fetches + (CASE WHEN g.ms > 0 THEN 1 ELSE 0 END) \
       FROM g WHERE budgets.key = g.key AND budgets.holder = $3 RETURNING 1) \
SELECT origin, accepted, queued FROM s";

pub(super) fn write(
    c: &mut Conn,
    buf: &Buffer,
    worker: &str,
) -> Result<Vec<(String, u64, usize)>, postgres::Error> {
    let mut seen = buf.seen.clone();
    seen.sort_unstable();
    seen.dedup();
    let done = i64::try_from(buf.done.len()).unwrap_or(i64::MAX);
    let pushes = Pushes::of(&buf.pushes);
    // A budget given back twice since the last flush: the longer pause holds (as it would
    // have, written twice), with the later backoff.
    let mut paused: HashMap<&str, (f64, i64)> = HashMap::new();
    for (key, ms, backoff) in &buf.paused {
        let e = paused.entry(key.as_str()).or_insert((0.0, 0));
        *e = (e.0.max(*ms as f64), *backoff);
    }
    let (mut keys, mut ms, mut backoff): (Vec<&str>, Vec<f64>, Vec<i64>) = Default::default();
    for (k, (m, b)) in paused {
        keys.push(k);
        ms.push(m);
        backoff.push(b);
    }
    let rows = c.query(
        FLUSH,
        &[
            &seen,
            &buf.done,
            &worker,
            &done,
            &pushes.sites,
            &pushes.kinds,
            &pushes.keys,
            &pushes.urls,
            &pushes.paths,
            &pushes.vias,
            &pushes.attempts,
            &pushes.counted,
            &keys,
            &ms,
            &backoff,
        ],
    )?;
    Ok(rows
        .into_iter()
        .map(|row| {
            (
                row.get::<_, String>(0),
                u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
                usize::try_from(row.get::<_, i64>(2)).unwrap_or(0),
            )
        })
        .collect())
}

/// The buffered pushes as one array per column, for `unnest`.
#[derive(Default)]
struct Pushes<'a> {
    sites: Vec<&'a str>,
    kinds: Vec<i16>,
    keys: Vec<&'a str>,
    urls: Vec<&'a str>,
    paths: Vec<&'a str>,
    vias: Vec<Option<&'a str>>,
    attempts: Vec<i32>,
    counted: Vec<bool>,
}

impl<'a> Pushes<'a> {
    fn of(pending: &'a [Pending]) -> Pushes<'a> {
        let mut p = Pushes::default();
        for q in pending {
            p.sites.push(&q.site);
            p.kinds.push(kind_of(&q.candidate));
            p.keys.push(&q.key);
            p.urls.push(q.candidate.url.as_str());
            p.paths.push(&q.candidate.path);
            p.vias.push(q.candidate.via.as_ref().map(Url::as_str));
            p.attempts
                .push(i32::try_from(q.candidate.attempts).unwrap_or(i32::MAX));
            p.counted.push(q.counted);
        }
        p
    }
}

/// A URL taken: its row, the count left in its site's queue, and the site's refusals in a row
/// as the workers counted them.
pub(super) struct Taken {
    pub(super) row: RawRow,
    pub(super) left: usize,
    pub(super) refusals: u32,
}

/// Moves a site's first URL (requisites first) to this worker's in-flight list. One
/// statement, so nothing is half taken.
pub(super) fn take(
    c: &mut Conn,
    origin: &str,
    worker: &str,
) -> Result<Option<Taken>, postgres::Error> {
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
               WHERE sites.id = d.site RETURNING sites.queued, sites.refusals) \
         SELECT d.url, d.path, d.via, d.attempts, (SELECT queued FROM u), \
                (SELECT refusals FROM u) FROM d",
        &[&origin, &worker],
    )?;
    Ok(row.map(|r| {
        let left: Option<i64> = r.get(4);
        let refusals: Option<i32> = r.get(5);
        Taken {
            row: (r.get(0), r.get(1), r.get(2), r.get(3)),
            left: usize::try_from(left.unwrap_or(0)).unwrap_or(0),
            refusals: u32::try_from(refusals.unwrap_or(0)).unwrap_or(0),
        }
    }))
}

/// Queues again the in-flight URLs of workers whose heartbeat is older than the lease (dead),
/// behind what their sites have queued; their budgets lapse on their own. Returns how many.
/// One statement (it runs once a second on every worker, and usually finds nothing).
pub(super) fn reap(c: &mut Conn, lease: f64) -> Result<u64, postgres::Error> {
    let row = c.query_one(
        "WITH d AS (DELETE FROM flight f WHERE NOT EXISTS (SELECT 1 FROM workers w \
               WHERE w.name = f.worker AND w.ended IS NULL \
               AND w.heartbeat > now() - $1 * interval '1 second') \
               RETURNING f.key, f.site, f.url, f.path, f.via, f.attempts, f.since), \
         per AS (SELECT site, count(*)::bigint AS q FROM d GROUP BY site), \
         s AS (INSERT INTO sites AS x (origin, queued) SELECT site, q FROM per ORDER BY site \
               ON CONFLICT (origin) DO UPDATE SET queued = x.queued + EXCLUDED.queued \
               RETURNING x.id, x.origin), \
         ins AS (INSERT INTO queue (site, kind, key, url, path, via, attempts) \
                 SELECT s.id, CASE WHEN rtrim(d.path, 'R') LIKE '%E' THEN 1 ELSE 0 END, \
                 d.key, d.url, d.path, d.via, d.attempts \
                 FROM d JOIN s ON s.origin = d.site ORDER BY d.since, d.key RETURNING 1) \
         SELECT count(*) FROM d",
        &[&lease],
    )?;
    Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}
