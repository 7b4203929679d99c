//! `archiver index`: its CDXJ equals cdxj-indexer's for WARCs written by warcio, by wget and by
//! our own writer; damaged and foreign files are reported, and the rest still indexed.

use crate::common;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{TimeZone, Utc};
use common::commands::*;

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
    assert!(err.contains("notes.warc: not a WARC or ARC file"), "{err}");
    assert!(err.contains("warcio recompress"), "{err}");
    // Every other record of the damaged file is still there, exactly as before.
    let got = stdout(&out);
    let from_damaged: Vec<&str> = got
        .lines()
        .filter(|l| field(l, "filename") == Some("sample.warc.gz"))
        .collect();
    let expected: Vec<&str> = lines.iter().copied().filter(|l| l != victim).collect();
    assert_eq!(from_damaged, expected);
    // The truncated file's last record is read to the end of the file, as cdxj-indexer reads
    // it (and reported: "truncated.warc: offset" above).
    let from_truncated: String = got
        .lines()
        .filter(|l| field(l, "filename") == Some("truncated.warc"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(from_truncated, cdxj_indexer(&[&truncated]));
    assert!(
        err.contains("truncated.warc: offset ")
            && err.contains("(truncated: 36 of its 41 block bytes"),
        "{err}"
    );
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
    let out = archiver(&[
        "index",
        &warc.to_string_lossy(),
        "-o",
        &fifo.to_string_lossy(),
    ]);
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

/// A small deterministic generator (xorshift64*), so a failing case can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A body of `len` bytes that compresses a lot (repeats), somewhat (text-like) or not at all.
fn body(rng: &mut Rng, len: usize) -> Vec<u8> {
    match rng.below(3) {
        0 => vec![b'a' + rng.below(26) as u8; len],
        1 => {
            const WORDS: [&str; 8] = [
                "the ", "crawl ", "<p>", "archive ", "\n", "of ", "web ", "x",
            ];
            let mut b = Vec::with_capacity(len + 16);
            while b.len() < len {
                b.extend_from_slice(WORDS[rng.below(8) as usize].as_bytes());
            }
            b.truncate(len);
            b
        }
        _ => (0..len).map(|_| rng.next() as u8).collect(),
    }
}

/// Block sizes around every buffer the reader uses (its 2 KiB first inflate step and skim
/// threshold, the 64 KiB inflate output, the 256 KiB read buffer, the 1 MiB skim window),
/// and small ones.
fn block_len(rng: &mut Rng) -> usize {
    const EDGES: [usize; 6] = [0, 2048, 4096, 65536, 262_144, 1_048_576];
    match rng.below(4) {
        0 => rng.below(600) as usize,
        1 => rng.below(6000) as usize,
        _ => {
            let edge = EDGES[rng.below(EDGES.len() as u64) as usize];
            (edge + rng.below(200) as usize).saturating_sub(100)
        }
    }
}

/// One record, gzipped on its own at `level` (0 = stored blocks).
fn gz_record(head: &str, block: &[u8], level: u32) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    e.write_all(head.as_bytes()).unwrap();
    e.write_all(block).unwrap();
    e.write_all(b"\r\n\r\n").unwrap();
    e.finish().unwrap()
}

/// A WARC of `n` random records; every few, the same record three times (members of equal size,
/// which is what a skim that looks too far lands on).
fn random_warc(rng: &mut Rng, n: usize, size: fn(&mut Rng) -> usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let kind =
            ["response", "response", "resource", "request", "metadata"][rng.below(5) as usize];
        let len = size(rng);
        let payload = body(rng, len);
        let block = if kind == "response" {
            let mut b = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len}\r\n\r\n"
            )
            .into_bytes();
            b.extend_from_slice(&payload);
            b
        } else {
            payload.clone()
        };
        // Sometimes no payload digest: then the indexer reads the whole payload.
        let digest = if rng.below(3) == 0 {
            String::new()
        } else {
            format!(
                "WARC-Payload-Digest: {}\r\n",
                archiver::spool::sha1_of(&payload)
            )
        };
        let head = format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:r{i}>\r\n\
             WARC-Date: 2026-12-01T10:{:02}:{:02}Z\r\nWARC-Target-URI: http://example.com/p{i}\r\n\
             {digest}Content-Type: {}\r\nContent-Length: {}\r\n\r\n",
            i / 60 % 60,
            i % 60,
            if kind == "response" {
                "application/http;msgtype=response"
            } else {
                "text/plain"
            },
            block.len()
        );
        let level = rng.below(10) as u32;
        let member = gz_record(&head, &block, level);
        let copies = 1 + rng.below(3) as usize;
        for _ in 0..copies {
            out.extend_from_slice(&member);
        }
        i += copies;
    }
    out
}

