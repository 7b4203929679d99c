//! The writer and crash recovery, checked against warcio, cdxj-indexer and the `warc` crate.

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

#[test]
fn every_member_decodes_alone_from_its_recorded_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = all_cases();
    let path = write_all(dir.path(), WarcVersion::V1_1, &mut cases);
    let data = fs::read(&path).unwrap();
    let all = members(&data);
    assert_eq!(all.len(), 1 + 2 * cases.len());
    for (_, _, text) in &all {
        assert!(text.starts_with(b"WARC/1.1\r\n"));
    }
    for (i, c) in cases.iter().enumerate() {
        let w = c.written.as_ref().unwrap();
        assert_eq!(w.filename, file_name(&path));
        // Response members sit at 1, 3, 5, … (after the warcinfo).
        let (off, len, _) = &all[1 + 2 * i];
        assert_eq!((w.offset, w.length), (*off, *len));
        let slice = &data[w.offset as usize..(w.offset + w.length) as usize];
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(slice)
            .read_to_end(&mut text)
            .unwrap();
        assert!(text.starts_with(b"WARC/1.1\r\nWARC-Type: response\r\n"));
        assert!(text.ends_with(b"\r\n\r\n"));
    }
}

#[test]
fn headers_come_in_the_fixed_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = vec![big_case(), truncated_case()];
    let path = write_all(dir.path(), WarcVersion::V1_1, &mut cases);
    let all = members(&fs::read(&path).unwrap());
    let info = header_lines(&all[0].2);
    assert_eq!(
        names(&info),
        [
            "WARC-Type",
            "WARC-Record-ID",
            "WARC-Date",
            "WARC-Filename",
            "WARC-Block-Digest",
            "Content-Type",
            "Content-Length"
        ]
    );
    assert_eq!(
        value(&info, "Content-Type"),
        Some("application/warc-fields")
    );
    let resp = header_lines(&all[1].2);
    assert_eq!(
        names(&resp),
        [
            "WARC-Type",
            "WARC-Record-ID",
            "WARC-Date",
            "WARC-Target-URI",
            "WARC-IP-Address",
            "WARC-Warcinfo-ID",
            "WARC-Block-Digest",
            "WARC-Payload-Digest",
            "Content-Type",
            "Content-Length"
        ]
    );
    assert_eq!(
        value(&resp, "WARC-Date"),
        Some("2026-11-30T23:38:13.123456Z")
    );
    assert_eq!(value(&resp, "WARC-IP-Address"), Some("::1"));
    assert_eq!(
        value(&resp, "WARC-Target-URI"),
        Some("http://[::1]:8080/big.bin")
    );
    let req = header_lines(&all[2].2);
    assert_eq!(
        names(&req),
        [
            "WARC-Type",
            "WARC-Record-ID",
            "WARC-Date",
            "WARC-Target-URI",
            "WARC-IP-Address",
            "WARC-Concurrent-To",
            "WARC-Warcinfo-ID",
            "WARC-Block-Digest",
            "Content-Type",
            "Content-Length"
        ]
    );
    assert_eq!(value(&req, "Content-Type"), Some(CONTENT_TYPE_REQUEST));
    let truncated = header_lines(&all[3].2);
    assert_eq!(
        names(&truncated),
        [
            "WARC-Type",
            "WARC-Record-ID",
            "WARC-Date",
            "WARC-Target-URI",
            "WARC-Warcinfo-ID",
            "WARC-Block-Digest",
            "WARC-Payload-Digest",
            "WARC-Truncated",
            "Content-Type",
            "Content-Length"
        ]
    );
    assert_eq!(value(&truncated, "WARC-Truncated"), Some("length"));
}

#[test]
fn warc_crate_reads_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = all_cases();
    let path = write_all(dir.path(), WarcVersion::V1_1, &mut cases);
    let reader = WarcReader::new(BufReader::new(flate2::read::MultiGzDecoder::new(
        File::open(&path).unwrap(),
    )));
    let records: Vec<_> = reader.iter_records().map(|r| r.unwrap()).collect();
    assert_eq!(records.len(), 1 + 2 * cases.len());

    let info = &records[0];
    assert_eq!(info.warc_type(), &RecordType::WarcInfo);
    assert_eq!(info.header(WarcHeader::Filename).unwrap(), file_name(&path));
    let block = String::from_utf8(info.body().to_vec()).unwrap();
    assert!(block.starts_with(&format!(
        "software: archiver/{}\r\nformat: WARC File Format 1.1\r\nconformsTo: {}\r\n",
        env!("CARGO_PKG_VERSION"),
        WarcVersion::V1_1.conforms_to()
    )));
    assert!(block.ends_with(
        "operator: Test Operator <ops@example.org>\r\nrobots: obey\r\ndescription: two lines\r\n"
    ));
    let info_id = info.warc_id().to_string();
    assert!(info_id.starts_with("<urn:uuid:") && info_id.ends_with('>'));

    for (i, c) in cases.iter().enumerate() {
        let resp = &records[1 + 2 * i];
        let req = &records[2 + 2 * i];
        assert_eq!(resp.warc_type(), &RecordType::Response);
        assert_eq!(req.warc_type(), &RecordType::Request);
        for r in [resp, req] {
            assert_eq!(r.header(WarcHeader::TargetURI).unwrap(), c.uri);
            assert_eq!(r.header(WarcHeader::WarcInfoID).unwrap(), info_id);
            assert_eq!(
                r.header(WarcHeader::IPAddress).map(|v| v.to_string()),
                c.ip.map(|ip| ip.to_string())
            );
        }
        assert_eq!(resp.body(), &c.response[..]);
        assert_eq!(
            resp.header(WarcHeader::BlockDigest).unwrap(),
            sha1_of(&c.response)
        );
        assert_eq!(
            resp.header(WarcHeader::PayloadDigest)
                .map(|v| v.to_string()),
            c.payload_digest
        );
        assert_eq!(
            resp.header(WarcHeader::ContentType).unwrap(),
            CONTENT_TYPE_RESPONSE
        );
        assert_eq!(
            resp.header(WarcHeader::Truncated).map(|v| v.to_string()),
            c.truncated.map(String::from)
        );
        assert_eq!(req.body(), REQUEST);
        assert_eq!(
            req.header(WarcHeader::BlockDigest).unwrap(),
            sha1_of(REQUEST)
        );
        assert_eq!(
            req.header(WarcHeader::ConcurrentTo).unwrap(),
            resp.warc_id()
        );
        assert!(req.header(WarcHeader::PayloadDigest).is_none());
        assert_ne!(req.warc_id(), resp.warc_id());
    }
}

