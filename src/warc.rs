//! The WARC writer: records, one gzip member per record, `.open` files, rotation, warcinfo and the
//! per-WARC CDXJ index.
//!
//! The `warc` crate's writer is not archival grade (one gzip stream per file, lower-case headers
//! in random order, bodies in memory), so records are written here by hand. Every record is its
//! own gzip member so that a CDX offset always lands on a member boundary and a reader can start
//! decompressing there. A file carries `.open` while it is written; it is renamed only after its
//! sorted CDXJ sits in the index folder, so a finished-looking WARC always has its index.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use flate2::write::GzEncoder;
use flate2::Compression;

use crate::cdx::{self, CdxRecord};
use crate::spool::{sha1_of, Spool};

/// How much of a response the CDXJ indexer sees (status line, headers, a bit of body).
const INDEX_HEAD_BYTES: usize = 64 * 1024;
/// Copy buffer for streaming a spool into a gzip member.
const COPY_BUF_BYTES: usize = 64 * 1024;
/// How many already-taken file names to step over before giving up.
const NAME_ATTEMPTS: u32 = 1000;

const CONTENT_TYPE_RESPONSE: &str = "application/http;msgtype=response";
const CONTENT_TYPE_REQUEST: &str = "application/http;msgtype=request";

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

/// Where the response record of an exchange went.
#[derive(Debug, Clone)]
pub struct Written {
    /// Final file name (`….warc.gz`, never `.open`), as the CDXJ `filename` field has it.
    pub filename: String,
    /// Offset of the response record's gzip member.
    pub offset: u64,
    /// Compressed length of that member.
    pub length: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum WarcError {
    #[error("cannot create directory {}: {source}", .path.display())]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("directory {} is not writable: {source}", .path.display())]
    NotWritable { path: PathBuf, source: io::Error },
    #[error("I/O error on {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("cannot read the response spool of {uri}: {source}")]
    Spool { uri: String, source: io::Error },
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
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> WarcError + '_ {
    move |source| WarcError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The file being written.
struct OpenWarc {
    file: File,
    /// `….warc.gz.open`
    open_path: PathBuf,
    /// `….warc.gz`: the name it gets when closed, used in WARC-Filename and the CDXJ.
    name: String,
    /// Bytes in the file so far (= offset of the next record).
    size: u64,
    warcinfo_id: String,
    cdx_lines: Vec<String>,
}

/// Writes exchanges into rotating, per-record-gzipped WARC files with a CDXJ index each.
pub struct WarcWriter {
    settings: WarcSettings,
    host: String,
    pid: u32,
    next_serial: u64,
    current: Option<OpenWarc>,
    closed: Vec<PathBuf>,
    bytes_written: u64,
}

impl std::fmt::Debug for WarcWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarcWriter")
            .field("warc_dir", &self.settings.warc_dir)
            .field("current", &self.current.as_ref().map(|c| &c.open_path))
            .field("closed", &self.closed.len())
            .field("bytes_written", &self.bytes_written)
            .finish()
    }
}

impl WarcWriter {
    /// Creates both folders and checks they are writable; opens no WARC until the first record,
    /// so a crawl that archives nothing leaves no empty file behind.
    pub fn new(settings: WarcSettings) -> Result<WarcWriter, WarcError> {
        let mut settings = settings;
        check_prefix(&settings.prefix)?;
        settings.info = clean_info(&settings.info)?;
        for dir in [&settings.warc_dir, &settings.index_dir] {
            fs::create_dir_all(dir).map_err(|source| WarcError::CreateDir {
                path: dir.clone(),
                source,
            })?;
            probe_writable(dir)?;
        }
        let next_serial = next_free_serial(&settings.warc_dir, &settings.prefix)?;
        Ok(WarcWriter {
            settings,
            host: file_safe_host(&gethostname::gethostname().to_string_lossy()),
            pid: std::process::id(),
            next_serial,
            current: None,
            closed: Vec::new(),
            bytes_written: 0,
        })
    }

