//! The rendering's state: its settings, the browser (started on the first page that needs
//! it), the render tasks' queue, the ledger of what the crawl settled (read back from crawl.log
//! when the first page goes to the browser) and the book of browser requests waiting for their
//! URL's crawl.log line. Which pages go to the browser is [`Rendering::wants`]. The stage that
//! renders a page and takes its browser's requests through the road of any URL is
//! `render_job.rs`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use url::Url;

use super::page::{is_html, Page};
use crate::browser::readback::{Found, Known, Ledger, Line, Pending};
use crate::browser::{self, Browser, BrowserSettings, RenderMode};
use crate::frontier::{seen_key, Candidate};
use crate::logs::crawllog::Entry;
use crate::net::fetch::Fetched;

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

/// Whether the page's own `<a>`/`<area>` links make it an ordinary page (see
/// [`browser::links_show_ordinary`]).
fn links_show_ordinary(url: &Url, page: &Page) -> bool {
    let anchors = page
        .links
        .iter()
        .filter(|l| matches!(l.context, "a/@href" | "area/@href"))
        .map(|l| &l.url);
    browser::links_show_ordinary(url, anchors)
}

/// Who waits for which URL, and what the crawl knows of each URL it settled (kept from the
/// first page that goes to the browser on: see [`Rendering::open_ledger`]).
///
/// Behind a mutex of its own, outside the engine's three (`super::locks`), because it is a
/// leaf: it is only reached through [`Rendering::with_book`], whose closures touch the book
/// alone — no engine lock, no I/O, no `.await` — so no lock is ever taken while it is held,
/// and it cannot be part of a cycle whichever lock its caller holds (today none: crawl.log
/// lines reach [`Rendering::logged`] after the journal lock is released).
struct Book {
    waiters: HashMap<String, Vec<oneshot::Sender<Option<Found>>>>,
    ledger: Ledger,
    /// While the ledger is read from crawl.log: the final lines logged meanwhile, in order.
    opening: Option<Vec<Pending>>,
}

/// What the crawl archived before the ledger is kept, for the browser: this run's and earlier
/// runs' crawl.log, and the WARCs recovered at start.
pub(super) struct Earlier<'a> {
    pub(super) crawl_log: &'a Path,
    /// URLs found archived in WARCs recovered at start (not in crawl.log: a crash came between).
    pub(super) recovered: &'a HashSet<String>,
    pub(super) warc_dir: &'a Path,
}

impl super::journal::LineWatcher for Rendering {
    fn logged(&self, entry: &Entry<'_>) {
        Rendering::logged(self, entry);
    }
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
    /// Taken once, when the render loop starts. A leaf lock like the book's: nothing else is
    /// locked, awaited or read while it is held.
    jobs_rx: Mutex<Option<mpsc::UnboundedReceiver<RenderJob>>>,
    /// Where this crawl's WARCs are: answers for the browser are read back from them.
    warc_dir: PathBuf,
    /// Pages handed to a render task and not yet disposed of: the crawl is not over meanwhile.
    active: AtomicUsize,
    html_pages: AtomicU64,
    rendered: AtomicU64,
    /// SHA-1 of every payload handed to the browser: a payload met again under another URL
    /// (a `?query` variant serving the same file) is not rendered again, unless
    /// `rerender_duplicates`. A leaf lock, like the book's.
    rendered_payloads: Mutex<HashSet<[u8; 20]>>,
    /// DOM-only links followed per site (see `super::dom_links`).
    dom_links: super::dom_links::DomLinkCounts,
    book: Mutex<Book>,
    /// Whether final crawl.log lines are noted in the book's ledger: not until a page goes to
    /// the browser. Most crawls render nothing, and a ledger kept from the start would grow
    /// with every URL of a crawl that never needs it.
    ledger_on: AtomicBool,
    /// The ledger's opening: the crawl.log to read, once.
    ledger_opened: tokio::sync::OnceCell<()>,
    crawl_log: PathBuf,
    /// The keys of URLs found archived in WARCs recovered at start (no crawl.log line says
    /// so), until the ledger is opened.
    recovered: Mutex<Vec<u64>>,
}

