//! When may the next request to a host go?
//!
//! Pure logic over an injected clock (`now` is always a parameter), so the 5 s floor, robots.txt
//! `Crawl-delay`, the delay factor and `Retry-After` are tested without waiting. The async loop in
//! `crawl` only sleeps until the instant this module names.

pub mod robots;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;
use std::time::{Duration, Instant, SystemTime};

/// The politeness floor for hosts that are not on loopback: no profile may go below it.
pub const MIN_DELAY_FLOOR: f64 = 5.0;

/// How long to wait between requests to one host.
#[derive(Debug, Clone, PartialEq)]
pub struct PolitenessSettings {
    pub min_delay: Duration,
    pub delay_factor: f64,
    pub max_delay: Duration,
    pub max_crawl_delay: Duration,
    pub max_retries: u32,
    /// One politeness budget per server IP address (default) or per host name.
    pub budget: BudgetKind,
    pub refusals: RefusalSettings,
}

/// What shares one politeness budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetKind {
    Ip,
    Host,
}

impl Default for PolitenessSettings {
    fn default() -> Self {
        PolitenessSettings {
            min_delay: Duration::from_secs(5),
            delay_factor: 5.0,
            max_delay: Duration::from_secs(30),
            max_crawl_delay: Duration::from_secs(300),
            max_retries: 3,
            budget: BudgetKind::Ip,
            refusals: RefusalSettings::default(),
        }
    }
}

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

/// The longest a budget's backoff pause can grow after 429 and 5xx answers.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30 * 60);

/// What an answer means for the pace of the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A normal answer (including 404 and other client errors).
    Fine,
    /// 429, a 5xx, or no answer at all: the server may be struggling.
    Overloaded,
}

/// The pause before the next request to a budget, and the budget's new backoff.
///
/// An overloaded answer doubles the backoff, starting from the current delay (`base`), up to
/// 30 minutes. A fine answer halves it; once it falls to `base` or below it is dropped, so the
/// pace returns to normal after a few good answers. A `Retry-After` sets the backoff itself: the
/// server said how long, and that pause holds from then on until good answers wear it down.
pub fn pause_after(
    backoff: &mut Duration,
    base: Duration,
    answer: Answer,
    retry_after: Option<Duration>,
) -> Duration {
    match answer {
        Answer::Overloaded => {
            *backoff = (*backoff).max(base).saturating_mul(2).min(MAX_BACKOFF);
        }
        Answer::Fine => {
            *backoff /= 2;
            if *backoff <= base {
                *backoff = Duration::ZERO;
            }
        }
    }
    if let Some(ra) = retry_after {
        *backoff = ra.min(MAX_RETRY_AFTER);
    }
    base.max(*backoff)
}

/// When a site keeps refusing us: how many refusals in a row, how long to stay away.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusalSettings {
    /// Refusals in a row that suspend a site.
    pub threshold: u32,
    /// Time away after the first suspension; doubled for each further round.
    pub away: Duration,
}

impl Default for RefusalSettings {
    fn default() -> Self {
        RefusalSettings {
            threshold: 5,
            away: Duration::from_secs(6 * 3600),
        }
    }
}

/// A site's record of refusals. Wall-clock times, because a suspension outlives the process.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Refusals {
    /// Refusals since the last answer that was not one.
    pub consecutive: u32,
    /// Suspensions so far.
    pub round: u32,
    /// Seconds since the Unix epoch until which the site is left alone.
    pub until: Option<u64>,
}

impl Refusals {
    /// Records an answer; returns the end of a new suspension when this refusal starts one.
    /// Round r (1, 2, …) stays away `away × 2^(r-1)`.
    pub fn record(&mut self, refused: bool, s: &RefusalSettings, now: SystemTime) -> Option<u64> {
        if !refused {
            self.consecutive = 0;
            return None;
        }
        self.consecutive += 1;
        if self.consecutive < s.threshold.max(1) {
            return None;
        }
        self.consecutive = 0;
        self.round += 1;
        let away = s
            .away
            .saturating_mul(2u32.saturating_pow(self.round.saturating_sub(1)));
        let until = epoch_secs(now).saturating_add(away.as_secs());
        self.until = Some(until);
        Some(until)
    }

