//! `archiver diff`: two small crawls written with our own WARC writer, compared as folders
//! and as CDXJ files, in text, JSON and HTML (whose links pywb replays), and one page's text
//! diff read from the WARCs.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use common::commands::*;
use serde_json::Value;

const OLD_TS: &str = "20261101000000";
const NEW_TS: &str = "20261130000000";

/// Old: home, about, gone, flaky (404), other host. New: home as a revisit of the old one,
/// about changed, gone removed, flaky back (200), a new page, other host identical.
fn two_crawls(dir: &Path) -> (PathBuf, PathBuf) {
    let old = dir.join("old");
    let new = dir.join("new");
    let first = write_crawl(
        &old,
        "OLD",
        Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap(),
        &[
            Cap::Page("http://site.test/", 200, "<p>home</p><p>welcome</p>"),
            Cap::Page(
                "http://site.test/about",
                200,
                "<h1>About</h1><p>We are small.</p><p>Founded 2001.</p>",
            ),
            Cap::Page("http://site.test/gone", 200, "<p>soon gone</p>"),
            Cap::Page("http://site.test/flaky", 404, "<p>missing</p>"),
            Cap::Page("http://other.test/", 200, "<p>other</p>"),
        ],
    );
    write_crawl(
        &new,
        "NEW",
        Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap(),
        &[
            Cap::Revisit(
                "http://site.test/",
                "http://site.test/",
                &first.written[0],
                "<p>home</p><p>welcome</p>",
            ),
            Cap::Page(
                "http://site.test/about",
                200,
                "<h1>About</h1><p>We are bigger now.</p><p>Founded 2001.</p>",
            ),
            Cap::Page("http://site.test/flaky", 200, "<p>back</p>"),
            Cap::Page("http://site.test/new", 200, "<p>fresh</p>"),
            Cap::Page("http://other.test/", 200, "<p>other</p>"),
        ],
    );
    (old, new)
}

fn diff_ok(args: &[&str]) -> String {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    let out = archiver(&all);
    assert!(
        out.status.success(),
        "archiver diff failed:\n{}",
        stderr(&out)
    );
    stdout(&out)
}

fn sorted_strings(v: &Value) -> Vec<String> {
    let mut list: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    list.sort();
    list
}

fn check_json(report: &str) {
    let v: Value = serde_json::from_str(report).unwrap_or_else(|e| panic!("{e}: {report}"));
    assert_eq!(sorted_strings(&v["added"]), ["http://site.test/new"]);
    assert_eq!(sorted_strings(&v["removed"]), ["http://site.test/gone"]);
    assert_eq!(
        sorted_strings(&v["changed"]),
        ["http://site.test/about", "http://site.test/flaky"]
    );
    assert_eq!(
        sorted_strings(&v["unchanged"]),
        ["http://other.test/", "http://site.test/"]
    );
    let status = v["status_changes"].as_array().unwrap();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0]["url"], "http://site.test/flaky");
    assert_eq!(status[0]["old"], "404");
    assert_eq!(status[0]["new"], "200");
    let site = &v["hosts"]["site.test"];
    assert_eq!(
        (
            &site["added"],
            &site["removed"],
            &site["changed"],
            &site["unchanged"]
        ),
        (
            &Value::from(1),
            &Value::from(1),
            &Value::from(2),
            &Value::from(1)
        )
    );
    assert_eq!(v["hosts"]["other.test"]["unchanged"], 1);
    assert_eq!(v["summary"]["status_changes"], 1);
}

#[test]
fn json_report_lists_added_removed_changed_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_crawls(dir.path());
    check_json(&diff_ok(&[
        &old.display().to_string(),
        &new.display().to_string(),
        "--format",
        "json",
    ]));
    // The same from the CDXJ files themselves, written to a file.
    let old_cdxj = only_file(&old.join("indexes"), ".cdxj");
    let new_cdxj = only_file(&new.join("indexes"), ".cdxj");
    let report = dir.path().join("report.json");
    let printed = diff_ok(&[
        &old_cdxj.display().to_string(),
        &new_cdxj.display().to_string(),
        "--format",
        "json",
        "-o",
        &report.display().to_string(),
    ]);
    assert!(printed.is_empty());
    check_json(&fs::read_to_string(&report).unwrap());
}

#[test]
fn crawls_given_as_warcs_without_indexes_are_indexed_first() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_crawls(dir.path());
    // The old crawl as a bare folder of WARCs (in a sub-folder), the new one as its WARC file.
    fs::remove_dir_all(old.join("indexes")).unwrap();
    let moved = dir.path().join("old-warcs").join("2026");
    fs::create_dir_all(moved.parent().unwrap()).unwrap();
    fs::rename(old.join("warcs"), &moved).unwrap();
    let new_warc = only_file(&new.join("warcs"), ".warc.gz");
    let old_arg = dir.path().join("old-warcs").display().to_string();
    check_json(&diff_ok(&[
        &old_arg,
        &new_warc.display().to_string(),
        "--format",
        "json",
    ]));
    // --url reads the page from the WARC found in the sub-folder.
    let text = diff_ok(&[
        &old_arg,
        &new.display().to_string(),
        "--url",
        "http://site.test/about",
    ]);
    assert!(text.contains("We are small."), "{text}");
}

