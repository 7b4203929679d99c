//! `archiver qa` end to end: a site crawled without a browser (`render = "never"`), whose
//! pages load what the crawler cannot find without running them (a `fetch()` of JSON, an
//! image set by script, a stylesheet the script inserts, with a font in it) and some it may
//! not fetch (robots.txt, another origin). qa replays every page in Debian's Chromium from the
//! crawl's WARCs alone — the servers, still running, see no request meanwhile — names exactly
//! those as missing with their reasons, scores the complete pages 1.0 and writes a report that
//! loads in Chromium; `crawl --patch` fetches the discoverable ones into the same (complete)
//! crawl, and qa then finds them answered. `--compare` ranks first the page whose image
//! changed between two crawls.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::output::crawl_log;
use common::profile::Loopback;
use common::site::{html, not_found, ok, response, Exchange, Handler, Reply, Request, TestSite};
use common::tools::{crawl_ok, run_archiver, run_with_timeout, tail, Finished};
use serde_json::Value;

/// What the app page's script loads: nothing of it is in the page's HTML.
const APP_JS: &str = r#"
document.addEventListener('DOMContentLoaded', async () => {
  const css = document.createElement('link');
  css.rel = 'stylesheet';
  css.href = '/fonts.css';
  document.head.appendChild(css);
  const img = document.createElement('img');
  img.src = '/img/dynamic.svg';
  document.body.appendChild(img);
  try {
    const data = await (await fetch('/api/data.json')).json();
    document.getElementById('out').textContent = data.message;
  } catch (e) {
    document.getElementById('out').textContent = 'no data';
  }
});
"#;

const FONTS_CSS: &str = "@font-face { font-family: 'Archived'; src: url('/font.woff2') \
    format('woff2'); }\nbody { font-family: 'Archived', serif; }\n";

const STYLE_CSS: &str = "body { background: #fafafa; } h1 { color: #333; }";

fn svg(colour: &str) -> String {
    format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='600' height='400'>\
         <rect width='600' height='400' fill='{colour}'/></svg>"
    )
}

fn page(title: &str, head: &str, body: &str) -> Vec<u8> {
    format!(
        "<!doctype html><html><head><title>{title}</title>{head}</head><body><h1>{title}</h1>\
         {body}<p>{}</p></body></html>",
        "Words a person reads on this page. ".repeat(8)
    )
    .into_bytes()
}

