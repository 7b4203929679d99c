//! The orchestrator: which site goes next, and the road of one URL through the crawler.
//!
//! One dispatcher owns the decision of what runs next. It asks the scheduler for a politeness
//! budget (a server address, or a host) whose pause is over, takes the next job of one of that
//! budget's sites (robots.txt first, then a page's requisites right after it, pages breadth-first) and
//! spawns it as a task; at most `sites_at_once` run at once. When a job ends it gives the budget
//! back with the pause the politeness rules ask for. No task, thread or timer exists per site,
//! so ten thousand sites cost only their queues.

use std::collections::{HashMap, VecDeque};
use std::io::Read as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use tokio::sync::{Notify, Semaphore};
use url::Url;

use crate::config::Profile;
use crate::extract::{self, Directives, Hop, Outlink};
use crate::frontier::{Candidate, Frontier, FrontierError};
use crate::logs::crawllog::{status, CrawlLog, Entry};
use crate::logs::report::{Progress, Stats};
use crate::logs::runlog::{RefusalLog, RunBook, RunLog, SiteBook};
use crate::net::dns::Resolver;
use crate::net::fetch::{BodyPlan, FetchError, FetchSettings, Fetched, Fetcher};
use crate::politeness::robots::{self, Policy, Verdict};
use crate::politeness::BudgetKind;
use crate::politeness::{self, Answer, Next, Refusals, Scheduler};
use crate::scope::{origin_of, Scope};
use crate::warc::{Exchange, Revisit, WarcSettings, WarcWriter};

mod candidates;
mod shared;

/// A little is added to every pause, so that a server timing our requests with its own clock
/// (which saw its answer end a little after we did) never measures less than the promised
/// delay: 2% of the pause, at most 5 ms, nothing when the pause is zero (loopback benchmarks).
fn clock_margin(pause: Duration) -> Duration {
    (pause / 50).min(Duration::from_millis(5))
}

/// Decoded HTML larger than this is cut before link extraction (decompression bombs).
const MAX_DECODED_HTML: usize = 50 << 20;

/// Decoded stylesheet bytes read for links (a stylesheet is parsed whole, so it is capped
/// lower than HTML, which streams).
const MAX_DECODED_CSS: usize = 8 << 20;

/// Decoded bytes of a page held in memory for its text fingerprint and challenge markers.
const FINGERPRINT_BYTES: usize = 1 << 20;

/// Outlinks seen-checked and queued per turn of the state lock, so that other sites' jobs
/// get the lock between two turns.
const LINK_BATCH: usize = 256;

/// What a site knows about its robots.txt.
#[derive(Debug)]
enum RobotsState {
    /// Not fetched yet (or expired): the next job of the site fetches it.
    Unknown,
    /// Fetched and in force.
    Known(Policy),
    /// Could not be had `attempts` times; the site waits and asks again.
    Unavailable { attempts: u32 },
    /// Given up: every URL of the site is logged as a failed prerequisite.
    GivenUp,
    /// robots.txt redirected to another site's server: the site waits (fetching nothing)
    /// until that server, on its own budget, has answered. `attempts` as in `Unavailable`.
    Chasing { attempts: u32 },
}

impl RobotsState {
    /// Tries of robots.txt that failed so far.
    fn failed_attempts(&self) -> u32 {
        match self {
            RobotsState::Unavailable { attempts } | RobotsState::Chasing { attempts } => *attempts,
            _ => 0,
        }
    }
}

/// A robots.txt redirect to another origin, waiting for that origin's budget: the request
/// goes to another server, so it waits for that server's pause like any request to it (a
/// hundred sites redirecting their robots.txt to one host are a hundred requests to that
/// host), and what it answers settles the robots.txt of `owner`.
#[derive(Debug, Clone)]
struct RobotsChase {
    /// The site whose robots.txt this is.
    owner: String,
    /// The redirect target, as a prerequisite URL (`P…R`).
    candidate: Candidate,
    /// Redirects followed before this request.
    hop: usize,
}

/// Where a site stands with name resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dns {
    /// A lookup is under way; the site is in no budget yet.
    Pending,
    /// Resolved at this instant to this address.
    Known(IpAddr, Instant),
    /// Could not be resolved after every try: its URLs are logged and dropped.
    Failed,
    /// Resolved to an address the guard refuses: its URLs are logged `scope:address`.
    Refused(crate::net::guard::Refused),
}

/// One origin being crawled.
#[derive(Debug)]
struct Site {
    host: String,
    dns: Dns,
    dns_failures: u32,
    /// The budget the site's requests count against, once resolved.
    budget: Option<String>,
    robots: RobotsState,
    refusals: Refusals,
    /// Body bytes archived from this site in this run (for `max_bytes_per_site`).
    archived_bytes: u64,
    /// The largest `Retry-After` the site ever sent: its pause from then on, across resumes.
    retry_after_floor: Duration,
    /// Other sites' robots.txt redirected here, fetched before the site's own work.
    chases: VecDeque<RobotsChase>,
}

impl Site {
    fn ip(&self) -> Option<IpAddr> {
        match self.dns {
            Dns::Known(ip, _) => Some(ip),
            _ => None,
        }
    }

    fn loopback(&self) -> bool {
        self.ip().is_some_and(|ip| ip.is_loopback())
    }

    fn crawl_delay(&self) -> Option<Duration> {
        match &self.robots {
            RobotsState::Known(p) => p.crawl_delay,
            _ => None,
        }
    }
}

/// What a task does.
enum Job {
    Robots {
        origin: String,
    },
    Fetch {
        origin: String,
        candidate: Box<Candidate>,
    },
    /// Another site's robots.txt, redirected to this site's server.
    Chase {
        origin: String,
        chase: Box<RobotsChase>,
    },
}

/// How a job went, for the pause that follows it.
struct Pace {
    /// When the last response ended (or the job, if nothing was fetched).
    end: Instant,
    /// The normal delay for this site after this fetch.
    base: Duration,
    answer: Answer,
    retry_after: Option<Duration>,
}

impl Pace {
    /// A job that sent no request: the budget may be used again at once.
    fn idle() -> Pace {
        Pace {
            end: Instant::now(),
            base: Duration::ZERO,
            answer: Answer::Fine,
            retry_after: None,
        }
    }
}

/// Everything behind the scheduler lock.
struct State {
    sched: Scheduler<String>,
    /// Per budget, the origins that have work, served round-robin.
    budgets: HashMap<String, VecDeque<String>>,
    /// Per budget, its current backoff pause (see `politeness::pause_after`).
    backoff: HashMap<String, Duration>,
    sites: HashMap<String, Site>,
    frontier: Box<dyn Frontier>,
    /// Name lookups under way: the crawl is not over while any is.
    resolving: usize,
    /// Sites with a time away set (suspended now, or due back): the only ones
    /// `wake_suspended` looks at, so a dispatch costs nothing per site.
    away: std::collections::HashSet<String>,
    /// When a shared frontier was last looked at for other workers' work (`shared.rs`).
    last_poll: Option<Instant>,
}

/// A running crawl.
pub struct Crawler {
    profile: Profile,
    fetcher: Fetcher,
    resolver: Resolver,
    scope: Scope,
    rules: crate::scope::rules::ScopeRules,
    /// The URL trap rules of the profile's `[traps]` table (None: all off).
    url_traps: Option<crate::scope::traps::UrlTrapRules>,
    /// Identical pages under ever-new URLs, per site (None: the rule is off).
    content_traps: Option<Mutex<crate::scope::traps::ContentTraps>>,
    state: Mutex<State>,
    /// Wakes the dispatcher: new work, a finished job, a resolved name, a stop.
    wake: Notify,
    warc: Mutex<WarcWriter>,
    /// URLs found archived in WARCs recovered at start (used once, by `resume`).
    recovered_uris: Mutex<std::collections::HashSet<String>>,
    /// Payload digests already archived, for revisit records.
    digests: Mutex<crate::dedup::DigestIndex>,
    log: Mutex<CrawlLog>,
    refusals_log: Mutex<RefusalLog>,
    runlog: RunLog,
    book: Mutex<SiteBook>,
    /// Every run of this crawl (`state/runs.json`), this one last once it has started.
    runs: Mutex<RunBook>,
    stats: Mutex<Stats>,
    progress: Progress,
    /// Asks the resolver task for name lookups.
    resolve_tx: tokio::sync::mpsc::UnboundedSender<ResolveRequest>,
    /// Jobs running now.
    running: std::sync::atomic::AtomicUsize,
    /// Set by Ctrl-C or a fatal error: no new job starts; jobs in flight finish.
    stopping: AtomicBool,
    /// Set by Ctrl-C or SIGTERM (not by errors): the run ends with exit code 130.
    interrupted: AtomicBool,
    /// Why the crawl had to stop, if it did not end normally.
    fatal: Mutex<Option<String>>,
}

/// How a run ended, for the command line.
pub enum Ended {
    /// The run crawled (to the end, or until stopped); the whole crawl's statistics.
    Ran(Stats),
    /// Nothing was left to do: an earlier run finished the crawl. No report was touched.
    AlreadyComplete(Stats),
}

/// Runs the crawl a profile describes, to the end. Returns the whole crawl's statistics.
pub async fn run(profile: Profile) -> anyhow::Result<Ended> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let crawler = Arc::new(Crawler::open(profile, tx)?);
    let resolver = spawn_resolver(crawler.clone(), rx);
    let archived = std::mem::take(&mut *lock(&crawler.recovered_uris));
    let flying = match crawler.resume(&archived) {
        Ok(n) => n,
        Err(e) => {
            crawler.fail(e);
            0
        }
    };
    let new_seeds = crawler.queue_seeds();
    if crawler.already_complete(flying, new_seeds) {
        resolver.abort();
        return crawler.leave_complete().map(Ended::AlreadyComplete);
    }
    if let Err(e) = lock(&crawler.runs).start() {
        crawler
            .runlog
            .line(&format!("cannot record the run: {e:#}"));
    }
    watch_ctrl_c(crawler.clone());
    let reports = spawn_reports(crawler.clone());
    crawler.clone().dispatch().await;
    resolver.abort();
    reports.abort();
    crawler.finish().map(Ended::Ran)
}

