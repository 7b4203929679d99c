//! The browser answered from the crawl's own archive: a crawl of two single-page shells,
//! interrupted after the first run fetched their shared script and resumed. The script (from
//! the first run's WARC, sent gzipped and chunked), the JSON API (fetched in this run before
//! the second shell asked for it) and the page itself are read back from the records, never
//! asked of the server again; the pop-up and the WebSocket the script tries never reach the
//! server and are logged. The server is the hand-written loopback site (`tests/common/site.rs`),
//! whose log shows how often each path was asked for.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::output::{lines, LogLine};
use common::profile::rendering;
use common::site::{chunked, gzip, html, response, Exchange, Handler, Reply, Request, TestSite};
use common::tools::{crawl_ok, send_signal, start_crawl, wait_until};

const UA: &str = "archiver/0.1 (+https://example.org/archiver-tests)";

/// The shared script: a shell (an element `#root`) gets links built from the API, with the
/// prefix its `data-prefix` names, and a link to `data-next` if it has one; each shell also
/// tries a pop-up and a WebSocket, which the browser must refuse.
const APP: &str = r#"
document.addEventListener('DOMContentLoaded', async () => {
  const root = document.getElementById('root');
  if (!root) return;
  window.open('/popup.html');
  try { new WebSocket('ws://' + location.host + '/socket'); } catch (e) {}
  const items = await (await fetch('/api/items.json')).json();
  root.textContent = '';
  for (const it of items) {
    const a = document.createElement('a');
    a.href = root.dataset.prefix + it.id + '.html';
    a.textContent = it.name;
    root.appendChild(a);
  }
  if (root.dataset.next) {
    const a = document.createElement('a');
    a.href = root.dataset.next;
    a.textContent = 'more';
    root.appendChild(a);
  }
});
"#;

fn shell(prefix: &str, next: &str) -> Vec<u8> {
    format!(
        r#"<!doctype html><html><head><title>Shop</title><script src="/app.js"></script></head>
<body><div id="root" data-prefix="{prefix}" data-next="{next}">Loading…</div>
<noscript>This shop needs JavaScript.</noscript></body></html>"#
    )
    .into_bytes()
}

fn ordinary(title: &str, extra: &str) -> Vec<u8> {
    format!(
        "<!doctype html><html><head><title>{title}</title>{extra}</head><body><h1>{title}</h1>\
         <p>{}</p><p><a href=\"/app/\">The shop</a></p></body></html>",
        "An ordinary page with plenty of text to read. ".repeat(10)
    )
    .into_bytes()
}

/// The script gzipped and chunked, as many servers send it: the browser needs it decoded.
fn script() -> Reply {
    let body = gzip(APP.as_bytes());
    let mut wire = b"HTTP/1.1 200 OK\r\nContent-Type: application/javascript\r\n\
        Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
        .to_vec();
    wire.extend_from_slice(&chunked(&body, &[100, 50]));
    Reply {
        wire,
        body: APP.as_bytes().to_vec(),
        close: false,
    }
}