    /// Writes the response record, then the request record pointing at it
    /// (WARC-Concurrent-To), and returns where the response record went. On error nothing of
    /// this exchange stays in the file (it is cut back to where the exchange began).
    /// If the file reaches `max_bytes` it is closed afterwards; an error while closing is
    /// returned even though the exchange itself was written.
    pub fn write_exchange(&mut self, mut ex: Exchange<'_>) -> Result<Written, WarcError> {
        check_uri(ex.target_uri)?;
        if let Some(t) = ex.truncated {
            check_token("WARC-Truncated", t)?;
        }
        if let Some(d) = ex.payload_digest.as_deref() {
            check_digest(d)?;
        }
        let http_head = ex
            .response
            .head(INDEX_HEAD_BYTES)
            .map_err(|source| WarcError::Spool {
                uri: ex.target_uri.to_string(),
                source,
            })?;
        let version = self.settings.version;
        let cur = match self.current {
            Some(ref mut cur) => cur,
            None => {
                let fresh = self.open_file()?;
                self.current.insert(fresh)
            }
        };
        let start = cur.size;
        let date = version.format_date(ex.date);
        match write_pair(cur, version, &date, &mut ex) {
            Ok((offset, length)) => {
                let line = cdx::cdxj_line(&CdxRecord {
                    url: ex.target_uri,
                    warc_date: &date,
                    record_type: "response",
                    content_type: Some(CONTENT_TYPE_RESPONSE),
                    http_head: &http_head,
                    payload_digest: ex.payload_digest.as_deref(),
                    length,
                    offset,
                    filename: &cur.name,
                });
                cur.cdx_lines.push(line);
                self.bytes_written += cur.size - start;
                let written = Written {
                    filename: cur.name.clone(),
                    offset,
                    length,
                };
                if cur.size >= self.settings.max_bytes {
                    self.close()?;
                }
                Ok(written)
            }
            Err(e) => {
                self.roll_back(start);
                Err(e)
            }
        }
    }

    /// Closes the current file if any: fsync, sorted CDXJ into the index folder, then rename
    /// from `.open`. The next write opens a new file.
    pub fn close(&mut self) -> Result<(), WarcError> {
        match self.current.take() {
            Some(cur) => self.finish(cur),
            None => Ok(()),
        }
    }

    /// WARC files closed (renamed) so far, in order.
    pub fn closed_files(&self) -> &[PathBuf] {
        &self.closed
    }

    /// Compressed bytes written into WARC files by this writer (all files, warcinfo included).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// The `.open` file being written, if any.
    pub fn current_path(&self) -> Option<&Path> {
        self.current.as_ref().map(|c| c.open_path.as_path())
    }

    /// Opens the next `.open` file (never overwriting anything) and writes its warcinfo record.
    fn open_file(&mut self) -> Result<OpenWarc, WarcError> {
        let dir = self.settings.warc_dir.clone();
        // Look again: another writer (or a previous run) may have added files since `new`.
        let mut serial = self
            .next_serial
            .max(next_free_serial(&dir, &self.settings.prefix)?);
        let stamp = Utc::now().format("%Y%m%d%H%M%S%3f").to_string();
        let mut attempts = 0;
        let (file, name, open_path) = loop {
            let name = format!(
                "{}-{}-{:05}-{}~{}.warc.gz",
                self.settings.prefix, stamp, serial, self.pid, self.host
            );
            let open_path = dir.join(format!("{name}.open"));
            let taken = dir.join(&name).exists();
            let opened = if taken {
                Err(io::Error::from(io::ErrorKind::AlreadyExists))
            } else {
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&open_path)
            };
            match opened {
                Ok(file) => break (file, name, open_path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < NAME_ATTEMPTS => {
                    attempts += 1;
                    serial += 1;
                }
                Err(source) => {
                    return Err(WarcError::Io {
                        path: open_path,
                        source,
                    })
                }
            }
        };
        self.next_serial = serial + 1;
        let mut cur = OpenWarc {
            file,
            open_path,
            name,
            size: 0,
            warcinfo_id: record_id(),
            cdx_lines: Vec::new(),
        };
        if let Err(e) = write_warcinfo(&mut cur, &self.settings) {
            // A file without its warcinfo is useless; remove it rather than leave it `.open`.
            let _ = fs::remove_file(&cur.open_path);
            return Err(e);
        }
        self.bytes_written += cur.size;
        Ok(cur)
    }

