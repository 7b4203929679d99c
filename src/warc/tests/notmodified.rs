//! A 304 written as a server-not-modified revisit: the three records, what warcio and
//! cdxj-indexer make of them.

use super::*;
use crate::warc::NotModified;

const ANSWER_304: &[u8] =
    b"HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nDate: Tue, 01 Dec 2026 08:00:00 GMT\r\n\r\n";

fn not_modified<'a>(orig_uri: &'a str, orig: &'a Written) -> NotModified<'a> {
    let mut rv = revisit(orig_uri, orig_uri, orig);
    rv.request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nIf-None-Match: \"v1\"\r\n\r\n";
    NotModified {
        revisit: rv,
        answer: ANSWER_304,
    }
}

#[test]
fn a_304_is_an_empty_revisit_its_request_and_its_head_as_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, WarcVersion::V1_1)).unwrap();
    let mut orig = simple_case();
    write_case(&mut w, &mut orig);
    let first = orig.written.clone().unwrap();
    let nm = w
        .write_not_modified(not_modified(&orig.uri, &first))
        .unwrap();
    w.close().unwrap();
    let all = members(&fs::read(&w.closed_files()[0]).unwrap());
    // warcinfo, response, request, then revisit, request, metadata.
    assert_eq!(all.len(), 6);
    assert_eq!((all[3].0, all[3].1), (nm.offset, nm.length));
    let h = header_lines(&all[3].2);
    assert_eq!(value(&h, "WARC-Type"), Some("revisit"));
    assert_eq!(
        value(&h, "WARC-Profile"),
        Some("http://netpreserve.org/warc/1.1/revisit/server-not-modified")
    );
    assert_eq!(value(&h, "WARC-Refers-To"), Some(first.record_id.as_str()));
    assert_eq!(
        value(&h, "WARC-Refers-To-Target-URI"),
        Some(orig.uri.as_str())
    );
    assert_eq!(
        value(&h, "WARC-Refers-To-Date"),
        Some(first.warc_date.as_str())
    );
    assert_eq!(
        value(&h, "WARC-Payload-Digest"),
        orig.payload_digest.as_deref()
    );
    assert_eq!(value(&h, "Content-Length"), Some("0"));
    let req = header_lines(&all[4].2);
    assert_eq!(value(&req, "WARC-Type"), Some("request"));
    assert_eq!(
        value(&req, "WARC-Concurrent-To"),
        Some(nm.record_id.as_str())
    );
    let meta = header_lines(&all[5].2);
    assert_eq!(value(&meta, "WARC-Type"), Some("metadata"));
    assert_eq!(
        value(&meta, "WARC-Concurrent-To"),
        Some(nm.record_id.as_str())
    );
    assert_eq!(
        value(&meta, "Content-Type"),
        Some("application/warc-fields")
    );
    let text = String::from_utf8_lossy(&all[5].2);
    assert!(
        text.contains("http-status-line: HTTP/1.1 304 Not Modified\r\n"),
        "{text}"
    );
    assert!(text.contains("http-header: ETag: \"v1\"\r\n"), "{text}");
    assert!(text.contains(&format!("http-response-digest: {}", sha1_of(ANSWER_304))));
}

#[test]
fn not_modified_records_pass_warcio_and_index_like_cdxj_indexer() {
    let venv = required_venv();
    for version in [WarcVersion::V1_1, WarcVersion::V1_0] {
        let dir = tempfile::tempdir().unwrap();
        let mut w = WarcWriter::new(settings(dir.path(), 1 << 30, version)).unwrap();
        let mut orig = simple_case();
        write_case(&mut w, &mut orig);
        let first = orig.written.clone().unwrap();
        w.write_not_modified(not_modified(&orig.uri, &first))
            .unwrap();
        w.close().unwrap();
        let path = w.closed_files()[0].clone();
        let (ok, out) = warcio(&venv, &["check", "-v", path.to_str().unwrap()]);
        assert!(ok, "warcio check failed:\n{out}");
        let ours = our_lines(&dir.path().join("indexes"), &path);
        assert_eq!(ours, indexer_lines(&venv, &path));
        // The response and the revisit; the metadata record is not indexed.
        assert_eq!(ours.len(), 2, "{ours:?}");
        let revisit = ours.iter().find(|l| l.contains("warc/revisit")).unwrap();
        let digest = orig.payload_digest.as_deref().unwrap();
        assert!(revisit.contains(digest), "{revisit}");
    }
}

/// A crash after a 304: recovery keeps its three records and rebuilds the index the writer
/// would have written (the revisit's line, not the metadata record's).
#[test]
fn a_crash_after_a_304_recovers_the_same_index() {
    let venv = required_venv();
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path(), 1 << 40, WarcVersion::V1_1);
    let mut w = WarcWriter::new(s.clone()).unwrap();
    let mut orig = simple_case();
    write_case(&mut w, &mut orig);
    let first = orig.written.clone().unwrap();
    w.write_not_modified(not_modified(&orig.uri, &first))
        .unwrap();
    let mut expected = w
        .current
        .as_ref()
        .unwrap()
        .cdx_lines
        .in_memory()
        .unwrap()
        .to_vec();
    cdx::sort_lines(&mut expected);
    let open = w.current_path().unwrap().to_path_buf();
    std::mem::forget(w);
    let got = crate::warc::recover_open_files(&s).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].records_kept, 1 + 2 + 3);
    let done = open.with_extension("");
    let ours = our_lines(&s.index_dir, &done);
    assert_eq!(ours, expected);
    assert_eq!(ours, indexer_lines(&venv, &done));
}
