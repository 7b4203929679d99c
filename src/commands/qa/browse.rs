//! Replaying archived pages in headless Chromium, every request answered from the crawl's
//! own WARCs and nothing else.
//!
//! The browser is the renderer's ([`crate::browser`]): each tab's requests are paused at the
//! Request stage and handed to [`FromArchive`], which looks the URL up in the crawl's ledger
//! and reads its record back ([`crate::browser::readback`]), or refuses it and notes why.
//! Chromium itself runs behind a dead proxy with a resolver that knows no name, so nothing it
//! tries by itself leaves the machine, and its own background traffic never reaches a tab's
//! interception: it is not the page's and is not counted.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::stream::{self, StreamExt as _};
use url::Url;

use super::plan::{site_of, CrawlDir, PageRef};
use super::reasons::{reason, Reason};
use crate::browser::readback::{read_back, Known};
use crate::browser::{Browser, BrowserAnswer, BrowserRequest, Capture, Fetcher};
use crate::frontier::seen_key;

/// Longest text kept of a page (for `--compare`'s text diff; the length is counted whole).
const MAX_TEXT: usize = 256 << 10;
/// Most requests noted of one page: a page that polls without end is cut at the timeout,
/// and its report need not list every poll.
const MAX_NOTED: usize = 2000;
/// The thumbnail's scale: a 1280×1024 viewport gives 320×256.
const THUMB_SCALE: f64 = 0.25;
/// Beyond the page's own timeout, the longest wait for the browser: it cuts a render that
/// does not come back itself (and closes its tab) well before this backstop.
const GRACE: Duration = Duration::from_secs(90);

/// One request a page made and what the archive gave it.
#[derive(Debug, Clone)]
pub(super) struct Asked {
    pub(super) url: String,
    /// From CDP's resource type: stylesheet, script, image, font, fetch (fetch/XHR), frame, …
    pub(super) kind: String,
    /// None: answered from a record.
    pub(super) missing: Option<Reason>,
}

/// A page replayed.
#[derive(Debug, Clone)]
pub(super) struct Replayed {
    pub(super) url: String,
    pub(super) site: String,
    /// The page's hop path in the crawl (for the patch list).
    pub(super) path: String,
    pub(super) asked: Vec<Asked>,
    pub(super) text_length: usize,
    pub(super) text: String,
    pub(super) thumbnail: Option<Vec<u8>>,
    /// The page was cut at the timeout (what it had asked for by then is counted).
    pub(super) timed_out: bool,
    /// The page could not be replayed at all (the browser's error).
    pub(super) error: Option<String>,
}

impl Replayed {
    pub(super) fn answered(&self) -> usize {
        self.asked.iter().filter(|a| a.missing.is_none()).count()
    }

    /// Answered / made; a page that asked for nothing is complete.
    pub(super) fn score(&self) -> f64 {
        if self.error.is_some() {
            return 0.0;
        }
        match self.asked.len() {
            0 => 1.0,
            n => self.answered() as f64 / n as f64,
        }
    }
}

/// The [`Fetcher`] of one page: the archive's answers, and a note of every request.
struct FromArchive<'c> {
    crawl: &'c CrawlDir,
    asked: Mutex<Noted>,
}

/// The requests of one page, each URL once, at most [`MAX_NOTED`].
#[derive(Default)]
struct Noted {
    list: Vec<Asked>,
    urls: HashSet<String>,
}

impl Fetcher for FromArchive<'_> {
    async fn fetch(&self, req: BrowserRequest) -> BrowserAnswer {
        if browsers_own(&req) {
            return BrowserAnswer::Refused {
                why: "the browser's own request".to_string(),
            };
        }
        let (answer, missing) = self.answer(&req.url).await;
        if !req.is_page {
            self.note(&req, missing);
        }
        answer
    }
}

impl FromArchive<'_> {
    /// The record of `url` read back, or a refusal and why.
    async fn answer(&self, url: &Url) -> (BrowserAnswer, Option<Reason>) {
        let refused = |why: &str| BrowserAnswer::Refused {
            why: why.to_string(),
        };
        match self.crawl.ledger.known(&seen_key(url)) {
            Known::At(found) => match read_back(&self.crawl.warc_dir, &found, url).await {
                Ok(copy) => (copy.answer(), None),
                Err(e) => {
                    tracing::debug!("qa: {url}: {e}");
                    (refused(&e), Some(Reason::Failed))
                }
            },
            _ => {
                let why = reason(self.crawl.word(url));
                (refused(why.name()), Some(why))
            }
        }
    }

    /// Notes a request, once per URL (the first answer stands).
    fn note(&self, req: &BrowserRequest, missing: Option<Reason>) {
        let url = req.url.to_string();
        let mut noted = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        if noted.list.len() >= MAX_NOTED || !noted.urls.insert(url.clone()) {
            return;
        }
        noted.list.push(Asked {
            url,
            kind: kind_of(&req.resource_type),
            missing,
        });
    }
}

