//! Counting what happened, the live progress line and the end-of-crawl summary.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};

/// Counters of the whole crawl, across every run of its profile: they are rebuilt from
/// crawl.log when a run starts (see [`Stats::from_log`]) and then kept up to date line by line,
/// so a resumed crawl reports every URL, and nothing but crawl.log has to survive a crash.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// crawl.log lines by status code.
    pub by_status: BTreeMap<i32, u64>,
    /// Exchanges written to WARC files.
    pub archived: u64,
    /// Pages fetched but discarded (noindex, noarchive, none).
    pub discarded: u64,
    /// Content bytes (crawl.log's size) of the responses archived in full.
    pub bytes: u64,
    /// Of `archived`, the revisit records (payload identical to one archived before).
    pub duplicates: u64,
    /// Of `archived`, the `304 Not Modified` answers to conditional requests that were
    /// written as server-not-modified revisits (`not-modified:BYTES` annotations).
    pub not_modified: u64,
    /// The earlier payloads those 304s did not send again, in bytes.
    pub not_modified_saved: u64,
    /// URLs not fetched, by reason.
    pub not_fetched: NotFetched,
    /// Tries that failed and were queued again (`retry:N` lines).
    pub retries: u64,
    /// Lines without an answer (DNS, connection, timeout, robots.txt unreachable) and 5xx
    /// answers, retries included: what the progress line calls errors.
    pub errors: u64,
    /// URLs still queued when the crawl ended (only after an interruption).
    pub left_queued: u64,
    /// True when Ctrl-C stopped the crawl.
    pub interrupted: bool,
    /// Sites left alone because they kept refusing us, with the end of their time away
    /// (seconds since the Unix epoch). A later run of the same profile resumes them.
    pub suspended: Vec<(String, u64)>,
    /// Per host (`host` or `host:port`).
    pub hosts: BTreeMap<String, HostStats>,
    /// Per MIME type of fetched responses.
    pub mime_types: BTreeMap<String, MimeStats>,
    /// URLs lost to trap rules and quotas, by rule (per host in `hosts`).
    pub drops: DropCounts,
    /// Pages whose links were cut at `[limits] max_outlinks`.
    pub cut_pages: super::cut::CutPages,
    /// The crawl's seeds and what became of each (for exit code 3).
    pub seeds: BTreeMap<String, SeedOutcome>,
    /// Every run of the crawl so far, this one last.
    pub runs: Vec<crate::logs::runlog::Run>,
    /// crawl.log lines that could not be read back (a torn last line after a crash).
    pub unreadable_lines: u64,
    /// crawl.log lines written before this run started, and when it started (for its rate).
    pub run_base: u64,
    pub run_started: Option<std::time::SystemTime>,
}

/// URLs that were not fetched, by why (crawl.log's negative codes).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct NotFetched {
    /// `-5000` by a scope rule.
    pub out_of_scope: u64,
    /// `-5000` by a crawler-trap rule (`trap:*`).
    pub traps: u64,
    /// `-9998`: robots.txt forbids them.
    pub robots_precluded: u64,
    /// `-5003`: a site's page or byte quota was reached.
    pub quota: u64,
    /// `-5001`: an opt-out list names them.
    pub opted_out: u64,
    /// No answer after every try: DNS, connection, timeout, robots.txt unreachable.
    pub failed: u64,
}

/// What became of one seed.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SeedOutcome {
    /// The seed got an HTTP answer (any status) at least once.
    pub answered: bool,
    /// Its last crawl.log line without an answer: status and why.
    pub failure: Option<String>,
    /// It failed for want of an answer (DNS, connection, robots.txt), not by a rule.
    #[serde(skip)]
    pub failed_to_reach: bool,
}

