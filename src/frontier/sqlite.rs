//! The durable frontier: per-site queues, the seen-set and the in-flight list of a crawl in one
//! SQLite file, `STATE/frontier.sqlite`, so a crawl of days survives a crash, a reboot or Ctrl-C.
//!
//! [`SqliteFrontier`] behaves exactly like [`MemoryFrontier`](crate::frontier::MemoryFrontier)
//! (the tests run the same checks on both); what it adds is that the state of the last
//! [`Frontier::commit`] is what the next run finds.
//!
//! # Durability
//! Every change goes into one open transaction that [`Frontier::commit`] closes. The crawl
//! commits once per group of URLs, always before a URL's WARC record is written (so the URL's
//! move to the in-flight list and its page's outlinks are durable first); a URL's done-mark may
//! wait for a later commit, which recovery makes up for (see `crawl/commits.rs` for the
//! argument). The database runs in WAL mode with `synchronous=NORMAL`:
//! - a **process crash** (panic, SIGKILL, OOM kill) loses nothing committed: a commit has handed
//!   its pages to the operating system before `commit` returns. What was not committed (URLs
//!   taken, links found and URLs finished since the last commit) is rolled back, so the next run
//!   finds the exact state of the last commit;
//! - a **power loss or kernel crash** can lose the commits made since the WAL was last synced
//!   to disk, which happens at every checkpoint (every [`WAL_CHECKPOINT_PAGES`] pages of WAL,
//!   about 40 MB; in a crawl a few hundred to a few thousand finished URLs). The database is
//!   never left corrupt: it comes back at an earlier commit, so the URLs finished in the lost
//!   commits are queued or in flight again and are fetched a second time; nothing that was
//!   queued is lost. (Whether their WARC records survived is up to the WARC writer's syncing.)
//!
//! # Layout (format 2), chosen by measurement (`tools/bench/frontier.sh`)
//! - `meta(key, value)`: format version and the crawl identity (profile name and seeds), so a
//!   state folder is never resumed by another profile; `PRAGMA application_id` marks the file.
//! - `sites(id, origin, accepted, pages, embeds, next_seq)`: one row per site. The counters are
//!   kept in memory (`queued`, `total_queued` and `accepted` are asked at every scheduling step
//!   and must not cost a query) and written back, for the sites that changed, at `commit`.
//! - `queue(site, kind, seq, url, path, via, attempts)`, a table clustered on its key
//!   `(site, kind, seq)` (`WITHOUT ROWID`): kind 0 = page, 1 = embed (taken first); `seq`
//!   counts up per site, so order within a kind is push order. `pop` is one seek, and a site's
//!   queue sits on adjacent pages. Against a rowid table with an AUTOINCREMENT `seq` and a
//!   separate index on `(site, kind, seq)`, this wrote 44% fewer bytes and used 25% less CPU for
//!   popping 10^6 URLs (the index and the table were two B-trees to update per URL).
//!   URLs are stored without their site's origin (`/path` for `http://host/path`): 23% off the
//!   file.
//! - `seen(key)`: the seen-set, a `WITHOUT ROWID` table keyed by [`seen_key`] itself. A 64-bit
//!   hash of the key as the key (full key kept to resolve collisions) was measured too: with about
//!   the same file size it wrote 2.3 times the bytes and used twice the CPU for 10^6 URLs, because
//!   hashes scatter a site's URLs over the whole B-tree while text keys keep them together
//!   (`http://host/...`), and a crawl adds the links of one site at a time.
//! - `flight(key, site, url, path, via, attempts)`: candidates popped but not yet finished.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};
use url::Url;

use crate::frontier::{seen_key, Candidate, Frontier, FrontierError};

/// The database file inside a crawl's state folder.
pub const FILE_NAME: &str = "frontier.sqlite";

/// Bumped whenever the tables change meaning: an older or newer file is refused, not guessed at.
/// (Format 1 was a draft of this module with a hash-keyed seen-set; its files are refused.)
const FORMAT_VERSION: i64 = 2;

/// `PRAGMA application_id` of our files ("ArcF"), so a foreign SQLite file is told apart.
const APPLICATION_ID: i32 = 0x4172_6346;

/// Page cache of the connection, in KiB. It bounds the frontier's memory whatever the crawl's
/// size, and a crawl's memory grows until it is full, so it is kept small: the frontier bench
/// ran as fast at 10^6 URLs with 8, 16 and 64 MiB, wrote the same bytes, and peaked at 14, 22
/// and 73 MiB. Pages it misses are served by the OS page cache; 16 MiB keeps the B-trees'
/// inner pages in (issue 15, tools/bench/RESULTS.md "Many sites: memory over a long crawl").
const CACHE_KIB: i64 = 16 * 1024;

