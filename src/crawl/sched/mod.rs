//! The scheduler: which site's job goes next, and what each site knows about itself.
//!
//! Synchronous and clock-injected (like `politeness::Scheduler`, which it drives): every
//! method takes the instant it runs at, touches no file but its frontier's, no task or socket,
//! and leaves what it cannot do under its lock (a crawl.log line for a dropped URL, a run.log
//! line, a name lookup, the site book's save, a stop, a wake-up) in its [`Outbox`]. The desks
//! (`crawl/desks.rs`) carry the outbox out after releasing the lock, so logging never happens
//! under the scheduler lock and every drop is logged in one place. It is the one owner of
//! site state: its fields are private, and each rule that changes a site is one method
//! (`answers.rs`, `prereq.rs`, `shared.rs`, `steer.rs`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

use url::Url;

use super::archived::ArchivedBefore;
use super::candidates::{self, Dropped};
use super::commits::{Barrier, Commits};
use crate::frontier::{Candidate, Frontier, FrontierError};
use crate::logs::crawllog::status;
use crate::logs::runlog::SiteBook;
use crate::politeness::robots::Policy;
use crate::politeness::{self, Answer, BudgetKind, Next, Refusals, Scheduler};
use crate::scope::optout::OptOutList;
use crate::scope::origin_of;
use crate::scope::rules::ScopeRules;
use crate::scope::traps::ContentTraps;

/// A little is added to every pause, so that a server timing our requests with its own clock
/// (which saw its answer end a little after we did) never measures less than the promised
/// delay: 2% of the pause, at most 5 ms, nothing when the pause is zero (loopback benchmarks).
fn clock_margin(pause: Duration) -> Duration {
    (pause / 50).min(Duration::from_millis(5))
}

/// The moment a scheduler call runs at: the monotonic clock for pauses, the wall clock for
/// times away (which survive restarts, so they are kept as epoch seconds).
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    pub(super) now: Instant,
    pub(super) wall: SystemTime,
}

impl Clock {
    pub(super) fn now() -> Clock {
        Clock {
            now: Instant::now(),
            wall: SystemTime::now(),
        }
    }
}