/// What trap rules and quotas cost a crawl, by rule, so that no loss is silent: the end
/// summary, summary.txt and report.json (in total and per host) all show it.
///
/// Keys are the crawl.log annotations: `trap:long-url`, `trap:calendar`, … for URLs a trap
/// rule dropped (`-5000`), `trap:repeated-content` for pages archived whose links were not
/// followed, and the quotas `max-pages-per-site` and `scope:max-bytes-per-site` (`-5003`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DropCounts {
    /// Trap rule → URLs.
    pub traps: BTreeMap<String, u64>,
    /// Quota → URLs.
    pub quotas: BTreeMap<String, u64>,
}

impl DropCounts {
    /// Counts a crawl.log line if a trap rule or a quota made it; true when it did.
    fn record(&mut self, status: i32, annotations: &[String]) -> bool {
        let quota = status == crate::logs::crawllog::status::BLOCKED_BY_QUOTA;
        let Some(rule) = annotations
            .iter()
            .find(|a| a.starts_with("trap:") || (quota && !a.starts_with("retry:")))
        else {
            return false;
        };
        let map = if rule.starts_with("trap:") {
            &mut self.traps
        } else {
            &mut self.quotas
        };
        *map.entry(rule.clone()).or_default() += 1;
        true
    }

    /// URLs dropped by trap rules, all rules together.
    pub fn trapped(&self) -> u64 {
        self.traps.values().sum()
    }

    /// URLs dropped by quotas, all quotas together.
    pub fn over_quota(&self) -> u64 {
        self.quotas.values().sum()
    }

    /// One line for people: `3 by trap rules (trap:calendar 2, trap:long-url 1), 0 by quotas`.
    pub fn describe(&self) -> String {
        let list = |m: &BTreeMap<String, u64>| {
            if m.is_empty() {
                return String::new();
            }
            let items: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
            format!(" ({})", items.join(", "))
        };
        format!(
            "{} by trap rules{}, {} by quotas{}",
            self.trapped(),
            list(&self.traps),
            self.over_quota(),
            list(&self.quotas)
        )
    }
}

/// What happened on one host.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct HostStats {
    /// crawl.log lines (URL outcomes, tries included).
    pub urls: u64,
    /// Body bytes fetched.
    pub bytes: u64,
    pub robots_precluded: u64,
    /// Archived as full responses.
    pub novel: u64,
    /// Archived as revisits (payload seen before).
    pub duplicate: u64,
    /// Discarded by meta robots / X-Robots-Tag.
    pub discarded: u64,
    /// Still queued (filled in when a report is written).
    pub remaining: u64,
    /// Lost to trap rules and quotas on this host, by rule.
    pub dropped: DropCounts,
    /// Lines counted in [`Stats::errors`] (for the control endpoint's site table; report.json
    /// keeps its shape).
    #[serde(skip)]
    pub errors: u64,
}

/// Responses of one MIME type.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MimeStats {
    pub urls: u64,
    pub bytes: u64,
}

/// What a crawl.log line says, for the counters.
pub struct Outcome<'a> {
    pub uri: &'a str,
    /// [`host_key`] of `uri` when the caller has it at hand (else it is worked out).
    pub host: Option<&'a str>,
    pub status: i32,
    pub size: Option<u64>,
    pub mime: Option<&'a str>,
    pub annotations: &'a [String],
}

/// The host part of a URL as reports name it (`host` or `host:port`).
pub fn host_key(uri: &str) -> String {
    url::Url::parse(uri)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_string();
            Some(match u.port() {
                Some(p) => format!("{host}:{p}"),
                None => host,
            })
        })
        .unwrap_or_else(|| "-".to_string())
}

/// What a fetched line led to, judged from its annotations alone (so that counting a line as
/// it is written and counting it again from crawl.log give the same figures).
enum Kept {
    Discarded,
    NotArchived,
    Revisit,
    Full,
}

/// The crawl.log annotation of a 304 written as a revisit: `not-modified:` and the earlier
/// payload's size.
pub const NOT_MODIFIED: &str = "not-modified:";

