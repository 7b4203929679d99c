//! Rendering one page in its own tab: every request the page makes is paused at the Request
//! stage and answered by the crawler's [`Fetcher`]; the DOM is taken once the network is idle.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt as _};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use url::Url;

use super::cdp::{CdpError, Event};
use super::process::Browser;

/// Beyond the render's timeout, how long the browser may take to give the page back (its DOM,
/// and what a [`Capture`] asks for) before the render is given up and its tab closed.
const GIVE_BACK: Duration = Duration::from_secs(30);

/// Quiet time after the load event, with no request open, that counts as "network idle".
const IDLE: Duration = Duration::from_millis(500);

/// A request the page made, for the crawler to judge and fetch.
#[derive(Debug, Clone)]
pub struct BrowserRequest {
    pub url: Url,
    /// Chromium's resource type: `Document`, `Script`, `Image`, `XHR`, `Fetch`, …
    pub resource_type: String,
    /// The navigation to the rendered page itself.
    pub is_page: bool,
}

/// The crawler's answer to one request.
#[derive(Debug, Clone)]
pub enum BrowserAnswer {
    /// Given to the page as the server's answer; `body` without content or transfer encoding.
    Response {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Not fetched (out of scope, robots.txt, opt-out, a failed fetch…): the page sees a
    /// blocked request. `why` is for the caller's logs.
    Refused { why: String },
}

/// Who fetches for the browser: the crawl engine (or, in tests, pages held in memory).
pub trait Fetcher: Sync {
    fn fetch(&self, req: BrowserRequest) -> impl Future<Output = BrowserAnswer> + Send;

    /// Something the page tried that the tab refused by itself, never handed to
    /// [`Fetcher::fetch`]: said once per render and URL, so the crawl can log it.
    fn refused(&self, _url: &str, _what: Refusal) {}
}

/// What a page tried that no crawler may do for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// `window.open`, a `target=_blank` link or form: a new window (closed at once).
    Popup,
    /// A WebSocket: never intercepted as a request, it fails at the dead proxy.
    WebSocket,
    /// A request other than GET (a POST, a beacon…).
    Method,
    /// A service or shared worker (closed before it runs).
    Worker,
}

impl Refusal {
    /// As crawl.log's annotation has it (`browser:…`).
    pub fn name(self) -> &'static str {
        match self {
            Refusal::Popup => "popup",
            Refusal::WebSocket => "websocket",
            Refusal::Method => "method",
            Refusal::Worker => "service-worker",
        }
    }
}

/// What a render gives back.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// `document.documentElement.outerHTML` once the network was idle (or at the timeout).
    pub dom: String,
    /// Requests answered with a response.
    pub answered: usize,
    /// Requests refused: by the fetcher, or by the tab (not GET, not http).
    pub refused: usize,
    /// The render took `render_timeout`; `dom` is the page as it was then.
    pub timed_out: bool,
    /// The page's text (`document.body.innerText`), when [`Capture::text`] asked for it.
    pub text: Option<String>,
    /// A PNG of the viewport, when [`Capture::screenshot_scale`] asked for one.
    pub screenshot: Option<Vec<u8>>,
}

/// What to take from the page once the network is idle, besides its DOM (`archiver qa`'s
/// thumbnails and text length; the crawl's renders take nothing more).
#[derive(Debug, Clone, Copy, Default)]
pub struct Capture {
    /// Take a PNG of the viewport scaled by this factor (0.25: a 320×256 thumbnail).
    pub screenshot_scale: Option<f64>,
    /// Take the page's text.
    pub text: bool,
    /// Turn the browser's cache off in the tab, so every request the page makes reaches the
    /// fetcher, even one an earlier page of the same site made (qa counts them page by page).
    pub every_request: bool,
}

/// The viewport the browser is started with (`--window-size`), which a screenshot clips.
pub(crate) const VIEWPORT: (u32, u32) = (1280, 1024);

/// Why a page could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Cdp(#[from] CdpError),
    #[error("the page did not load: {0}")]
    Navigation(String),
    #[error("the page was not given back within {0:?}")]
    Stuck(Duration),
}

type Answering<'a> =
    Pin<Box<dyn Future<Output = (Option<String>, String, BrowserAnswer)> + Send + 'a>>;

