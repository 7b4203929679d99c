//! End-to-end (issue 8): everything in scope is archived, filters are decided on the headers,
//! trap rules cut traps but not ordinary sites (and say what they cut), `Retry-After` sticks.
//!
//! Loopback only: the raw-TCP test server of `tests/common/site.rs`; every timing is measured
//! on the server's own clock.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::Datelike;
use common::output::{crawl_log, files_ending, read_warc, LogLine};
use common::profile::Loopback;
use common::site::{not_found, ok, response, Exchange, Reply, Request, TestSite};
use common::tools::{crawl_ok, send_signal, start_crawl, wait_until};

const UA: &str = "archiver/0.1 (+https://example.org/archiver-scope-test)";

/// `p.toml`; `extra` goes on after `[identity] user_agent` (more keys, other tables).
fn write_profile(dir: &Path, seed: &str, politeness: &str, extra: &str) {
    let politeness = format!("{politeness}\nmax_retries = 2");
    Loopback {
        user_agent: UA,
        identity: extra,
        politeness: &politeness,
        ..Loopback::new("scope-filters", vec![seed.to_string()])
    }
    .write(dir, "p.toml");
}

/// A 200 text/html page with no other header.
fn html(body: &str) -> Reply {
    ok("text/html", body)
}

fn warc_targets(out: &Path) -> Vec<(String, String)> {
    files_ending(&out.join("warcs"), ".warc.gz")
        .iter()
        .flat_map(|p| read_warc(p))
        .map(|r| (r.kind().to_string(), r.target().to_string()))
        .collect()
}

// ---- a templated catalogue beside two traps ---------------------------------------------------

const LISTINGS: usize = 30;
const PER_LISTING: usize = 10;

/// The same template for every product: only the numbers differ.
fn product_page(n: usize) -> String {
    format!(
        "<html><head><title>Product {n} | Shop</title></head><body>\
         <nav><a href=/shop/list?page=1>Catalogue</a> Home About Contact Delivery Returns</nav>\
         <h1>Product {n}</h1><p>Price: {}.{:02} EUR. Article number {}. In stock: {} pieces.</p>\
         <p>Free delivery from 50 EUR. Order before 14:00 and it ships today.</p>\
         <footer>Shop Ltd, 1 Main Street. Terms. Privacy.</footer></body></html>",
        n % 97,
        n % 100,
        100_000 + n,
        n % 13
    )
}

fn listing_page(page: usize) -> String {
    let items: String = (0..PER_LISTING)
        .map(|k| {
            let n = (page - 1) * PER_LISTING + k;
            format!("<li><a href=/shop/item/{n}.html>Product {n}</a></li>")
        })
        .collect();
    // A pagination bar, as shops have: every listing page links to every other.
    let next: String = (1..=LISTINGS)
        .map(|p| format!(" <a href=/shop/list?page={p}>{p}</a>"))
        .collect();
    format!("<html><body><h1>Catalogue, page {page} of {LISTINGS}</h1><ul>{items}</ul>{next}</body></html>")
}

fn shop_site(session: Arc<AtomicUsize>) -> common::site::Handler {
    Arc::new(move |req: &Request| {
        let target = req.target.as_str();
        let path = target.split('?').next().unwrap_or("");
        if path == "/" {
            let y = chrono::Utc::now().year();
            return html(&format!(
                "<a href=/shop/list?page=1>shop</a> <a href=/cal/{y}/01/>calendar</a> \
                 <a href=/s/home?PHPSESSID=0123456789abcdef0123456789abcdef>members</a>"
            ));
        }
        if path == "/shop/list" {
            let page = target
                .split("page=")
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(1);
            return html(&listing_page(page));
        }
        if let Some(n) = path
            .strip_prefix("/shop/item/")
            .and_then(|p| p.strip_suffix(".html"))
            .and_then(|n| n.parse().ok())
        {
            return html(&product_page(n));
        }
        if let Some(rest) = path.strip_prefix("/cal/") {
            // An endless calendar: every month links to the next one.
            let mut parts = rest.split('/');
            let y: i32 = parts.next().and_then(|y| y.parse().ok()).unwrap_or(2000);
            let m: u32 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(1);
            let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
            return html(&format!(
                "<h1>Events in {y}-{m:02}</h1><p>No events.</p><a href=/cal/{ny}/{nm:02}/>next month</a>"
            ));
        }
        if path.starts_with("/s/") {
            // Every answer hands out a new session id in its links.
            let id = session.fetch_add(1, Ordering::SeqCst);
            return html(&format!(
                "<h1>Members</h1><a href=/s/home?PHPSESSID={id:032x}>home</a> \
                 <a href=/s/about?PHPSESSID={:032x}>about</a>",
                id + 1000
            ));
        }
        not_found()
    })
}

