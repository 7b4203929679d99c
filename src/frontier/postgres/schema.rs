//! The tables of a shared crawl: created by the first worker, checked by every later one.

use postgres::Client;

use crate::frontier::sqlite::CrawlIdentity;

/// Bumped whenever the tables change: an older format is brought up to date (see
/// [`MIGRATIONS`]), a newer one is refused, not guessed at.
const FORMAT_VERSION: i32 = 3;

/// What brings format N to N+1, in order; a new crawl is created in format 1 and brought up
/// the same way, so there is one description of every table. Each step only adds (columns with
/// defaults, tables), so a worker still running the older format keeps working meanwhile.
const MIGRATIONS: [(i32, &str); 2] = [
    (
        1,
        // Shared per-site state: refusals in a row, budget backoff, robots.txt, payload digests.
        "
ALTER TABLE sites ADD COLUMN IF NOT EXISTS refusals integer NOT NULL DEFAULT 0;
ALTER TABLE budgets ADD COLUMN IF NOT EXISTS backoff_ms bigint NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS robots (
    origin text PRIMARY KEY,
    status integer NOT NULL,
    body bytea NOT NULL,
    fetched timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS digests (
    digest text PRIMARY KEY,
    uri text NOT NULL,
    date text NOT NULL,
    record_id text
);
",
    ),
    (
        2,
        // For `archiver status`: each worker's last batch (its last flush: when, URLs done,
        // URLs queued) and two marks of its done count, moved on by the heartbeat at most
        // every 30 s, so its rate over about the last minute is (done - prev_done) /
        // (now - prev_at).
        "
ALTER TABLE workers ADD COLUMN IF NOT EXISTS batch_at timestamptz;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS batch_done bigint NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS batch_queued bigint NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS mark_done bigint NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS mark_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE workers ADD COLUMN IF NOT EXISTS prev_done bigint NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS prev_at timestamptz NOT NULL DEFAULT now();
-- Workers already running count from now, not from their start.
UPDATE workers SET mark_done = done, prev_done = done;
",
    ),
];

/// Every table lives in this schema, so the crawl can share a database with other data.
pub(super) const SCHEMA_NAME: &str = "archiver";

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

/// Creates the schema on first use, or checks it (bringing an older format up to date);
/// registers the worker. `Ok(Some(msg))` when the database belongs to another crawl or to a
/// newer format.
pub(super) fn setup(
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
            "INSERT INTO crawl (format, name, seeds) VALUES (1, $1, $2)",
            &[&identity.name, &seeds],
        )?;
        migrate(&mut tx, 1)?;
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
        if !(1..=FORMAT_VERSION).contains(&format) {
            return Ok(Some(format!(
                "frontier format {format}, but this archiver reads formats 1 to \
                 {FORMAT_VERSION}: finish that crawl with the archiver that started it"
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
        migrate(&mut tx, format)?;
    }
    tx.execute(
        "INSERT INTO workers (name) VALUES ($1) ON CONFLICT (name) DO UPDATE \
         SET heartbeat = now(), ended = NULL, mark_done = workers.done, mark_at = now(), \
         prev_done = workers.done, prev_at = now()",
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

/// Brings the tables from `format` up to [`FORMAT_VERSION`], under the setup lock.
fn migrate(tx: &mut postgres::Transaction<'_>, format: i32) -> Result<(), postgres::Error> {
    if format < FORMAT_VERSION {
        // The steps alter these tables while workers of the older format may still run. Taken
        // at once, in the order those workers' statements lock them (their heartbeat: workers,
        // budgets; their flush: workers, sites, budgets), so this waits for them instead of
        // deadlocking with them.
        tx.batch_execute("LOCK TABLE workers, sites, budgets IN ACCESS EXCLUSIVE MODE")?;
    }
    for (from, step) in MIGRATIONS {
        if from >= format {
            tx.batch_execute(step)?;
        }
    }
    if format < FORMAT_VERSION {
        tx.execute("UPDATE crawl SET format = $1", &[&FORMAT_VERSION])?;
    }
    Ok(())
}