    /// True while the site is suspended.
    pub fn suspended(&self, now: SystemTime) -> bool {
        self.until.is_some_and(|u| epoch_secs(now) < u)
    }

    /// How much slower than normal a site that has been suspended is crawled: ×2 per round.
    pub fn slowdown(&self) -> u32 {
        2u32.saturating_pow(self.round.min(10))
    }
}

/// Seconds since the Unix epoch (0 for a clock before 1970).
pub fn epoch_secs(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Is this answer a refusal? Returns the marker seen: 403 and 429, or a bot challenge or
/// captcha page recognised by its headers or its `<title>`. `body` is the decoded start of an
/// HTML body, if any. A plain 503 is an overloaded server, not a refusal.
pub fn refusal_marker(status: u16, headers: &hyper::HeaderMap, body: &[u8]) -> Option<String> {
    if let Some(marker) = challenge_header(headers) {
        return Some(marker);
    }
    if matches!(status, 403 | 429 | 503 | 200) {
        if let Some(title) = challenge_title(body) {
            return Some(format!("title:{title}"));
        }
    }
    matches!(status, 403 | 429).then(|| format!("status:{status}"))
}

/// Headers that bot-protection services set on their challenge pages.
fn challenge_header(headers: &hyper::HeaderMap) -> Option<String> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase)
    };
    if get("cf-mitigated").is_some_and(|v| v.contains("challenge")) {
        return Some("header:cf-mitigated".into());
    }
    if get("x-amzn-waf-action").is_some_and(|v| v.contains("captcha") || v.contains("challenge")) {
        return Some("header:x-amzn-waf-action".into());
    }
    if headers.contains_key("x-datadome") || headers.contains_key("x-datadome-cid") {
        return Some("header:x-datadome".into());
    }
    if get("server").is_some_and(|v| v.contains("ddos-guard")) && headers.contains_key("set-cookie")
    {
        return Some("header:server-ddos-guard".into());
    }
    None
}

/// Page titles of challenge and captcha pages (lower-case fragments).
const CHALLENGE_TITLES: &[&str] = &[
    "just a moment",
    "attention required",
    "captcha",
    "are you a robot",
    "are you human",
    "verify you are human",
    "human verification",
    "bot verification",
    "checking your browser",
    "ddos-guard",
    "access denied",
    "request blocked",
];