#[test]
fn a_templated_catalogue_is_archived_whole_while_traps_are_cut() {
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        shop_site(Arc::new(AtomicUsize::new(1))),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = format!("{}/", site.origin());
    // Enough hops for the calendar to reach the end of its window (three years of months).
    write_profile(
        dir.path(),
        &seed,
        "min_delay = 0.0\ndelay_factor = 0.0",
        "\n[scope]\nmax_hops = 100",
    );
    let run = crawl_ok(dir.path(), "p.toml", "crawl");
    let out = dir.path().join("out");
    let log = crawl_log(&out);
    let origin = site.origin();

    // Every listing and every product page, archived, none taken for a trap.
    let archived = |url: &str| {
        log.iter()
            .any(|l| l.uri == url && l.status == 200 && l.extra.get("warcFilename").is_some())
    };
    for page in 1..=LISTINGS {
        let url = format!("{origin}/shop/list?page={page}");
        assert!(archived(&url), "{url} not archived");
    }
    let missing: Vec<usize> = (0..LISTINGS * PER_LISTING)
        .filter(|n| !archived(&format!("{origin}/shop/item/{n}.html")))
        .collect();
    assert!(missing.is_empty(), "products not archived: {missing:?}");
    let repeated: Vec<&str> = log
        .iter()
        .filter(|l| l.has_annotation("trap:repeated-content"))
        .map(|l| l.uri.as_str())
        .collect();
    assert!(
        repeated.is_empty(),
        "ordinary pages taken for repeated content: {repeated:?}"
    );

    // The calendar stops at the end of its window, logged; nothing past it is asked for.
    let last_year = i64::from(chrono::Utc::now().year()) + 2;
    let cut: Vec<&LogLine> = log
        .iter()
        .filter(|l| l.has_annotation("trap:calendar"))
        .collect();
    assert_eq!(cut.len(), 1, "calendar cuts: {cut:?}");
    assert_eq!(cut[0].status, -5000);
    assert_eq!(cut[0].uri, format!("{origin}/cal/{}/01/", last_year + 1));
    let exchanges = site.exchanges();
    for e in &exchanges {
        if let Some(y) = e
            .path()
            .strip_prefix("/cal/")
            .and_then(|r| r.split('/').next())
            .and_then(|y| y.parse::<i64>().ok())
        {
            assert!(y <= last_year, "{} requested", e.request.target);
        }
    }
    // The session-id trap: each page once, whatever id its links carry.
    let count = |p: &str| exchanges.iter().filter(|e| e.path() == p).count();
    assert_eq!(count("/s/home"), 1);
    assert_eq!(count("/s/about"), 1);

    // The drop is counted by rule: in summary.txt and in report.json, in total and per host.
    let summary = std::fs::read_to_string(out.join("summary.txt")).expect("summary.txt");
    assert!(
        summary.contains("1 by trap rules (trap:calendar 1), 0 by quotas"),
        "{summary}"
    );
    assert!(
        run.stderr.contains("trap:calendar 1"),
        "end summary: {}",
        run.stderr
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).expect("report"))
            .expect("json");
    assert_eq!(report["dropped"]["traps"]["trap:calendar"], 1, "{report}");
    assert_eq!(report["totals"]["dropped_by_traps"], 1);
    let host = site.addr.to_string();
    assert_eq!(
        report["hosts"][&host]["dropped"]["traps"]["trap:calendar"], 1,
        "{report}"
    );
}