#[test]
fn index_lists_every_response_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = all_cases();
    let path = write_all(dir.path(), WarcVersion::V1_1, &mut cases);
    let name = file_name(&path);
    let index = dir
        .path()
        .join("indexes")
        .join(name.replace(".warc.gz", ".cdxj"));
    let text = fs::read_to_string(&index).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), cases.len());
    let mut sorted: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    cdx::sort_lines(&mut sorted);
    assert_eq!(sorted, lines);
    let mut offsets: Vec<u64> = lines
        .iter()
        .map(|l| {
            let json: serde_json::Value =
                serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap();
            assert_eq!(json["filename"], name.as_str());
            match &json["offset"] {
                serde_json::Value::String(s) => s.parse().unwrap(),
                v => v.as_u64().unwrap(),
            }
        })
        .collect();
    offsets.sort();
    let mut expected: Vec<u64> = cases
        .iter()
        .map(|c| c.written.as_ref().unwrap().offset)
        .collect();
    expected.sort();
    assert_eq!(offsets, expected);
    let leftovers: Vec<_> = fs::read_dir(dir.path().join("indexes"))
        .unwrap()
        .map(|e| file_name(&e.unwrap().path()))
        .filter(|n| !n.ends_with(".cdxj"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn warcio_checks_digests_and_agrees_on_offsets() {
    let venv = required_venv();
    let dir = tempfile::tempdir().unwrap();
    let mut cases = vec![simple_case(), big_case(), truncated_case()];
    let path = write_all(dir.path(), WarcVersion::V1_1, &mut cases);
    let file = path.to_str().unwrap();
    let (ok, out) = warcio(&venv, &["check", "-v", file]);
    assert!(ok, "warcio check failed:\n{out}");
    assert_eq!(
        out.matches("digest pass").count(),
        1 + 2 * cases.len(),
        "{out}"
    );

    let (ok, out) = warcio(&venv, &["index", "-f", "offset,length,warc-type", file]);
    assert!(ok, "{out}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1 + 2 * cases.len());
    assert_eq!(rows[0]["warc-type"], "warcinfo");
    for (i, c) in cases.iter().enumerate() {
        let row = &rows[1 + 2 * i];
        let w = c.written.as_ref().unwrap();
        assert_eq!(row["warc-type"], "response");
        assert_eq!(row["offset"], w.offset.to_string());
        assert_eq!(row["length"], w.length.to_string());
    }
}

#[test]
fn warcio_only_disputes_the_transfer_decoded_payload_digest_of_chunked_responses() {
    // warcio hashes the payload as it sits in the record (chunk framing included); the
    // fetcher gives the digest after transfer decoding, as WARC 1.1 says. warcio check
    // must flag exactly that, and nothing else, on a chunked response.
    let venv = required_venv();
    let dir = tempfile::tempdir().unwrap();
    let mut cases = vec![simple_case(), chunked_case()];
    let path = write_all(dir.path(), WarcVersion::V1_1, &mut cases);
    let (ok, out) = warcio(&venv, &["check", "-v", path.to_str().unwrap()]);
    let chunked_at = cases[1].written.as_ref().unwrap().offset;
    eprintln!("{out}");
    assert!(!ok);
    assert_eq!(out.matches("failed").count(), 1, "{out}");
    assert!(out.contains("payload digest failed"), "{out}");
    assert!(out.contains(&format!("offset {chunked_at} ")), "{out}");
    assert_eq!(out.matches("digest pass").count(), 4, "{out}");
}

#[test]
fn rotation_makes_several_complete_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(settings(dir.path(), 1, WarcVersion::V1_1)).unwrap();
    let mut cases = vec![simple_case(), big_case(), truncated_case()];
    for c in cases.iter_mut() {
        write_case(&mut w, c);
        // max_bytes = 1: each exchange fills its file, which closes right away.
        assert!(w.current_path().is_none());
    }
    w.close().unwrap();
    let files = w.closed_files().to_vec();
    assert_eq!(files.len(), 3);
    let total: u64 = files.iter().map(|f| fs::metadata(f).unwrap().len()).sum();
    assert_eq!(w.bytes_written(), total);
    for (i, (f, c)) in files.iter().zip(&cases).enumerate() {
        let name = file_name(f);
        assert!(name.starts_with("ARCHIVER-"));
        assert!(name.contains(&format!("-{i:05}-{}~", std::process::id())));
        assert!(name.ends_with(".warc.gz"));
        assert_eq!(c.written.as_ref().unwrap().filename, name);
        let all = members(&fs::read(f).unwrap());
        assert_eq!(all.len(), 3);
        let info = header_lines(&all[0].2);
        assert_eq!(value(&info, "WARC-Type"), Some("warcinfo"));
        assert_eq!(value(&info, "WARC-Filename"), Some(name.as_str()));
        let index = dir
            .path()
            .join("indexes")
            .join(name.replace(".warc.gz", ".cdxj"));
        assert_eq!(fs::read_to_string(index).unwrap().lines().count(), 1);
    }
    let open: Vec<_> = fs::read_dir(dir.path().join("warcs"))
        .unwrap()
        .map(|e| file_name(&e.unwrap().path()))
        .filter(|n| !n.ends_with(".warc.gz"))
        .collect();
    assert!(open.is_empty(), "{open:?}");
}

#[test]
fn files_rotate_only_after_reaching_max_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // The big record alone passes 100 kB; the small ones do not.
    let mut w = WarcWriter::new(settings(dir.path(), 100_000, WarcVersion::V1_1)).unwrap();
    for mut c in [simple_case(), simple_case(), big_case(), simple_case()] {
        write_case(&mut w, &mut c);
    }
    assert_eq!(w.closed_files().len(), 1);
    assert_eq!(members(&fs::read(&w.closed_files()[0]).unwrap()).len(), 7);
    w.close().unwrap();
    assert_eq!(w.closed_files().len(), 2);
    assert_eq!(members(&fs::read(&w.closed_files()[1]).unwrap()).len(), 3);
}

#[test]
fn serial_continues_after_existing_files() {
    let dir = tempfile::tempdir().unwrap();
    let warcs = dir.path().join("warcs");
    fs::create_dir_all(&warcs).unwrap();
    for name in [
        "ARCHIVER-20260101000000000-00007-11~h.warc.gz",
        "ARCHIVER-20260101000000000-00009-11~h.warc.gz.open",
        "OTHER-20260101000000000-00050-11~h.warc.gz",
        "ARCHIVER-X-20260101000000000-00070-11~h.warc.gz",
        "ARCHIVER-notes.txt",
    ] {
        fs::write(warcs.join(name), b"x").unwrap();
    }
    let mut w = WarcWriter::new(settings(dir.path(), 1, WarcVersion::V1_1)).unwrap();
    write_case(&mut w, &mut simple_case());
    write_case(&mut w, &mut simple_case());
    let names: Vec<String> = w.closed_files().iter().map(|p| file_name(p)).collect();
    assert!(names[0].contains("-00010-"), "{names:?}");
    assert!(names[1].contains("-00011-"), "{names:?}");
    // The files that were there are untouched.
    assert_eq!(
        fs::read(warcs.join("ARCHIVER-20260101000000000-00007-11~h.warc.gz")).unwrap(),
        b"x"
    );
}

#[test]
fn parse_serial_reads_only_names_of_this_prefix() {
    let p = "A-B";
    assert_eq!(
        parse_serial("A-B-20261130233813123-00042-7~h.warc.gz", p),
        Some(42)
    );
    assert_eq!(
        parse_serial("A-B-20261130233813123-123456-7~h.warc.gz.open", p),
        Some(123456)
    );
    assert_eq!(
        parse_serial("A-B-2026113023381312-00042-7~h.warc.gz", p),
        None
    );
    assert_eq!(
        parse_serial("A-20261130233813123-00042-7~h.warc.gz", p),
        None
    );
    assert_eq!(
        parse_serial("A-B-20261130233813123-00042-7~h.cdxj", p),
        None
    );
}

#[test]
fn open_file_exists_while_writing_and_is_renamed_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, WarcVersion::V1_1)).unwrap();
    assert!(w.current_path().is_none());
    assert_eq!(fs::read_dir(dir.path().join("warcs")).unwrap().count(), 0);
    let mut c = simple_case();
    write_case(&mut w, &mut c);
    let open = w.current_path().unwrap().to_path_buf();
    assert!(open.exists());
    let name = c.written.as_ref().unwrap().filename.clone();
    assert_eq!(file_name(&open), format!("{name}.open"));
    let done = dir.path().join("warcs").join(&name);
    assert!(!done.exists());
    let index = dir
        .path()
        .join("indexes")
        .join(name.replace(".warc.gz", ".cdxj"));
    assert!(!index.exists());
    // Everything written so far is readable from the open file already.
    assert_eq!(members(&fs::read(&open).unwrap()).len(), 3);
    w.close().unwrap();
    assert!(!open.exists());
    assert!(done.exists());
    assert!(index.exists());
    // Closing twice is harmless; the next write opens a new file.
    w.close().unwrap();
    write_case(&mut w, &mut simple_case());
    assert!(w.current_path().unwrap().exists());
    assert_ne!(file_name(w.current_path().unwrap()), format!("{name}.open"));
}

