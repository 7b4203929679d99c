//! The WARC format layer: the writer (records, one gzip member per record, `.open` files,
//! rotation, warcinfo and the per-WARC CDXJ index), crash recovery of `.open` files, and the one
//! reader of WARC and ARC files.
//!
//! The `warc` crate's writer is not archival grade (one gzip stream per file, lower-case headers
//! in random order, bodies in memory), so records are written here by hand. Every record is its
//! own gzip member so that a CDX offset always lands on a member boundary and a reader can start
//! decompressing there. A file carries `.open` while it is written; it is renamed only after its
//! sorted CDXJ sits in the index folder, so a finished-looking WARC always has its index.
//!
//! | file | job |
//! | --- | --- |
//! | `writer.rs` | [`WarcWriter`]: opening, appending, rolling back, rotating, closing files |
//! | `open.rs` | the file being written: its handle, names, size, CDXJ lines, gzip state |
//! | `record.rs` | one record's header block and gzip member; the exchange's record pair |
//! | `http.rs` | where the HTTP head of a response ends (a revisit stores exactly that) |
//! | `gzip.rs` | the gzip member encoder, its deflate state and buffer reused from record to record |
//! | `check.rs` | settings and header values checked before a byte is written |
//! | `naming.rs` | file names: serials, the host part, the writable probe |
//! | `recover.rs` | closing the `.open` files a crash left, through the reader |
//! | `read.rs`, `member.rs`, `head.rs` | the one reader: member walker and visitor, record heads |
//! | `arc.rs` | ARC header lines turned into WARC fields, as warcio reads them |
//! | `io.rs` | stream wrappers and file-system helpers shared by the format layer |
//! | `chunked.rs` | chunked transfer coding taken off a body read back from a record |

pub(crate) mod arc;
mod check;
pub mod chunked;
mod gzip;
pub(crate) mod head;
mod http;
pub(crate) mod io;
pub(crate) mod member;
mod naming;
mod notmodified;
mod open;
pub(crate) mod read;
mod record;
mod recover;
mod writer;

use std::io as stdio;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::spool::Spool;

pub use http::{header, http_head, is_chunked};
pub use io::save_atomically;
pub(crate) use io::sync_dir;
pub use notmodified::NotModified;
pub use recover::{recover_open_files, Recovered};
pub use writer::WarcWriter;

/// How much of a response the CDXJ indexer sees (status line, headers, a bit of body).
const INDEX_HEAD_BYTES: usize = 64 * 1024;
/// Copy buffer for streaming a spool into a gzip member.
const COPY_BUF_BYTES: usize = 64 * 1024;

/// The WARC version written in record headers and in the warcinfo `format` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WarcVersion {
    V1_0,
    #[default]
    V1_1,
}

impl WarcVersion {
    /// "1.0" or "1.1", as the profile spells it.
    pub fn parse(text: &str) -> Option<WarcVersion> {
        match text.trim() {
            "1.0" => Some(WarcVersion::V1_0),
            "1.1" => Some(WarcVersion::V1_1),
            _ => None,
        }
    }

    /// The version number, e.g. "1.1".
    pub fn number(self) -> &'static str {
        match self {
            WarcVersion::V1_0 => "1.0",
            WarcVersion::V1_1 => "1.1",
        }
    }

    /// The IIPC specification this version conforms to (warcinfo `conformsTo`).
    pub fn conforms_to(self) -> &'static str {
        match self {
            WarcVersion::V1_0 => {
                "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.0/"
            }
            WarcVersion::V1_1 => {
                "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
            }
        }
    }

    /// WARC-Profile of an identical-payload-digest revisit: each version names its own URI,
    /// and readers of a 1.0 file may only know the 1.0 one.
    pub fn revisit_profile(self) -> &'static str {
        match self {
            WarcVersion::V1_0 => "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
            WarcVersion::V1_1 => "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
        }
    }

    /// WARC-Profile of a revisit for a `304 Not Modified` answer to a conditional request
    /// (WARC 1.1 §6.7.3).
    pub fn not_modified_profile(self) -> &'static str {
        match self {
            WarcVersion::V1_0 => "http://netpreserve.org/warc/1.0/revisit/server-not-modified",
            WarcVersion::V1_1 => "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
        }
    }

    /// WARC-Date: 1.1 allows (and we want) microseconds; 1.0 only allows whole seconds.
    pub fn format_date(self, date: DateTime<Utc>) -> String {
        match self {
            WarcVersion::V1_0 => date.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            WarcVersion::V1_1 => date.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        }
    }
}

