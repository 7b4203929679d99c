//! The politeness promises, checked from the server's side: the test servers log when every
//! request arrived and when its answer was written, and these tests read those logs.
//!
//! Delays are short (loopback allows it) but the assertions are about order and minimum
//! intervals, never about how long anything took.

use crate::common;

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::output::{files_ending, LogLine};
use common::site::{html, response, Exchange, Handler, Reply, Request, TestSite};
use common::tools::{crawl_ok, run_archiver};

const UA: &str = "archiver/0.1 (+https://example.org/archiver-tests)";

/// A profile for these tests; `extra` is appended (more keys, or a `[resolve]` table).
fn profile(dir: &Path, seeds: &[String], politeness: &str, extra: &str) -> std::path::PathBuf {
    let seeds: Vec<String> = seeds.iter().map(|s| format!("{s:?}")).collect();
    let text = format!(
        r#"[crawl]
name = "politeness-test"
seeds = [{seeds}]
sites_at_once = 8

[identity]
user_agent = "{UA}"

[politeness]
delay_factor = 0.0
max_delay = 5.0
{politeness}

[limits]
timeout = 10.0

[discovery]
# This test counts its requests: no /sitemap.xml (tests/sitemap_recrawl.rs tests sitemaps).
sitemaps = false

[output]
dir = "out"
{extra}"#,
        seeds = seeds.join(", ")
    );
    let path = dir.join("profile.toml");
    std::fs::write(&path, text).expect("write profile");
    path
}

/// A small site: `/` links to four pages; robots.txt allows everything.
fn small_site(extra: impl Fn(&Request) -> Option<Reply> + Send + Sync + 'static) -> Handler {
    Arc::new(move |req: &Request| {
        // Answer a little late, as real servers do (see JITTER).
        std::thread::sleep(Duration::from_millis(20));
        if let Some(r) = extra(req) {
            return r;
        }
        match req.target.as_str() {
            "/robots.txt" => response(
                "200 OK",
                &[("Content-Type", "text/plain")],
                b"User-agent: *\nAllow: /\n",
            ),
            "/" => html(
                b"<a href=/p1.html>1</a><a href=/p2.html>2</a><a href=/p3.html>3</a><a href=/p4.html>4</a>",
            ),
            _ => html(b"<p>page</p>"),
        }
    })
}

fn crawl(dir: &Path, profile: &Path, label: &str) -> common::tools::Finished {
    crawl_ok(dir, &profile.to_string_lossy(), label)
}

fn crawl_log(dir: &Path) -> Vec<LogLine> {
    common::output::crawl_log(&dir.join("out"))
}

/// The test server stamps "answer written" and "request arrived" from its own thread; on a
/// loaded machine the OS can pause that thread between the write and the stamp. Gaps are
/// compared with this much slack. The delays under test are 100-800 ms, and the pages answer
/// 20 ms late, so a delay counted from the request's start instead of its end would still show.
const JITTER: Duration = Duration::from_millis(15);

/// Asserts one request at a time and at least `min` between the end of an answer and the
/// next request, over the exchanges given (in order of arrival).
fn assert_paced(log: &[Exchange], min: Duration, what: &str) {
    for pair in log.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            b.arrived >= a.finished,
            "{what}: #{} {} arrived before #{} {} was answered (two requests at once)",
            b.seq,
            b.request.target,
            a.seq,
            a.request.target
        );
        let gap = b.arrived.duration_since(a.finished);
        assert!(
            gap + JITTER >= min,
            "{what}: #{} {} came {gap:?} after the end of #{} {} (minimum {min:?})",
            b.seq,
            b.request.target,
            a.seq,
            a.request.target
        );
    }
}