#[test]
fn dropping_the_writer_finishes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let open = {
        let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, WarcVersion::V1_1)).unwrap();
        write_case(&mut w, &mut simple_case());
        w.current_path().unwrap().to_path_buf()
    };
    assert!(!open.exists());
    let done = open.with_extension("");
    assert!(done.exists(), "{}", done.display());
}

#[test]
fn version_1_0_writes_whole_second_dates() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = vec![simple_case()];
    let path = write_all(dir.path(), WarcVersion::V1_0, &mut cases);
    let all = members(&fs::read(&path).unwrap());
    for (_, _, text) in &all {
        assert!(text.starts_with(b"WARC/1.0\r\n"));
        let date = value(&header_lines(text), "WARC-Date").unwrap().to_string();
        assert_eq!(date.len(), "2026-11-30T23:38:13Z".len(), "{date}");
    }
    assert_eq!(
        value(&header_lines(&all[1].2), "WARC-Date"),
        Some("2026-11-30T23:38:13Z")
    );
    let info = String::from_utf8_lossy(&all[0].2);
    assert!(info.contains("\r\nformat: WARC File Format 1.0\r\n"));
    assert!(info.contains(WarcVersion::V1_0.conforms_to()));
    let (ok, out) = warcio(&required_venv(), &["check", path.to_str().unwrap()]);
    assert!(ok, "{out}");
}

