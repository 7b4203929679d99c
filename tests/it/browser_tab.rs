//! The browser module on its own: Debian's Chromium renders a single-page app whose every
//! request is answered from memory by a stub fetcher (the crawler's part is tested end to end in
//! tests/it/browser_render.rs). Nothing here opens a network socket but Chromium's DevTools one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use archiver::browser::{
    find_executable, Browser, BrowserAnswer, BrowserRequest, Fetcher, Refusal,
};
use url::Url;

const SHELL: &str = r#"<!doctype html><html><head><title>Shop</title>
<script src="/app.js"></script></head>
<body><div id="root">Loading…</div><noscript>Enable JavaScript.</noscript></body></html>"#;

const APP: &str = r#"
document.addEventListener('DOMContentLoaded', async () => {
  // Each of these must be refused by the tab or the fetcher, not reach any server.
  fetch('/api/track', {method: 'POST', body: 'x'}).catch(() => {});
  fetch('/private/secret.json').catch(() => {});
  try { new WebSocket('ws://127.0.0.1:9/socket'); } catch (e) {}
  window.open('/popup.html');
  const items = await (await fetch('/api/items.json')).json();
  const root = document.getElementById('root');
  root.textContent = '';
  for (const it of items) {
    const a = document.createElement('a');
    a.href = '/item/' + it.id;
    a.textContent = it.name;
    root.appendChild(a);
  }
  const img = document.createElement('img');
  img.src = '/logo.png';
  root.appendChild(img);
});
"#;

/// Serves the site from memory and notes every request it is asked for.
struct Stub {
    base: Url,
    pages: HashMap<&'static str, (&'static str, Vec<u8>)>,
    asked: Mutex<Vec<(String, String, bool)>>,
    /// What the tab said it refused by itself.
    refused: Mutex<Vec<(String, Refusal)>>,
}

impl Stub {
    fn new() -> Stub {
        let mut pages = HashMap::new();
        pages.insert("/", ("text/html", SHELL.as_bytes().to_vec()));
        pages.insert(
            "/app.js",
            ("application/javascript", APP.as_bytes().to_vec()),
        );
        pages.insert(
            "/api/items.json",
            (
                "application/json",
                br#"[{"id":1,"name":"Teapot"},{"id":2,"name":"Kettle"}]"#.to_vec(),
            ),
        );
        // A 1×1 GIF.
        pages.insert(
            "/logo.png",
            ("image/gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;".to_vec()),
        );
        Stub {
            base: Url::parse("http://shop.test/").unwrap(),
            pages,
            asked: Mutex::default(),
            refused: Mutex::default(),
        }
    }
}

impl Fetcher for Stub {
    fn refused(&self, url: &str, what: Refusal) {
        self.refused.lock().unwrap().push((url.to_string(), what));
    }

    async fn fetch(&self, req: BrowserRequest) -> BrowserAnswer {
        self.asked.lock().unwrap().push((
            req.url.path().to_string(),
            req.resource_type.clone(),
            req.is_page,
        ));
        if req.url.origin() != self.base.origin() || req.url.path().starts_with("/private/") {
            return BrowserAnswer::Refused {
                why: "forbidden".into(),
            };
        }
        // Answers come back slowly, as a polite crawler's do.
        tokio::time::sleep(Duration::from_millis(50)).await;
        match self.pages.get(req.url.path()) {
            Some((mime, body)) => BrowserAnswer::Response {
                status: 200,
                headers: vec![
                    ("Content-Type".into(), mime.to_string()),
                    ("Content-Encoding".into(), "identity".into()),
                ],
                body: body.clone(),
            },
            None => BrowserAnswer::Response {
                status: 404,
                headers: vec![("Content-Type".into(), "text/plain".into())],
                body: b"not here".to_vec(),
            },
        }
    }
}

fn chromium() -> std::path::PathBuf {
    find_executable(None).expect("no Chromium on PATH: tools/test.sh installs Debian's chromium")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_page_app_renders_with_every_request_answered_by_the_fetcher() {
    let browser = Browser::launch(&chromium(), 2)
        .await
        .expect("chromium starts");
    let stub = Stub::new();
    let page = stub.base.clone();
    let out = browser
        .render(&page, &stub, Duration::from_secs(30))
        .await
        .expect("the page renders");
    browser.close().await;

    assert!(!out.timed_out, "the network went idle before the timeout");
    assert!(
        out.dom.contains(r#"<a href="/item/1">Teapot</a>"#),
        "{}",
        out.dom
    );
    assert!(out.dom.contains(r#"<a href="/item/2">Kettle</a>"#));
    assert!(out.dom.contains(r#"<img src="/logo.png">"#));
    assert!(!out.dom.contains("Loading…"));

    let asked = stub.asked.lock().unwrap().clone();
    let paths: Vec<&str> = asked.iter().map(|(p, _, _)| p.as_str()).collect();
    // The page itself came from the fetcher too, marked as the page.
    assert_eq!(asked[0], ("/".to_string(), "Document".to_string(), true));
    for want in [
        "/app.js",
        "/api/items.json",
        "/logo.png",
        "/private/secret.json",
    ] {
        assert!(paths.contains(&want), "{want} not asked for: {paths:?}");
    }
    // POST and the WebSocket never reach the fetcher; the pop-up is closed before it loads
    // anything the page did not ask for itself.
    assert!(!paths.contains(&"/api/track"), "{paths:?}");
    assert!(!paths.contains(&"/socket"), "{paths:?}");
    assert!(
        asked.iter().filter(|(_, _, page)| *page).count() == 1,
        "{asked:?}"
    );
    assert!(
        out.refused >= 2,
        "POST and the private path refused: {out:?}"
    );
    // What the tab refused by itself it says, once each, for the crawl to log.
    let mut said = stub.refused.lock().unwrap().clone();
    said.sort_by_key(|(u, _)| u.clone());
    assert_eq!(
        said,
        vec![
            ("http://shop.test/api/track".to_string(), Refusal::Method),
            ("http://shop.test/popup.html".to_string(), Refusal::Popup),
            ("ws://127.0.0.1:9/socket".to_string(), Refusal::WebSocket),
        ],
        "{asked:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_render_that_never_goes_quiet_ends_at_its_timeout() {
    struct Slow;
    impl Fetcher for Slow {
        async fn fetch(&self, req: BrowserRequest) -> BrowserAnswer {
            if req.is_page {
                return BrowserAnswer::Response {
                    status: 200,
                    headers: vec![("Content-Type".into(), "text/html".into())],
                    body: br#"<div id="root">shell</div><script src="/never.js"></script>"#
                        .to_vec(),
                };
            }
            tokio::time::sleep(Duration::from_secs(60)).await;
            BrowserAnswer::Refused { why: "late".into() }
        }
    }
    let browser = Browser::launch(&chromium(), 1)
        .await
        .expect("chromium starts");
    let started = std::time::Instant::now();
    let out = browser
        .render(
            &Url::parse("http://slow.test/").unwrap(),
            &Slow,
            Duration::from_secs(3),
        )
        .await
        .expect("a late page still gives its DOM");
    browser.close().await;
    assert!(out.timed_out);
    assert!(out.dom.contains("shell"));
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_named_executable_is_found_on_path_and_a_missing_one_is_not() {
    assert!(find_executable(Some(std::path::Path::new("sh"))).is_some());
    assert!(find_executable(Some(std::path::Path::new("/nonexistent/chromium"))).is_none());
    assert!(find_executable(Some(std::path::Path::new("no-such-browser-here"))).is_none());
}