impl Crawler {
    /// Opens the output folder, the WARC writer and the logs.
    fn open(
        profile: Profile,
        resolve_tx: tokio::sync::mpsc::UnboundedSender<ResolveRequest>,
    ) -> anyhow::Result<Crawler> {
        let out = profile.output_dir.clone();
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create the output folder {}", out.display()))?;
        // The state first: another crawl's state folder must stop us before anything is written.
        let frontier = open_frontier(&profile)?;
        let settings = warc_settings(&profile);
        let recovered = crate::warc::recover_open_files(&settings)
            .with_context(|| format!("cannot close the unfinished WARCs in {}", out.display()))?;
        let warc = WarcWriter::new(settings)
            .with_context(|| format!("cannot write WARCs under {}", out.display()))?;
        let log_path = out.join("crawl.log");
        // The whole crawl's counts so far: every earlier run's lines are in crawl.log.
        let seeds: Vec<&str> = profile.seeds.iter().map(Url::as_str).collect();
        let mut stats = Stats::from_log(&log_path, &seeds)
            .with_context(|| format!("cannot read {}", log_path.display()))?;
        stats.run_started = Some(SystemTime::now());
        let log = CrawlLog::open(&log_path)
            .with_context(|| format!("cannot open {}", log_path.display()))?;
        let refusals_log = RefusalLog::open(&out.join("refusals.log"))?;
        let digests = load_digests(&profile)?;
        let runlog = RunLog::open(&out.join("run.log"))?;
        let book = SiteBook::load(&out.join("state").join("sites.json"))?;
        let runs = RunBook::load(&out.join("state").join("runs.json"), &runlog);
        if stats.unreadable_lines > 0 {
            runlog.line(&format!(
                "{} lines of {} could not be read back (torn by a crash?); the reports leave \
                 them out",
                stats.unreadable_lines,
                log_path.display()
            ));
        }
        let fetcher = Fetcher::new(FetchSettings {
            user_agent: profile.user_agent.clone(),
            timeout: profile.timeout,
            max_body_bytes: profile.max_body_bytes,
            extra_roots: profile.extra_roots.clone(),
        });
        runlog.line(&format!(
            "start crawl {:?} with profile {} as {:?}",
            profile.name,
            profile.path.display(),
            profile.user_agent
        ));
        if !profile.obey_robots {
            runlog.line(&format!(
                "robots.txt is NOT obeyed in this run (unrestricted); reason: {}",
                profile.unrestricted_reason
            ));
        }
        let mut archived = std::collections::HashSet::new();
        for r in &recovered {
            runlog.line(&format!(
                "recovered {}: {} whole records kept, {} bytes of a torn record cut{}",
                r.path.display(),
                r.records_kept,
                r.bytes_cut,
                if r.removed {
                    " (nothing left: removed)"
                } else {
                    ""
                }
            ));
            archived.extend(r.captured_uris().map(str::to_string));
        }
        Ok(Crawler {
            recovered_uris: Mutex::new(archived),
            scope: Scope::new(profile.scope.clone(), &profile.seeds),
            rules: crate::scope::rules::ScopeRules::new(&profile.rules, &profile.scope.include),
            url_traps: crate::scope::traps::UrlTrapRules::from_settings(
                &profile.traps,
                chrono::Datelike::year(&chrono::Utc::now()),
            ),
            content_traps: content_traps(&profile.traps),
            resolver: Resolver::new(profile.resolve.clone(), profile.politeness.dns_cache),
            fetcher,
            state: Mutex::new(State {
                sched: Scheduler::default(),
                budgets: HashMap::new(),
                backoff: HashMap::new(),
                sites: HashMap::new(),
                frontier,
                resolving: 0,
                away: std::collections::HashSet::new(),
                last_poll: None,
            }),
            wake: Notify::new(),
            warc: Mutex::new(warc),
            digests: Mutex::new(digests),
            log: Mutex::new(log),
            refusals_log: Mutex::new(refusals_log),
            runlog,
            book: Mutex::new(book),
            runs: Mutex::new(runs),
            stats: Mutex::new(stats),
            progress: Progress::new(),
            resolve_tx,
            running: std::sync::atomic::AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            interrupted: AtomicBool::new(false),
            fatal: Mutex::new(None),
            profile,
        })
    }

    /// Closes the files and says how the crawl ended.
    fn finish(&self) -> anyhow::Result<Stats> {
        self.progress.finish();
        self.leave_shared();
        lock(&self.warc)
            .close()
            .context("cannot close the last WARC file")?;
        let mut stats = lock(&self.stats).clone();
        {
            let st = lock(&self.state);
            stats.left_queued = st.frontier.total_queued() as u64;
            let now = SystemTime::now();
            for (origin, site) in &st.sites {
                if site.refusals.suspended(now) && st.frontier.queued(origin) > 0 {
                    stats
                        .suspended
                        .push((origin.clone(), site.refusals.until.unwrap_or(0)));
                }
            }
        }
        stats.suspended.sort();
        stats.interrupted = self.interrupted.load(Ordering::SeqCst);
        let outcome = match lock(&self.fatal).as_deref() {
            Some(why) => format!("stopped: {why}"),
            None if stats.interrupted => "interrupted".to_string(),
            None if stats.no_seed_answered() => "no seed fetched".to_string(),
            None => "finished".to_string(),
        };
        {
            let mut runs = lock(&self.runs);
            runs.update(stats.this_run().0, Some(&outcome));
            if let Err(e) = runs.save() {
                self.runlog.line(&format!("cannot record the run: {e:#}"));
            }
        }
        self.write_report(&stats, true);
        stats.runs = lock(&self.runs).runs.clone();
        if let Err(e) = lock(&self.book).save() {
            self.runlog
                .line(&format!("cannot save the site book: {e:#}"));
        }
        self.runlog.line(&format!(
            "end ({outcome}): {} URLs in this run; whole crawl: {} fetched, {} archived, {} \
             suspended sites, {} URLs left queued",
            stats.this_run().0,
            stats.fetched(),
            stats.archived,
            stats.suspended.len(),
            stats.left_queued
        ));
        if let Some(why) = lock(&self.fatal).take() {
            anyhow::bail!("the crawl stopped: {why}");
        }
        // Only a crawl that ended: an interrupted one is resumed, and would pack again.
        if self.profile.wacz && !stats.interrupted {
            self.write_wacz()?;
        }
        Ok(stats)
    }

    /// True when an earlier run left nothing to do: nothing queued or in flight, and no seed
    /// new to the frontier (a seed added to the profile makes the crawl go on).
    fn already_complete(&self, in_flight: usize, new_seeds: usize) -> bool {
        let ran_before = lock(&self.stats).run_base > 0;
        let queued = {
            let mut st = lock(&self.state);
            // A shared crawl is complete only when no worker has anything queued or in flight.
            match st.frontier.shared() {
                true => usize::from(!st.frontier.idle_everywhere().unwrap_or(false)),
                false => st.frontier.total_queued(),
            }
        };
        ran_before && queued == 0 && in_flight == 0 && new_seeds == 0 && !self.stopped()
    }

    /// Ends a run that had nothing to do, touching no report: only run.log says it happened.
    fn leave_complete(&self) -> anyhow::Result<Stats> {
        self.leave_shared();
        lock(&self.warc)
            .close()
            .context("cannot close the WARC writer")?;
        let mut stats = lock(&self.stats).clone();
        stats.runs = lock(&self.runs).runs.clone();
        self.runlog.line(
            "nothing to do: the crawl is already complete (reports left as they are); set \
             another [output] dir to crawl again",
        );
        Ok(stats)
    }

    fn stopped(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// `[output] wacz = true`: the crawl packed as `OUT/NAME.wacz`, opening at the first seed.
    fn write_wacz(&self) -> anyhow::Result<()> {
        let p = &self.profile;
        let name: String = p
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let output = p.output_dir.join(format!("{name}.wacz"));
        let opts = crate::wacz::WaczOptions {
            crawl_dir: p.output_dir.clone(),
            output: output.clone(),
            title: Some(p.name.clone()),
            main_page: p.seeds.first().map(|s| s.to_string()),
        };
        match crate::wacz::write(&opts) {
            Ok(r) => {
                self.runlog.line(&format!(
                    "wacz: {} ({} WARC files, {} pages, {} bytes)",
                    output.display(),
                    r.warcs,
                    r.pages,
                    r.bytes
                ));
                Ok(())
            }
            Err(e) => {
                self.runlog
                    .line(&format!("wacz: cannot write {}: {e}", output.display()));
                anyhow::bail!("the crawl ended, but its WACZ could not be written: {e}")
            }
        }
    }
}

/// Writes `report.json` every minute and whenever the process gets SIGUSR1 (on demand:
/// `kill -USR1 PID`), so a long crawl can be inspected while it runs.
fn spawn_reports(crawler: Arc<Crawler>) -> tokio::task::JoinHandle<()> {
    // Installed before the crawl starts: SIGUSR1's default action would end the process.
    let mut usr1 =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()).ok();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        tick.tick().await;
        loop {
            match usr1.as_mut() {
                Some(sig) => {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = sig.recv() => {}
                    }
                }
                None => {
                    tick.tick().await;
                }
            }
            let stats = lock(&crawler.stats).clone();
            {
                let mut runs = lock(&crawler.runs);
                runs.update(stats.this_run().0, None);
                if let Err(e) = runs.save() {
                    crawler
                        .runlog
                        .line(&format!("cannot record the run: {e:#}"));
                }
            }
            crawler.write_report(&stats, false);
        }
    })
}

/// First Ctrl-C (or SIGTERM): finish the exchanges in flight, close the WARC files, stop.
/// Second: stop at once; every record already written is a complete gzip member and stays
/// readable, and the next run closes the `.open` file properly.
fn watch_ctrl_c(crawler: Arc<Crawler>) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        if !stop_signal(&mut term).await {
            return;
        }
        eprintln!(
            "\narchiver: stopping after the requests in flight (Ctrl-C again to stop at once)"
        );
        crawler.interrupted.store(true, Ordering::SeqCst);
        crawler.stop();
        if stop_signal(&mut term).await {
            eprintln!("archiver: stopped at once; the WARC being written keeps its .open name");
            std::process::exit(130);
        }
    });
}

/// Waits for Ctrl-C or SIGTERM; false when no signal can be listened for.
async fn stop_signal(term: &mut Option<tokio::signal::unix::Signal>) -> bool {
    match term.as_mut() {
        Some(t) => {
            tokio::select! {
                r = tokio::signal::ctrl_c() => r.is_ok(),
                r = t.recv() => r.is_some(),
            }
        }
        None => tokio::signal::ctrl_c().await.is_ok(),
    }
}

