//! A `304 Not Modified` answer to a conditional request, as three records:
//!
//! 1. a `revisit` with profile `…/revisit/server-not-modified` (WARC 1.1 §6.7.3) naming the
//!    earlier capture (`WARC-Refers-To-Target-URI`, `-Date`, and `WARC-Refers-To` when its
//!    record ID is known), carrying the earlier payload's `WARC-Payload-Digest`, and an
//!    **empty block**;
//! 2. the request, `WARC-Concurrent-To` the revisit, as sent (with its `If-None-Match` /
//!    `If-Modified-Since`);
//! 3. a `metadata` record, `WARC-Concurrent-To` the revisit, `application/warc-fields`, holding
//!    the 304's own status line and header lines as received (and its digest).
//!
//! Why the block is empty: pywb 2.10 (`ResolvingLoader.load_headers_and_payload`) answers a
//! revisit whose block holds a 3xx status line with that status and no body, so the 304's head
//! in the revisit would replay as an empty 304. A revisit with no HTTP head makes pywb take
//! the status line, headers and payload of the capture it finds through
//! `WARC-Refers-To-Target-URI` near `WARC-Refers-To-Date` with the same digest: the page
//! replays at the new date byte for byte as first archived. The 304's head is not lost: it
//! is in the metadata record, which cdxj-indexer (and so this crawler's CDXJ) leaves out of
//! the index because it is `application/warc-fields`, so replay never lands on it.

use super::check::check_revisit_fields;
use super::open::OpenWarc;
use super::record::{new_head, record_id, write_record, write_revisit_as, Capture};
use super::writer::WarcWriter;
use super::{Revisit, WarcError, WarcVersion, Written};
use crate::spool::sha1_of;

/// A 304 and the earlier capture it confirms.
pub struct NotModified<'a> {
    /// The earlier capture, and this exchange's URI, date, address and request bytes; its
    /// `http_head` is ignored (the revisit's block is empty, see the module's notes) and its
    /// `payload_digest` is the earlier capture's.
    pub revisit: Revisit<'a>,
    /// The 304 exactly as received (status line, headers, and a body if the server sent one).
    pub answer: &'a [u8],
}

impl WarcWriter {
    /// Writes the three records of a 304; returns where the revisit went (its CDXJ line is
    /// the one replay finds).
    pub fn write_not_modified(&mut self, nm: NotModified<'_>) -> Result<Written, WarcError> {
        check_revisit_fields(&nm.revisit)?;
        let version = self.version();
        let date = version.format_date(nm.revisit.date);
        let id = record_id();
        let empty = Revisit {
            http_head: &[],
            ..nm.revisit.clone()
        };
        let capture = Capture {
            url: empty.target_uri,
            warc_date: &date,
            record_type: "revisit",
            content_type: Some(super::record::CONTENT_TYPE_RESPONSE),
            http_head: &[],
            payload_digest: Some(&empty.payload_digest),
        };
        let answer = nm.answer;
        self.append(&capture, &id, |cur, version| {
            let profile = version.not_modified_profile();
            let at = write_revisit_as(cur, version, (&date, &id), &empty, profile)?;
            let fields = answer_fields(answer);
            write_metadata(cur, version, (&date, &id), empty.target_uri, &fields)?;
            Ok(at)
        })
    }
}

/// The 304's head as WARC fields: `http-status-line`, then one `http-header` per header line,
/// each verbatim; the digest of every byte received; the length of a body, if any.
pub(super) fn answer_fields(answer: &[u8]) -> Vec<u8> {
    let head = super::http_head(answer).unwrap_or(answer);
    let mut out = Vec::with_capacity(head.len() + 128);
    let lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty());
    for (n, line) in lines.enumerate() {
        let name: &[u8] = if n == 0 {
            b"http-status-line"
        } else {
            b"http-header"
        };
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("http-response-digest: {}\r\n", sha1_of(answer)).as_bytes());
    let body = answer.len() - head.len();
    if body > 0 {
        out.extend_from_slice(format!("http-body-length: {body}\r\n").as_bytes());
    }
    out
}

/// The metadata record of a 304, concurrent to its revisit.
fn write_metadata(
    cur: &mut OpenWarc,
    version: WarcVersion,
    (date, revisit_id): (&str, &str),
    uri: &str,
    fields: &[u8],
) -> Result<(u64, u64), WarcError> {
    let mut head = new_head(version);
    head.push("WARC-Type", "metadata");
    head.push("WARC-Record-ID", &record_id());
    head.push("WARC-Date", date);
    head.push("WARC-Target-URI", uri);
    head.push("WARC-Concurrent-To", revisit_id);
    head.push("WARC-Warcinfo-ID", &cur.warcinfo_id);
    head.push("WARC-Block-Digest", &sha1_of(fields));
    head.push("Content-Type", "application/warc-fields");
    let len = fields.len() as u64;
    let head = head.to_block(len);
    write_record(cur, &head, &mut &fields[..], len, uri)
}