/// What a site knows about its robots.txt.
#[derive(Debug)]
pub(super) enum RobotsState {
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
    pub(super) fn failed_attempts(&self) -> u32 {
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
pub(super) struct RobotsChase {
    /// The site whose robots.txt this is.
    pub(super) owner: String,
    /// The redirect target, as a prerequisite URL (`P…R`).
    pub(super) candidate: Candidate,
    /// Redirects followed before this request.
    pub(super) hop: usize,
}

/// Where a site stands with name resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dns {
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
pub(super) struct Site {
    pub(super) host: String,
    pub(super) dns: Dns,
    pub(super) dns_failures: u32,
    /// The budget the site's requests count against, once resolved.
    pub(super) budget: Option<String>,
    pub(super) robots: RobotsState,
    pub(super) refusals: Refusals,
    /// Body bytes archived from this site in this run (for `max_bytes_per_site`).
    pub(super) archived_bytes: u64,
    /// The largest `Retry-After` the site ever sent: its pause from then on, across resumes.
    pub(super) retry_after_floor: Duration,
    /// Other sites' robots.txt redirected here, fetched before the site's own work.
    pub(super) chases: VecDeque<RobotsChase>,
}

impl Site {
    pub(super) fn ip(&self) -> Option<IpAddr> {
        match self.dns {
            Dns::Known(ip, _) => Some(ip),
            _ => None,
        }
    }

    pub(super) fn loopback(&self) -> bool {
        self.ip().is_some_and(|ip| ip.is_loopback())
    }

    pub(super) fn crawl_delay(&self) -> Option<Duration> {
        match &self.robots {
            RobotsState::Known(p) => p.crawl_delay,
            _ => None,
        }
    }
}

/// What a task does.
#[derive(Debug)]
pub(super) enum Job {
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
#[derive(Debug)]
pub(super) struct Pace {
    /// When the last response ended (or the job, if nothing was fetched).
    pub(super) end: Instant,
    /// The normal delay for this site after this fetch.
    pub(super) base: Duration,
    pub(super) answer: Answer,
    pub(super) retry_after: Option<Duration>,
}

impl Pace {
    /// A job that sent no request: the budget may be used again at once.
    pub(super) fn idle() -> Pace {
        Pace {
            end: Instant::now(),
            base: Duration::ZERO,
            answer: Answer::Fine,
            retry_after: None,
        }
    }
}

/// A name to resolve for a site, after a pause (retries back off).
#[derive(Debug)]
pub(super) struct ResolveRequest {
    pub(super) origin: String,
    pub(super) host: String,
    pub(super) after: Duration,
}

/// The sites of one budget that have work, served in turn. Membership is kept in a set beside
/// the order, so queueing a link costs no walk over the budget's sites (one address may serve
/// thousands of them).
#[derive(Debug, Default)]
struct RoundRobin {
    order: VecDeque<String>,
    members: HashSet<String>,
}

impl RoundRobin {
    /// Adds a site at the end, unless it is in the round already.
    fn push(&mut self, origin: &str) {
        if !self.members.contains(origin) {
            self.members.insert(origin.to_string());
            self.order.push_back(origin.to_string());
        }
    }

    fn pop(&mut self) -> Option<String> {
        let origin = self.order.pop_front()?;
        self.members.remove(&origin);
        Some(origin)
    }

    fn len(&self) -> usize {
        self.order.len()
    }

    fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// What the scheduler leaves for the engine to do once the lock is released.
#[derive(Debug, Default)]
pub(super) struct Outbox {
    /// URLs not fetched, each for one crawl.log line.
    pub(super) drops: Vec<Dropped>,
    /// Name lookups to start.
    pub(super) resolve: Vec<ResolveRequest>,
    /// Lines for run.log.
    pub(super) notes: Vec<String>,
    /// The frontier failed (a full disk, say): the crawl stops, resumable.
    pub(super) failure: Option<String>,
    /// New work, or a budget given back: the dispatcher should look again.
    pub(super) wake: bool,
    /// The site book, to be saved.
    pub(super) book: Option<crate::logs::runlog::BookSave>,
}

/// The profile's settings the scheduler obeys.
#[derive(Debug, Clone)]
pub(super) struct Limits {
    pub(super) max_pages_per_site: u64,
    /// How long a resolved address is trusted.
    pub(super) dns_ttl: Duration,
    pub(super) obey_robots: bool,
    /// Tries of a DNS lookup, of robots.txt and of a URL.
    pub(super) max_retries: u32,
    pub(super) max_crawl_delay: Duration,
    pub(super) budget: BudgetKind,
    pub(super) guard: crate::net::guard::Guard,
    /// How long to leave a budget another worker of a shared frontier holds.
    pub(super) busy_retry: Duration,
    /// The product token robots.txt is read for (to read another worker's robots.txt).
    pub(super) robots_token: String,
    /// The pauses between requests and the refusal rules (`[politeness]`).
    pub(super) politeness: crate::politeness::PolitenessSettings,
}

/// The decide rules checked again when a queued URL is taken up (a list may have named it
/// since it was queued; a site may have spent its byte budget meanwhile).
pub(super) struct Gate<'a> {
    pub(super) optout: &'a OptOutList,
    pub(super) rules: &'a ScopeRules,
}

/// What the dispatcher should do next.
#[derive(Debug)]
pub(super) enum Turn {
    /// Run this job; its budget is busy until `release`.
    Go(String, Job),
    /// Nothing may go yet: look again at this instant (None: when woken).
    Wait(Option<Instant>),
    /// Nothing is left but suspended sites (or nothing at all): the crawl is over.
    Over,
}

/// What the dispatcher is doing, as far as the scheduler knows (the last `turn` it asked).
#[derive(Debug, Clone, Copy)]
enum Dispatcher {
    /// Starting a job; it asks again right after.
    Busy,
    /// Asleep until this instant (or until woken).
    Until(Instant),
    /// Asleep until woken.
    UntilWoken,
}

/// Everything behind the scheduler lock.
pub(super) struct Sched {
    sched: Scheduler<String>,
    /// Per budget, the origins that have work, served round-robin.
    budgets: HashMap<String, RoundRobin>,
    /// Per budget, its current backoff pause (see `politeness::pause_after`).
    backoff: HashMap<String, Duration>,
    sites: HashMap<String, Site>,
    frontier: Box<dyn Frontier>,
    /// Name lookups under way: the crawl is not over while any is.
    resolving: usize,
    /// Sites with a time away set (suspended now, or due back): the only ones
    /// `wake_suspended` looks at, so a dispatch costs nothing per site.
    away: HashSet<String>,
    /// Each site's refusals and `Retry-After` floor, kept across runs (`state/sites.json`).
    book: SiteBook,
    /// Identical pages under ever-new URLs, per site (None: the rule is off).
    content_traps: Option<ContentTraps>,
    limits: Limits,
    /// When a shared frontier was last looked at for other workers' work (`sched/shared.rs`).
    last_poll: Option<Instant>,
    /// When a shared frontier was last asked whether the whole crawl is over (`sched/shared.rs`).
    last_over_check: Option<Instant>,
    /// When the frontier's changes are committed (`commits.rs`).
    commits: Commits,
    /// What the dispatcher was last told by `turn`.
    dispatcher: Dispatcher,
    out: Outbox,
    /// The operator's orders (`crawl/operator/`, `sched/steer.rs`).
    steering: std::sync::Arc<super::operator::Steering>,
}

impl Sched {
    pub(super) fn new(
        frontier: Box<dyn Frontier>,
        book: SiteBook,
        content_traps: Option<ContentTraps>,
        limits: Limits,
        now: Instant,
    ) -> Sched {
        Sched {
            sched: Scheduler::default(),
            budgets: HashMap::new(),
            backoff: HashMap::new(),
            sites: HashMap::new(),
            frontier,
            resolving: 0,
            away: HashSet::new(),
            book,
            content_traps,
            limits,
            last_poll: None,
            last_over_check: None,
            commits: Commits::new(now),
            dispatcher: Dispatcher::Busy,
            out: Outbox::default(),
            steering: Default::default(),
        }
    }

    /// What is left for the engine to do.
    pub(super) fn take_outbox(&mut self) -> Outbox {
        std::mem::take(&mut self.out)
    }

    /// Stops the crawl (once the engine reads the outbox); the first failure is the one told.
    pub(super) fn fail(&mut self, e: impl std::fmt::Display) {
        self.out.failure.get_or_insert_with(|| e.to_string());
    }

    /// The dispatcher should look again (a site may have become ready).
    pub(super) fn wake_dispatcher(&mut self) {
        self.out.wake = true;
    }

    pub(super) fn note(&mut self, line: String) {
        self.out.notes.push(line);
    }

    /// A URL not fetched, for its crawl.log line.
    fn drop_url(&mut self, c: Candidate, status: i32, why: &'static str) {
        self.drop_with(c, status, why, None);
    }

    pub(super) fn drop_with(
        &mut self,
        candidate: Candidate,
        status: i32,
        why: &'static str,
        extra: Option<serde_json::Value>,
    ) {
        self.out.drops.push(Dropped {
            candidate,
            status,
            why,
            extra,
        });
    }

    /// A seed from the profile: queued unless an opt-out list names it or it was seen before.
    /// True when it was queued.
    pub(super) fn seed(&mut self, seed: Candidate, gate: &Gate<'_>, clock: Clock) -> bool {
        if let Some(dropped) = candidates::opted_out(gate.optout, &seed) {
            self.out.drops.push(dropped);
            return false;
        }
        match self.frontier.mark_seen(&seed.url) {
            Ok(true) => {
                self.enqueue(seed, clock);
                true
            }
            Ok(false) => false,
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// True when the seen-set had not met the URL (it has now).
    pub(super) fn mark_seen(&mut self, url: &Url) -> Result<bool, FrontierError> {
        self.frontier.mark_seen(url)
    }

    /// Puts an accepted candidate on its site's queue; a new site first resolves its name.
    pub(super) fn enqueue(&mut self, candidate: Candidate, clock: Clock) {
        if let Some(d) = self.excluded(&candidate) {
            return self.out.drops.push(d);
        }
        let origin = origin_of(&candidate.url);
        if self.frontier.accepted(&origin) >= self.limits.max_pages_per_site {
            let why = "max-pages-per-site";
            return self.drop_url(candidate, status::BLOCKED_BY_QUOTA, why);
        }
        self.ensure_site(&origin);
        match self.sites.get(&origin).map(|s| s.dns) {
            Some(Dns::Refused(refused)) => {
                let why = crate::net::guard::Refused::ANNOTATION;
                let extra = Some(refused.extra());
                return self.drop_with(candidate, status::OUT_OF_SCOPE, why, extra);
            }
            Some(Dns::Failed) => {
                // Found after the site was given up: said so, not left queued forever.
                return self.drop_url(candidate, status::DNS_FAILED, "dns-failed");
            }
            _ => {}
        }
        if let Err(e) = self.frontier.push(&origin, candidate) {
            return self.fail(e);
        }
        self.mark_work(&origin, clock);
    }

    /// Creates the record of a site met for the first time and starts resolving its name.
    pub(super) fn ensure_site(&mut self, origin: &str) {
        if self.sites.contains_key(origin) {
            return;
        }
        let host = Url::parse(origin)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        let mut refusals = self.book.refusals(origin);
        let mut floor = self.book.retry_after(origin);
        self.merge_facts(origin, &mut refusals, &mut floor);
        if refusals.until.is_some() {
            self.away.insert(origin.to_string());
        }
        self.sites.insert(
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
        self.start_resolve(origin, Duration::ZERO);
    }

    /// Picks up what an earlier run left: URLs that were in flight go back to their queue,
    /// unless a recovered WARC shows they were archived; every site with work is scheduled.
    /// Returns how many URLs were in flight.
    pub(super) fn resume(
        &mut self,
        archived: &ArchivedBefore,
        clock: Clock,
    ) -> Result<usize, FrontierError> {
        let flying = self.frontier.in_flight()?;
        let urls: Vec<&str> = flying.iter().map(|(_, c)| c.url.as_str()).collect();
        let archived = archived.find(&urls);
        let mut done = 0;
        let in_flight = flying.len();
        for (site, candidate) in flying {
            if archived.contains(candidate.url.as_str()) {
                self.frontier.done(&candidate.url)?;
                done += 1;
            } else {
                self.frontier.push_retry(&site, candidate)?;
            }
        }
        self.commits.commit(&mut *self.frontier, clock.now)?;
        let sites = self.frontier.sites_with_work()?;
        for origin in &sites {
            self.ensure_site(origin);
            self.mark_work(origin, clock);
        }
        if !sites.is_empty() || in_flight > 0 {
            self.note(format!(
                "resuming: {} URLs queued on {} sites; of {in_flight} in flight when the last run \
                 stopped, {done} were already archived",
                self.frontier.total_queued(),
                sites.len()
            ));
        }
        Ok(in_flight)
    }

    /// Tells the scheduler that a site has work, if it can be scheduled now.
    pub(super) fn mark_work(&mut self, origin: &str, clock: Clock) {
        let Some(site) = self.sites.get(origin) else {
            return;
        };
        if site.refusals.suspended(clock.wall) {
            return; // comes back when its time away is over (see `wake_suspended`)
        }
        let Some(budget) = site.budget.as_ref() else {
            return; // scheduled once its name is resolved
        };
        match self.budgets.get_mut(budget) {
            Some(list) => list.push(origin),
            None => {
                let mut list = RoundRobin::default();
                list.push(origin);
                self.budgets.insert(budget.clone(), list);
            }
        }
        // A budget already waiting in the scheduler, or busy (its release wakes the
        // dispatcher), changes nothing the dispatcher waits for: a page's links are queued
        // while its own budget is busy, so this saves a wake-up per page.
        if self.sched.has_work(budget, clock.now) {
            self.out.wake = true;
        }
    }

    /// The dispatcher's question: which job may run now, or how long to wait. The answer is
    /// remembered, so a release that cannot change it does not wake the dispatcher.
    pub(super) fn turn(&mut self, gate: &Gate<'_>, clock: Clock) -> Turn {
        let turn = self.next_turn(gate, clock);
        self.dispatcher = match &turn {
            Turn::Go(..) => Dispatcher::Busy,
            Turn::Wait(Some(at)) => Dispatcher::Until(*at),
            Turn::Wait(None) | Turn::Over => Dispatcher::UntilWoken,
        };
        turn
    }

    fn next_turn(&mut self, gate: &Gate<'_>, clock: Clock) -> Turn {
        loop {
            self.poll_shared(clock);
            let back = self.wake_suspended(clock);
            let at = match self.sched.next(clock.now) {
                Next::Go(budget) => {
                    // A shared frontier's budget may be another worker's, or still pausing.
                    if let Some(at) = self.lease_wait(&budget, clock.now) {
                        self.sched.release(&budget, at, true);
                        continue;
                    }
                    match self.take_job(&budget, gate, clock) {
                        Some(job) => return Turn::Go(budget, job),
                        None => {
                            self.give_back_unused(&budget, clock.now);
                            self.sched.release(&budget, clock.now, false);
                            continue;
                        }
                    }
                }
                // Waiting out pauses with nothing left anywhere: a shared crawl is over.
                // (Not on `Idle`: this worker's own jobs run then, and a robots.txt job has no
                // in-flight row the check would see.)
                Next::Wait(_) if self.shared_over_while_pausing(clock.now) => {
                    return Turn::Over;
                }
                Next::Wait(at) => Some(back.map_or(at, |b| b.min(at))),
                Next::Idle => back,
                Next::Done if self.resolving > 0 => back,
                // Only suspended sites (or none) remain: the crawl does not wait for them; a
                // shared crawl waits for the other workers' URLs.
                Next::Done => match self.shared_not_over(clock.now) {
                    Some(at) => Some(at),
                    None => return Turn::Over,
                },
            };
            return Turn::Wait(self.cap_wait(at, clock.now));
        }
    }

    /// Brings back sites whose time away is over; returns when the next one comes back, if
    /// any suspended site has work (checked only while other work keeps the crawl going).
    fn wake_suspended(&mut self, clock: Clock) -> Option<Instant> {
        let mut next: Option<u64> = None;
        let mut back = Vec::new();
        let mut settled = Vec::new();
        for origin in &self.away {
            let Some(site) = self.sites.get(origin) else {
                continue;
            };
            let Some(until) = site.refusals.until else {
                settled.push(origin.clone());
                continue;
            };
            if !self.has_work(origin) {
                continue;
            }
            if site.refusals.suspended(clock.wall) {
                next = Some(next.map_or(until, |n| n.min(until)));
            } else if site.budget.is_some() {
                back.push(origin.clone());
            }
        }
        for origin in settled {
            self.away.remove(&origin);
        }
        for origin in back {
            self.away.remove(&origin);
            if let Some(site) = self.sites.get_mut(&origin) {
                site.refusals.until = None;
                self.note(format!("{origin}: time away over, crawling again"));
            }
            self.mark_work(&origin, clock);
        }
        next.map(|u| {
            let wait = u.saturating_sub(politeness::epoch_secs(clock.wall));
            clock.now + Duration::from_secs(wait)
        })
    }

    /// The next job of a budget: robots.txt of a site that lacks it, else its next allowed URL.
    /// URLs that robots.txt forbids are dropped here, costing no request.
    pub(super) fn take_job(&mut self, budget: &str, gate: &Gate<'_>, clock: Clock) -> Option<Job> {
        loop {
            let origin = self.budgets.get_mut(budget)?.pop()?;
            if !self.has_work(&origin) {
                continue; // the site ran out of work: it leaves the round-robin
            }
            let ttl = self.limits.dns_ttl;
            let site = self.sites.get_mut(&origin)?;
            if site.refusals.suspended(clock.wall) || self.steering.held(&origin) {
                continue; // left alone until its time away is over, or released
            }
            if site.budget.as_deref() != Some(budget) {
                continue; // moved to another address meanwhile
            }
            if let Dns::Known(_, at) = site.dns {
                if clock.now.saturating_duration_since(at) >= ttl {
                    // Ask the name again; the site rejoins under its (maybe new) address.
                    site.dns = Dns::Pending;
                    site.budget = None;
                    self.start_resolve(&origin, Duration::ZERO);
                    continue;
                }
            }
            if let Some(chase) = site.chases.pop_front() {
                // Another site's robots.txt goes first: that site waits for it.
                self.requeue_origin(budget, &origin);
                return Some(Job::Chase {
                    origin,
                    chase: Box::new(chase),
                });
            }
            if matches!(&site.robots, RobotsState::Known(p) if p.expired(clock.now)) {
                site.robots = RobotsState::Unknown;
            }
            if matches!(site.robots, RobotsState::Unknown) {
                // Another worker may have fetched it within its validity: no request then.
                if let Some(policy) = self.robots_from_others(&origin, clock.now) {
                    if let Some(site) = self.sites.get_mut(&origin) {
                        site.robots = RobotsState::Known(policy);
                    }
                }
            }
            let site = self.sites.get_mut(&origin)?;
            match &site.robots {
                RobotsState::Unknown | RobotsState::Unavailable { .. } => {
                    self.requeue_origin(budget, &origin);
                    return Some(Job::Robots { origin });
                }
                RobotsState::GivenUp => {
                    let code = status::ROBOTS_PREREQUISITE_FAILED;
                    self.drop_site_queue(&origin, code, "robots-unavailable");
                    continue;
                }
                // Back in the round-robin once the other server has answered.
                RobotsState::Chasing { .. } => continue,
                RobotsState::Known(_) => {}
            }
            if gate.rules.over_byte_budget(site.archived_bytes) {
                let why = crate::scope::rules::BYTE_BUDGET;
                self.drop_site_queue(&origin, status::BLOCKED_BY_QUOTA, why);
                continue;
            }
            if let Some(candidate) = self.pop_allowed(&origin, gate)? {
                self.requeue_origin(budget, &origin);
                return Some(Job::Fetch {
                    origin,
                    candidate: Box::new(candidate),
                });
            }
        }
    }

    /// Pops the site's next URL that robots.txt allows, dropping the ones it does not.
    /// Outer None: the frontier failed. Inner None: the site has nothing left.
    fn pop_allowed(&mut self, origin: &str, gate: &Gate<'_>) -> Option<Option<Candidate>> {
        loop {
            let candidate = match self.frontier.pop(origin) {
                Ok(Some(c)) => c,
                Ok(None) => return Some(None),
                Err(e) => {
                    self.fail(e);
                    return None;
                }
            };
            let opted_out = candidates::opted_out(gate.optout, &candidate)
                .or_else(|| self.excluded(&candidate));
            let allowed = opted_out.is_none()
                && (!self.limits.obey_robots
                    || match &self.sites.get(origin)?.robots {
                        RobotsState::Known(p) => p.allows(&candidate.url),
                        _ => false,
                    });
            if allowed {
                return Some(Some(candidate));
            }
            if let Err(e) = self.frontier.done(&candidate.url) {
                self.fail(e);
                return None;
            }
            match opted_out {
                // Queued before the list named it (e.g. by an earlier run): dropped now.
                Some(dropped) => self.out.drops.push(dropped),
                None => self.drop_url(candidate, status::ROBOTS_PRECLUDED, "robots"),
            }
        }
    }

    /// Drops every queued URL of a site that cannot be crawled.
    pub(super) fn drop_site_queue(&mut self, origin: &str, code: i32, why: &'static str) {
        self.drop_site_queue_with(origin, code, why, None);
    }

    pub(super) fn drop_site_queue_with(
        &mut self,
        origin: &str,
        code: i32,
        why: &'static str,
        extra: Option<serde_json::Value>,
    ) {
        let drained = self.frontier.drain(origin).unwrap_or_else(|e| {
            self.fail(e);
            Vec::new()
        });
        for c in drained {
            self.drop_with(c, code, why, extra.clone());
        }
    }

    /// Does a site have anything to fetch: queued URLs, or other sites' robots.txt redirected
    /// to it?
    fn has_work(&self, origin: &str) -> bool {
        self.frontier.queued(origin) > 0
            || self.sites.get(origin).is_some_and(|s| !s.chases.is_empty())
    }

    /// Puts an origin back at the end of its budget's round-robin if it still has work.
    fn requeue_origin(&mut self, budget: &str, origin: &str) {
        if self.has_work(origin) {
            if let Some(list) = self.budgets.get_mut(budget) {
                list.push(origin);
            }
        }
    }

    /// Gives a budget back with the pause its last answer calls for. `running`: the jobs still
    /// running. The frontier is committed when `Commits::after_job` says (always for a shared
    /// one, which writes both in one statement).
    pub(super) fn release(&mut self, budget: &str, pace: Pace, running: usize, now: Instant) {
        let backoff = self.backoff.entry(budget.to_string()).or_default();
        let pause = politeness::pause_after(backoff, pace.base, pace.answer, pace.retry_after);
        if backoff.is_zero() {
            self.backoff.remove(budget);
        }
        let more = self.budgets.get(budget).is_some_and(|l| !l.is_empty());
        // Counted from now (after the answer ended), so the stored instant is never early.
        self.give_back(budget, pause + clock_margin(pause));
        if let Err(e) = self.commits.after_job(&mut *self.frontier, running, now) {
            self.fail(e);
        }
        let at = pace.end + pause + clock_margin(pause);
        self.sched.release(&budget.to_string(), at, more);
        // A dispatcher asleep until before this budget's next turn wakes in time anyway (the
        // pause is seconds at the real floor). A shared frontier's dispatcher is always woken:
        // other workers' budgets are not in this scheduler.
        let in_time = matches!(self.dispatcher, Dispatcher::Until(t) if t <= at);
        if self.frontier.shared() || !in_time {
            self.out.wake = true;
        }
    }

    /// A URL tried again later (a transient failure, a refusal).
    pub(super) fn retry_later(&mut self, origin: &str, candidate: Candidate, clock: Clock) {
        if let Err(e) = self.frontier.push_retry(origin, candidate) {
            return self.fail(e);
        }
        self.mark_work(origin, clock);
    }

    /// Marks an in-flight URL finished.
    pub(super) fn finished(&mut self, url: &Url) {
        if let Err(e) = self.frontier.done(url) {
            self.fail(e);
        }
    }

    /// Makes the frontier's changes so far durable.
    pub(super) fn commit(&mut self, now: Instant) {
        if let Err(e) = self.commits.commit(&mut *self.frontier, now) {
            self.fail(e);
        }
    }

    /// A job whose changes must be durable before its record is written (`commits.rs`):
    /// None when it may go on (committed now, or the frontier failed and the crawl stops).
    pub(super) fn barrier(&mut self, running: usize, now: Instant) -> Option<Barrier> {
        match self.commits.barrier(&mut *self.frontier, running, now) {
            Ok(Barrier::Passed) => None,
            Ok(wait) => Some(wait),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// A job back from waiting at the barrier without being told of its commit.
    pub(super) fn settle(&mut self, ticket: u64, now: Instant) {
        if let Err(e) = self.commits.settle(&mut *self.frontier, ticket, now) {
            self.fail(e);
        }
    }

    /// Starts resolving a site's host name after `after`; the site joins its budget when done.
    pub(super) fn start_resolve(&mut self, origin: &str, after: Duration) {
        let Some(site) = self.sites.get(origin) else {
            return;
        };
        self.resolving += 1;
        self.out.resolve.push(ResolveRequest {
            origin: origin.to_string(),
            host: site.host.clone(),
            after,
        });
    }

    /// A lookup that could not be handed to the resolver task (gone only when the crawl ends).
    pub(super) fn resolve_lost(&mut self) {
        self.resolving = self.resolving.saturating_sub(1);
    }

    /// A lookup's answer came: one fewer under way.
    pub(super) fn resolve_done(&mut self) {
        self.resolving = self.resolving.saturating_sub(1);
    }

    /// The socket address of a site's server for a URL.
    pub(super) fn target(&self, origin: &str, url: &Url) -> Option<SocketAddr> {
        let ip = self.sites.get(origin)?.ip()?;
        Some(SocketAddr::new(ip, url.port_or_known_default()?))
    }
}

mod answers;
mod prereq;
pub(super) use answers::Heard;
pub(super) mod shared;
pub(super) mod steer;

#[cfg(test)]
mod tests;