#[test]
fn text_report_has_totals_and_a_line_per_host() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_crawls(dir.path());
    let text = diff_ok(&[&old.display().to_string(), &new.display().to_string()]);
    assert!(
        text.contains("added 1, removed 1, changed 2, unchanged 2, status changes 1"),
        "{text}"
    );
    let host_row = |host: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .find(|w| w.first().map(String::as_str) == Some(host))
            .unwrap_or_else(|| panic!("no row for {host}:\n{text}"))
    };
    assert_eq!(host_row("site.test")[1..], ["1", "1", "2", "1", "1"]);
    assert_eq!(host_row("other.test")[1..], ["0", "0", "0", "1", "0"]);
    assert!(text.contains("+ http://site.test/new"), "{text}");
    assert!(text.contains("- http://site.test/gone"), "{text}");
    assert!(
        text.contains("! http://site.test/flaky  404 -> 200"),
        "{text}"
    );
}

#[test]
fn html_report_links_replay_both_versions_in_pywb() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_crawls(dir.path());
    // One pywb collection holding both crawls.
    let both = dir.path().join("both-indexes");
    fs::create_dir(&both).unwrap();
    for crawl in [&old, &new] {
        let cdxj = only_file(&crawl.join("indexes"), ".cdxj");
        fs::copy(&cdxj, both.join(cdxj.file_name().unwrap())).unwrap();
    }
    let pywb = Pywb::start(&both, &[&old.join("warcs"), &new.join("warcs")], None);
    let base = format!("http://{}/c", pywb.addr);
    let html = diff_ok(&[
        &old.display().to_string(),
        &new.display().to_string(),
        "--format",
        "html",
        "--pywb",
        &base,
    ]);
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    let links: Vec<String> = regex::Regex::new("href=\"([^\"]+)\"")
        .unwrap()
        .captures_iter(&html)
        .map(|c| c[1].replace("&amp;", "&"))
        .collect();
    let about_old = format!("{base}/{OLD_TS}/http://site.test/about");
    let about_new = format!("{base}/{NEW_TS}/http://site.test/about");
    assert!(links.contains(&about_old), "{links:?}");
    assert!(links.contains(&about_new), "{links:?}");
    let expect = [
        (about_old.as_str(), "We are small."),
        (about_new.as_str(), "We are bigger now."),
    ];
    for (link, text) in expect {
        let target = link
            .strip_prefix(&format!("http://{}", pywb.addr))
            .unwrap()
            .replacen(&format!("/{OLD_TS}/"), &format!("/{OLD_TS}id_/"), 1)
            .replacen(&format!("/{NEW_TS}/"), &format!("/{NEW_TS}id_/"), 1);
        let r = common::tools::http_get(pywb.addr, &target).expect("GET from pywb");
        assert_eq!(r.status, 200, "{target}");
        assert!(String::from_utf8_lossy(&r.body).contains(text), "{target}");
    }
    // Every link of the report replays (the revisit through its original in the old crawl).
    for link in &links {
        let (ts, url) = link
            .strip_prefix(&format!("{base}/"))
            .and_then(|rest| rest.split_once('/'))
            .unwrap_or_else(|| panic!("odd link {link}"));
        let (status, _) = pywb.get(ts, url);
        // The old flaky page was archived as a 404, and replays as one.
        let archived = if url.ends_with("/flaky") && ts == OLD_TS {
            404
        } else {
            200
        };
        assert_eq!(status, archived, "{link}");
    }
}

#[test]
fn url_shows_the_text_diff_of_one_page() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_crawls(dir.path());
    let (o, n) = (old.display().to_string(), new.display().to_string());
    let text = diff_ok(&[&o, &n, "--url", "http://site.test/about"]);
    assert!(
        text.starts_with(&format!("--- http://site.test/about {OLD_TS} (old)\n")),
        "{text}"
    );
    assert!(
        text.contains("\n-We are small.\n+We are bigger now.\n Founded 2001.\n"),
        "{text}"
    );
    assert!(text.contains("\n About\n"), "{text}");
    // A revisit reads its original: same text.
    let same = diff_ok(&[&o, &n, "--url", "http://site.test/"]);
    assert!(same.contains("(the extracted text is the same)"), "{same}");
    // A page the old crawl lacks.
    let out = archiver(&["diff", &o, &n, "--url", "http://site.test/new"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not captured in the old crawl"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unsorted_or_missing_indexes_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_crawls(dir.path());
    let cdxj = only_file(&new.join("indexes"), ".cdxj");
    let mut lines = lines(&cdxj);
    lines.swap(0, 2);
    let unsorted = dir.path().join("unsorted.cdxj");
    fs::write(&unsorted, lines.join("\n") + "\n").unwrap();
    let out = archiver(&[
        "diff",
        &old.display().to_string(),
        &unsorted.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("unsorted.cdxj:2: CDXJ lines are not sorted"),
        "{err}"
    );

    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let out = archiver(&[
        "diff",
        &old.display().to_string(),
        &empty.display().to_string(),
    ]);
    // Nothing to compare is a usage error (exit 2) naming the folder.
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no CDXJ index and no WARC or ARC file found"),
        "{}",
        stderr(&out)
    );
}
