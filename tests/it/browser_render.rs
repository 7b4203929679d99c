//! A single-page app crawled with `[browser] render = "empty"`: Chromium renders the shell and
//! every request it makes is the crawler's own (robots.txt, pacing, records, crawl.log). The
//! site is a Python server on loopback that logs each request it serves; the archive is then
//! replayed in pywb and the replay loaded in headless Chromium.

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::output::{files_ending, lines, LogLine};
use common::profile::rendering;
use common::tools::{crawl_ok, free_port, run_with_timeout, venv};

/// The site: a shell whose items, links and image exist only once app.js has called the JSON
/// API; robots.txt forbids one of the script's requests. Each request is logged as a JSON line
/// (path, User-Agent, when it began and when its answer was sent).
const SERVER: &str = r#"
import json, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

LOG = sys.argv[2]
lock = threading.Lock()
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
SHELL = b"""<!doctype html><html><head><title>Shop</title><script src="/app.js"></script></head>
<body><div id="root">Loading&hellip;</div><noscript>This shop needs JavaScript.</noscript>
<p><a href="/about.html">About</a></p></body></html>"""
APP = b"""
document.addEventListener('DOMContentLoaded', async () => {
  fetch('/api/secret.json').catch(() => {});
  const items = await (await fetch('/api/items.json')).json();
  const root = document.getElementById('root');
  root.textContent = '';
  for (const it of items) {
    const a = document.createElement('a');
    a.href = '/item/' + it.id + '.html';
    a.textContent = it.name;
    root.appendChild(a);
  }
  const img = document.createElement('img');
  img.src = '/img/logo.gif';
  root.appendChild(img);
});
"""
ITEMS = json.dumps([{"id": 1, "name": "Copper teapot"}, {"id": 2, "name": "Enamel kettle"}]).encode()
def page(title):
    return ("<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p>"
            "<p><a href='/'>Home</a></p></body></html>" % (title, title, "An ordinary page. " * 20)).encode()
ROUTES = {
    "/robots.txt": ("text/plain", b"User-agent: *\nDisallow: /api/secret\n"),
    "/": ("text/html; charset=utf-8", SHELL),
    "/app.js": ("application/javascript", APP),
    "/api/items.json": ("application/json", ITEMS),
    "/api/secret.json": ("application/json", b'{"secret": true}'),
    "/img/logo.gif": ("image/gif", GIF),
    "/about.html": ("text/html", page("About the shop")),
    "/item/1.html": ("text/html", page("Copper teapot")),
    "/item/2.html": ("text/html", page("Enamel kettle")),
}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        began = time.time()
        mime, body = ROUTES.get(self.path, ("text/plain", b"not found"))
        status = 200 if self.path in ROUTES else 404
        # A little work per answer, so that overlapping requests would show.
        time.sleep(0.05)
        self.send_response(status)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        # Stamped before the last write: the client cannot have the answer earlier, and a
        # stamp after it comes late when a loaded machine deschedules this thread.
        ended = time.time()
        self.wfile.write(body)
        self.wfile.flush()
        with lock, open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "ua": self.headers.get("User-Agent", ""),
                                "began": began, "ended": ended}) + "\n")
        self.close_connection = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

const UA: &str = "archiver/0.1 (+https://example.org/archiver-tests)";

/// Kills a child process when the test ends, however it ends.
struct Killed(std::process::Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until something listens on `port` (a bare connection: the site logs requests only).
fn wait_listening(port: u16, what: &str) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} never listened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[derive(Debug, serde::Deserialize)]
struct Served {
    path: String,
    ua: String,
    began: f64,
    ended: f64,
}

fn profile(port: u16) -> String {
    rendering(
        "spa",
        &format!("http://127.0.0.1:{port}/"),
        "render_timeout = 30",
    )
}