/// WAL pages between checkpoints (SQLite's default is 1,000). Each checkpoint copies the WAL
/// into the database and syncs both, so a page changed by many commits is copied once per
/// checkpoint: 10,000 wrote 37% fewer bytes than 1,000 when popping 10^6 URLs. The price is
/// what a power loss can take (see the module documentation).
pub const WAL_CHECKPOINT_PAGES: i64 = 10_000;

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE sites (
    id INTEGER PRIMARY KEY,
    origin TEXT NOT NULL UNIQUE,
    accepted INTEGER NOT NULL DEFAULT 0,
    pages INTEGER NOT NULL DEFAULT 0,
    embeds INTEGER NOT NULL DEFAULT 0,
    next_seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE queue (
    site INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    url TEXT NOT NULL,
    path TEXT NOT NULL,
    via TEXT,
    attempts INTEGER NOT NULL,
    PRIMARY KEY (site, kind, seq)
) WITHOUT ROWID;
CREATE TABLE seen (key TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE flight (
    key TEXT PRIMARY KEY,
    site TEXT NOT NULL,
    url TEXT NOT NULL,
    path TEXT NOT NULL,
    via TEXT,
    attempts INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Which crawl a state folder belongs to: the profile's name and seeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawlIdentity {
    pub name: String,
    pub seeds: Vec<String>,
}

impl CrawlIdentity {
    /// Seeds compared as a set: reordering or repeating seeds in the profile is the same crawl.
    fn seed_set(&self) -> Vec<&str> {
        let mut s: Vec<&str> = self.seeds.iter().map(String::as_str).collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    pub(crate) fn same_crawl(&self, other: &CrawlIdentity) -> bool {
        self.name == other.name && self.seed_set() == other.seed_set()
    }

    /// `"name" (seeds: a, b, c, … 12 in all)`, short enough for an error message.
    pub(crate) fn describe(&self) -> String {
        const SHOWN: usize = 3;
        let mut seeds = self
            .seeds
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if self.seeds.len() > SHOWN {
            seeds.push_str(&format!(", … {} in all", self.seeds.len()));
        }
        format!("\"{}\" (seeds: {seeds})", self.name)
    }
}

/// In-memory copy of a `sites` row.
#[derive(Debug, Clone)]
struct SiteRow {
    id: i64,
    accepted: u64,
    pages: usize,
    embeds: usize,
    /// Sequence number of the site's next queued URL.
    next_seq: i64,
    /// Changed since the last commit: written back to `sites` then.
    dirty: bool,
}

impl SiteRow {
    fn queued(&self) -> usize {
        self.pages + self.embeds
    }
}

/// A frontier kept in SQLite: see the module documentation.
pub struct SqliteFrontier {
    conn: Connection,
    path: PathBuf,
    sites: HashMap<String, SiteRow>,
    /// Origins whose row is dirty, so `commit` does not walk every site.
    dirty: Vec<String>,
    total: usize,
    /// The keys of the rows in `flight` (a few thousand at most: the URLs being fetched), so
    /// queueing a link, which may not be in flight, costs no delete that finds nothing.
    flying: HashSet<String>,
    /// A transaction is open (changes since the last commit).
    in_tx: bool,
    /// Set by the first failed change: the transaction was rolled back and the in-memory counters
    /// no longer match the file, so every later change fails too rather than commit half of one.
    broken: Option<String>,
}

impl std::fmt::Debug for SqliteFrontier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteFrontier")
            .field("path", &self.path)
            .field("sites", &self.sites.len())
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

/// Page (0) or requisite (1): queued requisites are fetched before the site's next page, so a
/// page is complete in the archive before the crawl moves on.
fn kind_of(c: &Candidate) -> i64 {
    i64::from(c.is_requisite())
}

/// A URL as stored: without its site's origin when it has one (`/p?q` for `http://h/p?q` in
/// site `http://h`), else whole. A stored value starting with `/` is always the short form,
/// since a whole URL starts with its scheme.
fn shorten<'a>(site: &str, url: &'a str) -> &'a str {
    match url.strip_prefix(site) {
        Some(rest) if rest.starts_with('/') => rest,
        _ => url,
    }
}

/// The inverse of [`shorten`].
fn lengthen(site: &str, stored: String) -> String {
    if stored.starts_with('/') {
        format!("{site}{stored}")
    } else {
        stored
    }
}

/// Turns an SQLite error into a message that says which file, what we were doing and what to do.
fn db_error(path: &Path, doing: &str, e: &rusqlite::Error) -> FrontierError {
    let hint = match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => {
            " (disk full: free some space, then run the crawl again; it resumes from the last \
             finished URL)"
        }
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => {
            " (the file is corrupt or is not an archiver frontier)"
        }
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            " (another process is using this state folder)"
        }
        Some(ErrorCode::ReadOnly)
        | Some(ErrorCode::PermissionDenied)
        | Some(ErrorCode::CannotOpen) => " (the state folder or file is not writable)",
        _ => "",
    };
    FrontierError(format!("{}: {doing}: {e}{hint}", path.display()))
}

fn plain_error(path: &Path, msg: impl std::fmt::Display) -> FrontierError {
    FrontierError(format!("{}: {msg}", path.display()))
}

/// A queue or flight row read back; turned into a [`Candidate`] outside the row callback, so a
/// bad value is reported as corruption of our file rather than as an SQLite error.
struct RawCandidate {
    url: String,
    path: String,
    via: Option<String>,
    attempts: i64,
}

impl RawCandidate {
    fn from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<RawCandidate> {
        Ok(RawCandidate {
            url: row.get(first)?,
            path: row.get(first + 1)?,
            via: row.get(first + 2)?,
            attempts: row.get(first + 3)?,
        })
    }

    fn parse(self, site: &str, db: &Path) -> Result<Candidate, FrontierError> {
        let bad = |what: &str, v: &str| plain_error(db, format!("corrupt {what} {v:?} in {site}"));
        let parse_url = |what: &str, stored: String| {
            let full = lengthen(site, stored);
            Url::parse(&full).map_err(|_| bad(what, &full))
        };
        let url = parse_url("URL", self.url)?;
        let via = match self.via {
            Some(v) => Some(parse_url("via URL", v)?),
            None => None,
        };
        let attempts = u32::try_from(self.attempts)
            .map_err(|_| bad("attempt count", &self.attempts.to_string()))?;
        Ok(Candidate {
            url,
            path: self.path,
            via,
            attempts,
        })
    }
}

