//! One record as bytes: its WARC header block in a fixed order, its gzip member, and the record
//! pairs of an exchange (response or revisit, then the request pointing at it), the warcinfo,
//! and the CDXJ line of a capture.

use std::io::{self, Read};

use chrono::Utc;

use super::head::{push_field, WarcHead};
use super::open::OpenWarc;
use super::{io_err, Exchange, Revisit, WarcError, WarcSettings, WarcVersion};
use crate::cdx::{self, CdxRecord};
use crate::spool::sha1_of;

pub(super) const CONTENT_TYPE_RESPONSE: &str = "application/http;msgtype=response";
pub(super) const CONTENT_TYPE_REQUEST: &str = "application/http;msgtype=request";

/// What a capture record's CDXJ line is made of. Built by the writer for each response or
/// revisit it writes and by crash recovery from the records it re-reads, so both produce the
/// same line for the same record.
pub(super) struct Capture<'a> {
    pub(super) url: &'a str,
    pub(super) warc_date: &'a str,
    pub(super) record_type: &'a str,
    pub(super) content_type: Option<&'a str>,
    /// Start of the record block (status line, headers, maybe some body).
    pub(super) http_head: &'a [u8],
    pub(super) payload_digest: Option<&'a str>,
}

impl Capture<'_> {
    /// The CDXJ line of this record at `offset` (member length `length`) in WARC `filename`.
    pub(super) fn line(&self, filename: &str, offset: u64, length: u64) -> String {
        cdx::cdxj_line(&CdxRecord {
            url: self.url,
            warc_date: self.warc_date,
            record_type: self.record_type,
            content_type: self.content_type,
            http_head: self.http_head,
            payload_digest: self.payload_digest,
            length,
            offset,
            filename,
        })
    }
}

/// Response record then request record; returns the response member's offset and length.
pub(super) fn write_pair(
    cur: &mut OpenWarc,
    version: WarcVersion,
    date: &str,
    response_id: &str,
    ex: &mut Exchange<'_>,
) -> Result<(u64, u64), WarcError> {
    let uri = ex.target_uri;
    let ip = ex.ip.map(|ip| ip.to_string());
    let mut head = new_head(version);
    head.push("WARC-Type", "response");
    head.push("WARC-Record-ID", response_id);
    head.push("WARC-Date", date);
    head.push("WARC-Target-URI", uri);
    if let Some(ip) = &ip {
        head.push("WARC-IP-Address", ip);
    }
    head.push("WARC-Warcinfo-ID", &cur.warcinfo_id);
    head.push("WARC-Block-Digest", &ex.response.digest());
    if let Some(d) = &ex.payload_digest {
        head.push("WARC-Payload-Digest", d);
    }
    if let Some(t) = ex.truncated {
        head.push("WARC-Truncated", t);
    }
    head.push("Content-Type", CONTENT_TYPE_RESPONSE);
    let len = ex.response.len();
    let head = head.to_block(len);
    let mut body = ex.response.reader().map_err(|source| WarcError::Spool {
        uri: uri.to_string(),
        source,
    })?;
    let response = write_record(cur, &head, &mut body, len, uri)?;
    drop(body);
    let request = Request {
        uri,
        ip: ip.as_deref(),
        date,
        concurrent_to: response_id,
        bytes: ex.request,
    };
    write_request(cur, version, &request)?;
    Ok(response)
}

/// Revisit record then request record; returns the revisit member's offset and length.
/// Header order follows the response record's, with the revisit fields before the digests.
pub(super) fn write_revisit_pair(
    cur: &mut OpenWarc,
    version: WarcVersion,
    date: &str,
    revisit_id: &str,
    rv: &Revisit<'_>,
) -> Result<(u64, u64), WarcError> {
    write_revisit_as(
        cur,
        version,
        (date, revisit_id),
        rv,
        version.revisit_profile(),
    )
}

/// [`write_revisit_pair`] with the given WARC-Profile.
pub(super) fn write_revisit_as(
    cur: &mut OpenWarc,
    version: WarcVersion,
    (date, revisit_id): (&str, &str),
    rv: &Revisit<'_>,
    profile: &str,
) -> Result<(u64, u64), WarcError> {
    let ip = rv.ip.map(|ip| ip.to_string());
    let mut head = new_head(version);
    head.push("WARC-Type", "revisit");
    head.push("WARC-Record-ID", revisit_id);
    head.push("WARC-Date", date);
    head.push("WARC-Target-URI", rv.target_uri);
    if let Some(ip) = &ip {
        head.push("WARC-IP-Address", ip);
    }
    head.push("WARC-Warcinfo-ID", &cur.warcinfo_id);
    head.push("WARC-Profile", profile);
    if let Some(id) = rv.refers_to_record_id {
        head.push("WARC-Refers-To", id);
    }
    head.push("WARC-Refers-To-Target-URI", rv.refers_to_uri);
    head.push("WARC-Refers-To-Date", rv.refers_to_date);
    head.push("WARC-Block-Digest", &sha1_of(rv.http_head));
    head.push("WARC-Payload-Digest", &rv.payload_digest);
    head.push("Content-Type", CONTENT_TYPE_RESPONSE);
    let len = rv.http_head.len() as u64;
    let head = head.to_block(len);
    let mut block = rv.http_head;
    let revisit = write_record(cur, &head, &mut block, len, rv.target_uri)?;
    let request = Request {
        uri: rv.target_uri,
        ip: ip.as_deref(),
        date,
        concurrent_to: revisit_id,
        bytes: rv.request,
    };
    write_request(cur, version, &request)?;
    Ok(revisit)
}