impl Rendering {
    /// The rendering of a crawl; says in run.log when pages that need a browser will not get one.
    /// With a browser to run, the URLs of WARCs recovered at start are kept for the ledger,
    /// which is read from crawl.log when the first page goes to the browser.
    pub(super) fn new(
        settings: BrowserSettings,
        tabs: usize,
        shared: bool,
        earlier: Earlier<'_>,
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
        let recovered = match executable {
            Some(_) => Ledger::recovered_keys(earlier.recovered),
            None => Vec::new(),
        };
        let (jobs, rx) = mpsc::unbounded_channel();
        Rendering {
            settings,
            executable,
            tabs,
            browser: tokio::sync::OnceCell::new(),
            jobs,
            jobs_rx: Mutex::new(Some(rx)),
            warc_dir: earlier.warc_dir.to_path_buf(),
            active: AtomicUsize::new(0),
            html_pages: AtomicU64::new(0),
            rendered: AtomicU64::new(0),
            rendered_payloads: Mutex::new(HashSet::new()),
            dom_links: super::dom_links::DomLinkCounts::default(),
            book: Mutex::new(Book {
                waiters: HashMap::new(),
                ledger: Ledger::default(),
                opening: None,
            }),
            ledger_on: AtomicBool::new(false),
            ledger_opened: tokio::sync::OnceCell::new(),
            crawl_log: earlier.crawl_log.to_path_buf(),
            recovered: Mutex::new(recovered),
        }
    }

    /// Starts keeping the ledger, once, before the browser's first request: from now on final
    /// lines are kept as they are logged, what was logged before (this run's lines and earlier
    /// runs') is read from crawl.log meanwhile, and the lines kept are noted after those read,
    /// as if the whole file had been read.
    ///
    /// No line falls between the two: a line is written to crawl.log (a system call) before
    /// [`Rendering::logged`] looks at the switch, so a line that found it off was in the file
    /// before the switch was turned on and the file opened and read. (This leans on the write
    /// and read system calls ordering memory, as the kernel's locks on the file do; Rust's
    /// atomics alone do not order a system call.) A line in both is noted twice, the same way.
    /// Kept lines are noted in the order `logged` saw them, which is also the order a ledger
    /// kept all along would have noted them.
    async fn open_ledger(&self, runlog: &crate::logs::runlog::RunLog) {
        self.ledger_opened
            .get_or_init(|| async {
                let recovered = self.begin_ledger();
                let path = self.crawl_log.clone();
                let keys = recovered.clone();
                let read = tokio::task::spawn_blocking(move || Ledger::load(&path, &keys))
                    .await
                    .map_err(|e| std::io::Error::other(e.to_string()))
                    .and_then(|r| r);
                let ledger = read.unwrap_or_else(|e| {
                    runlog.line(&format!(
                        "browser: cannot read {} ({e}): URLs archived before the first render \
                         are not fetched again for the browser, which waits for them until \
                         render_timeout",
                        self.crawl_log.display()
                    ));
                    // The recovered URLs are known without the file.
                    Ledger::settled(&recovered)
                });
                self.finish_ledger(ledger);
            })
            .await;
    }

    /// Turns the switch on (lines are kept from now on); the recovered URLs' keys to read with
    /// crawl.log (copied: an opening cut short leaves them for the next).
    fn begin_ledger(&self) -> Vec<u64> {
        self.with_book(|b| {
            b.opening.get_or_insert_with(Vec::new);
            self.ledger_on.store(true, Ordering::SeqCst);
        });
        lock(&self.recovered).clone()
    }

    /// The ledger read from crawl.log, with the lines kept meanwhile noted after it.
    fn finish_ledger(&self, mut ledger: Ledger) {
        self.with_book(|b| {
            for line in b.opening.take().unwrap_or_default() {
                line.note_in(&mut ledger);
            }
            b.ledger = ledger;
        });
        *lock(&self.recovered) = Vec::new();
    }

    /// Lends the book to `f` (see [`Book`]: a leaf lock).
    fn with_book<R>(&self, f: impl FnOnce(&mut Book) -> R) -> R {
        f(&mut lock(&self.book))
    }

    /// The DOM-only links followed so far, per site.
    pub(super) fn dom_links(&self) -> &super::dom_links::DomLinkCounts {
        &self.dom_links
    }

    /// Whether this payload is new to the browser (and noted as rendered from now on); always
    /// true with `rerender_duplicates`.
    fn first_render_of(&self, payload: &[u8]) -> bool {
        if self.settings.rerender_duplicates {
            return true;
        }
        use sha1::Digest as _;
        let digest: [u8; 20] = sha1::Sha1::digest(payload).into();
        lock(&self.rendered_payloads).insert(digest)
    }

