//! `archiver wacz`: the package pywb unpacks (`wb-manager add --unpack-wacz`) replays every
//! archived page, and its files are what WACZ 1.1.1 says (checked here, since py-wacz's
//! validator does not run with today's frictionless).

use crate::common;

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::Command;

use chrono::{TimeZone, Utc};
use common::commands::*;
use sha2::{Digest, Sha256};

const PAGES: [(&str, &str); 3] = [
    ("http://site.test/", "Home &amp; garden"),
    ("http://site.test/about", "About us"),
    ("http://other.test/x", "Other site"),
];

fn crawl(dir: &Path) -> Crawl {
    let bodies: Vec<String> = PAGES
        .iter()
        .map(|(u, t)| {
            format!("<html><head><title>{t}</title></head><body><p>page {u}</p></body></html>")
        })
        .collect();
    let mut caps: Vec<Cap> = PAGES
        .iter()
        .zip(&bodies)
        .map(|((u, _), b)| Cap::Page(u, 200, b.as_str()))
        .collect();
    caps.push(Cap::Chunked(
        "http://site.test/chunked",
        "<title>Chunked</title><p>in two chunks</p>",
    ));
    caps.push(Cap::Page(
        "http://site.test/missing",
        404,
        "<title>Not here</title>",
    ));
    write_crawl(
        &dir.join("out"),
        "PACK",
        Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap(),
        &caps,
    )
}

fn wb_manager(dir: &Path, args: &[&str]) {
    let mut cmd = Command::new(venv().join("bin").join("wb-manager"));
    cmd.args(args).current_dir(dir);
    let out = run(cmd, 120);
    assert!(
        out.status.success(),
        "wb-manager {args:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn a_wacz_replays_every_page_in_pywb_and_follows_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let c = crawl(dir.path());
    let wacz = dir.path().join("crawl.wacz");
    let o = archiver(&[
        "wacz",
        &c.out.display().to_string(),
        "-o",
        &wacz.display().to_string(),
        "--main-page",
        "http://site.test/",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    // The layout.
    let mut zip = zip::ZipArchive::new(fs::File::open(&wacz).unwrap()).unwrap();
    let warc = only_file(&c.out.join("warcs"), ".warc.gz");
    let warc_name = warc.file_name().unwrap().to_string_lossy().into_owned();
    let mut names: Vec<String> = zip.file_names().map(str::to_string).collect();
    names.sort();
    let mut expected = vec![
        format!("archive/{warc_name}"),
        "datapackage-digest.json".into(),
        "datapackage.json".into(),
        "indexes/index.cdx".into(),
        "pages/pages.jsonl".into(),
    ];
    expected.sort();
    assert_eq!(names, expected);
    let mut read = |name: &str| -> Vec<u8> {
        let mut f = zip.by_name(name).unwrap();
        assert_eq!(f.compression(), zip::CompressionMethod::Stored, "{name}");
        let mut v = Vec::new();
        f.read_to_end(&mut v).unwrap();
        v
    };
    // The WARC byte for byte; the index as cdxj-indexer makes it.
    assert_eq!(
        read(&format!("archive/{warc_name}")),
        fs::read(&warc).unwrap()
    );
    assert_eq!(
        String::from_utf8(read("indexes/index.cdx")).unwrap(),
        cdxj_indexer(&[&warc])
    );
    // pages.jsonl: the header, then the HTML pages (not the 404) with RFC 3339 dates, titles.
    let pages = String::from_utf8(read("pages/pages.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = pages
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["format"], "json-pages-1.0", "{pages}");
    let mut titles: Vec<(String, String)> = lines[1..]
        .iter()
        .map(|l| {
            assert_eq!(l["ts"], "2026-11-30T12:00:00Z", "{l}");
            (
                l["url"].as_str().unwrap().to_string(),
                l["title"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    titles.sort();
    let mut want: Vec<(String, String)> = PAGES
        .iter()
        .map(|(u, t)| (u.to_string(), t.replace("&amp;", "&")))
        .chain([(
            "http://site.test/chunked".to_string(),
            "Chunked".to_string(),
        )])
        .collect();
    want.sort();
    assert_eq!(titles, want);
    // datapackage.json: profile, version, every file with its sha256 and size.
    let package_bytes = read("datapackage.json");
    let package: serde_json::Value = serde_json::from_slice(&package_bytes).unwrap();
    assert_eq!(package["profile"], "data-package");
    assert_eq!(package["wacz_version"], "1.1.1");
    assert_eq!(package["mainPageUrl"], "http://site.test/");
    assert_eq!(package["mainPageDate"], "2026-11-30T12:00:00Z");
    assert!(package["software"]
        .as_str()
        .unwrap()
        .starts_with("archiver "));
    assert!(chrono::DateTime::parse_from_rfc3339(package["created"].as_str().unwrap()).is_ok());
    let resources = package["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 3, "{package}");
    for r in resources {
        let path = r["path"].as_str().unwrap();
        let data = read(path);
        assert_eq!(r["bytes"].as_u64().unwrap(), data.len() as u64, "{path}");
        let hash = format!("sha256:{:x}", Sha256::digest(&data));
        assert_eq!(r["hash"], hash, "{path}");
    }
    let digest: serde_json::Value =
        serde_json::from_slice(&read("datapackage-digest.json")).unwrap();
    assert_eq!(digest["path"], "datapackage.json");
    assert_eq!(
        digest["hash"],
        format!("sha256:{:x}", Sha256::digest(&package_bytes))
    );

    // Replay: a fresh pywb collection, the WACZ unpacked into it.
    let pywb_dir = tempfile::tempdir().unwrap();
    wb_manager(pywb_dir.path(), &["init", "c"]);
    wb_manager(
        pywb_dir.path(),
        &["add", "--unpack-wacz", "c", &wacz.display().to_string()],
    );
    let pywb = Pywb::start_in(pywb_dir);
    for (url, _) in PAGES
        .iter()
        .chain([("http://site.test/chunked", "")].iter())
    {
        let (status, body) = pywb.get("20261130120000", url);
        assert_eq!(status, 200, "{url}");
        let text = String::from_utf8_lossy(&body);
        let marker = if url.ends_with("chunked") {
            "in two chunks".to_string()
        } else {
            format!("page {url}")
        };
        assert!(text.contains(&marker), "{url}: {text}");
    }
}

#[test]
fn a_folder_without_warcs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let wacz = dir.path().join("x.wacz");
    let o = archiver(&[
        "wacz",
        &empty.display().to_string(),
        "-o",
        &wacz.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&empty.display().to_string()),
        "{}",
        stderr(&o)
    );
    assert!(!wacz.exists());
}