#[test]
fn a_traps_table_can_turn_the_calendar_rule_off() {
    // With the calendar rule off, the same site's calendar runs until max_hops stops it.
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        shop_site(Arc::new(AtomicUsize::new(1))),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let y = chrono::Utc::now().year();
    let seed = format!("{}/cal/{y}/01/", site.origin());
    write_profile(
        dir.path(),
        &seed,
        "min_delay = 0.0\ndelay_factor = 0.0",
        "\n[scope]\nmax_hops = 40\n\n[traps]\ncalendar = false",
    );
    crawl_ok(dir.path(), "p.toml", "crawl");
    let months = site
        .exchanges()
        .iter()
        .filter(|e| e.path().starts_with("/cal/"))
        .count();
    assert_eq!(months, 41, "the seed and 40 hops of months");
    let log = crawl_log(&dir.path().join("out"));
    assert!(log.iter().any(|l| l.has_annotation("scope:max-hops")));
    assert!(!log.iter().any(|l| l.has_annotation("trap:calendar")));
}

// ---- a video dropped on its headers ------------------------------------------------------------

const VIDEO_LEN: usize = 20 << 20;
const PDF_LEN: usize = 300_000;

#[test]
fn a_filtered_type_is_dropped_on_its_headers_and_everything_else_is_kept() {
    let video = Arc::new(vec![b'v'; VIDEO_LEN]);
    let pdf = Arc::new(vec![b'p'; PDF_LEN]);
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(move |req: &Request| match req.target.as_str() {
            "/" => html(
                "<a href=/movie.mp4>film</a> <a href=/doc.pdf>paper</a> \
                 <video src=/clip.webm></video> <a href=/data.bin>data</a>",
            ),
            "/movie.mp4" => response("200 OK", &[("Content-Type", "video/mp4")], &video),
            "/clip.webm" => response(
                "200 OK",
                &[("Content-Type", "video/webm")],
                &video[..1 << 20],
            ),
            "/doc.pdf" => response("200 OK", &[("Content-Type", "application/pdf")], &pdf),
            "/data.bin" => response("200 OK", &[], b"no content-type at all"),
            _ => not_found(),
        }),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = format!("{}/", site.origin());
    write_profile(
        dir.path(),
        &seed,
        "min_delay = 0.0\ndelay_factor = 0.0",
        "send_referer = false\n\n[scope]\nkeep_mime = [\"!video/*\"]",
    );
    crawl_ok(dir.path(), "p.toml", "crawl");
    let out = dir.path().join("out");
    let exchanges = site.exchanges();
    let exchange = |p: &str| -> &Exchange {
        exchanges
            .iter()
            .find(|e| e.path() == p)
            .unwrap_or_else(|| panic!("{p} not requested"))
    };

    // The server's side: the video's body was not sent (the connection was closed on it).
    let movie = exchange("/movie.mp4");
    assert!(!movie.complete, "the whole video was sent");
    assert!(
        movie.written.len() < VIDEO_LEN / 4,
        "{} of {VIDEO_LEN} bytes of the video went out",
        movie.written.len()
    );
    // The linked PDF and the untyped file are archived (everything in scope by default).
    assert!(exchange("/doc.pdf").complete);
    let targets = warc_targets(&out);
    let has_response = |p: &str| {
        let url = format!("{}{p}", site.origin());
        targets.iter().any(|(k, t)| k == "response" && *t == url)
    };
    assert!(has_response("/doc.pdf"));
    assert!(has_response("/data.bin"));
    let url_of = |p: &str| format!("{}{p}", site.origin());
    for p in ["/movie.mp4", "/clip.webm"] {
        assert!(
            !targets.iter().any(|(_, t)| *t == url_of(p)),
            "a record of {p} was written"
        );
    }
    // crawl.log says why, with the type and length the headers announced.
    let log = crawl_log(&out);
    let line = log
        .iter()
        .find(|l| l.uri == url_of("/movie.mp4"))
        .expect("movie in crawl.log");
    assert!(line.has_annotation("scope:mime"), "{}", line.raw);
    assert_eq!(
        (line.status, line.size, line.digest.as_str()),
        (200, None, "-"),
        "{}",
        line.raw
    );
    assert_eq!(line.extra["content-type"], "video/mp4", "{}", line.raw);
    assert_eq!(
        line.extra["content-length"],
        VIDEO_LEN.to_string(),
        "{}",
        line.raw
    );
    let clip = log
        .iter()
        .find(|l| l.uri == url_of("/clip.webm"))
        .expect("clip in crawl.log");
    assert!(clip.has_annotation("scope:mime"), "{}", clip.raw);
    // send_referer = false: no request names a page.
    for e in &exchanges {
        assert_eq!(e.request.header("referer"), None, "{}", e.request.target);
    }
}