    /// Pages being rendered now.
    pub(super) fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Whether a fetched page goes to the browser: an HTML page (not a requisite) answered
    /// 200, empty without JavaScript by the rule (any page with `render = "all"`), within the
    /// share, with a Chromium to run, and a payload not rendered before under another URL.
    /// Counts the page towards the share either way.
    pub(super) fn wants(&self, c: &Candidate, f: &Fetched, page: &Page) -> bool {
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
            // Its links already tell: no second parse of the page.
            _ if links_show_ordinary(&f.url, page) => false,
            _ => {
                let encoding = f.header("content-encoding");
                let head = crate::extract::decode_slice(encoding, &f.payload, RULE_BYTES);
                browser::empty_without_js(&head.bytes, &f.url)
            }
        };
        if !qualifies {
            return false;
        }
        let rendered = self.rendered.load(Ordering::SeqCst);
        if !browser::share_allows(self.settings.max_share, rendered, pages) {
            return false;
        }
        // Checked last: a payload is noted only when it is really rendered.
        if !self.first_render_of(&f.payload) {
            return false;
        }
        self.rendered.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Waits (15 s at most) until no page is being rendered.
    pub(super) async fn settle(&self) {
        let until = Instant::now() + Duration::from_secs(15);
        while self.active() > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Called for every crawl.log line: a final one settles its URL (with where its record
    /// is, if archived) and hands that to whoever waits for it.
    pub(super) fn logged(&self, entry: &Entry<'_>) {
        let line = Line {
            uri: entry.uri,
            status: entry.status,
            digest: entry.digest,
            annotations: &entry.annotations,
            extra: entry.extra.as_ref(),
        };
        if !self.ledger_on.load(Ordering::SeqCst) || !line.settles() {
            return;
        }
        let parsed;
        let url = match entry.url {
            Some(url) => url,
            None => match Url::parse(entry.uri) {
                Ok(url) => {
                    parsed = url;
                    &parsed
                }
                Err(_) => return,
            },
        };
        let key = seen_key(url);
        let (found, waiting) = self.with_book(|b| {
            if let Some(kept) = &mut b.opening {
                // Noted once the file is read (nobody waits meanwhile: the browser has not
                // asked yet).
                kept.push(Pending::of(&line, key));
                return (None, None);
            }
            let found = b.ledger.note_keyed(&line, &key);
            (found, b.waiters.remove(&key))
        });
        for w in waiting.into_iter().flatten() {
            let _ = w.send(found.clone());
        }
    }

    /// The browser, started on first use; None when it cannot be (said once in run.log).
    pub(super) async fn browser(
        &self,
        runlog: &crate::logs::runlog::RunLog,
    ) -> Option<Arc<Browser>> {
        let exe = self.executable.clone()?;
        let browser = self
            .browser
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
            .clone()?;
        // Its requests are answered from the ledger: kept from now on (not if it never runs).
        self.open_ledger(runlog).await;
        Some(browser)
    }

    /// A page goes to the render loop; given back when there is no loop any more (the crawl
    /// is ending). Counted active from now until [`Self::job_done`].
    pub(super) fn hand_over(&self, job: RenderJob) -> Result<(), Box<RenderJob>> {
        self.active.fetch_add(1, Ordering::SeqCst);
        self.jobs
            .send(job)
            .map_err(|mpsc::error::SendError(job)| Box::new(job))
    }

    /// A page handed over is disposed of (or its render failed).
    pub(super) fn job_done(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    /// The render loop's side of the queue, taken once.
    pub(super) fn take_jobs(&self) -> Option<mpsc::UnboundedReceiver<RenderJob>> {
        lock(&self.jobs_rx).take()
    }

    /// How long one page may take to render.
    pub(super) fn timeout(&self) -> Duration {
        self.settings.render_timeout
    }

    /// The crawl's WARC folder, where the browser's answers are read back from.
    pub(super) fn warc_dir(&self) -> &Path {
        &self.warc_dir
    }

    /// What the crawl knows of a URL the browser asks for; while unknown, `tx` waits for its
    /// final crawl.log line.
    pub(super) fn ask(&self, key: &str, tx: oneshot::Sender<Option<Found>>) -> Known {
        self.with_book(|b| {
            let known = b.ledger.known(key);
            if matches!(known, Known::Unknown) {
                b.waiters.entry(key.to_string()).or_default().push(tx);
            }
            known
        })
    }

    /// Nobody waits for this URL any more.
    pub(super) fn forget(&self, key: &str) {
        self.with_book(|b| b.waiters.remove(key));
    }

    /// The waiters of a URL whose receivers are gone leave the book.
    pub(super) fn prune(&self, key: &str) {
        self.with_book(|b| {
            if let Some(waiting) = b.waiters.get_mut(key) {
                waiting.retain(|w| !w.is_closed());
                if waiting.is_empty() {
                    b.waiters.remove(key);
                }
            }
        });
    }

    /// Stops the browser, if it was started.
    pub(super) async fn close(&self) {
        if let Some(Some(b)) = self.browser.get() {
            b.close().await;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::crawllog::CrawlLog;
    use crate::logs::runlog::RunLog;

    fn archived<'a>(url: &'a Url, offset: u64, notes: Vec<String>) -> Entry<'a> {
        Entry {
            status: 200,
            uri: url.as_str(),
            url: Some(url),
            digest: Some("sha1:X"),
            annotations: notes,
            extra: Some(serde_json::json!({"warcFilename": "A.warc.gz", "warcFileOffset": offset})),
            ..Entry::default()
        }
    }

    /// (offset, own record) of where the ledger says the URL's answer is; (0, false): settled
    /// without a record.
    fn known(r: &Rendering, url: &Url) -> Option<(u64, bool)> {
        r.with_book(|b| match b.ledger.known(&seen_key(url)) {
            Known::At(found) => Some((found.offset, found.own)),
            Known::Settled => Some((0, false)),
            Known::Unknown => None,
        })
    }

    /// A rendering with a browser to run (any executable file: it is not started here).
    fn rendering(dir: &Path, recovered: &HashSet<String>) -> (Rendering, RunLog) {
        let runlog = RunLog::open(&dir.join("run.log")).expect("run.log");
        let settings = BrowserSettings {
            executable: Some(std::env::current_exe().expect("the test binary")),
            ..BrowserSettings::default()
        };
        let earlier = Earlier {
            crawl_log: &dir.join("crawl.log"),
            recovered,
            warc_dir: dir,
        };
        (Rendering::new(settings, 1, false, earlier, &runlog), runlog)
    }

    #[tokio::test]
    async fn the_ledger_is_kept_from_the_first_render_on_and_learns_what_was_logged_before() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut log = CrawlLog::open(&dir.path().join("crawl.log")).expect("crawl.log");
        let recovered = HashSet::from(["http://h/recovered".to_string()]);
        let (rendering, runlog) = rendering(dir.path(), &recovered);

        let before = Url::parse("http://h/before").unwrap();
        log.write(&archived(&before, 10, vec![])).expect("a line");
        rendering.logged(&archived(&before, 10, vec![]));
        // No page went to the browser: nothing is kept for it.
        assert_eq!(known(&rendering, &before), None);

        rendering.open_ledger(&runlog).await;
        assert_eq!(known(&rendering, &before), Some((10, true)), "read");
        let recovered = Url::parse("http://h/recovered").unwrap();
        assert_eq!(known(&rendering, &recovered), Some((0, false)), "recovered");

        let after = Url::parse("http://h/after").unwrap();
        log.write(&archived(&after, 20, vec![])).expect("a line");
        rendering.logged(&archived(&after, 20, vec![]));
        assert_eq!(
            known(&rendering, &after),
            Some((20, true)),
            "noted as logged"
        );
    }

    #[test]
    fn lines_logged_while_crawl_log_is_read_are_noted_after_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("crawl.log");
        let mut log = CrawlLog::open(&path).expect("crawl.log");
        let (rendering, _runlog) = rendering(dir.path(), &HashSet::new());
        let original = Url::parse("http://h/original").unwrap();
        log.write(&archived(&original, 10, vec![])).expect("a line");

        let recovered = rendering.begin_ledger();
        let read = Ledger::load(&path, &recovered).expect("crawl.log read");
        // Logged after the reader's end of file: a revisit of the payload read, a new URL.
        let revisit = Url::parse("http://h/revisit").unwrap();
        let later = Url::parse("http://h/later").unwrap();
        for entry in [
            archived(&revisit, 30, vec!["duplicate:digest".to_string()]),
            archived(&later, 40, vec![]),
        ] {
            log.write(&entry).expect("a line");
            rendering.logged(&entry);
        }
        assert_eq!(
            known(&rendering, &later),
            None,
            "not yet: the file is being read"
        );
        rendering.finish_ledger(read);

        assert_eq!(known(&rendering, &original), Some((10, true)));
        assert_eq!(
            known(&rendering, &revisit),
            Some((10, false)),
            "its original"
        );
        assert_eq!(known(&rendering, &later), Some((40, true)));
    }
}