/// The index reader's read buffer (`INPUT_BUF` in src/commands/index.rs).
const READ_BUFFER: usize = 256 * 1024;

/// A head for a small `resource` record `i` with a block of `len` bytes.
fn small_head(i: usize, len: usize) -> String {
    format!(
        "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:s{i}>\r\n\
         WARC-Date: 2026-12-01T11:00:00Z\r\nWARC-Target-URI: http://example.com/s{i}\r\n\
         Content-Type: text/plain\r\nContent-Length: {len}\r\n\r\n"
    )
}

/// Members that begin a few bytes before a read-buffer boundary (every distance from 1 to
/// 60 bytes in turn), each followed by a member of the same inflated size. Small stored
/// members in between (never skimmed, so the reader never seeks) place them exactly.
fn straddling_warc(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut boundary = READ_BUFFER;
    for before in [1usize, 2, 3, 5, 8, 13, 21, 34, 47, 60] {
        // Fill with stored members up to `boundary - before`; the last one sized to fit.
        loop {
            let room = boundary - 10 - before - out.len();
            if room >= 2000 {
                let len = 1000;
                out.extend(gz_record(&small_head(i, len), &vec![b'.'; len], 0));
                i += 1;
                continue;
            }
            // Stored: the member grows byte for byte with its block (and its length's digits).
            let mut len = room - gz_record(&small_head(i, 0), b"", 0).len();
            let member = loop {
                let member = gz_record(&small_head(i, len), &vec![b'-'; len], 0);
                match member.len().cmp(&room) {
                    std::cmp::Ordering::Equal => break member,
                    std::cmp::Ordering::Greater => len -= member.len() - room,
                    std::cmp::Ordering::Less => len += room - member.len(),
                }
            };
            out.extend(member);
            i += 1;
            break;
        }
        let len = 2600 + rng.below(800) as usize;
        let payload = body(&mut Rng(rng.next() | 1), len);
        let mut block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n".to_vec();
        block.extend_from_slice(&payload);
        // With a payload digest, so that the indexer reads only the heads and skims the rest.
        let head = small_head(i, block.len())
            .replace("resource", "response")
            .replace(
                "Content-Type: text/plain",
                &format!(
                    "WARC-Payload-Digest: {}\r\nContent-Type: application/http;msgtype=response",
                    archiver::spool::sha1_of(&payload)
                ),
            );
        let twin = gz_record(&head, &block, 6);
        out.extend_from_slice(&twin);
        out.extend_from_slice(&twin);
        i += 1;
        boundary += READ_BUFFER;
    }
    out
}