/// A request the browser makes for itself through the tab, not for the page: the favicon
/// it looks for at the site's root (type `Other`; headless Chromium still asks). Blocked and
/// not counted, like its background traffic outside the tab.
fn browsers_own(req: &BrowserRequest) -> bool {
    req.resource_type == "Other" && req.url.path() == "/favicon.ico" && req.url.query().is_none()
}

/// CDP's resource type as the report names it.
fn kind_of(resource_type: &str) -> String {
    match resource_type {
        "Document" => "frame".to_string(),
        // One kind for both: Chromium's Fetch domain calls a `fetch()` "XHR" too.
        "XHR" | "Fetch" | "EventSource" => "fetch".to_string(),
        "" => "other".to_string(),
        t => t.to_ascii_lowercase(),
    }
}

/// Replays `pages` of `crawl`, `tabs` at once, each cut at `timeout`; `each` is called as
/// each page is done (the progress bar). Pages come back in the order given.
pub(super) async fn replay_all(
    browser: &Browser,
    crawl: &CrawlDir,
    pages: &[PageRef],
    (tabs, timeout): (usize, Duration),
    each: &(dyn Fn(&Replayed) + Sync),
) -> Vec<Replayed> {
    let mut done: Vec<(usize, Replayed)> = stream::iter(pages.iter().enumerate())
        .map(|(i, page)| async move {
            let r = replay(browser, crawl, page, timeout).await;
            each(&r);
            (i, r)
        })
        .buffer_unordered(tabs.max(1))
        .collect()
        .await;
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Replays one page: its requests, text and thumbnail. Never longer than `timeout` plus a
/// grace for the browser to give the page back.
pub(super) async fn replay(
    browser: &Browser,
    crawl: &CrawlDir,
    page: &PageRef,
    timeout: Duration,
) -> Replayed {
    let fetcher = FromArchive {
        crawl,
        asked: Mutex::new(Noted::default()),
    };
    let capture = Capture {
        screenshot_scale: Some(THUMB_SCALE),
        text: true,
        every_request: true,
    };
    let run = browser.render_capturing(&page.url, &fetcher, timeout, capture);
    let outcome = tokio::time::timeout(timeout + GRACE, run).await;
    let asked = fetcher
        .asked
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .list;
    let mut r = Replayed {
        url: page.url.to_string(),
        site: site_of(&page.url),
        path: page.path.clone(),
        asked,
        text_length: 0,
        text: String::new(),
        thumbnail: None,
        timed_out: false,
        error: None,
    };
    match outcome {
        Ok(Ok(rendered)) => {
            let text = rendered.text.unwrap_or_default();
            r.text_length = text.chars().count();
            r.text = cut(text, MAX_TEXT);
            r.thumbnail = rendered.screenshot;
            r.timed_out = rendered.timed_out;
        }
        Ok(Err(e)) => r.error = Some(e.to_string()),
        Err(_) => {
            r.timed_out = true;
            r.error = Some(format!(
                "the browser did not give the page back within {:?}",
                timeout + GRACE
            ));
        }
    }
    r
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut at = max;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_scored_by_what_it_asked_for() {
        let asked = |missing| Asked {
            url: "http://h/a".into(),
            kind: "image".into(),
            missing,
        };
        let mut r = Replayed {
            url: "http://h/".into(),
            site: "http://h".into(),
            path: "-".into(),
            asked: vec![],
            text_length: 0,
            text: String::new(),
            thumbnail: None,
            timed_out: false,
            error: None,
        };
        assert_eq!(r.score(), 1.0);
        r.asked = vec![
            asked(None),
            asked(Some(Reason::Robots)),
            asked(None),
            asked(None),
        ];
        assert_eq!(r.score(), 0.75);
        r.error = Some("no".into());
        assert_eq!(r.score(), 0.0);
        assert_eq!(kind_of("Stylesheet"), "stylesheet");
        assert_eq!(kind_of("Document"), "frame");
        assert_eq!(cut("héllo".into(), 2), "h");
    }
}
