//! When may the next request to a host go?
//!
//! Pure logic over an injected clock (`now` is always a parameter), so the 5 s floor, robots.txt
//! `Crawl-delay`, the delay factor and `Retry-After` are tested without waiting. The async loop in
//! `crawl` only sleeps until the instant this module names.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;
use std::time::{Duration, Instant, SystemTime};

use crate::profile::{PolitenessSettings, MIN_DELAY_FLOOR};

/// The longest pause a `Retry-After` header can impose; longer values are capped, not obeyed
/// blindly, so one odd header cannot park a site for days.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30 * 60);

/// How long to wait after a fetch that took `fetch_time`, before the next request to the host.
///
/// `max(min_delay, delay_factor × fetch_time capped at max_delay)`, then at least the robots.txt
/// Crawl-delay (itself capped at `max_crawl_delay`: a Crawl-delay may exceed `max_delay`).
/// Hosts not on loopback never go below the 5 s floor, whatever the settings say.
pub fn delay_after(
    settings: &PolitenessSettings,
    loopback: bool,
    fetch_time: Duration,
    crawl_delay: Option<Duration>,
) -> Duration {
    let floor = if loopback {
        settings.min_delay
    } else {
        settings
            .min_delay
            .max(Duration::from_secs_f64(MIN_DELAY_FLOOR))
    };
    // try_from_secs_f64 refuses overflow and NaN; both mean "very long", so max_delay.
    let factor = Duration::try_from_secs_f64(fetch_time.as_secs_f64() * settings.delay_factor)
        .unwrap_or(settings.max_delay)
        .min(settings.max_delay);
    let mut delay = floor.max(factor);
    if let Some(cd) = crawl_delay {
        delay = delay.max(cd.min(settings.max_crawl_delay));
    }
    delay
}

/// Parses a `Retry-After` value: delay-seconds or an HTTP date. Nonsense gives None (the caller
/// then uses its own backoff); a date in the past gives zero; everything is capped.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let when = SystemTime::from(when);
    Some(
        when.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_RETRY_AFTER),
    )
}

/// One politeness budget (a host now; a server IP address later).
#[derive(Debug)]
struct Budget {
    next_at: Instant,
    busy: bool,
    /// Bumped whenever the budget's heap entry is replaced, so stale entries are skipped.
    generation: u64,
    queued: bool,
}

/// Chooses which budget may send a request next: one request at a time per budget, none before
/// its `next_at`. A binary heap ordered by `next_at` keeps this O(log n) for thousands of hosts,
/// with no timer or task per host.
#[derive(Debug)]
pub struct Scheduler<K: Clone + Eq + Hash + Ord> {
    budgets: HashMap<K, Budget>,
    heap: BinaryHeap<Reverse<(Instant, u64, K)>>,
    busy: usize,
}

impl<K: Clone + Eq + Hash + Ord> Default for Scheduler<K> {
    fn default() -> Self {
        Scheduler {
            budgets: HashMap::new(),
            heap: BinaryHeap::new(),
            busy: 0,
        }
    }
}

/// What the scheduler says when asked for work.
#[derive(Debug, PartialEq, Eq)]
pub enum Next<K> {
    /// This budget may send one request now; it is busy until `release`.
    Go(K),
    /// Nothing may go before this instant.
    Wait(Instant),
    /// Nothing is waiting, but requests are in flight: wait for one to finish.
    Idle,
    /// Nothing is waiting and nothing is in flight.
    Done,
}

impl<K: Clone + Eq + Hash + Ord> Scheduler<K> {
    /// Says that `key` has work. A budget that is busy or already queued is left alone.
    pub fn has_work(&mut self, key: &K, now: Instant) {
        let budget = self.budgets.entry(key.clone()).or_insert(Budget {
            next_at: now,
            busy: false,
            generation: 0,
            queued: false,
        });
        if budget.busy || budget.queued {
            return;
        }
        budget.queued = true;
        budget.generation += 1;
        self.heap
            .push(Reverse((budget.next_at, budget.generation, key.clone())));
    }

    /// The next budget allowed to go at `now`, or how long to wait.
    pub fn next(&mut self, now: Instant) -> Next<K> {
        while let Some(Reverse((at, generation, key))) = self.heap.peek().cloned() {
            let Some(budget) = self.budgets.get_mut(&key) else {
                self.heap.pop();
                continue;
            };
            if budget.generation != generation || !budget.queued {
                self.heap.pop();
                continue;
            }
            if at > now {
                return Next::Wait(at);
            }
            self.heap.pop();
            budget.queued = false;
            budget.busy = true;
            self.busy += 1;
            return Next::Go(key);
        }
        if self.busy > 0 {
            Next::Idle
        } else {
            Next::Done
        }
    }

