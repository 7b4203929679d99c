//! Crash recovery of `.open` files.

use super::*;

/// What a killed process leaves: the writer vanishes without closing its `.open` file.
fn crash(w: WarcWriter) -> PathBuf {
    let open = w.current_path().unwrap().to_path_buf();
    std::mem::forget(w);
    open
}

/// A writer on `s` that wrote one exchange and "crashed": its `.open` file.
fn crashed_after_one_exchange(s: &WarcSettings) -> PathBuf {
    let mut w = WarcWriter::new(s.clone()).unwrap();
    write_case(&mut w, &mut simple_case());
    crash(w)
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
        let leftovers = names_not_ending(&s.index_dir, ".cdxj");
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
    let open = crashed_after_one_exchange(&s);
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
    let first = crashed_after_one_exchange(&s);
    append(&first, b"torn");
    let second = crashed_after_one_exchange(&s);
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
    let open = crashed_after_one_exchange(&s);
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