#[test]
fn date_formats() {
    assert_eq!(
        WarcVersion::V1_1.format_date(date()),
        "2026-11-30T23:38:13.123456Z"
    );
    assert_eq!(
        WarcVersion::V1_0.format_date(date()),
        "2026-11-30T23:38:13Z"
    );
    assert_eq!(WarcVersion::parse("1.0"), Some(WarcVersion::V1_0));
    assert_eq!(WarcVersion::parse("1.1"), Some(WarcVersion::V1_1));
    assert_eq!(WarcVersion::parse("1.2"), None);
}

#[test]
fn bad_header_values_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, WarcVersion::V1_1)).unwrap();
    let mut spool = spool_of(b"HTTP/1.1 200 OK\r\n\r\n", 1024);
    for (uri, truncated, digest) in [
        ("http://h/\r\nWARC-Type: evil", None, None),
        ("http://h/a b", None, None),
        ("", None, None),
        ("http://h/", Some("len gth"), None),
        ("http://h/", None, Some("sha1:AB\r\nX: y".to_string())),
        ("http://h/", None, Some("nocolon".to_string())),
    ] {
        let err = w
            .write_exchange(Exchange {
                target_uri: uri,
                date: date(),
                ip: None,
                request: REQUEST,
                response: &mut spool,
                payload_digest: digest,
                truncated,
            })
            .unwrap_err();
        assert!(matches!(err, WarcError::BadHeaderValue { .. }), "{err}");
    }
    assert!(w.current_path().is_none());
    assert_eq!(fs::read_dir(dir.path().join("warcs")).unwrap().count(), 0);
}

#[test]
fn bad_settings_and_unusable_dirs_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    fs::write(&blocker, b"x").unwrap();
    let mut s = settings(dir.path(), 1, WarcVersion::V1_1);
    s.warc_dir = blocker.join("warcs");
    let err = WarcWriter::new(s).unwrap_err();
    assert!(matches!(err, WarcError::CreateDir { .. }));
    assert!(
        err.to_string().contains(&blocker.display().to_string()),
        "{err}"
    );

    let mut s = settings(dir.path(), 1, WarcVersion::V1_1);
    s.prefix = "../x".into();
    assert!(matches!(
        WarcWriter::new(s).unwrap_err(),
        WarcError::BadSetting(_)
    ));
    let mut s = settings(dir.path(), 1, WarcVersion::V1_1);
    s.info.push(("bad: name".into(), "v".into()));
    assert!(matches!(
        WarcWriter::new(s).unwrap_err(),
        WarcError::BadSetting(_)
    ));
}

#[test]
fn a_failed_record_is_cut_out_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, WarcVersion::V1_1)).unwrap();
    write_case(&mut w, &mut simple_case());
    let start = w.current.as_ref().unwrap().size;
    // What a record broken halfway leaves behind.
    w.current
        .as_mut()
        .unwrap()
        .file
        .write_all(b"\x1f\x8bhalf a member")
        .unwrap();
    w.roll_back(start);
    let mut c = simple_case();
    write_case(&mut w, &mut c);
    // The new exchange starts where the broken one did.
    assert_eq!(c.written.as_ref().unwrap().offset, start);
    w.close().unwrap();
    let all = members(&fs::read(&w.closed_files()[0]).unwrap());
    assert_eq!(all.len(), 5);
}

#[test]
fn file_safe_host_keeps_names_simple() {
    assert_eq!(
        file_safe_host("crawler-1.example.org"),
        "crawler-1.example.org"
    );
    assert_eq!(file_safe_host("we~ird/host name"), "we_ird_host_name");
    assert_eq!(file_safe_host("  "), "localhost");
}

