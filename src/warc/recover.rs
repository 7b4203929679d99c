//! Crash recovery: closes the `.open` files a killed run left, keeping every whole record,
//! cutting off a torn tail, and writing the CDXJ of what was kept, so each ends as if `close`
//! had run after its last whole record. The records are read through the one reader
//! (`read.rs`'s walker, with a visitor that keeps records until the first damage).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

use super::head::WarcHead;
use super::io::sync_dir;
use super::member::read_at_most;
use super::read::{walk, IndexError, Problem, Span, Visitor};
use super::record::Capture;
use super::writer::{seal, CDX_MEMORY};
use super::{io_err, WarcError, WarcSettings, INDEX_HEAD_BYTES};

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
    let scan = scan(&file, open_path, &name)?;
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

/// What walking the records of a file found.
#[derive(Default)]
struct Scan {
    /// Offset just after the last whole record.
    end: u64,
    kept: usize,
    records: Vec<(String, String)>,
    /// CDXJ lines of the kept captures, unsorted.
    lines: Vec<String>,
}

/// Reads the records of the `.open` file `path` (open as `file`) through the one reader, from
/// the start while each is one whole record in a gzip member of its own. The first one that is
/// not (torn, corrupt, garbage, a block shorter than its Content-Length) ends what is kept: an
/// `.open` file only grows at its end, so whatever follows a bad member is the remains of the
/// same crash. A failing disk is an error, never taken for a torn record.
fn scan(file: &File, path: &Path, name: &str) -> Result<Scan, WarcError> {
    // The writer only writes gzip members; anything else (a plain WARC among them) is not ours
    // to keep, while the walker would read it.
    let mut magic = [0u8; 2];
    let got = read_at_most(file, &mut magic, 0).map_err(io_err(path))?;
    if got > 0 && magic[..got] != [0x1f, 0x8b][..got] {
        tracing::warn!(path = %path.display(), offset = 0,
            "not a gzip member: the file is cut here");
        return Ok(Scan::default());
    }
    let mut keep = Keep {
        path,
        name,
        scan: Scan::default(),
        stopped: false,
    };
    match walk(path, &mut keep) {
        Ok(()) => {}
        Err(IndexError::Io { source, .. }) => {
            return Err(WarcError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
        // The first member is no WARC record, or a member holds two: damage like any other.
        Err(e) => keep.stop(0, &e.to_string()),
    }
    Ok(keep.scan)
}

/// The visitor of [`scan`]: keeps records while each starts where the one before ended, from
/// the start of the file, and nothing after the first damage.
struct Keep<'a> {
    path: &'a Path,
    /// The name the file gets when closed (the CDXJ `filename`).
    name: &'a str,
    scan: Scan,
    /// Damage was met: no later record is kept.
    stopped: bool,
}

impl Keep<'_> {
    fn stop(&mut self, offset: u64, why: &str) {
        if !self.stopped {
            let offset = offset.max(self.scan.end);
            tracing::warn!(path = %self.path.display(), offset, error = %why,
                "unfinished or damaged record: the file is cut here");
        }
        self.stopped = true;
    }
}

impl Visitor for Keep<'_> {
    /// The start of a capture's block (status line and headers), for its CDXJ line.
    type Item = Vec<u8>;

    /// Reads the whole block, so that a member cut short inside it is seen (the walker checks
    /// the member's CRC at its end), and keeps the start of a response or revisit.
    fn record(
        &mut self,
        _offset: u64,
        head: &WarcHead,
        block: &mut dyn BufRead,
    ) -> io::Result<Vec<u8>> {
        if head.is_arc() {
            return Err(damaged("the gzip member holds no WARC record"));
        }
        let length = match head.content_length() {
            Some(Ok(n)) => n,
            _ => return Err(damaged("no valid Content-Length")),
        };
        let index = matches!(head.record_type(), Some("response" | "revisit"));
        let want = if index { INDEX_HEAD_BYTES as u64 } else { 0 };
        let mut start = Vec::new();
        block.take(want).read_to_end(&mut start)?;
        let rest = io::copy(block, &mut io::sink())?;
        if start.len() as u64 + rest != length {
            return Err(damaged("the block is shorter than its Content-Length"));
        }
        Ok(start)
    }

    fn done(&mut self, span: Span, head: WarcHead, start: Vec<u8>) {
        if span.offset != self.scan.end {
            // Something between the two was skipped as damage.
            self.stop(span.offset, "a damaged record before this one");
        }
        if self.stopped {
            return;
        }
        if let Some(line) = index_line(&head, &start, self.name, span) {
            self.scan.lines.push(line);
        }
        if let Some(uri) = head.get("WARC-Target-URI") {
            let kind = head.record_type().unwrap_or("");
            self.scan.records.push((uri.to_string(), kind.to_string()));
        }
        self.scan.kept += 1;
        self.scan.end = span.end;
    }

    fn problem(&mut self, problem: Problem) {
        self.stop(problem.offset, &problem.message);
    }
}

/// The CDXJ line the writer made for this record, if it is a capture the writer indexes.
fn index_line(head: &WarcHead, start: &[u8], filename: &str, span: Span) -> Option<String> {
    let record_type = head.record_type()?;
    if record_type != "response" && record_type != "revisit" {
        return None;
    }
    let capture = Capture {
        url: head.get("WARC-Target-URI")?,
        warc_date: head.get("WARC-Date")?,
        record_type,
        content_type: head.get("Content-Type"),
        http_head: start,
        payload_digest: head.get("WARC-Payload-Digest"),
    };
    Some(capture.line(filename, span.offset, span.length))
}

fn damaged(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}
