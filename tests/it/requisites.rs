//! End-to-end (issue 8): what a real site needs to replay.
//!
//! - stylesheet requisites (fonts, backgrounds, `@import` chains, `<style>`, `style=`) and the
//!   other requisite elements are archived and replay in pywb without a 404;
//! - requests for discovered URLs carry a `Referer`; seeds and robots.txt do not;
//! - crawl.log names the WARC file and offset of every archived response;
//! - a crawl interrupted after some pages leaves every archived page with its requisites.
//!
//! Loopback only: the raw-TCP test server of `tests/common/site.rs` and the real pywb.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::output::{crawl_log, files_ending, lines, read_warc, CdxjLine, WarcRecord};
use common::profile::Loopback;
use common::site::{not_found, ok, Exchange, Request, TestSite};
use common::tools::{crawl_ok, http_get, send_signal, start_crawl, wait_until, Replay};

const UA: &str = "archiver/0.1 (+https://example.org/archiver-requisites-test)";

/// A loopback profile, `p.toml`: no delay of our own unless `politeness` says so.
fn write_profile(dir: &Path, seed: &str, politeness: &str, extra: &str) {
    let output = format!("warc_max_bytes = 300000\n\n{extra}");
    Loopback {
        user_agent: UA,
        politeness,
        output: &output,
        ..Loopback::new("requisites", vec![seed.to_string()])
    }
    .write(dir, "p.toml");
}

fn all_records(out: &Path) -> Vec<WarcRecord> {
    files_ending(&out.join("warcs"), ".warc.gz")
        .iter()
        .flat_map(|p| read_warc(p))
        .collect()
}

