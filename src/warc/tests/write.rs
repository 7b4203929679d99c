//! The writer: records, headers, rotation, names, rollback, as other tools read them.

use super::*;

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
    let leftovers = names_not_ending(&dir.path().join("indexes"), ".cdxj");
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
    let open = names_not_ending(&dir.path().join("warcs"), ".warc.gz");
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