    /// Cuts the current file back to `start` after a failed exchange so that no partial
    /// member sits between good records. If even that fails the file is closed as it is
    /// (its index only lists complete records) and the next write starts a new file.
    fn roll_back(&mut self, start: u64) {
        let Some(cur) = self.current.as_mut() else {
            return;
        };
        let cut = cur
            .file
            .set_len(start)
            .and_then(|_| cur.file.seek(SeekFrom::Start(start)).map(|_| ()));
        match cut {
            Ok(()) => cur.size = start,
            Err(e) => {
                tracing::warn!(path = %cur.open_path.display(), error = %e,
                    "cannot cut a failed record out of the WARC; closing it");
                if let Err(e) = self.close() {
                    tracing::warn!(error = %e, "closing a damaged WARC failed");
                }
            }
        }
    }

    /// fsync, write the sorted index, then rename the WARC (index first, so every
    /// `.warc.gz` that exists has its CDXJ).
    fn finish(&mut self, cur: OpenWarc) -> Result<(), WarcError> {
        cur.file.sync_all().map_err(io_err(&cur.open_path))?;
        drop(cur.file);
        let mut lines = cur.cdx_lines;
        cdx::sort_lines(&mut lines);
        let stem = cur.name.strip_suffix(".warc.gz").unwrap_or(&cur.name);
        write_index(&self.settings.index_dir, stem, &lines)?;
        let final_path = self.settings.warc_dir.join(&cur.name);
        fs::rename(&cur.open_path, &final_path).map_err(io_err(&cur.open_path))?;
        sync_dir(&self.settings.warc_dir);
        self.closed.push(final_path);
        Ok(())
    }
}

impl Drop for WarcWriter {
    /// A writer dropped without `close` still finishes its file; errors can only be logged.
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::warn!(error = %e, "closing the WARC file on drop failed");
        }
    }
}

/// Response record then request record; returns the response member's offset and length.
fn write_pair(
    cur: &mut OpenWarc,
    version: WarcVersion,
    date: &str,
    ex: &mut Exchange<'_>,
) -> Result<(u64, u64), WarcError> {
    let uri = ex.target_uri;
    let ip = ex.ip.map(|ip| ip.to_string());
    let response_id = record_id();
    let mut head = Head::new(version);
    head.field("WARC-Type", "response");
    head.field("WARC-Record-ID", &response_id);
    head.field("WARC-Date", date);
    head.field("WARC-Target-URI", uri);
    if let Some(ip) = &ip {
        head.field("WARC-IP-Address", ip);
    }
    head.field("WARC-Warcinfo-ID", &cur.warcinfo_id);
    head.field("WARC-Block-Digest", &ex.response.digest());
    if let Some(d) = &ex.payload_digest {
        head.field("WARC-Payload-Digest", d);
    }
    if let Some(t) = ex.truncated {
        head.field("WARC-Truncated", t);
    }
    head.field("Content-Type", CONTENT_TYPE_RESPONSE);
    let len = ex.response.len();
    let head = head.finish(len);
    let mut body = ex.response.reader().map_err(|source| WarcError::Spool {
        uri: uri.to_string(),
        source,
    })?;
    let response = write_record(cur, &head, &mut body, len, uri)?;
    drop(body);

    let mut head = Head::new(version);
    head.field("WARC-Type", "request");
    head.field("WARC-Record-ID", &record_id());
    head.field("WARC-Date", date);
    head.field("WARC-Target-URI", uri);
    if let Some(ip) = &ip {
        head.field("WARC-IP-Address", ip);
    }
    head.field("WARC-Concurrent-To", &response_id);
    head.field("WARC-Warcinfo-ID", &cur.warcinfo_id);
    head.field("WARC-Block-Digest", &sha1_of(ex.request));
    head.field("Content-Type", CONTENT_TYPE_REQUEST);
    let head = head.finish(ex.request.len() as u64);
    let mut block = ex.request;
    write_record(cur, &head, &mut block, ex.request.len() as u64, uri)?;
    Ok(response)
}

