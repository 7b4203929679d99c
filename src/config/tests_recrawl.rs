//! The `[discovery]` and `[recrawl]` tables: defaults, and errors that name file, line, key.

use super::*;

const GOOD: &str = r#"
[crawl]
name = "t"
seeds = ["http://127.0.0.1:8080/"]
[identity]
user_agent = "archiver/0.1 (+https://example.org/contact)"
"#;

#[test]
fn sitemaps_on_and_no_recrawl_by_default() {
    let p = Profile::parse(Path::new("/p/site.toml"), GOOD).unwrap();
    assert!(p.discovery.sitemaps);
    assert!(p.recrawl.previous.is_empty());
    assert!(p.recrawl.revisit_unlinked);
    let off = format!("{GOOD}[discovery]\nsitemaps = false\n[recrawl]\nrevisit_unlinked = false\n");
    let p = Profile::parse(Path::new("/p/site.toml"), &off).unwrap();
    assert!(!p.discovery.sitemaps);
    assert!(!p.recrawl.revisit_unlinked);
}

#[test]
fn an_earlier_crawl_must_be_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("site.toml");
    let missing = format!("{GOOD}[recrawl]\nprevious = [\"../2026-11-crawl\"]\n");
    let e = Profile::parse(&path, &missing).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("recrawl.previous", 8), "{e}");
    assert!(e.message.contains("does not exist"), "{e}");
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    let empty = format!("{GOOD}[recrawl]\nprevious = [\"empty\"]\n");
    let e = Profile::parse(&path, &empty).unwrap_err();
    assert_eq!(e.key, "recrawl.previous", "{e}");
    assert!(e.message.contains("holds no CDXJ index"), "{e}");
    std::fs::create_dir_all(dir.path().join("old/indexes")).unwrap();
    std::fs::write(dir.path().join("old/indexes/A.cdxj"), "").unwrap();
    let good = format!("{GOOD}[recrawl]\nprevious = [\"old\"]\n");
    let p = Profile::parse(&path, &good).unwrap();
    assert_eq!(p.recrawl.previous, [dir.path().join("old")]);
}

#[test]
fn wrong_types_and_unknown_keys_are_named() {
    let path = Path::new("/p/site.toml");
    let src = format!("{GOOD}[discovery]\nsitemaps = \"yes\"\n");
    let e = Profile::parse(path, &src).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("discovery.sitemaps", 8), "{e}");
    let src = format!("{GOOD}[recrawl]\nrevisit_unlinkd = true\n");
    let e = Profile::parse(path, &src).unwrap_err();
    assert_eq!(e.key, "recrawl.revisit_unlinkd", "{e}");
    assert!(e.message.contains("unknown key"), "{e}");
}
