//! The journal: crawl.log (one line per URL, Heritrix's fields), the statistics counted from
//! the same lines, refusals.log and the run book. Every URL not fetched is logged here, through
//! the desks' `log_drop` and the few `log_*` methods beside it (`desks.rs`).

use std::borrow::Cow;

use url::{Position, Url};

use crate::logs::crawllog::{CrawlLog, Entry};
use crate::logs::report::Stats;
use crate::logs::runlog::{RefusalLog, RunBook};
use crate::net::fetch::Fetched;

/// Told every crawl.log line once the journal's lock is released (the rendering waits for
/// the lines of the URLs its browser asked for).
pub(super) trait LineWatcher: Send + Sync {
    fn logged(&self, entry: &Entry<'_>);
}

/// Everything behind the journal lock.
pub(super) struct Journal {
    log: CrawlLog,
    pub(super) stats: Stats,
    refusals: RefusalLog,
    /// Every run of this crawl (`state/runs.json`), this one last once it has started.
    pub(super) runs: RunBook,
    /// Why the crawl had to stop, if it did not end normally.
    pub(super) fatal: Option<String>,
}

impl Journal {
    pub(super) fn new(log: CrawlLog, stats: Stats, refusals: RefusalLog, runs: RunBook) -> Journal {
        Journal {
            log,
            stats,
            refusals,
            runs,
            fatal: None,
        }
    }

    /// One crawl.log line, counted as crawl.log will read back (see `Stats::from_log`).
    pub(super) fn write(&mut self, entry: &Entry<'_>) {
        // The fields as crawl.log holds them; copied only when they hold a space (rarely).
        let uri = without(entry.uri, "%20");
        let mime = entry.mime.map(|m| without(m, ""));
        let cleaned: Vec<String>;
        let annotations = if entry.annotations.iter().any(|a| a.contains(' ')) {
            cleaned = entry
                .annotations
                .iter()
                .map(|a| crate::logs::crawllog::clean_annotation(a))
                .collect();
            &cleaned
        } else {
            &entry.annotations
        };
        let host = entry.url.and_then(host_of);
        self.stats.record(&crate::logs::report::Outcome {
            uri: &uri,
            host,
            status: entry.status,
            size: entry.size,
            mime: mime.as_deref().filter(|m| !m.is_empty()),
            annotations,
        });
        if let Err(e) = self.log.write(entry) {
            tracing::error!("cannot write crawl.log: {e}");
        }
    }

    /// One refusals.log line.
    pub(super) fn refusal(&mut self, host: &str, f: &Fetched, marker: &str) {
        if let Err(e) = self
            .refusals
            .write(host, f.ip, f.url.as_str(), f.status, marker)
        {
            tracing::error!("cannot write refusals.log: {e}");
        }
    }
}

/// The report's host key of an http(s) URL: its text from the host to the port, which is what
/// `report::host_key` would parse the URL's text for.
fn host_of(url: &Url) -> Option<&str> {
    let web = matches!(url.scheme(), "http" | "https") && url.host().is_some();
    web.then(|| &url[Position::BeforeHost..Position::AfterPort])
}

/// `s` with its spaces written as `space`.
fn without<'a>(s: &'a str, space: &str) -> Cow<'a, str> {
    if s.contains(' ') {
        Cow::Owned(s.replace(' ', space))
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_taken_from_the_url_as_the_report_would_parse_it() {
        let urls = [
            "http://site-00042.test:8080/p/3",
            "https://Example.COM:443/a b",
            "http://user:pw@example.com:81/",
            "http://[::1]:8080/",
            "http://b\u{fc}cher.example/",
            "mailto:someone@example.com",
        ];
        for text in urls {
            let url = Url::parse(text).unwrap();
            let host = host_of(&url);
            let want = crate::logs::report::host_key(url.as_str());
            assert_eq!(
                host.map_or_else(|| want.clone(), str::to_string),
                want,
                "{text}"
            );
        }
    }
}