// ----- revisits -----

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

#[test]
fn revisit_records_point_at_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, WarcVersion::V1_1)).unwrap();
    let mut orig = simple_case();
    write_case(&mut w, &mut orig);
    let first = orig.written.unwrap();
    let rv = w
        .write_revisit(revisit("http://127.0.0.1:8080/copy", &orig.uri, &first))
        .unwrap();
    w.close().unwrap();
    let data = fs::read(&w.closed_files()[0]).unwrap();
    let all = members(&data);
    assert_eq!(all.len(), 5);
    let (off, len, text) = &all[3];
    assert_eq!((rv.offset, rv.length), (*off, *len));
    let h = header_lines(text);
    assert_eq!(
        names(&h),
        [
            "WARC-Type",
            "WARC-Record-ID",
            "WARC-Date",
            "WARC-Target-URI",
            "WARC-IP-Address",
            "WARC-Warcinfo-ID",
            "WARC-Profile",
            "WARC-Refers-To",
            "WARC-Refers-To-Target-URI",
            "WARC-Refers-To-Date",
            "WARC-Block-Digest",
            "WARC-Payload-Digest",
            "Content-Type",
            "Content-Length"
        ]
    );
    assert_eq!(value(&h, "WARC-Type"), Some("revisit"));
    assert_eq!(value(&h, "WARC-Record-ID"), Some(rv.record_id.as_str()));
    assert_eq!(value(&h, "WARC-Date"), Some("2026-12-01T08:00:00.500000Z"));
    assert_eq!(rv.warc_date, "2026-12-01T08:00:00.500000Z");
    assert_eq!(
        value(&h, "WARC-Profile"),
        Some("http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
    );
    assert_eq!(value(&h, "WARC-Refers-To"), Some(first.record_id.as_str()));
    assert_eq!(
        value(&h, "WARC-Refers-To-Target-URI"),
        Some(orig.uri.as_str())
    );
    assert_eq!(
        value(&h, "WARC-Refers-To-Date"),
        Some("2026-11-30T23:38:13.123456Z")
    );
    assert_eq!(
        value(&h, "WARC-Block-Digest"),
        Some(sha1_of(HEAD_200).as_str())
    );
    assert_eq!(
        value(&h, "WARC-Payload-Digest"),
        orig.payload_digest.as_deref()
    );
    assert_eq!(value(&h, "Content-Type"), Some(CONTENT_TYPE_RESPONSE));
    // The block is the HTTP head and nothing else.
    let head_len = text.windows(4).position(|x| x == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(&text[head_len..], [HEAD_200, b"\r\n\r\n"].concat());
    // Then its request, concurrent to the revisit.
    let req = header_lines(&all[4].2);
    assert_eq!(value(&req, "WARC-Type"), Some("request"));
    assert_eq!(
        value(&req, "WARC-Concurrent-To"),
        Some(rv.record_id.as_str())
    );
    assert_eq!(value(&req, "WARC-Date"), Some(rv.warc_date.as_str()));
    // Response and revisit both indexed.
    assert_eq!(
        our_lines(&dir.path().join("indexes"), &w.closed_files()[0]).len(),
        2
    );
}

#[test]
fn version_1_0_revisits_name_the_1_0_profile() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, WarcVersion::V1_0)).unwrap();
    let mut orig = simple_case();
    write_case(&mut w, &mut orig);
    let first = orig.written.unwrap();
    let mut rv = revisit("http://127.0.0.1:8080/copy", &orig.uri, &first);
    rv.refers_to_record_id = None;
    w.write_revisit(rv).unwrap();
    w.close().unwrap();
    let all = members(&fs::read(&w.closed_files()[0]).unwrap());
    let h = header_lines(&all[3].2);
    assert_eq!(
        value(&h, "WARC-Profile"),
        Some("http://netpreserve.org/warc/1.0/revisit/identical-payload-digest")
    );
    assert_eq!(value(&h, "WARC-Refers-To"), None);
    assert_eq!(
        value(&h, "WARC-Refers-To-Date"),
        Some("2026-11-30T23:38:13Z")
    );
    assert_eq!(value(&h, "WARC-Date"), Some("2026-12-01T08:00:00Z"));
}

#[test]
fn revisits_pass_warcio_check_and_index_like_cdxj_indexer() {
    let venv = required_venv();
    for version in [WarcVersion::V1_1, WarcVersion::V1_0] {
        let dir = tempfile::tempdir().unwrap();
        let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, version)).unwrap();
        let mut orig = simple_case();
        write_case(&mut w, &mut orig);
        let first = orig.written.unwrap();
        w.write_revisit(revisit(
            "http://127.0.0.1:8080/copy?b=2&a=1",
            &orig.uri,
            &first,
        ))
        .unwrap();
        let mut rv = revisit("http://127.0.0.1:8080/again", &orig.uri, &first);
        rv.http_head = b"HTTP/1.1 200 OK\nContent-Type: text/plain; charset=utf-8\n\n";
        rv.ip = None;
        rv.refers_to_record_id = None;
        w.write_revisit(rv).unwrap();
        w.close().unwrap();
        let path = w.closed_files()[0].clone();
        let (ok, out) = warcio(&venv, &["check", "-v", path.to_str().unwrap()]);
        assert!(ok, "warcio check failed:\n{out}");
        // warcio does not hash revisit blocks (the test above checks that digest).
        let unchecked = "digest present but not checked (revisit)";
        assert_eq!(out.matches(unchecked).count(), 2, "{out}");
        assert_eq!(out.matches("digest pass").count(), 5, "{out}");
        let ours = our_lines(&dir.path().join("indexes"), &path);
        assert_eq!(ours, indexer_lines(&venv, &path));
        assert_eq!(
            ours.iter().filter(|l| l.contains("warc/revisit")).count(),
            2
        );
    }
}

