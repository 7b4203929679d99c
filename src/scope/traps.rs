//! Crawler traps: URLs and pages that would keep a crawl busy forever without adding anything
//! worth archiving.
//!
//! Three independent layers, all pure logic (no I/O, no clock except where named):
//!
//! 1. [`url_trap`] judges a discovered URL by its text alone, before it is queued. Its rules
//!    and thresholds are listed on [`UrlTrapRules`].
//! 2. `session::strip_session_ids` removes session ids from a URL so the seen-set treats
//!    `…;jsessionid=A` and `…;jsessionid=B` as one URL (a server that hands every visit a new
//!    session id would otherwise make every page "new" forever).
//! 3. [`ContentTraps`] watches fetched pages: many pages with the very same text reached under
//!    ever-new URLs (a soft-404 page behind every path, an error page for any query) are a
//!    trap, and the links of further such pages are not followed. Pages that differ only in
//!    their numbers (a templated catalogue, pagination, a chain of styled pages) are different
//!    pages: the crawl compares [`text_hash`]es, which see every word and number.
//!
//! The layers back each other up: the URL rules are cheap and catch the common shapes early,
//! the content rule catches what no URL rule can describe (e.g. calendar pages inside the
//! plausible date window, which the URL rule must let through so blog archives survive).

use std::collections::{BTreeMap, HashMap};

use chrono::Datelike;
use url::Url;

/// Why a URL or a page was judged a trap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trap {
    /// The rule's name, written to crawl.log annotations (e.g. `trap:repeated-segment`).
    pub rule: &'static str,
    /// What exactly matched, for people reading logs (e.g. `segment "a/b" 3 times in a row`).
    pub detail: String,
}

impl Trap {
    fn new(rule: &'static str, detail: impl Into<String>) -> Trap {
        Trap {
            rule,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Trap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.rule, self.detail)
    }
}

/// Rule names (crawl.log annotations), one per rule.
pub const LONG_URL: &str = "trap:long-url";
pub const DEEP_PATH: &str = "trap:deep-path";
pub const MANY_PARAMS: &str = "trap:many-params";
pub const REPEATED_PARAM: &str = "trap:repeated-param";
pub const REPEATED_SEGMENT: &str = "trap:repeated-segment";
pub const CALENDAR: &str = "trap:calendar";
pub const REPEATED_CONTENT: &str = "trap:repeated-content";

// ---------------------------------------------------------------------------------------------
// URL rules
// ---------------------------------------------------------------------------------------------

/// The URL trap rules and their thresholds. [`url_trap`] uses [`UrlTrapRules::for_year`] with
/// the current year; the crawl may build its own (e.g. from a profile) and call [`check`].
///
/// Rules, in the order they are checked (the first that matches names the trap):
///
/// | rule | matches when |
/// | --- | --- |
/// | `trap:long-url` | the URL is longer than `max_url_chars` (2,000) characters |
/// | `trap:deep-path` | the path has more than `max_path_segments` (40) segments |
/// | `trap:many-params` | the query has more than `max_query_params` (30) parameters |
/// | `trap:repeated-param` | one `name=value` pair occurs `param_repeats` (3) or more times in the query |
/// | `trap:repeated-segment` | a run of 1, 2 or 3 segments occurs `segment_repeats` (3) times back to back (`/a/a/a/`, `/a/b/a/b/a/b/`), or one segment that is not all digits occurs `segment_repeats` (3) times anywhere in the path (`/x/p/y/p/z/p`) |
///
/// A threshold of 0 turns its rule off, and so does `calendar = false` (see [`TrapSettings`],
/// the profile's `[traps]` table).
/// | `trap:calendar` | a date in the path or query has a year after `max_year` (current year + 2), or a month-or-day date has a year before `min_calendar_year` (1990), or a bare year (`?year=`) is before `min_bare_year` (1000) |
///
/// Segments are the path's `/`-separated parts without the empty one a trailing `/` leaves;
/// they are compared as written (percent-encoding and case kept), and the empty segments of
/// `//` count like any other (`/a//b//c//` is a trap: a path-appending bug).
///
/// Dates recognised by `trap:calendar` (months 1–12, days 1–31):
/// - path: a 4-digit segment followed by a month segment, `/2026/11/` or `/2026/11/30/` (a
///   one-digit month, `/2026/1/`, only when the path mentions a calendar word such as
///   `calendar`, `event`, `archive`, `date`, `day`, `month`, `year`); an ISO date inside a
///   segment, `/events/2031-01-01` or `/log-2031-01-01.html`;
/// - query: `year=`/`yr=` (a bare year, or a month-level date when `month=`/`mon=`/`mm=`/`mo=`
///   is present too); keys that name a date (containing `date`, or `day`, `d`, `dt`, `from`,
///   `to`, `start`, `end`, `since`, `until`, `when`, `on`) with a value `2031-01-01`,
///   `2031-01`, `2031/01/01`, `2031/01`, `20310101` or `203101`; any other value that is an ISO
///   date `YYYY-MM-DD`.
///
/// Why this window: an endless calendar is a page with "next month"/"previous month" links
/// that a server renders for any date, so a crawl walks it into the far future or the distant
/// past. Nothing dated years ahead is worth archiving, and a month-by-month walk back reaches
/// 1990 only after hundreds of pages; ordinary blog and news archives (`/2024/05/`) sit inside
/// the window and pass. Bare years get the wider bound because catalogues list by year
/// (`?year=1950`); a year-by-year calendar walk inside the window is left to
/// [`ContentTraps`], which sees that its pages look alike. Archives of old newspapers dated
/// before 1990 need a lower `min_calendar_year`.
///
/// Why the other thresholds: real URLs stay far below them (browsers and servers commonly cap
/// URLs near 2,000 characters; documentation trees rarely pass 15 segments), while relative-link
/// bugs (`href="a/"` resolved against `/a/`), echoed parameters and path-appending soft-404
/// pages grow without end and soon cross them.
///
/// [`check`]: UrlTrapRules::check
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlTrapRules {
    pub max_url_chars: usize,
    pub max_path_segments: usize,
    pub max_query_params: usize,
    /// How often a query pair may occur before it is a trap.
    pub param_repeats: usize,
    /// How often a segment run may occur before it is a trap.
    pub segment_repeats: usize,
    /// `trap:calendar` is checked.
    pub calendar: bool,
    pub min_calendar_year: i64,
    pub min_bare_year: i64,
    pub max_year: i64,
}

