//! The HTTP message inside a WARC record, for the commands that look into captures: reading the
//! head off a block, its header fields, and one capture read back from its WARC through the one walker ([`crate::warc::read`]) with its codings undone
//! (`diff --url` and `diff`'s word diff, `wacz`'s page titles).

use std::io::{self, BufRead, Read};
use std::path::Path;

use crate::extract::{decode_body, Decoded};
use crate::warc::chunked::dechunk;
use crate::warc::head::WarcHead;
use crate::warc::read::{walk_range, IndexError, Problem, Span, Visitor};
pub(crate) use crate::warc::{header, is_chunked};

/// The HTTP head read off a block to find where the payload starts, at most.
pub(crate) const MAX_HTTP_HEAD: usize = 1024 * 1024;

/// Reads an HTTP head (through the first empty line) into `head`; `false` when the block
/// ended (or grew too long) first.
pub(crate) fn read_head(block: &mut dyn BufRead, head: &mut Vec<u8>) -> io::Result<bool> {
    loop {
        let start = head.len();
        let n = Read::take(&mut *block, 64 * 1024).read_until(b'\n', head)?;
        if n == 0 || head.len() > MAX_HTTP_HEAD {
            return Ok(false);
        }
        let line = &head[start..];
        if line == b"\r\n" || line == b"\n" {
            return Ok(true);
        }
    }
}

/// A captured HTTP message read back from its WARC.
#[derive(Debug)]
pub(crate) struct Payload {
    /// The status line and header fields, as text.
    pub head: String,
    /// The body, transfer and content codings undone, at most the cap asked for.
    pub body: Decoded,
    /// The head says chunked but the chunk framing broke ([`dechunk`]'s `false`).
    pub bad_chunking: bool,
}

impl Payload {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        header(&self.head, name)
    }
}

/// The HTTP message in the record at `offset` of the WARC at `path` (as a CDXJ line gives
/// them): at most `max_block` bytes of the block are read and at most `max_body` decoded.
/// `Ok(None)` when the block holds no HTTP head. The record is read through the walker like
/// every other, so a damaged one is an error saying what the walker found.
pub(crate) fn read_payload(
    path: &Path,
    offset: u64,
    max_block: u64,
    max_body: usize,
) -> Result<Option<Payload>, IndexError> {
    let mut one = OneRecord {
        offset,
        max_block,
        max_body,
        found: None,
        problem: None,
    };
    // Records starting in offset..offset+1: the one record there. Skimming leaves the rest of
    // a large block unread, as a reader of one record should.
    walk_range(path, &mut one, true, offset, offset + 1)?;
    match one.found {
        Some(payload) => Ok(payload),
        None => Err(IndexError::NoRecordAt {
            path: path.to_path_buf(),
            offset,
            message: one
                .problem
                .unwrap_or_else(|| "the file ends there".to_string()),
        }),
    }
}

/// The visitor of [`read_payload`]: keeps what the record at `offset` holds.
struct OneRecord {
    offset: u64,
    max_block: u64,
    max_body: usize,
    found: Option<Option<Payload>>,
    problem: Option<String>,
}

impl Visitor for OneRecord {
    type Item = Option<Payload>;

    fn record(
        &mut self,
        _offset: u64,
        _head: &WarcHead,
        block: &mut dyn BufRead,
    ) -> io::Result<Option<Payload>> {
        let mut block = block.take(self.max_block);
        let mut head = Vec::new();
        if !read_head(&mut block, &mut head)? {
            return Ok(None);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let mut raw = Vec::new();
        block.read_to_end(&mut raw)?;
        let (raw, framing_ok) = if is_chunked(&head) {
            dechunk(&raw)
        } else {
            (raw, true)
        };
        let body = decode_body(header(&head, "content-encoding"), &raw[..], self.max_body);
        Ok(Some(Payload {
            head,
            body,
            bad_chunking: !framing_ok,
        }))
    }

    fn done(&mut self, span: Span, _head: WarcHead, item: Option<Payload>) {
        if span.offset == self.offset && self.found.is_none() {
            self.found = Some(item);
        }
    }

    fn problem(&mut self, problem: Problem) {
        if self.problem.is_none() {
            self.problem = Some(problem.message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn member(kind: &str, block: &[u8]) -> Vec<u8> {
        let mut record = format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Target-URI: http://a.test/\r\n\
             WARC-Record-ID: <urn:uuid:{kind}>\r\nWARC-Date: 2026-12-01T00:00:00Z\r\n\
             Content-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        record.extend_from_slice(block);
        record.extend_from_slice(b"\r\n\r\n");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&record).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn a_capture_is_read_back_at_its_offset_with_its_codings_undone() {
        let mut body = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        body.write_all(b"<title>Hi</title>").unwrap();
        let body = body.finish().unwrap();
        let mut block = format!(
            "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            body.len()
        )
        .into_bytes();
        block.extend_from_slice(&body);
        block.extend_from_slice(b"\r\n0\r\n\r\n");
        let info = member("warcinfo", b"software: test\r\n");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.warc.gz");
        std::fs::write(&path, [info.clone(), member("response", &block)].concat()).unwrap();

        let p = read_payload(&path, info.len() as u64, 1 << 20, 1 << 20)
            .unwrap()
            .unwrap();
        assert_eq!(p.body.bytes, b"<title>Hi</title>");
        assert!(!p.bad_chunking && p.body.error.is_none());
        assert_eq!(p.header("content-encoding"), Some("gzip"));
        // A block without an HTTP head, and an offset where no record starts.
        assert!(read_payload(&path, 0, 1 << 20, 1 << 20).unwrap().is_none());
        assert!(read_payload(&path, 3, 1 << 20, 1 << 20).is_err());
    }

    #[test]
    fn header_fields_are_found_in_any_case() {
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTRANSFER-ENCODING: Chunked\r\n\r\n";
        assert_eq!(header(head, "content-type"), Some("text/html"));
        assert_eq!(header(head, "content-encoding"), None);
        assert!(is_chunked(head));
        assert!(!is_chunked("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"));
    }
}
