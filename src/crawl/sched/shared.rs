//! The scheduler's side of a shared frontier (`[frontier] database`): many workers crawl one
//! frontier, and a politeness budget is leased by one of them at a time.
//!
//! A budget is leased for one job (a fetch, a robots.txt) and given back with the pause its
//! answer calls for; the database keeps that next allowed instant, so whichever worker takes
//! the budget next waits it out. Between jobs the budget belongs to nobody, which is what
//! spreads the sites over the workers: a worker that asks while another is waiting out the
//! pause gets it. With a frontier of one process every call here does nothing.

use std::time::{Duration, Instant};

use super::Sched;
use crate::frontier::{Lease, SharedRobots, SiteFacts};
use crate::politeness::robots::{Policy, Verdict, ROBOTS_TTL};
use crate::politeness::Refusals;

/// How often a worker looks at the shared frontier for work queued by others and for dead
/// workers' URLs, and the longest it sleeps without looking.
pub(super) const POLL_EVERY: Duration = Duration::from_secs(1);

/// How long to leave a budget another worker holds: about its politeness floor (it cannot be
/// free sooner than one pause after its holder's answer), with some spread so workers do not
/// ask in step.
pub(in crate::crawl) fn busy_retry(min_delay: Duration) -> Duration {
    let floor = min_delay.clamp(Duration::from_millis(500), Duration::from_secs(5));
    let spread = u64::from(std::process::id() % 7) * floor.as_millis() as u64 / 20;
    floor + Duration::from_millis(spread)
}

impl Sched {
    /// Before a job of `budget`: None when this worker holds the budget and may go now, else
    /// the instant to ask again (the budget's stored pause is not over, or another worker
    /// holds it; the lease is kept while waiting out a pause).
    pub(super) fn lease_wait(&mut self, budget: &str, now: Instant) -> Option<Instant> {
        if !self.frontier.shared() {
            return None;
        }
        let lease = self.frontier.lease(budget);
        if let Ok(Lease::Granted(_)) = lease {
            // The backoff the last holder left (429s, 5xx): this worker goes on from it.
            match self.frontier.shared_backoff(budget) {
                Some(b) if !b.is_zero() => {
                    self.backoff.insert(budget.to_string(), b);
                }
                Some(_) => {
                    self.backoff.remove(budget);
                }
                None => {}
            }
        }
        match lease {
            Ok(Lease::Granted(wait)) if wait < Duration::from_millis(5) => None,
            Ok(Lease::Granted(wait)) => Some(now + wait),
            Ok(Lease::Busy) => Some(now + self.limits.busy_retry),
            Err(e) => {
                self.fail(e);
                Some(now + POLL_EVERY)
            }
        }
    }

    /// After a job of `budget` (or a lease that found nothing to do): the budget goes back to
    /// the database with the pause before its next request and its backoff (written with the
    /// commit that follows).
    pub(super) fn give_back(&mut self, budget: &str, pause: Duration) {
        if self.frontier.shared() {
            let backoff = self.backoff.get(budget).copied().unwrap_or_default();
            if let Err(e) = self.frontier.give_back(budget, pause, backoff) {
                self.fail(e);
            }
        }
    }

    /// A budget leased for a job that turned out to have nothing to fetch: back at once.
    pub(super) fn give_back_unused(&mut self, budget: &str, now: Instant) {
        if self.frontier.shared() {
            self.give_back(budget, Duration::ZERO);
            self.commit(now);
        }
    }

