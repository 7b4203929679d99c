//! The WARC writer: records, one gzip member per record, `.open` files, rotation, warcinfo and the
//! per-WARC CDXJ index.
//!
//! The `warc` crate's writer is not archival grade (one gzip stream per file, lower-case headers
//! in random order, bodies in memory), so records are written here by hand. Every record is its
//! own gzip member so that a CDX offset always lands on a member boundary and a reader can start
//! decompressing there. A file carries `.open` while it is written; it is renamed only after its
//! sorted CDXJ sits in the index folder, so a finished-looking WARC always has its index.

pub mod head;
pub mod member;
pub mod read;

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
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

    /// WARC-Profile of an identical-payload-digest revisit: each version names its own URI,
    /// and readers of a 1.0 file may only know the 1.0 one.
    pub fn revisit_profile(self) -> &'static str {
        match self {
            WarcVersion::V1_0 => "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
            WarcVersion::V1_1 => "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
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
    #[error("cannot close {} after a crash: {} exists already", .open.display(), .done.display())]
    RecoverClash { open: PathBuf, done: PathBuf },
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
    /// The CDXJ lines of this file so far. A 1 GB WARC of small pages holds hundreds of
    /// thousands of records: past a few MB the lines go to sorted runs on disk, so memory does
    /// not grow with the crawl.
    cdx_lines: crate::cdx::LineSorter,
}

