//! Revisit records: what they point at, and that warcio and cdxj-indexer agree.

use super::*;

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
