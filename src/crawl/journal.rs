//! The journal: crawl.log (one line per URL, Heritrix's fields), the statistics counted from
//! the same lines, refusals.log and the run book. Every URL not fetched is logged here, by
//! [`Crawler::log_drop`] and the few `log_*` methods beside it.

use std::borrow::Cow;

use url::{Position, Url};

use super::candidates::Dropped;
use super::engine::Crawler;
use super::locks::{Free, Key};
use crate::frontier::Candidate;
use crate::logs::crawllog::{status, CrawlLog, Entry};
use crate::logs::report::Stats;
use crate::logs::runlog::{RefusalLog, RunBook};
use crate::net::fetch::{FetchError, Fetched};

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
    fn write(&mut self, entry: &Entry<'_>) {
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

impl Crawler {
    pub(super) fn log_fetched(
        &self,
        key: &mut Key<Free>,
        c: &Candidate,
        f: &Fetched,
        thread: usize,
        annotations: Vec<String>,
    ) {
        self.log_fetched_with(key, c, f, thread, annotations, None);
    }

    pub(super) fn log_fetched_with(
        &self,
        key: &mut Key<Free>,
        c: &Candidate,
        f: &Fetched,
        thread: usize,
        mut annotations: Vec<String>,
        extra: Option<serde_json::Value>,
    ) {
        // Interim answers are not archived; crawl.log keeps that they came.
        annotations.extend(f.interim.iter().map(|s| format!("interim:{s}")));
        if f.excess_bytes > 0 {
            annotations.push(format!("excess-bytes:{}", f.excess_bytes));
        }
        let mime = f.mime();
        self.write_log(
            key,
            Entry {
                status: i32::from(f.status),
                // A body not read (dropped on its headers) has no size or digest to show.
                size: (!f.body_skipped).then_some(f.payload_len),
                uri: c.url.as_str(),
                url: Some(&c.url),
                path: &c.path,
                via: c.via.as_ref().map(Url::as_str),
                mime: mime.as_deref(),
                thread,
                fetch: Some((f.started, f.duration())),
                digest: (!f.body_skipped).then_some(f.payload_digest.as_str()),
                annotations,
                extra,
            },
        );
    }

    pub(super) fn log_error(
        &self,
        key: &mut Key<Free>,
        c: &Candidate,
        e: &FetchError,
        thread: usize,
        annotations: Vec<String>,
    ) {
        if let FetchError::Refused(refused) = e {
            let why = crate::net::guard::Refused::ANNOTATION;
            return self.log_dropped(key, c, status::OUT_OF_SCOPE, why, Some(refused.extra()));
        }
        self.write_log(
            key,
            Entry {
                status: e.status(),
                uri: c.url.as_str(),
                url: Some(&c.url),
                path: &c.path,
                via: c.via.as_ref().map(Url::as_str),
                thread,
                annotations,
                extra: Some(serde_json::json!({ "error": e.to_string() })),
                ..Entry::default()
            },
        );
    }

    /// The one crawl.log line of a URL the decide rules dropped.
    pub(super) fn log_drop(&self, key: &mut Key<Free>, d: Dropped) {
        self.log_dropped(key, &d.candidate, d.status, d.why, d.extra);
    }

    /// A redirect whose `Location` is empty or no URL: logged `-7` (Heritrix's "unfetchable
    /// URI") under the text received, with the redirecting URL as the via.
    pub(super) fn log_bad_location(&self, key: &mut Key<Free>, parent: &Candidate, text: &str) {
        let uri = if text.is_empty() { "-" } else { text };
        self.write_log(
            key,
            Entry {
                status: status::UNFETCHABLE_URI,
                uri,
                path: &format!("{}R", parent.path),
                via: Some(parent.url.as_str()),
                annotations: vec!["bad-location".to_string()],
                extra: Some(serde_json::json!({ "location": text })),
                ..Entry::default()
            },
        );
    }

    pub(super) fn log_unfetched(&self, key: &mut Key<Free>, c: &Candidate, status: i32, why: &str) {
        self.log_dropped(key, c, status, why, None);
    }

    /// A URL that is not fetched: its negative status, why, and what else is worth keeping.
    pub(super) fn log_dropped(
        &self,
        key: &mut Key<Free>,
        c: &Candidate,
        status: i32,
        why: &str,
        extra: Option<serde_json::Value>,
    ) {
        self.write_log(
            key,
            Entry {
                status,
                uri: c.url.as_str(),
                url: Some(&c.url),
                path: &c.path,
                via: c.via.as_ref().map(Url::as_str),
                annotations: vec![why.to_string()],
                extra,
                ..Entry::default()
            },
        );
    }

    fn write_log(&self, key: &mut Key<Free>, entry: Entry<'_>) {
        self.with_journal(key, |j| j.write(&entry));
        // A final line may be what a page being rendered waits for.
        self.rendering.logged(&entry);
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
