//! `archiver optout`: applying a list rewrites the WARCs and their CDXJ without the covered
//! records (and the records tied to them), keeps `warcio check` happy, and pywb stops
//! replaying exactly the covered URLs; the `.aclj` it writes hides the same URLs in pywb.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use common::commands::*;

/// The capture date of every record in the sample archive.
const TS: &str = "20261130120000";

/// Heritrix-style WARCs (request, response, metadata per URL, tied by WARC-Concurrent-To):
/// `a.warc.gz` with the pages below, `b.warc.gz` with two revisits: one of a kept page, one
/// (at another URL) of an opted-out page.
const ARCHIVE_PY: &str = r#"
from io import BytesIO
from warcio.warcwriter import WARCWriter
from warcio.statusandheaders import StatusAndHeaders

DATE = '2026-11-30T12:00:00Z'
PAGES = [
    'http://site.test/public/a', 'http://site.test/private/', 'http://site.test/private/b',
    'http://site.test/privateer/c', 'http://blocked.test/x', 'http://blocked.test:8080/y',
    'http://notblocked.test/', 'http://domain.test/', 'http://a.domain.test/',
    'http://otherdomain.test/', 'http://site.test/cgi-bin/run?x=1',
]
kept = {}
with open('warcs/a.warc.gz', 'wb') as fh:
    w = WARCWriter(fh, gzip=True, warc_version='1.0')
    w.write_record(w.create_warcinfo_record('a.warc.gz', {'software': 'sample'}))
    for url in PAGES:
        body = ('<p>page ' + url + '</p>').encode()
        h = StatusAndHeaders('200 OK', [('Content-Type', 'text/html'),
                                        ('Content-Length', str(len(body)))], protocol='HTTP/1.1')
        resp = w.create_warc_record(url, 'response', payload=BytesIO(body), http_headers=h,
                                    warc_headers_dict={'WARC-Date': DATE})
        rid = resp.rec_headers.get_header('WARC-Record-ID')
        req = w.create_warc_record(url, 'request', payload=BytesIO(b''),
            http_headers=StatusAndHeaders('GET / HTTP/1.1', [('Host', 'x')], is_http_request=True),
            warc_headers_dict={'WARC-Date': DATE, 'WARC-Concurrent-To': rid})
        meta = w.create_warc_record(url, 'metadata', payload=BytesIO(b'via: http://site.test/\r\n'),
            warc_content_type='application/warc-fields',
            warc_headers_dict={'WARC-Date': DATE, 'WARC-Concurrent-To': rid})
        for r in (req, resp, meta):
            w.write_record(r)
        kept[url] = resp
with open('warcs/b.warc.gz', 'wb') as fh:
    w = WARCWriter(fh, gzip=True, warc_version='1.0')
    w.write_record(w.create_warcinfo_record('b.warc.gz', {'software': 'sample'}))
    for url, orig in [('http://site.test/public/a-again', 'http://site.test/public/a'),
                      ('http://mirror.test/copy', 'http://site.test/private/b')]:
        o = kept[orig]
        h = StatusAndHeaders('200 OK', [('Content-Type', 'text/html')], protocol='HTTP/1.1')
        rv = w.create_revisit_record(url, o.rec_headers.get_header('WARC-Payload-Digest'),
            orig, o.rec_headers.get_header('WARC-Date'), http_headers=h,
            warc_headers_dict={'WARC-Date': DATE,
                               'WARC-Refers-To': o.rec_headers.get_header('WARC-Record-ID')})
        w.write_record(rv)
"#;

/// The list used throughout: one entry of each kind.
const LIST: &str = "# opt-out requests\n\
                    http://site.test/private/   2026-11-30   # by e-mail\n\
                    blocked.test\n\
                    *.domain.test\n\
                    test,site)/cgi-bin\n";