#[test]
fn a_single_page_app_is_rendered_with_every_request_made_by_the_crawler() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    std::fs::write(d.join("site.py"), SERVER).unwrap();
    let port = free_port();
    let served_log = d.join("served.jsonl");
    let _site = Killed(
        Command::new(venv().join("bin/python"))
            .arg(d.join("site.py"))
            .arg(port.to_string())
            .arg(&served_log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the site"),
    );
    wait_listening(port, "the site");
    std::fs::write(d.join("spa.toml"), profile(port)).unwrap();
    crawl_ok(d, "spa.toml", "crawl");
    let out = d.join("out");
    let crawl_log = std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default();

    // The server's own log: our User-Agent only, one request at a time, at least 1 s apart,
    // nothing twice, the forbidden path never.
    let served: Vec<Served> = std::fs::read_to_string(&served_log)
        .expect("the site logged its requests")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a log line"))
        .collect();
    let paths: Vec<&str> = served.iter().map(|s| s.path.as_str()).collect();
    for s in &served {
        assert_eq!(s.ua, UA, "a request not made by the crawler: {s:?}");
    }
    for pair in served.windows(2) {
        let gap = pair[1].began - pair[0].ended;
        assert!(
            gap >= 1.0,
            "{} began {gap:.3} s after {} ended: {paths:?}",
            pair[1].path,
            pair[0].path
        );
    }
    let unique: HashSet<&str> = paths.iter().copied().collect();
    assert_eq!(
        unique.len(),
        paths.len(),
        "a URL requested twice: {paths:?}"
    );
    assert!(
        !paths.contains(&"/api/secret.json"),
        "robots.txt ignored: {paths:?}"
    );
    assert_eq!(paths.first(), Some(&"/robots.txt"), "{paths:?}");
    for want in [
        "/",
        "/app.js",
        "/api/items.json",
        "/img/logo.gif",
        "/item/1.html",
        "/item/2.html",
        "/about.html",
    ] {
        assert!(paths.contains(&want), "{want} never fetched: {paths:?}");
    }

    // crawl.log: the shell is marked rendered, nothing else is; the browser's requests are
    // embeds of the shell; the forbidden one is logged as robots-precluded.
    let entries: Vec<LogLine> = lines(&crawl_log)
        .iter()
        .map(|l| LogLine::parse(l).expect("a crawl.log line"))
        .collect();
    let shell = format!("http://127.0.0.1:{port}/");
    let rendered: Vec<&str> = entries
        .iter()
        .filter(|e| e.has_annotation("rendered"))
        .map(|e| e.uri.as_str())
        .collect();
    assert_eq!(rendered, vec![shell.as_str()], "{crawl_log}");
    let line_of = |path: &str| {
        let url = format!("http://127.0.0.1:{port}{path}");
        entries
            .iter()
            .find(|e| e.uri == url)
            .unwrap_or_else(|| panic!("no crawl.log line for {url}\n{crawl_log}"))
    };
    let api = line_of("/api/items.json");
    assert_eq!(
        (api.status, api.via.as_str()),
        (200, shell.as_str()),
        "{crawl_log}"
    );
    assert!(api.hops.ends_with('E'), "{crawl_log}");
    assert_eq!(line_of("/api/secret.json").status, -9998, "{crawl_log}");
    let item = line_of("/item/1.html");
    assert_eq!((item.status, item.via.as_str()), (200, shell.as_str()));
    assert!(item.hops.ends_with('L'), "{crawl_log}");

    // The WARCs are valid for warcio and hold the DOM-only pages.
    let warcs = files_ending(&out.join("warcs"), ".warc.gz");
    assert!(!warcs.is_empty());
    for w in &warcs {
        let mut cmd = Command::new(venv().join("bin/warcio"));
        cmd.arg("check").arg(w);
        let check = run_with_timeout(cmd, d, "warcio-check", Duration::from_secs(60));
        assert_eq!(
            check.code,
            Some(0),
            "warcio check {}: {}",
            w.display(),
            check.stdout
        );
    }
    let index: String = files_ending(&out.join("indexes"), ".cdxj")
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for path in [
        "/item/1.html",
        "/item/2.html",
        "/api/items.json",
        "/img/logo.gif",
    ] {
        assert!(
            index.contains(&format!("\"url\": \"http://127.0.0.1:{port}{path}\""))
                || index.contains(&format!("\"url\":\"http://127.0.0.1:{port}{path}\"")),
            "{path} not indexed:\n{index}"
        );
    }

    // Replay: pywb (the page as the top frame) loaded in headless Chromium shows the items.
    let stamp = index
        .lines()
        .find(|l| {
            l.contains(&format!("\"url\": \"{shell}\""))
                || l.contains(&format!("\"url\":\"{shell}\""))
        })
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or_else(|| panic!("the shell is not indexed:\n{index}"))
        .to_string();
    let dom = replay_dom(d, &out, &stamp, &shell);
    assert!(
        dom.contains("Copper teapot") && dom.contains("Enamel kettle"),
        "{dom}"
    );
}

