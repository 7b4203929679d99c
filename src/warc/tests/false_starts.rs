//! Inputs the `warc` fuzz target found slow: after damage the walk reads a head from every
//! `WARC/` line it finds, so a long run of such lines that never reaches a blank line cost
//! `MAX_HEAD_LINES` line reads per line (29,000 lines took 11.6 s at 4096). The walk still
//! reports the damage and finds the record after it; `tools/fuzz.sh` runs with `-timeout=10`.

use std::io::{self, BufRead};

use crate::warc::head::{WarcHead, MAX_HEAD_LINES};
use crate::warc::read::{walk, Problem, Span, Visitor};

#[derive(Default)]
struct Count {
    records: Vec<(u64, Option<String>)>,
    problems: Vec<Problem>,
}

impl Visitor for Count {
    type Item = ();
    fn record(&mut self, _: u64, _: &WarcHead, _: &mut dyn BufRead) -> io::Result<()> {
        Ok(())
    }
    fn done(&mut self, span: Span, head: WarcHead, _: ()) {
        self.records.push((span.offset, head.target_uri()));
    }
    fn problem(&mut self, problem: Problem) {
        self.problems.push(problem);
    }
}

#[test]
fn a_run_of_version_lines_without_a_blank_line_is_damage_then_the_next_record_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("false-starts.warc");
    let mut data = b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: http://a.test/\r\n\
                     Content-Length: 2\r\n\r\nok\r\n\r\n"
        .to_vec();
    let garbage_at = data.len() as u64;
    for _ in 0..(8 * MAX_HEAD_LINES) {
        data.extend_from_slice(b"WARC/1.0\n");
    }
    data.extend_from_slice(b"\n");
    let last_at = data.len() as u64;
    data.extend_from_slice(
        b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: http://b.test/\r\n\
          Content-Length: 2\r\n\r\nok\r\n\r\n",
    );
    std::fs::write(&path, &data).unwrap();
    let mut count = Count::default();
    walk(&path, &mut count).unwrap();
    let uris: Vec<(u64, Option<String>)> = count.records.clone();
    assert_eq!(uris.first(), Some(&(0, Some("http://a.test/".to_string()))));
    assert_eq!(
        uris.last(),
        Some(&(last_at, Some("http://b.test/".to_string())))
    );
    let first = count.problems.first().expect("the run is damage");
    assert_eq!(first.offset, garbage_at);
    assert!(
        first.message.contains("WARC header lines"),
        "{}",
        first.message
    );
}
