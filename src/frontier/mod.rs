//! The frontier: what is queued for each site, and every URL already seen.
//!
//! Behind a trait so a durable or shared store can replace the in-memory one without touching
//! the crawl loop. Within a site, the requisites (embeds) queued so far come before the next
//! page, each breadth-first: a page's stylesheets, images and fonts are fetched right after
//! the page, so every archived page is complete before the crawl moves on (Heritrix's
//! `preferenceEmbedHops`). Pages themselves are still taken in the order they were found.

pub mod postgres;
pub mod sqlite;
#[cfg(test)]
pub(crate) mod suite;

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use url::Url;

use crate::extract::Hop;

/// `[frontier]` in a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierSettings {
    /// A PostgreSQL URL shared by every worker of the crawl; None: SQLite in `OUT/state/`.
    /// `ARCHIVER_DATABASE` in the environment, when set, takes its place.
    pub database: Option<String>,
    /// A worker silent this long is dead (`lease_seconds`, default 60).
    pub lease: Duration,
}

impl Default for FrontierSettings {
    fn default() -> Self {
        FrontierSettings {
            database: None,
            lease: Duration::from_secs(60),
        }
    }
}

/// The environment variable that names the shared database (so a password need not sit in a
/// profile). It wins over the profile's `[frontier] database`.
pub const DATABASE_ENV: &str = "ARCHIVER_DATABASE";

impl FrontierSettings {
    /// The database to use: `ARCHIVER_DATABASE` when set and not empty, else the profile's.
    pub fn database_with_env(&self) -> Option<String> {
        match std::env::var(DATABASE_ENV) {
            Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
            _ => self.database.clone(),
        }
    }
}

/// True for `postgresql://…` and `postgres://…` URLs.
pub fn is_postgres_url(s: &str) -> bool {
    let lower = s.trim_start().to_ascii_lowercase();
    lower.starts_with("postgresql://") || lower.starts_with("postgres://")
}

/// What stands in for a password in anything printed.
pub const MASK: &str = "***";

/// `text` with every password it holds replaced by [`MASK`]: the password of a URL's user
/// (`scheme://user:secret@host`) and the value of any `password=` (a URL's query, or libpq's
/// `key=value` form, quoted or not). Used for everything that shows a database address or a
/// profile line that may hold one: errors, run.log, `status`.
pub fn mask_secrets(text: &str) -> String {
    mask_password_params(&mask_userinfo(text))
}

/// Ends an unquoted `password=` value: a space, the next query parameter, a closing quote.
/// Nothing else does, so no tail of a password is ever shown.
fn ends_value(c: char) -> bool {
    c.is_whitespace() || matches!(c, '&' | '"' | '\'')
}

fn mask_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (before, after) = rest.split_at(i + 3);
        out.push_str(before);
        // The authority runs to the first `/`, `?`, `#`, quote or space; a password sits between
        // the user's `:` and the last `@` in it (an `@` in a password ends up inside it).
        let end =
            after.find(|c: char| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '"' | '\''));
        let authority = &after[..end.unwrap_or(after.len())];
        match authority
            .rfind('@')
            .and_then(|at| authority[..at].find(':').map(|colon| (colon, at)))
        {
            Some((colon, at)) => {
                out.push_str(&authority[..=colon]);
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &after[authority.len()..];
    }
    out.push_str(rest);
    out
}

