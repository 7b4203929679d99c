//! The writer and crash recovery, checked against warcio, cdxj-indexer and the `warc` crate:
//! the shared cases and helpers here, the tests in `write.rs`, `revisit.rs` and `recover.rs`.

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{DateTime, Utc};
use flate2::write::GzEncoder;
use flate2::Compression;

use super::naming::{file_safe_host, parse_serial};
use super::record::{CONTENT_TYPE_REQUEST, CONTENT_TYPE_RESPONSE};
use super::*;
use crate::cdx;
use crate::spool::sha1_of;

use warc::{RecordType, WarcHeader, WarcReader};

const REQUEST: &[u8] =
    b"GET /p HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: archiver/0.1\r\nAccept: */*\r\n\r\n";

fn settings(dir: &Path, max_bytes: u64, version: WarcVersion) -> WarcSettings {
    WarcSettings {
        warc_dir: dir.join("warcs"),
        index_dir: dir.join("indexes"),
        prefix: "ARCHIVER".into(),
        max_bytes,
        version,
        info: vec![
            ("operator".into(), "Test Operator <ops@example.org>".into()),
            ("robots".into(), "obey".into()),
            ("description".into(), "two\r\nlines".into()),
        ],
    }
}

fn date() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T23:38:13.123456789Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn spool_of(bytes: &[u8], mem_limit: usize) -> Spool {
    let mut spool = Spool::new(mem_limit);
    for piece in bytes.chunks(7000) {
        spool.append(piece).unwrap();
    }
    spool
}

/// Bytes that do not compress, so a large record really is large on disk.
fn noise(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// One exchange of the fixture and what it should look like in the WARC.
struct Case {
    uri: String,
    response: Vec<u8>,
    payload_digest: Option<String>,
    truncated: Option<&'static str>,
    ip: Option<IpAddr>,
    mem_limit: usize,
    written: Option<Written>,
}

fn case(uri: &str, head: &str, body: &[u8]) -> Case {
    let mut response = head.as_bytes().to_vec();
    response.extend_from_slice(body);
    Case {
        uri: uri.into(),
        response,
        payload_digest: Some(sha1_of(body)),
        truncated: None,
        ip: Some("127.0.0.1".parse().unwrap()),
        mem_limit: 1 << 20,
        written: None,
    }
}

fn simple_case() -> Case {
    case(
        "http://127.0.0.1:8080/",
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n",
        b"<p>hello</p>\n",
    )
}

fn big_case() -> Case {
    let body = noise(300_000);
    let mut c = case(
        "http://[::1]:8080/big.bin",
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 300000\r\n\r\n",
        &body,
    );
    c.ip = Some("::1".parse().unwrap());
    c.mem_limit = 4096;
    c
}

fn chunked_case() -> Case {
    let mut c = case(
        "http://127.0.0.1:8080/chunked?a=1",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n",
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    );
    // Payload digest after transfer decoding, as the fetcher computes it.
    c.payload_digest = Some(sha1_of(b"hello world"));
    c
}

fn truncated_case() -> Case {
    let body = noise(5000);
    let mut c = case(
        "http://127.0.0.1:8080/huge",
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n",
        &body,
    );
    c.truncated = Some("length");
    c.ip = None;
    c
}

fn write_case(w: &mut WarcWriter, c: &mut Case) {
    let mut spool = spool_of(&c.response, c.mem_limit);
    assert_eq!(spool.on_disk(), c.response.len() > c.mem_limit);
    let written = w
        .write_exchange(Exchange {
            target_uri: &c.uri,
            date: date(),
            ip: c.ip,
            request: REQUEST,
            response: &mut spool,
            payload_digest: c.payload_digest.clone(),
            truncated: c.truncated,
        })
        .unwrap();
    c.written = Some(written);
}

/// Writes the cases into one WARC (max_bytes large), closes it, returns its path.
fn write_all(dir: &Path, version: WarcVersion, cases: &mut [Case]) -> PathBuf {
    let mut w = WarcWriter::new(settings(dir, 1 << 40, version)).unwrap();
    for c in cases.iter_mut() {
        write_case(&mut w, c);
    }
    w.close().unwrap();
    assert_eq!(w.closed_files().len(), 1);
    let path = w.closed_files()[0].clone();
    assert_eq!(w.bytes_written(), fs::metadata(&path).unwrap().len());
    path
}

fn all_cases() -> Vec<Case> {
    vec![simple_case(), big_case(), chunked_case(), truncated_case()]
}

/// (offset, compressed length, decompressed bytes) of every gzip member, in order.
fn members(data: &[u8]) -> Vec<(u64, u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let mut dec = flate2::bufread::GzDecoder::new(Cursor::new(&data[pos..]));
        let mut text = Vec::new();
        dec.read_to_end(&mut text).unwrap();
        let used = dec.into_inner().position() as usize;
        assert!(used > 0);
        out.push((pos as u64, used as u64, text));
        pos += used;
    }
    out
}