#[test]
fn bad_revisits_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, WarcVersion::V1_1)).unwrap();
    let orig = Written {
        filename: "x.warc.gz".into(),
        offset: 0,
        length: 1,
        record_id: "<urn:uuid:0b5a6f33-4d2c-4f6e-9a51-2f0c9a3c1e77>".into(),
        warc_date: "2026-11-30T23:38:13Z".into(),
    };
    let good = revisit("http://h/copy", "http://h/", &orig);
    let cases: Vec<(&str, Revisit<'_>)> = vec![
        (
            "WARC-Target-URI",
            Revisit {
                target_uri: "http://h/a b",
                ..good.clone()
            },
        ),
        (
            "WARC-Refers-To-Target-URI",
            Revisit {
                refers_to_uri: "",
                ..good.clone()
            },
        ),
        (
            "WARC-Refers-To-Date",
            Revisit {
                refers_to_date: "20261130233813",
                ..good.clone()
            },
        ),
        (
            "WARC-Refers-To-Date",
            Revisit {
                refers_to_date: "2026-11-30T23:38:13+01:00",
                ..good.clone()
            },
        ),
        (
            "WARC-Refers-To",
            Revisit {
                refers_to_record_id: Some("urn:x\r\nX: y"),
                ..good.clone()
            },
        ),
        (
            "WARC-Payload-Digest",
            Revisit {
                payload_digest: "nodigest".into(),
                ..good.clone()
            },
        ),
        (
            "revisit HTTP head",
            Revisit {
                http_head: b"HTTP/1.1 200 OK\r\nA: b\r\n",
                ..good.clone()
            },
        ),
        (
            "revisit HTTP head",
            Revisit {
                http_head: [HEAD_200, b"body"].concat().leak(),
                ..good.clone()
            },
        ),
        (
            "revisit HTTP head",
            Revisit {
                http_head: b"",
                ..good.clone()
            },
        ),
    ];
    for (field, rv) in cases {
        match w.write_revisit(rv) {
            Err(WarcError::BadHeaderValue { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    assert!(w.current_path().is_none());
    w.write_revisit(good).unwrap();
}

#[test]
fn http_head_ends_at_the_blank_line() {
    let resp = [HEAD_200, b"<p>hello</p>\r\n\r\nmore"].concat();
    assert_eq!(http_head(&resp), Some(HEAD_200));
    assert_eq!(
        http_head(b"HTTP/1.0 200 OK\nA: b\n\nbody"),
        Some(&b"HTTP/1.0 200 OK\nA: b\n\n"[..])
    );
    assert_eq!(http_head(b"HTTP/1.1 200 OK\r\nA: b\r\n"), None);
    assert_eq!(http_head(b"\r\n\r\n"), None);
    assert_eq!(http_head(b""), None);
}

// ----- crash recovery -----

/// What a killed process leaves: the writer vanishes without closing its `.open` file.
fn crash(w: WarcWriter) -> PathBuf {
    let open = w.current_path().unwrap().to_path_buf();
    std::mem::forget(w);
    open
}

fn append(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Tails a crash can leave after the last whole record.
fn torn_tails() -> Vec<(&'static str, Vec<u8>)> {
    let record = b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://h/torn\r\n\
        WARC-Date: 2026-11-30T23:38:13Z\r\nContent-Length: 100\r\n\r\nHTTP/1.1 200 OK\r\n";
    let member = gzip(&[&record[..], &noise(5000)[..]].concat());
    let mut whole_but_short = record.to_vec();
    whole_but_short.extend_from_slice(b"\r\n\r\n");
    vec![
        ("half a member", member[..member.len() / 2].to_vec()),
        (
            "a member without its last 4 bytes",
            member[..member.len() - 4].to_vec(),
        ),
        ("garbage", b"this is not gzip at all".to_vec()),
        ("a gzip magic and nothing more", b"\x1f\x8b".to_vec()),
        ("a whole member with a short record", gzip(&whole_but_short)),
        (
            "a whole member that is no WARC record",
            gzip(b"hello\r\n\r\n"),
        ),
    ]
}

#[test]
fn recovery_cuts_a_torn_last_record_and_closes_the_file() {
    let venv = required_venv();
    for (what, tail) in torn_tails() {
        let dir = tempfile::tempdir().unwrap();
        let s = settings(dir.path(), 1 << 40, WarcVersion::V1_1);
        let mut w = WarcWriter::new(s.clone()).unwrap();
        let mut cases = [simple_case(), big_case(), truncated_case()];
        for c in cases.iter_mut() {
            write_case(&mut w, c);
        }
        let first = cases[0].written.clone().unwrap();
        w.write_revisit(revisit("http://127.0.0.1:8080/copy", &cases[0].uri, &first))
            .unwrap();
        let mut expected_lines = w
            .current
            .as_ref()
            .unwrap()
            .cdx_lines
            .in_memory()
            .unwrap()
            .to_vec();
        cdx::sort_lines(&mut expected_lines);
        let open = crash(w);
        let good_size = fs::metadata(&open).unwrap().len();
        append(&open, &tail);

        let got = recover_open_files(&s).unwrap();
        assert_eq!(got.len(), 1, "{what}");
        let r = &got[0];
        let done = open.with_extension("");
        assert_eq!(r.path, done, "{what}");
        assert!(!r.removed);
        // warcinfo, 3 exchanges and a revisit with their requests.
        assert_eq!(r.records_kept, 1 + 2 * 4, "{what}");
        assert_eq!(r.bytes_cut, tail.len() as u64, "{what}");
        assert!(!open.exists(), "{what}");
        assert_eq!(fs::metadata(&done).unwrap().len(), good_size, "{what}");
        let mut expected_records = Vec::new();
        for uri in cases.iter().map(|c| c.uri.as_str()) {
            expected_records.push((uri.to_string(), "response".to_string()));
            expected_records.push((uri.to_string(), "request".to_string()));
        }
        for t in ["revisit", "request"] {
            expected_records.push(("http://127.0.0.1:8080/copy".to_string(), t.to_string()));
        }
        assert_eq!(r.records, expected_records, "{what}");
        let captured: Vec<&str> = r.captured_uris().collect();
        assert_eq!(captured.len(), 4, "{what}");
        assert!(captured.contains(&"http://127.0.0.1:8080/copy"));

        // The same index the writer would have written, and cdxj-indexer's.
        let ours = our_lines(&s.index_dir, &done);
        assert_eq!(ours, expected_lines, "{what}");
        assert_eq!(ours, indexer_lines(&venv, &done), "{what}");
        let (ok, out) = warcio(&venv, &["check", "-v", done.to_str().unwrap()]);
        assert!(ok, "{what}: warcio check failed:\n{out}");
        let leftovers: Vec<_> = fs::read_dir(&s.index_dir)
            .unwrap()
            .map(|e| file_name(&e.unwrap().path()))
            .filter(|n| !n.ends_with(".cdxj"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        // Nothing left to do the second time.
        assert!(recover_open_files(&s).unwrap().is_empty());
    }
}

#[test]
fn every_cut_point_keeps_exactly_the_whole_records_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(settings(dir.path(), 1 << 40, WarcVersion::V1_1)).unwrap();
    for mut c in [simple_case(), simple_case()] {
        write_case(&mut w, &mut c);
    }
    let data = fs::read(crash(w)).unwrap();
    let ends: Vec<u64> = members(&data).iter().map(|(o, l, _)| o + l).collect();
    assert_eq!(ends.len(), 5);
    let mut cuts: Vec<u64> = ends.iter().flat_map(|&e| [e - 1, e, e + 1]).collect();
    cuts.retain(|&c| c <= data.len() as u64);
    cuts.extend([1, 10, 20]);
    for cut in cuts {
        let dir = tempfile::tempdir().unwrap();
        let s = settings(dir.path(), 1 << 40, WarcVersion::V1_1);
        fs::create_dir_all(&s.warc_dir).unwrap();
        let open = s
            .warc_dir
            .join("ARCHIVER-20261130233813123-00000-1~h.warc.gz.open");
        fs::write(&open, &data[..cut as usize]).unwrap();
        let r = recover_open_files(&s).unwrap().remove(0);
        let whole = ends.iter().filter(|&&e| e <= cut).count();
        let kept_bytes = ends
            .iter()
            .copied()
            .filter(|&e| e <= cut)
            .max()
            .unwrap_or(0);
        assert_eq!(r.records_kept, whole, "cut at {cut}");
        assert_eq!(r.bytes_cut, cut - kept_bytes, "cut at {cut}");
        assert_eq!(r.removed, whole == 0, "cut at {cut}");
        let index = s
            .index_dir
            .join("ARCHIVER-20261130233813123-00000-1~h.cdxj");
        if whole == 0 {
            assert!(!r.path.exists() && !open.exists() && !index.exists());
        } else {
            assert_eq!(fs::read(&r.path).unwrap(), &data[..kept_bytes as usize]);
            // Responses sit at members 1 and 3.
            let responses = ends
                .iter()
                .skip(1)
                .step_by(2)
                .filter(|&&e| e <= cut)
                .count();
            let lines = fs::read_to_string(&index).unwrap().lines().count();
            assert_eq!(lines, responses, "cut at {cut}");
        }
    }
}

#[test]
fn a_file_cut_inside_its_first_record_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path(), 1 << 40, WarcVersion::V1_1);
    let mut w = WarcWriter::new(s.clone()).unwrap();
    write_case(&mut w, &mut simple_case());
    let open = crash(w);
    let data = fs::read(&open).unwrap();
    let first = members(&data)[0].1;
    fs::write(&open, &data[..first as usize / 2]).unwrap();
    let got = recover_open_files(&s).unwrap();
    assert_eq!(
        got,
        vec![Recovered {
            path: open.clone(),
            removed: true,
            records_kept: 0,
            bytes_cut: first / 2,
            records: Vec::new(),
        }]
    );
    assert!(!open.exists() && !open.with_extension("").exists());
    assert_eq!(fs::read_dir(&s.index_dir).unwrap().count(), 0);
}

#[test]
fn an_empty_open_file_is_removed_and_others_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path(), 1 << 40, WarcVersion::V1_1);
    fs::create_dir_all(&s.warc_dir).unwrap();
    let empty = s
        .warc_dir
        .join("ARCHIVER-20261130233813123-00003-1~h.warc.gz.open");
    fs::write(&empty, b"").unwrap();
    // Not ours to touch: other suffixes, and a folder with the suffix.
    let other = s.warc_dir.join("notes.open");
    fs::write(&other, b"x").unwrap();
    fs::create_dir(s.warc_dir.join("odd.warc.gz.open")).unwrap();
    let got = recover_open_files(&s).unwrap();
    assert_eq!(got.len(), 1);
    assert!(got[0].removed);
    assert_eq!((got[0].records_kept, got[0].bytes_cut), (0, 0));
    assert!(!empty.exists());
    assert!(other.exists());
    // Then a writer starts normally in the same folder.
    let mut w = WarcWriter::new(s).unwrap();
    write_case(&mut w, &mut simple_case());
    w.close().unwrap();
}

#[test]
fn recovery_without_a_folder_or_files_does_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path(), 1 << 40, WarcVersion::V1_1);
    assert!(recover_open_files(&s).unwrap().is_empty());
    assert!(!s.index_dir.exists());
}

