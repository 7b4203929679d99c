//! `archiver verify`: clean crawls pass (chunked responses included, where `warcio check`
//! complains), a tampered record is named, broken links, missing originals, duplicate ids, one
//! gzip stream and unreadable files are reported with the exit codes the README gives.

use crate::common;

use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use chrono::{TimeZone, Utc};
use common::commands::*;

/// Old crawl: a page and a chunked page. New crawl: a revisit of the old page.
fn crawls(dir: &Path) -> (Crawl, Crawl) {
    let old = write_crawl(
        &dir.join("old"),
        "OLD",
        Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap(),
        &[
            Cap::Page("http://site.test/", 200, "<p>home, unchanged</p>"),
            Cap::Chunked("http://site.test/chunked", "<p>sent in two chunks</p>"),
        ],
    );
    let new = write_crawl(
        &dir.join("new"),
        "NEW",
        Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap(),
        &[Cap::Revisit(
            "http://site.test/",
            "http://site.test/",
            &old.written[0],
            "<p>home, unchanged</p>",
        )],
    );
    (old, new)
}

fn verify(args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["verify"];
    all.extend_from_slice(args);
    let out = archiver(&all);
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    (out.status.code(), stdout(&out))
}

#[test]
fn clean_crawls_pass_and_chunked_records_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = crawls(dir.path());
    let both = [old.out.display().to_string(), new.out.display().to_string()];
    let (code, text) = verify(&[&both[0], &both[1]]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("0 problems"), "{text}");
    // The chunked response is right by WARC 1.1, and named as one warcio check disputes.
    let warc = only_file(&old.out.join("warcs"), ".warc.gz");
    assert!(
        text.contains("warcio check digests the chunked framing and reports it failed"),
        "{text}"
    );
    assert!(text.contains("1 records where warcio check"), "{text}");
    let mut cmd = std::process::Command::new(venv().join("bin").join("warcio"));
    cmd.args(["check", "-v", &warc.display().to_string()]);
    let theirs = run(cmd, 60);
    assert!(
        stdout(&theirs).contains("payload digest failed"),
        "warcio check agreed after all: {}",
        stdout(&theirs)
    );
}

#[test]
fn a_tampered_record_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (old, _) = crawls(dir.path());
    let warc = only_file(&old.out.join("warcs"), ".warc.gz");
    let target = &old.written[0];
    // Change one byte of the page inside its (valid, re-compressed) gzip member.
    let data = fs::read(&warc).unwrap();
    let (start, end) = (
        target.offset as usize,
        (target.offset + target.length) as usize,
    );
    let mut record = Vec::new();
    flate2::read::GzDecoder::new(&data[start..end])
        .read_to_end(&mut record)
        .unwrap();
    let at = record.windows(9).position(|w| w == b"unchanged").unwrap();
    record[at] = b'U';
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&record).unwrap();
    let member = gz.finish().unwrap();
    let tampered = [&data[..start], &member[..], &data[end..]].concat();
    fs::write(&warc, tampered).unwrap();
    let (code, text) = verify(&[&warc.display().to_string()]);
    assert_eq!(code, Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("WARC-Block-Digest does not match"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(&target.record_id), "{line}");
    assert!(
        line.contains(&format!("offset {}", target.offset)),
        "{line}"
    );
    assert!(
        text.contains("WARC-Payload-Digest does not match the payload"),
        "{text}"
    );
}

#[test]
fn links_originals_ids_and_gzip_layout_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = crawls(dir.path());
    let new_warc = only_file(&new.out.join("warcs"), ".warc.gz");
    let new_arg = new_warc.display().to_string();
    // Alone, the revisit's original is missing...
    let (code, text) = verify(&[&new_arg]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("revisit whose original"), "{text}");
    // ...and found in the old crawl's CDXJ.
    let old_cdxj = only_file(&old.out.join("indexes"), ".cdxj");
    let (code, text) = verify(&[&new_arg, "--index", &old_cdxj.display().to_string()]);
    assert_eq!(code, Some(0), "{text}");

    // The same records twice: ids not unique.
    let copy = dir.path().join("copy.warc.gz");
    fs::copy(&new_warc, &copy).unwrap();
    let (code, text) = verify(&[
        &new_arg,
        &copy.display().to_string(),
        "--index",
        &old_cdxj.display().to_string(),
    ]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("WARC-Record-ID is not unique"), "{text}");

    // One gzip stream for the whole file: said so, and the records still checked.
    let old_warc = only_file(&old.out.join("warcs"), ".warc.gz");
    let mut plain = Vec::new();
    flate2::read::MultiGzDecoder::new(&fs::read(&old_warc).unwrap()[..])
        .read_to_end(&mut plain)
        .unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).unwrap();
    let stream = dir.path().join("stream.warc.gz");
    fs::write(&stream, gz.finish().unwrap()).unwrap();
    let (code, text) = verify(&[&stream.display().to_string()]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("the file is one gzip stream"), "{text}");
    assert!(text.contains("records: 1 problems"), "{text}");
    // A plain WARC reads too.
    let plain_path = dir.path().join("plain.warc");
    fs::write(&plain_path, &plain).unwrap();
    let (code, text) = verify(&[&plain_path.display().to_string()]);
    assert_eq!(code, Some(0), "{text}");

    // A WARC-Concurrent-To naming nothing: the page's response removed, its request kept.
    let data = fs::read(&old_warc).unwrap();
    let page = &old.written[0];
    let (start, end) = (page.offset as usize, (page.offset + page.length) as usize);
    let cut = dir.path().join("cut.warc.gz");
    fs::write(&cut, [&data[..start], &data[end..]].concat()).unwrap();
    let (code, text) = verify(&[&cut.display().to_string()]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "WARC-Concurrent-To {} names no record",
            page.record_id
        )),
        "{text}"
    );
    // Unreadable input: exit 2.
    let text_file = dir.path().join("notes.warc");
    fs::write(&text_file, "just some text\n").unwrap();
    let (code, text) = verify(&[&text_file.display().to_string()]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("not a WARC or ARC file"), "{text}");
}