#[test]
fn random_record_sizes_and_compressibility_index_like_cdxj_indexer() {
    let dir = tempfile::tempdir().unwrap();
    let seed = std::env::var("INDEX_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1d3c_u64);
    let mut rng = Rng(seed | 1);
    let mut files = Vec::new();
    // Any size, around every buffer edge.
    for f in 0..2 {
        let path = dir.path().join(format!("edges-{f}.warc.gz"));
        fs::write(&path, random_warc(&mut rng, 40, block_len)).unwrap();
        files.push(path);
    }
    // Many small pages, as a crawl of a documentation site makes: read buffers end at every
    // point of some member's head.
    for f in 0..2 {
        let path = dir.path().join(format!("pages-{f}.warc.gz"));
        let small = |rng: &mut Rng| 1500 + rng.below(5000) as usize;
        fs::write(&path, random_warc(&mut rng, 1500, small)).unwrap();
        files.push(path);
    }
    let path = dir.path().join("straddling.warc.gz");
    fs::write(&path, straddling_warc(&mut rng)).unwrap();
    files.push(path);
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let ours = index_ok(&refs);
    let theirs = cdxj_indexer(&refs);
    assert!(theirs.lines().count() > 1000, "{theirs}");
    if ours != theirs {
        let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
        let first = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        panic!(
            "seed {seed}: {} lines, cdxj-indexer {}; first difference:\nours:   {:?}\ntheirs: {:?}",
            a.len(),
            b.len(),
            a.get(first),
            b.get(first)
        );
    }
}

#[test]
fn the_merged_records_regression_fixture_indexes_like_cdxj_indexer() {
    // Written by this crawler; records 3674765.. were once merged into one line.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/warc/index-merge.warc.gz");
    let ours = index_ok(&[&path]);
    assert_eq!(ours.lines().count(), 3601);
    assert_eq!(ours, cdxj_indexer(&[&path]));
}

/// pywb 2.10.0's `sample_archive/warcs` (WARCs and ARCs from many tools, some damaged),
/// unpacked at test time from pywb's source distribution on PyPI, which ships them (warcio
/// 1.8.1's does not ship its `test/data`). The sdist is cached in `target/sdist/`; pip fetches
/// it when missing.
fn pywb_samples(dir: &Path) -> PathBuf {
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sdist");
    let sdist = cache.join("pywb-2.10.0.tar.gz");
    if !sdist.exists() {
        let pip = venv().join("bin").join("pip");
        let cache_arg = cache.display().to_string();
        let mut cmd = Command::new(pip);
        cmd.args([
            "download",
            "--disable-pip-version-check",
            "--no-binary",
            ":all:",
            "--no-deps",
            "pywb==2.10.0",
            "-d",
            &cache_arg,
        ]);
        let out = run(cmd, 300);
        assert!(out.status.success(), "pip download pywb: {}", stderr(&out));
    }
    let script = format!(
        "import tarfile\nwith tarfile.open({:?}) as t:\n    \
         t.extractall('.', members=[m for m in t.getmembers() \
         if m.name.startswith('pywb-2.10.0/sample_archive/warcs/') and m.isfile()])\n",
        sdist.display().to_string()
    );
    python(&script, dir);
    dir.join("pywb-2.10.0/sample_archive/warcs")
}

#[test]
fn pywb_sample_warcs_and_arcs_index_like_cdxj_indexer() {
    let dir = tempfile::tempdir().unwrap();
    let samples = pywb_samples(dir.path());
    let mut names: Vec<String> = fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.iter().any(|n| n.ends_with(".arc")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with(".arc.gz")), "{names:?}");
    let mut compared = 0;
    for name in &names {
        let path = samples.join(name);
        let path_arg = path.display().to_string();
        let mut cmd = Command::new(venv().join("bin").join("cdxj-indexer"));
        cmd.args(["--sort", &path_arg]);
        let theirs = run(cmd, 120);
        let ours = archiver(&["index", &path_arg]);
        // Never a panic, whatever the file holds.
        assert!(
            !stderr(&ours).contains("panicked") && ours.status.code().is_some_and(|c| c <= 2),
            "{name}: {}",
            stderr(&ours)
        );
        if !theirs.status.success() {
            continue;
        }
        assert_eq!(stdout(&ours), stdout(&theirs), "{name}");
        compared += 1;
    }
    // Every file but the one cdxj-indexer cannot read either (example-bad.warc.gz.bad).
    assert!(compared >= names.len() - 1, "{compared} of {names:?}");
}

#[test]
fn an_arc_crawl_diffs_against_a_warc_crawl() {
    let dir = tempfile::tempdir().unwrap();
    let samples = pywb_samples(dir.path());
    // pywb's example.arc.gz: http://example.com/ in 2014. Today's crawl: the same page, changed.
    let today = dir.path().join("today");
    write_crawl(
        &today,
        "NEW",
        Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap(),
        &[Cap::Page(
            "http://example.com/",
            200,
            "<html><body><p>A new example page.</p></body></html>",
        )],
    );
    let arc = samples.join("example.arc.gz").display().to_string();
    let today_arg = today.display().to_string();
    let out = archiver(&["diff", &arc, &today_arg, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        report["changed"],
        serde_json::json!(["http://example.com/"]),
        "{report}"
    );
    // The old page's text is read out of the ARC record.
    let out = archiver(&["diff", &arc, &today_arg, "--url", "http://example.com/"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("-Example Domain"), "{text}");
    assert!(text.contains("+A new example page."), "{text}");
}