/// Where and how WARCs are written.
#[derive(Debug, Clone)]
pub struct WarcSettings {
    /// OUT/warcs
    pub warc_dir: PathBuf,
    /// OUT/indexes
    pub index_dir: PathBuf,
    /// File name prefix, e.g. "ARCHIVER".
    pub prefix: String,
    /// Rotate once a file reaches this size (compressed bytes).
    pub max_bytes: u64,
    pub version: WarcVersion,
    /// Extra warcinfo fields in order (operator, robots, isPartOf, http-header-user-agent, ...).
    pub info: Vec<(String, String)>,
}

/// One HTTP exchange, exactly as it went over the wire.
pub struct Exchange<'a> {
    pub target_uri: &'a str,
    /// When the request started.
    pub date: DateTime<Utc>,
    pub ip: Option<IpAddr>,
    /// Exact bytes sent.
    pub request: &'a [u8],
    /// Exact bytes received; its `digest()` is the block digest.
    pub response: &'a mut Spool,
    /// `sha1:...` over the entity body after transfer decoding (computed by the fetcher).
    pub payload_digest: Option<String>,
    /// `Some("length")` / `Some("time")` → WARC-Truncated.
    pub truncated: Option<&'a str>,
}

/// A response whose payload was archived before: only its HTTP head is stored, and the record
/// points at the original capture (WARC 1.1 §6.7.2, identical-payload-digest profile).
///
/// pywb replays it by looking up `refers_to_uri` near `refers_to_date` with the same payload
/// digest in its index, so the original must be indexed in the collection that replays this.
#[derive(Debug, Clone)]
pub struct Revisit<'a> {
    pub target_uri: &'a str,
    /// When the request started.
    pub date: DateTime<Utc>,
    pub ip: Option<IpAddr>,
    /// Exact bytes sent.
    pub request: &'a [u8],
    /// The response's status line and headers, up to and including the blank line (see
    /// [`http_head`] to cut it from the received bytes).
    pub http_head: &'a [u8],
    /// `sha1:...` of the payload, the same value as the original's WARC-Payload-Digest.
    pub payload_digest: String,
    /// WARC-Target-URI of the original.
    pub refers_to_uri: &'a str,
    /// WARC-Date of the original, a full W3C date (`2026-11-30T23:38:13Z` or with a fraction).
    pub refers_to_date: &'a str,
    /// WARC-Record-ID of the original (`<urn:uuid:…>`), when known.
    pub refers_to_record_id: Option<&'a str>,
}

/// Where the response (or revisit) record of an exchange went.
#[derive(Debug, Clone)]
pub struct Written {
    /// Final file name (`….warc.gz`, never `.open`), as the CDXJ `filename` field has it.
    pub filename: String,
    /// Offset of the response record's gzip member.
    pub offset: u64,
    /// Compressed length of that member.
    pub length: u64,
    /// WARC-Record-ID of that record: a later revisit's WARC-Refers-To.
    pub record_id: String,
    /// WARC-Date of that record as written: a later revisit's WARC-Refers-To-Date.
    pub warc_date: String,
}

#[derive(Debug, thiserror::Error)]
pub enum WarcError {
    #[error("cannot create directory {}: {source}", .path.display())]
    CreateDir { path: PathBuf, source: stdio::Error },
    #[error("directory {} is not writable: {source}", .path.display())]
    NotWritable { path: PathBuf, source: stdio::Error },
    #[error("I/O error on {}: {source}", .path.display())]
    Io { path: PathBuf, source: stdio::Error },
    #[error("cannot read the response spool of {uri}: {source}")]
    Spool { uri: String, source: stdio::Error },
    #[error("the response spool of {uri} ended after {got} of {expected} bytes")]
    SpoolShort {
        uri: String,
        got: u64,
        expected: u64,
    },
    #[error("{field} cannot go into a WARC header: {value:?}")]
    BadHeaderValue { field: &'static str, value: String },
    #[error("bad WARC setting: {0}")]
    BadSetting(String),
    #[error("cannot close {} after a crash: {} exists already", .open.display(), .done.display())]
    RecoverClash { open: PathBuf, done: PathBuf },
}

fn io_err(path: &Path) -> impl FnOnce(stdio::Error) -> WarcError + '_ {
    move |source| WarcError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
pub(crate) mod tests;