/// A writer that counts what passes through, to learn a gzip member's compressed length.
struct Counter<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for Counter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes one record as one gzip member at the end of the file; returns (offset, length).
/// The block is streamed in pieces, never held whole. Written straight to the `File` (no
/// user-space buffer), so once this returns the member is with the OS.
fn write_record(
    cur: &mut OpenWarc,
    head: &[u8],
    block: &mut dyn Read,
    block_len: u64,
    uri: &str,
) -> Result<(u64, u64), WarcError> {
    let path = cur.open_path.clone();
    let mut enc = GzEncoder::new(
        Counter {
            inner: &mut cur.file,
            count: 0,
        },
        Compression::default(),
    );
    enc.write_all(head).map_err(io_err(&path))?;
    let mut buf = vec![0u8; COPY_BUF_BYTES];
    let mut remaining = block_len;
    while remaining > 0 {
        let want = remaining.min(buf.len() as u64) as usize;
        let n = match block.read(&mut buf[..want]) {
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
        enc.write_all(&buf[..n]).map_err(io_err(&path))?;
        remaining -= n as u64;
    }
    enc.write_all(b"\r\n\r\n").map_err(io_err(&path))?;
    let counter = enc.finish().map_err(io_err(&path))?;
    let offset = cur.size;
    cur.size += counter.count;
    Ok((offset, counter.count))
}

/// The warcinfo record that opens every file.
fn write_warcinfo(cur: &mut OpenWarc, settings: &WarcSettings) -> Result<(), WarcError> {
    let version = settings.version;
    let mut block = String::new();
    let mut field = |name: &str, value: &str| {
        block.push_str(name);
        block.push_str(": ");
        block.push_str(value);
        block.push_str("\r\n");
    };
    field("software", concat!("archiver/", env!("CARGO_PKG_VERSION")));
    field("format", &format!("WARC File Format {}", version.number()));
    field("conformsTo", version.conforms_to());
    for (name, value) in &settings.info {
        field(name, value);
    }
    let block = block.into_bytes();
    let mut head = Head::new(version);
    head.field("WARC-Type", "warcinfo");
    head.field("WARC-Record-ID", &cur.warcinfo_id);
    head.field("WARC-Date", &version.format_date(Utc::now()));
    head.field("WARC-Filename", &cur.name);
    head.field("WARC-Block-Digest", &sha1_of(&block));
    head.field("Content-Type", "application/warc-fields");
    let head = head.finish(block.len() as u64);
    let uri = cur.name.clone();
    write_record(cur, &head, &mut &block[..], block.len() as u64, &uri)?;
    Ok(())
}

/// Builds a record's header block in the order fields are added.
struct Head(String);

impl Head {
    fn new(version: WarcVersion) -> Head {
        Head(format!("WARC/{}\r\n", version.number()))
    }
    fn field(&mut self, name: &str, value: &str) {
        self.0.push_str(name);
        self.0.push_str(": ");
        self.0.push_str(value);
        self.0.push_str("\r\n");
    }
    /// Adds Content-Length (always last) and the blank line that ends the header block.
    fn finish(mut self, content_length: u64) -> Vec<u8> {
        self.field("Content-Length", &content_length.to_string());
        self.0.push_str("\r\n");
        self.0.into_bytes()
    }
}

/// `<urn:uuid:…>` with a random (v4) UUID.
fn record_id() -> String {
    format!("<urn:uuid:{}>", uuid::Uuid::new_v4())
}

/// Writes `index_dir/<stem>.cdxj` through a temporary name that does not end in `.cdxj`, so
/// pywb (which reads every `*.cdxj` in the folder) never sees a half-written index.
fn write_index(index_dir: &Path, stem: &str, lines: &[String]) -> Result<(), WarcError> {
    let tmp = index_dir.join(format!("{stem}.cdxj.part"));
    let done = index_dir.join(format!("{stem}.cdxj"));
    let file = File::create(&tmp).map_err(io_err(&tmp))?;
    let mut out = BufWriter::new(file);
    for line in lines {
        out.write_all(line.as_bytes()).map_err(io_err(&tmp))?;
        out.write_all(b"\n").map_err(io_err(&tmp))?;
    }
    let file = out.into_inner().map_err(|e| WarcError::Io {
        path: tmp.clone(),
        source: e.into_error(),
    })?;
    file.sync_all().map_err(io_err(&tmp))?;
    drop(file);
    fs::rename(&tmp, &done).map_err(io_err(&tmp))?;
    sync_dir(index_dir);
    Ok(())
}

/// Makes renames durable. Best effort: not every platform can fsync a directory.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Creating the folders can succeed on a read-only mount; find out now, not at the first page.
fn probe_writable(dir: &Path) -> Result<(), WarcError> {
    tempfile::Builder::new()
        .prefix(".archiver-probe-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|source| WarcError::NotWritable {
            path: dir.to_path_buf(),
            source,
        })
}

