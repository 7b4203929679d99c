//! The orchestrator: which site goes next, and the road of one URL through the crawler.
//!
//! `sites_at_once` workers share one scheduler. A worker asks the scheduler for a politeness
//! budget (a host) whose delay has passed, takes the next job of one of that host's sites
//! (robots.txt first, then queued URLs breadth-first), runs it, and gives the budget back with
//! the time before which it may not be used again. No task or timer exists per site, so
//! thousands of sites cost only their queues.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::sync::Notify;
use url::Url;

use crate::crawllog::{status, CrawlLog, Entry};
use crate::extract::{self, Directives, Hop, Outlink};
use crate::fetch::{FetchError, FetchSettings, Fetched, Fetcher};
use crate::frontier::{Candidate, Frontier, MemoryFrontier};
use crate::politeness::{self, Next, Scheduler};
use crate::profile::Profile;
use crate::report::{Progress, Stats};
use crate::robots::{self, Policy, Verdict};
use crate::scope::{origin_of, Scope};
use crate::warc::{Exchange, WarcSettings, WarcWriter};

/// Decoded HTML larger than this is cut before link extraction (decompression bombs).
const MAX_DECODED_HTML: usize = 50 << 20;

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
}

/// One origin being crawled.
#[derive(Debug)]
struct Site {
    budget: String,
    robots: RobotsState,

    /// Whether the host was last seen on a loopback address (shorter delays allowed).
    loopback: bool,
}

/// What a worker does next.
enum Job {
    Robots {
        origin: String,
        budget: String,
    },
    Fetch {
        origin: String,
        budget: String,
        candidate: Box<Candidate>,
    },
}

/// Everything behind the scheduler lock.
struct State {
    sched: Scheduler<String>,
    /// Per budget, the origins that have work, served round-robin.
    budgets: HashMap<String, VecDeque<String>>,
    sites: HashMap<String, Site>,
    frontier: Box<dyn Frontier>,
}

impl State {
    fn new(frontier: Box<dyn Frontier>) -> State {
        State {
            sched: Scheduler::default(),
            budgets: HashMap::new(),
            sites: HashMap::new(),
            frontier,
        }
    }
}

/// A running crawl.
pub struct Crawler {
    profile: Profile,
    fetcher: Fetcher,
    scope: Scope,
    state: Mutex<State>,
    wake: Notify,
    warc: Mutex<WarcWriter>,
    log: Mutex<CrawlLog>,
    stats: Mutex<Stats>,
    progress: Progress,
    /// Set by Ctrl-C or a fatal error: workers finish the exchange in flight and take no new job.
    stopping: AtomicBool,
    /// Why the crawl had to stop, if it did not end normally.
    fatal: Mutex<Option<String>>,
}

/// Runs the crawl a profile describes, to the end. Returns the final statistics.
pub async fn run(profile: Profile) -> anyhow::Result<Stats> {
    let out = profile.output_dir.clone();
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create the output folder {}", out.display()))?;
    let warc = WarcWriter::new(warc_settings(&profile))
        .with_context(|| format!("cannot write WARCs under {}", out.display()))?;
    let log = CrawlLog::open(&out.join("crawl.log"))
        .with_context(|| format!("cannot open {}", out.join("crawl.log").display()))?;
    let fetcher = Fetcher::new(FetchSettings {
        user_agent: profile.user_agent.clone(),
        timeout: profile.timeout,
        max_body_bytes: profile.max_body_bytes,
    });
    let crawler = Arc::new(Crawler {
        scope: Scope::new(profile.scope.clone(), &profile.seeds),
        fetcher,
        state: Mutex::new(State::new(Box::new(MemoryFrontier::default()))),
        wake: Notify::new(),
        warc: Mutex::new(warc),
        log: Mutex::new(log),
        stats: Mutex::new(Stats::default()),
        progress: Progress::new(),
        stopping: AtomicBool::new(false),
        fatal: Mutex::new(None),
        profile,
    });
    watch_ctrl_c(crawler.clone());
    crawler.queue_seeds();
    let workers: Vec<_> = (0..crawler.profile.sites_at_once)
        .map(|i| {
            let c = crawler.clone();
            tokio::spawn(async move { c.work(i + 1).await })
        })
        .collect();
    for w in workers {
        w.await.context("a crawl worker stopped unexpectedly")?;
    }
    crawler.progress.finish();
    lock(&crawler.warc)
        .close()
        .context("cannot close the last WARC file")?;
    if let Some(why) = lock(&crawler.fatal).take() {
        anyhow::bail!("the crawl stopped: {why}");
    }
    let mut stats = lock(&crawler.stats).clone();
    stats.left_queued = lock(&crawler.state).frontier.total_queued() as u64;
    stats.interrupted = crawler.stopping.load(Ordering::SeqCst);
    Ok(stats)
}