fn kept(annotations: &[String]) -> Kept {
    let has = |a: &str| annotations.iter().any(|x| x == a);
    if has("noindex") || has("noarchive") || has("none") {
        Kept::Discarded
    } else if annotations.iter().any(|a| a.starts_with("retry:"))
        || has("refused")
        || has("warc-write-failed")
        || has(crate::scope::rules::MIME_NOT_KEPT)
    {
        Kept::NotArchived
    } else if has("duplicate:digest") {
        Kept::Revisit
    } else {
        Kept::Full
    }
}

/// Words for a negative crawl.log status.
pub fn status_words(code: i32) -> &'static str {
    use crate::logs::crawllog::status;
    match code {
        status::DNS_FAILED => "DNS lookup failed",
        -2 => "connection failed",
        -3 => "connection broken",
        -4 => "timed out",
        status::ROBOTS_PREREQUISITE_FAILED => "robots.txt could not be fetched",
        status::OUT_OF_SCOPE => "out of scope",
        status::BLOCKED_BY_USER => "opted out",
        status::BLOCKED_BY_QUOTA => "over a quota",
        status::ROBOTS_PRECLUDED => "forbidden by robots.txt",
        _ => "not fetched",
    }
}

impl Stats {
    /// Empty counters for a crawl of these seeds.
    pub fn for_seeds<'a>(seeds: impl IntoIterator<Item = &'a str>) -> Stats {
        Stats {
            seeds: seeds
                .into_iter()
                .map(|s| (s.to_string(), SeedOutcome::default()))
                .collect(),
            ..Stats::default()
        }
    }

    /// The counters of every line already in crawl.log (none when it does not exist yet).
    pub fn from_log(path: &Path, seeds: &[&str]) -> std::io::Result<Stats> {
        let mut stats = Stats::for_seeds(seeds.iter().copied());
        crate::logs::crawllog::read_lines(path, |text| {
            match crate::logs::crawllog::parse_line(text) {
                Some(l) => stats.record(&Outcome {
                    uri: &l.uri,
                    host: None,
                    status: l.status,
                    size: l.size,
                    mime: l.mime.as_deref(),
                    annotations: &l.annotations,
                }),
                None => stats.unreadable_lines += 1,
            }
        })?;
        stats.run_base = stats.lines();
        Ok(stats)
    }

    /// crawl.log lines counted.
    pub fn lines(&self) -> u64 {
        self.by_status.values().sum()
    }

    /// Counts one crawl.log line.
    pub fn record(&mut self, o: &Outcome<'_>) {
        use crate::logs::crawllog::status;
        *self.by_status.entry(o.status).or_default() += 1;
        let retry = o.annotations.iter().any(|a| a.starts_with("retry:"));
        let key = o.host.map_or_else(|| host_key(o.uri), str::to_string);
        let host = self.hosts.entry(key).or_default();
        if host.dropped.record(o.status, o.annotations) {
            self.drops.record(o.status, o.annotations);
        }
        host.urls += 1;
        host.bytes += o.size.unwrap_or(0);
        if o.status > 0 {
            self.cut_pages.record(o.uri, o.annotations);
        }
        if let Some(seed) = self.seeds.get_mut(o.uri) {
            if o.status > 0 {
                seed.answered = true;
            } else if !retry {
                let why = o.annotations.join(",");
                seed.failure = Some(format!("{} {}, {why}", o.status, status_words(o.status)));
                seed.failed_to_reach |= !is_policy_drop(o.status)
                    || o.status == crate::logs::crawllog::status::ROBOTS_PRECLUDED;
            }
        }
        if o.status >= 500 || (o.status < 0 && !is_policy_drop(o.status)) {
            self.errors += 1;
            host.errors += 1;
        }
        if retry {
            self.retries += 1;
        }
        if o.status > 0 {
            let saved = o
                .annotations
                .iter()
                .find_map(|a| a.strip_prefix(NOT_MODIFIED)?.parse::<u64>().ok());
            if let Some(saved) = saved {
                self.not_modified += 1;
                self.not_modified_saved += saved;
            }
            match kept(o.annotations) {
                Kept::Discarded => {
                    host.discarded += 1;
                    self.discarded += 1;
                }
                Kept::NotArchived => {}
                Kept::Revisit => {
                    host.duplicate += 1;
                    self.archived += 1;
                    self.duplicates += 1;
                }
                Kept::Full => {
                    host.novel += 1;
                    self.archived += 1;
                    self.bytes += o.size.unwrap_or(0);
                }
            }
            let mime = self
                .mime_types
                .entry(o.mime.unwrap_or("-").to_string())
                .or_default();
            mime.urls += 1;
            mime.bytes += o.size.unwrap_or(0);
            return;
        }
        let n = &mut self.not_fetched;
        match o.status {
            status::ROBOTS_PRECLUDED => {
                host.robots_precluded += 1;
                n.robots_precluded += 1;
            }
            status::OUT_OF_SCOPE if o.annotations.iter().any(|a| a.starts_with("trap:")) => {
                n.traps += 1
            }
            status::OUT_OF_SCOPE => n.out_of_scope += 1,
            status::BLOCKED_BY_USER => n.opted_out += 1,
            status::BLOCKED_BY_QUOTA => n.quota += 1,
            _ if !retry => n.failed += 1,
            _ => {}
        }
    }

    /// True when not one seed ever got an answer, and at least one failed for want of one
    /// (DNS, connection, robots.txt): seeds that were only opted out or out of scope are the
    /// operator's choice, not a failure.
    pub fn no_seed_answered(&self) -> bool {
        self.seeds.values().all(|s| !s.answered) && self.seeds.values().any(|s| s.failed_to_reach)
    }

    /// Why each seed could not be fetched, one per line.
    pub fn seed_failures(&self) -> String {
        self.seeds
            .iter()
            .map(|(url, s)| {
                let why = s.failure.as_deref().unwrap_or("no answer");
                format!("  {url}: {why}\n")
            })
            .collect()
    }

    /// crawl.log lines with an HTTP status.
    pub fn fetched(&self) -> u64 {
        self.by_status
            .iter()
            .filter(|(s, _)| **s > 0)
            .map(|(_, n)| n)
            .sum()
    }

    /// crawl.log lines of this run, and its rate in lines per second.
    pub fn this_run(&self) -> (u64, std::time::Duration, f64) {
        let urls = self.lines().saturating_sub(self.run_base);
        let elapsed = self
            .run_started
            .and_then(|t| t.elapsed().ok())
            .unwrap_or_default();
        let secs = elapsed.as_secs_f64();
        let rate = if secs > 0.0 { urls as f64 / secs } else { 0.0 };
        (urls, elapsed, rate)
    }
}