/// The serial after the highest one already used in `dir` for `prefix` (`.open` files count).
fn next_free_serial(dir: &Path, prefix: &str) -> Result<u64, WarcError> {
    let entries = fs::read_dir(dir).map_err(io_err(dir))?;
    let mut next = 0;
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        if let Some(serial) = entry
            .file_name()
            .to_str()
            .and_then(|n| parse_serial(n, prefix))
        {
            next = next.max(serial.saturating_add(1));
        }
    }
    Ok(next)
}

/// The serial of `PREFIX-yyyyMMddHHmmssSSS-SERIAL-…warc…`, if `name` is such a file.
fn parse_serial(name: &str, prefix: &str) -> Option<u64> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
    let (stamp, rest) = rest.split_once('-')?;
    if stamp.len() != 17 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (serial, rest) = rest.split_once('-')?;
    if serial.is_empty() || !serial.bytes().all(|b| b.is_ascii_digit()) || !rest.contains(".warc") {
        return None;
    }
    serial.parse().ok()
}

/// Host names may hold anything; keep what is safe in a file name and in a URL path (the CDXJ
/// `filename` is joined to pywb's archive path). `~` separates pid and host, so it goes too.
fn file_safe_host(raw: &str) -> String {
    let host: String = raw
        .trim()
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if host.is_empty() {
        "localhost".to_string()
    } else {
        host
    }
}

/// The prefix becomes the start of file names: no separators, no dots tricks, not empty.
fn check_prefix(prefix: &str) -> Result<(), WarcError> {
    let ok = !prefix.is_empty()
        && !prefix.starts_with('.')
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(WarcError::BadSetting(format!(
            "prefix {prefix:?} must be letters, digits, '-', '_' or '.'"
        )))
    }
}

/// warcinfo field names must be tokens; values lose line breaks (a multi-line description
/// from the profile must not break the record).
fn clean_info(info: &[(String, String)]) -> Result<Vec<(String, String)>, WarcError> {
    info.iter()
        .map(|(name, value)| {
            let name_ok =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_graphic() && c != ':');
            if !name_ok {
                return Err(WarcError::BadSetting(format!(
                    "warcinfo field name {name:?} must be printable ASCII without ':' or spaces"
                )));
            }
            let value: String = value
                .split(|c: char| c.is_control())
                .filter(|part| !part.trim().is_empty())
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            Ok((name.clone(), value))
        })
        .collect()
}

/// WARC-Target-URI: one line, no spaces or control characters.
fn check_uri(uri: &str) -> Result<(), WarcError> {
    if uri.is_empty() || uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(WarcError::BadHeaderValue {
            field: "WARC-Target-URI",
            value: uri.to_string(),
        });
    }
    Ok(())
}

/// A bare token such as `length` or `time`.
fn check_token(field: &'static str, value: &str) -> Result<(), WarcError> {
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(WarcError::BadHeaderValue {
            field,
            value: value.to_string(),
        });
    }
    Ok(())
}

/// `algorithm:value`, printable ASCII.
fn check_digest(value: &str) -> Result<(), WarcError> {
    let ok = value
        .split_once(':')
        .is_some_and(|(a, v)| !a.is_empty() && !v.is_empty())
        && value.chars().all(|c| c.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(WarcError::BadHeaderValue {
            field: "WARC-Payload-Digest",
            value: value.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Cursor};
    use std::process::Command;

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
    fn venv() -> Option<PathBuf> {
        let dir = match std::env::var_os("ARCHIVER_VENV") {
            Some(dir) => PathBuf::from(dir),
            None => [
                Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv"),
                "/tmp/pyv".into(),
            ]
            .into_iter()
            .find(|d| d.join("bin/warcio").exists())
            .unwrap_or_else(|| PathBuf::from("/tmp/pyv")),
        };
        if dir.join("bin/warcio").exists() {
            Some(dir)
        } else {
            eprintln!(
                "NOTE: no Python venv with warcio at {} (set ARCHIVER_VENV); warcio checks skipped",
                dir.display()
            );
            None
        }
    }

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
        let Some(venv) = venv() else { return };
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
        let Some(venv) = venv() else { return };
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
        if let Some(venv) = venv() {
            let (ok, out) = warcio(&venv, &["check", path.to_str().unwrap()]);
            assert!(ok, "{out}");
        }
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
}
