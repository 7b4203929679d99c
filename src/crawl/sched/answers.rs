//! The rules that change a site when the crawl hears from it — an answer (its pause, a
//! `Retry-After` floor), a refusal (the count in a row, a suspension), no answer at all, the
//! bytes archived — and what the reports read of the sites. Each rule is one method of
//! [`Sched`], so a site's state changes only in the scheduler; what must be told (run.log
//! lines, the site book to save) goes to the outbox and is carried out by whoever holds the
//! scheduler, once its lock is released.

use std::time::{Duration, Instant, SystemTime};

use url::Url;

use super::{Clock, Pace, RoundRobin, Sched, Site};
use crate::frontier::FrontierError;
use crate::logs::report::Gauges;
use crate::politeness::{self, Answer};

/// What one answer tells the scheduler of its site.
#[derive(Debug, Clone, Copy)]
pub(in crate::crawl) struct Heard {
    /// When the answer ended: the pause counts from there.
    pub(in crate::crawl) end: Instant,
    /// From the request's start to the answer's end (slow servers get longer pauses).
    pub(in crate::crawl) took: Duration,
    pub(in crate::crawl) status: u16,
    /// The address that answered is a loopback one (the short test floor may apply).
    pub(in crate::crawl) from_loopback: bool,
    /// The answer's `Retry-After`, read against the wall clock.
    pub(in crate::crawl) retry_after: Option<Duration>,
}

/// 429 and 5xx slow the budget down; everything else is a normal answer.
fn answer_of(status: u16) -> Answer {
    if status == 429 || status >= 500 {
        Answer::Overloaded
    } else {
        Answer::Fine
    }
}

impl Sched {
    /// An answer came: a `Retry-After` larger than the site's floor becomes its floor (kept
    /// in the site book, saved at once: a crash must not forget what the site asked), and the
    /// pause before the site's next request is the politeness rules' for this answer, slowed
    /// down for a site suspended before, never under the floor.
    pub(in crate::crawl) fn record_answer(&mut self, origin: &str, heard: &Heard) -> Pace {
        if let Some(ra) = heard.retry_after {
            self.raise_floor(origin, ra);
        }
        let site = self.sites.get(origin);
        let loopback = site.is_some_and(Site::loopback) && heard.from_loopback;
        let crawl_delay = site.and_then(Site::crawl_delay);
        let slowdown = site.map_or(1, |s| s.refusals.slowdown());
        let floor = site.map_or(Duration::ZERO, |s| s.retry_after_floor);
        let settings = &self.limits.politeness;
        let base = politeness::delay_after(settings, loopback, heard.took, crawl_delay)
            .saturating_mul(slowdown)
            .max(floor);
        Pace {
            end: heard.end,
            base,
            answer: answer_of(heard.status),
            retry_after: heard.retry_after,
        }
    }

    /// A `Retry-After` becomes the site's floor: the pause from then on, never lowered.
    fn raise_floor(&mut self, origin: &str, retry_after: Duration) {
        let Some(site) = self.sites.get_mut(origin) else {
            return;
        };
        if retry_after <= site.retry_after_floor {
            return;
        }
        site.retry_after_floor = retry_after;
        let refusals = site.refusals.clone();
        self.share_facts(origin, &refusals, Some(retry_after));
        self.book.set_retry_after(origin, retry_after);
        self.queue_book_save();
        self.note(format!(
            "{origin}: Retry-After {:.3} s: the pause between requests to this site from now on",
            retry_after.as_secs_f64()
        ));
    }

    /// No answer at all (or a job that failed): the normal pause of the site, at least its
    /// floor, counted as an overloaded answer so the budget backs off.
    pub(in crate::crawl) fn record_failure(&mut self, origin: &str, end: Instant) -> Pace {
        let site = self.sites.get(origin);
        let floor = site.map_or(Duration::ZERO, |s| s.retry_after_floor);
        Pace {
            end,
            base: self.delay_floor(origin).max(floor),
            answer: Answer::Overloaded,
            retry_after: None,
        }
    }

    /// The shortest pause the profile allows for a site: its floor off loopback is 5 s.
    pub(in crate::crawl) fn delay_floor(&self, origin: &str) -> Duration {
        let loopback = self.sites.get(origin).is_some_and(Site::loopback);
        politeness::delay_after(&self.limits.politeness, loopback, Duration::ZERO, None)
    }