fn mask_password_params(text: &str) -> String {
    const KEY: &str = "password";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = lower[at..].find(KEY) {
        let key_end = at + found + KEY.len();
        // `password = value`, spaces allowed around `=` as libpq allows them.
        let after_key = &text[key_end..];
        let eq = after_key.len() - after_key.trim_start().len();
        if !after_key[eq..].starts_with('=') {
            out.push_str(&text[at..key_end]);
            at = key_end;
            continue;
        }
        let value_at = key_end + eq + 1;
        let value = &text[value_at..];
        let skip = value.len() - value.trim_start().len();
        let value = &value[skip..];
        let len = if let Some(quoted) = value.strip_prefix('\'') {
            // libpq's quoted form: up to the closing quote (a backslash escapes one).
            let mut n = quoted.len();
            let mut escaped = false;
            for (i, c) in quoted.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '\'' if !escaped => {
                        n = i;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            (n + 2).min(value.len())
        } else {
            value.find(ends_value).unwrap_or(value.len())
        };
        out.push_str(&text[at..value_at + skip]);
        if len > 0 {
            out.push_str(MASK);
        }
        at = value_at + skip + len;
    }
    out.push_str(&text[at..]);
    out
}

/// A URL waiting to be fetched.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub url: Url,
    /// Heritrix discovery path: hop letters from the seed ("" for a seed).
    pub path: String,
    pub via: Option<Url>,
    /// Tries so far (0 before the first).
    pub attempts: u32,
}

impl Candidate {
    pub fn seed(url: Url) -> Candidate {
        Candidate {
            url,
            path: String::new(),
            via: None,
            attempts: 0,
        }
    }

    /// The hop type that led here (last letter of the path), Link for seeds.
    pub fn last_hop(&self) -> Option<char> {
        self.path.chars().last()
    }

    /// A page requisite: reached by an embed hop, maybe through redirects (`LE`, `LER`).
    pub fn is_requisite(&self) -> bool {
        self.path.chars().rev().find(|c| *c != 'R') == Some(Hop::Embed.letter())
    }

    /// Number of hops from the seed.
    pub fn hops(&self) -> usize {
        self.path.len()
    }
}

/// The key that decides whether two URLs are the same for the seen-set: the URL without its
/// fragment and session ids, as the url crate normalises it (case of scheme and host, default
/// port, dot segments, percent-encoding of unsafe characters).
pub fn seen_key(url: &Url) -> String {
    // Session ids make endless variants of one page: they do not make a URL new.
    let mut u = crate::scope::session::strip_session_ids(url);
    u.set_fragment(None);
    u.into()
}

/// A frontier store failed (disk full, corrupt database, …). The crawl stops cleanly on it.
#[derive(Debug, thiserror::Error)]
#[error("frontier: {0}")]
pub struct FrontierError(pub String);

/// What the crawl loop needs from a frontier. Writes may be buffered in an open transaction
/// until `commit`; the crawl commits before each WARC record is written (one commit may cover
/// several URLs: `crawl/commits.rs`), so after a crash the store holds the state of the last
/// commit, and a URL archived since is found in the WARCs on resume.
pub trait Frontier: Send {
    /// Records the URL as seen; true when it was not seen before.
    fn mark_seen(&mut self, url: &Url) -> Result<bool, FrontierError>;
    /// Records many URLs as seen (a page's links): for each, true when it was new (a URL
    /// twice in the list is new the first time only). A shared frontier asks once for all.
    fn mark_seen_all(&mut self, urls: &[&Url]) -> Result<Vec<bool>, FrontierError> {
        urls.iter().map(|u| self.mark_seen(u)).collect()
    }
    /// Queues a candidate for a site (`site` is its origin) and counts it as accepted.
    fn push(&mut self, site: &str, candidate: Candidate) -> Result<(), FrontierError>;
    /// Queues a candidate again after a failed try, behind what is queued (not counted again).
    fn push_retry(&mut self, site: &str, candidate: Candidate) -> Result<(), FrontierError>;
    /// The next candidate of a site (queued requisites before the next page). It stays "in flight" until `done`
    /// or `push_retry`, so a crash in between leaves it to be looked at on resume.
    fn pop(&mut self, site: &str) -> Result<Option<Candidate>, FrontierError>;
    /// The in-flight candidate is finished (archived, discarded, failed or precluded).
    fn done(&mut self, url: &Url) -> Result<(), FrontierError>;
    /// Candidates queued for a site.
    fn queued(&self, site: &str) -> usize;
    /// Candidates queued in all.
    fn total_queued(&self) -> usize;
    /// URLs accepted for a site so far (for `max_pages_per_site`), retries not counted.
    fn accepted(&self, site: &str) -> u64;
    /// Every queued candidate of a site, removed (used when a site is given up).
    fn drain(&mut self, site: &str) -> Result<Vec<Candidate>, FrontierError>;
    /// Sites that have queued candidates (used on resume).
    fn sites_with_work(&mut self) -> Result<Vec<String>, FrontierError>;
    /// Candidates popped but never finished: what was in flight when the last run stopped
    /// (for a shared frontier: this worker's, and those of workers that died).
    fn in_flight(&mut self) -> Result<Vec<(String, Candidate)>, FrontierError>;
    /// Makes every change so far durable.
    fn commit(&mut self) -> Result<(), FrontierError>;