fn cdxj(out: &Path) -> Vec<CdxjLine> {
    files_ending(&out.join("indexes"), ".cdxj")
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).expect("cdxj");
            lines(&text)
                .into_iter()
                .map(|l| CdxjLine::parse(&l).expect("cdxj line"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The Referer header of a request as the server received it.
fn referer(e: &Exchange) -> Option<String> {
    e.request.header("referer").map(str::to_string)
}

// ---- a styled site --------------------------------------------------------------------------

/// Each page with the same-site requisites a browser loads for it (paths).
const STYLED_PAGES: &[(&str, &[&str])] = &[
    (
        "/",
        &[
            "/css/site.css",
            "/css/print.css",
            "/fonts/a.woff2",
            "/fonts/a.woff",
            "/img/bg1.png",
            "/img/bg2.png",
            "/img/print.png",
            "/favicon.ico",
            "/fonts/pre.woff2",
            "/inline-import.css",
            "/img/q.png",
            "/img/inline-bg.png",
            "/img/attr.png",
            "/img/poster.jpg",
            "/subs.vtt",
            "/img/svg.png",
            "/img/xlink.png",
            "/img/set-1x.png",
            "/img/set-2x.png",
        ],
    ),
    (
        "/page2.html",
        &[
            "/css/site.css",
            "/css/print.css",
            "/fonts/a.woff2",
            "/fonts/a.woff",
            "/img/bg1.png",
            "/img/bg2.png",
            "/img/print.png",
            "/img/page2.png",
        ],
    ),
];

const INDEX: &str = r#"<!doctype html><html><head><title>Styled</title>
<link rel="stylesheet" href="/css/site.css">
<link rel="icon" href="/favicon.ico">
<link rel="preload" href="/fonts/pre.woff2" as="font" crossorigin>
<style>
@import url("inline-import.css");
/* url(/never-in-comment.png) */
body { background: url('img/inline-bg.png') no-repeat; }
</style>
</head><body>
<div style="background-image: url(&quot;/img/attr.png&quot;)">hello</div>
<div style="background-image: image-set('/img/set-1x.png' 1x, '/img/set-2x.png' 2x)">set</div>
<div style="color: red">plain</div>
<video poster="/img/poster.jpg"><track src="/subs.vtt" kind="captions"></video>
<svg><image href="/img/svg.png"/><image xlink:href="/img/xlink.png"/></svg>
<p><a href="/page2.html">next</a></p>
</body></html>"#;

const SITE_CSS: &str = r#"@charset "utf-8";
@import "print.css" print;
@font-face { font-family: A; src: url(../fonts/a.woff2) format("woff2"), url('../fonts/a.woff') format("woff"); }
body { background-image: image-set("../img/bg1.png" 1x, "../img/bg2.png" 2x); }
/* url(/never-in-comment.png) */
.logo { background: url(data:image/png;base64,iVBORw0KGgo=); content: "url(/never-in-string.png)"; }
"#;

fn styled_site() -> common::site::Handler {
    Arc::new(|req: &Request| {
        let path = req.target.split('?').next().unwrap_or("");
        match path {
            "/" => ok("text/html; charset=utf-8", INDEX.as_bytes()),
            "/page2.html" => ok(
                "text/html",
                b"<html><head><link rel=stylesheet href=css/site.css></head>\
                  <body><img src=/img/page2.png></body></html>",
            ),
            "/css/site.css" => ok("text/css; charset=utf-8", SITE_CSS.as_bytes()),
            "/css/print.css" => ok("text/css", b".p { background: url(/img/print.png) }"),
            "/inline-import.css" => ok("text/css", b".q{background:url(img/q.png)}"),
            p if p.starts_with("/fonts/") => ok("font/woff2", format!("font {p}").as_bytes()),
            p if p.starts_with("/img/") || p == "/favicon.ico" => {
                ok("image/png", format!("image {p}").as_bytes())
            }
            "/subs.vtt" => ok("text/vtt", b"WEBVTT\n"),
            _ => not_found(),
        }
    })
}

#[test]
fn css_requisites_are_archived_and_replay_without_404() {
    let site = TestSite::start("127.0.0.1".parse().expect("ip"), styled_site());
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = format!("{}/", site.origin());
    write_profile(dir.path(), &seed, "min_delay = 0.0\ndelay_factor = 0.0", "");
    crawl_ok(dir.path(), "p.toml", "crawl");
    let out = dir.path().join("out");
    let log = site.exchanges();

    // Every requisite was fetched, nothing from comments, strings or data: URIs.
    let requested: HashSet<&str> = log.iter().map(Exchange::path).collect();
    for (_, requisites) in STYLED_PAGES {
        for r in *requisites {
            assert!(
                requested.contains(r),
                "{r} was never requested: {requested:?}"
            );
        }
    }
    for never in ["/never-in-comment.png", "/never-in-string.png"] {
        assert!(!requested.contains(never), "{never} was requested");
    }

    // Referer: the page (or stylesheet) each URL was found on; none for the seed and robots.txt.
    let origin = site.origin();
    for e in &log {
        let want = match e.path() {
            "/" | "/robots.txt" => None,
            "/page2.html" | "/css/site.css" | "/favicon.ico" | "/img/attr.png" | "/subs.vtt"
            | "/inline-import.css" | "/img/inline-bg.png" => Some(format!("{origin}/")),
            "/css/print.css" | "/fonts/a.woff2" | "/fonts/a.woff" | "/img/bg1.png" => {
                Some(format!("{origin}/css/site.css"))
            }
            "/img/q.png" => Some(format!("{origin}/inline-import.css")),
            "/img/page2.png" => Some(format!("{origin}/page2.html")),
            _ => continue,
        };
        assert_eq!(referer(e), want, "Referer of {}", e.request.target);
    }

    // crawl.log: every archived URL names its response record's WARC file and offset, and
    // stylesheet references are embeds of the stylesheet.
    let records = all_records(&out);
    let entries = crawl_log(&out);
    let mut archived = 0;
    for l in entries.iter().filter(|l| l.status == 200) {
        let file = l.extra["warcFilename"]
            .as_str()
            .unwrap_or_else(|| panic!("no warcFilename: {}", l.raw));
        let offset = l.extra["warcFileOffset"]
            .as_u64()
            .unwrap_or_else(|| panic!("no offset: {}", l.raw));
        let rec = records
            .iter()
            .find(|r| r.file == file && r.offset == offset)
            .unwrap_or_else(|| panic!("no record at {file}:{offset} for {}", l.raw));
        assert_eq!(rec.kind(), "response", "{}", l.raw);
        assert_eq!(rec.target(), l.uri, "{}", l.raw);
        archived += 1;
    }
    assert_eq!(
        archived, 22,
        "archived URLs: the pages, their 19 requisites"
    );
    let font = entries
        .iter()
        .find(|l| l.uri.ends_with("/fonts/a.woff2"))
        .expect("font in crawl.log");
    assert_eq!(font.hops, "EE", "{}", font.raw);
    assert_eq!(font.via, format!("{origin}/css/site.css"));

    // The request records hold the Referer exactly as sent.
    for rec in records.iter().filter(|r| r.kind() == "request") {
        let sent = log
            .iter()
            .find(|e| format!("{origin}{}", e.request.target) == rec.target())
            .unwrap_or_else(|| panic!("no exchange for {}", rec.target()));
        assert_eq!(
            rec.block,
            sent.raw_request,
            "request record of {}",
            rec.target()
        );
    }

    // Replay: each page's same-site requisites come back from pywb (no 404), byte for byte.
    let index = cdxj(&out);
    let replay = Replay::start(&out, dir.path());
    let mut failures = Vec::new();
    for (page, requisites) in STYLED_PAGES {
        let page_url = format!("{origin}{page}");
        let ts = index
            .iter()
            .find(|c| c.str_field("url") == page_url)
            .unwrap_or_else(|| panic!("{page_url} not in the CDXJ"))
            .timestamp
            .clone();
        for r in *requisites {
            let url = format!("{origin}{r}");
            let expected = log
                .iter()
                .find(|e| e.path() == *r)
                .map(|e| e.reply.body.clone())
                .expect("served");
            match http_get(replay.addr, &format!("/crawl/{ts}id_/{url}")) {
                Ok(resp) if resp.status == 200 && resp.body == expected => {}
                Ok(resp) => failures.push(format!("{url} (for {page}): status {}", resp.status)),
                Err(e) => failures.push(format!("{url}: {e}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "not replayed:\n{}",
        failures.join("\n")
    );
}

// ---- an interrupted crawl -------------------------------------------------------------------

const CHAIN_PAGES: usize = 40;

/// The requisites of chain page `n` (each page its own stylesheet, font and images).
fn chain_requisites(n: usize) -> Vec<String> {
    vec![
        format!("/css/p{n}.css"),
        format!("/fonts/p{n}.woff2"),
        format!("/img/p{n}-a.png"),
        format!("/img/p{n}-b.png"),
    ]
}

fn chain_site() -> common::site::Handler {
    Arc::new(|req: &Request| {
        let path = req.target.as_str();
        if let Some(n) = path
            .strip_prefix("/p")
            .and_then(|p| p.strip_suffix(".html"))
            .and_then(|n| n.parse::<usize>().ok())
        {
            let next = if n + 1 < CHAIN_PAGES {
                format!("<a href=/p{}.html>next</a>", n + 1)
            } else {
                String::new()
            };
            let body = format!(
                "<html><head><link rel=stylesheet href=/css/p{n}.css></head><body>\
                 <h1>Page {n}</h1><img src=/img/p{n}-a.png><div style=\"background:url(/img/p{n}-b.png)\"></div>\
                 {next}</body></html>"
            );
            return ok("text/html", body.as_bytes());
        }
        if let Some(n) = path
            .strip_prefix("/css/p")
            .and_then(|p| p.strip_suffix(".css"))
        {
            let css = format!("@font-face{{font-family:P;src:url(../fonts/p{n}.woff2)}}");
            return ok("text/css", css.as_bytes());
        }
        if path.starts_with("/fonts/") || path.starts_with("/img/") {
            return ok("application/octet-stream", path.as_bytes());
        }
        not_found()
    })
}

#[test]
fn an_interrupted_crawl_leaves_every_archived_page_complete() {
    let site = TestSite::start("127.0.0.1".parse().expect("ip"), chain_site());
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = format!("{}/p0.html", site.origin());
    // 40 pages × 5 URLs at 0.05 s apart: about 10 s if left alone.
    write_profile(
        dir.path(),
        &seed,
        "min_delay = 0.05\ndelay_factor = 0.0",
        "",
    );
    let mut child = start_crawl(dir.path(), "p.toml", Stdio::null());
    // Stop it (as Ctrl-C does) once the server has answered 8 pages.
    let pages = || {
        site.exchanges()
            .iter()
            .filter(|e| e.path().ends_with(".html"))
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(60), || pages() >= 8),
        "the crawl did not get going"
    );
    send_signal(&child, "INT");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "an interrupted crawl exits 130");

    let origin = site.origin();
    let archived: HashSet<String> = cdxj(&dir.path().join("out"))
        .iter()
        .map(|c| c.str_field("url"))
        .collect();
    let pages: Vec<usize> = (0..CHAIN_PAGES)
        .filter(|n| archived.contains(&format!("{origin}/p{n}.html")))
        .collect();
    assert!(
        pages.len() >= 8 && pages.len() < CHAIN_PAGES,
        "archived pages: {pages:?}"
    );
    let incomplete: Vec<(usize, Vec<String>)> = pages
        .iter()
        .map(|&n| {
            let missing: Vec<String> = chain_requisites(n)
                .into_iter()
                .filter(|r| !archived.contains(&format!("{origin}{r}")))
                .collect();
            (n, missing)
        })
        .filter(|(_, missing)| !missing.is_empty())
        .collect();
    // One request at a time to the site: only the page in flight at the stop may lack them.
    assert!(
        incomplete.len() <= 1 && incomplete.iter().all(|(n, _)| Some(n) == pages.last()),
        "pages archived without their requisites: {incomplete:?} (archived pages {pages:?})"
    );
    // And the order on the wire shows why: each page's requisites before the next page.
    let order: Vec<String> = site
        .exchanges()
        .iter()
        .map(|e| e.path().to_string())
        .filter(|p| p != "/robots.txt")
        .collect();
    let mut expect_page = 0;
    let mut seen = BTreeMap::new();
    for p in &order {
        if p.ends_with(".html") {
            if expect_page > 0 {
                let before = expect_page - 1;
                for r in chain_requisites(before) {
                    assert!(
                        seen.contains_key(&r),
                        "{p} was requested before {r} of page {before}: {order:?}"
                    );
                }
            }
            expect_page += 1;
        }
        seen.insert(p.clone(), ());
    }
}