impl SqliteFrontier {
    /// Opens the frontier of a crawl in `state_dir` (created if missing), or starts a new one.
    ///
    /// Refuses, with an error naming the file or folder: a folder that cannot be written, a file
    /// that is not SQLite or is SQLite without our tables, a format this build does not know, a
    /// state folder of another crawl (different name or seeds; both crawls are named), and a
    /// folder another process has open (the file stays locked while this frontier lives).
    pub fn open(
        state_dir: &Path,
        identity: &CrawlIdentity,
    ) -> Result<SqliteFrontier, FrontierError> {
        let path = state_dir.join(FILE_NAME);
        prepare_folder(state_dir)?;
        check_header(&path)?;
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| db_error(&path, "cannot open", &e))?;
        let err = |doing: &'static str| {
            let p = path.clone();
            move |e: rusqlite::Error| db_error(&p, doing, &e)
        };
        configure(&conn).map_err(err("cannot set up the database"))?;
        if conn.is_readonly("main").map_err(err("cannot open"))? {
            return Err(plain_error(&path, "the file is read-only"));
        }
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
            .map_err(err("cannot read"))?;
        if tables == 0 {
            create(&conn, identity).map_err(err("cannot create the frontier"))?;
        } else {
            check_identity(&conn, &path, state_dir, identity)?;
        }
        let mut f = SqliteFrontier {
            conn,
            path: path.clone(),
            sites: HashMap::new(),
            dirty: Vec::new(),
            total: 0,
            flying: HashSet::new(),
            in_tx: false,
            broken: None,
        };
        f.load().map_err(err("cannot read the frontier"))?;
        Ok(f)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Loads the site counters and the in-flight count: one row per site, not per URL, so
    /// reopening a frontier of 10^7 URLs takes milliseconds.
    fn load(&mut self) -> rusqlite::Result<()> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, origin, accepted, pages, embeds, next_seq FROM sites")?;
        let count = |v: i64| usize::try_from(v).unwrap_or(0);
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(1)?,
                SiteRow {
                    id: r.get(0)?,
                    accepted: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                    pages: count(r.get(3)?),
                    embeds: count(r.get(4)?),
                    next_seq: r.get(5)?,
                    dirty: false,
                },
            ))
        })?;
        for row in rows {
            let (origin, site) = row?;
            self.total += site.queued();
            self.sites.insert(origin, site);
        }
        drop(stmt);
        let mut stmt = self.conn.prepare("SELECT key FROM flight")?;
        let keys = stmt.query_map([], |r| r.get::<_, String>(0))?;
        for key in keys {
            self.flying.insert(key?);
        }
        Ok(())
    }

    /// Runs one change inside the open transaction (opening it if needed). On failure the
    /// transaction is rolled back and the frontier refuses every later change: the file then
    /// holds exactly the last commit, which the next run resumes from.
    fn change<T>(
        &mut self,
        doing: &str,
        f: impl FnOnce(&mut Self) -> Result<T, FrontierError>,
    ) -> Result<T, FrontierError> {
        if let Some(why) = &self.broken {
            return Err(plain_error(
                &self.path,
                format!("stopped after an earlier error: {why}"),
            ));
        }
        let result = self.begin(doing).and_then(|()| f(self));
        if let Err(e) = &result {
            self.broken = Some(e.0.clone());
            if !self.conn.is_autocommit() {
                // Best effort: SQLite may have rolled back already (it does on a full disk).
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            self.in_tx = false;
        }
        result
    }

    fn begin(&mut self, doing: &str) -> Result<(), FrontierError> {
        if !self.in_tx {
            // Cached, as every statement of a change: parsed once, not once per commit.
            self.conn
                .prepare_cached("BEGIN IMMEDIATE")
                .and_then(|mut s| s.execute([]))
                .map_err(|e| db_error(&self.path, doing, &e))?;
            self.in_tx = true;
        }
        Ok(())
    }

    /// Maps an SQLite error of this frontier.
    fn sql(&self, doing: &'static str) -> impl Fn(rusqlite::Error) -> FrontierError + '_ {
        move |e| db_error(&self.path, doing, &e)
    }

    /// Runs a cached statement that changes rows; returns how many.
    fn exec(
        &self,
        doing: &'static str,
        sql: &str,
        args: impl rusqlite::Params,
    ) -> Result<usize, FrontierError> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| s.execute(args))
            .map_err(self.sql(doing))
    }

    /// The row id of a site, inserting its row on first use.
    fn site_id(&mut self, origin: &str) -> Result<i64, FrontierError> {
        if let Some(s) = self.sites.get(origin) {
            return Ok(s.id);
        }
        self.exec(
            "cannot add a site",
            "INSERT INTO sites (origin) VALUES (?1)",
            [origin],
        )?;
        let id = self.conn.last_insert_rowid();
        let row = SiteRow {
            id,
            accepted: 0,
            pages: 0,
            embeds: 0,
            next_seq: 0,
            dirty: false,
        };
        self.sites.insert(origin.to_string(), row);
        Ok(id)
    }

    /// The site's counters, marked to be written back at the next commit.
    fn site_mut(&mut self, origin: &str) -> Option<&mut SiteRow> {
        let s = self.sites.get_mut(origin)?;
        if !s.dirty {
            s.dirty = true;
            self.dirty.push(origin.to_string());
        }
        Some(s)
    }

    /// Takes a URL off the in-flight list (if it is there).
    fn land(&mut self, key: &str) -> Result<(), FrontierError> {
        if self.flying.remove(key) {
            self.exec(
                "cannot update the in-flight list",
                "DELETE FROM flight WHERE key = ?1",
                [key],
            )?;
        }
        Ok(())
    }

    /// Queues a candidate behind the others of its site and kind (push and push_retry).
    fn enqueue(
        &mut self,
        site: &str,
        c: &Candidate,
        doing: &'static str,
    ) -> Result<(), FrontierError> {
        self.land(&seen_key(&c.url))?;
        let id = self.site_id(site)?;
        let kind = kind_of(c);
        let seq = self.sites.get(site).map_or(0, |s| s.next_seq);
        self.exec(
            doing,
            "INSERT INTO queue (site, kind, seq, url, path, via, attempts) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                id,
                kind,
                seq,
                shorten(site, c.url.as_str()),
                c.path,
                c.via.as_ref().map(|v| shorten(site, v.as_str())),
                i64::from(c.attempts)
            ],
        )?;
        if let Some(s) = self.site_mut(site) {
            s.next_seq += 1;
            if kind == 0 {
                s.pages += 1;
            } else {
                s.embeds += 1;
            }
        }
        self.total += 1;
        Ok(())
    }

    /// Candidates of a site from `sql` (which selects seq, url, path, via, attempts).
    fn select(
        &self,
        site: &str,
        sql: &str,
        args: impl rusqlite::Params,
    ) -> Result<Vec<(i64, Candidate)>, FrontierError> {
        let err = self.sql("cannot read the queue");
        let mut stmt = self.conn.prepare_cached(sql).map_err(&err)?;
        let rows = stmt
            .query_map(args, |r| {
                Ok((r.get::<_, i64>(0)?, RawCandidate::from_row(r, 1)?))
            })
            .map_err(&err)?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, raw) = row.map_err(&err)?;
            out.push((seq, raw.parse(site, &self.path)?));
        }
        Ok(out)
    }

    /// Moves the first candidate of a site and kind from the queue to the in-flight list.
    fn take(&mut self, site: &str, kind: i64) -> Result<Candidate, FrontierError> {
        let id = self.sites.get(site).map_or(-1, |s| s.id);
        let first = self.select(
            site,
            "SELECT seq, url, path, via, attempts FROM queue \
             WHERE site = ?1 AND kind = ?2 ORDER BY seq LIMIT 1",
            params![id, kind],
        )?;
        let Some((seq, c)) = first.into_iter().next() else {
            return Err(plain_error(
                &self.path,
                format!("the queue of {site} is shorter than its counter says (corrupt)"),
            ));
        };
        let doing = "cannot take the next URL";
        self.exec(
            doing,
            "DELETE FROM queue WHERE site = ?1 AND kind = ?2 AND seq = ?3",
            [id, kind, seq],
        )?;
        let key = seen_key(&c.url);
        self.land(&key)?;
        self.exec(
            doing,
            "INSERT INTO flight (key, site, url, path, via, attempts) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                key,
                site,
                shorten(site, c.url.as_str()),
                c.path,
                c.via.as_ref().map(|v| shorten(site, v.as_str())),
                i64::from(c.attempts)
            ],
        )?;
        self.flying.insert(key);
        if let Some(s) = self.site_mut(site) {
            if kind == 0 {
                s.pages -= 1;
            } else {
                s.embeds -= 1;
            }
        }
        self.total -= 1;
        Ok(c)
    }

    /// Writes the dirty site counters and commits the transaction.
    fn write_back(&mut self) -> Result<(), FrontierError> {
        for origin in &self.dirty {
            if let Some(s) = self.sites.get(origin) {
                self.exec(
                    "cannot commit",
                    "UPDATE sites SET accepted = ?2, pages = ?3, embeds = ?4, next_seq = ?5 \
                     WHERE id = ?1",
                    params![
                        s.id,
                        i64::try_from(s.accepted).unwrap_or(i64::MAX),
                        i64::try_from(s.pages).unwrap_or(i64::MAX),
                        i64::try_from(s.embeds).unwrap_or(i64::MAX),
                        s.next_seq
                    ],
                )?;
            }
        }
        self.exec("cannot commit", "COMMIT", [])?;
        self.in_tx = false;
        for origin in std::mem::take(&mut self.dirty) {
            if let Some(s) = self.sites.get_mut(&origin) {
                s.dirty = false;
            }
        }
        Ok(())
    }
}