#[test]
fn two_host_names_on_one_address_share_one_budget() {
    let ip: IpAddr = "127.0.0.5".parse().expect("ip");
    let site = TestSite::start(ip, small_site(|_| None));
    let port = site.addr.port();
    let dir = tempfile::tempdir().expect("tempdir");
    let seeds = vec![
        format!("http://site-a.test:{port}/"),
        format!("http://site-b.test:{port}/"),
    ];
    let resolve = "[resolve]\n\"site-a.test\" = \"127.0.0.5\"\n\"site-b.test\" = \"127.0.0.5\"\n";
    let p = profile(dir.path(), &seeds, "min_delay = 0.3", resolve);
    crawl(dir.path(), &p, "shared-ip");

    let log = site.exchanges();
    let hosts: Vec<&str> = log
        .iter()
        .filter_map(|e| e.request.header("host"))
        .collect();
    for host in ["site-a.test", "site-b.test"] {
        let n = hosts.iter().filter(|h| h.starts_with(host)).count();
        assert_eq!(n, 6, "{host}: robots.txt, / and 4 pages expected, got {n}");
    }
    // Both names are one server: the delay holds across them, as for one host.
    assert_paced(&log, Duration::from_millis(300), "one address, two names");
    // And each site began with its robots.txt.
    for host in ["site-a.test", "site-b.test"] {
        let first = log
            .iter()
            .find(|e| {
                e.request
                    .header("host")
                    .is_some_and(|h| h.starts_with(host))
            })
            .expect("a request");
        assert_eq!(first.request.target, "/robots.txt", "{host}");
    }
    let warcinfo_ip = files_ending(&dir.path().join("out/warcs"), ".warc.gz");
    assert!(!warcinfo_ip.is_empty(), "no WARC written");
    let records = common::output::read_warc(&warcinfo_ip[0]);
    assert!(
        records
            .iter()
            .filter(|r| r.kind() == "response")
            .all(|r| r.get("WARC-IP-Address") == Some("127.0.0.5")),
        "every response records the address it came from"
    );
}

#[test]
fn robots_txt_redirected_to_another_server_waits_for_that_servers_budget() {
    // One server (the target) holds the robots.txt that four others redirect theirs to, and
    // is crawled itself: every request it gets, the redirected robots.txt included, keeps its
    // delay. Before, each redirecting site fetched it on its own budget, all at once.
    let target = TestSite::start(
        "127.0.0.6".parse().expect("ip"),
        small_site(|req| {
            (req.target == "/shared-robots.txt").then(|| {
                response(
                    "200 OK",
                    &[("Content-Type", "text/plain")],
                    b"User-agent: *\nDisallow: /no\n",
                )
            })
        }),
    );
    let shared = format!("{}/shared-robots.txt", target.origin());
    let redirecting: Vec<TestSite> = (7..11)
        .map(|last| {
            let to = shared.clone();
            TestSite::start(
                format!("127.0.0.{last}").parse().expect("ip"),
                Arc::new(move |req: &Request| match req.target.as_str() {
                    "/robots.txt" => response("301 Moved Permanently", &[("Location", &to)], b""),
                    "/" => html(b"<a href=/no>no</a><a href=/yes>yes</a>"),
                    _ => html(b"<p>page</p>"),
                }),
            )
        })
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seeds = vec![format!("{}/", target.origin())];
    seeds.extend(redirecting.iter().map(|s| format!("{}/", s.origin())));
    let p = profile(dir.path(), &seeds, "min_delay = 0.3", "");
    crawl(dir.path(), &p, "robots-redirect-budget");

    let log = target.exchanges();
    let fetched = log
        .iter()
        .filter(|e| e.request.target == "/shared-robots.txt")
        .count();
    assert_eq!(fetched, 4, "one redirected robots.txt per redirecting site");
    assert_eq!(
        log.len(),
        4 + 6,
        "and the target's own robots.txt, / and 4 pages"
    );
    assert_paced(&log, Duration::from_millis(300), "the redirect target");
    // The rules found there are the redirecting sites' rules.
    let lines = crawl_log(dir.path());
    for site in &redirecting {
        let status = |path: &str| {
            let uri = format!("{}{path}", site.origin());
            lines.iter().find(|l| l.uri == uri).map(|l| l.status)
        };
        assert_eq!(
            status("/no"),
            Some(-9998),
            "{}: /no is disallowed",
            site.origin()
        );
        assert_eq!(
            status("/yes"),
            Some(200),
            "{}: /yes is allowed",
            site.origin()
        );
        assert!(
            !site.exchanges().iter().any(|e| e.request.target == "/no"),
            "{}: /no was requested",
            site.origin()
        );
    }
    let robots: Vec<&LogLine> = lines.iter().filter(|l| l.uri == shared).collect();
    assert_eq!(robots.len(), 4);
    assert!(robots.iter().all(|l| l.status == 200 && l.hops == "PR"));
}