/// The request half of an exchange, written after the record it belongs to.
struct Request<'a> {
    uri: &'a str,
    ip: Option<&'a str>,
    date: &'a str,
    /// Record ID of the response or revisit.
    concurrent_to: &'a str,
    bytes: &'a [u8],
}

/// Writes the request record that goes with a response or revisit (WARC-Concurrent-To).
fn write_request(
    cur: &mut OpenWarc,
    version: WarcVersion,
    rq: &Request<'_>,
) -> Result<(u64, u64), WarcError> {
    let mut head = new_head(version);
    head.push("WARC-Type", "request");
    head.push("WARC-Record-ID", &record_id());
    head.push("WARC-Date", rq.date);
    head.push("WARC-Target-URI", rq.uri);
    if let Some(ip) = rq.ip {
        head.push("WARC-IP-Address", ip);
    }
    head.push("WARC-Concurrent-To", rq.concurrent_to);
    head.push("WARC-Warcinfo-ID", &cur.warcinfo_id);
    head.push("WARC-Block-Digest", &sha1_of(rq.bytes));
    head.push("Content-Type", CONTENT_TYPE_REQUEST);
    let len = rq.bytes.len() as u64;
    let head = head.to_block(len);
    let mut block = rq.bytes;
    write_record(cur, &head, &mut block, len, rq.uri)
}

/// Writes one record as one gzip member at the end of the file; returns (offset, length).
/// The block is streamed in pieces, never held whole, through the file's reused encoder and
/// copy buffer. Written straight to the `File` (no buffer is left holding any of it), so once
/// this returns the member is with the OS.
pub(super) fn write_record(
    cur: &mut OpenWarc,
    head: &[u8],
    block: &mut dyn Read,
    block_len: u64,
    uri: &str,
) -> Result<(u64, u64), WarcError> {
    let OpenWarc {
        file,
        open_path,
        gz,
        copy,
        ..
    } = cur;
    let path = &*open_path;
    gz.begin();
    gz.add(head, file).map_err(io_err(path))?;
    let mut remaining = block_len;
    while remaining > 0 {
        let want = remaining.min(copy.len() as u64) as usize;
        let n = match block.read(&mut copy[..want]) {
            Ok(0) => {
                return Err(WarcError::SpoolShort {
                    uri: uri.to_string(),
                    got: block_len - remaining,
                    expected: block_len,
                })
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(WarcError::Spool {
                    uri: uri.to_string(),
                    source,
                })
            }
        };
        gz.add(&copy[..n], file).map_err(io_err(path))?;
        remaining -= n as u64;
    }
    gz.add(b"\r\n\r\n", file).map_err(io_err(path))?;
    let length = gz.finish(file).map_err(io_err(path))?;
    let offset = cur.size;
    cur.size += length;
    Ok((offset, length))
}

/// The warcinfo record that opens every file.
pub(super) fn write_warcinfo(cur: &mut OpenWarc, settings: &WarcSettings) -> Result<(), WarcError> {
    let version = settings.version;
    let mut block = String::new();
    let mut field = |name: &str, value: &str| push_field(&mut block, name, value);
    field("software", concat!("archiver/", env!("CARGO_PKG_VERSION")));
    field("format", &format!("WARC File Format {}", version.number()));
    field("conformsTo", version.conforms_to());
    for (name, value) in &settings.info {
        field(name, value);
    }
    let block = block.into_bytes();
    let mut head = new_head(version);
    head.push("WARC-Type", "warcinfo");
    head.push("WARC-Record-ID", &cur.warcinfo_id);
    head.push("WARC-Date", &version.format_date(Utc::now()));
    head.push("WARC-Filename", &cur.name);
    head.push("WARC-Block-Digest", &sha1_of(&block));
    head.push("Content-Type", "application/warc-fields");
    let head = head.to_block(block.len() as u64);
    let uri = cur.name.clone();
    write_record(cur, &head, &mut &block[..], block.len() as u64, &uri)?;
    Ok(())
}

/// A record's head to be filled in the order of the file.
pub(super) fn new_head(version: WarcVersion) -> WarcHead {
    WarcHead::to_write(version.number())
}

/// `<urn:uuid:…>` with a random (v4) UUID.
pub(super) fn record_id() -> String {
    format!("<urn:uuid:{}>", uuid::Uuid::new_v4())
}
