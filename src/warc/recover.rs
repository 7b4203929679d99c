//! Crash recovery: closes the `.open` files a killed run left, keeping every whole record,
//! cutting off a torn tail, and writing the CDXJ of what was kept, so each ends as if `close`
//! had run after its last whole record.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::io::sync_dir;
use super::record::Capture;
use super::writer::{seal, CDX_MEMORY};
use super::{io_err, WarcError, WarcSettings, COPY_BUF_BYTES, INDEX_HEAD_BYTES};

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
