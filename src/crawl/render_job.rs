//! Rendering on the crawl's road: a page handed to a render task, each request its browser
//! makes taken through the road of any embed (or answered from the crawl's own records), the
//! rendered DOM's links queued within their bounds, and the page disposed of as any other.
//! The rendering's state (the browser, the ledger of settled URLs, the waiters) is
//! [`Rendering`](super::render::Rendering) in `render.rs`.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;
use url::Url;

use super::decide::Disposition;
use super::disposition::{dispose, Todo};
use super::dom_links::{dom_only, RENDER_VARIANTS};
use super::engine::Crawler;
use super::locks::{Free, Key, Root};
use super::page::Page;
use super::render::RenderJob;
use super::sched::Clock;
use crate::browser::readback::{read_back, Copy, Found, Known};
use crate::browser::{self, BrowserAnswer, BrowserRequest};
use crate::extract::{Hop, Outlink};
use crate::frontier::{seen_key, Candidate};
use crate::logs::crawllog::status;

/// Hands a page to its render task (spawned by [`render_tasks`]).
pub(super) async fn render_later(crawler: &Crawler, root: &mut Root, job: RenderJob) {
    if let Err(job) = crawler.rendering.hand_over(job) {
        // No render loop (the crawl is ending): the page is disposed of unrendered.
        finish_render(crawler, root, *job, Err("the crawl is ending".into())).await;
    }
}

/// Renders one page and disposes of it.
async fn render(crawler: Arc<Crawler>, job: RenderJob) {
    let result = match crawler.rendering.browser(&crawler.desks.runlog).await {
        None => Err("no browser".to_string()),
        Some(browser) => {
            let timeout = crawler.rendering.timeout();
            let helper = ForBrowser {
                crawler: &crawler,
                page: &job.candidate,
                copy: Copy::of(&job.fetched),
                until: Instant::now() + timeout,
            };
            browser
                .render(&job.candidate.url, &helper, timeout)
                .await
                .map_err(|e| e.to_string())
        }
    };
    // The render's task starts holding nothing.
    let mut root = Root::new();
    finish_render(&crawler, &mut root, job, result).await;
}

/// The rendered DOM's links and meta robots join the page's; the page is queued, disposed
/// of and logged (`rendered`) as any other page.
async fn finish_render(
    crawler: &Crawler,
    root: &mut Root,
    job: RenderJob,
    result: Result<browser::Rendered, String>,
) {
    let RenderJob {
        origin,
        candidate,
        mut fetched,
        page,
        notes,
        thread,
    } = job;
    // Reading the DOM and queueing its links is CPU work: done beside the async workers.
    let disposition = tokio::task::block_in_place(|| {
        root.with(|key| render_disposition(crawler, key, &candidate, page, notes, result))
    });
    let todo = Todo {
        origin: &origin,
        candidate,
        thread,
        disposition,
    };
    dispose(&crawler.desks, &crawler.keeping(), root, &mut fetched, todo).await;
    crawler.rendering.job_done();
    crawler.desks.wake.notify_one();
}

/// Queues the page's links and the rendered DOM's, and says what becomes of the page.
fn render_disposition(
    crawler: &Crawler,
    key: &mut Key<Free>,
    candidate: &Candidate,
    page: Page,
    mut notes: Vec<String>,
    result: Result<browser::Rendered, String>,
) -> Disposition {
    let mut directives = page.directives;
    let mut links = page.links;
    let mut dom_links = Vec::new();
    match result {
        Ok(r) => {
            notes.push("rendered".to_string());
            if r.timed_out {
                notes.push("render-timeout".to_string());
            }
            // The DOM holds the page's own links too: it gets the whole cap.
            let dom = crate::extract::extract_html_limited(
                r.dom.as_bytes(),
                Some("utf-8"),
                &candidate.url,
                &crawler.profile.robots_token,
                crawler.profile.max_outlinks,
            );
            directives.merge(dom.directives);
            let cut = notes.iter().any(|n| n.starts_with("max-outlinks:"));
            if dom.left_out > 0 && !cut {
                notes.push(format!("max-outlinks:{}", dom.left_out));
            }
            dom_links = dom.links;
        }
        Err(e) if e == "no browser" => {}
        Err(e) => {
            notes.push("render-failed".to_string());
            crawler
                .desks
                .runlog
                .line(&format!("browser: {} not rendered: {e}", candidate.url));
        }
    }
    if page.trap.is_some() {
        links.retain(|l| l.hop == Hop::Embed);
        dom_links.retain(|l| l.hop == Hop::Embed);
    }
    if directives.follow_links() {
        queue_rendered_links(crawler, key, candidate, links, dom_links);
    }
    crawler.desks.commit(key);
    match directives.discard_reason() {
        Some(reason) => {
            notes.push(reason.to_string());
            Disposition::Discard { notes }
        }
        None => Disposition::Archive { notes },
    }
}