/// Creates the state folder if needed and proves it writable, so a read-only folder is named up
/// front instead of failing at the first commit.
fn prepare_folder(dir: &Path) -> Result<(), FrontierError> {
    if dir.exists() && !dir.is_dir() {
        return Err(plain_error(dir, "the state folder is not a folder"));
    }
    fs::create_dir_all(dir)
        .map_err(|e| plain_error(dir, format!("cannot create the state folder: {e}")))?;
    tempfile::Builder::new()
        .prefix(".archiver-write-test")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| plain_error(dir, format!("the state folder is not writable: {e}")))
}

/// Tells a foreign file from an SQLite one before SQLite sees it (SQLite only notices at the
/// first read, with a less helpful message).
fn check_header(path: &Path) -> Result<(), FrontierError> {
    use std::io::Read;
    const MAGIC: &[u8; 16] = b"SQLite format 3\0";
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(plain_error(path, format!("cannot read: {e}"))),
    };
    let mut head = Vec::with_capacity(MAGIC.len());
    file.take(MAGIC.len() as u64)
        .read_to_end(&mut head)
        .map_err(|e| plain_error(path, format!("cannot read: {e}")))?;
    // An empty file is what SQLite leaves when a process dies right after creating it.
    if head.is_empty() || head == MAGIC {
        return Ok(());
    }
    Err(plain_error(
        path,
        "not an archiver frontier (not an SQLite database): move it away or use another state \
         folder",
    ))
}

/// Connection settings; see the module documentation for why each.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    // Only another process holding the file makes us wait, and it holds it for its whole life:
    // a short wait covers one that is just exiting, then the error names the cause.
    conn.busy_timeout(std::time::Duration::from_secs(1))?;
    // Held for the life of the connection: a second crawl on the same folder fails at open
    // instead of interleaving its changes with ours.
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("cannot switch to WAL mode (got {mode})")),
        ));
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)?;
    // The WAL is cut back to this size after a checkpoint, so a big batch does not leave a
    // large file behind for the rest of the crawl.
    conn.pragma_update(None, "journal_size_limit", 64i64 << 20)?;
    conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
    conn.set_prepared_statement_cache_capacity(32);
    // The query planner's stability guarantee: a statement's plan never depends on the values
    // bound to it. Without it SQLite compiled the queue's `... ORDER BY seq LIMIT 1` (the next
    // URL of a site) anew at every pop, since its equality parameters might change the plan:
    // 4% of the crawler's CPU at the 3,000-site start (tools/bench/RESULTS-scale.md). Every
    // statement here is a key lookup or a key-ordered range whatever the values.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

