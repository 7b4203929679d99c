//! Opt-out lists at crawl time: nothing a list names is requested — not even robots.txt when a
//! whole host is named — and every match is logged.

use crate::common;

use std::sync::Arc;

use common::output::LogLine;
use common::site::{html, Request, TestSite};
use common::tools::run_archiver;

#[test]
fn opted_out_urls_and_hosts_are_never_requested() {
    let handler = || {
        Arc::new(|req: &Request| match req.target.as_str() {
            "/" => html(
                b"<a href=/a.html>a</a><a href=/private/x.html>x</a><a href=/private/y.html>y</a>",
            ),
            _ => html(b"<p>page</p>"),
        }) as common::site::Handler
    };
    let kept = TestSite::start("127.0.0.1".parse().expect("ip"), handler());
    let gone = TestSite::start("127.0.0.7".parse().expect("ip"), handler());
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("optout.txt"),
        format!(
            "# requests received by e-mail\n{}/private/   2026-11-30\n127.0.0.7   # the whole host\n",
            kept.origin()
        ),
    )
    .expect("list");
    let profile = format!(
        r#"[crawl]
name = "optout"
seeds = ["{}/", "{}/"]

[identity]
user_agent = "archiver/0.1 (+https://example.org/archiver-tests)"

[politeness]
min_delay = 0.0
delay_factor = 0.0

[optout]
lists = ["optout.txt"]

[discovery]
# This test counts its requests: no /sitemap.xml (tests/sitemap_recrawl.rs tests sitemaps).
sitemaps = false

[output]
dir = "out"
"#,
        kept.origin(),
        gone.origin()
    );
    let p = dir.path().join("profile.toml");
    std::fs::write(&p, profile).expect("profile");
    let done = run_archiver(
        &["crawl", "--profile", &p.to_string_lossy()],
        dir.path(),
        "optout",
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);

    assert!(
        gone.exchanges().is_empty(),
        "an opted-out host was asked for something"
    );
    let targets: Vec<String> = kept
        .exchanges()
        .iter()
        .map(|e| e.request.target.clone())
        .collect();
    assert_eq!(targets, ["/robots.txt", "/", "/a.html"]);
    let log = std::fs::read_to_string(dir.path().join("out/crawl.log")).expect("crawl.log");
    let lines: Vec<LogLine> = log
        .lines()
        .map(|l| LogLine::parse(l).expect("line"))
        .collect();
    let blocked: Vec<&LogLine> = lines.iter().filter(|l| l.status == -5001).collect();
    assert_eq!(blocked.len(), 3, "{log}");
    assert!(blocked.iter().all(|l| l.has_annotation("optout")));
    assert!(blocked
        .iter()
        .any(|l| l.uri == format!("{}/", gone.origin())));
    assert!(blocked.iter().any(|l| l.uri.ends_with("/private/x.html")));
    assert!(blocked[0].extra["list"]
        .as_str()
        .is_some_and(|s| s.contains("optout.txt:")));

    // A malformed list stops the crawl before it starts, naming the list's line.
    std::fs::write(dir.path().join("optout.txt"), "http://[bad\n").expect("list");
    let bad = run_archiver(
        &["crawl", "--profile", &p.to_string_lossy()],
        dir.path(),
        "bad-list",
    );
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("optout.txt:1"), "{}", bad.stderr);
}