#[test]
fn recovery_never_overwrites_a_closed_file_and_changes_nothing_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path(), 1 << 40, WarcVersion::V1_1);
    let mut w = WarcWriter::new(s.clone()).unwrap();
    write_case(&mut w, &mut simple_case());
    let first = crash(w);
    append(&first, b"torn");
    let mut w = WarcWriter::new(s.clone()).unwrap();
    write_case(&mut w, &mut simple_case());
    let second = crash(w);
    assert!(first < second);
    let done = second.with_extension("");
    fs::write(&done, b"someone else's").unwrap();
    let before = [fs::read(&first).unwrap(), fs::read(&second).unwrap()];
    let err = recover_open_files(&s).unwrap_err();
    assert!(matches!(err, WarcError::RecoverClash { .. }), "{err}");
    assert!(err.to_string().contains(&file_name(&done)), "{err}");
    // Not even the first file, which could have been closed, was touched.
    assert_eq!(
        [fs::read(&first).unwrap(), fs::read(&second).unwrap()],
        before
    );
    assert_eq!(fs::read(&done).unwrap(), b"someone else's");
    assert_eq!(fs::read_dir(&s.index_dir).unwrap().count(), 0);
}

#[test]
fn a_recovered_crawl_writes_on_after_its_last_serial() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path(), 1 << 40, WarcVersion::V1_1);
    let mut w = WarcWriter::new(s.clone()).unwrap();
    write_case(&mut w, &mut simple_case());
    let open = crash(w);
    assert!(file_name(&open).contains("-00000-"));
    recover_open_files(&s).unwrap();
    let mut w = WarcWriter::new(s).unwrap();
    write_case(&mut w, &mut simple_case());
    w.close().unwrap();
    assert!(file_name(&w.closed_files()[0]).contains("-00001-"));
}

