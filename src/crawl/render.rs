//! The crawl's side of rendering: which pages go to the browser, and the browser's requests
//! taken through the road of any URL.
//!
//! A page that [`browser::looks_empty`] (within `max_share`) is not disposed of by its own job:
//! the job gives its budget back and the page, its answer held, goes to a render task. While it
//! renders, each request the browser makes is judged as an embed of the page (hop `E`, the page
//! as via), queued on its site and fetched by an ordinary job — robots.txt first for a new site,
//! the site's and server's pacing, the address guard, the exact-bytes fetcher, a WARC record and
//! a crawl.log line — and its answer handed to the browser when that job has logged it. A URL
//! already fetched in this crawl is answered from the copy kept here (the page itself too) and
//! never asked of its server again. Once the network is idle the rendered DOM's links and meta
//! robots join the page's, and the page is disposed of as any other, marked `rendered`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash as _, Hasher as _};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use url::Url;

use super::decide::Disposition;
use super::engine::Crawler;
use super::page::{is_html, Page};
use crate::browser::{self, Browser, BrowserAnswer, BrowserRequest, BrowserSettings, RenderMode};
use crate::extract::{Hop, Outlink};
use crate::frontier::{seen_key, Candidate};
use crate::logs::crawllog::Entry;
use crate::net::fetch::Fetched;

/// Largest body kept to answer the browser from the crawl's own copy.
pub(super) const MAX_COPY_BODY: usize = 4 << 20;
/// All copies kept at once; the oldest go first.
const MAX_COPIES_BYTES: usize = 64 << 20;
/// The decoded start of a page the emptiness rule reads.
const RULE_BYTES: usize = 1 << 20;

/// A page waiting for (or being given) its render.
pub(super) struct RenderJob {
    pub(super) origin: String,
    pub(super) candidate: Candidate,
    pub(super) fetched: Fetched,
    pub(super) page: Page,
    pub(super) notes: Vec<String>,
    pub(super) thread: usize,
}

/// An answer as the browser gets it: decoded body, headers as received.
#[derive(Debug)]
struct Copy {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Copy {
    fn of(f: &Fetched) -> Copy {
        let encoding = f.header("content-encoding");
        let body = crate::extract::decode_body(encoding, &f.payload[..], MAX_COPY_BODY).bytes;
        let headers = f
            .headers
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        Copy {
            status: f.status,
            headers,
            body,
        }
    }