/// The answer to one browser request: the crawl's own record when the URL was archived
/// (in this run or an earlier one), else the URL taken through the road of any embed of
/// the page and its record awaited.
async fn for_browser(
    crawler: &Crawler,
    root: &mut Root,
    page: &Candidate,
    req: BrowserRequest,
    until: Instant,
) -> BrowserAnswer {
    let key = seen_key(&req.url);
    let (tx, rx) = oneshot::channel();
    let known = crawler.rendering.ask(&key, tx);
    match known {
        Known::At(found) => return archived_answer(crawler, &found, &req.url).await,
        Known::Settled => return refused("fetched earlier in this crawl, not archived"),
        Known::Unknown => {}
    }
    let queued = root.with(|key| queue_for_browser(crawler, key, page, &req.url));
    if !queued {
        // Dropped by the decide rules (and logged there, which settled it just now).
        let mut rx = rx;
        if let Ok(Some(found)) = rx.try_recv() {
            return archived_answer(crawler, &found, &req.url).await;
        }
        crawler.rendering.forget(&key);
        return refused("not fetched for the browser");
    }
    crawler.desks.wake.notify_one();
    let left = until.saturating_duration_since(Instant::now());
    match tokio::time::timeout(left, rx).await {
        Ok(Ok(Some(found))) => archived_answer(crawler, &found, &req.url).await,
        Ok(_) => refused("not archived"),
        Err(_) => {
            // The receiver is gone: its sender should not wait in the book for good.
            crawler.rendering.prune(&key);
            refused("not fetched within render_timeout")
        }
    }
}

/// Queues a URL the browser asks for as an embed of the page, unless it is known already
/// (then its crawl.log line will come) or the decide rules drop it (logged there): false
/// when no crawl.log line is to be waited for.
fn queue_for_browser(crawler: &Crawler, key: &mut Key<Free>, page: &Candidate, url: &Url) -> bool {
    match crawler.desks.with_sched(key, |s| s.mark_seen(url)) {
        Ok(true) => {
            let link = Outlink {
                url: url.clone(),
                hop: Hop::Embed,
                context: "browser",
            };
            match crawler.links().judge(key, page, link, None) {
                Some(c) => {
                    let clock = super::sched::Clock::now();
                    crawler.desks.with_sched(key, |s| s.enqueue(c, clock));
                    true
                }
                None => false,
            }
        }
        // Queued or in flight (in this run, or left queued by an earlier one): its
        // crawl.log line will come.
        Ok(false) => true,
        Err(e) => {
            crawler.desks.fail(key, e);
            false
        }
    }
}

fn refused(why: &str) -> BrowserAnswer {
    BrowserAnswer::Refused {
        why: why.to_string(),
    }
}

/// The browser's answer read back from the WARC record at `found`; a record that cannot
/// be read is refused to the browser and said in run.log.
async fn archived_answer(crawler: &Crawler, found: &Found, url: &Url) -> BrowserAnswer {
    match read_back(crawler.rendering.warc_dir(), found, url).await {
        Ok(copy) => copy.answer(),
        Err(e) => {
            crawler
                .desks
                .runlog
                .line(&format!("browser: {url} not given to the browser: {e}"));
            refused(&e)
        }
    }
}

/// The [`browser::Fetcher`] of one render.
struct ForBrowser<'c> {
    crawler: &'c Crawler,
    page: &'c Candidate,
    copy: Copy,
    until: Instant,
}

impl browser::Fetcher for ForBrowser<'_> {
    async fn fetch(&self, req: BrowserRequest) -> BrowserAnswer {
        if req.is_page || seen_key(&req.url) == seen_key(&self.page.url) {
            return self.copy.answer();
        }
        // Each request the browser makes is answered in a task of the browser's, apart from
        // the render's own steps: it starts holding nothing.
        let mut root = Root::new();
        for_browser(self.crawler, &mut root, self.page, req, self.until).await
    }

    fn refused(&self, url: &str, what: browser::Refusal) {
        let mut root = Root::new();
        root.with(|key| log_refused_by_browser(self.crawler, key, self.page, url, what));
    }
}