/// Whole gzip members the writer never makes end what recovery keeps, as a torn one does: a
/// block running past its Content-Length, two records in one member, a plain WARC.
#[test]
fn recovery_keeps_nothing_from_a_member_the_writer_would_not_write() {
    let record = |len: usize, body: &str| {
        format!(
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: http://h/x\r\n\
             WARC-Date: 2026-11-30T23:38:13Z\r\nContent-Length: {len}\r\n\r\n{body}\r\n\r\n"
        )
    };
    let good = gzip(record(5, "hello").as_bytes());
    let long = gzip(record(3, "hello").as_bytes());
    let two = gzip([record(5, "hello"), record(5, "world")].concat().as_bytes());
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        ("block past its length", [&good[..], &long[..]].concat(), 1),
        (
            "two records in a member",
            [&good[..], &two[..], &good[..]].concat(),
            1,
        ),
        ("a plain WARC", record(5, "hello").into_bytes(), 0),
    ];
    for (what, data, whole) in cases {
        let dir = tempfile::tempdir().unwrap();
        let s = settings(dir.path(), 1 << 40, WarcVersion::V1_1);
        fs::create_dir_all(&s.warc_dir).unwrap();
        let open = s
            .warc_dir
            .join("ARCHIVER-20261130233813123-00000-1~h.warc.gz.open");
        fs::write(&open, &data).unwrap();
        let r = recover_open_files(&s).unwrap().remove(0);
        assert_eq!(r.records_kept, whole, "{what}");
        assert_eq!(r.removed, whole == 0, "{what}");
        let kept = if whole == 0 { 0 } else { good.len() };
        assert_eq!(r.bytes_cut, (data.len() - kept) as u64, "{what}");
        if whole > 0 {
            assert_eq!(fs::read(&r.path).unwrap(), good, "{what}");
        }
    }
}
