//! What a rendered page may make the crawl do (issue 25): a payload already rendered under
//! another URL (a `?q=` variant of an app shell) is archived as a revisit and not rendered
//! again unless `[browser] rerender_duplicates`; the URLs a rendered DOM alone offers are
//! followed up to `max_dom_links_per_page`, the rest logged `trap:render-variants` and counted
//! in report.json; and a page cut at `[limits] max_outlinks` is named in summary.txt and
//! report.json. A Python site on loopback, Debian's Chromium.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::output::{lines, LogLine};
use common::profile::Loopback;
use common::tools::{crawl_ok, free_port, venv};

/// `/app/` answers the same shell whatever its query; its script adds four `?q=` variants of
/// the shell and four item pages. `/big.html` has 30 links.
const SERVER: &str = r#"
import sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
SHELL = b"""<!doctype html><html><head><title>App</title><script src="/app.js"></script></head>
<body><div id="root">Loading&hellip;</div><noscript>This app needs JavaScript.</noscript></body></html>"""
APP = b"""
document.addEventListener('DOMContentLoaded', () => {
  const root = document.getElementById('root');
  root.textContent = '';
  for (const href of ['?q=1', '?q=2', '?q=3', '?q=4', '/item/1.html', '/item/2.html',
                      '/item/3.html', '/item/4.html']) {
    const a = document.createElement('a');
    a.href = href;
    a.textContent = 'Result ' + href;
    root.appendChild(a);
  }
});
"""
def page(title, links):
    items = "".join("<li><a href='%s'>%s</a></li>" % (l, l) for l in links)
    return ("<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p>"
            "<ul>%s</ul></body></html>" % (title, title, "An ordinary page. " * 20, items)).encode()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/robots.txt": mime, body = "text/plain", b"User-agent: *\nAllow: /\n"
        elif path == "/": mime, body = "text/html", page("Home", ["/app/", "/big.html"])
        elif path == "/app/": mime, body = "text/html", SHELL
        elif path == "/app.js": mime, body = "application/javascript", APP
        elif path == "/big.html": mime, body = "text/html", page("Big", ["/b/%d.html" % i for i in range(30)])
        elif path.startswith("/item/") or path.startswith("/b/"): mime, body = "text/html", page(path, [])
        else:
            self.send_error(404); return
        self.send_response(200)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

/// Kills a child process when the test ends, however it ends.
struct Killed(std::process::Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_site(d: &Path) -> (Killed, u16) {
    std::fs::write(d.join("site.py"), SERVER).unwrap();
    let port = free_port();
    let site = Killed(
        Command::new(venv().join("bin/python"))
            .arg(d.join("site.py"))
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the site"),
    );
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the site never listened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (site, port)
}

/// Crawls the site with these `[browser]` lines; the crawl.log lines and the output folder.
fn crawl(d: &Path, port: u16, browser: &str) -> (Vec<LogLine>, std::path::PathBuf) {
    let tables = format!(
        "\n[limits]\nmax_outlinks = 10\n\n[browser]\nrender = \"empty\"\nrender_timeout = 60\n\
         max_dom_links_per_page = 3\n{browser}"
    );
    let profile = Loopback {
        crawl: "sites_at_once = 2",
        output: &tables,
        ..Loopback::new("variants", vec![format!("http://127.0.0.1:{port}/")])
    };
    profile.write(d, "variants.toml");
    crawl_ok(d, "variants.toml", "crawl");
    let out = d.join("out");
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default();
    let entries = lines(&log)
        .iter()
        .map(|l| LogLine::parse(l).expect("a crawl.log line"))
        .collect();
    (entries, out)
}

fn report(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("report.json")).expect("report.json");
    serde_json::from_str(&text).expect("report.json is JSON")
}

#[test]
fn a_variant_of_a_rendered_payload_is_not_rendered_again_and_dom_links_are_bounded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let (_site, port) = start_site(d);
    let (entries, out) = crawl(d, port, "");
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    let all: String = entries.iter().map(|e| e.raw.clone() + "\n").collect();

    // One render: the shell. Its variants (same payload) are revisits, not rendered.
    let rendered: Vec<&str> = entries
        .iter()
        .filter(|e| e.has_annotation("rendered"))
        .map(|e| e.uri.as_str())
        .collect();
    assert_eq!(rendered, vec![url("/app/")], "{all}");
    // The DOM offers 8 new URLs: the first 3 are followed, the other 5 logged.
    for p in ["/app/?q=1", "/app/?q=2", "/app/?q=3"] {
        let e = entries
            .iter()
            .find(|e| e.uri == url(p))
            .unwrap_or_else(|| panic!("{p} not fetched\n{all}"));
        assert_eq!(e.status, 200, "{all}");
        assert!(e.has_annotation("duplicate:digest"), "{p}: {all}");
    }
    let bounded: Vec<&str> = entries
        .iter()
        .filter(|e| e.has_annotation("trap:render-variants"))
        .map(|e| e.uri.as_str())
        .collect();
    let want: Vec<String> = [
        "/app/?q=4",
        "/item/1.html",
        "/item/2.html",
        "/item/3.html",
        "/item/4.html",
    ]
    .iter()
    .map(|p| url(p))
    .collect();
    assert_eq!(bounded, want, "{all}");
    for e in entries
        .iter()
        .filter(|e| e.has_annotation("trap:render-variants"))
    {
        assert_eq!((e.status, e.via.as_str()), (-5000, url("/app/").as_str()));
    }
    let json = report(&out);
    assert_eq!(
        json["dropped"]["traps"]["trap:render-variants"], 5,
        "{json}"
    );

    // The page cut at max_outlinks: named in summary.txt and report.json.
    let summary = std::fs::read_to_string(out.join("summary.txt")).expect("summary.txt");
    let big = url("/big.html");
    let cut_line = summary
        .lines()
        .find(|l| l.trim_start().starts_with("links cut:"))
        .unwrap_or_else(|| panic!("no cut page in the summary:\n{summary}"));
    assert!(cut_line.contains(&format!("{big} (20)")), "{summary}");
    assert_eq!(json["cut_at_max_outlinks"]["listed"][&big], 20, "{json}");
    assert_eq!(json["totals"]["pages_cut_at_max_outlinks"], 1, "{json}");
}

#[test]
fn rerender_duplicates_renders_the_variants_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let (_site, port) = start_site(d);
    let (entries, _out) = crawl(d, port, "rerender_duplicates = true\nmax_share = 1.0");
    let all: String = entries.iter().map(|e| e.raw.clone() + "\n").collect();
    let rendered: Vec<&str> = entries
        .iter()
        .filter(|e| e.has_annotation("rendered"))
        .map(|e| e.uri.as_str())
        .collect();
    let variant = format!("http://127.0.0.1:{port}/app/?q=1");
    assert!(rendered.contains(&variant.as_str()), "{all}");
    assert!(rendered.len() >= 4, "{all}");
}
