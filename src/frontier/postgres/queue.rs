//! The queue operations that touch many rows: a flush, a take, requeueing a dead worker's URLs.

use std::collections::{HashMap, HashSet};

use postgres::Client;
use url::Url;

use super::{kind_of, Buffer, Pending, RawRow};

/// One flush: seen keys, queue rows, in-flight list, site counters and budget pauses, in that
/// order. Returns the new counters (origin, accepted, queued) of every site it changed.
pub(super) fn write(
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

/// Moves a site's first URL (requisites first) to this worker's in-flight list; returns it with
/// the count left in the site's queue. One statement, so nothing is half taken.
#[allow(clippy::type_complexity)]
pub(super) fn take(
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
pub(super) fn reap(c: &mut Client, lease: f64) -> Result<u64, postgres::Error> {
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