impl UrlTrapRules {
    /// The default thresholds, with the date window ending `current_year + 2`.
    pub fn for_year(current_year: i32) -> UrlTrapRules {
        UrlTrapRules {
            max_url_chars: 2000,
            max_path_segments: 40,
            max_query_params: 30,
            param_repeats: 3,
            segment_repeats: 3,
            calendar: true,
            min_calendar_year: 1990,
            min_bare_year: 1000,
            max_year: i64::from(current_year) + 2,
        }
    }

    /// The rules a profile's `[traps]` table asks for, with the date window ending
    /// `current_year + calendar_years_ahead`; None when `enabled = false`.
    pub fn from_settings(s: &TrapSettings, current_year: i32) -> Option<UrlTrapRules> {
        s.enabled.then(|| UrlTrapRules {
            max_url_chars: s.max_url_chars,
            max_path_segments: s.max_path_segments,
            max_query_params: s.max_query_params,
            param_repeats: s.repeated_param,
            segment_repeats: s.repeated_segment,
            calendar: s.calendar,
            min_calendar_year: s.calendar_min_year,
            min_bare_year: s.calendar_min_bare_year,
            max_year: i64::from(current_year).saturating_add(s.calendar_years_ahead),
        })
    }

    /// The first rule the URL breaks, if any. Cheap (linear in the URL's length), so it can
    /// run on every discovered link.
    pub fn check(&self, url: &Url) -> Option<Trap> {
        let chars = url.as_str().chars().count();
        if self.max_url_chars > 0 && chars > self.max_url_chars {
            return Some(Trap::new(
                LONG_URL,
                format!("{chars} characters > {}", self.max_url_chars),
            ));
        }
        let segments = path_segments(url);
        if self.max_path_segments > 0 && segments.len() > self.max_path_segments {
            return Some(Trap::new(
                DEEP_PATH,
                format!(
                    "{} path segments > {}",
                    segments.len(),
                    self.max_path_segments
                ),
            ));
        }
        self.query_trap(url)
            .or_else(|| self.repeated_segments(&segments))
            .or_else(|| {
                self.calendar
                    .then(|| self.calendar(url, &segments))
                    .flatten()
            })
    }

    fn query_trap(&self, url: &Url) -> Option<Trap> {
        let pairs: Vec<&str> = url
            .query()
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
            .collect();
        if self.max_query_params > 0 && pairs.len() > self.max_query_params {
            return Some(Trap::new(
                MANY_PARAMS,
                format!(
                    "{} query parameters > {}",
                    pairs.len(),
                    self.max_query_params
                ),
            ));
        }
        if self.param_repeats == 0 {
            return None;
        }
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for pair in &pairs {
            let n = counts.entry(pair).or_default();
            *n += 1;
            if *n >= self.param_repeats {
                return Some(Trap::new(
                    REPEATED_PARAM,
                    format!("{:?} {} times in the query", clip(pair), self.param_repeats),
                ));
            }
        }
        None
    }

    fn repeated_segments(&self, segs: &[&str]) -> Option<Trap> {
        if self.segment_repeats == 0 {
            return None;
        }
        let repeats = self.segment_repeats.max(2);
        for len in 1..=3 {
            let span = len * repeats;
            if segs.len() < span {
                break;
            }
            for start in 0..=segs.len() - span {
                let run = &segs[start..start + len];
                let again = (1..repeats).all(|k| {
                    let at = start + k * len;
                    &segs[at..at + len] == run
                });
                if again {
                    return Some(Trap::new(
                        REPEATED_SEGMENT,
                        format!("{:?} {repeats} times in a row", clip(&run.join("/"))),
                    ));
                }
            }
        }
        // Digits-only segments are left out here: dates (`/2001/01/01/`) and ids repeat
        // numbers legitimately. Their back-to-back repetition is still caught above.
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for seg in segs.iter().filter(|s| !is_digits(s)) {
            let n = counts.entry(seg).or_default();
            *n += 1;
            if *n >= repeats {
                return Some(Trap::new(
                    REPEATED_SEGMENT,
                    format!("{:?} {repeats} times in the path", clip(seg)),
                ));
            }
        }
        None
    }