/// The site: `/` links the four pages; `/complete.html` has only what its HTML names;
/// `/app.html` loads by script; `/blocked.html` wants a robots-forbidden image, one of
/// `other` (another origin: out of scope) and one whose server drops the connection until
/// `healed` is set.
fn site(other: String, healed: Arc<AtomicBool>) -> Handler {
    Arc::new(move |r: &Request| match r.target.as_str() {
        "/img/broken.svg" if !healed.load(Ordering::SeqCst) => Reply {
            wire: Vec::new(),
            body: Vec::new(),
            close: true,
        },
        "/robots.txt" => ok("text/plain", "User-agent: *\nDisallow: /private/\n"),
        "/" => html(&page(
            "Home",
            r#"<link rel="stylesheet" href="/style.css">"#,
            r#"<a href="/complete.html">complete</a> <a href="/app.html">app</a>
               <a href="/blocked.html">blocked</a>"#,
        )),
        "/complete.html" => html(&page(
            "Complete",
            r#"<link rel="stylesheet" href="/style.css">"#,
            r#"<img src="/img/static.svg" alt="static">"#,
        )),
        "/app.html" => html(&page(
            "App",
            r#"<script src="/app.js"></script>"#,
            r#"<p id="out">loading</p>"#,
        )),
        "/blocked.html" => html(&page(
            "Blocked",
            "",
            &format!(
                r#"<img src="/private/secret.svg" alt="private">
                   <img src="{other}/ext.svg" alt="elsewhere">
                   <img src="/img/broken.svg" alt="broken">"#
            ),
        )),
        // Cached for an hour: each page that uses it must still be seen asking for it.
        "/style.css" => response(
            "200 OK",
            &[
                ("Content-Type", "text/css"),
                ("Cache-Control", "max-age=3600"),
            ],
            STYLE_CSS.as_bytes(),
        ),
        "/fonts.css" => ok("text/css", FONTS_CSS),
        // Not a real font: the browser asks for it all the same, which is what is counted.
        "/font.woff2" => ok("font/woff2", b"wOF2 not really a font"),
        "/app.js" => ok("application/javascript", APP_JS),
        "/api/data.json" => ok("application/json", r#"{"message": "data from the API"}"#),
        "/img/static.svg" | "/img/dynamic.svg" | "/private/secret.svg" | "/img/broken.svg" => {
            ok("image/svg+xml", svg("#3a7"))
        }
        _ => not_found(),
    })
}

fn other_site() -> Handler {
    Arc::new(|r: &Request| match r.target.as_str() {
        "/ext.svg" => ok("image/svg+xml", svg("#a37")),
        _ => not_found(),
    })
}

fn profile(name: &str, seed: &str, dir: &str) -> String {
    Loopback {
        dir,
        // A failed fetch is final at once: no retries to wait for.
        politeness: "min_delay = 0.0\ndelay_factor = 0.0\nmax_retries = 0",
        output: "\n[browser]\nrender = \"never\"",
        ..Loopback::new(name, vec![seed.to_string()])
    }
    .toml()
}

fn run_qa(d: &Path, args: &[&str], label: &str) -> Finished {
    let mut all = vec!["qa"];
    all.extend_from_slice(args);
    let done = run_archiver(&all, d, label);
    assert_eq!(
        done.code,
        Some(0),
        "{label}: qa failed\n{}",
        tail(&done.stderr, 4000)
    );
    done
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

fn page_of<'a>(qa: &'a Value, url: &str) -> &'a Value {
    qa["pages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["url"] == url))
        .unwrap_or_else(|| panic!("no page {url} in {qa:#}"))
}

/// The (url, type, reason) of each missing request of a page.
fn missing_of(qa: &Value, url: &str) -> BTreeSet<(String, String, String)> {
    page_of(qa, url)["missing"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_string();
            (s("url"), s("type"), s("reason"))
        })
        .collect()
}

fn set(items: &[(&str, &str, &str)]) -> BTreeSet<(String, String, String)> {
    items
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

fn paths(exchanges: &[Exchange]) -> Vec<String> {
    exchanges.iter().map(|e| e.path().to_string()).collect()
}

/// Loads `file` in headless Chromium (no network: a dead proxy) and returns its DOM.
fn dom_in_chromium(d: &Path, file: &Path) -> String {
    let profile = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--proxy-server=http://127.0.0.1:9",
        "--virtual-time-budget=5000",
        "--dump-dom",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("file://{}", file.display()));
    let done = run_with_timeout(cmd, d, "chromium-report", Duration::from_secs(120));
    assert_eq!(done.code, Some(0), "chromium: {}", tail(&done.stderr, 3000));
    done.stdout
}

