//! A crawl across runs: the reports count the whole crawl (not the last run), a finished crawl
//! run again changes nothing and says so, an interrupted one resumes to the last URL, and a
//! crawl that could fetch no seed at all ends with exit code 3.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::profile::Loopback;
use common::site::{html, response, Request, TestSite};
use common::tools::{crawl_ok, free_port, run_archiver, send_signal, start_crawl, wait_until};

/// `/` links to `n` pages of distinct prose (so no repeated-content trap fires).
fn site(n: usize, delay: Duration) -> TestSite {
    TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(move |req: &Request| {
            std::thread::sleep(delay);
            match req.target.as_str() {
                "/robots.txt" => response("404 Not Found", &[], b""),
                "/" => {
                    let links: String = (0..n).map(|i| format!("<a href=/p{i}>{i}</a>")).collect();
                    html(links.as_bytes())
                }
                t => html(format!("<title>{t}</title><p>{}</p>", prose(t)).as_bytes()),
            }
        }),
    )
}

/// Different words for every page.
fn prose(seed: &str) -> String {
    const WORDS: [&str; 12] = [
        "amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "inlet", "larch",
        "meadow", "osprey",
    ];
    let mut h = seed
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    (0..200)
        .map(|_| {
            h = h
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            WORDS[((h >> 33) % 12) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn write_profile(dir: &Path, seeds: &[String], min_delay: f64) -> String {
    let politeness = format!("min_delay = {min_delay}\ndelay_factor = 0.0\nmax_retries = 0");
    Loopback {
        politeness: &politeness,
        ..Loopback::new("runs", seeds.to_vec())
    }
    .write(dir, "profile.toml")
}

fn report(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("out/report.json")).expect("report.json");
    serde_json::from_str(&text).expect("report.json is JSON")
}

#[test]
fn a_finished_crawl_run_again_changes_no_report_and_says_it_is_complete() {
    let s = site(5, Duration::ZERO);
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write_profile(dir.path(), &[format!("{}/", s.origin())], 0.0);
    crawl_ok(dir.path(), &p, "first");
    let requests = s.exchanges().len();
    let out = dir.path().join("out");
    let summary = std::fs::read(out.join("summary.txt")).expect("summary.txt");
    let json = std::fs::read(out.join("report.json")).expect("report.json");
    assert_eq!(
        report(dir.path())["totals"]["archived"],
        7,
        "robots.txt, / and 5 pages"
    );

    let again = crawl_ok(dir.path(), &p, "again");
    assert!(
        again.stderr.contains("already complete"),
        "{}",
        again.stderr
    );
    assert!(
        again.stderr.contains("[output] dir"),
        "says how to crawl again: {}",
        again.stderr
    );
    assert_eq!(s.exchanges().len(), requests, "nothing fetched again");
    assert_eq!(
        std::fs::read(out.join("summary.txt")).expect("summary"),
        summary
    );
    assert_eq!(
        std::fs::read(out.join("report.json")).expect("report"),
        json
    );
    let runlog = std::fs::read_to_string(out.join("run.log")).expect("run.log");
    assert_eq!(
        runlog.matches("start crawl").count(),
        2,
        "run.log keeps every run:\n{runlog}"
    );
    assert!(runlog.contains("already complete"), "{runlog}");
}

#[test]
fn an_interrupted_then_resumed_crawl_reports_every_url_of_the_site() {
    let pages = 30;
    let s = site(pages, Duration::from_millis(30));
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write_profile(dir.path(), &[format!("{}/", s.origin())], 0.05);
    let child = start_crawl(dir.path(), &p, Stdio::piped());
    // Let a few pages be fetched (or 30 s pass), then Ctrl-C (SIGINT).
    wait_until(Duration::from_secs(30), || s.exchanges().len() >= 8);
    send_signal(&child, "INT");
    let stopped = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("resume with:") && stderr.contains("crawl --profile"),
        "{stderr}"
    );
    let partial = report(dir.path());
    let first_run = partial["totals"]["archived"].as_u64().expect("archived");
    assert!(first_run < pages as u64 + 2, "stopped mid-crawl: {partial}");

    crawl_ok(dir.path(), &p, "resumed");
    let r = report(dir.path());
    let totals = &r["totals"];
    // `/`, every page, and robots.txt once per run (each run asks for it again; its 404 is
    // the site's answer and is archived): the first run's URLs are counted too.
    let every_url = pages as u64 + 1 + 2;
    assert_eq!(totals["archived"], every_url, "{r}");
    assert_eq!(totals["urls"], every_url, "{r}");
    assert_eq!(r["statuses"]["200"], pages as u64 + 1, "{r}");
    assert_eq!(totals["queued"], 0);
    let host = s.origin().trim_start_matches("http://").to_string();
    assert_eq!(r["hosts"][&host]["novel"], every_url);
    let runs = r["runs"].as_array().expect("runs");
    let outcomes: Vec<&str> = runs
        .iter()
        .map(|r| r["outcome"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(outcomes, ["interrupted", "finished"], "{r}");
    assert!(runs
        .iter()
        .all(|r| r["started"].is_string() && r["ended"].is_string()));
    let summary = std::fs::read_to_string(dir.path().join("out/summary.txt")).expect("summary");
    assert!(summary.contains("2 runs"), "{summary}");
    let archived_line = format!("{every_url} exchanges");
    assert!(summary.contains(&archived_line), "{summary}");
}

#[test]
fn a_crawl_whose_seeds_are_all_unreachable_exits_3_and_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Nothing listens on these ports: every connection is refused.
    let seeds = [
        format!("http://127.0.0.1:{}/", free_port()),
        format!("http://127.0.0.1:{}/a", free_port()),
    ];
    let p = write_profile(dir.path(), &seeds, 0.0);
    let done = run_archiver(&["crawl", "--profile", &p], dir.path(), "unreachable");
    assert_eq!(done.code, Some(3), "{}", done.stderr);
    assert!(
        done.stderr.contains("no seed could be fetched"),
        "{}",
        done.stderr
    );
    for seed in &seeds {
        assert!(
            done.stderr.contains(seed.as_str()),
            "names {seed}: {}",
            done.stderr
        );
    }
    assert!(
        done.stderr.contains("robots.txt could not be fetched"),
        "{}",
        done.stderr
    );
    let warcs = dir.path().join("out/warcs");
    let files = std::fs::read_dir(&warcs).map(|d| d.count()).unwrap_or(0);
    assert_eq!(files, 0, "nothing archived");
    // One seed that answers is enough for a normal end.
    let s = site(0, Duration::ZERO);
    let p = write_profile(
        dir.path(),
        &[seeds[0].clone(), format!("{}/", s.origin())],
        0.0,
    );
    std::fs::remove_dir_all(dir.path().join("out")).expect("rm out");
    crawl_ok(dir.path(), &p, "one-answers");
}