impl Stats {
    /// The human summary printed at the end and saved as `summary.txt`. `resume` is the
    /// command that resumes an interrupted crawl.
    pub fn summary(&self, name: &str, out: &Path, resume: Option<&str>) -> String {
        use indicatif::{HumanBytes, HumanCount};
        let how = if self.interrupted {
            format!(
                "stopped by Ctrl-C with {} URLs still queued (resumable)",
                HumanCount(self.left_queued)
            )
        } else if self.no_seed_answered() {
            "ended: no seed could be fetched".to_string()
        } else {
            "finished".to_string()
        };
        let (run_urls, run_elapsed, rate) = self.this_run();
        let total_secs: f64 = self.runs.iter().map(|r| r.seconds()).sum();
        let mut s = format!("crawl {name:?} {how}\n");
        let mut line = |label: &str, text: String| {
            s.push_str(&format!("  {label:<13}{text}\n"));
        };
        line(
            "this run:",
            format!(
                "{} URLs in {} ({rate:.1} URLs/s); run {} of the crawl",
                HumanCount(run_urls),
                clock(run_elapsed),
                self.runs.len().max(1)
            ),
        );
        line(
            "whole crawl:",
            format!(
                "{} URLs, {} fetched, over {} ({})",
                HumanCount(self.lines()),
                HumanCount(self.fetched()),
                clock(std::time::Duration::from_secs_f64(total_secs.max(0.0))),
                plural(self.runs.len().max(1) as u64, "run")
            ),
        );
        let (files, on_disk) = warc_files(&out.join("warcs"));
        line(
            "archived:",
            format!(
                "{} exchanges ({} revisits of identical payloads), {} of content; {}, {} on \
                 disk",
                HumanCount(self.archived),
                HumanCount(self.duplicates),
                HumanBytes(self.bytes),
                plural(files, "WARC file"),
                HumanBytes(on_disk)
            ),
        );
        if self.not_modified > 0 {
            line(
                "not modified:",
                format!(
                    "{} (304s written as revisits of earlier crawls), {} not sent again",
                    HumanCount(self.not_modified),
                    HumanBytes(self.not_modified_saved)
                ),
            );
        }
        line(
            "discarded:",
            format!("{} (noindex/noarchive/none)", HumanCount(self.discarded)),
        );
        let n = &self.not_fetched;
        line(
            "not fetched:",
            format!(
                "{} out of scope, {} robots.txt, {} traps, {} quota, {} opted out, {} failed",
                n.out_of_scope, n.robots_precluded, n.traps, n.quota, n.opted_out, n.failed
            ),
        );
        line(
            "errors:",
            format!(
                "{} (no answer or 5xx, tries included; {} retried)",
                self.errors, self.retries
            ),
        );
        line("dropped:", self.drops.describe());
        if let Some(cut) = self.cut_pages.describe() {
            line("links cut:", cut);
        }
        let statuses: Vec<String> = self
            .by_status
            .iter()
            .map(|(status, n)| format!("{status}:{n}"))
            .collect();
        line("by status:", statuses.join(" "));
        for (origin, until) in &self.suspended {
            line(
                "suspended:",
                format!(
                    "{origin} until {} (it kept refusing us; a later run resumes it)",
                    crate::logs::runlog::format_epoch(*until)
                ),
            );
        }
        if self.no_seed_answered() && !self.interrupted {
            s.push_str("  seeds:\n");
            for l in self.seed_failures().lines() {
                s.push_str(&format!("  {l}\n"));
            }
        }
        s.push_str(&format!(
            "  output:      {}\n    WARCs:     {}\n    indexes:   {}\n    log:       {}\n    report:    {}\n",
            out.display(),
            out.join("warcs").display(),
            out.join("indexes").display(),
            out.join("crawl.log").display(),
            out.join("report.json").display()
        ));
        if let (true, Some(cmd)) = (self.interrupted, resume) {
            s.push_str(&format!("  resume with: {cmd}\n"));
        }
        s
    }
}

