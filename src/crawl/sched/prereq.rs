//! The scheduler's side of a site's prerequisites: its name resolved (and the address let
//! through by the guard) and its robots.txt settled, or another try scheduled, or the site
//! given up. The jobs that fetch them are in `crawl/prereq.rs`.

use std::net::IpAddr;
use std::time::Duration;

use super::{Clock, Dns, Pace, RobotsChase, RobotsState, Sched};
use crate::logs::crawllog::status;
use crate::politeness::robots::{Policy, Verdict};
use crate::politeness::{Answer, BudgetKind};
use crate::scope::origin_of;

impl Sched {
    /// Records what robots.txt of `origin` said (as fetched from `fetched_on`'s server); on
    /// failure schedules another try or gives the site up.
    pub(in crate::crawl) fn settle_robots(
        &mut self,
        origin: &str,
        fetched_on: &str,
        outcome: Option<(Policy, Verdict)>,
        pace: &mut Pace,
        clock: Clock,
    ) {
        let max_retries = self.limits.max_retries;
        let max_crawl_delay = self.limits.max_crawl_delay;
        // The pause that follows is `fetched_on`'s; the rules (and their Crawl-delay) are the
        // owner's, so they shape that pause only when the two are one site.
        let mut scratch = Pace::idle();
        let pace = if fetched_on == origin {
            pace
        } else {
            &mut scratch
        };
        let Some(site) = self.sites.get_mut(origin) else {
            return;
        };
        match outcome {
            Some((policy, Verdict::Rules)) => {
                // The pause after robots.txt already obeys the Crawl-delay it just announced.
                if let Some(cd) = policy.crawl_delay {
                    let cd = cd.min(max_crawl_delay);
                    pace.base = pace.base.max(cd.saturating_mul(site.refusals.slowdown()));
                }
                site.robots = RobotsState::Known(policy);
            }
            _ => {
                let attempts = site.robots.failed_attempts() + 1;
                if attempts > max_retries {
                    site.robots = RobotsState::GivenUp;
                    self.note(format!(
                        "{origin}: robots.txt unavailable, giving up the site"
                    ));
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
            self.mark_work(origin, clock);
        }
    }

    /// Queues a robots.txt redirect on the site it points to; the owner waits for it. A site
    /// already refused by the guard or given up on DNS answers at once, as a failed try.
    pub(in crate::crawl) fn hand_off_robots(&mut self, chase: RobotsChase, clock: Clock) {
        let target = origin_of(&chase.candidate.url);
        if let Some(owner) = self.sites.get_mut(&chase.owner) {
            let attempts = owner.robots.failed_attempts();
            owner.robots = RobotsState::Chasing { attempts };
        }
        self.ensure_site(&target);
        let Some(site) = self.sites.get_mut(&target) else {
            return;
        };
        match site.dns {
            Dns::Refused(_) | Dns::Failed => self.fail_chases(&target, vec![chase], clock),
            _ => {
                site.chases.push_back(chase);
                self.mark_work(&target, clock);
            }
        }
    }

    /// robots.txt redirects to a site that cannot be reached (refused by the guard, or its
    /// name given up): each dropped under its URL, and a failed try of its owner's robots.txt.
    fn fail_chases(&mut self, origin: &str, chases: Vec<RobotsChase>, clock: Clock) {
        let dns = self.sites.get(origin).map(|s| s.dns);
        for chase in chases {
            match dns {
                Some(Dns::Refused(refused)) => {
                    let why = crate::net::guard::Refused::ANNOTATION;
                    let extra = Some(refused.extra());
                    self.drop_with(chase.candidate, status::OUT_OF_SCOPE, why, extra);
                }
                _ => self.drop_with(chase.candidate, status::DNS_FAILED, "dns-failed", None),
            }
            let mut pace = Pace::idle();
            self.settle_robots(&chase.owner, origin, None, &mut pace, clock);
        }
    }

    /// Records a lookup's answer: the site joins its budget, or waits and asks again, or its
    /// URLs are dropped (an address the guard refuses, or no answer after every try).
    pub(in crate::crawl) fn resolved(
        &mut self,
        origin: &str,
        answer: Result<IpAddr, String>,
        clock: Clock,
    ) {
        self.resolve_done();
        let max = self.limits.max_retries;
        let budget_kind = self.limits.budget;
        let checked = answer.map(|ip| (ip, self.limits.guard.check(ip)));
        let Some(site) = self.sites.get_mut(origin) else {
            return;
        };
        match checked {
            Ok((ip, Ok(()))) => {
                site.dns = Dns::Known(ip, clock.now);
                site.dns_failures = 0;
                site.budget = Some(match budget_kind {
                    BudgetKind::Ip => format!("ip:{ip}"),
                    BudgetKind::Host => format!("host:{}", site.host),
                });
                self.mark_work(origin, clock);
            }
            Ok((ip, Err(refused))) => {
                // Nothing is sent to it, not even a request for robots.txt.
                site.dns = Dns::Refused(refused);
                site.budget = None;
                let chases = std::mem::take(&mut site.chases);
                self.note(format!("{origin}: resolved to {ip}; refused: {refused}"));
                let why = crate::net::guard::Refused::ANNOTATION;
                let extra = Some(refused.extra());
                self.drop_site_queue_with(origin, status::OUT_OF_SCOPE, why, extra);
                self.fail_chases(origin, chases.into(), clock);
            }
            Err(e) if site.dns_failures < max => {
                site.dns_failures += 1;
                let wait = Duration::from_secs(2u64.pow(site.dns_failures.min(10)));
                self.note(format!(
                    "{origin}: DNS lookup failed ({e}); again in {wait:?}"
                ));
                self.start_resolve(origin, wait);
            }
            Err(e) => {
                site.dns = Dns::Failed;
                let chases = std::mem::take(&mut site.chases);
                self.note(format!("{origin}: DNS lookup failed, giving up: {e}"));
                self.drop_site_queue(origin, status::DNS_FAILED, "dns-failed");
                self.fail_chases(origin, chases.into(), clock);
            }
        }
        self.wake_dispatcher();
    }
}