    /// Ends a request on `key`: nothing may go before `next_at`; requeue if it has more work.
    pub fn release(&mut self, key: &K, next_at: Instant, more_work: bool) {
        if let Some(budget) = self.budgets.get_mut(key) {
            if budget.busy {
                budget.busy = false;
                self.busy -= 1;
            }
            budget.next_at = budget.next_at.max(next_at);
        }
        if more_work {
            self.has_work(key, next_at);
        }
    }

    /// Pushes a budget's earliest next request back to at least `until` (e.g. `Retry-After`).
    pub fn pause(&mut self, key: &K, until: Instant) {
        if let Some(budget) = self.budgets.get_mut(key) {
            budget.next_at = budget.next_at.max(until);
            if budget.queued {
                budget.generation += 1;
                self.heap
                    .push(Reverse((budget.next_at, budget.generation, key.clone())));
            }
        }
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(min: f64, factor: f64, max: f64) -> PolitenessSettings {
        PolitenessSettings {
            min_delay: Duration::from_secs_f64(min),
            delay_factor: factor,
            max_delay: Duration::from_secs_f64(max),
            max_crawl_delay: Duration::from_secs(300),
            max_retries: 3,
        }
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn five_second_floor_off_loopback_even_if_settings_say_less() {
        let s = settings(0.0, 0.0, 30.0);
        assert_eq!(delay_after(&s, false, secs(0.01), None), secs(5.0));
        assert_eq!(delay_after(&s, true, secs(0.01), None), secs(0.0));
    }

    #[test]
    fn factor_times_fetch_time_capped_by_max_delay() {
        let s = settings(5.0, 5.0, 30.0);
        assert_eq!(delay_after(&s, false, secs(2.0), None), secs(10.0));
        assert_eq!(delay_after(&s, false, secs(20.0), None), secs(30.0));
        assert_eq!(delay_after(&s, false, secs(0.1), None), secs(5.0));
    }

    #[test]
    fn crawl_delay_may_exceed_max_delay_up_to_its_cap() {
        let s = settings(5.0, 5.0, 30.0);
        assert_eq!(
            delay_after(&s, false, secs(0.1), Some(secs(60.0))),
            secs(60.0)
        );
        assert_eq!(
            delay_after(&s, false, secs(0.1), Some(secs(9999.0))),
            secs(300.0)
        );
        assert_eq!(
            delay_after(&s, false, secs(0.1), Some(secs(1.0))),
            secs(5.0)
        );
    }

    #[test]
    fn retry_after_both_forms_and_nonsense() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("120", now), Some(secs(120.0)));
        assert_eq!(parse_retry_after("999999", now), Some(MAX_RETRY_AFTER));
        // 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
        assert_eq!(
            parse_retry_after("Tue, 14 Nov 2023 22:14:20 GMT", now),
            Some(secs(60.0))
        );
        assert_eq!(
            parse_retry_after("Tue, 14 Nov 2023 20:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
    }

    #[test]
    fn one_request_at_a_time_per_budget_and_delay_respected() {
        let t0 = Instant::now();
        let mut s: Scheduler<&str> = Scheduler::default();
        s.has_work(&"a", t0);
        s.has_work(&"b", t0);
        let first = s.next(t0);
        let second = s.next(t0);
        assert!(matches!(first, Next::Go(_)) && matches!(second, Next::Go(_)));
        assert_eq!(s.next(t0), Next::Idle);
        // "a" has more work but must wait 5 s from the end of its response.
        s.release(&"a", t0 + secs(5.0), true);
        s.has_work(&"a", t0); // saying it again changes nothing
        assert_eq!(s.next(t0 + secs(1.0)), Next::Wait(t0 + secs(5.0)));
        assert_eq!(s.next(t0 + secs(5.0)), Next::Go("a"));
        s.release(&"a", t0 + secs(10.0), false);
        s.release(&"b", t0 + secs(10.0), false);
        assert_eq!(s.next(t0 + secs(6.0)), Next::Done);
    }

    #[test]
    fn pause_pushes_a_queued_budget_back() {
        let t0 = Instant::now();
        let mut s: Scheduler<u32> = Scheduler::default();
        s.has_work(&1, t0);
        s.pause(&1, t0 + secs(60.0));
        assert_eq!(s.next(t0 + secs(1.0)), Next::Wait(t0 + secs(60.0)));
        assert_eq!(s.next(t0 + secs(60.0)), Next::Go(1));
    }
}