fn site() -> Handler {
    Arc::new(|r: &Request| {
        let text = |mime: &str, body: &[u8]| response("200 OK", &[("Content-Type", mime)], body);
        match r.target.as_str() {
            "/robots.txt" => text("text/plain", b"User-agent: *\nDisallow:\n"),
            // The home page loads the script too (it does nothing there): the first run
            // fetches it as the page's requisite.
            "/" => html(&ordinary("Home", r#"<script src="/app.js"></script>"#)),
            "/app.js" => script(),
            "/app/" => html(&shell("/item/", "/shop/")),
            "/shop/" => html(&shell("/shop-item/", "")),
            "/api/items.json" => text(
                "application/json",
                br#"[{"id": 1, "name": "Copper teapot"}, {"id": 2, "name": "Enamel kettle"}]"#,
            ),
            t if t.starts_with("/item/") || t.starts_with("/shop-item/") => {
                html(&ordinary("An item", ""))
            }
            _ => response("404 Not Found", &[("Content-Type", "text/plain")], b"no"),
        }
    })
}

fn profile(origin: &str) -> String {
    rendering(
        "shops",
        &format!("{origin}/"),
        "max_share = 1.0\nrender_timeout = 20",
    )
}

/// The first run, stopped with SIGINT once the server has answered the script: the shells are
/// still queued.
fn first_run_interrupted(d: &Path, site: &TestSite) -> i32 {
    let mut child = start_crawl(d, "shops.toml", Stdio::null());
    let fetched = wait_until(Duration::from_secs(60), || {
        site.exchanges().iter().any(|e| e.path() == "/app.js")
            || child.try_wait().ok().flatten().is_some()
    });
    assert!(fetched, "the script was never fetched");
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the first run ended early"
    );
    send_signal(&child, "INT");
    let mut code = None;
    let stopped = wait_until(Duration::from_secs(60), || {
        code = child
            .try_wait()
            .ok()
            .flatten()
            .map(|s| s.code().unwrap_or(-1));
        code.is_some()
    });
    if !stopped {
        let _ = child.kill();
        panic!("the first run did not stop after SIGINT");
    }
    code.unwrap_or(-1)
}

#[test]
fn a_resumed_crawl_answers_the_browser_from_its_archive_and_refuses_popups_and_websockets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let site = TestSite::start("127.0.0.1".parse().unwrap(), site());
    std::fs::write(d.join("shops.toml"), profile(&site.origin())).unwrap();

    let code = first_run_interrupted(d, &site);
    let first: Vec<String> = site
        .exchanges()
        .iter()
        .map(|e| e.path().to_string())
        .collect();
    assert_eq!(code, 130, "the first run was interrupted: {first:?}");
    assert!(
        !first.iter().any(|p| p == "/app/"),
        "the shell was fetched before the interrupt: {first:?}"
    );

    crawl_ok(d, "shops.toml", "resume");
    let out = d.join("out");
    let crawl_log = std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default();
    let run_log = std::fs::read_to_string(out.join("run.log")).unwrap_or_default();

    // The server's own log, both runs: nothing asked twice (the script was fetched by the
    // first run only), only by us, the pop-up and the
    // WebSocket never; the rendered links of both shells were followed.
    let served: Vec<Exchange> = site.exchanges();
    let paths: Vec<&str> = served.iter().map(Exchange::path).collect();
    for e in &served {
        // Each run asks for robots.txt afresh (rules are not carried across runs).
        if e.path() != "/robots.txt" {
            assert_eq!(e.request.earlier, 0, "{} asked twice: {paths:?}", e.path());
        }
        assert_eq!(e.request.header("user-agent"), Some(UA), "{paths:?}");
    }
    assert!(!paths.contains(&"/popup.html"), "{paths:?}");
    assert!(!paths.contains(&"/socket"), "{paths:?}");
    for want in [
        "/app/",
        "/api/items.json",
        "/item/1.html",
        "/shop/",
        "/shop-item/2.html",
    ] {
        assert!(
            paths.contains(&want),
            "{want} never fetched: {paths:?}\n{run_log}"
        );
    }

    let entries: Vec<LogLine> = lines(&crawl_log)
        .iter()
        .map(|l| LogLine::parse(l).expect("a crawl.log line"))
        .collect();
    let url = |path: &str| format!("{}{path}", site.origin());
    for shell in ["/app/", "/shop/"] {
        let line = entries
            .iter()
            .find(|e| e.uri == url(shell) && e.status == 200)
            .unwrap_or_else(|| panic!("{shell} not logged\n{crawl_log}"));
        assert!(line.has_annotation("rendered"), "{crawl_log}");
        assert!(!line.has_annotation("render-timeout"), "{crawl_log}");
    }
    // What the browser refused by itself is logged, as something of the page never fetched.
    for (target, kind) in [
        ("/popup.html", "browser:popup"),
        ("/socket", "browser:websocket"),
    ] {
        let refused: Vec<&LogLine> = entries.iter().filter(|e| e.uri.ends_with(target)).collect();
        assert!(!refused.is_empty(), "{target} not logged\n{crawl_log}");
        for e in refused {
            assert_eq!(e.status, -5002, "{crawl_log}");
            assert!(e.has_annotation(kind), "{crawl_log}");
            assert!(
                e.via == url("/app/") || e.via == url("/shop/"),
                "{crawl_log}"
            );
        }
    }
    assert!(
        !run_log.contains("not given to the browser"),
        "a record could not be read back\n{run_log}"
    );
}