#[test]
fn qa_names_what_the_archive_misses_and_a_patch_crawl_fetches_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let other = TestSite::start("127.0.0.1".parse().unwrap(), other_site());
    let healed = Arc::new(AtomicBool::new(false));
    let s = TestSite::start(
        "127.0.0.1".parse().unwrap(),
        site(other.origin(), healed.clone()),
    );
    let url = |p: &str| format!("{}{p}", s.origin());
    std::fs::write(d.join("site.toml"), profile("qa", &url("/"), "out")).unwrap();
    crawl_ok(d, "site.toml", "crawl");
    let crawled = s.exchanges().len();
    assert!(other.exchanges().is_empty(), "the other origin was asked");

    run_qa(
        d,
        &[
            "out",
            "--all",
            "--json",
            "qa.json",
            "-o",
            "report.html",
            "--missing",
            "missing.txt",
        ],
        "qa-1",
    );
    // No request left for the servers while qa ran, though the archive lacks resources.
    assert_eq!(
        s.exchanges().len(),
        crawled,
        "requests during qa: {:?}",
        &paths(&s.exchanges())[crawled..]
    );
    assert!(other.exchanges().is_empty(), "qa asked the other origin");

    let qa = read_json(&d.join("qa.json"));
    assert_eq!(qa["pages"].as_array().map(Vec::len), Some(4), "{qa:#}");
    for (complete, requests) in [("/", 1), ("/complete.html", 2)] {
        let p = page_of(&qa, &url(complete));
        assert_eq!(p["score"], 1.0, "{complete}: {p:#}");
        assert_eq!(p["requests"], requests, "{complete}: {p:#}");
        assert!(p["text_length"].as_u64() > Some(100), "{complete}: {p:#}");
    }
    assert_eq!(
        missing_of(&qa, &url("/app.html")),
        set(&[
            (&url("/api/data.json"), "fetch", "not-discovered"),
            (&url("/img/dynamic.svg"), "image", "not-discovered"),
            (&url("/fonts.css"), "stylesheet", "not-discovered"),
        ])
    );
    let elsewhere = format!("{}/ext.svg", other.origin());
    assert_eq!(
        missing_of(&qa, &url("/blocked.html")),
        set(&[
            (&url("/private/secret.svg"), "image", "robots"),
            (&elsewhere, "image", "out-of-scope"),
            (&url("/img/broken.svg"), "image", "failed"),
        ])
    );
    let score = qa["score"].as_f64().unwrap_or(1.0);
    assert!(score > 0.0 && score < 1.0, "{score}");
    // Worst first.
    let scores: Vec<f64> = qa["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");

    // The report opens offline in Chromium, thumbnails inside it.
    let report = dom_in_chromium(d, &d.join("report.html"));
    assert!(report.contains("id=\"score\""), "{}", tail(&report, 2000));
    assert!(report.contains("data:image/png;base64,"), "no thumbnail");
    assert!(report.contains("reason-robots") && report.contains("reason-out-of-scope"));
    assert!(report.contains(&url("/api/data.json")));

    // The patch list: the discoverable ones, with the page that wanted them.
    let list = std::fs::read_to_string(d.join("missing.txt")).unwrap();
    let listed: BTreeSet<&str> = list
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let want = [
        url("/api/data.json"),
        url("/img/dynamic.svg"),
        url("/fonts.css"),
        url("/img/broken.svg"),
    ];
    assert_eq!(listed, want.iter().map(String::as_str).collect(), "{list}");
    assert!(
        list.contains(&format!("{} {}", url("/fonts.css"), url("/app.html"))),
        "{list}"
    );

    // The crawl is complete; a patch run still fetches them, robots.txt first, and the one
    // whose fetch failed (seen before) again.
    healed.store(true, Ordering::SeqCst);
    let done = run_archiver(
        &["crawl", "--profile", "site.toml", "--patch", "missing.txt"],
        d,
        "patch",
    );
    assert_eq!(done.code, Some(0), "patch: {}", tail(&done.stderr, 4000));
    let patched = s.exchanges();
    let asked = paths(&patched[crawled..]);
    assert_eq!(
        asked.first().map(String::as_str),
        Some("/robots.txt"),
        "{asked:?}"
    );
    for p in [
        "/api/data.json",
        "/img/dynamic.svg",
        "/fonts.css",
        "/font.woff2",
        "/img/broken.svg",
    ] {
        assert!(
            asked.iter().any(|a| a == p),
            "{p} not fetched by the patch: {asked:?}"
        );
    }
    let log = crawl_log(&d.join("out"));
    let line = log
        .iter()
        .find(|l| l.uri == url("/api/data.json"))
        .expect("a crawl.log line of the JSON");
    assert_eq!(line.status, 200);
    assert!(line.hops.ends_with('E'), "{}", line.raw);
    assert_eq!(line.via, url("/app.html"), "{}", line.raw);

    let before = s.exchanges().len();
    run_qa(d, &["out", "--all", "--json", "qa2.json"], "qa-2");
    assert_eq!(s.exchanges().len(), before, "requests during the second qa");
    let qa2 = read_json(&d.join("qa2.json"));
    let app = page_of(&qa2, &url("/app.html"));
    assert_eq!(app["score"], 1.0, "{app:#}");
    // The font of the stylesheet the script inserts is asked for now, and answered.
    assert!(app["requests"].as_u64() >= Some(5), "{app:#}");
    assert_eq!(
        missing_of(&qa2, &url("/blocked.html")),
        set(&[
            (&url("/private/secret.svg"), "image", "robots"),
            (&elsewhere, "image", "out-of-scope"),
        ])
    );
}

