//! Starting without copying anything from the source tree: `profile init`, a quick crawl of a
//! URL given on the command line, and `about`, the page for webmasters, written from the
//! profile.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::site::{html, response, Request, TestSite};
use common::tools::{crawl_ok, run_archiver};

#[test]
fn profile_init_writes_a_profile_that_checks_and_never_overwrites() {
    let dir = tempfile::tempdir().expect("tempdir");
    let made = run_archiver(&["profile", "init", "site.toml"], dir.path(), "init");
    assert_eq!(made.code, Some(0), "{}", made.stderr);
    assert!(
        made.stderr.contains("profile check"),
        "says what next: {}",
        made.stderr
    );
    let path = dir.path().join("site.toml");
    let text = std::fs::read_to_string(&path).expect("site.toml written");
    assert!(
        text.contains("[politeness]") && text.contains("# "),
        "commented reference"
    );
    let checked = run_archiver(&["profile", "check", "site.toml"], dir.path(), "check");
    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    assert!(
        checked.stdout.contains("min_delay = 5"),
        "{}",
        checked.stdout
    );

    std::fs::write(&path, "# mine\n").expect("write");
    let again = run_archiver(&["profile", "init", "site.toml"], dir.path(), "again");
    assert_eq!(again.code, Some(2), "{}", again.stderr);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "# mine\n");

    let missing = run_archiver(&["profile", "check", "nope.toml"], dir.path(), "missing");
    assert_eq!(missing.code, Some(2));
    assert!(
        missing.stderr.contains("nope.toml: there is no such file"),
        "{}",
        missing.stderr
    );
}

#[test]
fn a_quick_crawl_of_a_url_writes_its_profile_and_archives_the_url() {
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(|req: &Request| match req.target.as_str() {
            "/robots.txt" => response(
                "200 OK",
                &[("Content-Type", "text/plain")],
                b"User-agent: *\nAllow: /\n",
            ),
            _ => html(b"<title>home</title><p>the only page</p>"),
        }),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = format!("{}/", site.origin());
    let contact = "https://example.org/our-crawler";
    let args = ["crawl", &seed, "--contact", contact, "-o", "quick"];
    let run = run_archiver(&args, dir.path(), "quick");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let profile = dir.path().join("quick/profile.toml");
    let text = std::fs::read_to_string(&profile).expect("quick/profile.toml");
    assert!(text.contains("user_agent = \"archiver/"), "{text}");
    assert!(text.contains(contact), "{text}");
    // The URL is archived: in the CDXJ and in crawl.log with its answer.
    let cdxj: String = std::fs::read_dir(dir.path().join("quick/indexes"))
        .expect("indexes")
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(cdxj.contains(&format!("\"url\": \"{seed}\"")), "{cdxj}");
    // The defaults hold, 5 s floor included: robots.txt, then the page 5 s later, then the
    // site's /sitemap.xml ([discovery] sitemaps is on by default).
    let ex = site.exchanges();
    let paths: Vec<&str> = ex.iter().map(|e| e.path()).collect();
    assert_eq!(
        paths,
        ["/robots.txt", "/", "/sitemap.xml"],
        "robots.txt, the page, the sitemap"
    );
    // The server stamps `finished` after its last write returns, which on a loaded machine can
    // be a few milliseconds after the crawler read the last byte and started its pause.
    let gap = ex[1].arrived.saturating_duration_since(ex[0].finished);
    let stamp_slack = Duration::from_millis(25);
    assert!(gap + stamp_slack >= Duration::from_secs(5), "gap {gap:?}");
    let ua = ex[1].request.header("user-agent").unwrap_or("");
    assert!(ua.starts_with("archiver/") && ua.contains(contact), "{ua}");

    // The profile is usable as it is: checked, and it resumes (here: is already complete).
    let p = profile.to_string_lossy().to_string();
    let checked = run_archiver(&["profile", "check", &p], dir.path(), "check");
    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    let again = crawl_ok(dir.path(), &p, "again");
    assert!(
        again.stderr.contains("already complete"),
        "{}",
        again.stderr
    );
    assert_eq!(site.exchanges().len(), 3, "nothing fetched again");

    // `about` names the User-Agent, the product token and the profile's delay.
    let about = run_archiver(&["about", "--profile", &p], dir.path(), "about");
    assert_eq!(about.code, Some(0), "{}", about.stderr);
    for want in [
        ua,
        "User-agent: archiver",
        "at least 5 s",
        "noindex",
        contact,
    ] {
        assert!(
            about.stdout.contains(want),
            "{want:?} missing:\n{}",
            about.stdout
        );
    }
    let html = run_archiver(
        &["about", "--profile", &p, "-o", "about.html"],
        dir.path(),
        "about-html",
    );
    assert_eq!(html.code, Some(0), "{}", html.stderr);
    let page = std::fs::read_to_string(dir.path().join("about.html")).expect("about.html");
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.contains("<h1>"),
        "{page}"
    );
    assert!(page.contains("User-agent: archiver\nDisallow: /"), "{page}");
}

#[test]
fn a_quick_crawl_needs_a_contact_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let none = run_archiver(&["crawl", "http://127.0.0.1:9/"], dir.path(), "none");
    assert_eq!(none.code, Some(2));
    assert!(none.stderr.contains("--contact"), "{}", none.stderr);
    let mail = run_archiver(
        &[
            "crawl",
            "http://127.0.0.1:9/",
            "--contact",
            "me@example.org",
        ],
        dir.path(),
        "mail",
    );
    assert_eq!(mail.code, Some(2));
    assert!(mail.stderr.contains("http"), "{}", mail.stderr);
    assert!(!dir.path().join("crawls").exists(), "nothing written");
}

#[test]
fn help_has_examples_outputs_resuming_and_exit_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crawl = run_archiver(&["crawl", "--help"], dir.path(), "crawl-help");
    for want in [
        "Examples:",
        "--contact",
        "warcs/",
        "crawl.log",
        "Resuming",
        "130",
        "Exit codes",
    ] {
        assert!(
            crawl.stdout.contains(want),
            "{want:?} missing:\n{}",
            crawl.stdout
        );
    }
    let every_command: [&[&str]; 12] = [
        &["diff"],
        &["index"],
        &["about"],
        &["profile"],
        &["profile", "init"],
        &["profile", "check"],
        &["verify"],
        &["wacz"],
        &["qa"],
        &["optout"],
        &["optout", "apply"],
        &["optout", "aclj"],
    ];
    for cmd in every_command {
        let mut args = cmd.to_vec();
        args.push("--help");
        let name = cmd.join("-");
        let help = run_archiver(&args, dir.path(), &name);
        assert!(
            help.stdout.contains("Examples:\n  archiver "),
            "{name} --help has examples:\n{}",
            help.stdout
        );
    }
}
