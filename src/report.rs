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
    /// URLs lost to trap rules and quotas, by rule (per host in `hosts`).
    pub drops: DropCounts,
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
        let quota = status == crate::crawllog::status::BLOCKED_BY_QUOTA;
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
        if host.dropped.record(o.status, o.annotations) {
            self.drops.record(o.status, o.annotations);
        }
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
                "dropped_by_traps": self.drops.trapped(),
                "dropped_by_quotas": self.drops.over_quota(),
            },
            "dropped": self.drops,
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
        s.push_str(&format!("\n  dropped:    {}", self.drops.describe()));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stats: &mut Stats, uri: &str, status: i32, annotations: &[&str]) {
        let annotations: Vec<String> = annotations.iter().map(|a| a.to_string()).collect();
        stats.record(&Outcome {
            uri,
            status,
            size: None,
            mime: None,
            annotations: &annotations,
        });
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
            .summary("c", std::path::Path::new("/o"))
            .contains("\n  dropped:    4 by trap rules (trap:calendar 2"));
        assert_eq!(
            DropCounts::default().describe(),
            "0 by trap rules, 0 by quotas"
        );
    }
}