/// First Ctrl-C: finish the exchanges in flight, close the WARC files, stop. Second: stop at
/// once; every record already written is a complete gzip member and stays readable.
fn watch_ctrl_c(crawler: Arc<Crawler>) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        eprintln!(
            "\narchiver: stopping after the requests in flight (Ctrl-C again to stop at once)"
        );
        crawler.stopping.store(true, Ordering::SeqCst);
        crawler.wake.notify_waiters();
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("archiver: stopped at once; the WARC being written keeps its .open name");
            std::process::exit(130);
        }
    });
}

fn warc_settings(p: &Profile) -> WarcSettings {
    let mut info = vec![
        ("isPartOf".to_string(), p.name.clone()),
        ("http-header-user-agent".to_string(), p.user_agent.clone()),
        ("robots".to_string(), "obey".to_string()),
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

/// Locks a mutex, carrying on after a worker panicked while holding it: the data under these
/// locks stays consistent between statements, and losing the crawl would lose more.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The politeness budget of a URL: its host (the server IP once name resolution moves in here).
fn budget_of(url: &Url) -> String {
    url.host_str().unwrap_or("").to_ascii_lowercase()
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

impl Crawler {
    fn queue_seeds(&self) {
        let seeds = self.profile.seeds.clone();
        for seed in seeds {
            let mut st = lock(&self.state);
            match st.frontier.mark_seen(&seed) {
                Ok(true) => self.enqueue(&mut st, Candidate::seed(seed)),
                Ok(false) => {}
                Err(e) => self.fail(e),
            }
        }
    }

    /// Puts an accepted candidate on its site's queue and tells the scheduler.
    fn enqueue(&self, st: &mut State, candidate: Candidate) {
        let origin = origin_of(&candidate.url);
        let budget = budget_of(&candidate.url);
        let site = st.sites.entry(origin.clone()).or_insert_with(|| Site {
            budget: budget.clone(),
            robots: RobotsState::Unknown,

            loopback: false,
        });
        let _ = site;
        if st.frontier.accepted(&origin) >= self.profile.scope.max_pages_per_site {
            self.log_unfetched(&candidate, status::BLOCKED_BY_QUOTA, "max-pages-per-site");
            return;
        }
        if let Err(e) = st.frontier.push(&origin, candidate) {
            return self.fail(e);
        }
        self.mark_work(st, &origin, &budget);
    }

    fn mark_work(&self, st: &mut State, origin: &str, budget: &str) {
        let list = st.budgets.entry(budget.to_string()).or_default();
        if !list.iter().any(|o| o == origin) {
            list.push_back(origin.to_string());
        }
        st.sched.has_work(&budget.to_string(), Instant::now());
        self.wake.notify_waiters();
    }

    /// One worker: take jobs until the crawl is over.
    async fn work(self: Arc<Self>, thread: usize) {
        while let Some(job) = self.next_job(thread).await {
            let (budget, next_at) = match job {
                Job::Robots { origin, budget } => {
                    let next = self.run_robots(&origin, thread).await;
                    (budget, next)
                }
                Job::Fetch {
                    origin,
                    budget,
                    candidate,
                } => {
                    let next = self.run_fetch(&origin, *candidate, thread).await;
                    (budget, next)
                }
            };
            self.release(&budget, next_at);
        }
    }

    /// Gives a budget back to the scheduler.
    fn release(&self, budget: &str, next_at: Instant) {
        let mut st = lock(&self.state);
        if let Err(e) = st.frontier.commit() {
            self.fail(e);
        }
        let more = st.budgets.get(budget).is_some_and(|l| !l.is_empty());
        st.sched.release(&budget.to_string(), next_at, more);
        let queued = st.frontier.total_queued();
        drop(st);
        self.wake.notify_waiters();
        // Lock order everywhere: state, then stats, then log; never state while holding stats.
        self.progress.update(&lock(&self.stats), queued);
    }

    /// Waits until some budget may go and returns its next job; None when the crawl is over.
    async fn next_job(&self, thread: usize) -> Option<Job> {
        loop {
            // Registered before looking, so a wake-up between the look and the wait is not lost.
            let woken = self.wake.notified();
            if self.stopping.load(Ordering::SeqCst) {
                return None;
            }
            let wait = {
                let mut st = lock(&self.state);
                match st.sched.next(Instant::now()) {
                    Next::Go(budget) => match self.take_job(&mut st, &budget, thread) {
                        Some(job) => return Some(job),
                        None => {
                            st.sched.release(&budget, Instant::now(), false);
                            continue;
                        }
                    },
                    Next::Wait(at) => Some(at),
                    Next::Idle => None,
                    Next::Done => {
                        drop(st);
                        self.wake.notify_waiters();
                        return None;
                    }
                }
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

    /// The next job of a budget: robots.txt of a site that lacks it, else its next allowed URL.
    /// URLs robots.txt forbids are logged and skipped here, costing no request.
    fn take_job(&self, st: &mut State, budget: &str, thread: usize) -> Option<Job> {
        let now = Instant::now();
        loop {
            let origin = st.budgets.get_mut(budget)?.pop_front()?;
            if st.frontier.queued(&origin) == 0 {
                continue; // the site ran out of work: it leaves the round-robin
            }
            let site = st.sites.get_mut(&origin)?;
            let expired = matches!(&site.robots, RobotsState::Known(p) if p.expired(now));
            if expired {
                site.robots = RobotsState::Unknown;
            }
            match &site.robots {
                RobotsState::Unknown | RobotsState::Unavailable { .. } => {
                    self.requeue_origin(st, budget, &origin);
                    return Some(Job::Robots {
                        origin,
                        budget: budget.to_string(),
                    });
                }
                RobotsState::GivenUp => {
                    let drained = st.frontier.drain(&origin).unwrap_or_else(|e| {
                        self.fail(e);
                        Vec::new()
                    });
                    for c in drained {
                        self.log_unfetched(
                            &c,
                            status::ROBOTS_PREREQUISITE_FAILED,
                            "robots-unavailable",
                        );
                    }
                    continue;
                }
                RobotsState::Known(_) => {}
            }
            loop {
                let candidate = match st.frontier.pop(&origin) {
                    Ok(Some(c)) => c,
                    Ok(None) => break,
                    Err(e) => {
                        self.fail(e);
                        return None;
                    }
                };
                let allowed = match &st.sites.get(&origin)?.robots {
                    RobotsState::Known(p) => p.allows(&candidate.url),
                    _ => false,
                };
                if allowed {
                    self.requeue_origin(st, budget, &origin);
                    return Some(Job::Fetch {
                        origin,
                        budget: budget.to_string(),
                        candidate: Box::new(candidate),
                    });
                }
                self.log_unfetched(&candidate, status::ROBOTS_PRECLUDED, "robots");
                if let Err(e) = st.frontier.done(&candidate.url) {
                    self.fail(e);
                }
                let _ = thread;
            }
        }
    }

    /// Puts an origin back at the end of its budget's round-robin if it still has work.
    fn requeue_origin(&self, st: &mut State, budget: &str, origin: &str) {
        if st.frontier.queued(origin) > 0 {
            if let Some(list) = st.budgets.get_mut(budget) {
                if !list.iter().any(|o| o == origin) {
                    list.push_back(origin.to_string());
                }
            }
        }
    }

    /// Fetches robots.txt for a site (following up to 5 redirects, archiving each answer) and
    /// returns when the budget may be used again.
    async fn run_robots(&self, origin: &str, thread: usize) -> Instant {
        let Ok(origin_url) = Url::parse(origin) else {
            return Instant::now();
        };
        let Some(mut url) = robots::robots_url(&origin_url) else {
            return Instant::now();
        };
        let mut path = "P".to_string();
        let mut via = origin_url.clone();
        let mut next_at = Instant::now();
        let token = self.profile.agent_token.clone();
        let mut outcome: Option<(Policy, Verdict)> = None;
        for hop in 0..=robots::MAX_ROBOTS_REDIRECTS {
            let candidate = Candidate {
                url: url.clone(),
                path: path.clone(),
                via: Some(via.clone()),
                attempts: 0,
            };
            let fetched = match self.fetch_one(&candidate, |_| true).await {
                Ok(f) => f,
                Err(e) => {
                    self.log_error(&candidate, &e, thread, Vec::new());
                    break;
                }
            };
            next_at = fetched.finished_at + self.delay_for(origin, &fetched, None);
            let location = redirect_target(&fetched);
            let mut f = fetched;
            self.archive(&candidate, &mut f, thread, Vec::new());
            match location {
                Some(target)
                    if (300..400).contains(&f.status) && hop < robots::MAX_ROBOTS_REDIRECTS =>
                {
                    via = url.clone();
                    url = target;
                    path.push('R');
                    // Stay polite inside the redirect chain too.
                    tokio::time::sleep_until(tokio::time::Instant::from_std(next_at)).await;
                }
                _ => {
                    let body = extract::decode_body(
                        f.header("content-encoding"),
                        &f.payload[..],
                        robots::MAX_ROBOTS_BYTES,
                    );
                    let status = if (300..400).contains(&f.status) {
                        500
                    } else {
                        f.status
                    };
                    outcome = Some(Policy::from_answer(
                        status,
                        &body.bytes,
                        &token,
                        Instant::now(),
                    ));
                    break;
                }
            }
        }
        self.settle_robots(origin, outcome, next_at)
    }

    /// Records what robots.txt said; on failure schedules another try or gives the site up.
    fn settle_robots(
        &self,
        origin: &str,
        outcome: Option<(Policy, Verdict)>,
        next_at: Instant,
    ) -> Instant {
        let mut st = lock(&self.state);
        let max_retries = self.profile.politeness.max_retries;
        let Some(site) = st.sites.get_mut(origin) else {
            return next_at;
        };
        match outcome {
            Some((policy, Verdict::Rules)) => {
                site.robots = RobotsState::Known(policy);
                next_at
            }
            _ => {
                let attempts = match site.robots {
                    RobotsState::Unavailable { attempts } => attempts + 1,
                    _ => 1,
                };
                if attempts > max_retries {
                    site.robots = RobotsState::GivenUp;
                    next_at
                } else {
                    site.robots = RobotsState::Unavailable { attempts };
                    // Back off: wait twice as long after each failure.
                    let base = next_at
                        .saturating_duration_since(Instant::now())
                        .max(Duration::from_secs(1));
                    Instant::now() + base * 2u32.saturating_pow(attempts)
                }
            }
        }
    }

    /// Resolves and fetches one candidate.
    async fn fetch_one(
        &self,
        candidate: &Candidate,
        keep: impl Fn(&hyper::HeaderMap) -> bool,
    ) -> Result<Fetched, FetchError> {
        let addr: SocketAddr = crate::fetch::resolve(&candidate.url).await?;
        let loopback = addr.ip().is_loopback();
        {
            let mut st = lock(&self.state);
            if let Some(site) = st.sites.get_mut(&origin_of(&candidate.url)) {
                site.loopback = loopback;
            }
        }
        self.fetcher.get(&candidate.url, addr, keep).await
    }

    /// The pause after a fetch on this site, from the politeness rules.
    fn delay_for(&self, origin: &str, f: &Fetched, retry_after: Option<Duration>) -> Duration {
        let st = lock(&self.state);
        let site = st.sites.get(origin);
        let loopback = site.is_some_and(|s| s.loopback) && f.ip.is_loopback();
        let crawl_delay = site.and_then(|s| match &s.robots {
            RobotsState::Known(p) => p.crawl_delay,
            _ => None,
        });
        let d = politeness::delay_after(
            &self.profile.politeness,
            loopback,
            f.duration(),
            crawl_delay,
        );
        d.max(retry_after.unwrap_or(Duration::ZERO))
    }

    /// Fetches a URL, decides what to keep, archives it and queues its links.
    async fn run_fetch(&self, origin: &str, mut candidate: Candidate, thread: usize) -> Instant {
        candidate.attempts += 1;
        let retries_left = candidate.attempts <= self.profile.politeness.max_retries;
        let mut f = match self.fetch_one(&candidate, is_html).await {
            Ok(f) => f,
            Err(e) => {
                let start = Instant::now();
                if retries_left && !matches!(e, FetchError::Other(_)) {
                    self.log_error(
                        &candidate,
                        &e,
                        thread,
                        vec![format!("retry:{}", candidate.attempts)],
                    );
                    self.retry_later(origin, candidate);
                } else {
                    self.log_error(&candidate, &e, thread, Vec::new());
                    self.finished(&candidate.url);
                }
                let base = politeness::delay_after(
                    &self.profile.politeness,
                    self.is_loopback(origin),
                    Duration::ZERO,
                    None,
                );
                return start + base;
            }
        };
        let retry_after = f
            .header("retry-after")
            .and_then(|v| politeness::parse_retry_after(v, std::time::SystemTime::now()));
        let next_at = f.finished_at + self.delay_for(origin, &f, retry_after);
        let transient = f.status == 429 || f.status >= 500 || f.truncated == Some("disconnect");
        if transient && retries_left {
            self.log_fetched(
                &candidate,
                &f,
                thread,
                vec![format!("retry:{}", candidate.attempts)],
            );
            self.retry_later(origin, candidate);
            return next_at;
        }
        let (links, directives) = self.links_and_directives(&f);
        let mut notes = Vec::new();
        if let Some(reason) = directives.discard_reason() {
            notes.push(reason.to_string());
            self.log_fetched(&candidate, &f, thread, notes);
            self.count_discard();
        } else {
            self.archive(&candidate, &mut f, thread, notes);
        }
        if directives.follow_links() {
            self.queue_links(&candidate, links);
        }
        self.finished(&candidate.url);
        next_at
    }

    /// Stops the crawl on a frontier failure: nothing more is fetched, files are closed.
    fn fail(&self, e: crate::frontier::FrontierError) {
        tracing::error!("{e}");
        lock(&self.fatal).get_or_insert_with(|| e.to_string());
        self.stopping.store(true, Ordering::SeqCst);
        self.wake.notify_waiters();
    }

    /// Marks an in-flight URL finished.
    fn finished(&self, url: &Url) {
        if let Err(e) = lock(&self.state).frontier.done(url) {
            self.fail(e);
        }
    }

    fn is_loopback(&self, origin: &str) -> bool {
        lock(&self.state)
            .sites
            .get(origin)
            .is_some_and(|s| s.loopback)
    }

    fn retry_later(&self, origin: &str, candidate: Candidate) {
        let mut st = lock(&self.state);
        let budget = match st.sites.get(origin) {
            Some(site) => site.budget.clone(),
            None => budget_of(&candidate.url),
        };
        if let Err(e) = st.frontier.push_retry(origin, candidate) {
            return self.fail(e);
        }
        self.mark_work(&mut st, origin, &budget);
    }

    /// Outlinks (HTML links and the redirect target) and robots directives (meta + header).
    fn links_and_directives(&self, f: &Fetched) -> (Vec<Outlink>, Directives) {
        let token = &self.profile.agent_token;
        let mut directives = extract::x_robots_tag(&f.header_all("x-robots-tag"), token);
        let mut links = Vec::new();
        if let Some(target) = redirect_target(f) {
            links.push(Outlink {
                url: target,
                hop: Hop::Redirect,
                context: "header/@location",
            });
        }
        if (200..300).contains(&f.status) && !f.payload.is_empty() && is_html(&f.headers) {
            let decoded = extract::decode_body(
                f.header("content-encoding"),
                &f.payload[..],
                MAX_DECODED_HTML,
            );
            // extract_html cleans the label (quotes, case) itself.
            let charset = f.header("content-type").and_then(|ct| {
                ct.split(';').find_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    k.trim()
                        .eq_ignore_ascii_case("charset")
                        .then(|| v.to_string())
                })
            });
            let page = extract::extract_html(&decoded.bytes, charset.as_deref(), &f.url, token);
            directives.merge(page.directives);
            links.extend(page.links);
        }
        (links, directives)
    }

    /// Scope-checks and queues the outlinks of a page.
    fn queue_links(&self, parent: &Candidate, links: Vec<Outlink>) {
        let mut st = lock(&self.state);
        for link in links {
            match st.frontier.mark_seen(&link.url) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => return self.fail(e),
            }
            let mut path = parent.path.clone();
            path.push(link.hop.letter());
            let candidate = Candidate {
                url: link.url,
                path,
                via: Some(parent.url.clone()),
                attempts: 0,
            };
            match self
                .scope
                .decide(&candidate.url, candidate.hops(), link.hop, &parent.url)
            {
                Ok(()) => self.enqueue(&mut st, candidate),
                Err(r) => self.log_unfetched(&candidate, status::OUT_OF_SCOPE, r.annotation()),
            }
        }
    }

    /// Writes the exchange to the WARC (and so the CDXJ) and logs it.
    fn archive(&self, c: &Candidate, f: &mut Fetched, thread: usize, mut notes: Vec<String>) {
        if let Some(t) = f.truncated {
            notes.push(format!("truncated:{t}"));
        }
        let uri = f.url.to_string();
        let written = tokio::task::block_in_place(|| {
            lock(&self.warc).write_exchange(Exchange {
                target_uri: &uri,
                date: f.started,
                ip: Some(f.ip),
                request: &f.request,
                response: &mut f.response,
                payload_digest: Some(f.payload_digest.clone()),
                truncated: f.truncated,
            })
        });
        match written {
            Ok(_) => {
                let mut s = lock(&self.stats);
                s.archived += 1;
                s.bytes += f.response.len();
            }
            Err(e) => {
                // A WARC that cannot be written is fatal for the record, not the crawl: say so
                // loudly in the log and on the terminal.
                tracing::error!("cannot write WARC record for {uri}: {e}");
                notes.push("warc-write-failed".to_string());
            }
        }
        self.log_fetched(c, f, thread, notes);
    }

    fn count_discard(&self) {
        lock(&self.stats).discarded += 1;
    }

    fn log_fetched(&self, c: &Candidate, f: &Fetched, thread: usize, annotations: Vec<String>) {
        let mime = f.mime();
        let via = c.via.as_ref().map(Url::as_str);
        self.write_log(Entry {
            status: i32::from(f.status),
            size: Some(f.payload_len),
            uri: c.url.as_str(),
            path: &c.path,
            via,
            mime: mime.as_deref(),
            thread,
            fetch: Some((f.started, f.duration())),
            digest: Some(&f.payload_digest),
            annotations,
            extra: None,
        });
    }

    fn log_error(&self, c: &Candidate, e: &FetchError, thread: usize, annotations: Vec<String>) {
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

    fn log_unfetched(&self, c: &Candidate, status: i32, why: &str) {
        self.write_log(Entry {
            status,
            uri: c.url.as_str(),
            path: &c.path,
            via: c.via.as_ref().map(Url::as_str),
            annotations: vec![why.to_string()],
            ..Entry::default()
        });
    }

    fn write_log(&self, entry: Entry<'_>) {
        lock(&self.stats).count(entry.status);
        if let Err(e) = lock(&self.log).write(&entry) {
            tracing::error!("cannot write crawl.log: {e}");
        }
    }
}

/// The resolved `Location` of a redirect response.
fn redirect_target(f: &Fetched) -> Option<Url> {
    if !(300..400).contains(&f.status) {
        return None;
    }
    let loc = f.header("location")?;
    let mut target = f.url.join(loc.trim()).ok()?;
    target.set_fragment(None);
    matches!(target.scheme(), "http" | "https").then_some(target)
}

/// Where a profile's crawl writes; exposed for the CLI summary.
pub fn output_dir(p: &Profile) -> PathBuf {
    p.output_dir.clone()
}