    fn calendar(&self, url: &Url, segs: &[&str]) -> Option<Trap> {
        let mut found: Option<Trap> = None;
        let mut judge = |date: FoundDate, place: &str| {
            if found.is_none() {
                found = self.judge_date(date, place);
            }
        };
        for date in path_dates(segs) {
            judge(date, "path");
        }
        for (date, key) in query_dates(url) {
            judge(date, &format!("query {key:?}"));
        }
        found
    }

    fn judge_date(&self, date: FoundDate, place: &str) -> Option<Trap> {
        let year = date.year;
        let (low, kind) = if date.month_level {
            (self.min_calendar_year, "date")
        } else {
            (self.min_bare_year, "year")
        };
        if year > self.max_year || year < low {
            return Some(Trap::new(
                CALENDAR,
                format!(
                    "{kind} with year {year} in the {place}, outside {low}..={}",
                    self.max_year
                ),
            ));
        }
        None
    }
}

/// The profile's `[traps]` table: every trap rule can be tuned or turned off.
///
/// Defaults are the thresholds documented on [`UrlTrapRules`] and [`ContentTraps`]. A
/// threshold of 0 turns its rule off; `enabled = false` turns every rule off (session ids are
/// still stripped: that never drops a page, it only keeps one page from being fetched twice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrapSettings {
    pub enabled: bool,
    /// `trap:long-url`: most characters of a URL.
    pub max_url_chars: usize,
    /// `trap:deep-path`: most path segments.
    pub max_path_segments: usize,
    /// `trap:many-params`: most query parameters.
    pub max_query_params: usize,
    /// `trap:repeated-param`: occurrences of one `name=value` pair that make a trap.
    pub repeated_param: usize,
    /// `trap:repeated-segment`: repetitions of a segment run that make a trap.
    pub repeated_segment: usize,
    /// `trap:calendar` on or off, and its date window.
    pub calendar: bool,
    pub calendar_years_ahead: i64,
    pub calendar_min_year: i64,
    pub calendar_min_bare_year: i64,
    /// `trap:repeated-content`: pages with the same text under one path prefix before every
    /// further one is a trap.
    pub repeated_content: u32,
}

impl Default for TrapSettings {
    fn default() -> Self {
        TrapSettings {
            enabled: true,
            max_url_chars: 2000,
            max_path_segments: 40,
            max_query_params: 30,
            repeated_param: 3,
            repeated_segment: 3,
            calendar: true,
            calendar_years_ahead: 2,
            calendar_min_year: 1990,
            calendar_min_bare_year: 1000,
            repeated_content: 20,
        }
    }
}

/// The URL rules with default thresholds and this year's date window: the first rule the URL
/// breaks, or None. See [`UrlTrapRules`] for every rule and threshold.
pub fn url_trap(url: &Url) -> Option<Trap> {
    UrlTrapRules::for_year(chrono::Utc::now().year()).check(url)
}

/// Path segments without the empty last one a trailing slash leaves (`/a/b/` → `a`, `b`).
fn path_segments(url: &Url) -> Vec<&str> {
    let mut segs: Vec<&str> = url.path_segments().map(|s| s.collect()).unwrap_or_default();
    if segs.last() == Some(&"") {
        segs.pop();
    }
    segs
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// At most 60 characters of a matched piece, so a trap on a 2 MB URL logs a short detail.
fn clip(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A date found in a URL: its year, and whether it names a month or day (a calendar page)
/// rather than a bare year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FoundDate {
    year: i64,
    month_level: bool,
}

fn month_date(year: i64) -> FoundDate {
    FoundDate {
        year,
        month_level: true,
    }
}

/// Words that make a one-digit month segment (`/2026/1/`) count as a date.
const CALENDAR_WORDS: &[&str] = &[
    "calendar", "kalender", "agenda", "event", "archive", "schedule", "diary", "date", "day",
    "month", "year",
];

fn path_dates(segs: &[&str]) -> Vec<FoundDate> {
    let calendar_words = segs.iter().any(|s| {
        let s = s.to_ascii_lowercase();
        CALENDAR_WORDS.iter().any(|w| s.contains(w))
    });
    let mut dates = Vec::new();
    for (i, seg) in segs.iter().enumerate() {
        if seg.len() == 4 && is_digits(seg) {
            if let (Ok(year), Some(next)) = (seg.parse::<i64>(), segs.get(i + 1)) {
                let padded = next.len() == 2;
                let short = next.len() == 1 && calendar_words;
                if (padded || short) && is_month(next) {
                    dates.push(month_date(year));
                }
            }
        }
        dates.extend(iso_dates(seg).map(month_date));
    }
    dates
}

fn is_month(s: &str) -> bool {
    is_digits(s) && matches!(s.parse::<u32>(), Ok(1..=12))
}

fn is_day(s: &str) -> bool {
    is_digits(s) && matches!(s.parse::<u32>(), Ok(1..=31))
}

/// Years of the `YYYY-MM-DD` dates inside a text, each not touching other digits.
fn iso_dates(text: &str) -> impl Iterator<Item = i64> + '_ {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(9)).filter_map(move |i| {
        let w = &b[i..i + 10];
        let shape = w.iter().enumerate().all(|(k, c)| {
            if k == 4 || k == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
        let alone_before = i == 0 || !b[i - 1].is_ascii_digit();
        let alone_after = b.get(i + 10).is_none_or(|c| !c.is_ascii_digit());
        if !(shape && alone_before && alone_after) {
            return None;
        }
        let s = &text[i..i + 10];
        (is_month(&s[5..7]) && is_day(&s[8..10]))
            .then(|| s[..4].parse().ok())
            .flatten()
    })
}

