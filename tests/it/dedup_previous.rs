//! `[dedup] previous` names an earlier crawl the way a user writes it: the crawl's output
//! folder (as here), its `indexes/` folder or `.cdxj` files. A second crawl of the same,
//! unchanged site then writes revisits; a folder that holds no index stops the profile (exit
//! 2, naming the folder) instead of deduplicating nothing, silently.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::output::{files_ending, read_warc};
use common::profile::Loopback;
use common::site::{html, response, Request, TestSite};
use common::tools::{crawl_ok, run_archiver};

/// `/` links to two pages; every answer the same on every visit.
fn site() -> TestSite {
    TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(|req: &Request| match req.target.as_str() {
            "/robots.txt" => response("404 Not Found", &[], b""),
            "/" => html(b"<title>home</title><a href=/a>a</a> <a href=/b>b</a>"),
            t => html(format!("<title>{t}</title><p>the page {t}, unchanged</p>").as_bytes()),
        }),
    )
}

/// A profile crawling `seed` into `dir/OUT`, with `[dedup] previous = [previous]`.
fn profile(dir: &Path, file: &str, out: &str, seed: &str, previous: Option<&str>) -> String {
    let dedup = previous
        .map(|p| format!("\n[dedup]\nprevious = [{p:?}]\n"))
        .unwrap_or_default();
    Loopback {
        dir: out,
        output: &dedup,
        ..Loopback::new("dedup-previous", vec![seed.to_string()])
    }
    .write(dir, file)
}

/// (responses, revisits) of the HTML pages in an output folder's WARCs.
fn pages(out: &Path) -> (usize, usize) {
    let mut counts = (0, 0);
    for warc in files_ending(&out.join("warcs"), ".warc.gz") {
        for r in read_warc(&warc) {
            if r.target().ends_with("/robots.txt") {
                continue;
            }
            match r.kind() {
                "response" => counts.0 += 1,
                "revisit" => counts.1 += 1,
                _ => {}
            }
        }
    }
    counts
}

#[test]
fn a_crawl_folder_as_previous_makes_revisits() {
    let s = site();
    let seed = format!("{}/", s.origin());
    let dir = tempfile::tempdir().expect("tempdir");
    let first = profile(dir.path(), "first.toml", "crawl-2026-11", &seed, None);
    crawl_ok(dir.path(), &first, "first");
    assert_eq!(pages(&dir.path().join("crawl-2026-11")), (3, 0));
    // As a user writes it: the earlier crawl's output folder, relative to the profile.
    let second = profile(
        dir.path(),
        "second.toml",
        "crawl-2026-12",
        &seed,
        Some("crawl-2026-11"),
    );
    crawl_ok(dir.path(), &second, "second");
    assert_eq!(pages(&dir.path().join("crawl-2026-12")), (0, 3));
}

#[test]
fn a_previous_folder_without_an_index_is_a_profile_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("crawl-2026-11/warcs")).unwrap();
    let p = profile(
        dir.path(),
        "p.toml",
        "out",
        "http://127.0.0.1:9/",
        Some("crawl-2026-11"),
    );
    let done = run_archiver(&["crawl", "--profile", &p], dir.path(), "no-index");
    assert_eq!(done.code, Some(2), "{}", done.stderr);
    assert!(done.stderr.contains("dedup.previous"), "{}", done.stderr);
    assert!(
        done.stderr.contains("crawl-2026-11 holds no CDXJ index"),
        "{}",
        done.stderr
    );
    assert!(!dir.path().join("out").exists(), "nothing crawled");
}
