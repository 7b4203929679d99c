//! A site's prerequisites, as Heritrix calls them: its name resolved (and the address let
//! through by the guard) and its robots.txt fetched, before any of its URLs is. The robots job
//! hands the scheduler a [`Pace`] like any fetch.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use url::Url;

use super::engine::Crawler;
use super::locks::{Free, Key, Root};
use super::page::{location_of, redirect_target, Location};
use super::sched::{Clock, Dns, Pace, RobotsChase, RobotsState, Sched};
use crate::extract;
use crate::frontier::Candidate;
use crate::logs::crawllog::status;
use crate::net::fetch::{BodyPlan, Fetched};
use crate::politeness::robots::{self, Policy, Verdict};
use crate::politeness::{Answer, BudgetKind};
use crate::scope::origin_of;

impl Crawler {
    /// Fetches robots.txt for a site, following up to 5 redirects and archiving every answer.
    pub(super) async fn run_robots(&self, root: &mut Root, origin: &str, thread: usize) -> Pace {
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
        self.robots_chain(root, origin, chase, thread).await
    }

    /// Fetches a robots.txt URL of `origin`'s server on that server's budget, with the
    /// redirects that stay on it. A redirect to another origin is handed to that origin (its
    /// budget, its address, the guard's check of it) and this job ends; the answer at the end
    /// of the chain settles the robots.txt of `chase.owner`.
    pub(super) async fn robots_chain(
        &self,
        root: &mut Root,
        origin: &str,
        chase: RobotsChase,
        thread: usize,
    ) -> Pace {
        let RobotsChase {
            owner,
            mut candidate,
            hop: first,
        } = chase;
        let mut pace = Pace::idle();
        let mut outcome: Option<(Policy, Verdict)> = None;
        // The final answer (status, decoded body), for the other workers of a shared crawl.
        let mut answer: Option<(u16, Vec<u8>)> = None;
        for hop in first..=robots::MAX_ROBOTS_REDIRECTS {
            // robots.txt is read whole and sent without a Referer.
            let read_all = |_: u16, _: &hyper::HeaderMap| BodyPlan::Read { keep: true };
            let fetched = self
                .fetch_on(root, origin, &candidate, None, &[], read_all)
                .await;
            let mut f = match fetched {
                Ok(f) => f,
                Err(e) => {
                    root.with(|key| self.log_error(key, &candidate, &e, thread, Vec::new()));
                    pace.answer = Answer::Overloaded;
                    break;
                }
            };
            let location = redirect_target(&f);
            // A Retry-After on robots.txt (a 503, say) is the server speaking too: it sticks.
            pace = root.with(|key| self.pace_after(key, origin, &f));
            self.archive(root, origin, &candidate, &mut f, thread, Vec::new())
                .await;
            root.with(|key| self.log_unfollowed_robots_redirect(key, &candidate, &f));
            match location {
                Some(target) if hop < robots::MAX_ROBOTS_REDIRECTS => {
                    let next = Candidate {
                        url: target,
                        path: format!("{}R", candidate.path),
                        via: Some(candidate.url.clone()),
                        attempts: 0,
                    };
                    if origin_of(&next.url) != origin {
                        let chase = RobotsChase {
                            owner,
                            candidate: next,
                            hop: hop + 1,
                        };
                        root.with(|key| {
                            self.with_sched(key, |s| s.hand_off_robots(chase, Clock::now()))
                        });
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
                    answer = Some((status, body.bytes.to_vec()));
                    break;
                }
            }
        }
        if let Some((status, body)) = &answer {
            root.with(|key| self.queue_sitemaps(key, &owner, *status, body));
        }
        root.with(|key| {
            self.with_sched(key, |s| {
                if let (Some((status, body)), Some((_, Verdict::Rules))) = (answer, &outcome) {
                    s.share_robots(&owner, status, body);
                }
                s.settle_robots(&owner, origin, outcome, &mut pace, Clock::now());
            })
        });
        pace
    }

    /// A robots.txt redirect that cannot be followed (not http(s), or no URL at all) is said
    /// so in crawl.log; robots.txt then counts as unreachable.
    fn log_unfollowed_robots_redirect(&self, key: &mut Key<Free>, parent: &Candidate, f: &Fetched) {
        match location_of(f) {
            Some(Location::Junk(text)) => self.log_bad_location(key, parent, &text),
            Some(Location::Target(url)) if !matches!(url.scheme(), "http" | "https") => {
                let c = Candidate {
                    url,
                    path: format!("{}R", parent.path),
                    via: Some(parent.url.clone()),
                    attempts: 0,
                };
                self.log_unfetched(key, &c, status::OUT_OF_SCOPE, "scope:scheme");
            }
            _ => {}
        }
    }
}

impl Sched {
    /// Records what robots.txt of `origin` said (as fetched from `fetched_on`'s server); on
    /// failure schedules another try or gives the site up.
    pub(super) fn settle_robots(
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
    pub(super) fn hand_off_robots(&mut self, chase: RobotsChase, clock: Clock) {
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
    pub(super) fn resolved(&mut self, origin: &str, answer: Result<IpAddr, String>, clock: Clock) {
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