const YEAR_KEYS: &[&str] = &["year", "yr"];
const MONTH_KEYS: &[&str] = &["month", "mon", "mm", "mo"];
const DATE_KEYS: &[&str] = &[
    "day", "d", "dt", "from", "to", "start", "end", "since", "until", "when", "on",
];

fn query_dates(url: &Url) -> Vec<(FoundDate, String)> {
    if url.query().is_none() {
        return Vec::new();
    }
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let has_month = pairs.iter().any(|(k, _)| MONTH_KEYS.contains(&k.as_str()));
    let mut dates = Vec::new();
    for (key, value) in &pairs {
        if YEAR_KEYS.contains(&key.as_str()) {
            if let Some(year) = plain_year(value) {
                let date = FoundDate {
                    year,
                    month_level: has_month,
                };
                dates.push((date, key.clone()));
            }
        } else if key.contains("date") || DATE_KEYS.contains(&key.as_str()) {
            if let Some(year) = date_value(value) {
                dates.push((month_date(year), key.clone()));
            }
        } else {
            dates.extend(iso_dates(value).map(|y| (month_date(y), key.clone())));
        }
    }
    dates
}

/// A year written as a whole number (`2031`, `-44`); longer numbers are ids, not years.
fn plain_year(value: &str) -> Option<i64> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    if !is_digits(digits) || digits.len() > 6 {
        return None;
    }
    value.parse().ok()
}

/// The year of a date-valued parameter: `YYYY-MM-DD`, `YYYY-MM`, `YYYY/MM/DD`, `YYYY/MM`,
/// `YYYYMMDD` or `YYYYMM` (a time may follow after `T` or a space).
fn date_value(value: &str) -> Option<i64> {
    let date = value.split(['T', ' ']).next().unwrap_or("");
    let parts: Vec<&str> = date.split(['-', '/']).collect();
    let (year, month, day) = match parts.as_slice() {
        [y, m] => (*y, *m, None),
        [y, m, d] => (*y, *m, Some(*d)),
        [compact] if is_digits(compact) && compact.len() == 8 => {
            (&compact[..4], &compact[4..6], Some(&compact[6..]))
        }
        [compact] if is_digits(compact) && compact.len() == 6 => {
            (&compact[..4], &compact[4..], None)
        }
        _ => return None,
    };
    let ok = year.len() == 4
        && is_digits(year)
        && month.len() == 2
        && is_month(month)
        && day.is_none_or(|d| d.len() == 2 && is_day(d));
    ok.then(|| year.parse().ok()).flatten()
}

// ---------------------------------------------------------------------------------------------
// Page text and its hash
// ---------------------------------------------------------------------------------------------

/// Visible text is cut at this many bytes: enough to tell pages apart, and a 100 MB page
/// costs no more memory than this.
pub const MAX_VISIBLE_TEXT: usize = 1 << 20;

/// The visible text of an HTML page as fetched, for [`text_hash`]: one line per block, at
/// most [`MAX_VISIBLE_TEXT`] bytes (see `extract::text`). Never fails.
pub fn visible_text(html: &[u8]) -> String {
    crate::extract::text::page_text(html, MAX_VISIBLE_TEXT)
}