    /// Counts a refusal (`marker`: what refused), or a good answer, which resets the count;
    /// a site that keeps refusing is suspended (and so away) and run.log says until when.
    /// Returns the site's host when the answer was a refusal, for refusals.log.
    pub(in crate::crawl) fn record_refusal(
        &mut self,
        origin: &str,
        marker: Option<&str>,
        clock: Clock,
    ) -> Option<String> {
        let refused = marker.is_some();
        // With a shared frontier the count in a row is every worker's.
        let streak = self.shared_streak(origin, refused);
        let settings = &self.limits.politeness.refusals;
        let site = self.sites.get_mut(origin)?;
        if let Some(n) = streak {
            site.refusals.consecutive = n.saturating_sub(u32::from(refused));
        }
        let suspended = site.refusals.record(refused, settings, clock.wall);
        let refusals = site.refusals.clone();
        let host = site.host.clone();
        let threshold = settings.threshold;
        if refusals.until.is_some() {
            self.away.insert(origin.to_string());
        }
        self.book.set(origin, &refusals);
        if let Some(until) = suspended {
            self.share_facts(origin, &refusals, None);
            // The suspension starts a new count, for every worker.
            self.shared_streak(origin, false);
            // Saved at once, as a floor is: a crash must not send us straight back.
            self.queue_book_save();
            self.note(format!(
                "{origin}: {threshold} refusals in a row (last: {}); leaving the site alone \
                 until {} (round {}, then {}x slower)",
                marker.unwrap_or("?"),
                crate::logs::runlog::format_epoch(until),
                refusals.round,
                refusals.slowdown()
            ));
        }
        refused.then_some(host)
    }

    /// Body bytes archived from a site (for `max_bytes_per_site`).
    pub(in crate::crawl) fn record_archived(&mut self, origin: &str, bytes: u64) {
        if let Some(site) = self.sites.get_mut(origin) {
            site.archived_bytes += bytes;
        }
    }

    /// A page's visible text seen on a site: Some when it repeats pages already seen there
    /// under ever-new URLs (None also when the repeated-content rule is off).
    pub(in crate::crawl) fn observe_text(
        &mut self,
        origin: &str,
        url: &Url,
        hash: u64,
    ) -> Option<crate::scope::traps::Trap> {
        self.content_traps.as_mut()?.observe(origin, url, hash)
    }

    /// The seen-check of many URLs at once: true for each the seen-set had not met.
    pub(in crate::crawl) fn mark_seen_all(
        &mut self,
        urls: &[&Url],
    ) -> Result<Vec<bool>, FrontierError> {
        self.frontier.mark_seen_all(urls)
    }

    /// URLs queued in this worker's frontier.
    pub(in crate::crawl) fn total_queued(&self) -> usize {
        self.frontier.total_queued()
    }

    /// Each site with work and its queued URLs (for report.json).
    pub(in crate::crawl) fn queued_per_site(&mut self) -> Vec<(String, usize)> {
        let sites = self.frontier.sites_with_work().unwrap_or_default();
        sites
            .into_iter()
            .map(|origin| {
                let n = self.frontier.queued(&origin);
                (origin, n)
            })
            .collect()
    }

    /// A shared frontier's database calls and round trips so far in this run.
    pub(in crate::crawl) fn database_counts(&self) -> (u64, u64) {
        (
            self.frontier.database_calls(),
            self.frontier.database_round_trips(),
        )
    }

    /// The crawl's last save of the site book: when it changed since the last snapshot, or
    /// whatever changed when an earlier write failed (`rewrite`).
    pub(in crate::crawl) fn save_book_at_end(&mut self, rewrite: bool) {
        if rewrite {
            self.book.touch();
        }
        self.queue_book_save();
    }

    /// The site book goes to disk, once the lock is released (the outbox carries it).
    fn queue_book_save(&mut self) {
        if let Some(save) = self.book.snapshot() {
            self.out.book = Some(save);
        }
    }

    /// Where the sites stand, for the progress line.
    pub(in crate::crawl) fn gauges(&self, active: usize, wall: SystemTime) -> Gauges {
        let suspended = self
            .away
            .iter()
            .filter(|o| {
                self.sites
                    .get(*o)
                    .is_some_and(|s| s.refusals.suspended(wall))
            })
            .count();
        let waiting: usize = self.budgets.values().map(RoundRobin::len).sum();
        Gauges {
            active,
            waiting: waiting.saturating_sub(active),
            suspended,
            queued: self.frontier.total_queued(),
        }
    }

    /// Sites left suspended with work, and until when (for the report).
    pub(in crate::crawl) fn suspended_with_work(&self, wall: SystemTime) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (origin, site) in &self.sites {
            if site.refusals.suspended(wall) && self.frontier.queued(origin) > 0 {
                out.push((origin.clone(), site.refusals.until.unwrap_or(0)));
            }
        }
        out
    }
}