// ---- Retry-After sticks ---------------------------------------------------------------------

const RETRY_AFTER: Duration = Duration::from_secs(1);

#[test]
fn retry_after_becomes_the_floor_also_after_a_resume() {
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(|req: &Request| match req.target.as_str() {
            "/" => html(
                &(1..=8)
                    .map(|i| format!("<a href=/p{i}.html>{i}</a>"))
                    .collect::<String>(),
            ),
            "/p1.html" if req.earlier == 0 => response(
                "429 Too Many Requests",
                &[("Retry-After", "1"), ("Content-Type", "text/plain")],
                b"slow down",
            ),
            p if p.starts_with("/p") => html("<p>page</p>"),
            _ => not_found(),
        }),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = format!("{}/", site.origin());
    write_profile(dir.path(), &seed, "min_delay = 0.1\ndelay_factor = 0.0", "");

    // First run: stopped a few requests after the 429.
    let mut child = start_crawl(dir.path(), "p.toml", Stdio::null());
    let three_after_429 = || {
        let seen = site.exchanges();
        seen.iter()
            .position(|e| e.status == 429)
            .is_some_and(|i| seen.len() >= i + 4)
    };
    assert!(
        wait_until(Duration::from_secs(60), three_after_429),
        "no 429 and 3 more requests"
    );
    send_signal(&child, "INT");
    assert_eq!(child.wait().expect("wait").code(), Some(130));
    let first_run = site.exchanges().len();
    let book =
        std::fs::read_to_string(dir.path().join("out/state/sites.json")).expect("sites.json");
    assert!(book.contains("\"retry_after\": 1.0"), "{book}");

    // Second run: resumes and finishes.
    crawl_ok(dir.path(), "p.toml", "resume");
    let all = site.exchanges();
    assert!(
        all.len() > first_run + 2,
        "the resumed run fetched too little"
    );
    let answered_429 = all.iter().position(|e| e.status == 429).expect("a 429");
    let mut gaps = Vec::new();
    for i in answered_429 + 1..all.len() {
        if i == first_run {
            continue; // across the two runs: not one crawl's pause
        }
        let gap = all[i]
            .arrived
            .saturating_duration_since(all[i - 1].finished);
        gaps.push((all[i].request.target.clone(), gap));
    }
    let short: Vec<_> = gaps.iter().filter(|(_, g)| *g < RETRY_AFTER).collect();
    assert!(
        short.is_empty(),
        "gaps below the Retry-After of {RETRY_AFTER:?}: {short:?} (all: {gaps:?})"
    );
    assert!(gaps.len() >= 6, "{gaps:?}");
}

#[test]
fn retry_after_on_robots_txt_sticks_too() {
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(|req: &Request| match req.target.as_str() {
            "/robots.txt" if req.earlier == 0 => response(
                "503 Service Unavailable",
                &[("Retry-After", "1"), ("Content-Type", "text/plain")],
                b"busy",
            ),
            "/robots.txt" => response(
                "200 OK",
                &[("Content-Type", "text/plain")],
                b"User-agent: *\n",
            ),
            "/" => html("<a href=/a.html>a</a> <a href=/b.html>b</a> <a href=/c.html>c</a>"),
            p if p.ends_with(".html") => html("<p>page</p>"),
            _ => not_found(),
        }),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = format!("{}/", site.origin());
    write_profile(dir.path(), &seed, "min_delay = 0.1\ndelay_factor = 0.0", "");
    crawl_ok(dir.path(), "p.toml", "crawl");
    let all = site.exchanges();
    let paths: Vec<&str> = all.iter().map(Exchange::path).collect();
    assert_eq!(
        paths,
        [
            "/robots.txt",
            "/robots.txt",
            "/",
            "/a.html",
            "/b.html",
            "/c.html"
        ],
        "robots.txt asked again after its 503, then the pages"
    );
    for pair in all.windows(2) {
        let gap = pair[1].arrived.saturating_duration_since(pair[0].finished);
        assert!(
            gap >= RETRY_AFTER,
            "{} came {gap:?} after {} (Retry-After: 1 on robots.txt)",
            pair[1].request.target,
            pair[0].request.target
        );
    }
}