/// A hash of a text's words and numbers, in order (case and punctuation ignored): equal only
/// for pages that say exactly the same thing, so that templated pages differing in a price, a
/// page number or an id are never taken for copies of each other.
pub fn text_hash(text: &str) -> u64 {
    const SEED: u64 = 0x9e37_79b9_7f4a_7c15;
    if text.is_ascii() {
        // The same words and the same hash, a byte at a time: for ASCII, `is_alphanumeric`
        // and `to_lowercase` are their `ascii` forms (`text_hash_of_ascii_takes_the_short_way`).
        return text
            .as_bytes()
            .split(|b| !b.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .fold(SEED, |acc, w| mix(acc ^ ascii_word_hash(w)));
    }
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .fold(SEED, |acc, w| mix(acc ^ word_hash(w)))
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over the lower-cased word.
fn word_hash(word: &str) -> u64 {
    if word.is_ascii() {
        return ascii_word_hash(word.as_bytes());
    }
    let mut h = FNV_OFFSET;
    let mut buf = [0u8; 4];
    for c in word.chars().flat_map(char::to_lowercase) {
        for b in c.encode_utf8(&mut buf).bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(FNV_PRIME);
        }
    }
    h
}

/// [`word_hash`] of an ASCII word.
fn ascii_word_hash(word: &[u8]) -> u64 {
    word.iter().fold(FNV_OFFSET, |h, b| {
        (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(FNV_PRIME)
    })
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

// ---------------------------------------------------------------------------------------------
// Repeated content
// ---------------------------------------------------------------------------------------------

/// Finds pages that repeat themselves under ever-new URLs.
///
/// Pages of one site are grouped by path prefix: the path without its last segment, query
/// ignored (`/cal/view?d=1` and `/cal/list?d=2` share `/cal/`). Within a group, pages with the
/// same text hash ([`text_hash`]) form a cluster. When a cluster already holds `max_pages` pages (20), every further page that
/// joins it is a trap (`trap:repeated-content`): the crawl archives it but does not follow its
/// links. Following them would mostly re-find links already seen; the new ones are exactly
/// the "next date"/"next page" links that lead deeper into the trap.
///
/// Memory is bounded: at most `clusters_per_site` (1,024) clusters per site, 32 bytes each;
/// when full, the cluster with the fewest pages goes (the least recently matched among equals),
/// so growing clusters survive a stream of unique pages. At most `max_sites` (1,024) sites are
/// tracked; a new site beyond that evicts the least recently observed one. Call
/// [`ContentTraps::forget_site`] when a site is finished. Counts live in memory only: after a
/// resume they start again from zero, which delays detection but never breaks it.
///
/// Call [`ContentTraps::observe`] once per fetched HTML page (not for retries of one URL),
/// with `text_hash(&visible_text(body))`.
#[derive(Debug)]
pub struct ContentTraps {
    max_pages: u32,
    clusters_per_site: usize,
    max_sites: usize,
    sites: HashMap<String, SiteClusters>,
    /// Each tracked site under its `last_used` tick (ticks are unique): the least recently
    /// observed site is the first entry. With more sites than `max_sites` (10,000 in the
    /// many-sites bench) a site is evicted on almost every page; finding it by a scan of all
    /// sites cost more than the rest of the page's trap check.
    by_use: BTreeMap<u64, String>,
    tick: u64,
}

#[derive(Debug, Default)]
struct SiteClusters {
    clusters: Vec<Cluster>,
    last_used: u64,
}

#[derive(Debug, Clone, Copy)]
struct Cluster {
    prefix: u64,
    text_hash: u64,
    pages: u32,
    last_used: u64,
}

impl Default for ContentTraps {
    fn default() -> Self {
        ContentTraps::new(20, 1024, 1024)
    }
}

impl ContentTraps {
    /// A detector with its own thresholds (see the type's documentation for the defaults).
    /// Caps below 1 are raised to 1.
    pub fn new(max_pages: u32, clusters_per_site: usize, max_sites: usize) -> ContentTraps {
        ContentTraps {
            max_pages,
            clusters_per_site: clusters_per_site.max(1),
            max_sites: max_sites.max(1),
            sites: HashMap::new(),
            by_use: BTreeMap::new(),
            tick: 0,
        }
    }

    /// Records a fetched page of `site` (its origin); returns the trap when the page is one
    /// more copy of at least `max_pages` earlier pages under the same path prefix.
    pub fn observe(&mut self, site: &str, url: &Url, text_hash: u64) -> Option<Trap> {
        self.tick += 1;
        let tick = self.tick;
        let prefix_text = path_prefix(url);
        let prefix = word_hash(prefix_text);
        let cap = self.clusters_per_site;
        let entry = self.touch(site, tick)?;
        let same = entry
            .clusters
            .iter_mut()
            .find(|c| c.prefix == prefix && c.text_hash == text_hash);
        if let Some(cluster) = same {
            let earlier = cluster.pages;
            cluster.pages = cluster.pages.saturating_add(1);
            cluster.last_used = tick;
            return (earlier >= self.max_pages).then(|| {
                Trap::new(
                    REPEATED_CONTENT,
                    format!(
                        "{} earlier pages under {:?} with the same text as this one",
                        earlier,
                        clip(prefix_text)
                    ),
                )
            });
        }
        if entry.clusters.len() >= cap {
            evict_weakest(&mut entry.clusters);
        }
        entry.clusters.push(Cluster {
            prefix,
            text_hash,
            pages: 1,
            last_used: tick,
        });
        None
    }

    /// Drops everything stored for a site (call when the site is finished).
    pub fn forget_site(&mut self, site: &str) {
        if let Some(gone) = self.sites.remove(site) {
            self.by_use.remove(&gone.last_used);
        }
    }

    /// Clusters stored for a site (for tests and reports).
    pub fn clusters(&self, site: &str) -> usize {
        self.sites.get(site).map_or(0, |s| s.clusters.len())
    }

    /// Sites tracked.
    pub fn sites(&self) -> usize {
        self.sites.len()
    }

    /// The clusters of `site`, marked as used at `tick`; a new site first evicts the least
    /// recently observed one when `max_sites` are tracked. (Some always: the site is in the
    /// map by then.)
    fn touch(&mut self, site: &str, tick: u64) -> Option<&mut SiteClusters> {
        match self.sites.get(site).map(|entry| entry.last_used) {
            Some(last) => {
                // The site's name moves to its new place in the use order, no copy made.
                let name = self.by_use.remove(&last);
                let name = name.unwrap_or_else(|| site.to_string());
                self.by_use.insert(tick, name);
            }
            None => {
                if self.sites.len() >= self.max_sites {
                    if let Some((_, oldest)) = self.by_use.pop_first() {
                        self.sites.remove(&oldest);
                    }
                }
                self.by_use.insert(tick, site.to_string());
                self.sites.insert(site.to_string(), SiteClusters::default());
            }
        }
        let entry = self.sites.get_mut(site)?;
        entry.last_used = tick;
        Some(entry)
    }
}

/// Removes the cluster with the fewest pages, the least recently matched among equals.
fn evict_weakest(clusters: &mut Vec<Cluster>) {
    let weakest = clusters
        .iter()
        .enumerate()
        .min_by_key(|(_, c)| (c.pages, c.last_used))
        .map(|(i, _)| i);
    if let Some(i) = weakest {
        clusters.swap_remove(i);
    }
}

/// The path without its last segment (`/a/b/c` → `/a/b/`, `/a/b/` → `/a/b/`).
fn path_prefix(url: &Url) -> &str {
    let path = url.path();
    match path.rfind('/') {
        Some(i) => &path[..=i],
        None => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn rules() -> UrlTrapRules {
        UrlTrapRules::for_year(2026)
    }

    fn rule_of(s: &str) -> Option<&'static str> {
        rules().check(&u(s)).map(|t| t.rule)
    }

    #[track_caller]
    fn assert_trap(url: &str, rule: &str) {
        assert_eq!(rule_of(url), Some(rule), "{url} should be {rule}");
    }

    #[track_caller]
    fn assert_clean(url: &str) {
        let found = rules().check(&u(url));
        assert!(found.is_none(), "{url} should pass, got {found:?}");
    }

    #[test]
    fn ordinary_urls_pass() {
        for url in [
            "http://h/",
            "http://h/2024/05/",
            "http://h/2024/05/12/my-post/",
            "http://h/blog/2026/11/30/hello-world.html",
            "http://h/2028/01/",
            "http://h/1990/01/",
            "http://h/news/2024/05/page/2/",
            "http://h/list?page=2",
            "http://h/search?q=a&page=3&sort=date",
            "http://h/docs/en/v2/api/reference/modules/core/http/client/request/builder.html",
            "http://h/tiles/0/0/0.png",
            "http://h/2001/01/01/",
            "http://h/forum/topic/1234/2/",
            "http://h/topic/5678/3",
            "http://h/p/1234-05",
            "http://h/films?year=1950",
            "http://h/cal?month=11&year=2026",
            "http://h/cal?date=2026-11-30",
            "http://h/x?id=12345678",
            "http://h/a/b/a/b/",
            "http://h/gitlab/group/project/-/tree/main/src",
            "http://h/plot?x=100&y=5000",
        ] {
            assert_clean(url);
        }
    }

    #[test]
    fn long_urls_and_deep_paths() {
        let long = format!("http://h/?q={}", "a".repeat(2000));
        assert_trap(&long, LONG_URL);
        let ok = format!("http://h/?q={}", "a".repeat(1980));
        assert_clean(&ok);
        let deep: String = (0..41).map(|i| format!("/s{i}")).collect();
        assert_trap(&format!("http://h{deep}"), DEEP_PATH);
        let deep_ok: String = (0..40).map(|i| format!("/s{i}")).collect();
        assert_clean(&format!("http://h{deep_ok}/"));
    }

    #[test]
    fn query_parameter_rules() {
        let many: Vec<String> = (0..31).map(|i| format!("p{i}=1")).collect();
        assert_trap(&format!("http://h/?{}", many.join("&")), MANY_PARAMS);
        let fine: Vec<String> = (0..30).map(|i| format!("p{i}=1")).collect();
        assert_clean(&format!("http://h/?{}", fine.join("&")));
        assert_trap("http://h/?a=1&b=2&a=1&a=1", REPEATED_PARAM);
        // Faceted filters repeat a name with different values.
        assert_clean("http://h/?color=red&color=blue&color=green");
        assert_clean("http://h/?a=1&a=1");
    }

    #[test]
    fn repeated_segments() {
        assert_trap("http://h/a/a/a/", REPEATED_SEGMENT);
        assert_trap("http://h/x/a/a/a/b.html", REPEATED_SEGMENT);
        assert_trap("http://h/a/b/a/b/a/b/", REPEATED_SEGMENT);
        assert_trap("http://h/q/a/b/c/a/b/c/a/b/c", REPEATED_SEGMENT);
        assert_trap("http://h/page/2/page/3/page/4", REPEATED_SEGMENT);
        assert_trap("http://h/1/1/1", REPEATED_SEGMENT);
        assert_trap("http://h/a//b//c//d", REPEATED_SEGMENT);
        assert_clean("http://h/a//b/");
        assert_clean("http://h/a/a/");
        assert_clean("http://h/a/b/a/b/c");
        // Numbers may recur apart: dates and ids.
        assert_clean("http://h/2001/01/x/01/y");
        let t = rules().check(&u("http://h/a/b/a/b/a/b/")).unwrap();
        assert!(t.detail.contains("a/b"), "{t}");
    }

    #[test]
    fn calendars_far_from_now_are_traps() {
        assert_trap("http://h/2031/01/", CALENDAR);
        assert_trap("http://h/calendar/2029/12/31/", CALENDAR);
        assert_trap("http://h/1989/12/", CALENDAR);
        assert_trap("http://h/calendar/1850/3/", CALENDAR);
        assert_trap("http://h/events/2031-01-01", CALENDAR);
        assert_trap("http://h/log-1970-01-01.html", CALENDAR);
        assert_trap("http://h/cal?date=2031-01-01", CALENDAR);
        assert_trap("http://h/cal?start_date=19800101", CALENDAR);
        assert_trap("http://h/cal?d=2031/01", CALENDAR);
        assert_trap("http://h/cal?month=1&year=2031", CALENDAR);
        assert_trap("http://h/cal?month=12&year=1985", CALENDAR);
        assert_trap("http://h/cal?year=3000", CALENDAR);
        assert_trap("http://h/cal?year=-44", CALENDAR);
        assert_trap("http://h/cal?when=2100-05-05T10:00", CALENDAR);
        assert_trap("http://h/x?anything=2031-01-01", CALENDAR);
        // Inside the window, or not a date at all.
        assert_clean("http://h/cal?month=12&year=2027");
        assert_clean("http://h/calendar/2026/1/");
        assert_clean("http://h/item/1850/3/");
        assert_clean("http://h/cal?date=2031-13-01");
        assert_clean("http://h/cal?date=tomorrow");
        assert_clean("http://h/cal?year=1492");
        assert_clean("http://h/x?id=2031-01-0111");
        let t = rules().check(&u("http://h/cal?date=2031-01-01")).unwrap();
        assert!(
            t.detail.contains("2031") && t.detail.contains("2028"),
            "{t}"
        );
    }

    #[test]
    fn url_trap_uses_the_current_year() {
        let next = chrono::Utc::now().year() + 1;
        assert!(url_trap(&u(&format!("http://h/{next}/01/"))).is_none());
        let far = chrono::Utc::now().year() + 3;
        assert_eq!(
            url_trap(&u(&format!("http://h/{far}/01/"))).map(|t| t.rule),
            Some(CALENDAR)
        );
    }

    #[test]
    fn visible_text_skips_scripts_and_decodes() {
        let html = b"<!doctype html><html><head><title>T&amp;C</title>\
            <style>p { color: red }</style><script>var x = '<p>no</p>';</script></head>\
            <body><p>Hello&nbsp;<b>big</b>\n\n   world &lt;3 &#x263A; &#9731; &bogus; &</p>\
            <!-- a comment --><noscript><p>js off</p></noscript><div>end</div></body></html>";
        assert_eq!(
            visible_text(html),
            "T&C\nHello big world <3 \u{263A} \u{2603} &bogus; &\nend\n"
        );
    }

    #[test]
    fn visible_text_is_capped() {
        let big = format!("<p>{}</p>", "word ".repeat(400_000));
        let text = visible_text(big.as_bytes());
        assert!(text.len() <= MAX_VISIBLE_TEXT, "{}", text.len());
        assert!(text.len() > MAX_VISIBLE_TEXT - 10);
    }

    #[test]
    fn content_traps_trigger_after_the_limit() {
        let mut traps = ContentTraps::new(20, 1024, 1024);
        let site = "http://h";
        let base = text_hash("No events are scheduled for this day");
        for i in 0..20u64 {
            let url = u(&format!("http://h/cal/day?d={i}"));
            assert_eq!(traps.observe(site, &url, base), None, "page {i}");
        }
        let t = traps
            .observe(site, &u("http://h/cal/view?d=99"), base)
            .unwrap();
        assert_eq!(t.rule, REPEATED_CONTENT);
        assert!(
            t.detail.contains("20 earlier") && t.detail.contains("/cal/"),
            "{t}"
        );
        // Another prefix, another site, or a different page: not (yet) a trap.
        assert_eq!(traps.observe(site, &u("http://h/other/x"), base), None);
        assert_eq!(traps.observe("http://g", &u("http://g/cal/x"), base), None);
        assert_eq!(traps.observe(site, &u("http://h/cal/y"), !base), None);
        // Further copies stay traps.
        assert!(traps.observe(site, &u("http://h/cal/z"), base).is_some());
        assert_eq!(traps.clusters(site), 3);
        traps.forget_site(site);
        assert_eq!(traps.clusters(site), 0);
        assert_eq!(traps.observe(site, &u("http://h/cal/w"), base), None);
    }

    #[test]
    fn content_traps_are_bounded() {
        let mut traps = ContentTraps::new(3, 8, 2);
        let site = "http://h";
        // A growing cluster survives a flood of unique pages.
        for i in 0..3 {
            assert_eq!(traps.observe(site, &u(&format!("http://h/t/{i}")), 0), None);
        }
        for i in 0..1000u64 {
            let fp = mix(i);
            traps.observe(site, &u(&format!("http://h/t/u{i}")), fp);
            assert!(traps.clusters(site) <= 8);
        }
        assert!(traps.observe(site, &u("http://h/t/again"), 0).is_some());
        // Sites are capped too: the least recently observed goes.
        traps.observe("http://a", &u("http://a/x"), 0);
        traps.observe("http://b", &u("http://b/x"), 0);
        assert_eq!(traps.sites(), 2);
        assert_eq!(traps.clusters(site), 0);
    }

    #[test]
    fn the_least_recently_observed_site_is_evicted() {
        let mut traps = ContentTraps::new(3, 8, 2);
        traps.observe("http://a", &u("http://a/x"), 1);
        traps.observe("http://b", &u("http://b/x"), 1);
        traps.observe("http://a", &u("http://a/y"), 2);
        // b is the least recently observed now.
        traps.observe("http://c", &u("http://c/x"), 1);
        assert_eq!(
            (traps.clusters("http://a"), traps.clusters("http://b")),
            (2, 0)
        );
        assert_eq!(traps.clusters("http://c"), 1);
        // A forgotten site leaves room: nothing is evicted for the next one.
        traps.forget_site("http://a");
        traps.observe("http://d", &u("http://d/x"), 1);
        assert_eq!(traps.sites(), 2);
        assert_eq!(
            (traps.clusters("http://c"), traps.clusters("http://d")),
            (1, 1)
        );
        traps.observe("http://e", &u("http://e/x"), 1);
        assert_eq!(
            (traps.clusters("http://c"), traps.clusters("http://e")),
            (0, 1)
        );
        assert_eq!(traps.by_use.len(), traps.sites());
    }

    /// The general form of [`text_hash`], for comparing with its ASCII short way.
    fn text_hash_by_chars(text: &str) -> u64 {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .fold(0x9e37_79b9_7f4a_7c15, |acc, w| {
                let mut h = FNV_OFFSET;
                for c in w.chars().flat_map(char::to_lowercase) {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
                    }
                }
                mix(acc ^ h)
            })
    }

    #[test]
    fn text_hash_of_ascii_takes_the_short_way() {
        let texts = [
            "",
            "No events are scheduled for this day\n",
            "Site 42, page 7\nHello, World! 3.99 EUR; SKU-10042 (in stock)\n",
            "  --  ",
            "ALL CAPS and MiXeD 0123456789 _under_score_ \t\u{7f}end",
            "caf\u{e9} \u{130}stanbul \u{212a}elvin ok",
        ];
        for t in texts {
            assert_eq!(text_hash(t), text_hash_by_chars(t), "{t:?}");
        }
        assert_eq!(word_hash("AbC"), word_hash("abc"));
        assert_ne!(text_hash("a b"), text_hash("b a"));
    }

    #[test]
    fn templated_pages_are_not_copies_but_identical_ones_are() {
        // Issue 8: 300 product pages that differ only in their numbers are 300 pages.
        let mut traps = ContentTraps::default();
        let product = |n: u32| {
            format!(
                "<h1>Product {n}</h1><p>Price {}.99 EUR. SKU 10{n:04}. In stock: {}.</p>",
                n % 50,
                n % 7
            )
        };
        for n in 0..300 {
            let hash = text_hash(&visible_text(product(n).as_bytes()));
            let url = u(&format!("http://h/shop/item-{n}.html"));
            assert_eq!(traps.observe("http://h", &url, hash), None, "product {n}");
        }
        // The same soft-404 text under ever-new URLs is still a trap after 20.
        let missing = text_hash(&visible_text(b"<h1>Not found</h1><p>Sorry.</p>"));
        let found = (0..25)
            .filter_map(|i| traps.observe("http://h", &u(&format!("http://h/x/{i}")), missing))
            .count();
        assert_eq!(found, 5);
        assert_ne!(text_hash("page 1 of 9"), text_hash("page 2 of 9"));
        assert_eq!(text_hash("Page 1, of 9!"), text_hash("page 1 of 9"));
    }

    #[test]
    fn settings_tune_and_disable_url_rules() {
        let off = TrapSettings {
            enabled: false,
            ..TrapSettings::default()
        };
        assert!(UrlTrapRules::from_settings(&off, 2026).is_none());
        let default = UrlTrapRules::from_settings(&TrapSettings::default(), 2026).unwrap();
        assert_eq!(default, UrlTrapRules::for_year(2026));
        let tuned = TrapSettings {
            calendar: false,
            repeated_segment: 0,
            max_query_params: 2,
            ..TrapSettings::default()
        };
        let r = UrlTrapRules::from_settings(&tuned, 2026).unwrap();
        assert_eq!(r.check(&u("http://h/cal/2099/01/")), None);
        assert_eq!(r.check(&u("http://h/a/a/a/a/")), None);
        assert_eq!(
            r.check(&u("http://h/?a=1&b=2&c=3")).unwrap().rule,
            MANY_PARAMS
        );
        let wide = TrapSettings {
            calendar_years_ahead: 100,
            ..TrapSettings::default()
        };
        let r = UrlTrapRules::from_settings(&wide, 2026).unwrap();
        assert_eq!(r.check(&u("http://h/cal/2099/01/")), None);
    }

    #[test]
    fn path_prefix_ignores_last_segment_and_query() {
        assert_eq!(path_prefix(&u("http://h/a/b/c?x=1")), "/a/b/");
        assert_eq!(path_prefix(&u("http://h/a/b/")), "/a/b/");
        assert_eq!(path_prefix(&u("http://h/")), "/");
    }
}