fn create(conn: &Connection, identity: &CrawlIdentity) -> rusqlite::Result<()> {
    let seeds = serde_json::to_string(&identity.seeds)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    conn.execute_batch(SCHEMA)?;
    conn.pragma_update(None, "application_id", APPLICATION_ID)?;
    let mut ins = conn.prepare("INSERT INTO meta (key, value) VALUES (?1, ?2)")?;
    ins.execute(["format", &FORMAT_VERSION.to_string()])?;
    ins.execute(["crawl_name", &identity.name])?;
    ins.execute(["seeds", &seeds])?;
    ins.execute(["created", &chrono::Utc::now().to_rfc3339()])?;
    drop(ins);
    conn.execute_batch("COMMIT")
}

/// Checks that an existing file is our format and belongs to this crawl.
fn check_identity(
    conn: &Connection,
    path: &Path,
    state_dir: &Path,
    identity: &CrawlIdentity,
) -> Result<(), FrontierError> {
    let err = |e: rusqlite::Error| db_error(path, "cannot read", &e);
    let foreign = || {
        plain_error(
            path,
            "an SQLite database but not an archiver frontier: move it away or use another state \
             folder",
        )
    };
    let app: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(err)?;
    let has_meta: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if app != APPLICATION_ID || has_meta == 0 {
        return Err(foreign());
    }
    let meta = |key: &str| -> Result<String, FrontierError> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(err)?
            .ok_or_else(foreign)
    };
    let version = meta("format")?;
    if version != FORMAT_VERSION.to_string() {
        return Err(plain_error(
            path,
            format!(
                "frontier format {version}, but this archiver reads format {FORMAT_VERSION}: \
                 finish that crawl with the archiver that started it"
            ),
        ));
    }
    let stored = CrawlIdentity {
        name: meta("crawl_name")?,
        seeds: serde_json::from_str(&meta("seeds")?).map_err(|_| foreign())?,
    };
    if !stored.same_crawl(identity) {
        return Err(plain_error(
            state_dir,
            format!(
                "this state folder belongs to crawl {}, not to this profile's crawl {}: use \
                 another state folder, or the profile that started it",
                stored.describe(),
                identity.describe()
            ),
        ));
    }
    Ok(())
}

impl Frontier for SqliteFrontier {
    fn mark_seen(&mut self, url: &Url) -> Result<bool, FrontierError> {
        let key = seen_key(url);
        self.change("cannot update the seen-set", |f| {
            let n = f.exec(
                "cannot update the seen-set",
                "INSERT OR IGNORE INTO seen (key) VALUES (?1)",
                [&key],
            )?;
            Ok(n == 1)
        })
    }

    fn push(&mut self, site: &str, candidate: Candidate) -> Result<(), FrontierError> {
        self.change("cannot queue a URL", |f| {
            f.enqueue(site, &candidate, "cannot queue a URL")?;
            if let Some(s) = f.site_mut(site) {
                s.accepted += 1;
            }
            Ok(())
        })
    }

    fn push_retry(&mut self, site: &str, candidate: Candidate) -> Result<(), FrontierError> {
        self.change("cannot queue a retry", |f| {
            f.enqueue(site, &candidate, "cannot queue a retry")
        })
    }

    fn pop(&mut self, site: &str) -> Result<Option<Candidate>, FrontierError> {
        let kind = match self.sites.get(site) {
            Some(s) if s.embeds > 0 => 1,
            Some(s) if s.pages > 0 => 0,
            _ => return Ok(None),
        };
        self.change("cannot take the next URL", |f| f.take(site, kind).map(Some))
    }

    fn done(&mut self, url: &Url) -> Result<(), FrontierError> {
        let key = seen_key(url);
        self.change("cannot mark a URL finished", |f| f.land(&key))
    }

    fn queued(&self, site: &str) -> usize {
        self.sites.get(site).map_or(0, SiteRow::queued)
    }

    fn total_queued(&self) -> usize {
        self.total
    }

    fn accepted(&self, site: &str) -> u64 {
        self.sites.get(site).map_or(0, |s| s.accepted)
    }

    fn drain(&mut self, site: &str) -> Result<Vec<Candidate>, FrontierError> {
        let Some(id) = self
            .sites
            .get(site)
            .filter(|s| s.queued() > 0)
            .map(|s| s.id)
        else {
            return Ok(Vec::new());
        };
        self.change("cannot drop a site's queue", |f| {
            let all = f.select(
                site,
                "SELECT seq, url, path, via, attempts FROM queue \
                 WHERE site = ?1 ORDER BY kind, seq",
                [id],
            )?;
            f.exec(
                "cannot drop a site's queue",
                "DELETE FROM queue WHERE site = ?1",
                [id],
            )?;
            f.total -= f.sites.get(site).map_or(0, SiteRow::queued);
            if let Some(s) = f.site_mut(site) {
                s.pages = 0;
                s.embeds = 0;
            }
            Ok(all.into_iter().map(|(_, c)| c).collect())
        })
    }

    fn sites_with_work(&mut self) -> Result<Vec<String>, FrontierError> {
        // In the order the sites were first queued, so a resumed crawl starts where it started.
        let mut sites: Vec<(i64, &String)> = self
            .sites
            .iter()
            .filter(|(_, s)| s.queued() > 0)
            .map(|(o, s)| (s.id, o))
            .collect();
        sites.sort_unstable();
        Ok(sites.into_iter().map(|(_, o)| o.clone()).collect())
    }