/// Memory for one open WARC's CDXJ lines before they spill to temporary files.
const CDX_MEMORY: usize = 8 << 20;

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
            check_digest("WARC-Payload-Digest", d)?;
        }
        let http_head = ex
            .response
            .head(INDEX_HEAD_BYTES)
            .map_err(|source| WarcError::Spool {
                uri: ex.target_uri.to_string(),
                source,
            })?;
        let date = self.settings.version.format_date(ex.date);
        let id = record_id();
        let digest = ex.payload_digest.clone();
        let capture = Capture {
            url: ex.target_uri,
            warc_date: &date,
            record_type: "response",
            content_type: Some(CONTENT_TYPE_RESPONSE),
            http_head: &http_head,
            payload_digest: digest.as_deref(),
        };
        self.append(&capture, &id, |cur, version| {
            write_pair(cur, version, &date, &id, &mut ex)
        })
    }

    /// Writes a `revisit` record (identical-payload-digest profile: the HTTP head only, the
    /// payload stays with the original), then the request record pointing at it, and returns
    /// where the revisit record went. It is indexed like cdxj-indexer indexes a revisit, so
    /// pywb finds it and resolves it through the original. Errors, rollback and rotation as
    /// [`WarcWriter::write_exchange`].
    pub fn write_revisit(&mut self, rv: Revisit<'_>) -> Result<Written, WarcError> {
        check_revisit(&rv)?;
        let date = self.settings.version.format_date(rv.date);
        let id = record_id();
        let capture = Capture {
            url: rv.target_uri,
            warc_date: &date,
            record_type: "revisit",
            content_type: Some(CONTENT_TYPE_RESPONSE),
            http_head: rv.http_head,
            payload_digest: Some(&rv.payload_digest),
        };
        self.append(&capture, &id, |cur, version| {
            write_revisit_pair(cur, version, &date, &id, &rv)
        })
    }

    /// Runs `write` (which appends one capture record and its request) at the end of the
    /// current file, opening one if needed; then indexes the capture and rotates, or on error
    /// cuts the file back to where it was. The one place records enter a file, so rollback,
    /// byte counts and index lines cannot differ between record kinds.
    fn append<F>(&mut self, capture: &Capture<'_>, id: &str, write: F) -> Result<Written, WarcError>
    where
        F: FnOnce(&mut OpenWarc, WarcVersion) -> Result<(u64, u64), WarcError>,
    {
        let version = self.settings.version;
        let cur = match self.current {
            Some(ref mut cur) => cur,
            None => {
                let fresh = self.open_file()?;
                self.current.insert(fresh)
            }
        };
        let start = cur.size;
        match write(cur, version) {
            Ok((offset, length)) => {
                let line = capture.line(&cur.name, offset, length);
                cur.cdx_lines.push(line).map_err(io_err(&cur.open_path))?;
                self.bytes_written += cur.size - start;
                let written = Written {
                    filename: cur.name.clone(),
                    offset,
                    length,
                    record_id: id.to_string(),
                    warc_date: capture.warc_date.to_string(),
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
            cdx_lines: crate::cdx::LineSorter::new(CDX_MEMORY),
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

    /// fsync, then index and rename (see [`seal`]).
    fn finish(&mut self, cur: OpenWarc) -> Result<(), WarcError> {
        cur.file.sync_all().map_err(io_err(&cur.open_path))?;
        drop(cur.file);
        let final_path = seal(&self.settings, &cur.open_path, &cur.name, cur.cdx_lines)?;
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

/// Largest WARC header block crash recovery accepts; a bigger one is garbage, not a record.
const MAX_WARC_HEAD_BYTES: u64 = 1 << 20;

/// What crash recovery did with one `.open` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The closed `….warc.gz`, or, when `removed`, the `.open` file that was deleted.
    pub path: PathBuf,
    /// True when not one whole record survived (an empty file, or one torn inside its first
    /// record): the file is deleted and gets no index. The writer never leaves a file without
    /// a record either, and an empty `.warc.gz` would only puzzle tools and people.
    pub removed: bool,
    /// Whole records kept, warcinfo and requests included.
    pub records_kept: usize,
    /// Bytes cut off the end (a torn last record, garbage after it).
    pub bytes_cut: u64,
    /// (WARC-Target-URI, WARC-Type) of every kept record that has a target, in file order.
    pub records: Vec<(String, String)>,
}

impl Recovered {
    /// URIs whose response or revisit survived: archived already, so a resumed crawl must mark
    /// them done instead of fetching them again.
    pub fn captured_uris(&self) -> impl Iterator<Item = &str> {
        self.records
            .iter()
            .filter(|(_, t)| t == "response" || t == "revisit")
            .map(|(u, _)| u.as_str())
    }
}

/// Closes every `*.warc.gz.open` in `warc_dir` left by a crashed or killed run, so that each
/// ends exactly as if `close` had run after its last whole record: records are checked member
/// by member from the start; the file is cut after the last whole one (a torn last record is
/// never left half-written); its CDXJ is rebuilt from the kept response and revisit records
/// (the same lines the writer makes) and written the way `close` writes it; then the file is
/// renamed. A file left without a single whole record is deleted (see [`Recovered::removed`]).
///
/// Every file is read before any is changed, so the usual failures (a read error, a file that
/// cannot be opened for writing, a name already taken) stop recovery with nothing changed and
/// the caller can fix the cause and run it again without losing the list of records. Nothing
/// is ever cut unless every byte before the cut was read.
///
/// Call it before a `WarcWriter` is created for the folder and only while holding the crawl's
/// lock: a file another live writer is appending to would be cut and closed under it.
pub fn recover_open_files(settings: &WarcSettings) -> Result<Vec<Recovered>, WarcError> {
    let open = open_files(&settings.warc_dir)?;
    if open.is_empty() {
        return Ok(Vec::new());
    }
    fs::create_dir_all(&settings.index_dir).map_err(|source| WarcError::CreateDir {
        path: settings.index_dir.clone(),
        source,
    })?;
    let checked = open
        .iter()
        .map(|p| check_open_file(settings, p))
        .collect::<Result<Vec<_>, _>>()?;
    checked
        .into_iter()
        .map(|c| close_checked(settings, c))
        .collect()
}

/// `*.warc.gz.open` files in `dir`, sorted; none if `dir` does not exist (a fresh crawl).
fn open_files(dir: &Path) -> Result<Vec<PathBuf>, WarcError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(io_err(dir)(source)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        let is_open = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.ends_with(".warc.gz.open"));
        if is_open && entry.file_type().map_err(io_err(dir))?.is_file() {
            found.push(entry.path());
        }
    }
    found.sort();
    Ok(found)
}

/// An `.open` file read to the end of its last whole record, not changed yet.
struct Checked {
    file: File,
    open_path: PathBuf,
    /// The name it gets when closed.
    name: String,
    size: u64,
    scan: Scan,
}

/// Opens (for writing too, to learn now whether it can be cut) and scans one `.open` file.
fn check_open_file(settings: &WarcSettings, open_path: &Path) -> Result<Checked, WarcError> {
    let name = open_path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".open"))
        .ok_or_else(|| WarcError::BadSetting(format!("not a .open WARC: {}", open_path.display())))?
        .to_string();
    let done = settings.warc_dir.join(&name);
    if done.exists() {
        return Err(WarcError::RecoverClash {
            open: open_path.to_path_buf(),
            done,
        });
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(open_path)
        .map_err(io_err(open_path))?;
    let size = file.metadata().map_err(io_err(open_path))?.len();
    let scan = scan_members(&file, open_path, &name)?;
    Ok(Checked {
        file,
        open_path: open_path.to_path_buf(),
        name,
        size,
        scan,
    })
}

/// Cuts, syncs, indexes and renames a checked file, or deletes it if no record survived.
fn close_checked(settings: &WarcSettings, c: Checked) -> Result<Recovered, WarcError> {
    let mut recovered = Recovered {
        path: c.open_path.clone(),
        removed: c.scan.end == 0,
        records_kept: c.scan.kept,
        bytes_cut: c.size.saturating_sub(c.scan.end),
        records: c.scan.records,
    };
    if recovered.removed {
        drop(c.file);
        fs::remove_file(&c.open_path).map_err(io_err(&c.open_path))?;
        sync_dir(&settings.warc_dir);
        tracing::warn!(path = %c.open_path.display(), bytes = c.size,
            "removed an unfinished WARC that holds no whole record");
        return Ok(recovered);
    }
    if c.scan.end < c.size {
        c.file.set_len(c.scan.end).map_err(io_err(&c.open_path))?;
    }
    c.file.sync_all().map_err(io_err(&c.open_path))?;
    drop(c.file);
    let mut lines = crate::cdx::LineSorter::new(CDX_MEMORY);
    lines.extend(c.scan.lines).map_err(io_err(&c.open_path))?;
    recovered.path = seal(settings, &c.open_path, &c.name, lines)?;
    tracing::info!(path = %recovered.path.display(), records = recovered.records_kept,
        bytes_cut = recovered.bytes_cut, "closed an unfinished WARC");
    Ok(recovered)
}

/// What walking the members of a file found.
struct Scan {
    /// Offset just after the last whole record.
    end: u64,
    kept: usize,
    records: Vec<(String, String)>,
    /// CDXJ lines of the kept captures, unsorted.
    lines: Vec<String>,
}

/// Walks the gzip members of `file` from the start while each holds one whole record. The
/// first member that does not (torn, corrupt, garbage) ends the walk: an `.open` file only
/// grows at its end, so whatever follows a bad member is the remains of the same crash.
fn scan_members(file: &File, path: &Path, name: &str) -> Result<Scan, WarcError> {
    let mut src = Consumed::new(BufReader::with_capacity(COPY_BUF_BYTES, file));
    let mut scan = Scan {
        end: 0,
        kept: 0,
        records: Vec::new(),
        lines: Vec::new(),
    };
    loop {
        let offset = src.consumed;
        let member = read_member(&mut src);
        if let Some(source) = src.failed.take() {
            // The disk failed, not the data: cutting now could destroy good records.
            return Err(WarcError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
        let rec = match member {
            Ok(Some(rec)) => rec,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(path = %path.display(), offset, error = %e,
                    "unfinished or damaged record: the file is cut here");
                break;
            }
        };
        let length = src.consumed - offset;
        if let Some(line) = rec.index_line(name, offset, length) {
            scan.lines.push(line);
        }
        if let Some(uri) = rec.field("WARC-Target-URI") {
            scan.records
                .push((uri.to_string(), rec.warc_type().to_string()));
        }
        scan.kept += 1;
        scan.end = src.consumed;
    }
    Ok(scan)
}

/// A record re-read from a member: its header fields and the start of its block.
struct MemberRecord {
    fields: Vec<(String, String)>,
    /// Up to `INDEX_HEAD_BYTES` of the block, for response and revisit records only.
    head: Vec<u8>,
}

impl MemberRecord {
    /// The first value of header `name` (names compare case-insensitively, as WARC says).
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn warc_type(&self) -> &str {
        self.field("WARC-Type").unwrap_or("")
    }

    /// The CDXJ line the writer made for this record, if it is a capture the writer indexes.
    fn index_line(&self, filename: &str, offset: u64, length: u64) -> Option<String> {
        let record_type = self.warc_type();
        if record_type != "response" && record_type != "revisit" {
            return None;
        }
        let capture = Capture {
            url: self.field("WARC-Target-URI")?,
            warc_date: self.field("WARC-Date")?,
            record_type,
            content_type: self.field("Content-Type"),
            http_head: &self.head,
            payload_digest: self.field("WARC-Payload-Digest"),
        };
        Some(capture.line(filename, offset, length))
    }
}

/// Reads one gzip member and checks it holds exactly one whole record: a WARC header block,
/// Content-Length bytes of block, the closing CRLF CRLF, then the member's end (whose CRC the
/// decoder checks). `Ok(None)` at the end of the file; an error for anything else.
fn read_member<R: BufRead>(src: &mut R) -> io::Result<Option<MemberRecord>> {
    if src.fill_buf()?.is_empty() {
        return Ok(None);
    }
    let mut dec =
        BufReader::with_capacity(COPY_BUF_BYTES, flate2::bufread::GzDecoder::new(&mut *src));
    let fields = read_warc_head(&mut dec)?;
    let length: u64 = fields
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
        .and_then(|(_, v)| v.parse().ok())
        .ok_or_else(|| bad_record("no valid Content-Length"))?;
    let mut rec = MemberRecord {
        fields,
        head: Vec::new(),
    };
    let keep = match rec.warc_type() {
        "response" | "revisit" => INDEX_HEAD_BYTES as u64,
        _ => 0,
    };
    let mut block = (&mut dec).take(length);
    (&mut block).take(keep).read_to_end(&mut rec.head)?;
    let rest = io::copy(&mut block, &mut io::sink())?;
    if rec.head.len() as u64 + rest != length {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let mut tail = Vec::new();
    dec.take(5).read_to_end(&mut tail)?;
    if tail != b"\r\n\r\n" {
        return Err(bad_record(
            "the block is not followed by CRLF CRLF and the member's end",
        ));
    }
    Ok(Some(rec))
}

/// Parses `WARC/x.y` and the `Name: value` lines up to the blank line.
fn read_warc_head<R: BufRead>(r: &mut R) -> io::Result<Vec<(String, String)>> {
    let mut limited = r.take(MAX_WARC_HEAD_BYTES);
    let mut line = Vec::new();
    limited.read_until(b'\n', &mut line)?;
    if !line.starts_with(b"WARC/") || !line.ends_with(b"\r\n") {
        return Err(bad_record("no WARC version line"));
    }
    let mut fields = Vec::new();
    loop {
        line.clear();
        limited.read_until(b'\n', &mut line)?;
        if line == b"\r\n" {
            return Ok(fields);
        }
        let text = std::str::from_utf8(&line)
            .ok()
            .and_then(|l| l.strip_suffix("\r\n"))
            .ok_or_else(|| bad_record("a header line is cut or not UTF-8"))?;
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| bad_record("a header line without ':'"))?;
        fields.push((name.trim().to_string(), value.trim().to_string()));
    }
}

fn bad_record(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

/// A `BufRead` that counts the bytes its user consumed (the position just after a gzip
/// member, however far the buffer below has read ahead) and keeps the error of a failed
/// read, so a disk error is never mistaken for a torn record.
struct Consumed<R> {
    inner: R,
    consumed: u64,
    failed: Option<io::Error>,
}

impl<R> Consumed<R> {
    fn new(inner: R) -> Self {
        Consumed {
            inner,
            consumed: 0,
            failed: None,
        }
    }
}

impl<R: BufRead> Read for Consumed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Consumed<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self.inner.fill_buf() {
            Ok(buf) => Ok(buf),
            Err(e) => {
                // Any failure below, even EINTR, stops recovery rather than cut the file.
                let kind = e.kind();
                self.failed = Some(e);
                Err(kind.into())
            }
        }
    }

    fn consume(&mut self, amt: usize) {
        self.consumed += amt as u64;
        self.inner.consume(amt);
    }
}

/// Writes the sorted index, then renames the WARC from `.open` to `name` (index first, so every
/// `.warc.gz` that exists has its CDXJ). The file must already be synced. Shared by `close` and
/// crash recovery so a recovered file ends exactly like a closed one.
fn seal(
    settings: &WarcSettings,
    open_path: &Path,
    name: &str,
    lines: crate::cdx::LineSorter,
) -> Result<PathBuf, WarcError> {
    let stem = name.strip_suffix(".warc.gz").unwrap_or(name);
    write_index(&settings.index_dir, stem, lines)?;
    let final_path = settings.warc_dir.join(name);
    fs::rename(open_path, &final_path).map_err(io_err(open_path))?;
    sync_dir(&settings.warc_dir);
    Ok(final_path)
}

/// What a capture record's CDXJ line is made of. Built by the writer for each response or
/// revisit it writes and by crash recovery from the records it re-reads, so both produce the
/// same line for the same record.
struct Capture<'a> {
    url: &'a str,
    warc_date: &'a str,
    record_type: &'a str,
    content_type: Option<&'a str>,
    /// Start of the record block (status line, headers, maybe some body).
    http_head: &'a [u8],
    payload_digest: Option<&'a str>,
}

impl Capture<'_> {
    /// The CDXJ line of this record at `offset` (member length `length`) in WARC `filename`.
    fn line(&self, filename: &str, offset: u64, length: u64) -> String {
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
fn write_pair(
    cur: &mut OpenWarc,
    version: WarcVersion,
    date: &str,
    response_id: &str,
    ex: &mut Exchange<'_>,
) -> Result<(u64, u64), WarcError> {
    let uri = ex.target_uri;
    let ip = ex.ip.map(|ip| ip.to_string());
    let mut head = Head::new(version);
    head.field("WARC-Type", "response");
    head.field("WARC-Record-ID", response_id);
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
fn write_revisit_pair(
    cur: &mut OpenWarc,
    version: WarcVersion,
    date: &str,
    revisit_id: &str,
    rv: &Revisit<'_>,
) -> Result<(u64, u64), WarcError> {
    let ip = rv.ip.map(|ip| ip.to_string());
    let mut head = Head::new(version);
    head.field("WARC-Type", "revisit");
    head.field("WARC-Record-ID", revisit_id);
    head.field("WARC-Date", date);
    head.field("WARC-Target-URI", rv.target_uri);
    if let Some(ip) = &ip {
        head.field("WARC-IP-Address", ip);
    }
    head.field("WARC-Warcinfo-ID", &cur.warcinfo_id);
    head.field("WARC-Profile", version.revisit_profile());
    if let Some(id) = rv.refers_to_record_id {
        head.field("WARC-Refers-To", id);
    }
    head.field("WARC-Refers-To-Target-URI", rv.refers_to_uri);
    head.field("WARC-Refers-To-Date", rv.refers_to_date);
    head.field("WARC-Block-Digest", &sha1_of(rv.http_head));
    head.field("WARC-Payload-Digest", &rv.payload_digest);
    head.field("Content-Type", CONTENT_TYPE_RESPONSE);
    let len = rv.http_head.len() as u64;
    let head = head.finish(len);
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
    let mut head = Head::new(version);
    head.field("WARC-Type", "request");
    head.field("WARC-Record-ID", &record_id());
    head.field("WARC-Date", rq.date);
    head.field("WARC-Target-URI", rq.uri);
    if let Some(ip) = rq.ip {
        head.field("WARC-IP-Address", ip);
    }
    head.field("WARC-Concurrent-To", rq.concurrent_to);
    head.field("WARC-Warcinfo-ID", &cur.warcinfo_id);
    head.field("WARC-Block-Digest", &sha1_of(rq.bytes));
    head.field("Content-Type", CONTENT_TYPE_REQUEST);
    let len = rq.bytes.len() as u64;
    let head = head.finish(len);
    let mut block = rq.bytes;
    write_record(cur, &head, &mut block, len, rq.uri)
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
fn write_index(
    index_dir: &Path,
    stem: &str,
    lines: crate::cdx::LineSorter,
) -> Result<(), WarcError> {
    let tmp = index_dir.join(format!("{stem}.cdxj.part"));
    let done = index_dir.join(format!("{stem}.cdxj"));
    let file = File::create(&tmp).map_err(io_err(&tmp))?;
    let mut out = BufWriter::new(file);
    lines.finish(&mut out).map_err(io_err(&tmp))?;
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

/// Makes renames in `dir` durable. Best effort: not every platform can fsync a directory.
/// (The opt-out rewrite renames WARCs into place too and uses this one.)
pub(crate) fn sync_dir(dir: &Path) {
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
fn check_digest(field: &'static str, value: &str) -> Result<(), WarcError> {
    let ok = value
        .split_once(':')
        .is_some_and(|(a, v)| !a.is_empty() && !v.is_empty())
        && value.chars().all(|c| c.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(WarcError::BadHeaderValue {
            field,
            value: value.to_string(),
        })
    }
}

/// Everything a revisit puts into headers, checked before a byte is written. The HTTP head
/// must end in its blank line: anything else means the caller passed the wrong slice (a whole
/// response would defeat the point of a revisit; a cut head would not parse on replay).
fn check_revisit(rv: &Revisit<'_>) -> Result<(), WarcError> {
    check_uri(rv.target_uri)?;
    check_digest("WARC-Payload-Digest", &rv.payload_digest)?;
    check_uri(rv.refers_to_uri).map_err(|_| WarcError::BadHeaderValue {
        field: "WARC-Refers-To-Target-URI",
        value: rv.refers_to_uri.to_string(),
    })?;
    if DateTime::parse_from_rfc3339(rv.refers_to_date).is_err() || !rv.refers_to_date.ends_with('Z')
    {
        return Err(WarcError::BadHeaderValue {
            field: "WARC-Refers-To-Date",
            value: rv.refers_to_date.to_string(),
        });
    }
    if let Some(id) = rv.refers_to_record_id {
        let ok = id.len() > 2
            && id.starts_with('<')
            && id.ends_with('>')
            && id.chars().all(|c| c.is_ascii_graphic());
        if !ok {
            return Err(WarcError::BadHeaderValue {
                field: "WARC-Refers-To",
                value: id.to_string(),
            });
        }
    }
    if http_head(rv.http_head) != Some(rv.http_head) {
        return Err(WarcError::BadHeaderValue {
            field: "revisit HTTP head",
            value: String::from_utf8_lossy(&rv.http_head[..rv.http_head.len().min(200)])
                .into_owned(),
        });
    }
    Ok(())
}

/// The HTTP status line and headers at the start of `response`, up to and including the blank
/// line that ends them (CRLF CRLF, or a bare LF LF from sloppy servers); `None` if `response`
/// holds no complete head. A revisit stores exactly this.
pub fn http_head(response: &[u8]) -> Option<&[u8]> {
    let mut line_start = 0;
    for (i, &b) in response.iter().enumerate() {
        if b != b'\n' {
            continue;
        }
        let blank = matches!(&response[line_start..i], b"" | b"\r");
        if blank {
            // A blank first line is no status line: not a head at all.
            return (line_start > 0).then(|| &response[..=i]);
        }
        line_start = i + 1;
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
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

    // ----- revisits -----

    const HEAD_200: &[u8] =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nX-Copy: yes\r\n\r\n";

    /// The Python venv the tool checks need: `ARCHIVER_VENV`, else `<repo>/.venv`. Missing
    /// tools fail the test (never skip it): what these tests check is the tools' verdict.
    pub(crate) fn required_venv() -> PathBuf {
        let dir = std::env::var_os("ARCHIVER_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv"));
        for tool in ["warcio", "cdxj-indexer", "wayback"] {
            assert!(
                dir.join("bin").join(tool).exists(),
                "{tool} not found in the venv {}: run tools/test.sh (it creates the venv with \
                 the pinned warcio, cdxj-indexer and pywb), or set ARCHIVER_VENV",
                dir.display()
            );
        }
        dir
    }

    /// cdxj-indexer's lines for a WARC, sorted.
    pub(crate) fn indexer_lines(venv: &Path, warc: &Path) -> Vec<String> {
        let out = Command::new(venv.join("bin/cdxj-indexer"))
            .arg(warc)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut lines: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        lines
    }

    /// The lines of the CDXJ the writer put next to `warc`.
    pub(crate) fn our_lines(index_dir: &Path, warc: &Path) -> Vec<String> {
        let index = index_dir.join(file_name(warc).replace(".warc.gz", ".cdxj"));
        fs::read_to_string(index)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    fn later() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-01T08:00:00.5Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn revisit<'a>(uri: &'a str, orig_uri: &'a str, orig: &'a Written) -> Revisit<'a> {
        Revisit {
            target_uri: uri,
            date: later(),
            ip: Some("127.0.0.1".parse().unwrap()),
            request: REQUEST,
            http_head: HEAD_200,
            payload_digest: sha1_of(b"<p>hello</p>\n"),
            refers_to_uri: orig_uri,
            refers_to_date: &orig.warc_date,
            refers_to_record_id: Some(&orig.record_id),
        }
    }

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

    // ----- crash recovery -----

    /// What a killed process leaves: the writer vanishes without closing its `.open` file.
    fn crash(w: WarcWriter) -> PathBuf {
        let open = w.current_path().unwrap().to_path_buf();
        std::mem::forget(w);
        open
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
            let leftovers: Vec<_> = fs::read_dir(&s.index_dir)
                .unwrap()
                .map(|e| file_name(&e.unwrap().path()))
                .filter(|n| !n.ends_with(".cdxj"))
                .collect();
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
        let mut w = WarcWriter::new(s.clone()).unwrap();
        write_case(&mut w, &mut simple_case());
        let open = crash(w);
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
        let mut w = WarcWriter::new(s.clone()).unwrap();
        write_case(&mut w, &mut simple_case());
        let first = crash(w);
        append(&first, b"torn");
        let mut w = WarcWriter::new(s.clone()).unwrap();
        write_case(&mut w, &mut simple_case());
        let second = crash(w);
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
        let mut w = WarcWriter::new(s.clone()).unwrap();
        write_case(&mut w, &mut simple_case());
        let open = crash(w);
        assert!(file_name(&open).contains("-00000-"));
        recover_open_files(&s).unwrap();
        let mut w = WarcWriter::new(s).unwrap();
        write_case(&mut w, &mut simple_case());
        w.close().unwrap();
        assert!(file_name(&w.closed_files()[0]).contains("-00001-"));
    }
}