#[test]
fn answers_429_slow_the_host_down_then_the_page_is_archived_once() {
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        small_site(|req| match req.target.as_str() {
            // Only one page, so the 429s come one after the other.
            "/" => Some(html(b"<a href=/p2.html>2</a>")),
            "/p2.html" if req.earlier < 3 => Some(response(
                "429 Too Many Requests",
                &[("Content-Type", "text/plain")],
                b"slow down",
            )),
            _ => None,
        }),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let seeds = vec![format!("{}/", site.origin())];
    let p = profile(
        dir.path(),
        &seeds,
        "min_delay = 0.1\nmax_retries = 3\nrefusals_before_suspend = 10",
        "",
    );
    crawl(dir.path(), &p, "backoff");
    let log = site.exchanges();
    assert_paced(&log, Duration::from_millis(100), "429 site");
    // The gap after each 429 doubles: 0.2 s, 0.4 s, 0.8 s (from the 0.1 s delay).
    let mut expected = Duration::from_millis(200);
    for (i, e) in log.iter().enumerate() {
        if e.status != 429 {
            continue;
        }
        let next = log.get(i + 1).expect("a request after each 429");
        let gap = next.arrived.duration_since(e.finished);
        assert!(
            gap + JITTER >= expected,
            "after 429 #{}: gap {gap:?}, expected at least {expected:?}",
            e.seq
        );
        expected *= 2;
    }
    let p2: Vec<&Exchange> = log
        .iter()
        .filter(|e| e.request.target == "/p2.html")
        .collect();
    assert_eq!(p2.len(), 4, "three 429s, then the 200");
    let lines = crawl_log(dir.path());
    let p2_lines: Vec<&LogLine> = lines
        .iter()
        .filter(|l| l.uri.ends_with("/p2.html"))
        .collect();
    assert_eq!(p2_lines.len(), 4);
    assert!(p2_lines[..3]
        .iter()
        .all(|l| l.status == 429 && l.annotations.iter().any(|a| a.starts_with("retry:"))));
    assert_eq!(p2_lines[3].status, 200);
    let cdxj: String = files_ending(&dir.path().join("out/indexes"), ".cdxj")
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("cdxj"))
        .collect();
    let p2_cdx: Vec<&str> = cdxj.lines().filter(|l| l.contains("/p2.html")).collect();
    assert_eq!(
        p2_cdx.len(),
        1,
        "only the final answer is archived: {p2_cdx:?}"
    );
    assert!(p2_cdx[0].contains("\"status\": \"200\""));
    // The end-of-crawl report counts the same: per host, per MIME type, per status.
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/report.json")).expect("report.json"),
    )
    .expect("json");
    assert_eq!(report["finished"], true);
    let host = &report["hosts"][site.addr.to_string()];
    assert_eq!(host["novel"], 3, "robots.txt, / and /p2.html: {report}");
    assert_eq!(host["remaining"], 0);
    assert_eq!(report["statuses"]["429"], 3);
    assert_eq!(report["statuses"]["200"], 3);
    assert_eq!(report["mime_types"]["text/html"]["urls"], 2);
    assert_eq!(report["totals"]["archived"], 3);
}

