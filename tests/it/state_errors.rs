//! Bad state on disk: another profile's state folder, a damaged frontier database, an output
//! folder that cannot be written. Each is a clear error before anything is fetched, and nothing
//! already there is changed.

use crate::common;

use std::path::Path;

use common::profile::Loopback;
use common::site::{html, TestSite};
use common::tools::{crawl_ok, run_archiver};

/// `NAME.toml`, crawling into `out`.
fn write_profile(dir: &Path, name: &str, seed: &str) -> String {
    Loopback::new(name, vec![seed.to_string()]).write(dir, &format!("{name}.toml"))
}

fn site() -> TestSite {
    TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        std::sync::Arc::new(|_: &common::site::Request| html(b"<p>hello</p>")),
    )
}

#[test]
fn another_profiles_state_folder_is_refused() {
    let s = site();
    let dir = tempfile::tempdir().expect("tempdir");
    let first = write_profile(dir.path(), "first", &format!("{}/", s.origin()));
    crawl_ok(dir.path(), &first, "first");
    let requests = s.exchanges().len();
    let db = std::fs::read(dir.path().join("out/state/frontier.sqlite")).expect("db");

    let second = write_profile(dir.path(), "second", &format!("{}/", s.origin()));
    let refused = run_archiver(&["crawl", "--profile", &second], dir.path(), "second");
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("first") && refused.stderr.contains("second"),
        "the error names both crawls: {}",
        refused.stderr
    );
    assert_eq!(s.exchanges().len(), requests, "nothing may be fetched");
    let after = std::fs::read(dir.path().join("out/state/frontier.sqlite")).expect("db");
    assert_eq!(db, after, "the other crawl's state is untouched");
}

#[test]
fn a_damaged_frontier_database_is_a_clear_error() {
    let s = site();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("out/state")).expect("mkdir");
    let db = dir.path().join("out/state/frontier.sqlite");
    std::fs::write(&db, b"this is not a database, just some bytes").expect("write");
    let p = write_profile(dir.path(), "damaged", &format!("{}/", s.origin()));
    let done = run_archiver(&["crawl", "--profile", &p], dir.path(), "damaged");
    assert_eq!(done.code, Some(1));
    assert!(done.stderr.contains("frontier.sqlite"), "{}", done.stderr);
    assert!(!done.stderr.contains("panicked"), "{}", done.stderr);
    assert!(s.exchanges().is_empty());
    assert_eq!(
        std::fs::read(&db).expect("db"),
        b"this is not a database, just some bytes"
    );
}

#[test]
fn an_output_folder_that_cannot_be_written_is_a_clear_error() {
    let s = site();
    let dir = tempfile::tempdir().expect("tempdir");
    // A file where the WARC folder should be: no permission tricks needed (tests run as root).
    std::fs::create_dir_all(dir.path().join("out")).expect("mkdir");
    std::fs::write(dir.path().join("out/warcs"), b"a file, not a folder").expect("write");
    let p = write_profile(dir.path(), "unwritable", &format!("{}/", s.origin()));
    let done = run_archiver(&["crawl", "--profile", &p], dir.path(), "unwritable");
    assert_eq!(done.code, Some(1));
    assert!(done.stderr.contains("warcs"), "{}", done.stderr);
    assert!(!done.stderr.contains("panicked"), "{}", done.stderr);
    assert!(s.exchanges().is_empty());
}
