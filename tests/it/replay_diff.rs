//! Two crawls of a changing site: `tools/replay.sh OLD NEW` serves both in one collection, so
//! the diff report's links replay the old capture from the old crawl and the new one from the
//! new; the report tells a content change (word diff) from a page whose only change is a link.

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::profile::Loopback;
use common::site::{html, response, Request, TestSite};
use common::tools::{crawl_ok, http_get, run_archiver, Replay};

/// `NAME.toml`, crawling into the folder `NAME`.
fn profile(dir: &Path, name: &str, seed: &str) -> String {
    Loopback {
        dir: name,
        ..Loopback::new(name, vec![seed.to_string()])
    }
    .write(dir, &format!("{name}.toml"))
}

/// Version 1, then 2: /a's text changes, / and /b only gain a link to the new page /c, /d
/// stays the same.
fn site(version: Arc<AtomicUsize>) -> TestSite {
    TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(move |req: &Request| {
            let v = version.load(Ordering::SeqCst);
            let new_link = if v == 2 {
                "<a href=/c>see also</a>"
            } else {
                ""
            };
            match req.target.as_str() {
                "/robots.txt" => response("404 Not Found", &[], b""),
                "/" => html(
                    format!("<a href=/a>a</a> <a href=/b>b</a> <a href=/d>d</a> {new_link}")
                        .as_bytes(),
                ),
                "/a" => html(
                    format!(
                        "<p>The harbour was quiet in edition {} of the story.</p>",
                        ["", "one", "two"][v]
                    )
                    .as_bytes(),
                ),
                "/b" => html(format!("<p>A page that only gains a link.</p>{new_link}").as_bytes()),
                "/c" => html(b"<p>The new page.</p>"),
                _ => html(b"<p>Never changes.</p>"),
            }
        }),
    )
}

fn cdxj_timestamp(out: &Path, url: &str) -> String {
    let text: String = std::fs::read_dir(out.join("indexes"))
        .expect("indexes")
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    text.lines()
        .find(|l| l.contains(&format!("\"url\": \"{url}\"")))
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or_else(|| panic!("{url} not in {}:\n{text}", out.display()))
        .to_string()
}

#[test]
fn both_crawls_replay_and_the_report_tells_content_from_links() {
    let version = Arc::new(AtomicUsize::new(1));
    let s = site(version.clone());
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = format!("{}/", s.origin());
    let p1 = profile(dir.path(), "old", &seed);
    crawl_ok(dir.path(), &p1, "old");
    // CDXJ timestamps have whole seconds: the second crawl must not share the first's.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    version.store(2, Ordering::SeqCst);
    let p2 = profile(dir.path(), "new", &seed);
    crawl_ok(dir.path(), &p2, "new");
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));

    // Text: changes only, the unchanged as a count, unless --all.
    let text = run_archiver(&["diff", "old", "new"], dir.path(), "diff-text");
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    assert!(
        text.stdout.contains("unchanged: 2 (not listed"),
        "{}",
        text.stdout
    );
    assert!(!text.stdout.contains("  = "), "{}", text.stdout);
    let all = run_archiver(&["diff", "old", "new", "--all"], dir.path(), "diff-all");
    assert!(
        all.stdout.contains(&format!("  = {seed}d")),
        "{}",
        all.stdout
    );

    // Both crawls in one pywb collection: each capture replays from its own crawl.
    let replay = Replay::start_many(&[&old, &new], dir.path());
    let url_a = format!("{seed}a");
    let (ts_old, ts_new) = (cdxj_timestamp(&old, &url_a), cdxj_timestamp(&new, &url_a));
    assert_ne!(ts_old, ts_new);
    for (ts, want) in [(&ts_old, "edition one"), (&ts_new, "edition two")] {
        let r = http_get(replay.addr, &format!("/crawl/{ts}id_/{url_a}")).expect("pywb");
        let body = String::from_utf8_lossy(&r.body);
        assert!(body.contains(want), "{ts}: {want:?} not in {body}");
    }

    // HTML: counts first, content vs links only, word diff, sizes, dates, right links.
    let base = format!("http://{}/crawl", replay.addr);
    let html = run_archiver(
        &[
            "diff", "old", "new", "--format", "html", "--pywb", &base, "-o", "d.html",
        ],
        dir.path(),
        "diff-html",
    );
    assert_eq!(html.code, Some(0), "{}", html.stderr);
    let page = std::fs::read_to_string(dir.path().join("d.html")).expect("d.html");
    let at = |s: &str| {
        page.find(s)
            .unwrap_or_else(|| panic!("{s:?} not in report:\n{page}"))
    };
    assert!(at("<table>") < at("Content changed (1)"), "counts first");
    assert!(page.contains("<del>one</del> <ins>two</ins>"), "{page}");
    assert!(at("Only links changed (2)") > at("Content changed"));
    assert!(
        page.contains("+<code>/c</code>"),
        "the added link is named: {page}"
    );
    assert!(
        page.contains("<details><summary><b>Unchanged (2)</b>"),
        "collapsed: {page}"
    );
    assert!(page.contains(&format!(
        "{}-{}-{} ",
        &ts_old[..4],
        &ts_old[4..6],
        &ts_old[6..8]
    )));
    assert!(page.contains(" B &rarr; "), "both sizes: {page}");
    let old_link = format!("{base}/{ts_old}/{url_a}");
    let new_link = format!("{base}/{ts_new}/{url_a}");
    assert!(
        page.contains(&old_link) && page.contains(&new_link),
        "{page}"
    );
    // The links' captures replay as pages (mp_: the page itself, not pywb's frame).
    for (ts, want) in [(&ts_old, "edition one"), (&ts_new, "edition two")] {
        let r = http_get(replay.addr, &format!("/crawl/{ts}mp_/{url_a}")).expect("pywb");
        assert!(String::from_utf8_lossy(&r.body).contains(want), "{ts}");
    }
}

/// `tools/replay.sh` with no pywb in its venv installs it there first. Slow (pip fetches pywb
/// and its dependencies from PyPI, minutes), so not part of the default run:
/// `cargo test --test it replay_diff:: -- --ignored`.
#[test]
#[ignore = "installs pywb from PyPI into a fresh venv (minutes)"]
fn replay_sh_installs_pywb_into_a_missing_venv() {
    let s = site(Arc::new(AtomicUsize::new(1)));
    let dir = tempfile::tempdir().expect("tempdir");
    let p = profile(dir.path(), "one", &format!("{}/", s.origin()));
    crawl_ok(dir.path(), &p, "one");
    let venv = dir.path().join("fresh-venv");
    let replay = Replay::start_in_venv(&[&dir.path().join("one")], dir.path(), &venv, 600);
    assert!(venv.join("bin/wayback").exists());
    let r = http_get(replay.addr, &format!("/crawl/*/{}/", s.origin())).expect("pywb");
    assert_eq!(r.status, 200);
}
