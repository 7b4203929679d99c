//! `archiver index`: its CDXJ equals cdxj-indexer's for WARCs written by warcio, by wget and by
//! our own writer; damaged and foreign files are reported, and the rest still indexed.

mod support5;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{TimeZone, Utc};
use support5::*;

/// `archiver index FILES...` (stdout), asserted to succeed.
fn index_ok(files: &[&Path]) -> String {
    let mut args = vec!["index".to_string()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = archiver(&args);
    assert!(
        out.status.success(),
        "archiver index failed:\n{}",
        stderr(&out)
    );
    stdout(&out)
}

fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let json = line.splitn(3, ' ').nth(2)?;
    let start = json.find(&format!("\"{name}\": \""))? + name.len() + 5;
    let rest = &json[start..];
    Some(&rest[..rest.find('"')?])
}

#[test]
fn warcio_and_hand_written_warcs_index_like_cdxj_indexer() {
    let dir = tempfile::tempdir().unwrap();
    let files = sample_warcs(dir.path());
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let ours = index_ok(&refs);
    let theirs = cdxj_indexer(&refs);
    assert_eq!(ours, theirs);
    let lines: Vec<&str> = ours.lines().collect();
    // 11 per warcio file (6 responses, 2 revisits, a resource, JSON metadata, dns; not the
    // warc-fields ones), 4 per hand-written file (not its warc-fields metadata).
    assert_eq!(lines.len(), 2 * 11 + 2 * 4, "{ours}");
    let revisits = lines
        .iter()
        .filter(|l| field(l, "mime") == Some("warc/revisit"));
    assert_eq!(revisits.count(), 4);
    // The digest cdxj-indexer computes for a response without one: SHA-1 of the payload.
    let nodigest = lines
        .iter()
        .find(|l| field(l, "url") == Some("http://example.org/nodigest"))
        .unwrap();
    let expected = archiver::spool::sha1_of(b"<p>no digest</p>");
    assert_eq!(field(nodigest, "digest"), Some(expected.as_str()));
    // Plain and gzip files give the same records at different offsets.
    let plain = lines
        .iter()
        .filter(|l| field(l, "filename") == Some("sample.warc"));
    assert_eq!(plain.count(), 11);
}

#[test]
fn index_writes_to_a_file_with_o() {
    let dir = tempfile::tempdir().unwrap();
    let files = sample_warcs(dir.path());
    let out_file = dir.path().join("all.cdxj");
    let out = archiver(&[
        "index",
        &files[0].display().to_string(),
        "-o",
        &out_file.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        fs::read_to_string(&out_file).unwrap(),
        cdxj_indexer(&[&files[0]])
    );
    // A folder stands for the WARCs in it, as with cdxj-indexer.
    let warcs = dir.path().join("warcs");
    fs::create_dir(&warcs).unwrap();
    for f in &files {
        fs::copy(f, warcs.join(f.file_name().unwrap())).unwrap();
    }
    assert_eq!(index_ok(&[&warcs]), cdxj_indexer(&[&warcs]));
}

/// A small site for wget: pages linking to each other, a redirect, a 404, an image.
fn site() -> HashMap<String, Page> {
    let mut pages = HashMap::new();
    pages.insert(
        "/".to_string(),
        Page::html(
            "<html><body><a href=\"/a.html\">a</a> <a href=\"/b.html?x=1&y=2\">b</a>\
             <a href=\"/missing.html\">m</a> <a href=\"/redir\">r</a><img src=\"/img.png\">\
             </body></html>",
        ),
    );
    pages.insert(
        "/a.html".into(),
        Page::html("<p>page a</p><a href=\"/\">home</a>"),
    );
    pages.insert("/b.html?x=1&y=2".into(), Page::html("<p>page b</p>"));
    pages.insert(
        "/img.png".into(),
        Page {
            status: 200,
            content_type: "image/png",
            body: (0..3000u32).map(|i| (i * 7 % 251) as u8).collect(),
            headers: vec![],
        },
    );
    pages.insert(
        "/redir".into(),
        Page {
            status: 301,
            content_type: "text/html",
            body: b"moved".to_vec(),
            headers: vec!["Location: /a.html".into()],
        },
    );
    pages
}

/// Runs wget over the site, writing `NAME.warc.gz` (or `NAME.warc` uncompressed) in `dir`.
fn wget(server: &Server, dir: &Path, name: &str, compress: bool) -> PathBuf {
    let mut cmd = Command::new("wget");
    cmd.current_dir(dir)
        .args(["-q", "-r", "-l", "3", "--delete-after", "-P", "files"])
        .arg(format!("--warc-file={name}"));
    if !compress {
        cmd.arg("--no-warc-compression");
    }
    cmd.arg(server.url("/"));
    // wget exits 8 when a page answered 404, which this site does on purpose.
    run(cmd, 120);
    let path = dir.join(if compress {
        format!("{name}.warc.gz")
    } else {
        format!("{name}.warc")
    });
    assert!(path.exists(), "wget wrote no {}", path.display());
    path
}

#[test]
fn wget_warcs_index_like_cdxj_indexer() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(site());
    let gz = wget(&server, dir.path(), "site", true);
    let plain = wget(&server, dir.path(), "plain", false);
    let ours = index_ok(&[&gz, &plain]);
    assert_eq!(ours, cdxj_indexer(&[&gz, &plain]));
    let urls: Vec<&str> = ours.lines().filter_map(|l| field(l, "url")).collect();
    for path in [
        "/",
        "/a.html",
        "/b.html?x=1&y=2",
        "/img.png",
        "/redir",
        "/missing.html",
    ] {
        let url = server.url(path);
        let n = urls.iter().filter(|u| **u == url).count();
        // Once per file at least (wget fetches a redirect target again).
        assert!(n >= 2 && n % 2 == 0, "{url} in {urls:?}");
    }
}