    /// A site's refusals in a row across workers, after counting this answer (None: the
    /// frontier is not shared, and the site's own count is all there is).
    pub(super) fn shared_streak(&mut self, origin: &str, refused: bool) -> Option<u32> {
        if !self.frontier.shared() {
            return None;
        }
        match self.frontier.count_refusal(origin, refused) {
            Ok(n) => n,
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// A site's robots.txt as another worker fetched it within its validity, read for this
    /// crawl's product token, so this worker does not ask the server again (RFC 9309 lets a
    /// crawler cache robots.txt for 24 hours; the workers of one crawl are one crawler).
    pub(super) fn robots_from_others(&mut self, origin: &str, now: Instant) -> Option<Policy> {
        if !self.frontier.shared() {
            return None;
        }
        let shared = match self.frontier.shared_robots(origin, ROBOTS_TTL) {
            Ok(r) => r?,
            Err(e) => {
                self.fail(e);
                return None;
            }
        };
        let fetched_at = now.checked_sub(shared.age).unwrap_or(now);
        let token = &self.limits.robots_token;
        match Policy::from_answer(shared.status, &shared.body, token, fetched_at) {
            (policy, Verdict::Rules) => Some(policy),
            (_, Verdict::Unavailable) => None,
        }
    }

    /// Keeps a site's robots.txt answer for the other workers.
    pub(in crate::crawl) fn share_robots(&mut self, origin: &str, status: u16, body: Vec<u8>) {
        if !self.frontier.shared() {
            return;
        }
        let robots = SharedRobots {
            status,
            body,
            age: Duration::ZERO,
        };
        if let Err(e) = self.frontier.save_robots(origin, &robots) {
            self.fail(e);
        }
    }

    /// At most every [`POLL_EVERY`]: sites with work queued by other workers (and dead
    /// workers' URLs, queued again) are scheduled here too.
    pub(super) fn poll_shared(&mut self, clock: super::Clock) {
        let now = clock.now;
        if !self.frontier.shared() || self.last_poll.is_some_and(|t| now < t + POLL_EVERY) {
            return;
        }
        self.last_poll = Some(now);
        match self.frontier.poll() {
            Ok(sites) => {
                for origin in &sites {
                    self.ensure_site(origin);
                    self.mark_work(origin, clock);
                }
            }
            Err(e) => return self.fail(e),
        }
        // Sites another worker suspended are left alone here too.
        match self.frontier.suspended_sites() {
            Ok(away) => {
                for (origin, facts) in away {
                    let Some(site) = self.sites.get_mut(&origin) else {
                        continue; // met later: ensure_site reads its facts then
                    };
                    if site.refusals.until < facts.until {
                        site.refusals.until = facts.until;
                        site.refusals.round = site.refusals.round.max(facts.round);
                        self.away.insert(origin);
                    }
                }
            }
            Err(e) => self.fail(e),
        }
    }

    /// Tells the other workers about a site's new suspension or `Retry-After` floor.
    pub(super) fn share_facts(
        &mut self,
        origin: &str,
        refusals: &Refusals,
        retry_after: Option<Duration>,
    ) {
        if !self.frontier.shared() {
            return;
        }
        let facts = SiteFacts {
            round: refusals.round,
            until: refusals.until,
            retry_after,
        };
        if let Err(e) = self.frontier.save_site_facts(origin, &facts) {
            self.fail(e);
        }
    }

    /// A site met for the first time: what other workers recorded about it counts too (the
    /// later suspension, the larger round and floor).
    pub(super) fn merge_facts(
        &mut self,
        origin: &str,
        refusals: &mut Refusals,
        floor: &mut Option<Duration>,
    ) {
        if !self.frontier.shared() {
            return;
        }
        match self.frontier.site_facts(origin) {
            Ok(Some(f)) => {
                refusals.round = refusals.round.max(f.round);
                refusals.until = refusals.until.max(f.until);
                *floor = (*floor).max(f.retry_after);
            }
            Ok(None) => {}
            Err(e) => self.fail(e),
        }
    }

    /// True when nothing is queued or in flight for any worker of a shared crawl, asked at most
    /// every [`POLL_EVERY`] while this worker waits out pauses. Then the crawl is over for this
    /// worker too, without waiting for the pauses of the budgets it gave back to end: a worker
    /// used to look at each of its last sites once more after its pause (or after another
    /// worker's), and ended 6–10 s after the crawl's last answer.
    pub(super) fn shared_over_while_pausing(&mut self, now: Instant) -> bool {
        if !self.frontier.shared() || self.last_over_check.is_some_and(|t| now < t + POLL_EVERY) {
            return false;
        }
        self.last_over_check = Some(now);
        self.idle_everywhere() == Some(true)
    }

    /// Whether nothing is queued or in flight for any worker; None when the frontier could
    /// not say (the crawl is then failed, with why).
    fn idle_everywhere(&mut self) -> Option<bool> {
        match self.frontier.idle_everywhere() {
            Ok(idle) => Some(idle),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// When this worker has nothing left: with a shared frontier the crawl is over only when
    /// nothing is queued or in flight for any worker; until then, when to look again.
    pub(super) fn shared_not_over(&mut self, now: Instant) -> Option<Instant> {
        if !self.frontier.shared() {
            return None;
        }
        match self.idle_everywhere() {
            Some(false) => Some(now + POLL_EVERY),
            // Over, or failed (and so over too).
            Some(true) | None => None,
        }
    }

    /// A shared crawl's worker never sleeps past the next poll.
    pub(super) fn cap_wait(&self, at: Option<Instant>, now: Instant) -> Option<Instant> {
        if !self.frontier.shared() {
            return at;
        }
        let next = now + POLL_EVERY;
        Some(at.map_or(next, |a| a.min(next)))
    }

    /// Queued URLs this worker counts as left: with a shared frontier, one while any worker
    /// has anything queued or in flight.
    pub(in crate::crawl) fn left_anywhere(&mut self) -> usize {
        if self.frontier.shared() {
            usize::from(!self.frontier.idle_everywhere().unwrap_or(false))
        } else {
            self.frontier.total_queued()
        }
    }

    /// This worker stops: its leases go back at once, and it is marked ended.
    pub(in crate::crawl) fn leave_shared(&mut self) -> Result<(), crate::frontier::FrontierError> {
        if self.frontier.shared() {
            self.frontier.leave()?;
        }
        Ok(())
    }
}
