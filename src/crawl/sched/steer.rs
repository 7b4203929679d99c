//! The scheduler's side of the operator's orders (`control/`): the compiled [`Steering`] it is
//! handed, the URLs it covers dropped (`-5000 … scope:operator`), held sites skipped, and the
//! per-site rows of the status page.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::{Clock, Job, Sched};
use crate::crawl::candidates::Dropped;
use crate::crawl::operator::rules::OPERATOR;
use crate::crawl::operator::Steering;
use crate::frontier::Candidate;
use crate::logs::crawllog::status;

/// One site as the status page shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(in crate::crawl) struct SiteRow {
    /// The origin (`http://host:port`).
    pub(in crate::crawl) site: String,
    pub(in crate::crawl) queued: usize,
    /// Seconds until its budget may send the next request (0: now).
    pub(in crate::crawl) next_in: f64,
    /// Why it waits: `held`, `refusals`, `retry-after`, `backoff`, `delay`, `in-flight`,
    /// `dns`, or `` when it does not.
    pub(in crate::crawl) waits: &'static str,
    pub(in crate::crawl) held: bool,
    /// The operator's delay, seconds.
    pub(in crate::crawl) min_delay: Option<f64>,
    pub(in crate::crawl) backoff: f64,
    pub(in crate::crawl) retry_after: f64,
    pub(in crate::crawl) refusals: u32,
    /// Seconds since the epoch until which it is left alone after refusals.
    pub(in crate::crawl) suspended_until: Option<u64>,
}

impl Job {
    /// The site the job's request goes to (its delay is the one the operator may raise).
    pub(in crate::crawl) fn origin(&self) -> &str {
        match self {
            Job::Robots { origin } | Job::Fetch { origin, .. } | Job::Chase { origin, .. } => {
                origin
            }
        }
    }
}

impl Sched {
    /// The operator's orders from now on.
    pub(in crate::crawl) fn steer(&mut self, steering: Arc<Steering>) {
        self.steering = steering;
        self.wake_dispatcher();
    }

    /// The crawl.log line of a URL an order covers, if one does.
    pub(super) fn excluded(&self, c: &Candidate) -> Option<Dropped> {
        let rule = self.steering.covers(&c.url)?;
        Some(Dropped {
            candidate: c.clone(),
            status: status::OUT_OF_SCOPE,
            why: OPERATOR,
            extra: Some(serde_json::json!({ "operator": rule })),
        })
    }

    /// Drops every queued URL of this worker's sites that the orders now cover, each with its
    /// line; the rest stay queued in their order. Returns how many were dropped.
    pub(in crate::crawl) fn drop_covered(&mut self, now: Instant) -> usize {
        let origins: Vec<String> = (self.sites.keys())
            .filter(|o| self.frontier.queued(o) > 0)
            .cloned()
            .collect();
        let mut dropped = 0;
        for origin in origins {
            let queue = match self.frontier.drain(&origin) {
                Ok(q) => q,
                Err(e) => {
                    self.fail(e);
                    return dropped;
                }
            };
            for c in queue {
                if let Some(d) = self.excluded(&c) {
                    self.out.drops.push(d);
                    dropped += 1;
                } else if let Err(e) = self.frontier.push_retry(&origin, c) {
                    self.fail(e);
                    return dropped;
                }
            }
        }
        self.commit(now);
        dropped
    }

    /// A site released (or its delay changed): back in its budget's turn if it has work.
    pub(in crate::crawl) fn site_back(&mut self, origin: &str, clock: Clock) {
        if self.has_work(origin) {
            self.mark_work(origin, clock);
        }
        self.wake_dispatcher();
    }

    /// True when this scheduler knows the site (met in this run, or queued).
    pub(in crate::crawl) fn knows(&self, origin: &str) -> bool {
        self.sites.contains_key(origin) || self.frontier.queued(origin) > 0
    }

    /// A held site still has work: the crawl waits for its release rather than ending.
    pub(in crate::crawl) fn held_with_work(&self) -> bool {
        self.steering.any_held()
            && (self.sites.keys()).any(|o| self.steering.held(o) && self.has_work(o))
    }

    /// Every site met in this run, for the status page.
    pub(in crate::crawl) fn site_rows(&self, now: Instant, wall: SystemTime) -> Vec<SiteRow> {
        let mut rows = Vec::with_capacity(self.sites.len());
        for (origin, site) in &self.sites {
            let next = (site.budget.as_ref()).and_then(|b| self.sched.next_at(b));
            let next_in = next.map_or(0.0, |(at, _)| {
                at.saturating_duration_since(now).as_secs_f64()
            });
            let backoff = (site.budget.as_ref())
                .and_then(|b| self.backoff.get(b))
                .copied()
                .unwrap_or(Duration::ZERO);
            let held = self.steering.held(origin);
            let queued = self.frontier.queued(origin);
            let waits = if held {
                "held"
            } else if site.refusals.suspended(wall) {
                "refusals"
            } else if site.budget.is_none() {
                "dns"
            } else if next.is_some_and(|(_, busy)| busy) {
                "in-flight"
            } else if next_in <= 0.0 || queued == 0 {
                ""
            } else if !site.retry_after_floor.is_zero() {
                "retry-after"
            } else if !backoff.is_zero() {
                "backoff"
            } else {
                "delay"
            };
            rows.push(SiteRow {
                site: origin.clone(),
                queued,
                next_in,
                waits,
                held,
                min_delay: self.steering.delay(origin).map(|d| d.as_secs_f64()),
                backoff: backoff.as_secs_f64(),
                retry_after: site.retry_after_floor.as_secs_f64(),
                refusals: site.refusals.consecutive,
                suspended_until: site.refusals.until,
            });
        }
        rows.sort_by(|a, b| a.site.cmp(&b.site));
        rows
    }
}
