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
}

impl Stats {
    pub fn count(&mut self, status: i32) {
        *self.by_status.entry(status).or_default() += 1;
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