#[test]
fn a_site_that_keeps_refusing_is_suspended_and_left_alone_by_the_next_run() {
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        small_site(|req| {
            (req.target != "/robots.txt").then(|| {
                response(
                    "403 Forbidden",
                    &[("Content-Type", "text/html")],
                    b"<title>Forbidden</title>",
                )
            })
        }),
    );
    // A second, friendly site keeps the crawl going meanwhile.
    let friendly = TestSite::start("127.0.0.6".parse().expect("ip"), small_site(|_| None));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seeds: Vec<String> = (1..=6)
        .map(|i| format!("{}/x{i}.html", site.origin()))
        .collect();
    seeds.push(format!("{}/", friendly.origin()));
    let p = profile(
        dir.path(),
        &seeds,
        "min_delay = 0.05\nrefusals_before_suspend = 3\nsuspend_hours = 2.0",
        "",
    );
    let first = crawl(dir.path(), &p, "refusing-1");
    let hits = site.exchanges().iter().filter(|e| e.status == 403).count();
    assert_eq!(hits, 3, "stops asking after 3 refusals in a row");
    let refusals =
        std::fs::read_to_string(dir.path().join("out/refusals.log")).expect("refusals.log");
    let rows: Vec<Vec<&str>> = refusals.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 3, "{refusals}");
    for row in &rows {
        assert_eq!(row.len(), 6, "time, host, IP, URL, status, marker: {row:?}");
        assert_eq!(row[2], "127.0.0.1");
        assert_eq!(row[4], "403");
        assert_eq!(row[5], "status:403");
    }
    assert!(
        first.stderr.contains("suspended:"),
        "summary lists the suspended site: {}",
        first.stderr
    );
    let book: HashMap<String, serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/state/sites.json")).expect("sites.json"),
    )
    .expect("json");
    let entry = book
        .get(&site.origin())
        .expect("the refusing site is in the book");
    assert_eq!(entry["round"], 1);
    // The friendly site was crawled whole meanwhile.
    assert_eq!(friendly.exchanges().len(), 6);

    // A second run of the same profile leaves the suspended site alone: not one request.
    let before = site.exchanges().len();
    let second = crawl(dir.path(), &p, "refusing-2");
    assert_eq!(
        site.exchanges().len(),
        before,
        "asked a suspended site again"
    );
    assert!(second.stderr.contains("suspended:"), "{}", second.stderr);
}

#[test]
fn an_unrestricted_run_needs_a_reason_and_says_who_it_is() {
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        small_site(|req| {
            (req.target == "/robots.txt").then(|| {
                response(
                    "200 OK",
                    &[("Content-Type", "text/plain")],
                    b"User-agent: *\nDisallow: /p1.html\nCrawl-delay: 0.2\n",
                )
            })
        }),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let seeds = vec![format!("{}/", site.origin())];
    let p = profile(
        dir.path(),
        &seeds,
        "min_delay = 0.0",
        "[robots]\nobey = false\n",
    );
    let refused = run_archiver(
        &["crawl", "--profile", &p.to_string_lossy()],
        dir.path(),
        "unrestricted-no-reason",
    );
    assert_eq!(refused.code, Some(2));
    assert!(refused.stderr.contains("robots.obey"), "{}", refused.stderr);
    assert!(
        site.exchanges().is_empty(),
        "nothing may be fetched without a reason"
    );

    let p = profile(
        dir.path(),
        &seeds,
        "min_delay = 0.0",
        "[robots]\nobey = false\nreason = \"court order 42: full capture\"\n",
    );
    crawl(dir.path(), &p, "unrestricted");
    let log = site.exchanges();
    assert!(
        log.iter().any(|e| e.request.target == "/p1.html"),
        "robots.txt was not obeyed"
    );
    assert!(log.iter().all(|e| e.request.header("user-agent")
        == Some("archiver-unrestricted/0.1 (+https://example.org/archiver-tests)")));
    // Still paced by the Crawl-delay robots.txt asked for.
    assert_paced(&log[1..], Duration::from_millis(200), "unrestricted");
    let warcs = files_ending(&dir.path().join("out/warcs"), ".warc.gz");
    let info = common::output::read_warc_stream(&warcs[0]);
    let body = String::from_utf8_lossy(&info[0].1).to_string();
    assert!(
        body.contains("court order 42: full capture"),
        "warcinfo: {body}"
    );
    let runlog = std::fs::read_to_string(dir.path().join("out/run.log")).expect("run.log");
    assert!(runlog.contains("court order 42"), "{runlog}");
}