    fn answer(&self) -> BrowserAnswer {
        BrowserAnswer::Response {
            status: self.status,
            headers: self.headers.clone(),
            body: self.body.clone(),
        }
    }
}

/// Who waits for which URL, which URLs this run has settled, and the copies kept.
#[derive(Default)]
struct Book {
    waiters: HashMap<String, Vec<oneshot::Sender<Option<Arc<Copy>>>>>,
    /// Hashes of the URLs (seen-set keys) given a final crawl.log line in this run.
    settled: HashSet<u64>,
    copies: HashMap<String, Arc<Copy>>,
    order: VecDeque<String>,
    copy_bytes: usize,
}

impl Book {
    fn keep(&mut self, key: String, copy: Arc<Copy>) {
        self.copy_bytes += copy.body.len();
        if let Some(old) = self.copies.insert(key.clone(), copy) {
            self.copy_bytes -= old.body.len();
        } else {
            self.order.push_back(key);
        }
        while self.copy_bytes > MAX_COPIES_BYTES {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(c) = self.copies.remove(&oldest) {
                self.copy_bytes -= c.body.len();
            }
        }
    }
}

fn url_hash(key: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// The crawl's rendering: settings, the browser (started on the first page that needs it),
/// the render tasks' queue and the book of waiting requests.
pub(super) struct Rendering {
    settings: BrowserSettings,
    /// The Chromium found when the crawl started (None: pages are archived unrendered).
    executable: Option<std::path::PathBuf>,
    tabs: usize,
    browser: tokio::sync::OnceCell<Option<Arc<Browser>>>,
    jobs: mpsc::UnboundedSender<RenderJob>,
    jobs_rx: Mutex<Option<mpsc::UnboundedReceiver<RenderJob>>>,
    /// Pages handed to a render task and not yet disposed of: the crawl is not over meanwhile.
    active: AtomicUsize,
    html_pages: AtomicU64,
    rendered: AtomicU64,
    book: Mutex<Book>,
}

impl Rendering {
    /// The rendering of a crawl; says in run.log when pages that need a browser will not get one.
    pub(super) fn new(
        settings: BrowserSettings,
        tabs: usize,
        shared: bool,
        runlog: &crate::logs::runlog::RunLog,
    ) -> Rendering {
        if shared && settings.render != RenderMode::Never {
            // The browser's requests would be queued in the shared frontier, where another
            // worker may take them: the render would wait for answers it never sees.
            runlog.line("browser: not used in a shared crawl ([frontier] database); pages are archived unrendered");
        }
        let executable = match settings.render {
            RenderMode::Never => None,
            _ if shared => None,
            _ => browser::find_executable(settings.executable.as_deref()),
        };
        if settings.render != RenderMode::Never && !shared {
            match &executable {
                Some(exe) => runlog.line(&format!(
                    "browser: pages empty without JavaScript are rendered with {}",
                    exe.display()
                )),
                None => runlog.line(&format!(
                    "browser: no Chromium found ({}); pages empty without JavaScript are \
                     archived unrendered",
                    match &settings.executable {
                        Some(p) => format!("{} is not there", p.display()),
                        None => format!(
                            "looked for {} on PATH",
                            browser::process::CANDIDATES.join(", ")
                        ),
                    }
                )),
            }
        }
        let (jobs, rx) = mpsc::unbounded_channel();
        Rendering {
            settings,
            executable,
            tabs,
            browser: tokio::sync::OnceCell::new(),
            jobs,
            jobs_rx: Mutex::new(Some(rx)),
            active: AtomicUsize::new(0),
            html_pages: AtomicU64::new(0),
            rendered: AtomicU64::new(0),
            book: Mutex::default(),
        }
    }

    /// Pages being rendered now.
    pub(super) fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Whether a fetched page goes to the browser: an HTML page (not a requisite) answered
    /// 200, empty without JavaScript by the rule (any page with `render = "all"`), within the
    /// share, with a Chromium to run. Counts the page towards the share either way.
    pub(super) fn wants(&self, c: &Candidate, f: &Fetched) -> bool {
        if self.settings.render == RenderMode::Never
            || f.status != 200
            || !is_html(&f.headers)
            || c.is_requisite()
            || f.payload.is_empty()
        {
            return false;
        }
        let pages = self.html_pages.fetch_add(1, Ordering::SeqCst) + 1;
        if self.executable.is_none() {
            return false;
        }
        let qualifies = match self.settings.render {
            RenderMode::All => true,
            _ => {
                let encoding = f.header("content-encoding");
                let head = crate::extract::decode_body(encoding, &f.payload[..], RULE_BYTES);
                browser::looks_empty(&head.bytes, &f.url).is_empty()
            }
        };
        if !qualifies {
            return false;
        }
        let rendered = self.rendered.load(Ordering::SeqCst);
        if !browser::share_allows(self.settings.max_share, rendered, pages) {
            return false;
        }
        self.rendered.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Whether a URL's body is held in memory once fetched: the browser waits for it, or it
    /// is a requisite a later render may ask for.
    pub(super) fn wants_body(&self, c: &Candidate) -> bool {
        self.executable.is_some() && (c.is_requisite() || self.awaited(&c.url))
    }

    /// Waits (15 s at most) until no page is being rendered.
    pub(super) async fn settle(&self) {
        let until = Instant::now() + Duration::from_secs(15);
        while self.active() > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether the browser waits for this URL (its body is then kept in memory to answer it).
    pub(super) fn awaited(&self, url: &Url) -> bool {
        let book = lock(&self.book);
        !book.waiters.is_empty() && book.waiters.contains_key(&seen_key(url))
    }

    /// Keeps the answer of a URL the browser waits for (or may: a small requisite), before its
    /// crawl.log line hands it over.
    pub(super) fn keep_copy(&self, c: &Candidate, f: &Fetched) {
        let key = seen_key(&c.url);
        let wanted = self.awaited(&c.url);
        let small_embed = c.is_requisite() && f.payload_len as usize <= MAX_COPY_BODY;
        if self.executable.is_none() || !(wanted || small_embed) {
            return;
        }
        if f.body_skipped || (f.payload.is_empty() && f.payload_len > 0) {
            return; // nothing of the body at hand
        }
        lock(&self.book).keep(key, Arc::new(Copy::of(f)));
    }

    /// Called for every crawl.log line: a final one settles its URL and answers whoever waits.
    pub(super) fn logged(&self, entry: &Entry<'_>) {
        if self.executable.is_none() || entry.annotations.iter().any(|a| a.starts_with("retry:")) {
            return;
        }
        let Ok(url) = Url::parse(entry.uri) else {
            return;
        };
        let key = seen_key(&url);
        let mut book = lock(&self.book);
        book.settled.insert(url_hash(&key));
        if let Some(waiting) = book.waiters.remove(&key) {
            let copy = book.copies.get(&key).cloned();
            for w in waiting {
                let _ = w.send(copy.clone());
            }
        }
    }

    /// The browser, started on first use; None when it cannot be (said once in run.log).
    async fn browser(&self, runlog: &crate::logs::runlog::RunLog) -> Option<Arc<Browser>> {
        let exe = self.executable.clone()?;
        self.browser
            .get_or_init(|| async {
                match Browser::launch(&exe, self.tabs).await {
                    Ok(b) => Some(Arc::new(b)),
                    Err(e) => {
                        runlog.line(&format!(
                            "browser: {e}; pages empty without JavaScript are archived unrendered"
                        ));
                        None
                    }
                }
            })
            .await
            .clone()
    }

    /// Stops the browser, if it was started.
    pub(super) async fn close(&self) {
        if let Some(Some(b)) = self.browser.get() {
            b.close().await;
        }
    }
}

impl Crawler {
    /// Hands a page to its render task (spawned by [`render_tasks`]).
    pub(super) fn render_later(&self, job: RenderJob) {
        self.rendering.active.fetch_add(1, Ordering::SeqCst);
        if let Err(mpsc::error::SendError(job)) = self.rendering.jobs.send(job) {
            // No render loop (the crawl is ending): the page is disposed of unrendered.
            self.finish_render(job, Err("the crawl is ending".into()));
        }
    }

    /// Renders one page and disposes of it.
    async fn render(self: Arc<Self>, job: RenderJob) {
        let result = match self.rendering.browser(&self.runlog).await {
            None => Err("no browser".to_string()),
            Some(browser) => {
                let timeout = self.rendering.settings.render_timeout;
                let helper = ForBrowser {
                    crawler: &self,
                    page: &job.candidate,
                    copy: Arc::new(Copy::of(&job.fetched)),
                    until: Instant::now() + timeout,
                };
                browser
                    .render(&job.candidate.url, &helper, timeout)
                    .await
                    .map_err(|e| e.to_string())
            }
        };
        tokio::task::block_in_place(|| self.finish_render(job, result));
    }

    /// The rendered DOM's links and meta robots join the page's; the page is queued, disposed
    /// of and logged (`rendered`) as any other page.
    fn finish_render(&self, job: RenderJob, result: Result<browser::Rendered, String>) {
        let RenderJob {
            origin,
            candidate,
            mut fetched,
            page,
            mut notes,
            thread,
        } = job;
        let mut directives = page.directives;
        let mut links = page.links;
        match result {
            Ok(r) => {
                notes.push("rendered".to_string());
                if r.timed_out {
                    notes.push("render-timeout".to_string());
                }
                let max = self.profile.max_outlinks.saturating_sub(links.len());
                let dom = crate::extract::extract_html_limited(
                    r.dom.as_bytes(),
                    Some("utf-8"),
                    &candidate.url,
                    &self.profile.robots_token,
                    max,
                );
                directives.merge(dom.directives);
                links.extend(dom.links);
            }
            Err(e) if e == "no browser" => {}
            Err(e) => {
                notes.push("render-failed".to_string());
                self.runlog
                    .line(&format!("browser: {} not rendered: {e}", candidate.url));
            }
        }
        if page.trap.is_some() {
            links.retain(|l| l.hop == Hop::Embed);
        }
        if directives.follow_links() {
            self.queue_links(&candidate, links);
        }
        self.commit();
        let disposition = match directives.discard_reason() {
            Some(reason) => {
                notes.push(reason.to_string());
                Disposition::Discard { notes }
            }
            None => Disposition::Archive { notes },
        };
        self.dispose(&origin, candidate, &mut fetched, thread, disposition);
        self.rendering.active.fetch_sub(1, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// The answer to one browser request: the crawl's copy, or the URL taken through the road
    /// of any embed of the page and awaited.
    async fn for_browser(
        &self,
        page: &Candidate,
        req: BrowserRequest,
        until: Instant,
    ) -> BrowserAnswer {
        let key = seen_key(&req.url);
        let refused = |why: &str| BrowserAnswer::Refused {
            why: why.to_string(),
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut book = lock(&self.rendering.book);
            if let Some(copy) = book.copies.get(&key) {
                return copy.answer();
            }
            book.waiters.entry(key.clone()).or_default().push(tx);
        }
        let fresh = self.with_sched(|s| s.mark_seen(&req.url));
        let queued = match fresh {
            Ok(true) => {
                let link = Outlink {
                    url: req.url.clone(),
                    hop: Hop::Embed,
                    context: "browser",
                };
                match self.judge(page, link) {
                    Some(c) => {
                        let clock = super::sched::Clock::now();
                        self.with_sched(|s| s.enqueue(c, clock));
                        true
                    }
                    None => false,
                }
            }
            Ok(false) => !lock(&self.rendering.book).settled.contains(&url_hash(&key)),
            Err(e) => {
                self.fail(e);
                false
            }
        };
        if !queued {
            // Settled just now (its copy already sent), dropped by the decide rules (logged
            // there), or fetched earlier in this crawl with no copy kept: never asked again.
            let mut rx = rx;
            if let Ok(Some(copy)) = rx.try_recv() {
                return copy.answer();
            }
            lock(&self.rendering.book).waiters.remove(&key);
            return refused("not fetched for the browser");
        }
        self.wake.notify_one();
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx).await {
            Ok(Ok(Some(copy))) => copy.answer(),
            _ => refused("no answer kept for the browser"),
        }
    }
}

/// The [`browser::Fetcher`] of one render.
struct ForBrowser<'c> {
    crawler: &'c Crawler,
    page: &'c Candidate,
    copy: Arc<Copy>,
    until: Instant,
}

impl browser::Fetcher for ForBrowser<'_> {
    async fn fetch(&self, req: BrowserRequest) -> BrowserAnswer {
        if req.is_page || seen_key(&req.url) == seen_key(&self.page.url) {
            return self.copy.answer();
        }
        self.crawler.for_browser(self.page, req, self.until).await
    }
}

/// Runs each page handed to [`Crawler::render_later`] in a task of its own (the browser bounds
/// how many render at once), until the crawl drops its side of the queue.
pub(super) fn render_tasks(crawler: Arc<Crawler>) -> tokio::task::JoinHandle<()> {
    let rx = lock(&crawler.rendering.jobs_rx).take();
    tokio::spawn(async move {
        let Some(mut rx) = rx else {
            return;
        };
        while let Some(job) = rx.recv().await {
            let url = job.candidate.url.clone();
            let task = tokio::spawn(crawler.clone().render(job));
            let crawler = crawler.clone();
            tokio::spawn(async move {
                // A render that panicked leaves its page in flight (fetched again on resume);
                // the crawl must not wait for it.
                if let Err(e) = task.await {
                    crawler.runlog.line(&format!(
                        "browser: rendering {url} failed unexpectedly: {e}"
                    ));
                    crawler.rendering.active.fetch_sub(1, Ordering::SeqCst);
                    crawler.wake.notify_one();
                }
            });
        }
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