/// "1 run", "2 runs".
fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{} {what}s", indicatif::HumanCount(n))
    }
}

/// `h:mm:ss`.
pub fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// How many finished WARC files a folder holds and their size on disk.
fn warc_files(dir: &Path) -> (u64, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(".warc.gz") || name.ends_with(".warc")
        })
        .filter_map(|e| e.metadata().ok())
        .fold((0, 0), |(n, b), m| (n + 1, b + m.len()))
}

/// Statuses of URLs that were left alone on purpose (not errors).
fn is_policy_drop(code: i32) -> bool {
    use crate::logs::crawllog::status;
    matches!(
        code,
        status::OUT_OF_SCOPE
            | status::BLOCKED_BY_USER
            | status::BLOCKED_BY_QUOTA
            | status::ROBOTS_PRECLUDED
    )
}

/// A progress line on a terminal; nothing when stderr is not a terminal (CI, pipes, cron).
pub struct Progress {
    bar: Option<ProgressBar>,
    /// Recent (time, crawl.log lines) samples, for the rate over the last seconds.
    samples: std::sync::Mutex<std::collections::VecDeque<(std::time::Instant, u64)>>,
}

/// What the progress line shows besides the counters: where the sites stand.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    /// Jobs running now (one per site at most).
    pub active: usize,
    /// Sites with work waiting for their politeness pause to end.
    pub waiting: usize,
    /// Sites left alone for refusing us.
    pub suspended: usize,
    /// URLs queued.
    pub queued: usize,
}

