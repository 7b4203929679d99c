//! Crash and resume: the crawler is killed with SIGKILL at pseudo-random moments of a loopback
//! crawl and started again each time with the same profile. At the end nothing may be lost,
//! nothing archived may have been archived twice, and every WARC must pass `warcio check`.
//!
//! `CRASH_KILLS` sets the number of kills (default 4 here; `tools/bench/crash_test.sh` runs 20
//! and prints the report).

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::output::{files_ending, read_warc};
use common::site::{html, response, Request, TestSite};
use common::tools::{crawl_ok, start_crawl, venv};

/// Pages of the test site: `/` links to `sections` sections, each links to five pages.
fn site_pages(sections: usize) -> Vec<String> {
    let mut pages = vec!["/".to_string()];
    for s in 0..sections {
        pages.push(format!("/s{s}/"));
        for p in 0..5 {
            pages.push(format!("/s{s}/p{p}.html"));
        }
    }
    pages
}

fn handler(sections: usize) -> common::site::Handler {
    Arc::new(move |req: &Request| {
        // Slow enough that kills land mid-crawl, mid-exchange and mid-write.
        std::thread::sleep(Duration::from_millis(15));
        let t = req.target.as_str();
        if t == "/robots.txt" {
            return response(
                "200 OK",
                &[("Content-Type", "text/plain")],
                b"User-agent: *\nAllow: /\n",
            );
        }
        let links: Vec<String> = if t == "/" {
            (0..sections)
                .map(|s| format!("<a href=/s{s}/>s{s}</a>"))
                .collect()
        } else if let Some(s) = t.strip_prefix("/s").and_then(|r| r.strip_suffix('/')) {
            (0..5)
                .map(|p| format!("<a href=/s{s}/p{p}.html>p{p}</a>"))
                .collect()
        } else {
            Vec::new()
        };
        // Distinct bodies of a few KB each, in words (digits are ignored by the repeated-content
        // trap detector, and pages that differ only in numbers would rightly look like a trap).
        let filler = format!("<p>{}</p>", prose(t, 300));
        html(format!("<title>{t}</title>{}{filler}", links.join("")).as_bytes())
    })
}

/// `n` words picked pseudo-randomly, seeded by `seed`: different text for every page.
fn prose(seed: &str, n: usize) -> String {
    const WORDS: [&str; 16] = [
        "amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "inlet", "juniper",
        "kestrel", "larch", "meadow", "nettle", "osprey", "plover",
    ];
    let mut rng = Lcg(seed
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))));
    (0..n)
        .map(|_| WORDS[rng.next_ms(0, 16) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A tiny deterministic generator, so a failing run can be repeated.
struct Lcg(u64);

impl Lcg {
    fn next_ms(&mut self, lo: u64, hi: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (self.0 >> 33) % (hi - lo)
    }
}

fn write_profile(dir: &Path, seed: &str) -> std::path::PathBuf {
    let text = format!(
        r#"[crawl]
name = "crash-test"
seeds = ["{seed}"]
sites_at_once = 2

[identity]
user_agent = "archiver/0.1 (+https://example.org/archiver-tests)"

[politeness]
min_delay = 0.01
delay_factor = 0.0

[output]
dir = "out"
warc_max_bytes = 30000
"#
    );
    let p = dir.join("profile.toml");
    std::fs::write(&p, text).expect("profile");
    p
}

#[test]
fn killed_at_random_moments_the_crawl_loses_nothing_and_archives_nothing_twice() {
    let kills: usize = std::env::var("CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    // Enough pages that every kill lands mid-crawl (about half a second of crawling per run).
    let sections = 4 + kills * 3;
    let site = TestSite::start("127.0.0.1".parse().expect("ip"), handler(sections));
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = write_profile(dir.path(), &format!("{}/", site.origin()));
    let profile_arg = profile.to_string_lossy().to_string();
    let mut rng = Lcg(42);
    let mut killed = 0;
    for i in 0..kills {
        let mut child = start_crawl(dir.path(), &profile_arg, Stdio::null());
        std::thread::sleep(Duration::from_millis(rng.next_ms(150, 900)));
        if child.try_wait().expect("wait").is_none() {
            child.kill().expect("SIGKILL"); // std's kill is SIGKILL on Unix
            killed += 1;
        }
        let _ = child.wait();
        eprintln!("run {}: killed = {}", i + 1, killed);
    }
    // The last run goes to the end.
    crawl_ok(dir.path(), &profile_arg, "final");

    let out = dir.path().join("out");
    let warcs = files_ending(&out.join("warcs"), ".warc.gz");
    assert!(
        files_ending(&out.join("warcs"), ".open").is_empty(),
        "an .open WARC was left"
    );
    // Archived URLs, counted over every WARC of every run.
    let mut archived: HashMap<String, usize> = HashMap::new();
    for w in &warcs {
        for r in read_warc(w) {
            if matches!(r.kind(), "response" | "revisit") && !r.target().ends_with("/robots.txt") {
                *archived.entry(r.target().to_string()).or_default() += 1;
            }
        }
    }
    let expected: BTreeSet<String> = site_pages(sections)
        .iter()
        .map(|p| format!("{}{p}", site.origin()))
        .collect();
    let lost: Vec<&String> = expected
        .iter()
        .filter(|u| !archived.contains_key(*u))
        .collect();
    let twice: Vec<(&String, &usize)> = archived.iter().filter(|(_, n)| **n > 1).collect();
    // warcio check over everything written.
    let check = Command::new(venv().join("bin/warcio"))
        .arg("check")
        .args(&warcs)
        .output()
        .expect("warcio check");
    let invalid = String::from_utf8_lossy(&check.stdout)
        .lines()
        .filter(|l| l.contains("failed") || l.contains("exception"))
        .count();
    // The same CDXJ as cdxj-indexer would give: every archived record is indexed exactly once.
    let cdxj_lines: usize = files_ending(&out.join("indexes"), ".cdxj")
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("cdxj").lines().count())
        .sum();
    let records: usize = archived.values().sum::<usize>()
        + warcs
            .iter()
            .flat_map(|w| read_warc(w))
            .filter(|r| {
                // robots.txt is fetched again by every run; from the second on it is a revisit.
                matches!(r.kind(), "response" | "revisit") && r.target().ends_with("/robots.txt")
            })
            .count();
    // Requests the server saw beyond one per page: pages in flight when a kill came (never
    // archived, so asked again), which is allowed; archiving twice is not.
    let mut requests: HashMap<String, usize> = HashMap::new();
    for e in site.exchanges() {
        if e.request.target != "/robots.txt" {
            *requests.entry(e.request.target.clone()).or_default() += 1;
        }
    }
    let asked_again: usize = requests.values().map(|n| n - 1).sum();
    eprintln!(
        "crash test: {kills} runs, {killed} killed with SIGKILL; refetched after being archived: \
         {}; lost: {}; invalid WARC records: {invalid}; WARC files: {}; pages asked again \
         because they were in flight at a kill: {asked_again}",
        twice.len(),
        lost.len(),
        warcs.len()
    );
    assert!(twice.is_empty(), "archived more than once: {twice:?}");
    assert!(lost.is_empty(), "never archived: {lost:?}");
    assert_eq!(
        invalid,
        0,
        "warcio check: {}",
        String::from_utf8_lossy(&check.stdout)
    );
    assert!(check.status.success());
    assert_eq!(
        cdxj_lines, records,
        "one CDXJ line per response/revisit record"
    );
}