    // ---- many workers on one frontier; a frontier of one process keeps the defaults ----

    /// Whether other workers share this frontier (then the calls below matter).
    fn shared(&self) -> bool {
        false
    }
    /// Asks for a politeness budget (a server address, or a host) before a request to it:
    /// granted with the time still to wait (the pause the last holder's answer called for),
    /// or busy while another live worker holds it.
    fn lease(&mut self, _budget: &str) -> Result<Lease, FrontierError> {
        Ok(Lease::Granted(Duration::ZERO))
    }
    /// Gives a leased budget back after an answer, with the pause before its next request and
    /// the budget's backoff (after 429s and 5xx), so the next holder goes on from both. Written
    /// with the next `commit`.
    fn give_back(
        &mut self,
        _budget: &str,
        _pause: Duration,
        _backoff: Duration,
    ) -> Result<(), FrontierError> {
        Ok(())
    }
    /// The backoff the budget's last holder left, as read with this worker's lease of it.
    fn shared_backoff(&mut self, _budget: &str) -> Option<Duration> {
        None
    }
    /// Counts a site's answer towards its refusals in a row across workers (a refusal adds
    /// one, any other answer clears them); the count across workers, or None when the frontier
    /// is not shared (the site's own count is all there is).
    fn count_refusal(&mut self, _site: &str, _refused: bool) -> Result<Option<u32>, FrontierError> {
        Ok(None)
    }
    /// A site's robots.txt as another worker fetched it, while still valid (younger than
    /// `max_age`).
    fn shared_robots(
        &mut self,
        _site: &str,
        _max_age: Duration,
    ) -> Result<Option<SharedRobots>, FrontierError> {
        Ok(None)
    }
    /// Keeps a site's robots.txt answer for the other workers.
    fn save_robots(&mut self, _site: &str, _robots: &SharedRobots) -> Result<(), FrontierError> {
        Ok(())
    }
    /// The payload digests every worker archived, for revisit records across workers (None:
    /// not shared; the crawl's own digest index is all there is).
    fn shared_digests(&self) -> Option<Box<dyn SharedDigests>> {
        None
    }
    /// Looks at the other workers: queues again what dead workers had in flight, and returns
    /// every site with queued work (some queued by others).
    fn poll(&mut self) -> Result<Vec<String>, FrontierError> {
        Ok(Vec::new())
    }
    /// True when nothing is queued or in flight for any worker: the crawl is over.
    fn idle_everywhere(&mut self) -> Result<bool, FrontierError> {
        Ok(self.total_queued() == 0)
    }
    /// What other workers recorded about a site (None: nothing, or not a shared frontier).
    fn site_facts(&mut self, _site: &str) -> Result<Option<SiteFacts>, FrontierError> {
        Ok(None)
    }
    /// Records a site's suspension or `Retry-After` floor for the other workers; later and
    /// larger values win over what is stored.
    fn save_site_facts(&mut self, _site: &str, _facts: &SiteFacts) -> Result<(), FrontierError> {
        Ok(())
    }
    /// Sites some worker has suspended until a time still to come.
    fn suspended_sites(&mut self) -> Result<Vec<(String, SiteFacts)>, FrontierError> {
        Ok(Vec::new())
    }
    /// This worker stops: its leases are given back at once.
    fn leave(&mut self) -> Result<(), FrontierError> {
        self.commit()
    }
    /// Calls made to a database server so far (0 for an embedded frontier).
    fn database_calls(&self) -> u64 {
        0
    }
    /// Round trips to a database server so far (0 for an embedded frontier).
    fn database_round_trips(&self) -> u64 {
        0
    }
}