#[test]
fn compare_ranks_first_the_page_whose_image_changed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let later = Arc::new(AtomicBool::new(false));
    let flag = later.clone();
    let handler: Handler = Arc::new(move |r: &Request| match r.target.as_str() {
        "/robots.txt" => ok("text/plain", "User-agent: *\nDisallow:\n"),
        "/" => html(&page(
            "Home",
            "",
            r#"<a href="/a.html">a</a> <a href="/b.html">b</a> <a href="/c.html">c</a>"#,
        )),
        "/a.html" => html(&page("A", "", r#"<img src="/a.svg">"#)),
        "/b.html" => html(&page("B", "", r#"<img src="/b.svg">"#)),
        "/c.html" => html(&page("C", "", "")),
        "/a.svg" => ok("image/svg+xml", svg("#2255dd")),
        // The one change between the two crawls.
        "/b.svg" if flag.load(Ordering::SeqCst) => ok("image/svg+xml", svg("#dd2222")),
        "/b.svg" => ok("image/svg+xml", svg("#22aa44")),
        _ => not_found(),
    });
    let s = TestSite::start("127.0.0.1".parse().unwrap(), handler);
    let seed = format!("{}/", s.origin());
    std::fs::write(d.join("old.toml"), profile("old", &seed, "old")).unwrap();
    std::fs::write(d.join("new.toml"), profile("new", &seed, "new")).unwrap();
    crawl_ok(d, "old.toml", "crawl-old");
    later.store(true, Ordering::SeqCst);
    crawl_ok(d, "new.toml", "crawl-new");

    run_qa(
        d,
        &[
            "new",
            "--all",
            "--compare",
            "old",
            "--json",
            "cmp.json",
            "-o",
            "cmp.html",
        ],
        "qa-compare",
    );
    let qa = read_json(&d.join("cmp.json"));
    let compare = qa["compare"].as_array().expect("a compare list");
    assert_eq!(compare.len(), 4, "{qa:#}");
    assert_eq!(
        compare[0]["url"],
        format!("{}/b.html", s.origin()),
        "{qa:#}"
    );
    let first = compare[0]["pixel_diff"].as_f64().unwrap();
    assert!(first > 0.05 && first <= 1.0, "{first}");
    for c in &compare[1..] {
        let diff = c["pixel_diff"].as_f64().unwrap();
        assert!(diff < 0.01, "{c}");
    }
    let report = std::fs::read_to_string(d.join("cmp.html")).unwrap();
    assert!(report.contains("most changed first"));
}

#[test]
fn a_page_that_never_settles_is_cut_at_the_timeout_and_reported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let handler: Handler = Arc::new(|r: &Request| match r.target.as_str() {
        "/robots.txt" => ok("text/plain", "User-agent: *\nDisallow:\n"),
        "/" => html(&page(
            "Home",
            "",
            r#"<a href="/poll.html">poll</a> <a href="/spin.html">spin</a>"#,
        )),
        // Never idle: a request every 50 ms.
        "/poll.html" => html(&page(
            "Poll",
            "<script>setInterval(() => fetch('/poll?' + Math.random()).catch(() => {}), 50)\
             </script>",
            "",
        )),
        // Never yields once loaded.
        "/spin.html" => html(&page(
            "Spin",
            "<script>addEventListener('load', () => { for (;;) {} })</script>",
            "",
        )),
        _ => not_found(),
    });
    let s = TestSite::start("127.0.0.1".parse().unwrap(), handler);
    let seed = format!("{}/", s.origin());
    std::fs::write(d.join("site.toml"), profile("slow", &seed, "out")).unwrap();
    crawl_ok(d, "site.toml", "crawl");
    let done = run_qa(
        d,
        // One tab: the home page (first in crawl order) is not slowed by the spinning one.
        &[
            "out",
            "--all",
            "--tabs",
            "1",
            "--timeout",
            "8",
            "--json",
            "qa.json",
        ],
        "qa-timeout",
    );
    let qa = read_json(&d.join("qa.json"));
    assert_eq!(qa["pages_checked"], 3, "{qa:#}");
    for slow in ["/poll.html", "/spin.html"] {
        let p = page_of(&qa, &format!("{}{slow}", s.origin()));
        assert_eq!(p["timed_out"], true, "{slow}: {p:#}");
    }
    let home = page_of(&qa, &seed);
    assert_eq!(home["timed_out"], false, "{home:#}");
    assert_eq!(home["score"], 1.0, "{home:#}");
    assert_eq!(qa["timed_out"], 2, "{}", done.stderr);
}