impl Browser {
    /// Renders `page` in a new tab, at most `timeout`, waiting first for a free tab.
    pub async fn render<F: Fetcher>(
        &self,
        page: &Url,
        fetcher: &F,
        timeout: Duration,
    ) -> Result<Rendered, RenderError> {
        self.render_capturing(page, fetcher, timeout, Capture::default())
            .await
    }

    /// [`Browser::render`], taking what `capture` asks for before the tab is closed.
    pub async fn render_capturing<F: Fetcher>(
        &self,
        page: &Url,
        fetcher: &F,
        timeout: Duration,
        capture: Capture,
    ) -> Result<Rendered, RenderError> {
        let _tab = self.tabs.acquire().await.map_err(|_| CdpError::Closed)?;
        let created = self
            .cdp
            .call(None, "Target.createTarget", json!({"url": "about:blank"}))
            .await?;
        let target = created["targetId"].as_str().unwrap_or_default().to_string();
        let run = self.render_in(&target, page, fetcher, (timeout, capture));
        // Cut here, so the tab is closed whatever the page does.
        let result = match tokio::time::timeout(timeout + GIVE_BACK, run).await {
            Ok(r) => r,
            Err(_) => Err(RenderError::Stuck(timeout + GIVE_BACK)),
        };
        let _ = self
            .cdp
            .call(None, "Target.closeTarget", json!({"targetId": target}))
            .await;
        result
    }

    async fn render_in<F: Fetcher>(
        &self,
        target: &str,
        page: &Url,
        fetcher: &F,
        (timeout, capture): (Duration, Capture),
    ) -> Result<Rendered, RenderError> {
        let attached = self
            .cdp
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
            )
            .await?;
        let session = attached["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (tx, rx) = mpsc::unbounded_channel();
        self.cdp.route(&session, tx.clone());
        let mut run = Run {
            browser: self,
            events: tx,
            sessions: vec![session.clone()],
            answered: 0,
            refused: 0,
            said: HashSet::new(),
            no_cache: capture.every_request,
        };
        let out = run.drive(&session, rx, page, fetcher, timeout).await;
        let out = match out {
            Ok(rendered) => run.capture(&session, rendered, capture).await,
            Err(e) => Err(e),
        };
        for s in &run.sessions {
            self.cdp.unroute(s);
        }
        out
    }
}

/// One render in progress: the tab's session and those of its frames and workers.
struct Run<'b> {
    browser: &'b Browser,
    events: mpsc::UnboundedSender<Event>,
    sessions: Vec<String>,
    answered: usize,
    refused: usize,
    /// What the tab refused by itself and has said so (each once per render).
    said: HashSet<(Refusal, String)>,
    /// The browser's cache is off in this tab ([`Capture::every_request`]).
    no_cache: bool,
}