/// A robots.txt answer kept for the other workers of a shared crawl: the final status and the
/// body (decoded, at most the 500 KiB that are read), and how long ago it was fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedRobots {
    pub status: u16,
    pub body: Vec<u8>,
    pub age: Duration,
}

/// The first capture of a payload, as a revisit record names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstCapture {
    pub uri: String,
    /// A full WARC date.
    pub date: String,
    pub record_id: Option<String>,
}

/// Payload digests shared by the workers of a crawl: a payload one worker archived is a
/// `revisit` on another. Looked up when the worker's own digest index has no match.
pub trait SharedDigests: Send {
    /// The first capture of a payload (by its `WARC-Payload-Digest`) any worker archived.
    fn find(&mut self, digest: &str) -> Result<Option<FirstCapture>, FrontierError>;
    /// Records a capture this worker archived; the first one stored wins. Not waited for: a
    /// digest lost on the way only means a later full copy, never a wrong revisit.
    fn add(&mut self, digest: &str, capture: FirstCapture);
}

/// What workers of a shared crawl tell each other about a site: its suspension (end, in
/// seconds since the Unix epoch, and round) and its `Retry-After` floor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteFacts {
    pub round: u32,
    pub until: Option<u64>,
    pub retry_after: Option<Duration>,
}

/// The answer to [`Frontier::lease`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// Held by this worker; wait this long before the request.
    Granted(Duration),
    /// Another worker holds it.
    Busy,
}

#[derive(Debug, Default)]
struct SiteQueue {
    pages: VecDeque<Candidate>,
    embeds: VecDeque<Candidate>,
}

impl SiteQueue {
    fn len(&self) -> usize {
        self.pages.len() + self.embeds.len()
    }
}

/// A frontier held in memory: nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryFrontier {
    seen: HashSet<String>,
    sites: HashMap<String, SiteQueue>,
    accepted: HashMap<String, u64>,
    flying: HashMap<String, (String, Candidate)>,
    total: usize,
}

fn is_embed(c: &Candidate) -> bool {
    c.is_requisite()
}

impl MemoryFrontier {
    fn enqueue(&mut self, site: &str, candidate: Candidate) {
        self.flying.remove(&seen_key(&candidate.url));
        let q = self.sites.entry(site.to_string()).or_default();
        if is_embed(&candidate) {
            q.embeds.push_back(candidate);
        } else {
            q.pages.push_back(candidate);
        }
        self.total += 1;
    }
}

impl Frontier for MemoryFrontier {
    fn mark_seen(&mut self, url: &Url) -> Result<bool, FrontierError> {
        Ok(self.seen.insert(seen_key(url)))
    }

    fn push(&mut self, site: &str, candidate: Candidate) -> Result<(), FrontierError> {
        *self.accepted.entry(site.to_string()).or_default() += 1;
        self.enqueue(site, candidate);
        Ok(())
    }

    fn push_retry(&mut self, site: &str, candidate: Candidate) -> Result<(), FrontierError> {
        self.enqueue(site, candidate);
        Ok(())
    }

    fn pop(&mut self, site: &str) -> Result<Option<Candidate>, FrontierError> {
        let Some(q) = self.sites.get_mut(site) else {
            return Ok(None);
        };
        let c = q.embeds.pop_front().or_else(|| q.pages.pop_front());
        if q.len() == 0 {
            self.sites.remove(site);
        }
        if let Some(c) = &c {
            self.total -= 1;
            self.flying
                .insert(seen_key(&c.url), (site.to_string(), c.clone()));
        }
        Ok(c)
    }

    fn done(&mut self, url: &Url) -> Result<(), FrontierError> {
        self.flying.remove(&seen_key(url));
        Ok(())
    }

    fn queued(&self, site: &str) -> usize {
        self.sites.get(site).map_or(0, SiteQueue::len)
    }

    fn total_queued(&self) -> usize {
        self.total
    }