/// The crawl's frontier: an SQLite database in `OUT/state/`, so a crawl survives a crash and a
/// later run of the same profile picks it up; or, with `[frontier] database` (or
/// `ARCHIVER_DATABASE`), a PostgreSQL database that every worker of the crawl shares. Either
/// refuses another profile's crawl.
fn open_frontier(p: &Profile) -> anyhow::Result<Box<dyn Frontier>> {
    let identity = crate::frontier::sqlite::CrawlIdentity {
        name: p.name.clone(),
        seeds: p.seeds.iter().map(|u| u.to_string()).collect(),
    };
    if let Some(url) = p.frontier.database_with_env() {
        let settings = crate::frontier::postgres::PostgresSettings {
            url,
            worker: worker_name(),
            lease: p.frontier.lease,
        };
        let store = crate::frontier::postgres::PostgresFrontier::open(&settings, &identity)
            .context("cannot use the shared frontier")?;
        return Ok(Box::new(store));
    }
    let state = p.output_dir.join("state");
    let store = crate::frontier::sqlite::SqliteFrontier::open(&state, &identity)
        .with_context(|| format!("cannot use the crawl state in {}", state.display()))?;
    Ok(Box::new(store))
}

/// This worker's name in a shared frontier: `host~pid`, as in its WARC file names.
fn worker_name() -> String {
    let host = gethostname::gethostname()
        .to_string_lossy()
        .trim()
        .to_string();
    format!("{host}~{}", std::process::id())
}

/// The payload digests already archived: earlier crawls' CDXJ named by the profile, and this
/// crawl's own indexes (so a resumed crawl keeps writing revisits for what it already has).
fn load_digests(p: &Profile) -> anyhow::Result<crate::dedup::DigestIndex> {
    let mut index = crate::dedup::DigestIndex::new();
    let own = p.output_dir.join("indexes");
    let mut paths = p.dedup_previous.clone();
    if own.is_dir() {
        paths.push(own);
    }
    if !paths.is_empty() {
        index
            .load_cdxj(&paths)
            .context("cannot read the CDXJ named in [dedup] previous")?;
    }
    Ok(index)
}

/// The repeated-content detector a `[traps]` table asks for: `repeated_content` identical
/// pages under one path prefix before further ones are traps; None when the rule is off.
fn content_traps(
    t: &crate::scope::traps::TrapSettings,
) -> Option<Mutex<crate::scope::traps::ContentTraps>> {
    (t.enabled && t.repeated_content > 0).then(|| {
        Mutex::new(crate::scope::traps::ContentTraps::new(
            t.repeated_content,
            0,
            1024,
            1024,
        ))
    })
}

fn warc_settings(p: &Profile) -> WarcSettings {
    let robots = if p.obey_robots {
        "obey".to_string()
    } else {
        format!("ignore (unrestricted run: {})", p.unrestricted_reason)
    };
    let mut info = vec![
        ("isPartOf".to_string(), p.name.clone()),
        ("http-header-user-agent".to_string(), p.user_agent.clone()),
        ("robots".to_string(), robots),
        ("profile".to_string(), p.path.display().to_string()),
        (
            "profile-digest".to_string(),
            crate::spool::sha1_of(p.source.as_bytes()),
        ),
    ];
    if !p.operator.is_empty() {
        info.insert(0, ("operator".to_string(), p.operator.clone()));
    }
    WarcSettings {
        warc_dir: p.output_dir.join("warcs"),
        index_dir: p.output_dir.join("indexes"),
        prefix: p.prefix.clone(),
        max_bytes: p.warc_max_bytes,
        version: p.warc_version,
        info,
    }
}

impl Crawler {
    /// Writes `report.json` (atomically: a temp file, then a rename).
    fn write_report(&self, stats: &Stats, finished: bool) {
        let remaining = {
            let mut st = lock(&self.state);
            let mut per_host = std::collections::BTreeMap::new();
            for origin in st.frontier.sites_with_work().unwrap_or_default() {
                let n = st.frontier.queued(&origin) as u64;
                *per_host
                    .entry(crate::logs::report::host_key(&origin))
                    .or_insert(0) += n;
            }
            per_host
        };
        let mut stats = stats.clone();
        stats.runs = lock(&self.runs).runs.clone();
        let json = stats.report_json(&self.profile.name, finished, &remaining);
        let path = self.profile.output_dir.join("report.json");
        let tmp = path.with_extension("json.tmp");
        let written = serde_json::to_vec_pretty(&json)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|_| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            self.runlog
                .line(&format!("cannot write {}: {e}", path.display()));
        }
    }
}

/// Locks a mutex, carrying on after a task panicked while holding it: the data under these
/// locks stays consistent between statements, and losing the crawl would lose more.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Does a site have anything to fetch: queued URLs, or other sites' robots.txt redirected to it?
fn has_work(st: &State, origin: &str) -> bool {
    st.frontier.queued(origin) > 0 || st.sites.get(origin).is_some_and(|s| !s.chases.is_empty())
}

/// Is this response HTML worth extracting links from?
fn is_html(headers: &hyper::HeaderMap) -> bool {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            let v = v.to_ascii_lowercase();
            v.contains("text/html") || v.contains("application/xhtml")
        })
        .unwrap_or(false)
}

/// Is this response a stylesheet, whose `url()`s and `@import`s are requisites?
fn is_css(headers: &hyper::HeaderMap) -> bool {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("text/css"))
}

// ---------------------------------------------------------------------------------------------
// Queueing and scheduling
// ---------------------------------------------------------------------------------------------

impl Crawler {
    /// Queues the seeds not seen before; returns how many.
    fn queue_seeds(&self) -> usize {
        let mut queued = 0;
        for seed in self.profile.seeds.clone() {
            let mut st = lock(&self.state);
            let seed = Candidate::seed(seed);
            if self.opted_out(&seed) {
                continue;
            }
            match st.frontier.mark_seen(&seed.url) {
                Ok(true) => {
                    queued += 1;
                    self.enqueue(&mut st, seed)
                }
                Ok(false) => {}
                Err(e) => self.fail(e),
            }
        }
        queued
    }

    /// Puts an accepted candidate on its site's queue; a new site first resolves its name.
    fn enqueue(&self, st: &mut State, candidate: Candidate) {
        let origin = origin_of(&candidate.url);
        if st.frontier.accepted(&origin) >= self.profile.scope.max_pages_per_site {
            self.log_unfetched(&candidate, status::BLOCKED_BY_QUOTA, "max-pages-per-site");
            return;
        }
        self.ensure_site(st, &origin);
        match st.sites.get(&origin).map(|s| s.dns) {
            Some(Dns::Refused(refused)) => {
                let why = crate::net::guard::Refused::ANNOTATION;
                self.log_dropped(&candidate, status::OUT_OF_SCOPE, why, Some(refused.extra()));
                return;
            }
            Some(Dns::Failed) => {
                // Found after the site was given up: said so, not left queued forever.
                self.log_unfetched(&candidate, status::DNS_FAILED, "dns-failed");
                return;
            }
            _ => {}
        }
        if let Err(e) = st.frontier.push(&origin, candidate) {
            return self.fail(e);
        }
        self.mark_work(st, &origin);
    }

    /// Creates the record of a site met for the first time and starts resolving its name.
    fn ensure_site(&self, st: &mut State, origin: &str) {
        if st.sites.contains_key(origin) {
            return;
        }
        let host = Url::parse(origin)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        let (refusals, floor) = {
            let book = lock(&self.book);
            (book.refusals(origin), book.retry_after(origin))
        };
        if refusals.until.is_some() {
            st.away.insert(origin.to_string());
        }
        st.sites.insert(
            origin.to_string(),
            Site {
                host,
                dns: Dns::Pending,
                dns_failures: 0,
                budget: None,
                robots: RobotsState::Unknown,
                refusals,
                archived_bytes: 0,
                retry_after_floor: floor.unwrap_or_default(),
                chases: VecDeque::new(),
            },
        );
        self.start_resolve(st, origin, Duration::ZERO);
    }

    /// Picks up what an earlier run left: URLs that were in flight go back to their queue,
    /// unless a recovered WARC shows they were archived; every site with work is scheduled.
    /// Returns how many URLs were in flight.
    fn resume(&self, archived: &std::collections::HashSet<String>) -> Result<usize, FrontierError> {
        let mut st = lock(&self.state);
        let flying = st.frontier.in_flight()?;
        let mut done = 0;
        let in_flight = flying.len();
        for (site, candidate) in flying {
            if archived.contains(candidate.url.as_str()) {
                st.frontier.done(&candidate.url)?;
                done += 1;
            } else {
                st.frontier.push_retry(&site, candidate)?;
            }
        }
        st.frontier.commit()?;
        let sites = st.frontier.sites_with_work()?;
        for origin in &sites {
            self.ensure_site(&mut st, origin);
            self.mark_work(&mut st, origin);
        }
        if !sites.is_empty() || in_flight > 0 {
            self.runlog.line(&format!(
                "resuming: {} URLs queued on {} sites; of {in_flight} in flight when the last run \
                 stopped, {done} were already archived",
                st.frontier.total_queued(),
                sites.len()
            ));
        }
        Ok(in_flight)
    }

    /// Tells the scheduler that a site has work, if it can be scheduled now.
    fn mark_work(&self, st: &mut State, origin: &str) {
        let Some(site) = st.sites.get(origin) else {
            return;
        };
        if site.refusals.suspended(SystemTime::now()) {
            return; // comes back when its time away is over (see `wake_suspended`)
        }
        let Some(budget) = site.budget.clone() else {
            return; // scheduled once its name is resolved
        };
        let list = st.budgets.entry(budget.clone()).or_default();
        if !list.iter().any(|o| o == origin) {
            list.push_back(origin.to_string());
        }
        st.sched.has_work(&budget, Instant::now());
        self.wake.notify_one();
    }

