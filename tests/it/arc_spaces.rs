//! ARC records whose URL holds spaces (warcio's `example-space-in-url.arc`, kept in
//! `tests/data/warc/`, and a file built here with more such records): `index` writes the lines
//! `cdxj-indexer` writes (spaces as `%20`), `verify` reads every record, `diff` compares them
//! and `optout apply` removes one and keeps the others.
//!
//! warcio's file also ends 12 bytes before its last record's length says (the URL was edited
//! without the length): warcio reads that record to the end of the file, and so does the walk,
//! reporting the truncation.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::commands::*;

fn warcio_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/warc/example-space-in-url.arc")
}

/// One ARC v1 record: header line, `block`, newline.
fn arc_record(url: &str, date: &str, block: &[u8]) -> Vec<u8> {
    let mut out = format!("{url} 93.184.216.119 {date} text/html {}\n", block.len()).into_bytes();
    out.extend_from_slice(block);
    out.push(b'\n');
    out
}

/// An ARC file (version block and three captures, two with spaces in their URLs), whole.
fn built_arc(path: &Path) {
    let fields = "1 0 Test\nURL IP-address Archive-date Content-type Archive-length\n";
    let mut data = format!(
        "filedesc://spaces.arc 127.0.0.1 20140216050221 text/plain {}\n{fields}\n",
        fields.len()
    )
    .into_bytes();
    let page = |text: &str| {
        let body = format!("<html><body><p>{text}</p></body></html>");
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    for (url, date, text) in [
        ("http://example.com/a b/c d.html", "20140216050222", "one"),
        ("http://example.com/plain", "20140216050223", "two"),
        (
            "http://example.com/q?x=a b c&y=2 3",
            "20140216050224",
            "three",
        ),
    ] {
        data.extend(arc_record(url, date, &page(text)));
    }
    fs::write(path, data).unwrap();
}

fn index(file: &Path) -> std::process::Output {
    archiver(&["index", &file.display().to_string()])
}

#[test]
fn warcios_file_indexes_as_cdxj_indexer_does() {
    let file = warcio_file();
    let out = index(&file);
    let ours = stdout(&out);
    assert_eq!(ours, cdxj_indexer(&[&file]));
    assert!(
        ours.contains("EmailTitle=Examples%20From%20The%20Live%20Web"),
        "{ours}"
    );
    assert_eq!(ours.lines().count(), 1);
    // The truncation is said, with its offset; the line is written all the same.
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("offset 151: the file ends inside this record (truncated: 12"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn whole_arc_with_spaces_indexes_verifies_and_diffs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spaces.arc");
    built_arc(&file);
    let out = index(&file);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = stdout(&out);
    assert_eq!(ours, cdxj_indexer(&[&file]));
    assert_eq!(ours.lines().count(), 3, "{ours}");
    assert!(
        ours.contains("\"http://example.com/a%20b/c%20d.html\""),
        "{ours}"
    );

    let verified = archiver(&["verify", &file.display().to_string()]);
    assert!(verified.status.success(), "{}", stdout(&verified));
    assert!(
        stdout(&verified).contains("4 records"),
        "{}",
        stdout(&verified)
    );

    // Two "crawls": warcio's file and the built one, each with its index.
    let crawl = |name: &str, arc: &Path| {
        let out = dir.path().join(name);
        fs::create_dir_all(out.join("warcs")).unwrap();
        fs::create_dir_all(out.join("indexes")).unwrap();
        let copy = out.join("warcs").join(arc.file_name().unwrap());
        fs::copy(arc, &copy).unwrap();
        let cdxj = out.join("indexes").join("all.cdxj");
        archiver(&[
            "index",
            &copy.display().to_string(),
            "-o",
            &cdxj.display().to_string(),
        ]);
        assert!(fs::metadata(&cdxj).unwrap().len() > 0);
        out
    };
    let old = crawl("old", &warcio_file());
    let new = crawl("new", &file);
    let diff = archiver(&[
        "diff",
        &old.display().to_string(),
        &new.display().to_string(),
    ]);
    assert!(diff.status.success(), "{}", stderr(&diff));
    let report = stdout(&diff);
    assert!(report.contains("added 3, removed 1"), "{report}");
    assert!(
        report.contains("+ http://example.com/q?x=a%20b%20c&y=2%203"),
        "{report}"
    );
    let one = archiver(&[
        "diff",
        &new.display().to_string(),
        &new.display().to_string(),
        "--url",
        "http://example.com/a%20b/c%20d.html",
    ]);
    assert!(one.status.success(), "{}", stderr(&one));
    assert!(
        stdout(&one).contains("the extracted text is the same"),
        "{}",
        stdout(&one)
    );
}

#[test]
fn optout_removes_a_record_with_spaces_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    fs::create_dir_all(out.join("warcs")).unwrap();
    fs::create_dir_all(out.join("indexes")).unwrap();
    let arc = out.join("warcs").join("spaces.arc");
    built_arc(&arc);
    // warcio's file, whose last record is cut short, also gets a record removed... and kept:
    // a list entry for another URL leaves it, and it is copied cut short as it was.
    let mut cut = arc_record(
        "http://example.com/first one",
        "20140216050220",
        b"HTTP/1.1 204 No Content\r\n\r\n",
    );
    let warcio = fs::read(warcio_file()).unwrap();
    let (desc, rest) = warcio.split_at(151);
    let mut joined = desc.to_vec();
    joined.append(&mut cut);
    joined.extend_from_slice(rest);
    let cut_file = out.join("warcs").join("cut.arc");
    fs::write(&cut_file, &joined).unwrap();
    for (name, stem) in [("spaces.arc", "spaces"), ("cut.arc", "cut")] {
        let cdxj = out.join("indexes").join(format!("{stem}.cdxj"));
        let w = out.join("warcs").join(name);
        archiver(&[
            "index",
            &w.display().to_string(),
            "-o",
            &cdxj.display().to_string(),
        ]);
    }
    let list = dir.path().join("optout.txt");
    fs::write(
        &list,
        "http://example.com/a%20b/c%20d.html\nhttp://example.com/first%20one\n",
    )
    .unwrap();
    let applied = archiver(&[
        "optout",
        "apply",
        &list.display().to_string(),
        "--warcs",
        &out.display().to_string(),
    ]);
    assert!(
        applied.status.success(),
        "{}{}",
        stdout(&applied),
        stderr(&applied)
    );
    let report = stdout(&applied);
    assert!(
        report.contains("2 records removed from 2 of 2 WARC files"),
        "{report}"
    );

    let spaces = fs::read_to_string(out.join("indexes/spaces.cdxj")).unwrap();
    assert_eq!(spaces, cdxj_indexer(&[&arc]));
    assert!(!spaces.contains("a%20b/c%20d"), "{spaces}");
    assert!(spaces.contains("x=a%20b%20c"), "{spaces}");
    assert_eq!(spaces.lines().count(), 2);
    // The cut-short record stayed, byte for byte: the file is warcio's again.
    assert_eq!(fs::read(&cut_file).unwrap(), warcio);
    let cut_index = fs::read_to_string(out.join("indexes/cut.cdxj")).unwrap();
    assert_eq!(cut_index, cdxj_indexer(&[&cut_file]));
}