const REMOVED: [&str; 7] = [
    "http://site.test/private/",
    "http://site.test/private/b",
    "http://blocked.test/x",
    "http://blocked.test:8080/y",
    "http://domain.test/",
    "http://a.domain.test/",
    "http://site.test/cgi-bin/run?x=1",
];
const KEPT: [&str; 5] = [
    "http://site.test/public/a",
    "http://site.test/privateer/c",
    "http://notblocked.test/",
    "http://otherdomain.test/",
    "http://site.test/public/a-again",
];

/// OUT with warcs/ (the sample archive) and indexes/ (one CDXJ per WARC).
fn archive(dir: &Path) -> PathBuf {
    let out = dir.join("out");
    fs::create_dir_all(out.join("warcs")).unwrap();
    fs::create_dir_all(out.join("indexes")).unwrap();
    python(ARCHIVE_PY, &out);
    for name in ["a", "b"] {
        let warc = out.join("warcs").join(format!("{name}.warc.gz"));
        let cdxj = out.join("indexes").join(format!("{name}.cdxj"));
        let o = archiver(&[
            "index",
            &warc.display().to_string(),
            "-o",
            &cdxj.display().to_string(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    fs::write(dir.join("optout.txt"), LIST).unwrap();
    out
}

/// What pywb answers for each URL of the sample (id_ replay at the capture date).
fn replay_status(out: &Path, acl: Option<&Path>) -> BTreeMap<&'static str, u16> {
    let pywb = Pywb::start(&out.join("indexes"), &[&out.join("warcs")], acl);
    statuses(&pywb)
}

/// The same, with the WARCs in `warc_dirs`.
fn replay_status_in(out: &Path, warc_dirs: &[&Path]) -> BTreeMap<&'static str, u16> {
    statuses(&Pywb::start(&out.join("indexes"), warc_dirs, None))
}

fn statuses(pywb: &Pywb) -> BTreeMap<&'static str, u16> {
    REMOVED
        .iter()
        .chain(KEPT.iter())
        .map(|url| {
            let (status, body) = pywb.get(TS, url);
            if status == 200 && !url.ends_with("-again") {
                let text = String::from_utf8_lossy(&body);
                assert!(
                    text.contains(&format!("<p>page {url}</p>")),
                    "{url}: {text}"
                );
            }
            (*url, status)
        })
        .collect()
}

fn assert_only_kept_replay(status: &BTreeMap<&str, u16>) {
    for url in REMOVED {
        assert_ne!(status[url], 200, "{url} still replays: {status:?}");
    }
    for url in KEPT {
        assert_eq!(status[url], 200, "{url} no longer replays: {status:?}");
    }
}

/// Record IDs and types of a WARC, in order, read with warcio.
fn records(warc: &Path) -> Vec<String> {
    let out = tool(
        "warcio",
        &[
            "index",
            "-f",
            "warc-type,warc-target-uri",
            &warc.display().to_string(),
        ],
    );
    stdout(&out).lines().map(str::to_string).collect()
}

#[test]
fn apply_removes_covered_records_and_pywb_stops_replaying_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = archive(dir.path());
    // Before: everything replays (so the checks below can fail).
    let before = replay_status(&out, None);
    assert!(before.values().all(|s| *s == 200), "{before:?}");
    let a = out.join("warcs/a.warc.gz");
    let b = out.join("warcs/b.warc.gz");
    let records_before = records(&a).len() + records(&b).len();

    let o = archiver(&[
        "optout",
        "apply",
        &dir.path().join("optout.txt").display().to_string(),
        "--warcs",
        &out.join("warcs").display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = stdout(&o);
    assert!(
        report.contains(
            "response http://site.test/private/b (matches http://site.test/private/ \
             (",
        ) && report.contains(":2, received 2026-11-30))"),
        "{report}"
    );
    assert!(
        report.contains("metadata http://blocked.test/x ("),
        "{report}"
    );
    assert!(
        report.contains("request http://a.domain.test/ ("),
        "{report}"
    );
    assert!(
        report.contains(
            "revisit http://mirror.test/copy (revisit of http://site.test/private/b, which \
             matches http://site.test/private/"
        ),
        "{report}"
    );
    // 7 URLs × (request, response, metadata) + the revisit of an opted-out page.
    assert!(
        report.contains("22 records removed from 2 of 2 WARC files"),
        "{report}"
    );

    // The rewritten files: valid, nothing covered left, everything else kept.
    for warc in [&a, &b] {
        let check = warcio_check(warc);
        assert!(!check.contains("fail"), "{check}");
    }
    let after: Vec<String> = records(&a).into_iter().chain(records(&b)).collect();
    assert_eq!(after.len(), records_before - 22);
    for url in REMOVED.iter().chain(["http://mirror.test/copy"].iter()) {
        assert!(
            !after.iter().any(|r| r.contains(&format!("\"{url}\""))),
            "{url} left in {after:?}"
        );
    }
    // The indexes were rebuilt for the new offsets, as cdxj-indexer would.
    for (warc, cdxj) in [(&a, "a.cdxj"), (&b, "b.cdxj")] {
        assert_eq!(
            fs::read_to_string(out.join("indexes").join(cdxj)).unwrap(),
            cdxj_indexer(&[warc])
        );
    }
    let names: HashSet<String> = fs::read_dir(out.join("warcs"))
        .unwrap()
        .chain(fs::read_dir(out.join("indexes")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected: HashSet<String> = ["a.warc.gz", "b.warc.gz", "a.cdxj", "b.cdxj"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names, expected, "leftover files");

    assert_only_kept_replay(&replay_status(&out, None));

    // Applying again finds nothing more to do.
    let again = archiver(&[
        "optout",
        "apply",
        &dir.path().join("optout.txt").display().to_string(),
        "--warcs",
        &out.join("warcs").display().to_string(),
    ]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("0 records removed from 0 of 2 WARC files"));
}

#[test]
fn aclj_hides_the_same_urls_in_pywb() {
    let dir = tempfile::tempdir().unwrap();
    let out = archive(dir.path());
    let o = archiver(&[
        "optout",
        "aclj",
        &dir.path().join("optout.txt").display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let aclj = stdout(&o);
    let lines: Vec<&str> = aclj.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort_by(|x, y| y.cmp(x));
    assert_eq!(lines, sorted, "not in descending order");
    assert!(
        lines
            .iter()
            .all(|l| l.ends_with(" - {\"access\": \"exclude\"}")),
        "{aclj}"
    );
    let path = dir.path().join("optout.aclj");
    fs::write(&path, &aclj).unwrap();
    assert_only_kept_replay(&replay_status(&out, Some(&path)));
}

#[test]
fn apply_takes_the_crawl_folder_finds_warcs_in_sub_folders_and_refuses_empty_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = archive(dir.path());
    // A collection manager moved one WARC into a sub-folder of warcs/.
    fs::create_dir(out.join("warcs/2026")).unwrap();
    fs::rename(
        out.join("warcs/b.warc.gz"),
        out.join("warcs/2026/b.warc.gz"),
    )
    .unwrap();
    let a = out.join("warcs/a.warc.gz");
    let b = out.join("warcs/2026/b.warc.gz");
    let list = dir.path().join("optout.txt").display().to_string();
    let o = archiver(&[
        "optout",
        "apply",
        &list,
        "--warcs",
        &out.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("22 records removed from 2 of 2 WARC files"),
        "{}",
        stdout(&o)
    );
    let after: Vec<String> = records(&a).into_iter().chain(records(&b)).collect();
    for url in REMOVED {
        assert!(
            !after.iter().any(|r| r.contains(&format!("\"{url}\""))),
            "{url} left"
        );
    }
    // Both indexes (found by themselves in OUT/indexes) follow the new offsets.
    for (warc, cdxj) in [(&a, "a.cdxj"), (&b, "b.cdxj")] {
        assert_eq!(
            fs::read_to_string(out.join("indexes").join(cdxj)).unwrap(),
            cdxj_indexer(&[warc])
        );
    }
    assert_only_kept_replay(&replay_status_in(
        &out,
        &[&out.join("warcs"), &out.join("warcs/2026")],
    ));

    // A folder without any WARC is an error that names it, and nothing happens.
    let empty = dir.path().join("empty");
    fs::create_dir_all(empty.join("sub")).unwrap();
    let o = archiver(&[
        "optout",
        "apply",
        &list,
        "--warcs",
        &empty.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&empty.display().to_string()),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("no WARC or ARC file"), "{}", stderr(&o));
    // The same for index and diff.
    let o = archiver(&["index", &empty.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&empty.display().to_string()),
        "{}",
        stderr(&o)
    );
    let o = archiver(&[
        "diff",
        &empty.display().to_string(),
        &out.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&empty.display().to_string()),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_list_covering_everything_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let out = archive(dir.path());
    let list = dir.path().join("all.txt");
    fs::write(&list, "*.test\n").unwrap();
    let a = out.join("warcs/a.warc.gz");
    let original = fs::read(&a).unwrap();
    let args = |force: bool| {
        let mut v = vec![
            "optout".to_string(),
            "apply".into(),
            list.display().to_string(),
            "--warcs".into(),
            out.join("warcs").display().to_string(),
        ];
        if force {
            v.push("--force".into());
        }
        v
    };
    let refuse: Vec<String> = args(false);
    let o = archiver(&refuse.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("matches all 13 captures"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--force"));
    assert_eq!(fs::read(&a).unwrap(), original, "changed without --force");

    let forced: Vec<String> = args(true);
    let o = archiver(&forced.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    // Only the warcinfo records are left, and the files are still valid WARCs.
    for name in ["a.warc.gz", "b.warc.gz"] {
        let warc = out.join("warcs").join(name);
        warcio_check(&warc);
        let left = records(&warc);
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(left[0].contains("warcinfo"));
    }
    assert_eq!(fs::read_to_string(out.join("indexes/a.cdxj")).unwrap(), "");
}

#[test]
fn bad_lists_and_damaged_warcs_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = archive(dir.path());
    let bad = dir.path().join("bad.txt");
    fs::write(
        &bad,
        "example.com\n# fine\nhttp://x.test/ yesterday\nnot a host!\n",
    )
    .unwrap();
    for sub in ["apply", "aclj"] {
        let mut args = vec!["optout", sub];
        let bad_s = bad.display().to_string();
        let warcs = out.join("warcs").display().to_string();
        args.push(&bad_s);
        if sub == "apply" {
            args.extend(["--warcs", &warcs]);
        }
        let o = archiver(&args);
        assert_eq!(o.status.code(), Some(2), "{sub}");
        let err = stderr(&o);
        assert!(err.contains("bad.txt:3: "), "{err}");
        assert!(err.contains("bad.txt:4: "), "{err}");
        assert!(!err.contains("bad.txt:1:"), "{err}");
    }
    // A truncated WARC that needs rewriting is left alone, and so is everything else.
    let a = out.join("warcs/a.warc.gz");
    let data = fs::read(&a).unwrap();
    fs::write(&a, &data[..data.len() - 100]).unwrap();
    let b_before = fs::read(out.join("warcs/b.warc.gz")).unwrap();
    let o = archiver(&[
        "optout",
        "apply",
        &dir.path().join("optout.txt").display().to_string(),
        "--warcs",
        &out.join("warcs").display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("a.warc.gz is damaged"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("offset "), "{}", stderr(&o));
    assert_eq!(fs::read(&a).unwrap(), &data[..data.len() - 100]);
    assert_eq!(fs::read(out.join("warcs/b.warc.gz")).unwrap(), b_before);
}