    fn accepted(&self, site: &str) -> u64 {
        self.accepted.get(site).copied().unwrap_or(0)
    }

    fn drain(&mut self, site: &str) -> Result<Vec<Candidate>, FrontierError> {
        let Some(q) = self.sites.remove(site) else {
            return Ok(Vec::new());
        };
        self.total -= q.len();
        Ok(q.pages.into_iter().chain(q.embeds).collect())
    }

    fn sites_with_work(&mut self) -> Result<Vec<String>, FrontierError> {
        Ok(self.sites.keys().cloned().collect())
    }

    fn in_flight(&mut self) -> Result<Vec<(String, Candidate)>, FrontierError> {
        Ok(self.flying.values().cloned().collect())
    }

    fn commit(&mut self) -> Result<(), FrontierError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(s: &str, path: &str) -> Candidate {
        Candidate {
            url: Url::parse(s).unwrap(),
            path: path.to_string(),
            via: None,
            attempts: 0,
        }
    }

    #[test]
    fn embeds_before_the_next_page_each_in_order() {
        let mut f = MemoryFrontier::default();
        f.push("s", cand("http://s/1", "L")).unwrap();
        f.push("s", cand("http://s/a.png", "LE")).unwrap();
        f.push("s", cand("http://s/2", "LL")).unwrap();
        assert_eq!(f.total_queued(), 3);
        let order: Vec<String> = std::iter::from_fn(|| f.pop("s").unwrap())
            .map(|c| c.url.path().to_string())
            .collect();
        assert_eq!(order, ["/a.png", "/1", "/2"]);
        assert_eq!(f.total_queued(), 0);
        assert!(f.pop("s").unwrap().is_none());
        assert_eq!(f.in_flight().unwrap().len(), 3);
        assert_eq!(f.accepted("s"), 3);
    }

    #[test]
    fn seen_ignores_fragments_and_normalised_forms() {
        let mut f = MemoryFrontier::default();
        assert!(f
            .mark_seen(&Url::parse("http://S/a/../b#x").unwrap())
            .unwrap());
        assert!(!f.mark_seen(&Url::parse("http://s:80/b").unwrap()).unwrap());
    }

    #[test]
    fn passwords_are_masked_wherever_they_sit() {
        let cases = [
            (
                "postgresql://crawler:s3cret@db.example:5432/crawl",
                "postgresql://crawler:***@db.example:5432/crawl",
            ),
            // An `@` inside the password: the last one ends it.
            (
                "postgres://u:p@ss:w@rd@db/crawl?sslmode=disable",
                "postgres://u:***@db/crawl?sslmode=disable",
            ),
            ("postgresql://u@db/crawl", "postgresql://u@db/crawl"),
            ("postgresql://db:5432/crawl", "postgresql://db:5432/crawl"),
            (
                "postgresql://u@db/c?sslmode=off&password=hunter2&x=1",
                "postgresql://u@db/c?sslmode=off&password=***&x=1",
            ),
            (
                "host=db user=u password=hunter2 dbname=c",
                "host=db user=u password=*** dbname=c",
            ),
            (
                "host=db PASSWORD = 'two words\\' here' dbname=c",
                "host=db PASSWORD = *** dbname=c",
            ),
            (
                r#"database = "mysql://root:toor@10.0.0.1/x" # a comment"#,
                r#"database = "mysql://root:***@10.0.0.1/x" # a comment"#,
            ),
            ("a password is needed", "a password is needed"),
            ("password=", "password="),
            ("no URL at all", "no URL at all"),
            ("http://", "http://"),
        ];
        for (given, shown) in cases {
            assert_eq!(mask_secrets(given), shown, "{given}");
        }
    }

    #[test]
    fn drain_empties_a_site() {
        let mut f = MemoryFrontier::default();
        f.push("s", cand("http://s/1", "L")).unwrap();
        f.push("t", cand("http://t/1", "L")).unwrap();
        assert_eq!(f.drain("s").unwrap().len(), 1);
        assert_eq!(f.total_queued(), 1);
        assert_eq!(f.queued("s"), 0);
    }
}