fn challenge_title(body: &[u8]) -> Option<&'static str> {
    let head = &body[..body.len().min(16 * 1024)];
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let start = text.find("<title")?;
    let open_end = text[start..].find('>')? + start + 1;
    let close = text[open_end..]
        .find("</title")
        .map_or(text.len(), |i| i + open_end);
    let title = &text[open_end..close];
    CHALLENGE_TITLES.iter().copied().find(|t| title.contains(t))
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
    /// When a budget may send its next request, and whether one is in flight (None: a budget
    /// never met). For status pages.
    pub fn next_at(&self, key: &K) -> Option<(Instant, bool)> {
        self.budgets.get(key).map(|b| (b.next_at, b.busy))
    }

    /// Says that `key` has work. A budget that is busy or already queued is left alone; true
    /// when the budget was queued by this call (so whoever waits for the next budget may have
    /// to look again).
    pub fn has_work(&mut self, key: &K, now: Instant) -> bool {
        // Looked up before inserting: most calls are for a known budget, and need no key copy.
        let budget = match self.budgets.get_mut(key) {
            Some(b) => b,
            None => self.budgets.entry(key.clone()).or_insert(Budget {
                next_at: now,
                busy: false,
                generation: 0,
                queued: false,
            }),
        };
        if budget.busy || budget.queued {
            return false;
        }
        budget.queued = true;
        budget.generation += 1;
        self.heap
            .push(Reverse((budget.next_at, budget.generation, key.clone())));
        true
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
            ..PolitenessSettings::default()
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

    #[test]
    fn overloaded_answers_double_the_pause_up_to_thirty_minutes() {
        let base = secs(5.0);
        let mut backoff = Duration::ZERO;
        let mut pauses = Vec::new();
        for _ in 0..12 {
            pauses.push(pause_after(&mut backoff, base, Answer::Overloaded, None).as_secs());
        }
        assert_eq!(&pauses[..5], &[10, 20, 40, 80, 160]);
        assert_eq!(*pauses.last().unwrap(), 1800);
        assert!(pauses.windows(2).all(|w| w[1] >= w[0]));
        // Good answers bring it down gradually: halved each time, then back to the base delay.
        let down: Vec<u64> = (0..12)
            .map(|_| pause_after(&mut backoff, base, Answer::Fine, None).as_secs())
            .collect();
        assert_eq!(&down[..3], &[900, 450, 225]);
        assert_eq!(*down.last().unwrap(), 5);
        assert_eq!(backoff, Duration::ZERO);
    }

    #[test]
    fn retry_after_becomes_the_pause_from_then_on() {
        let base = secs(5.0);
        let mut backoff = Duration::ZERO;
        let p = pause_after(&mut backoff, base, Answer::Overloaded, Some(secs(120.0)));
        assert_eq!(p, secs(120.0));
        // The next good answer halves it rather than dropping it at once.
        assert_eq!(
            pause_after(&mut backoff, base, Answer::Fine, None),
            secs(60.0)
        );
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let ra = parse_retry_after("Tue, 14 Nov 2023 22:23:20 GMT", now);
        let p = pause_after(&mut backoff, base, Answer::Overloaded, ra);
        assert_eq!(p, secs(600.0));
    }

    #[test]
    fn refusals_suspend_then_each_round_is_longer_and_slower() {
        let s = RefusalSettings::default();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut r = Refusals::default();
        for _ in 0..4 {
            assert_eq!(r.record(true, &s, t0), None);
        }
        // A good answer in between resets the count.
        r.record(false, &s, t0);
        for _ in 0..4 {
            assert_eq!(r.record(true, &s, t0), None);
        }
        let until = r.record(true, &s, t0).unwrap();
        assert_eq!(until, 1_000_000 + 6 * 3600);
        assert!(r.suspended(t0 + Duration::from_secs(6 * 3600 - 1)));
        assert!(!r.suspended(t0 + Duration::from_secs(6 * 3600)));
        assert_eq!(r.slowdown(), 2);
        let t1 = t0 + Duration::from_secs(7 * 3600);
        let until2 = (0..5).find_map(|_| r.record(true, &s, t1)).unwrap();
        assert_eq!(until2, 1_000_000 + 7 * 3600 + 12 * 3600);
        assert_eq!(r.slowdown(), 4);
    }

    #[test]
    fn refusal_markers() {
        let mut h = hyper::HeaderMap::new();
        assert_eq!(refusal_marker(403, &h, b""), Some("status:403".into()));
        assert_eq!(refusal_marker(429, &h, b""), Some("status:429".into()));
        assert_eq!(
            refusal_marker(503, &h, b"<title>Down for maintenance</title>"),
            None
        );
        assert_eq!(refusal_marker(404, &h, b""), None);
        assert_eq!(
            refusal_marker(503, &h, b"<html><TITLE>Just a moment...</TITLE>"),
            Some("title:just a moment".into())
        );
        assert_eq!(
            refusal_marker(200, &h, b"<title>Please complete the CAPTCHA</title>"),
            Some("title:captcha".into())
        );
        h.insert("cf-mitigated", "challenge".parse().unwrap());
        assert_eq!(
            refusal_marker(403, &h, b""),
            Some("header:cf-mitigated".into())
        );
    }
}
