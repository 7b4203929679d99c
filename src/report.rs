//! Counting what happened, the live progress line and the end-of-crawl summary.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};

/// Counters kept while the crawl runs.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// crawl.log lines by status code.
    pub by_status: BTreeMap<i32, u64>,
    /// Exchanges written to WARC files.
    pub archived: u64,
    /// Pages fetched but discarded (noindex, noarchive, none).
    pub discarded: u64,
    /// Response bytes written to WARC files.
    pub bytes: u64,
    /// Of `archived`, the revisit records (payload identical to one archived before).
    pub duplicates: u64,
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

impl Stats {
    /// Counts one crawl.log line.
    pub fn record(&mut self, o: &Outcome<'_>) {
        *self.by_status.entry(o.status).or_default() += 1;
        let has = |a: &str| o.annotations.iter().any(|x| x == a);
        let retry = o.annotations.iter().any(|a| a.starts_with("retry:"));
        let discarded = has("noindex") || has("noarchive") || has("none");
        let host = self.hosts.entry(host_key(o.uri)).or_default();
        host.urls += 1;
        host.bytes += o.size.unwrap_or(0);
        if o.status == crate::crawllog::status::ROBOTS_PRECLUDED {
            host.robots_precluded += 1;
        }
        if discarded {
            host.discarded += 1;
        } else if has("duplicate:digest") {
            host.duplicate += 1;
        } else if o.status > 0 && !retry && !has("refused") && !has("warc-write-failed") {
            host.novel += 1;
        }
        if o.status > 0 {
            let mime = self
                .mime_types
                .entry(o.mime.unwrap_or("-").to_string())
                .or_default();
            mime.urls += 1;
            mime.bytes += o.size.unwrap_or(0);
        }
    }

    /// The machine-readable report (`report.json`). `remaining` maps hosts to queued URLs.
    pub fn report_json(
        &self,
        name: &str,
        finished: bool,
        remaining: &BTreeMap<String, u64>,
    ) -> serde_json::Value {
        let mut hosts = self.hosts.clone();
        for (host, n) in remaining {
            hosts.entry(host.clone()).or_default().remaining = *n;
        }
        let statuses: BTreeMap<String, u64> = self
            .by_status
            .iter()
            .map(|(s, n)| (s.to_string(), *n))
            .collect();
        let suspended: Vec<serde_json::Value> = self
            .suspended
            .iter()
            .map(|(o, u)| serde_json::json!({"site": o, "until": crate::runlog::format_epoch(*u)}))
            .collect();
        serde_json::json!({
            "crawl": name,
            "generated": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "finished": finished,
            "totals": {
                "fetched": self.fetched(),
                "archived": self.archived,
                "novel": self.archived - self.duplicates,
                "duplicate": self.duplicates,
                "discarded": self.discarded,
                "bytes_archived": self.bytes,
                "queued": remaining.values().sum::<u64>(),
            },
            "hosts": hosts,
            "mime_types": self.mime_types,
            "statuses": statuses,
            "suspended": suspended,
        })
    }

    /// crawl.log lines with an HTTP status.
    pub fn fetched(&self) -> u64 {
        self.by_status
            .iter()
            .filter(|(s, _)| **s > 0)
            .map(|(_, n)| n)
            .sum()
    }

    /// A short human summary.
    pub fn summary(&self, name: &str, out: &Path) -> String {
        let how = if self.interrupted {
            format!(
                "stopped by Ctrl-C with {} URLs still queued",
                self.left_queued
            )
        } else {
            "finished".to_string()
        };
        let mut s = format!(
            "crawl {name:?} {how}\n  fetched:    {}\n  archived:   {} exchanges ({} of them revisits of identical payloads), {} bytes\n  discarded:  {} (noindex/noarchive/none)\n  by status:",
            self.fetched(),
            self.archived,
            self.duplicates,
            self.bytes,
            self.discarded
        );
        for (status, n) in &self.by_status {
            s.push_str(&format!(" {status}:{n}"));
        }
        for (origin, until) in &self.suspended {
            s.push_str(&format!(
                "\n  suspended:  {origin} until {} (it kept refusing us; a later run resumes it)",
                crate::runlog::format_epoch(*until)
            ));
        }
        s.push_str(&format!(
            "\n  output:     {}\n    WARCs:    {}\n    indexes:  {}\n    log:      {}\n",
            out.display(),
            out.join("warcs").display(),
            out.join("indexes").display(),
            out.join("crawl.log").display()
        ));
        s
    }
}

/// A progress line on a terminal; nothing when stderr is not a terminal (CI, pipes, cron).
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

impl Progress {
    pub fn new() -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(std::time::Duration::from_millis(250));
        Progress { bar: Some(bar) }
    }

    pub fn update(&self, stats: &Stats, queued: usize) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "fetched {} · archived {} · discarded {} · queued {}",
                stats.fetched(),
                stats.archived,
                stats.discarded,
                queued
            ));
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