/// Starts pywb on the crawl (`framed_replay: false`) and returns the DOM headless Chromium
/// makes of the shell's replay.
fn replay_dom(d: &Path, out: &Path, stamp: &str, shell: &str) -> String {
    let root = d.join("pywb");
    std::fs::create_dir_all(&root).unwrap();
    let config = format!(
        "framed_replay: false\ncollections:\n  spa:\n    index_paths: '{}'\n    archive_paths: ['{}/']\n",
        out.join("indexes").display(),
        out.join("warcs").display()
    );
    std::fs::write(root.join("config.yaml"), config).unwrap();
    let port = free_port();
    let _pywb = Killed(
        Command::new(venv().join("bin/wayback"))
            .args(["-b", "127.0.0.1", "-p", &port.to_string(), "-d"])
            .arg(&root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start pywb"),
    );
    wait_listening(port, "pywb");
    let chromium = archiver::browser::find_executable(None)
        .expect("no Chromium on PATH: tools/test.sh installs Debian's chromium");
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--virtual-time-budget=15000",
        "--dump-dom",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("http://127.0.0.1:{port}/spa/{stamp}/{shell}"));
    let shown = run_with_timeout(cmd, d, "replay-chromium", Duration::from_secs(60));
    shown.stdout
}

#[test]
fn without_a_chromium_the_shell_is_archived_unrendered_and_run_log_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    std::fs::write(d.join("site.py"), SERVER).unwrap();
    let port = free_port();
    let _site = Killed(
        Command::new(venv().join("bin/python"))
            .arg(d.join("site.py"))
            .arg(port.to_string())
            .arg(d.join("served.jsonl"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the site"),
    );
    wait_listening(port, "the site");
    let text = profile(port)
        .replace("min_delay = 1.0", "min_delay = 0.0")
        .replace(
            "render_timeout = 30",
            "render_timeout = 30\nexecutable = \"/nonexistent/chromium\"",
        );
    std::fs::write(d.join("spa.toml"), text).unwrap();
    crawl_ok(d, "spa.toml", "crawl");
    let out = d.join("out");
    let run_log = std::fs::read_to_string(out.join("run.log")).unwrap();
    let said: Vec<&str> = run_log
        .lines()
        .filter(|l| l.contains("no Chromium"))
        .collect();
    assert_eq!(said.len(), 1, "{run_log}");
    assert!(said[0].contains("archived unrendered"), "{run_log}");
    let crawl_log = std::fs::read_to_string(out.join("crawl.log")).unwrap();
    let shell = format!("http://127.0.0.1:{port}/");
    let line = lines(&crawl_log)
        .iter()
        .map(|l| LogLine::parse(l).expect("a crawl.log line"))
        .find(|e| e.uri == shell)
        .expect("the shell is logged");
    assert_eq!(line.status, 200);
    assert!(!line.has_annotation("rendered"), "{crawl_log}");
    // Only what the shell's HTML names was fetched: the API is never asked.
    assert!(!crawl_log.contains("/api/items.json"), "{crawl_log}");
    assert!(crawl_log.contains("/app.js"), "{crawl_log}");
}