impl Run<'_> {
    /// Intercepts every request of `session`, refuses what a page must not do, and lets the
    /// session run.
    async fn prepare(&self, session: &str) -> Result<(), CdpError> {
        let cdp = &self.browser.cdp;
        let s = Some(session);
        cdp.call(
            s,
            "Fetch.enable",
            json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}),
        )
        .await?;
        // Frames and workers the page starts are attached paused, so they are intercepted too.
        cdp.call(
            s,
            "Target.setAutoAttach",
            json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}),
        )
        .await?;
        // Not every target knows these; the dead proxy is the guard if one does not.
        let _ = cdp
            .call(s, "Network.setBypassServiceWorker", json!({"bypass": true}))
            .await;
        let _ = cdp.call(s, "Page.enable", json!({})).await;
        // Only for `Network.webSocketCreated`: WebSockets are not seen by `Fetch`.
        let _ = cdp.call(s, "Network.enable", json!({})).await;
        if self.no_cache {
            let _ = cdp
                .call(
                    s,
                    "Network.setCacheDisabled",
                    json!({"cacheDisabled": true}),
                )
                .await;
        }
        let _ = cdp
            .call(s, "Runtime.runIfWaitingForDebugger", json!({}))
            .await;
        Ok(())
    }

    async fn drive<'f, F: Fetcher>(
        &mut self,
        session: &str,
        mut rx: mpsc::UnboundedReceiver<Event>,
        page: &Url,
        fetcher: &'f F,
        timeout: Duration,
    ) -> Result<Rendered, RenderError> {
        let started = Instant::now();
        let deadline = started + timeout;
        self.prepare(session).await?;
        let cdp = self.browser.cdp.clone();
        let nav_session = session.to_string();
        let nav_url = page.to_string();
        let mut navigation = Box::pin(async move {
            cdp.call(Some(&nav_session), "Page.navigate", json!({"url": nav_url}))
                .await
        });
        let mut navigated = false;
        let mut loaded = false;
        let mut last_activity = Instant::now();
        let mut open: FuturesUnordered<Answering<'f>> = FuturesUnordered::new();
        let mut timed_out = false;
        loop {
            let quiet_at = (last_activity + IDLE).max(Instant::now() + Duration::from_millis(20));
            tokio::select! {
                nav = &mut navigation, if !navigated => {
                    navigated = true;
                    let v = nav?;
                    if let Some(err) = v.get("errorText").and_then(Value::as_str) {
                        return Err(RenderError::Navigation(err.to_string()));
                    }
                }
                Some(ev) = rx.recv() => {
                    last_activity = Instant::now();
                    match ev.method.as_str() {
                        "Fetch.requestPaused" => {
                            if let Some(f) = self.paused(&ev, page, fetcher) {
                                open.push(f);
                            }
                        }
                        "Page.loadEventFired" if ev.session.as_deref() == Some(session) => {
                            loaded = true;
                        }
                        "Target.attachedToTarget" => self.attached(&ev, fetcher).await,
                        "Page.windowOpen" => self.said(fetcher, &ev.params["url"], Refusal::Popup),
                        "Network.webSocketCreated" => {
                            self.said(fetcher, &ev.params["url"], Refusal::WebSocket);
                        }
                        "Page.javascriptDialogOpening" => {
                            self.browser.cdp.send(ev.session.as_deref(), "Page.handleJavaScriptDialog", json!({"accept": false}));
                        }
                        _ => {}
                    }
                }
                Some((s, id, answer)) = open.next(), if !open.is_empty() => {
                    last_activity = Instant::now();
                    self.answer(s.as_deref(), &id, answer);
                }
                _ = tokio::time::sleep_until(quiet_at.min(deadline).into()) => {
                    let now = Instant::now();
                    if now >= deadline {
                        timed_out = true;
                        break;
                    }
                    if loaded && open.is_empty() && now >= last_activity + IDLE {
                        break;
                    }
                }
            }
        }
        // Requests still open at the timeout are dropped: the crawler may still fetch them, the
        // page will not see them.
        drop(open);
        if timed_out {
            // A script that never yields would keep the DOM from being read.
            let _ = self
                .browser
                .cdp
                .call(Some(session), "Runtime.terminateExecution", json!({}))
                .await;
        }
        let dom = self
            .browser
            .cdp
            .call(
                Some(session),
                "Runtime.evaluate",
                json!({
                    "expression": "document.documentElement ? document.documentElement.outerHTML : ''",
                    "returnByValue": true
                }),
            )
            .await?;
        let dom = dom["result"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        Ok(Rendered {
            dom,
            answered: self.answered,
            refused: self.refused,
            timed_out,
            text: None,
            screenshot: None,
        })
    }

    /// Takes what `capture` asks for from the loaded page. A screenshot that fails leaves none
    /// (the page is still reported); a dead browser is an error.
    async fn capture(
        &self,
        session: &str,
        mut rendered: Rendered,
        capture: Capture,
    ) -> Result<Rendered, RenderError> {
        let cdp = &self.browser.cdp;
        if capture.text {
            let v = cdp
                .call(
                    Some(session),
                    "Runtime.evaluate",
                    json!({
                        "expression": "document.body ? document.body.innerText : ''",
                        "returnByValue": true
                    }),
                )
                .await?;
            rendered.text = Some(
                v["result"]["value"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        if let Some(scale) = capture.screenshot_scale {
            let (width, height) = VIEWPORT;
            let shot = cdp
                .call(
                    Some(session),
                    "Page.captureScreenshot",
                    json!({
                        "format": "png",
                        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": scale}
                    }),
                )
                .await;
            rendered.screenshot = match shot {
                Ok(v) => v["data"]
                    .as_str()
                    .and_then(|d| data_encoding::BASE64.decode(d.as_bytes()).ok()),
                Err(CdpError::Closed) => return Err(CdpError::Closed.into()),
                Err(e) => {
                    tracing::debug!("no screenshot of the page: {e}");
                    None
                }
            };
        }
        Ok(rendered)
    }

    /// A paused request: refused at once when no crawler may fetch it, else handed to the
    /// fetcher (the future answers it).
    fn paused<'f, F: Fetcher>(
        &mut self,
        ev: &Event,
        page: &Url,
        fetcher: &'f F,
    ) -> Option<Answering<'f>> {
        let id = ev.params["requestId"].as_str()?.to_string();
        let req = &ev.params["request"];
        let method = req["method"].as_str().unwrap_or_default();
        let url = req["url"].as_str().and_then(|u| Url::parse(u).ok());
        let resource_type = ev.params["resourceType"].as_str().unwrap_or_default();
        let url = match url {
            Some(u) if method == "GET" && matches!(u.scheme(), "http" | "https") => u,
            Some(u) => {
                if matches!(u.scheme(), "http" | "https") {
                    self.said(fetcher, &req["url"], Refusal::Method);
                }
                self.fail(ev.session.as_deref(), &id);
                return None;
            }
            None => {
                self.fail(ev.session.as_deref(), &id);
                return None;
            }
        };
        let request = BrowserRequest {
            is_page: resource_type == "Document" && same_resource(&url, page),
            url,
            resource_type: resource_type.to_string(),
        };
        let session = ev.session.clone();
        Some(Box::pin(async move {
            let answer = fetcher.fetch(request).await;
            (session, id, answer)
        }))
    }

    fn answer(&mut self, session: Option<&str>, id: &str, answer: BrowserAnswer) {
        match answer {
            BrowserAnswer::Response {
                status,
                headers,
                body,
            } => {
                self.answered += 1;
                let headers: Vec<Value> = headers
                    .into_iter()
                    .filter(|(n, _)| !is_framing(n))
                    .map(|(name, value)| json!({"name": name, "value": value}))
                    .collect();
                let body = data_encoding::BASE64.encode(&body);
                self.browser.cdp.send(
                    session,
                    "Fetch.fulfillRequest",
                    json!({"requestId": id, "responseCode": status, "responseHeaders": headers, "body": body}),
                );
            }
            BrowserAnswer::Refused { why } => {
                tracing::debug!("browser request {id} refused: {why}");
                self.fail(session, id);
            }
        }
    }

    fn fail(&mut self, session: Option<&str>, id: &str) {
        self.refused += 1;
        self.browser.cdp.send(
            session,
            "Fetch.failRequest",
            json!({"requestId": id, "errorReason": "BlockedByClient"}),
        );
    }

    /// Tells the fetcher, once per render and URL, what the tab refused by itself.
    fn said<F: Fetcher>(&mut self, fetcher: &F, url: &Value, what: Refusal) {
        let Some(url) = url.as_str().filter(|u| !u.is_empty()) else {
            return;
        };
        if self.said.insert((what, url.to_string())) {
            fetcher.refused(url, what);
        }
    }

    /// A frame or worker the page started: intercepted like the page, except service workers,
    /// which are refused (closed before they run).
    async fn attached<F: Fetcher>(&mut self, ev: &Event, fetcher: &F) {
        let Some(child) = ev.params["sessionId"].as_str() else {
            return;
        };
        let info = &ev.params["targetInfo"];
        let kind = info["type"].as_str().unwrap_or_default();
        if kind == "service_worker" || kind == "shared_worker" {
            self.said(fetcher, &info["url"], Refusal::Worker);
            if let Some(t) = info["targetId"].as_str() {
                self.browser
                    .cdp
                    .send(None, "Target.closeTarget", json!({"targetId": t}));
            }
            return;
        }
        self.browser.cdp.route(child, self.events.clone());
        self.sessions.push(child.to_string());
        if let Err(e) = self.prepare(child).await {
            tracing::debug!("could not intercept a {kind} of the page: {e}");
        }
    }
}

/// Headers the browser must not get from a fulfilled answer: the body is handed over whole and
/// decoded, so framing and encoding no longer describe it.
fn is_framing(name: &str) -> bool {
    [
        "content-encoding",
        "transfer-encoding",
        "content-length",
        "connection",
        "keep-alive",
    ]
    .iter()
    .any(|h| name.eq_ignore_ascii_case(h))
}

/// Whether `a` and `b` are the same resource (fragments aside).
fn same_resource(a: &Url, b: &Url) -> bool {
    let (mut a, mut b) = (a.clone(), b.clone());
    a.set_fragment(None);
    b.set_fragment(None);
    a == b
}