    /// The dispatcher: starts jobs as budgets become free, until nothing is left to do.
    async fn dispatch(self: Arc<Self>) {
        let slots = Arc::new(Semaphore::new(self.profile.sites_at_once));
        let threads = Arc::new(Mutex::new(
            (1..=self.profile.sites_at_once).rev().collect::<Vec<_>>(),
        ));
        loop {
            let Ok(permit) = slots.clone().acquire_owned().await else {
                break;
            };
            let Some((budget, job)) = self.next_job().await else {
                break;
            };
            let thread = lock(&threads).pop().unwrap_or(0);
            let crawler = self.clone();
            let threads = threads.clone();
            self.running.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let pace = crawler.clone().run_job_caught(job, thread).await;
                crawler.running.fetch_sub(1, Ordering::SeqCst);
                crawler.release(&budget, pace);
                lock(&threads).push(thread);
                drop(permit);
            });
        }
        // Let the jobs in flight finish: each holds a permit until it ends.
        let all = u32::try_from(self.profile.sites_at_once).unwrap_or(u32::MAX);
        let _ = slots.acquire_many(all).await;
    }

    /// Waits until a budget may go and returns its next job; None when the crawl is over.
    async fn next_job(&self) -> Option<(String, Job)> {
        loop {
            // Created before looking: a notify_one in between is kept as a permit, not lost.
            let woken = self.wake.notified();
            if self.stopping.load(Ordering::SeqCst) {
                return None;
            }
            let wait = {
                let mut st = lock(&self.state);
                let now = Instant::now();
                self.poll_shared(&mut st, now);
                let back = self.wake_suspended(&mut st);
                let at = match st.sched.next(now) {
                    Next::Go(budget) => {
                        // A shared frontier's budget may be another worker's, or still pausing.
                        if let Some(at) = self.lease_wait(&mut st, &budget, now) {
                            st.sched.release(&budget, at, true);
                            continue;
                        }
                        match self.take_job(&mut st, &budget) {
                            Some(job) => return Some((budget, job)),
                            None => {
                                self.give_back(&mut st, &budget, Duration::ZERO);
                                st.sched.release(&budget, now, false);
                                continue;
                            }
                        }
                    }
                    Next::Wait(at) => Some(back.map_or(at, |b| b.min(at))),
                    Next::Idle => back,
                    Next::Done if st.resolving > 0 => back,
                    // Only suspended sites (or none) remain: the crawl does not wait for them;
                    // a shared crawl waits for the other workers' URLs.
                    Next::Done => match self.shared_not_over(&mut st, now) {
                        Some(at) => Some(at),
                        None => return None,
                    },
                };
                self.cap_wait(&st, at, now)
            };
            match wait {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {}
                        _ = woken => {}
                    }
                }
                None => woken.await,
            }
        }
    }

    /// Brings back sites whose time away is over; returns when the next one comes back, if
    /// any suspended site has work (checked only while other work keeps the crawl going).
    fn wake_suspended(&self, st: &mut State) -> Option<Instant> {
        let now = SystemTime::now();
        let mut next: Option<u64> = None;
        let mut back = Vec::new();
        let mut settled = Vec::new();
        for origin in &st.away {
            let Some(site) = st.sites.get(origin) else {
                continue;
            };
            let Some(until) = site.refusals.until else {
                settled.push(origin.clone());
                continue;
            };
            if !has_work(st, origin) {
                continue;
            }
            if site.refusals.suspended(now) {
                next = Some(next.map_or(until, |n| n.min(until)));
            } else if site.budget.is_some() {
                back.push(origin.clone());
            }
        }
        for origin in settled {
            st.away.remove(&origin);
        }
        for origin in back {
            st.away.remove(&origin);
            if let Some(site) = st.sites.get_mut(&origin) {
                site.refusals.until = None;
                self.runlog
                    .line(&format!("{origin}: time away over, crawling again"));
            }
            self.mark_work(st, &origin);
        }
        next.map(|u| {
            let wait = u.saturating_sub(politeness::epoch_secs(now));
            Instant::now() + Duration::from_secs(wait)
        })
    }

    /// The next job of a budget: robots.txt of a site that lacks it, else its next allowed URL.
    /// URLs that robots.txt forbids are logged and skipped here, costing no request.
    fn take_job(&self, st: &mut State, budget: &str) -> Option<Job> {
        let now = Instant::now();
        loop {
            let origin = st.budgets.get_mut(budget)?.pop_front()?;
            if !has_work(st, &origin) {
                continue; // the site ran out of work: it leaves the round-robin
            }
            let site = st.sites.get_mut(&origin)?;
            if site.refusals.suspended(SystemTime::now()) {
                continue; // left alone until its time away is over
            }
            if site.budget.as_deref() != Some(budget) {
                continue; // moved to another address meanwhile
            }
            if let Dns::Known(_, at) = site.dns {
                if now.saturating_duration_since(at) >= self.resolver.ttl() {
                    // Ask the name again; the site rejoins under its (maybe new) address.
                    site.dns = Dns::Pending;
                    site.budget = None;
                    self.start_resolve(st, &origin, Duration::ZERO);
                    continue;
                }
            }
            if let Some(chase) = site.chases.pop_front() {
                // Another site's robots.txt goes first: that site waits for it.
                self.requeue_origin(st, budget, &origin);
                return Some(Job::Chase {
                    origin,
                    chase: Box::new(chase),
                });
            }
            if matches!(&site.robots, RobotsState::Known(p) if p.expired(now)) {
                site.robots = RobotsState::Unknown;
            }
            match &site.robots {
                RobotsState::Unknown | RobotsState::Unavailable { .. } => {
                    self.requeue_origin(st, budget, &origin);
                    return Some(Job::Robots { origin });
                }
                RobotsState::GivenUp => {
                    self.drop_site_queue(
                        st,
                        &origin,
                        status::ROBOTS_PREREQUISITE_FAILED,
                        "robots-unavailable",
                    );
                    continue;
                }
                // Back in the round-robin once the other server has answered.
                RobotsState::Chasing { .. } => continue,
                RobotsState::Known(_) => {}
            }
            let spent = st.sites.get(&origin).map_or(0, |s| s.archived_bytes);
            if self.rules.over_byte_budget(spent) {
                let why = crate::scope::rules::BYTE_BUDGET;
                self.drop_site_queue(st, &origin, status::BLOCKED_BY_QUOTA, why);
                continue;
            }
            if let Some(candidate) = self.pop_allowed(st, &origin)? {
                self.requeue_origin(st, budget, &origin);
                return Some(Job::Fetch {
                    origin,
                    candidate: Box::new(candidate),
                });
            }
        }
    }

    /// Pops the site's next URL that robots.txt allows, logging the ones it does not.
    /// Outer None: the frontier failed. Inner None: the site has nothing left.
    fn pop_allowed(&self, st: &mut State, origin: &str) -> Option<Option<Candidate>> {
        loop {
            let candidate = match st.frontier.pop(origin) {
                Ok(Some(c)) => c,
                Ok(None) => return Some(None),
                Err(e) => {
                    self.fail(e);
                    return None;
                }
            };
            if self.opted_out(&candidate) {
                // Queued before the list named it (e.g. by an earlier run): dropped now.
                if let Err(e) = st.frontier.done(&candidate.url) {
                    self.fail(e);
                    return None;
                }
                continue;
            }
            let allowed = !self.profile.obey_robots
                || match &st.sites.get(origin)?.robots {
                    RobotsState::Known(p) => p.allows(&candidate.url),
                    _ => false,
                };
            if allowed {
                return Some(Some(candidate));
            }
            self.log_unfetched(&candidate, status::ROBOTS_PRECLUDED, "robots");
            if let Err(e) = st.frontier.done(&candidate.url) {
                self.fail(e);
                return None;
            }
        }
    }

    /// Logs and drops every queued URL of a site that cannot be crawled.
    fn drop_site_queue(&self, st: &mut State, origin: &str, code: i32, why: &str) {
        let drained = st.frontier.drain(origin).unwrap_or_else(|e| {
            self.fail(e);
            Vec::new()
        });
        for c in drained {
            self.log_unfetched(&c, code, why);
        }
    }

    /// Puts an origin back at the end of its budget's round-robin if it still has work.
    fn requeue_origin(&self, st: &mut State, budget: &str, origin: &str) {
        if has_work(st, origin) {
            if let Some(list) = st.budgets.get_mut(budget) {
                if !list.iter().any(|o| o == origin) {
                    list.push_back(origin.to_string());
                }
            }
        }
    }

    /// Gives a budget back with the pause its last answer calls for, and commits the frontier.
    fn release(&self, budget: &str, pace: Pace) {
        let mut st = lock(&self.state);
        if let Err(e) = st.frontier.commit() {
            self.fail(e);
        }
        let backoff = st.backoff.entry(budget.to_string()).or_default();
        let pause = politeness::pause_after(backoff, pace.base, pace.answer, pace.retry_after);
        if backoff.is_zero() {
            st.backoff.remove(budget);
        }
        let more = st.budgets.get(budget).is_some_and(|l| !l.is_empty());
        // Counted from now (after the answer ended), so the stored instant is never early.
        self.give_back(&mut st, budget, pause + clock_margin(pause));
        st.sched.release(
            &budget.to_string(),
            pace.end + pause + clock_margin(pause),
            more,
        );
        let gauges = self.progress.due().then(|| self.gauges(&st));
        drop(st);
        self.wake.notify_one();
        // Lock order everywhere: state, then stats, then log; never state while holding stats.
        if let Some(gauges) = gauges {
            self.progress.update(&lock(&self.stats), gauges);
        }
    }

    /// Where the sites stand, for the progress line.
    fn gauges(&self, st: &State) -> crate::logs::report::Gauges {
        let now = SystemTime::now();
        let suspended = st
            .away
            .iter()
            .filter(|o| st.sites.get(*o).is_some_and(|s| s.refusals.suspended(now)))
            .count();
        let active = self.running.load(Ordering::SeqCst);
        let waiting: usize = st.budgets.values().map(VecDeque::len).sum();
        crate::logs::report::Gauges {
            active,
            waiting: waiting.saturating_sub(active),
            suspended,
            queued: st.frontier.total_queued(),
        }
    }

    /// Stops the crawl: nothing new starts, jobs in flight finish, files are closed.
    fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Stops the crawl on a frontier failure (e.g. a full disk): the crawl can be resumed.
    fn fail(&self, e: impl std::fmt::Display) {
        tracing::error!("{e}");
        self.runlog.line(&format!("stopping: {e}"));
        lock(&self.fatal).get_or_insert_with(|| e.to_string());
        self.stop();
    }

    /// Makes the frontier's changes so far durable.
    fn commit(&self) {
        if let Err(e) = lock(&self.state).frontier.commit() {
            self.fail(e);
        }
    }

    /// Marks an in-flight URL finished.
    fn finished(&self, url: &Url) {
        if let Err(e) = lock(&self.state).frontier.done(url) {
            self.fail(e);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Name resolution
// ---------------------------------------------------------------------------------------------

impl Crawler {
    /// Starts resolving a site's host name after `after`; the site joins its budget when done.
    fn start_resolve(&self, st: &mut State, origin: &str, after: Duration) {
        let Some(site) = st.sites.get(origin) else {
            return;
        };
        st.resolving += 1;
        let request = ResolveRequest {
            origin: origin.to_string(),
            host: site.host.clone(),
            after,
        };
        if self.resolve_tx.send(request).is_err() {
            // The resolver task is gone only when the crawl is ending.
            st.resolving -= 1;
        }
    }

    /// Records a lookup's answer.
    fn resolved(&self, origin: &str, answer: Result<IpAddr, String>) {
        let mut st = lock(&self.state);
        st.resolving = st.resolving.saturating_sub(1);
        let max = self.profile.politeness.max_retries;
        let Some(site) = st.sites.get_mut(origin) else {
            return;
        };
        match answer {
            Ok(ip) => match self.profile.guard.check(ip) {
                Ok(()) => {
                    site.dns = Dns::Known(ip, Instant::now());
                    site.dns_failures = 0;
                    site.budget = Some(match self.profile.politeness.budget {
                        BudgetKind::Ip => format!("ip:{ip}"),
                        BudgetKind::Host => format!("host:{}", site.host),
                    });
                    self.mark_work(&mut st, origin);
                }
                Err(refused) => {
                    // Nothing is sent to it, not even a request for robots.txt.
                    site.dns = Dns::Refused(refused);
                    site.budget = None;
                    let chases = std::mem::take(&mut site.chases);
                    self.runlog
                        .line(&format!("{origin}: resolved to {ip}; refused: {refused}"));
                    let drained = st.frontier.drain(origin).unwrap_or_else(|e| {
                        self.fail(e);
                        Vec::new()
                    });
                    let why = crate::net::guard::Refused::ANNOTATION;
                    for c in drained {
                        self.log_dropped(&c, status::OUT_OF_SCOPE, why, Some(refused.extra()));
                    }
                    self.fail_chases(&mut st, origin, chases.into());
                }
            },
            Err(e) if site.dns_failures < max => {
                site.dns_failures += 1;
                let wait = Duration::from_secs(2u64.pow(site.dns_failures.min(10)));
                self.runlog.line(&format!(
                    "{origin}: DNS lookup failed ({e}); again in {wait:?}"
                ));
                self.start_resolve(&mut st, origin, wait);
            }
            Err(e) => {
                site.dns = Dns::Failed;
                self.runlog
                    .line(&format!("{origin}: DNS lookup failed, giving up: {e}"));
                let chases = std::mem::take(&mut site.chases);
                self.drop_site_queue(&mut st, origin, status::DNS_FAILED, "dns-failed");
                self.fail_chases(&mut st, origin, chases.into());
            }
        }
        drop(st);
        self.wake.notify_one();
    }
}

// ---------------------------------------------------------------------------------------------
// Jobs: robots.txt and URLs
// ---------------------------------------------------------------------------------------------

impl Crawler {
    /// Runs a job in its own task, so that a panic inside it (a bug, or input nobody
    /// foresaw) is caught: the URL is logged `-5` with the panic message, it leaves the
    /// in-flight list, and the budget is given back — the crawl goes on.
    async fn run_job_caught(self: Arc<Self>, job: Job, thread: usize) -> Pace {
        let (origin, robots_of, candidate) = match &job {
            Job::Robots { origin } => (origin.clone(), Some(origin.clone()), None),
            Job::Fetch { origin, candidate } => (origin.clone(), None, Some((**candidate).clone())),
            Job::Chase { origin, chase } => (
                origin.clone(),
                Some(chase.owner.clone()),
                Some(chase.candidate.clone()),
            ),
        };
        let crawler = self.clone();
        let run = tokio::spawn(async move { crawler.run_job(job, thread).await });
        match run.await {
            Ok(pace) => pace,
            Err(e) => {
                let message = panic_message(e);
                self.runlog
                    .line(&format!("{origin}: a job failed unexpectedly: {message}"));
                self.job_panicked(&origin, robots_of.as_deref(), candidate, &message, thread)
            }
        }
    }

    /// Logs the URL of a job that panicked and settles it, as a failure that is not retried
    /// (a robots.txt job counts as one failed try of `robots_of`, so that site is given up in
    /// the end).
    fn job_panicked(
        &self,
        origin: &str,
        robots_of: Option<&str>,
        candidate: Option<Candidate>,
        message: &str,
        thread: usize,
    ) -> Pace {
        let error = FetchError::Other(format!("panic: {message}"));
        let loopback = lock(&self.state)
            .sites
            .get(origin)
            .is_some_and(Site::loopback);
        let mut pace = Pace {
            end: Instant::now(),
            base: politeness::delay_after(&self.profile.politeness, loopback, Duration::ZERO, None),
            answer: Answer::Overloaded,
            retry_after: None,
        };
        let candidate = candidate.or_else(|| {
            let url = Url::parse(origin)
                .ok()
                .and_then(|u| robots::robots_url(&u))?;
            Some(Candidate {
                url,
                path: "P".to_string(),
                via: Url::parse(origin).ok(),
                attempts: 0,
            })
        });
        if let Some(c) = &candidate {
            self.log_error(c, &error, thread, Vec::new());
        }
        match robots_of {
            Some(owner) => self.settle_robots(owner, origin, None, &mut pace),
            None => {
                if let Some(c) = &candidate {
                    self.finished(&c.url);
                }
            }
        }
        self.commit();
        pace
    }

    async fn run_job(&self, job: Job, thread: usize) -> Pace {
        match job {
            Job::Robots { origin } => self.run_robots(&origin, thread).await,
            Job::Fetch { origin, candidate } => self.run_fetch(&origin, *candidate, thread).await,
            Job::Chase { origin, chase } => self.robots_chain(&origin, *chase, thread).await,
        }
    }

    /// The socket address and loopback-ness of a site's server for a URL.
    fn target(&self, origin: &str, url: &Url) -> Option<SocketAddr> {
        let st = lock(&self.state);
        let ip = st.sites.get(origin)?.ip()?;
        Some(SocketAddr::new(ip, url.port_or_known_default()?))
    }

    /// The normal pause after a fetch on this site: the politeness rules, slowed down for a
    /// site that has been suspended before.
    fn base_delay(&self, origin: &str, f: &Fetched) -> Duration {
        let st = lock(&self.state);
        let site = st.sites.get(origin);
        let loopback = site.is_some_and(Site::loopback) && f.ip.is_loopback();
        let crawl_delay = site.and_then(Site::crawl_delay);
        let slowdown = site.map_or(1, |s| s.refusals.slowdown());
        let floor = site.map_or(Duration::ZERO, |s| s.retry_after_floor);
        politeness::delay_after(
            &self.profile.politeness,
            loopback,
            f.duration(),
            crawl_delay,
        )
        .saturating_mul(slowdown)
        .max(floor)
    }

    /// A `Retry-After` becomes the site's floor: the pause from then on, never lowered (a
    /// larger one raises it), kept in `state/sites.json` so a resumed crawl keeps it too.
    fn raise_retry_after_floor(&self, origin: &str, retry_after: Duration) {
        let mut st = lock(&self.state);
        let Some(site) = st.sites.get_mut(origin) else {
            return;
        };
        if retry_after <= site.retry_after_floor {
            return;
        }
        site.retry_after_floor = retry_after;
        drop(st);
        {
            // Saved at once (it changes rarely): a crash must not forget what the site asked.
            let mut book = lock(&self.book);
            book.set_retry_after(origin, retry_after);
            if let Err(e) = book.save() {
                self.runlog
                    .line(&format!("cannot save the site book: {e:#}"));
            }
        }
        self.runlog.line(&format!(
            "{origin}: Retry-After {:.3} s: the pause between requests to this site from now on",
            retry_after.as_secs_f64()
        ));
    }

    /// Fetches robots.txt for a site, following up to 5 redirects and archiving every answer.
    async fn run_robots(&self, origin: &str, thread: usize) -> Pace {
        let Some(url) = Url::parse(origin).ok().and_then(|u| robots::robots_url(&u)) else {
            return Pace::idle();
        };
        let candidate = Candidate {
            url,
            path: "P".to_string(),
            via: Url::parse(origin).ok(),
            attempts: 0,
        };
        let chase = RobotsChase {
            owner: origin.to_string(),
            candidate,
            hop: 0,
        };
        self.robots_chain(origin, chase, thread).await
    }

    /// Fetches a robots.txt URL of `origin`'s server on that server's budget, with the
    /// redirects that stay on it. A redirect to another origin is handed to that origin (its
    /// budget, its address, the guard's check of it) and this job ends; the answer at the end
    /// of the chain settles the robots.txt of `chase.owner`.
    async fn robots_chain(&self, origin: &str, chase: RobotsChase, thread: usize) -> Pace {
        let RobotsChase {
            owner,
            mut candidate,
            hop: first,
        } = chase;
        let mut pace = Pace::idle();
        let mut outcome: Option<(Policy, Verdict)> = None;
        for hop in first..=robots::MAX_ROBOTS_REDIRECTS {
            // robots.txt is read whole and sent without a Referer.
            let read_all = |_: u16, _: &hyper::HeaderMap| BodyPlan::Read { keep: true };
            let fetched = match self.fetch_on(origin, &candidate, None, read_all).await {
                Ok(f) => f,
                Err(e) => {
                    self.log_error(&candidate, &e, thread, Vec::new());
                    pace.answer = Answer::Overloaded;
                    break;
                }
            };
            let mut f = fetched;
            // A Retry-After on robots.txt (a 503, say) is the server speaking too: it sticks.
            let retry_after = f
                .header("retry-after")
                .and_then(|v| politeness::parse_retry_after(v, SystemTime::now()));
            if let Some(ra) = retry_after {
                self.raise_retry_after_floor(origin, ra);
            }
            pace = Pace {
                end: f.finished_at,
                base: self.base_delay(origin, &f),
                answer: answer_of(f.status),
                retry_after,
            };
            let location = redirect_target(&f);
            self.archive(origin, &candidate, &mut f, thread, Vec::new());
            self.log_unfollowed_robots_redirect(&candidate, &f);
            match location {
                Some(target) if hop < robots::MAX_ROBOTS_REDIRECTS => {
                    let next = Candidate {
                        url: target,
                        path: format!("{}R", candidate.path),
                        via: Some(candidate.url.clone()),
                        attempts: 0,
                    };
                    if origin_of(&next.url) != origin {
                        let hop = hop + 1;
                        let chase = RobotsChase {
                            owner,
                            candidate: next,
                            hop,
                        };
                        self.hand_off_robots(chase);
                        return pace;
                    }
                    candidate = next;
                    // Stay polite inside the redirect chain too.
                    let at = pace.end + pace.base;
                    tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                }
                _ => {
                    let body = extract::decode_body(
                        f.header("content-encoding"),
                        &f.payload[..],
                        robots::MAX_ROBOTS_BYTES,
                    );
                    // A redirect chain longer than five hops counts as unreachable.
                    let status = if (300..400).contains(&f.status) {
                        500
                    } else {
                        f.status
                    };
                    let token = &self.profile.robots_token;
                    outcome = Some(Policy::from_answer(
                        status,
                        &body.bytes,
                        token,
                        Instant::now(),
                    ));
                    break;
                }
            }
        }
        self.settle_robots(&owner, origin, outcome, &mut pace);
        pace
    }

    /// Queues a robots.txt redirect on the site it points to; the owner waits for it. A site
    /// already refused by the guard or given up on DNS answers at once, as a failed try.
    fn hand_off_robots(&self, chase: RobotsChase) {
        let target = origin_of(&chase.candidate.url);
        let mut st = lock(&self.state);
        if let Some(owner) = st.sites.get_mut(&chase.owner) {
            let attempts = owner.robots.failed_attempts();
            owner.robots = RobotsState::Chasing { attempts };
        }
        self.ensure_site(&mut st, &target);
        let Some(site) = st.sites.get_mut(&target) else {
            return;
        };
        match site.dns {
            Dns::Refused(_) | Dns::Failed => self.fail_chases(&mut st, &target, vec![chase]),
            _ => {
                site.chases.push_back(chase);
                self.mark_work(&mut st, &target);
            }
        }
    }

    /// robots.txt redirects to a site that cannot be reached (refused by the guard, or its
    /// name given up): each logged under its URL, and a failed try of its owner's robots.txt.
    fn fail_chases(&self, st: &mut State, origin: &str, chases: Vec<RobotsChase>) {
        let dns = st.sites.get(origin).map(|s| s.dns);
        for chase in chases {
            match dns {
                Some(Dns::Refused(refused)) => {
                    let why = crate::net::guard::Refused::ANNOTATION;
                    let extra = Some(refused.extra());
                    self.log_dropped(&chase.candidate, status::OUT_OF_SCOPE, why, extra);
                }
                _ => self.log_unfetched(&chase.candidate, status::DNS_FAILED, "dns-failed"),
            }
            let mut pace = Pace::idle();
            self.settle_robots_locked(st, &chase.owner, origin, None, &mut pace);
        }
    }

    /// A robots.txt redirect that cannot be followed (not http(s), or no URL at all) is said
    /// so in crawl.log; robots.txt then counts as unreachable.
    fn log_unfollowed_robots_redirect(&self, parent: &Candidate, f: &Fetched) {
        match location_of(f) {
            Some(Location::Junk(text)) => self.log_bad_location(parent, &text),
            Some(Location::Target(url)) if !matches!(url.scheme(), "http" | "https") => {
                let c = Candidate {
                    url,
                    path: format!("{}R", parent.path),
                    via: Some(parent.url.clone()),
                    attempts: 0,
                };
                self.log_unfetched(&c, status::OUT_OF_SCOPE, "scope:scheme");
            }
            _ => {}
        }
    }

    /// Records what robots.txt of `origin` said (as fetched from `fetched_on`'s server); on
    /// failure schedules another try or gives the site up.
    fn settle_robots(
        &self,
        origin: &str,
        fetched_on: &str,
        outcome: Option<(Policy, Verdict)>,
        pace: &mut Pace,
    ) {
        let mut st = lock(&self.state);
        self.settle_robots_locked(&mut st, origin, fetched_on, outcome, pace);
    }

    fn settle_robots_locked(
        &self,
        st: &mut State,
        origin: &str,
        fetched_on: &str,
        outcome: Option<(Policy, Verdict)>,
        pace: &mut Pace,
    ) {
        let max_retries = self.profile.politeness.max_retries;
        // The pause that follows is `fetched_on`'s; the rules (and their Crawl-delay) are the
        // owner's, so they shape that pause only when the two are one site.
        let mut scratch = Pace::idle();
        let pace = if fetched_on == origin {
            pace
        } else {
            &mut scratch
        };
        let Some(site) = st.sites.get_mut(origin) else {
            return;
        };
        match outcome {
            Some((policy, Verdict::Rules)) => {
                // The pause after robots.txt already obeys the Crawl-delay it just announced.
                if let Some(cd) = policy.crawl_delay {
                    let cd = cd.min(self.profile.politeness.max_crawl_delay);
                    pace.base = pace.base.max(cd.saturating_mul(site.refusals.slowdown()));
                }
                site.robots = RobotsState::Known(policy);
            }
            _ => {
                let attempts = site.robots.failed_attempts() + 1;
                if attempts > max_retries {
                    self.runlog.line(&format!(
                        "{origin}: robots.txt unavailable, giving up the site"
                    ));
                    site.robots = RobotsState::GivenUp;
                } else {
                    // Nothing is fetched meanwhile (complete disallow); the backoff doubles.
                    site.robots = RobotsState::Unavailable { attempts };
                    pace.answer = Answer::Overloaded;
                    pace.base = pace.base.max(Duration::from_secs(1));
                }
            }
        }
        if fetched_on != origin {
            // It left the round-robin while it waited for the other server.
            self.mark_work(st, origin);
        }
    }

    /// Fetches a URL of a resolved site. Every job's URL is of its own site (a robots.txt
    /// redirect to another one is handed to that site); should a URL of another origin come
    /// here all the same, it is resolved as its own URL and connected at its own address, so
    /// the record never shows one server's answer under another's name. The guard checks the
    /// address actually connected, whatever resolved it.
    async fn fetch_on(
        &self,
        origin: &str,
        candidate: &Candidate,
        referer: Option<&Url>,
        plan: impl Fn(u16, &hyper::HeaderMap) -> BodyPlan,
    ) -> Result<Fetched, FetchError> {
        let url = &candidate.url;
        let addr = if origin_of(url) == origin {
            self.target(origin, url)
                .ok_or_else(|| FetchError::Dns("the site's address is not known".into()))?
        } else {
            let host = url
                .host_str()
                .ok_or_else(|| FetchError::Other("URL has no host".into()))?;
            let ip = self.resolver.resolve(host).await.map_err(FetchError::Dns)?;
            let port = url
                .port_or_known_default()
                .ok_or_else(|| FetchError::Other("no port for this scheme".into()))?;
            SocketAddr::new(ip, port)
        };
        self.profile
            .guard
            .check(addr.ip())
            .map_err(FetchError::Refused)?;
        self.fetcher.get(url, addr, referer, plan).await
    }

    /// What to do with a URL's body once its headers are in: a successful answer of a type
    /// `keep_mime` drops is not read at all (the connection is closed), HTML and CSS are kept
    /// in memory for their links, everything else streams to the record.
    fn body_plan(&self, hop: Hop, status: u16, headers: &hyper::HeaderMap) -> BodyPlan {
        let mime = headers.get("content-type").and_then(|v| v.to_str().ok());
        if (200..300).contains(&status) && !self.rules.mime_kept(mime, hop) {
            return BodyPlan::Skip;
        }
        BodyPlan::Read {
            keep: is_html(headers) || is_css(headers),
        }
    }

    /// Fetches a URL, decides what to keep, archives it and queues its links.
    async fn run_fetch(&self, origin: &str, mut candidate: Candidate, thread: usize) -> Pace {
        candidate.attempts += 1;
        let retries_left = candidate.attempts <= self.profile.politeness.max_retries;
        let hop = crate::scope::rules::mime_hop(&candidate.path);
        // Seeds have no via; a discovered URL names the page it was found on.
        let referer = candidate.via.as_ref().filter(|_| self.profile.send_referer);
        let plan = |status: u16, headers: &hyper::HeaderMap| self.body_plan(hop, status, headers);
        let mut f = match self.fetch_on(origin, &candidate, referer, plan).await {
            Ok(f) => f,
            Err(e) => return self.fetch_failed(origin, candidate, &e, retries_left, thread),
        };
        let retry_after = f
            .header("retry-after")
            .and_then(|v| politeness::parse_retry_after(v, SystemTime::now()));
        if let Some(ra) = retry_after {
            self.raise_retry_after_floor(origin, ra);
        }
        let pace = Pace {
            end: f.finished_at,
            base: self.base_delay(origin, &f),
            answer: answer_of(f.status),
            retry_after,
        };
        // Parsing a big page is CPU work: done beside the async workers, so the other sites'
        // exchanges go on meanwhile.
        let page = tokio::task::block_in_place(|| self.links_and_directives(origin, &f));
        if let Some(text) = &page.bad_location {
            self.log_bad_location(&candidate, text);
        }
        let refusal = politeness::refusal_marker(f.status, &f.headers, &page.text);
        if self.note_refusal(origin, &f, refusal.as_deref()) && f.status != 403 {
            // A challenge page or a 429 is no answer: try the URL again later.
            self.retry_or_log(origin, candidate, &f, retries_left, thread, "refused");
            return pace;
        }
        let transient = f.status == 429 || f.status >= 500 || f.truncated == Some("disconnect");
        if transient && retries_left {
            let note = vec![format!("retry:{}", candidate.attempts)];
            self.log_fetched(&candidate, &f, thread, note);
            self.retry_later(origin, candidate);
            return pace;
        }
        let mut notes = Vec::new();
        if page.left_out > 0 {
            notes.push(format!("max-outlinks:{}", page.left_out));
        }
        let mut links = page.links;
        if let Some(trap) = &page.trap {
            // A page that repeats itself under ever-new URLs: keep it, follow none of its
            // links but its embeds (replay needs those).
            notes.push(trap.rule.to_string());
            links.retain(|l| l.hop == Hop::Embed);
        }
        // Outlinks are made durable before the record is written: after a crash between the
        // two, the page is fetched again (it was never archived) and its links are not lost;
        // after a crash once the record is written, recovery finds the record and the page
        // counts as done, its links already queued.
        if page.directives.follow_links() {
            tokio::task::block_in_place(|| self.queue_links(&candidate, links));
        }
        self.commit();
        if let Some(reason) = page.directives.discard_reason() {
            notes.push(reason.to_string());
            self.log_fetched(&candidate, &f, thread, notes);
        } else if f.body_skipped {
            // Only successful answers are filtered by type (redirects, 404s and errors are the
            // site's answer and are always archived), and that was decided on the headers: the
            // body was never read, so nothing of it can be written.
            notes.push(crate::scope::rules::MIME_NOT_KEPT.to_string());
            let extra = serde_json::json!({
                "content-type": f.header("content-type"),
                "content-length": f.header("content-length"),
            });
            self.log_fetched_with(&candidate, &f, thread, notes, Some(extra));
        } else {
            self.archive(origin, &candidate, &mut f, thread, notes);
        }
        self.finished(&candidate.url);
        pace
    }

    /// A refused URL goes back to the queue while tries remain, else it is logged as final.
    fn retry_or_log(
        &self,
        origin: &str,
        candidate: Candidate,
        f: &Fetched,
        retries_left: bool,
        thread: usize,
        why: &str,
    ) {
        if retries_left {
            let note = vec![why.to_string(), format!("retry:{}", candidate.attempts)];
            self.log_fetched(&candidate, f, thread, note);
            self.retry_later(origin, candidate);
        } else {
            self.log_fetched(&candidate, f, thread, vec![why.to_string()]);
            self.finished(&candidate.url);
        }
    }

    /// No answer at all: retry later while tries remain.
    fn fetch_failed(
        &self,
        origin: &str,
        candidate: Candidate,
        e: &FetchError,
        retries_left: bool,
        thread: usize,
    ) -> Pace {
        let end = Instant::now();
        if retries_left && !matches!(e, FetchError::Other(_) | FetchError::Refused(_)) {
            let note = vec![format!("retry:{}", candidate.attempts)];
            self.log_error(&candidate, e, thread, note);
            self.retry_later(origin, candidate);
        } else {
            self.log_error(&candidate, e, thread, Vec::new());
            self.finished(&candidate.url);
        }
        let st = lock(&self.state);
        let loopback = st.sites.get(origin).is_some_and(Site::loopback);
        let floor = st
            .sites
            .get(origin)
            .map_or(Duration::ZERO, |s| s.retry_after_floor);
        drop(st);
        let normal =
            politeness::delay_after(&self.profile.politeness, loopback, Duration::ZERO, None);
        Pace {
            end,
            base: normal.max(floor),
            answer: Answer::Overloaded,
            retry_after: None,
        }
    }

    /// Counts a refusal (or a good answer, which resets the count) and suspends the site when
    /// it keeps refusing. Returns true when this answer was a refusal.
    fn note_refusal(&self, origin: &str, f: &Fetched, marker: Option<&str>) -> bool {
        let settings = &self.profile.politeness.refusals;
        let now = SystemTime::now();
        let mut st = lock(&self.state);
        let Some(site) = st.sites.get_mut(origin) else {
            return false;
        };
        let suspended = site.refusals.record(marker.is_some(), settings, now);
        let refusals = site.refusals.clone();
        let host = site.host.clone();
        if refusals.until.is_some() {
            st.away.insert(origin.to_string());
        }
        drop(st);
        lock(&self.book).set(origin, &refusals);
        let Some(marker) = marker else {
            return false;
        };
        if let Err(e) =
            lock(&self.refusals_log).write(&host, f.ip, f.url.as_str(), f.status, marker)
        {
            tracing::error!("cannot write refusals.log: {e}");
        }
        if let Some(until) = suspended {
            self.runlog.line(&format!(
                "{origin}: {} refusals in a row (last: {marker}); leaving the site alone until {} \
                 (round {}, then {}x slower)",
                settings.threshold,
                crate::logs::runlog::format_epoch(until),
                refusals.round,
                refusals.slowdown()
            ));
        }
        true
    }

    fn retry_later(&self, origin: &str, candidate: Candidate) {
        let mut st = lock(&self.state);
        if let Err(e) = st.frontier.push_retry(origin, candidate) {
            return self.fail(e);
        }
        self.mark_work(&mut st, origin);
    }

    /// Outlinks (HTML links and the redirect target), robots directives (meta + header), and
    /// the decoded start of an HTML body (for challenge-page markers).
    fn links_and_directives(&self, origin: &str, f: &Fetched) -> Page {
        let token = &self.profile.robots_token;
        let mut directives = extract::x_robots_tag(&f.header_all("x-robots-tag"), token);
        let mut links = Vec::new();
        let mut bad_location = None;
        match location_of(f) {
            Some(Location::Target(url)) => links.push(Outlink {
                url,
                hop: Hop::Redirect,
                context: "header/@location",
            }),
            Some(Location::Junk(text)) => bad_location = Some(text),
            None => {}
        }
        let mut text = Vec::new();
        let mut trap = None;
        let mut left_out = 0;
        if !f.payload.is_empty() && is_html(&f.headers) {
            let encoding = f.header("content-encoding");
            // Only the start of the page is held decoded (fingerprint, challenge markers);
            // links are taken from a stream, so a huge or bomb page costs no memory.
            let decoded = extract::decode_body(encoding, &f.payload[..], FINGERPRINT_BYTES);
            let stream = extract::decoding_reader(encoding, &f.payload[..]);
            if let (true, Ok(Some(reader))) = ((200..300).contains(&f.status), stream) {
                // extract_html cleans the label (quotes, case) itself.
                let charset = f.header("content-type").and_then(charset_of);
                let max = self.profile.max_outlinks.saturating_sub(links.len());
                let reader = reader.take(MAX_DECODED_HTML as u64);
                let page = extract::extract_html_limited(reader, charset, &f.url, token, max);
                directives.merge(page.directives);
                links.extend(page.links);
                left_out = page.left_out;
                if let Some(traps) = &self.content_traps {
                    let text = crate::scope::traps::visible_text(&decoded.bytes);
                    let hash = crate::scope::traps::text_hash(&text);
                    trap = lock(traps).observe(origin, &f.url, hash);
                }
            }
            text = decoded.bytes;
            text.truncate(16 * 1024);
        } else if !f.payload.is_empty() && is_css(&f.headers) && (200..300).contains(&f.status) {
            let encoding = f.header("content-encoding");
            let decoded = extract::decode_body(encoding, &f.payload[..], MAX_DECODED_CSS);
            // References in a stylesheet are relative to the stylesheet itself.
            let mut found = crate::extract::css::css_links(
                &crate::extract::css::decode(&decoded.bytes),
                &f.url,
            );
            let room = self.profile.max_outlinks.saturating_sub(links.len());
            if found.len() > room {
                left_out = found.len() - room;
                found.truncate(room);
            }
            links.extend(found);
        }
        Page {
            links,
            directives,
            text,
            trap,
            bad_location,
            left_out,
        }
    }

    /// Scope-checks and queues the outlinks of a page, a batch at a time: the seen-check and
    /// the queueing hold the state lock briefly; judging (scope, opt-out, traps) and logging
    /// what is dropped happen without it, so other sites' jobs are never held up by one page.
    fn queue_links(&self, parent: &Candidate, links: Vec<Outlink>) {
        let mut links = links.into_iter().peekable();
        while links.peek().is_some() {
            let batch: Vec<Outlink> = links.by_ref().take(LINK_BATCH).collect();
            let fresh = {
                let mut st = lock(&self.state);
                let mut fresh = Vec::with_capacity(batch.len());
                for link in batch {
                    match st.frontier.mark_seen(&link.url) {
                        Ok(true) => fresh.push(link),
                        Ok(false) => {}
                        Err(e) => return self.fail(e),
                    }
                }
                fresh
            };
            let accepted: Vec<Candidate> = fresh
                .into_iter()
                .filter_map(|link| self.judge(parent, link))
                .collect();
            if accepted.is_empty() {
                continue;
            }
            let mut st = lock(&self.state);
            for candidate in accepted {
                self.enqueue(&mut st, candidate);
            }
        }
    }

    /// Decides one new outlink (see [`candidates::judge`]): the candidate to queue, or None,
    /// logged with the reason.
    fn judge(&self, parent: &Candidate, link: Outlink) -> Option<Candidate> {
        let rules = candidates::Rules {
            scope: &self.scope,
            rules: &self.rules,
            optout: &self.profile.optout,
            url_traps: self.url_traps.as_ref(),
        };
        match candidates::judge(&rules, parent, link) {
            candidates::Verdict::Queue(candidate) => Some(candidate),
            candidates::Verdict::Drop(dropped) => {
                self.log_drop(dropped);
                None
            }
        }
    }

    /// Writes the exchange to the WARC (and so the CDXJ) and logs it: a full response, or a
    /// revisit record when an identical payload was archived before (in this crawl or in an
    /// earlier one the profile names). A record that cannot be written (a full disk, say) stops
    /// the crawl cleanly: it can be resumed once there is room.
    fn archive(
        &self,
        origin: &str,
        c: &Candidate,
        f: &mut Fetched,
        thread: usize,
        mut notes: Vec<String>,
    ) {
        if let Some(t) = f.truncated {
            notes.push(format!("truncated:{t}"));
        }
        let uri = f.url.to_string();
        let result = tokio::task::block_in_place(|| self.write_record(&uri, f));
        // Where the record is, as Heritrix's crawl.log says it: a line leads to its bytes.
        let extra = result.as_ref().ok().map(|r| {
            let w = r.written();
            serde_json::json!({ "warcFilename": w.filename, "warcFileOffset": w.offset })
        });
        match result {
            Ok(Record::Full(_)) => {
                if let Some(site) = lock(&self.state).sites.get_mut(origin) {
                    site.archived_bytes += f.payload_len;
                }
            }
            Ok(Record::Revisit(_)) => notes.push("duplicate:digest".to_string()),
            Err(e) => {
                notes.push("warc-write-failed".to_string());
                self.fail(format!("cannot write the WARC record of {uri}: {e}"));
            }
        }
        self.log_fetched_with(c, f, thread, notes, extra);
    }

    /// The WARC side of `archive`.
    fn write_record(&self, uri: &str, f: &mut Fetched) -> Result<Record, crate::warc::WarcError> {
        let dedupable = f.status == 200 && f.truncated.is_none();
        let original = dedupable
            .then(|| lock(&self.digests).find(200, &f.payload_digest).map(owned))
            .flatten();
        if let Some((refers_uri, refers_date, refers_id)) = original {
            let head =
                f.response
                    .head(64 * 1024)
                    .map_err(|source| crate::warc::WarcError::Spool {
                        uri: uri.to_string(),
                        source,
                    })?;
            if let Some(http_head) = crate::warc::http_head(&head) {
                let written = lock(&self.warc).write_revisit(Revisit {
                    target_uri: uri,
                    date: f.started,
                    ip: Some(f.ip),
                    request: &f.request,
                    http_head,
                    payload_digest: f.payload_digest.clone(),
                    refers_to_uri: &refers_uri,
                    refers_to_date: &refers_date,
                    refers_to_record_id: refers_id.as_deref(),
                })?;
                return Ok(Record::Revisit(written));
            }
        }
        let written = lock(&self.warc).write_exchange(Exchange {
            target_uri: uri,
            date: f.started,
            ip: Some(f.ip),
            request: &f.request,
            response: &mut f.response,
            payload_digest: Some(f.payload_digest.clone()),
            truncated: f.truncated,
        })?;
        let mut digests = lock(&self.digests);
        // Bounded by the profile, not by the length of the crawl: once full, the originals
        // already known still serve, new payloads are simply not remembered.
        if dedupable && digests.len() < self.profile.dedup_max_digests {
            digests.add(
                200,
                &f.payload_digest,
                uri,
                &written.warc_date,
                Some(&written.record_id),
            );
        }
        Ok(Record::Full(written))
    }
}

/// What a fetched page offers the crawl.
struct Page {
    links: Vec<Outlink>,
    directives: Directives,
    /// The decoded start of an HTML body (for challenge-page markers).
    text: Vec<u8>,
    /// Set when the page repeats pages already seen under ever-new URLs.
    trap: Option<crate::scope::traps::Trap>,
    /// A redirect's `Location` that is no URL at all (logged, never fetched).
    bad_location: Option<String>,
    /// Links left out past `[limits] max_outlinks`.
    left_out: usize,
}

/// What `archive` wrote, and where.
enum Record {
    Full(crate::warc::Written),
    Revisit(crate::warc::Written),
}

impl Record {
    fn written(&self) -> &crate::warc::Written {
        match self {
            Record::Full(w) | Record::Revisit(w) => w,
        }
    }
}

/// An original capture, owned (the index's entry borrows from the index).
fn owned(o: crate::dedup::Original<'_>) -> (String, String, Option<String>) {
    (o.url.to_string(), o.warc_date.to_string(), o.record_id)
}

/// The message of a task's panic (or why it ended otherwise).
fn panic_message(e: tokio::task::JoinError) -> String {
    if !e.is_panic() {
        return e.to_string();
    }
    let payload = e.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// 429 and 5xx slow the budget down; everything else is a normal answer.
fn answer_of(status: u16) -> Answer {
    if status == 429 || status >= 500 {
        Answer::Overloaded
    } else {
        Answer::Fine
    }
}

/// The charset parameter of a Content-Type value.
fn charset_of(content_type: &str) -> Option<&str> {
    content_type.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("charset").then_some(v)
    })
}

/// What a redirect's `Location` header points to.
enum Location {
    /// A URL, of any scheme (scope rejects what is not http(s), and says so).
    Target(Url),
    /// Empty, or not a URL even relative to the redirecting one: the text as received.
    Junk(String),
}

/// The `Location` of a redirect response, resolved against the URL that answered. Bytes that
/// are not ASCII are read as UTF-8 (as browsers do) and end up percent-encoded in the URL.
fn location_of(f: &Fetched) -> Option<Location> {
    if !(300..400).contains(&f.status) {
        return None;
    }
    let raw = f.headers.get("location")?;
    let text = String::from_utf8_lossy(raw.as_bytes());
    let text = text.trim();
    if text.is_empty() {
        return Some(Location::Junk(String::new()));
    }
    Some(match f.url.join(text) {
        Ok(mut target) => {
            target.set_fragment(None);
            Location::Target(target)
        }
        Err(_) => Location::Junk(text.to_string()),
    })
}

/// The http(s) target of a redirect response, if it has one.
fn redirect_target(f: &Fetched) -> Option<Url> {
    match location_of(f)? {
        Location::Target(url) if matches!(url.scheme(), "http" | "https") => Some(url),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// crawl.log
// ---------------------------------------------------------------------------------------------

impl Crawler {
    fn log_fetched(&self, c: &Candidate, f: &Fetched, thread: usize, annotations: Vec<String>) {
        self.log_fetched_with(c, f, thread, annotations, None);
    }

    fn log_fetched_with(
        &self,
        c: &Candidate,
        f: &Fetched,
        thread: usize,
        mut annotations: Vec<String>,
        extra: Option<serde_json::Value>,
    ) {
        // Interim answers are not archived; crawl.log keeps that they came.
        annotations.extend(f.interim.iter().map(|s| format!("interim:{s}")));
        if f.excess_bytes > 0 {
            annotations.push(format!("excess-bytes:{}", f.excess_bytes));
        }
        let mime = f.mime();
        self.write_log(Entry {
            status: i32::from(f.status),
            // A body not read (dropped on its headers) has no size or digest to show.
            size: (!f.body_skipped).then_some(f.payload_len),
            uri: c.url.as_str(),
            path: &c.path,
            via: c.via.as_ref().map(Url::as_str),
            mime: mime.as_deref(),
            thread,
            fetch: Some((f.started, f.duration())),
            digest: (!f.body_skipped).then_some(f.payload_digest.as_str()),
            annotations,
            extra,
        });
    }

    fn log_error(&self, c: &Candidate, e: &FetchError, thread: usize, annotations: Vec<String>) {
        if let FetchError::Refused(refused) = e {
            let why = crate::net::guard::Refused::ANNOTATION;
            return self.log_dropped(c, status::OUT_OF_SCOPE, why, Some(refused.extra()));
        }
        self.write_log(Entry {
            status: e.status(),
            uri: c.url.as_str(),
            path: &c.path,
            via: c.via.as_ref().map(Url::as_str),
            thread,
            annotations,
            extra: Some(serde_json::json!({ "error": e.to_string() })),
            ..Entry::default()
        });
    }

    /// True (and logged, `-5001` like Heritrix's "blocked by user") when an opt-out list
    /// names the URL: it is never requested. A site whose whole host is opted out never even
    /// gets its robots.txt asked for, since none of its URLs is ever queued.
    fn opted_out(&self, c: &Candidate) -> bool {
        match candidates::opted_out(&self.profile.optout, c) {
            Some(dropped) => {
                self.log_drop(dropped);
                true
            }
            None => false,
        }
    }

    /// The one crawl.log line of a URL the decide rules dropped.
    fn log_drop(&self, d: candidates::Dropped) {
        self.log_dropped(&d.candidate, d.status, d.why, d.extra);
    }

    /// A redirect whose `Location` is empty or no URL: logged `-7` (Heritrix's "unfetchable
    /// URI") under the text received, with the redirecting URL as the via.
    fn log_bad_location(&self, parent: &Candidate, text: &str) {
        let uri = if text.is_empty() { "-" } else { text };
        self.write_log(Entry {
            status: status::UNFETCHABLE_URI,
            uri,
            path: &format!("{}R", parent.path),
            via: Some(parent.url.as_str()),
            annotations: vec!["bad-location".to_string()],
            extra: Some(serde_json::json!({ "location": text })),
            ..Entry::default()
        });
    }

    fn log_unfetched(&self, c: &Candidate, status: i32, why: &str) {
        self.log_dropped(c, status, why, None);
    }

    /// A URL that is not fetched: its negative status, why, and what else is worth keeping.
    fn log_dropped(&self, c: &Candidate, status: i32, why: &str, extra: Option<serde_json::Value>) {
        self.write_log(Entry {
            status,
            uri: c.url.as_str(),
            path: &c.path,
            via: c.via.as_ref().map(Url::as_str),
            annotations: vec![why.to_string()],
            extra,
            ..Entry::default()
        });
    }

    fn write_log(&self, entry: Entry<'_>) {
        // Counted as crawl.log will read back (see `Stats::from_log`).
        let uri = entry.uri.replace(' ', "%20");
        let mime = entry.mime.map(|m| m.replace(' ', ""));
        let annotations: Vec<String> = entry
            .annotations
            .iter()
            .map(|a| crate::logs::crawllog::clean_annotation(a))
            .collect();
        lock(&self.stats).record(&crate::logs::report::Outcome {
            uri: &uri,
            status: entry.status,
            size: entry.size,
            mime: mime.as_deref().filter(|m| !m.is_empty()),
            annotations: &annotations,
        });
        if let Err(e) = lock(&self.log).write(&entry) {
            tracing::error!("cannot write crawl.log: {e}");
        }
    }
}

/// A name to resolve for a site, after a pause (retries back off).
struct ResolveRequest {
    origin: String,
    host: String,
    after: Duration,
}

/// Runs name lookups as they are asked for, each in its own small task, so a slow DNS server
/// never holds up the dispatcher.
fn spawn_resolver(
    crawler: Arc<Crawler>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<ResolveRequest>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(req) = rx.recv().await {
            let c = crawler.clone();
            tokio::spawn(async move {
                if !req.after.is_zero() {
                    tokio::time::sleep(req.after).await;
                }
                let answer = c.resolver.resolve(&req.host).await;
                c.resolved(&req.origin, answer);
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_task_gives_its_message() {
        let str_panic = tokio::spawn(async { panic!("boom") }).await.unwrap_err();
        assert_eq!(panic_message(str_panic), "boom");
        let n = 7;
        let string_panic = tokio::spawn(async move {
            if n == 7 {
                panic!("bad value {n}");
            }
        })
        .await
        .unwrap_err();
        assert_eq!(panic_message(string_panic), "bad value 7");
    }
}