/// The rate is measured over this much recent time.
const RATE_WINDOW: std::time::Duration = std::time::Duration::from_secs(10);
/// The line is redrawn at most this often (counting the sites costs a walk over them).
const REDRAW: std::time::Duration = std::time::Duration::from_millis(250);

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

impl Progress {
    pub fn new() -> Progress {
        let samples = std::sync::Mutex::new(std::collections::VecDeque::new());
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None, samples };
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed_precise} {wide_msg}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(std::time::Duration::from_millis(250));
        Progress {
            bar: Some(bar),
            samples,
        }
    }

    /// True when a redraw is due (never when there is no terminal): the caller then counts
    /// the gauges, which costs a walk over the sites.
    pub fn due(&self) -> bool {
        if self.bar.is_none() {
            return false;
        }
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        samples.back().is_none_or(|(t, _)| t.elapsed() >= REDRAW)
    }

    pub fn update(&self, stats: &Stats, gauges: Gauges) {
        let Some(bar) = &self.bar else {
            return;
        };
        let rate = self.rate(stats.lines());
        let width = console::Term::stderr().size().1 as usize;
        // "⠁ 00:00:00 " comes before the message.
        bar.set_message(progress_line(stats, gauges, rate, width.saturating_sub(12)));
    }

    /// URLs per second over the last seconds.
    fn rate(&self, lines: u64) -> f64 {
        let now = std::time::Instant::now();
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        samples.push_back((now, lines));
        while samples.len() > 2 && samples.front().is_some_and(|(t, _)| now - *t > RATE_WINDOW) {
            samples.pop_front();
        }
        let (t0, l0) = samples.front().copied().unwrap_or((now, lines));
        let secs = (now - t0).as_secs_f64();
        if secs > 0.0 {
            lines.saturating_sub(l0) as f64 / secs
        } else {
            0.0
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The progress line's text, most important first, cut at a whole part to fit `width`.
pub fn progress_line(stats: &Stats, g: Gauges, rate: f64, width: usize) -> String {
    use indicatif::{HumanBytes, HumanCount};
    let parts = [
        format!("{rate:.1} URLs/s"),
        format!("{} fetched", HumanCount(stats.fetched())),
        format!("{} archived", HumanBytes(stats.bytes)),
        format!("{} errors", HumanCount(stats.errors)),
        format!("{} queued", HumanCount(g.queued as u64)),
        format!(
            "sites {} active / {} waiting / {} suspended",
            g.active, g.waiting, g.suspended
        ),
        format!("{} archived records", HumanCount(stats.archived)),
    ];
    let mut line = String::new();
    for part in parts {
        let sep = if line.is_empty() { "" } else { " · " };
        if line.chars().count() + sep.len() + part.chars().count() > width && !line.is_empty() {
            break;
        }
        line.push_str(sep);
        line.push_str(&part);
    }
    line
}

/// The summary with its first line and the resume hint in colour, when standard error is a
/// terminal that takes colour (`console` honours `NO_COLOR` and `CLICOLOR`).
pub fn colour_summary(summary: &str) -> String {
    if !console::colors_enabled_stderr() || !std::io::stderr().is_terminal() {
        return summary.to_string();
    }
    summary
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let styled = if i == 0 && l.contains("finished") {
                console::style(l).green().bold().to_string()
            } else if i == 0 {
                console::style(l).yellow().bold().to_string()
            } else if l.trim_start().starts_with("resume with:") {
                console::style(l).cyan().bold().to_string()
            } else {
                l.to_string()
            };
            styled + "\n"
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stats: &mut Stats, uri: &str, status: i32, annotations: &[&str]) {
        let annotations: Vec<String> = annotations.iter().map(|a| a.to_string()).collect();
        stats.record(&Outcome {
            uri,
            host: None,
            status,
            size: None,
            mime: None,
            annotations: &annotations,
        });
    }

    #[test]
    fn the_progress_line_fits_the_terminal() {
        let mut s = Stats::default();
        line(&mut s, "http://a.test/", 200, &[]);
        line(&mut s, "http://a.test/x", -2, &[]);
        let g = Gauges {
            active: 2,
            waiting: 5,
            suspended: 1,
            queued: 1234,
        };
        let wide = progress_line(&s, g, 3.31, 200);
        assert_eq!(
            wide,
            "3.3 URLs/s · 1 fetched · 0 B archived · 1 errors · 1,234 queued · sites 2 active / 5 \
             waiting / 1 suspended · 1 archived records"
        );
        let narrow = progress_line(&s, g, 3.31, 40);
        assert_eq!(narrow, "3.3 URLs/s · 1 fetched · 0 B archived");
        assert!(progress_line(&s, g, 0.0, 5).starts_with("0.0 URLs/s"));
    }

    #[test]
    fn drops_are_counted_per_rule_and_host() {
        let mut s = Stats::default();
        line(&mut s, "http://a.test/x", -5000, &["trap:calendar"]);
        line(&mut s, "http://a.test/y", -5000, &["trap:calendar"]);
        line(&mut s, "http://b.test:81/z", -5000, &["trap:long-url"]);
        line(&mut s, "http://b.test:81/q", -5003, &["max-pages-per-site"]);
        line(
            &mut s,
            "http://a.test/r",
            -5003,
            &["scope:max-bytes-per-site"],
        );
        line(&mut s, "http://a.test/p", 200, &["trap:repeated-content"]);
        line(&mut s, "http://a.test/o", -5000, &["scope:off-site"]);
        line(&mut s, "http://a.test/n", 200, &[]);
        assert_eq!(s.drops.trapped(), 4);
        assert_eq!(s.drops.over_quota(), 2);
        assert_eq!(
            s.drops.describe(),
            "4 by trap rules (trap:calendar 2, trap:long-url 1, trap:repeated-content 1), \
             2 by quotas (max-pages-per-site 1, scope:max-bytes-per-site 1)"
        );
        assert_eq!(s.hosts["a.test"].dropped.traps["trap:calendar"], 2);
        assert_eq!(s.hosts["b.test:81"].dropped.quotas["max-pages-per-site"], 1);
        let json = s.report_json("c", true, &BTreeMap::new());
        assert_eq!(json["dropped"]["quotas"]["scope:max-bytes-per-site"], 1);
        assert_eq!(json["totals"]["dropped_by_traps"], 4);
        assert_eq!(
            json["hosts"]["b.test:81"]["dropped"]["traps"]["trap:long-url"],
            1
        );
        assert!(s
            .summary("c", std::path::Path::new("/o"), None)
            .contains("\n  dropped:     4 by trap rules (trap:calendar 2"));
        assert_eq!(
            DropCounts::default().describe(),
            "0 by trap rules, 0 by quotas"
        );
    }

    #[test]
    fn a_page_cut_at_max_outlinks_is_in_the_summary_and_the_report() {
        let mut s = Stats::default();
        line(&mut s, "http://a.test/", 200, &[]);
        line(&mut s, "http://a.test/x86/", 200, &["max-outlinks:1498"]);
        // Not fetched: no page was read, whatever its annotations.
        line(&mut s, "http://a.test/no", -5000, &["max-outlinks:3"]);
        let summary = s.summary("c", std::path::Path::new("/o"), None);
        assert!(
            summary.contains(
                "\n  links cut:   1 page cut at [limits] max_outlinks, 1498 links left out: \
                 http://a.test/x86/ (1498)\n"
            ),
            "{summary}"
        );
        let json = s.report_json("c", true, &BTreeMap::new());
        assert_eq!(json["totals"]["pages_cut_at_max_outlinks"], 1);
        assert_eq!(json["cut_at_max_outlinks"]["links_left_out"], 1498);
        assert_eq!(
            json["cut_at_max_outlinks"]["listed"]["http://a.test/x86/"],
            1498
        );
        let none = Stats::default().summary("c", std::path::Path::new("/o"), None);
        assert!(!none.contains("links cut:"));
    }
}