/// Header names and values of a decompressed record, in order.
fn header_lines(record: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(record);
    let head = text.split("\r\n\r\n").next().unwrap();
    head.split("\r\n")
        .skip(1)
        .map(|l| {
            let (n, v) = l.split_once(": ").unwrap();
            (n.to_string(), v.to_string())
        })
        .collect()
}

fn names(headers: &[(String, String)]) -> Vec<&str> {
    headers.iter().map(|(n, _)| n.as_str()).collect()
}

fn value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_str().unwrap().to_string()
}

/// Names of the files in `dir` whose name does not end with `suffix` (what a step left over).
fn names_not_ending(dir: &Path, suffix: &str) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| file_name(&e.unwrap().path()))
        .filter(|n| !n.ends_with(suffix))
        .collect()
}

/// The Python venv with warcio: `ARCHIVER_VENV`, else the repo's `.venv`, else /tmp/pyv.
fn warcio(venv: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(venv.join("bin/warcio"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

mod false_starts;
mod notmodified;
mod recover;
mod revisit;
mod write;

const HEAD_200: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nX-Copy: yes\r\n\r\n";

/// The Python venv the tool checks need: `ARCHIVER_VENV`, else `<repo>/.venv`. Missing
/// tools fail the test (never skip it): what these tests check is the tools' verdict.
pub(crate) fn required_venv() -> PathBuf {
    let dir = std::env::var_os("ARCHIVER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv"));
    for tool in ["warcio", "cdxj-indexer", "wayback"] {
        assert!(
            dir.join("bin").join(tool).exists(),
            "{tool} not found in the venv {}: run tools/test.sh (it creates the venv with \
             the pinned warcio, cdxj-indexer and pywb), or set ARCHIVER_VENV",
            dir.display()
        );
    }
    dir
}

/// cdxj-indexer's lines for a WARC, sorted.
pub(crate) fn indexer_lines(venv: &Path, warc: &Path) -> Vec<String> {
    let out = Command::new(venv.join("bin/cdxj-indexer"))
        .arg(warc)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

/// The lines of the CDXJ the writer put next to `warc`.
pub(crate) fn our_lines(index_dir: &Path, warc: &Path) -> Vec<String> {
    let index = index_dir.join(file_name(warc).replace(".warc.gz", ".cdxj"));
    fs::read_to_string(index)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn later() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-01T08:00:00.5Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn revisit<'a>(uri: &'a str, orig_uri: &'a str, orig: &'a Written) -> Revisit<'a> {
    Revisit {
        target_uri: uri,
        date: later(),
        ip: Some("127.0.0.1".parse().unwrap()),
        request: REQUEST,
        http_head: HEAD_200,
        payload_digest: sha1_of(b"<p>hello</p>\n"),
        refers_to_uri: orig_uri,
        refers_to_date: &orig.warc_date,
        refers_to_record_id: Some(&orig.record_id),
    }
}