#[test]
fn our_writer_with_revisits_indexes_like_cdxj_indexer_and_itself() {
    let dir = tempfile::tempdir().unwrap();
    let date = Utc.with_ymd_and_hms(2026, 11, 30, 23, 38, 13).unwrap();
    let first = write_crawl(
        &dir.path().join("one"),
        "A",
        date,
        &[Cap::Page("http://example.com/", 200, "<p>same</p>")],
    );
    let out = dir.path().join("two");
    write_crawl(
        &out,
        "B",
        date,
        &[
            Cap::Page("http://example.com/x", 404, "<p>gone</p>"),
            Cap::Revisit(
                "http://example.com/",
                "http://example.com/",
                &first.written[0],
                "<p>same</p>",
            ),
            Cap::Revisit(
                "http://example.com/copy",
                "http://example.com/",
                &first.written[0],
                "<p>same</p>",
            ),
        ],
    );
    let warc = only_file(&out.join("warcs"), ".warc.gz");
    let ours = index_ok(&[&warc]);
    assert_eq!(ours, cdxj_indexer(&[&warc]));
    let own_index = only_file(&out.join("indexes"), ".cdxj");
    assert_eq!(ours, fs::read_to_string(own_index).unwrap());
    assert_eq!(ours.lines().count(), 3);
}

#[test]
fn damage_is_reported_with_its_offset_and_the_rest_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let files = sample_warcs(dir.path());
    let intact = index_ok(&[&files[0]]);
    let lines: Vec<&str> = intact.lines().collect();
    // Damage the record of http://example.com/missing in a copy with the same name.
    let victim = lines
        .iter()
        .find(|l| field(l, "url") == Some("http://example.com/missing"))
        .unwrap();
    let offset: usize = field(victim, "offset").unwrap().parse().unwrap();
    let length: usize = field(victim, "length").unwrap().parse().unwrap();
    let mut data = fs::read(&files[0]).unwrap();
    for b in &mut data[offset + length / 2..offset + length / 2 + 8] {
        *b ^= 0x5a;
    }
    let damaged_dir = dir.path().join("damaged");
    fs::create_dir(&damaged_dir).unwrap();
    let damaged = damaged_dir.join("sample.warc.gz");
    fs::write(&damaged, &data).unwrap();
    // A truncated copy of the plain file, a text file and a whole-file gzip.
    let plain = fs::read(&files[1]).unwrap();
    let truncated = dir.path().join("truncated.warc");
    fs::write(&truncated, &plain[..plain.len() - 40]).unwrap();
    let text = dir.path().join("notes.warc");
    fs::write(&text, "these are notes, not a WARC\n").unwrap();
    let one_stream = dir.path().join("onestream.warc.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, &plain).unwrap();
    fs::write(&one_stream, enc.finish().unwrap()).unwrap();

    let out = archiver(&[
        "index",
        &damaged.display().to_string(),
        &truncated.display().to_string(),
        &text.display().to_string(),
        &one_stream.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("sample.warc.gz: offset {offset}: ")),
        "{err}"
    );
    assert!(err.contains("truncated.warc: offset "), "{err}");
    assert!(err.contains("notes.warc: not a WARC file"), "{err}");
    assert!(err.contains("warcio recompress"), "{err}");
    // Every other record of the damaged file is still there, exactly as before.
    let got = stdout(&out);
    let from_damaged: Vec<&str> = got
        .lines()
        .filter(|l| field(l, "filename") == Some("sample.warc.gz"))
        .collect();
    let expected: Vec<&str> = lines.iter().copied().filter(|l| l != victim).collect();
    assert_eq!(from_damaged, expected);
    // The truncated file lost only its last record.
    let from_truncated = got
        .lines()
        .filter(|l| field(l, "filename") == Some("truncated.warc"))
        .count();
    assert_eq!(from_truncated, 10);
}

/// `-o` onto something that is not a regular file (a FIFO here; `/dev/null` in real use) writes
/// into it: renaming a temporary file over it would replace the special file itself.
#[test]
fn output_onto_a_special_file_writes_into_it() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).expect("read fifo"))
    };
    let warc =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cdx/basic.warc.gz");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_archiver"))
        .arg("index")
        .arg(&warc)
        .arg("-o")
        .arg(&fifo)
        .output()
        .expect("run archiver index");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = reader.join().expect("reader");
    assert!(text.lines().count() > 0, "the CDXJ went through the pipe");
    let kind = std::fs::symlink_metadata(&fifo).expect("stat").file_type();
    assert!(kind.is_fifo(), "the FIFO is still a FIFO");
}