/// What the page tried and the browser refused by itself (a pop-up, a WebSocket, a POST, a
/// service worker): never fetched, logged `-5002` (Heritrix's "blocked by a processor")
/// as a link (a pop-up) or an embed of the page, annotated `browser:KIND`.
fn log_refused_by_browser(
    crawler: &Crawler,
    key: &mut Key<Free>,
    page: &Candidate,
    url: &str,
    what: browser::Refusal,
) {
    let Ok(url) = Url::parse(url) else {
        return;
    };
    let hop = match what {
        browser::Refusal::Popup => Hop::Link,
        _ => Hop::Embed,
    };
    let c = Candidate {
        url,
        path: format!("{}{}", page.path, hop.letter()),
        via: Some(page.url.clone()),
        attempts: 0,
    };
    crawler.desks.log_unfetched(
        key,
        &c,
        BROWSER_REFUSED,
        &format!("browser:{}", what.name()),
    );
}

/// crawl.log's status of what the browser refused by itself.
const BROWSER_REFUSED: i32 = -5002;

/// Runs each page handed to [`render_later`] in a task of its own (the browser bounds
/// how many render at once), until the crawl drops its side of the queue.
pub(super) fn render_tasks(crawler: Arc<Crawler>) -> tokio::task::JoinHandle<()> {
    let rx = crawler.rendering.take_jobs();
    tokio::spawn(async move {
        let Some(mut rx) = rx else {
            return;
        };
        while let Some(job) = rx.recv().await {
            let url = job.candidate.url.clone();
            let task = tokio::spawn(render(crawler.clone(), job));
            let crawler = crawler.clone();
            tokio::spawn(async move {
                // A render that panicked leaves its page in flight (fetched again on resume);
                // the crawl must not wait for it.
                if let Err(e) = task.await {
                    crawler.desks.runlog.line(&format!(
                        "browser: rendering {url} failed unexpectedly: {e}"
                    ));
                    crawler.rendering.job_done();
                    crawler.desks.wake.notify_one();
                }
            });
        }
    })
}

/// Queues a rendered page's own links and, within the bounds, the URLs its DOM alone
/// offers; those past the bounds are logged and never fetched.
pub(super) fn queue_rendered_links(
    crawler: &Crawler,
    key: &mut Key<Free>,
    page: &Candidate,
    links: Vec<Outlink>,
    dom: Vec<Outlink>,
) {
    let extra = dom_only(&links, dom);
    crawler.links().queue(key, page, links);
    if extra.is_empty() {
        return;
    }
    // Only URLs the crawl meets here for the first time count (and are marked seen now).
    let seen = crawler.desks.with_sched(key, |s| {
        let urls: Vec<&url::Url> = extra.iter().map(|l| &l.url).collect();
        s.mark_seen_all(&urls)
    });
    let new: Vec<Outlink> = match seen {
        Ok(new) => extra
            .into_iter()
            .zip(new)
            .filter_map(|(l, new)| new.then_some(l))
            .collect(),
        Err(e) => return crawler.desks.fail(key, e),
    };
    let settings = &crawler.profile.browser;
    let wanted = new.len().min(settings.max_dom_links_per_page);
    let origin = crate::scope::origin_of(&page.url);
    let granted =
        crawler
            .rendering
            .dom_links()
            .take(&origin, wanted, settings.max_dom_links_per_site);
    let mut new = new.into_iter();
    let accepted: Vec<Candidate> = new
        .by_ref()
        .take(granted)
        .filter_map(|link| crawler.links().judge(key, page, link, None))
        .collect();
    crawler.desks.with_sched(key, |s| {
        let clock = Clock::now();
        for c in accepted {
            s.enqueue(c, clock);
        }
    });
    for link in new {
        let c = Candidate {
            path: format!("{}{}", page.path, link.hop.letter()),
            url: link.url,
            via: Some(page.url.clone()),
            attempts: 0,
        };
        crawler
            .desks
            .log_unfetched(key, &c, status::OUT_OF_SCOPE, RENDER_VARIANTS);
    }
}