    fn in_flight(&mut self) -> Result<Vec<(String, Candidate)>, FrontierError> {
        let err = self.sql("cannot read the in-flight list");
        let mut stmt = self
            .conn
            .prepare_cached("SELECT site, url, path, via, attempts FROM flight")
            .map_err(&err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, RawCandidate::from_row(r, 1)?))
            })
            .map_err(&err)?;
        let mut out = Vec::new();
        for row in rows {
            let (site, raw) = row.map_err(&err)?;
            let c = raw.parse(&site, &self.path)?;
            out.push((site, c));
        }
        Ok(out)
    }

    fn commit(&mut self) -> Result<(), FrontierError> {
        if self.broken.is_none() && !self.in_tx {
            return Ok(());
        }
        self.change("cannot commit", Self::write_back)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontier::MemoryFrontier;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    use crate::frontier::suite::{self, cand, show, sorted_flight, url};

    fn ident() -> CrawlIdentity {
        CrawlIdentity {
            name: "test".into(),
            seeds: vec!["http://a/".into(), "http://b/".into()],
        }
    }

    fn open(dir: &Path) -> SqliteFrontier {
        SqliteFrontier::open(dir, &ident()).unwrap()
    }

    /// Runs one shared check on a fresh SqliteFrontier, then compares it after a reopen.
    fn on_sqlite(check: fn(&mut dyn Frontier)) {
        let dir = tempfile::tempdir().unwrap();
        let mut f = open(dir.path());
        check(&mut f);
        // And the same state after a commit and a reopen.
        f.commit().unwrap();
        let before = suite::snapshot(&mut f);
        drop(f);
        let mut f = open(dir.path());
        assert_eq!(suite::snapshot(&mut f), before);
    }

    #[test]
    fn sqlite_frontier_passes_the_suite() {
        for check in suite::all() {
            on_sqlite(check);
        }
        on_sqlite(suite::check_nothing_shared);
    }

    // ---- durability ----

    #[test]
    fn reopen_keeps_seen_queued_accepted_and_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = open(dir.path());
        assert!(f.mark_seen(&url("http://a/1")).unwrap());
        f.push("a", cand("http://a/e", "LE")).unwrap();
        f.push("a", cand("http://a/1", "L")).unwrap();
        f.push("a", cand("http://a/2", "L")).unwrap();
        f.push("b", cand("http://b/1", "")).unwrap();
        let flying = f.pop("b").unwrap().unwrap();
        f.commit().unwrap();
        drop(f);

        let mut f = open(dir.path());
        assert!(!f.mark_seen(&url("http://a/1")).unwrap());
        assert_eq!(f.total_queued(), 3);
        assert_eq!(f.queued("a"), 3);
        assert_eq!(f.queued("b"), 0);
        assert_eq!(f.accepted("a"), 3);
        assert_eq!(f.accepted("b"), 1);
        assert_eq!(f.sites_with_work().unwrap(), ["a"]);
        let flight = f.in_flight().unwrap();
        assert_eq!(flight.len(), 1);
        assert_eq!(flight[0].0, "b");
        assert_eq!(show(&flight[0].1), show(&flying));
        let order: Vec<String> = std::iter::from_fn(|| f.pop("a").unwrap())
            .map(|c| c.url.path().to_string())
            .collect();
        assert_eq!(order, ["/e", "/1", "/2"]);
    }

    #[test]
    fn uncommitted_changes_are_lost_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = open(dir.path());
        f.mark_seen(&url("http://a/1")).unwrap();
        f.push("a", cand("http://a/1", "")).unwrap();
        f.push("a", cand("http://a/2", "L")).unwrap();
        f.commit().unwrap();
        // Not committed: a pop, a new site, a seen URL, a finished URL.
        f.pop("a").unwrap().unwrap();
        f.push("n", cand("http://n/1", "")).unwrap();
        f.mark_seen(&url("http://a/9")).unwrap();
        drop(f);

        let mut f = open(dir.path());
        assert_eq!(f.total_queued(), 2);
        assert_eq!(f.queued("n"), 0);
        assert_eq!(f.accepted("n"), 0);
        assert_eq!(f.accepted("a"), 2);
        assert!(f.in_flight().unwrap().is_empty());
        assert!(f.mark_seen(&url("http://a/9")).unwrap());
        assert!(!f.mark_seen(&url("http://a/1")).unwrap());
        assert_eq!(f.pop("a").unwrap().unwrap().url.path(), "/1");
    }

    #[test]
    fn urls_are_stored_without_their_origin_and_read_back_whole() {
        assert_eq!(shorten("http://a", "http://a/x?y"), "/x?y");
        assert_eq!(shorten("http://a", "http://ab/x"), "http://ab/x");
        assert_eq!(shorten("http://a:8080", "http://a/x"), "http://a/x");
        assert_eq!(shorten("s", "http://s/x"), "http://s/x");
        assert_eq!(lengthen("http://a", "/x?y".into()), "http://a/x?y");
        assert_eq!(lengthen("http://a", "http://b/".into()), "http://b/");

        let dir = tempfile::tempdir().unwrap();
        let mut f = open(dir.path());
        let mut c = cand("http://a/1", "LE");
        c.via = Some(url("http://other/page"));
        f.push("http://a", c).unwrap();
        let mut c = cand("http://ab/2", "L");
        c.via = Some(url("http://a/"));
        f.push("http://a", c).unwrap();
        f.commit().unwrap();
        let stored: Vec<(String, Option<String>)> = f
            .conn
            .prepare("SELECT url, via FROM queue ORDER BY kind")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            stored,
            [
                ("http://ab/2".to_string(), Some("/".to_string())),
                ("/1".to_string(), Some("http://other/page".to_string())),
            ]
        );
        drop(f);
        let mut f = open(dir.path());
        let first = f.pop("http://a").unwrap().unwrap();
        assert_eq!(show(&first), "http://a/1 LE http://other/page 0");
        assert_eq!(
            sorted_flight(&mut f),
            ["http://a http://a/1 LE http://other/page 0"]
        );
        let all: Vec<String> = f.drain("http://a").unwrap().iter().map(show).collect();
        assert_eq!(all, ["http://ab/2 L http://a/ 0"]);
    }

    // ---- bad state folders ----

    fn open_err(dir: &Path, id: &CrawlIdentity) -> String {
        match SqliteFrontier::open(dir, id) {
            Ok(_) => panic!("{} opened", dir.display()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn another_profile_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        drop(open(dir.path()));
        let renamed = CrawlIdentity {
            name: "other".into(),
            ..ident()
        };
        let msg = open_err(dir.path(), &renamed);
        assert!(
            msg.contains("\"test\"") && msg.contains("\"other\""),
            "{msg}"
        );
        assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
        let reseeded = CrawlIdentity {
            seeds: vec!["http://a/".into(), "http://c/".into()],
            ..ident()
        };
        let msg = open_err(dir.path(), &reseeded);
        assert!(
            msg.contains("http://b/") && msg.contains("http://c/"),
            "{msg}"
        );
        // Same seeds in another order (or repeated) are the same crawl.
        let reordered = CrawlIdentity {
            seeds: vec!["http://b/".into(), "http://a/".into(), "http://a/".into()],
            ..ident()
        };
        assert!(SqliteFrontier::open(dir.path(), &reordered).is_ok());
    }

    #[test]
    fn garbage_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        fs::write(&file, b"<html>this is not a database</html>\n".repeat(200)).unwrap();
        let msg = open_err(dir.path(), &ident());
        assert!(msg.contains("not an SQLite database"), "{msg}");
        assert!(msg.contains(&file.display().to_string()), "{msg}");
        // Garbage behind a valid SQLite header.
        let mut bytes = b"SQLite format 3\0".to_vec();
        bytes.extend(std::iter::repeat_n(0xA5u8, 8192));
        fs::write(&file, bytes).unwrap();
        let msg = open_err(dir.path(), &ident());
        assert!(
            msg.contains("corrupt or is not an archiver frontier"),
            "{msg}"
        );
    }

    #[test]
    fn corrupted_frontier_is_refused_or_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = open(dir.path());
        for i in 0..2000 {
            f.push("a", cand(&format!("http://a/{i}"), "L")).unwrap();
        }
        f.commit().unwrap();
        drop(f);
        // Overwrite the middle of the file (past the header page) with garbage.
        let file = dir.path().join(FILE_NAME);
        let mut bytes = fs::read(&file).unwrap();
        let mid = bytes.len() / 2;
        let end = (mid + 8192).min(bytes.len());
        bytes[mid..end].fill(0x5A);
        fs::write(&file, bytes).unwrap();
        // Either open notices, or reading the queue does: an error, never a panic.
        let failed = match SqliteFrontier::open(dir.path(), &ident()) {
            Err(e) => e.to_string().contains(FILE_NAME),
            Ok(mut f) => {
                let mut failed = false;
                for _ in 0..2000 {
                    match f.pop("a") {
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(e) => {
                            failed = e.to_string().contains(FILE_NAME);
                            break;
                        }
                    }
                }
                failed
            }
        };
        assert!(failed);
    }

    #[test]
    fn another_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = open(dir.path());
        f.conn
            .execute("UPDATE meta SET value = '1' WHERE key = 'format'", [])
            .unwrap();
        drop(f);
        let msg = open_err(dir.path(), &ident());
        assert!(
            msg.contains("frontier format 1") && msg.contains("format 2"),
            "{msg}"
        );
    }

    #[test]
    fn foreign_sqlite_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        let conn = Connection::open(&file).unwrap();
        conn.execute_batch("CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('x');")
            .unwrap();
        drop(conn);
        let msg = open_err(dir.path(), &ident());
        assert!(msg.contains("not an archiver frontier"), "{msg}");
    }

    #[test]
    fn state_folder_that_is_a_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state");
        fs::write(&file, "x").unwrap();
        let msg = open_err(&file, &ident());
        assert!(msg.contains("not a folder"), "{msg}");
    }

    #[test]
    fn unwritable_state_folder_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ro = dir.path().join("ro");
        fs::create_dir(&ro).unwrap();
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
        // root ignores permission bits; /sys refuses even root.
        let target = if fs::write(ro.join("probe"), "x").is_err() {
            ro.clone()
        } else {
            PathBuf::from("/sys")
        };
        let msg = open_err(&target, &ident());
        assert!(msg.contains("not writable"), "{msg}");
        let msg = open_err(&target.join("state"), &ident());
        assert!(msg.contains("cannot create the state folder"), "{msg}");
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_folder_in_use_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = open(dir.path());
        first.push("a", cand("http://a/1", "")).unwrap();
        first.commit().unwrap();
        let msg = open_err(dir.path(), &ident());
        assert!(msg.contains("another process"), "{msg}");
        drop(first);
        assert_eq!(open(dir.path()).total_queued(), 1);
    }

    #[test]
    fn full_disk_is_an_error_and_the_last_commit_survives() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = open(dir.path());
        f.push("a", cand("http://a/0", "")).unwrap();
        f.commit().unwrap();
        // A database that may not grow behaves as a full disk (SQLITE_FULL).
        let pages: i64 = f
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        f.conn
            .pragma_update(None, "max_page_count", pages + 2)
            .unwrap();
        let mut failure = None;
        for i in 1..100_000 {
            let u = format!("http://a/{i}/{}", "x".repeat(200));
            let r = f
                .mark_seen(&url(&u))
                .and_then(|_| f.push("a", cand(&u, "L")))
                .and_then(|_| if i % 10 == 0 { f.commit() } else { Ok(()) });
            if let Err(e) = r {
                failure = Some((i, e.to_string()));
                break;
            }
        }
        let (i, msg) = failure.expect("the database never filled up");
        assert!(msg.contains("disk full"), "{msg}");
        // Once failed, it refuses to go on rather than commit half a change.
        let later = f.commit().unwrap_err().to_string();
        assert!(later.contains("earlier error"), "{later}");
        assert!(f.push("a", cand("http://a/x", "L")).is_err());
        drop(f);
        let mut f = open(dir.path());
        let committed = 1 + (i - 1) / 10 * 10;
        assert_eq!(f.total_queued(), committed);
        assert_eq!(f.accepted("a"), committed as u64);
        assert_eq!(f.pop("a").unwrap().unwrap().url.path(), "/0");
    }

    // ---- crash: a child process is SIGKILLed ----

    const CRASH_DIR: &str = "ARCHIVER_STORE_CRASH_DIR";
    const CRASH_MODE: &str = "ARCHIVER_STORE_CRASH_MODE";
    const READY_STEPS: u64 = 300;

    /// One step of the crash workload: new URLs, pops, retries and finished URLs on two sites,
    /// ending in a commit. Replayed on a MemoryFrontier to know what `k` steps must leave.
    fn crash_step(f: &mut dyn Frontier, k: u64) {
        let site = if k.is_multiple_of(2) {
            "http://a"
        } else {
            "http://b"
        };
        let u = url(&format!("{site}/{k}"));
        assert!(f.mark_seen(&u).unwrap());
        let path = if k % 4 == 3 { "LE" } else { "L" };
        f.push(site, cand(u.as_str(), path)).unwrap();
        if k.is_multiple_of(3) {
            if let Some(mut c) = f.pop(site).unwrap() {
                if k.is_multiple_of(2) {
                    f.done(&c.url).unwrap();
                } else if c.attempts == 0 {
                    c.attempts = 1;
                    f.push_retry(site, c).unwrap();
                }
            }
        }
    }

    /// Child side of the crash test (runs only when spawned by `sigkill_keeps_every_commit`).
    /// Mode "fixed": READY_STEPS committed steps, then 50 uncommitted ones, then waits.
    /// Mode "running": commits step after step until killed.
    #[test]
    #[ignore = "helper run by sigkill_keeps_every_commit"]
    fn crash_child() {
        let Ok(dir) = std::env::var(CRASH_DIR) else {
            return;
        };
        let running = std::env::var(CRASH_MODE).as_deref() == Ok("running");
        let mut f = open(Path::new(&dir));
        for k in 0.. {
            crash_step(&mut f, k);
            if running || k < READY_STEPS {
                f.commit().unwrap();
            }
            if k + 1 == READY_STEPS {
                println!("CRASH-READY");
            }
            if !running && k + 1 == READY_STEPS + 50 {
                println!("CRASH-HOLD");
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
        }
    }

    /// Spawns the test binary as `crash_child`, waits for `line`, SIGKILLs it.
    fn run_and_kill(dir: &Path, mode: &str, line: &str) {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "frontier::sqlite::tests::crash_child",
                "--ignored",
                "--nocapture",
            ])
            .env(CRASH_DIR, dir)
            .env(CRASH_MODE, mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        let wanted = line.to_string();
        std::thread::spawn(move || {
            // libtest may print "test … ... " before the child's first line, on the same line.
            let found = out
                .lines()
                .map_while(Result::ok)
                .any(|l| l.trim_end().ends_with(&wanted));
            let _ = tx.send(found);
        });
        // A guard against a hung child, not a timing assertion.
        let seen = rx
            .recv_timeout(std::time::Duration::from_secs(300))
            .unwrap_or(false);
        if mode == "running" {
            // Let it commit on for a moment of varying length, so the kill lands anywhere.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            std::thread::sleep(std::time::Duration::from_micros(u64::from(nanos % 50_000)));
        }
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        assert!(seen, "the child did not print {line}");
    }

    /// The reopened frontier must equal a MemoryFrontier that ran the first `steps` steps.
    fn assert_state_after(f: &mut SqliteFrontier, steps: u64) {
        let mut m = MemoryFrontier::default();
        for k in 0..steps {
            crash_step(&mut m, k);
        }
        for site in ["http://a", "http://b"] {
            assert_eq!(f.accepted(site), m.accepted(site), "{site}");
            assert_eq!(f.queued(site), m.queued(site), "{site}");
        }
        assert_eq!(f.total_queued(), m.total_queued());
        assert_eq!(sorted_flight(f), sorted_flight(&mut m));
        for k in 0..steps + 2 {
            let u = url(&format!(
                "http://{}/{k}",
                if k.is_multiple_of(2) { "a" } else { "b" }
            ));
            assert_eq!(f.mark_seen(&u).unwrap(), k >= steps, "seen {u}");
        }
        for site in ["http://a", "http://b"] {
            let got: Vec<String> = f.drain(site).unwrap().iter().map(show).collect();
            let want: Vec<String> = m.drain(site).unwrap().iter().map(show).collect();
            assert_eq!(got, want, "{site}");
        }
    }

    #[test]
    fn sigkill_keeps_every_commit() {
        // Killed while holding 50 uncommitted steps: exactly the committed ones survive.
        let dir = tempfile::tempdir().unwrap();
        run_and_kill(dir.path(), "fixed", "CRASH-HOLD");
        let mut f = open(dir.path());
        assert_eq!(f.accepted("http://a") + f.accepted("http://b"), READY_STEPS);
        assert_state_after(&mut f, READY_STEPS);

        // Killed at an arbitrary moment of a stream of commits: the state of one whole commit.
        let dir = tempfile::tempdir().unwrap();
        run_and_kill(dir.path(), "running", "CRASH-READY");
        let mut f = open(dir.path());
        let steps = f.accepted("http://a") + f.accepted("http://b");
        eprintln!("killed after {steps} committed steps");
        assert!(steps >= READY_STEPS, "{steps}");
        assert_state_after(&mut f, steps);
    }
}
