//! `archiver diff OLD NEW`: what changed between two crawls of the same sites, from their
//! CDXJ indexes; and `--url`, the text diff of one page between the two captures.
//!
//! Both indexes are sorted by SURT key, so the comparison is a merge of two sorted streams
//! (each side itself a merge of its per-WARC files): memory stays flat however large the
//! crawls are. The lists it produces go to temporary files until the report is written, since
//! the summary comes first but is only known at the end.
//!
//! A URL is the SURT key, as in pywb: `http://www.example.com/` and `https://example.com` are
//! one page. When a crawl captured a key more than once, its latest capture counts. Only
//! `http(s)` captures are compared (wget's `metadata://` records and the like are not pages).
//! "Changed" means a different payload digest; a revisit record says "same as before", so a
//! revisit on either side counts as unchanged unless both digests are known and differ.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::cdx::canon;
use crate::commands::http;
use crate::commands::index::{self, IndexError};

mod pages;

/// Largest record block read for `--url`.
const MAX_PAGE_BLOCK: u64 = 64 * 1024 * 1024;
/// Largest decoded page body compared by `--url`.
const MAX_PAGE_BODY: usize = 32 * 1024 * 1024;
/// Beyond this many differing lines the page diff stops looking for common lines in the
/// middle and shows it as replaced (keeps time and memory bounded on unrelated pages).
const MAX_EDITS: usize = 20_000;
/// Unchanged lines shown around each change in the page diff.
const CONTEXT: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: no CDXJ index and no WARC or ARC file found (give a crawl folder, a folder of .cdxj files, a .cdxj file, or WARC/ARC files or folders of them)", .0.display())]
    NoIndex(PathBuf),
    #[error(transparent)]
    Input(#[from] index::InputError),
    #[error("{}:{line}: CDXJ lines are not sorted (this line sorts before the one above it); sort with `LC_ALL=C sort` or rebuild with `archiver index`", .path.display())]
    Unsorted { path: PathBuf, line: u64 },
    #[error("{}:{line}: not a CDXJ line: {message}", .path.display())]
    BadLine {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("{url} was not captured in the {side} crawl")]
    NotCaptured { url: String, side: &'static str },
    #[error("{url}: the {side} capture is a revisit whose original is in neither crawl")]
    NoOriginal { url: String, side: &'static str },
    #[error("WARC file {filename} not found in {}", .dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "))]
    WarcMissing {
        filename: String,
        dirs: Vec<PathBuf>,
    },
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("{url}: {message}")]
    Page { url: String, message: String },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> DiffError + '_ {
    move |source| DiffError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One crawl as `diff` sees it: its CDXJ files and where its WARCs may be.
#[derive(Debug, Clone)]
pub struct Crawl {
    /// What the user gave, for the report.
    pub label: String,
    pub indexes: Vec<PathBuf>,
    pub warc_dirs: Vec<PathBuf>,
    /// The index built for a crawl given as WARC/ARC files only; removed when the last clone
    /// of the crawl goes.
    _built: Option<std::sync::Arc<tempfile::TempDir>>,
}

impl Crawl {
    /// A crawl output folder (`OUT` with `indexes/` and `warcs/`), a folder of `.cdxj` files,
    /// or one `.cdxj` file; or, where there is no CDXJ, WARC and ARC files (a file, or a folder
    /// searched with its sub-folders, such as an old ARC crawl), indexed first.
    pub fn locate(path: &Path) -> Result<Crawl, DiffError> {
        let label = path.display().to_string();
        if path.is_file() {
            let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if index::is_archive_name(&name) {
                return Crawl::from_archives(label, vec![path.to_path_buf()]);
            }
            return Ok(Crawl {
                label,
                indexes: vec![path.to_path_buf()],
                warc_dirs: vec![dir.join("..").join("warcs"), dir],
                _built: None,
            });
        }
        if !path.is_dir() {
            return Err(DiffError::Input(index::InputError::Missing(
                path.to_path_buf(),
            )));
        }
        let (index_dir, warc_dirs) = if path.join("indexes").is_dir() {
            let dirs = vec![path.join("warcs"), path.to_path_buf()];
            (path.join("indexes"), dirs)
        } else {
            let dirs = vec![path.to_path_buf(), path.join("..").join("warcs")];
            (path.to_path_buf(), dirs)
        };
        let mut indexes = Vec::new();
        for entry in std::fs::read_dir(&index_dir).map_err(io_at(&index_dir))? {
            let p = entry.map_err(io_at(&index_dir))?.path();
            if p.extension().is_some_and(|e| e == "cdxj") && p.is_file() {
                indexes.push(p);
            }
        }
        if indexes.is_empty() {
            let found = match index::find_archives(&[path.to_path_buf()]) {
                Ok(found) => found,
                Err(index::InputError::NoArchives(_)) => {
                    return Err(DiffError::NoIndex(path.to_path_buf()))
                }
                Err(e) => return Err(DiffError::Input(e)),
            };
            return Crawl::from_archives(label, found.files);
        }
        indexes.sort();
        Ok(Crawl {
            label,
            indexes,
            warc_dirs,
            _built: None,
        })
    }

    /// Indexes `files` into a temporary CDXJ, as `archiver index` would. Damaged records are
    /// warned about (the rest is compared); a file that cannot be read at all is an error.
    fn from_archives(label: String, files: Vec<PathBuf>) -> Result<Crawl, DiffError> {
        let tmp = tempfile::tempdir().map_err(io_at(Path::new("temporary folder")))?;
        let cdxj = tmp.path().join("built.cdxj");
        let mut out = BufWriter::new(File::create(&cdxj).map_err(io_at(&cdxj))?);
        let report = index::index_to(&files, &mut out).map_err(io_at(&cdxj))?;
        out.flush().map_err(io_at(&cdxj))?;
        if let Some(e) = report.failed.into_iter().next() {
            return Err(DiffError::Index(e));
        }
        for (path, problem) in &report.problems {
            tracing::warn!("{}: {problem}", path.display());
        }
        let mut warc_dirs: Vec<PathBuf> = Vec::new();
        for f in &files {
            let dir = f.parent().unwrap_or(Path::new(".")).to_path_buf();
            if !warc_dirs.contains(&dir) {
                warc_dirs.push(dir);
            }
        }
        Ok(Crawl {
            label,
            indexes: vec![cdxj],
            warc_dirs,
            _built: Some(std::sync::Arc::new(tmp)),
        })
    }
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Html,
}

/// The JSON fields of a CDXJ line that `diff` reads.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    url: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    mime: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    status: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    digest: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    offset: Option<serde_json::Value>,
    #[serde(default)]
    length: Option<serde_json::Value>,
    #[serde(borrow, default)]
    filename: Option<std::borrow::Cow<'a, str>>,
}

/// One capture, from one CDXJ line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    pub key: String,
    pub timestamp: String,
    pub url: String,
    pub status: Option<String>,
    pub digest: Option<String>,
    pub revisit: bool,
    pub filename: Option<String>,
    pub offset: Option<u64>,
    pub length: Option<u64>,
}

/// Splits and parses a CDXJ line; `Ok(None)` for captures that are not http(s).
fn parse_line(line: &str) -> Result<Option<Capture>, String> {
    let mut parts = line.splitn(3, ' ');
    let (Some(key), Some(ts), Some(json)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("expected KEY TIMESTAMP {JSON}".into());
    };
    let f: Fields = serde_json::from_str(json).map_err(|e| format!("bad JSON: {e}"))?;
    let Some(url) = f.url else {
        return Err("no \"url\" field".into());
    };
    let lower = url.get(..8).unwrap_or(&url).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Ok(None);
    }
    let number = |v: &Option<serde_json::Value>| match v {
        Some(serde_json::Value::String(s)) => s.parse().ok(),
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        _ => None,
    };
    Ok(Some(Capture {
        key: key.to_string(),
        timestamp: ts.to_string(),
        url: url.into_owned(),
        status: f.status.map(|s| s.into_owned()).filter(|s| s != "-"),
        digest: f.digest.map(|s| s.into_owned()).filter(|s| s != "-"),
        revisit: f.mime.as_deref() == Some("warc/revisit"),
        filename: f.filename.map(|s| s.into_owned()),
        offset: number(&f.offset),
        length: number(&f.length),
    }))
}

/// One CDXJ file read line by line, checking the order.
struct IndexReader {
    path: PathBuf,
    reader: BufReader<File>,
    line_no: u64,
    prev: String,
}

impl IndexReader {
    fn open(path: &Path) -> Result<IndexReader, DiffError> {
        let file = File::open(path).map_err(io_at(path))?;
        Ok(IndexReader {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(256 * 1024, file),
            line_no: 0,
            prev: String::new(),
        })
    }

    /// The next index line (meta lines starting with `!` and blank lines skipped).
    fn next(&mut self) -> Result<Option<(String, u64)>, DiffError> {
        loop {
            let mut raw = Vec::new();
            let n = self
                .reader
                .read_until(b'\n', &mut raw)
                .map_err(io_at(&self.path))?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            while raw.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                raw.pop();
            }
            let line = String::from_utf8(raw).map_err(|_| DiffError::BadLine {
                path: self.path.clone(),
                line: self.line_no,
                message: "not UTF-8".into(),
            })?;
            if line.is_empty() || line.starts_with('!') {
                continue;
            }
            if line < self.prev {
                return Err(DiffError::Unsorted {
                    path: self.path.clone(),
                    line: self.line_no,
                });
            }
            self.prev.clone_from(&line);
            return Ok(Some((line, self.line_no)));
        }
    }
}

/// The lines of all of a crawl's CDXJ files in one sorted stream.
struct SideStream {
    readers: Vec<IndexReader>,
    heap: BinaryHeap<Reverse<(String, usize, u64)>>,
    /// A capture read ahead while grouping.
    peeked: Option<Capture>,
}

impl SideStream {
    fn open(crawl: &Crawl) -> Result<SideStream, DiffError> {
        let mut readers = Vec::new();
        for p in &crawl.indexes {
            readers.push(IndexReader::open(p)?);
        }
        let mut heap = BinaryHeap::new();
        for (i, r) in readers.iter_mut().enumerate() {
            if let Some((line, no)) = r.next()? {
                heap.push(Reverse((line, i, no)));
            }
        }
        Ok(SideStream {
            readers,
            heap,
            peeked: None,
        })
    }

    /// The next http(s) capture in key order.
    fn next_capture(&mut self) -> Result<Option<Capture>, DiffError> {
        if let Some(c) = self.peeked.take() {
            return Ok(Some(c));
        }
        while let Some(Reverse((line, i, no))) = self.heap.pop() {
            if let Some(next) = self.readers[i].next()? {
                self.heap.push(Reverse((next.0, i, next.1)));
            }
            match parse_line(&line) {
                Ok(Some(c)) => return Ok(Some(c)),
                Ok(None) => continue,
                Err(message) => {
                    return Err(DiffError::BadLine {
                        path: self.readers[i].path.clone(),
                        line: no,
                        message,
                    })
                }
            }
        }
        Ok(None)
    }

    /// The capture that stands for the next key: the latest (a response before a revisit at
    /// the same second).
    fn next_page(&mut self) -> Result<Option<Capture>, DiffError> {
        let Some(mut best) = self.next_capture()? else {
            return Ok(None);
        };
        while let Some(c) = self.next_capture()? {
            if c.key != best.key {
                self.peeked = Some(c);
                break;
            }
            if (c.timestamp.as_str(), !c.revisit) >= (best.timestamp.as_str(), !best.revisit) {
                best = c;
            }
        }
        Ok(Some(best))
    }
}

/// What happened to one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Added,
    Removed,
    Changed,
    Unchanged,
}

/// Counts for one host (or for everything).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub added: u64,
    pub removed: u64,
    pub changed: u64,
    pub unchanged: u64,
    pub status_changes: u64,
}

impl Counts {
    fn add(&mut self, change: Change, status_changed: bool) {
        match change {
            Change::Added => self.added += 1,
            Change::Removed => self.removed += 1,
            Change::Changed => self.changed += 1,
            Change::Unchanged => self.unchanged += 1,
        }
        if status_changed {
            self.status_changes += 1;
        }
    }
}

/// A list written to a temporary file, one tab-separated row per entry.
struct Spool {
    file: BufWriter<File>,
    rows: u64,
}

impl Spool {
    fn new() -> io::Result<Spool> {
        Ok(Spool {
            file: BufWriter::new(tempfile::tempfile()?),
            rows: 0,
        })
    }

    fn push(&mut self, fields: &[&str]) -> io::Result<()> {
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                self.file.write_all(b"\t")?;
            }
            self.file.write_all(clean_field(f).as_bytes())?;
        }
        self.file.write_all(b"\n")?;
        self.rows += 1;
        Ok(())
    }

    /// Calls `each` with the fields of every row, in order.
    fn replay(self, mut each: impl FnMut(&[&str]) -> io::Result<()>) -> io::Result<()> {
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        for line in BufReader::new(file).lines() {
            let line = line?;
            let fields: Vec<&str> = line.split('\t').collect();
            each(&fields)?;
        }
        Ok(())
    }
}

/// Tabs and line breaks would break a spool row; URLs never hold them legitimately.
fn clean_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(['\t', '\n', '\r']) {
        s.replace('\t', "%09")
            .replace('\n', "%0A")
            .replace('\r', "%0D")
            .into()
    } else {
        s.into()
    }
}

/// The comparison, before it is rendered.
struct Outcome {
    total: Counts,
    hosts: BTreeMap<String, Counts>,
    /// url, timestamp, status
    added: Spool,
    /// url, timestamp, status
    removed: Spool,
    /// url, old timestamp, new timestamp, then for old and new: WARC file, offset, "r" for a
    /// revisit (else "-")
    changed: Spool,
    /// url, old timestamp, new timestamp
    unchanged: Spool,
    /// url, old status, new status, old timestamp, new timestamp
    status: Spool,
}

/// Compares the two crawls and writes the report in `format` to `out`. `pywb` is the replay
/// base (`http://host:port/COLLECTION`) the HTML report links to.
pub fn diff(
    old: &Crawl,
    new: &Crawl,
    format: Format,
    pywb: Option<&str>,
    all: bool,
    out: &mut dyn Write,
) -> Result<Counts, DiffError> {
    let outcome = compare(old, new).map_err(|e| match e {
        CompareError::Diff(d) => d,
        CompareError::Io(source) => DiffError::Io {
            path: std::env::temp_dir(),
            source,
        },
    })?;
    let total = outcome.total;
    let out_err = |source| DiffError::Io {
        path: PathBuf::from("<output>"),
        source,
    };
    match format {
        Format::Text => render_text(old, new, outcome, all, out).map_err(out_err)?,
        Format::Json => render_json(old, new, outcome, out).map_err(out_err)?,
        Format::Html => render_html(old, new, outcome, pywb, out).map_err(out_err)?,
    }
    Ok(total)
}

enum CompareError {
    Diff(DiffError),
    Io(io::Error),
}

impl From<DiffError> for CompareError {
    fn from(e: DiffError) -> Self {
        CompareError::Diff(e)
    }
}

impl From<io::Error> for CompareError {
    fn from(e: io::Error) -> Self {
        CompareError::Io(e)
    }
}

/// The merge of the two sorted streams.
fn compare(old: &Crawl, new: &Crawl) -> Result<Outcome, CompareError> {
    let mut a = SideStream::open(old)?;
    let mut b = SideStream::open(new)?;
    let mut o = Outcome {
        total: Counts::default(),
        hosts: BTreeMap::new(),
        added: Spool::new()?,
        removed: Spool::new()?,
        changed: Spool::new()?,
        unchanged: Spool::new()?,
        status: Spool::new()?,
    };
    let mut x = a.next_page()?;
    let mut y = b.next_page()?;
    loop {
        match (x.take(), y.take()) {
            (None, None) => break,
            (Some(p), None) => {
                record_one(&mut o, Change::Removed, &p)?;
                x = a.next_page()?;
            }
            (None, Some(q)) => {
                record_one(&mut o, Change::Added, &q)?;
                y = b.next_page()?;
            }
            (Some(p), Some(q)) => match p.key.cmp(&q.key) {
                std::cmp::Ordering::Less => {
                    record_one(&mut o, Change::Removed, &p)?;
                    x = a.next_page()?;
                    y = Some(q);
                }
                std::cmp::Ordering::Greater => {
                    record_one(&mut o, Change::Added, &q)?;
                    x = Some(p);
                    y = b.next_page()?;
                }
                std::cmp::Ordering::Equal => {
                    record_pair(&mut o, &p, &q)?;
                    x = a.next_page()?;
                    y = b.next_page()?;
                }
            },
        }
    }
    Ok(o)
}

/// A page in only one crawl.
fn record_one(o: &mut Outcome, change: Change, c: &Capture) -> io::Result<()> {
    let status = c.status.as_deref().unwrap_or("-");
    match change {
        Change::Added => o.added.push(&[&c.url, &c.timestamp, status])?,
        _ => o.removed.push(&[&c.url, &c.timestamp, status])?,
    }
    count(o, &c.url, change, false);
    Ok(())
}

/// A page in both crawls.
fn record_pair(o: &mut Outcome, old: &Capture, new: &Capture) -> io::Result<()> {
    let change = classify(old, new);
    let row = [new.url.as_str(), &old.timestamp, &new.timestamp];
    match change {
        Change::Changed => {
            // Where both captures are, for the HTML report's text comparison.
            let place = |c: &Capture| {
                let revisit = if c.revisit { "r" } else { "-" };
                (
                    c.filename.clone().unwrap_or_else(|| "-".into()),
                    c.offset.map_or_else(|| "-".into(), |n| n.to_string()),
                    revisit,
                )
            };
            let (fa, oa, ra) = place(old);
            let (fb, ob, rb) = place(new);
            o.changed.push(&[
                &new.url,
                &old.timestamp,
                &new.timestamp,
                &fa,
                &oa,
                ra,
                &fb,
                &ob,
                rb,
            ])?
        }
        _ => o.unchanged.push(&row)?,
    }
    let status_changed = match (&old.status, &new.status) {
        (Some(a), Some(b)) => a != b,
        _ => false,
    };
    if status_changed {
        let (a, b) = (old.status.as_deref(), new.status.as_deref());
        o.status.push(&[
            &new.url,
            a.unwrap_or("-"),
            b.unwrap_or("-"),
            &old.timestamp,
            &new.timestamp,
        ])?;
    }
    count(o, &new.url, change, status_changed);
    Ok(())
}

/// Changed or unchanged: a different payload digest, unless a revisit vouches for sameness.
fn classify(old: &Capture, new: &Capture) -> Change {
    match (&old.digest, &new.digest) {
        (Some(a), Some(b)) if a != b && !new.revisit => Change::Changed,
        (None, Some(_)) | (Some(_), None) if !old.revisit && !new.revisit => Change::Changed,
        _ => Change::Unchanged,
    }
}

fn count(o: &mut Outcome, url: &str, change: Change, status_changed: bool) {
    o.total.add(change, status_changed);
    let host = host_of(url);
    match o.hosts.get_mut(host.as_str()) {
        Some(c) => c.add(change, status_changed),
        None => {
            let mut c = Counts::default();
            c.add(change, status_changed);
            o.hosts.insert(host, c);
        }
    }
}

/// `http://User@Example.com:8080/x` → `example.com:8080`.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority
        .rsplit_once('@')
        .map(|(_, h)| h)
        .unwrap_or(authority);
    host.to_ascii_lowercase()
}

// ---------------------------------------------------------------------------------------------
// Rendering

fn render_text(
    old: &Crawl,
    new: &Crawl,
    o: Outcome,
    all: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let t = o.total;
    writeln!(out, "archiver diff")?;
    writeln!(out, "  old: {}", old.label)?;
    writeln!(out, "  new: {}", new.label)?;
    writeln!(
        out,
        "added {}, removed {}, changed {}, unchanged {}, status changes {}",
        t.added, t.removed, t.changed, t.unchanged, t.status_changes
    )?;
    writeln!(out, "\nper host:")?;
    let width = o.hosts.keys().map(|h| h.len()).max().unwrap_or(4).max(4);
    writeln!(
        out,
        "  {:width$}  {:>9} {:>9} {:>9} {:>9} {:>9}",
        "host", "added", "removed", "changed", "unchanged", "status"
    )?;
    for (host, c) in &o.hosts {
        writeln!(
            out,
            "  {host:width$}  {:>9} {:>9} {:>9} {:>9} {:>9}",
            c.added, c.removed, c.changed, c.unchanged, c.status_changes
        )?;
    }
    section(out, "added", o.added, |out, f| {
        writeln!(out, "  + {}  [{}]", f[0], f.get(2).unwrap_or(&"-"))
    })?;
    section(out, "removed", o.removed, |out, f| {
        writeln!(out, "  - {}  [{}]", f[0], f.get(2).unwrap_or(&"-"))
    })?;
    section(out, "changed", o.changed, |out, f| {
        let (a, b) = (f.get(1).unwrap_or(&""), f.get(2).unwrap_or(&""));
        writeln!(out, "  ~ {}  ({a} -> {b})", f[0])
    })?;
    section(out, "status changes", o.status, |out, f| {
        let (a, b) = (f.get(1).unwrap_or(&"-"), f.get(2).unwrap_or(&"-"));
        writeln!(out, "  ! {}  {a} -> {b}", f[0])
    })?;
    // Changes only, unless asked: the unchanged pages are usually most of a crawl.
    if all {
        section(out, "unchanged", o.unchanged, |out, f| {
            writeln!(out, "  = {}", f[0])
        })?;
    } else if o.unchanged.rows > 0 {
        writeln!(
            out,
            "\nunchanged: {} (not listed; --all lists them)",
            o.unchanged.rows
        )?;
    }
    Ok(())
}

/// A titled list in the text report (nothing when empty).
fn section(
    out: &mut dyn Write,
    title: &str,
    spool: Spool,
    mut row: impl FnMut(&mut dyn Write, &[&str]) -> io::Result<()>,
) -> io::Result<()> {
    if spool.rows == 0 {
        return Ok(());
    }
    writeln!(out, "\n{title} ({}):", spool.rows)?;
    spool.replay(|f| row(out, f))
}

fn counts_json(c: &Counts) -> String {
    format!(
        "{{\"added\": {}, \"removed\": {}, \"changed\": {}, \"unchanged\": {}, \"status_changes\": {}}}",
        c.added, c.removed, c.changed, c.unchanged, c.status_changes
    )
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

fn render_json(old: &Crawl, new: &Crawl, o: Outcome, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{{")?;
    writeln!(out, "  \"old\": {},", json_str(&old.label))?;
    writeln!(out, "  \"new\": {},", json_str(&new.label))?;
    writeln!(out, "  \"summary\": {},", counts_json(&o.total))?;
    write!(out, "  \"hosts\": {{")?;
    for (i, (host, c)) in o.hosts.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        write!(out, "{sep}\n    {}: {}", json_str(host), counts_json(c))?;
    }
    writeln!(out, "\n  }},")?;
    for (name, spool) in [
        ("added", o.added),
        ("removed", o.removed),
        ("changed", o.changed),
        ("unchanged", o.unchanged),
    ] {
        write!(out, "  {}: [", json_str(name))?;
        let mut first = true;
        spool.replay(|f| {
            let sep = if first { "" } else { "," };
            first = false;
            write!(out, "{sep}\n    {}", json_str(f[0]))
        })?;
        writeln!(out, "{}],", if first { "" } else { "\n  " })?;
    }
    write!(out, "  \"status_changes\": [")?;
    let mut first = true;
    o.status.replay(|f| {
        let sep = if first { "" } else { "," };
        first = false;
        write!(
            out,
            "{sep}\n    {{\"url\": {}, \"old\": {}, \"new\": {}}}",
            json_str(f[0]),
            json_str(f.get(1).unwrap_or(&"-")),
            json_str(f.get(2).unwrap_or(&"-"))
        )
    })?;
    writeln!(out, "{}]\n}}", if first { "" } else { "\n  " })?;
    Ok(())
}

/// Escapes text for HTML content and attribute values.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Link to the capture of `url` at `ts` in pywb, or the URL as text without a replay base.
fn replay_link(pywb: Option<&str>, ts: &str, url: &str, label: &str) -> String {
    match pywb {
        Some(base) => format!(
            "<a href=\"{}/{}/{}\">{}</a>",
            html_escape(base.trim_end_matches('/')),
            html_escape(ts),
            html_escape(url),
            html_escape(label)
        ),
        None => html_escape(label),
    }
}

const HTML_STYLE: &str = "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,th:first-child\
{text-align:left}li{font-family:monospace;margin:2px 0}.added{color:#060}.removed{color:#a00}\
.changed{color:#a60}del{background:#fdd;text-decoration:line-through}ins{background:#dfd;\
text-decoration:none}.words{font-family:serif;margin:.3em 0 1em 1em;max-width:60em}\
.cut{color:#888;font-style:italic}summary{cursor:pointer}";

/// Changed pages compared word by word in the HTML report; past this, listed only (each costs
/// reading two records from the WARCs).
const MAX_COMPARED: u64 = 500;

/// `20261130233813` → `2026-11-30 23:38:13`.
fn capture_date(ts: &str) -> String {
    if ts.len() < 14 || !ts.bytes().all(|b| b.is_ascii_digit()) {
        return ts.to_string();
    }
    format!(
        "{}-{}-{} {}:{}:{}",
        &ts[..4],
        &ts[4..6],
        &ts[6..8],
        &ts[8..10],
        &ts[10..12],
        &ts[12..14]
    )
}

fn human_size(n: usize) -> String {
    indicatif::HumanBytes(n as u64).to_string()
}

/// A changed page with how it changed, for the HTML report.
struct ChangedPage {
    url: String,
    old_ts: String,
    new_ts: String,
    change: pages::PageChange,
}

/// Reads the changed rows and compares each page's two captures.
fn compare_changed(old: &Crawl, new: &Crawl, spool: Spool) -> io::Result<Vec<ChangedPage>> {
    let mut pages = Vec::new();
    let mut n = 0u64;
    spool.replay(|f| {
        n += 1;
        let field = |i: usize| f.get(i).copied().unwrap_or("-");
        let capture = |ts: &str, file: &str, offset: &str, revisit: &str| Capture {
            key: String::new(),
            timestamp: ts.to_string(),
            url: f[0].to_string(),
            status: None,
            digest: None,
            revisit: revisit == "r",
            filename: (file != "-").then(|| file.to_string()),
            offset: offset.parse().ok(),
            length: None,
        };
        let change = if n > MAX_COMPARED {
            pages::PageChange::NotCompared(format!(
                "only the first {MAX_COMPARED} changed pages are compared; use --url"
            ))
        } else {
            let a = capture(field(1), field(3), field(4), field(5));
            let b = capture(field(2), field(6), field(7), field(8));
            pages::compare((old, &a), (new, &b))
        };
        pages.push(ChangedPage {
            url: f[0].to_string(),
            old_ts: field(1).to_string(),
            new_ts: field(2).to_string(),
            change,
        });
        Ok(())
    })?;
    Ok(pages)
}

fn render_html(
    old: &Crawl,
    new: &Crawl,
    o: Outcome,
    pywb: Option<&str>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let t = o.total;
    let changed = compare_changed(old, new, o.changed)?;
    let content: Vec<&ChangedPage> = changed
        .iter()
        .filter(|p| matches!(p.change, pages::PageChange::Content { .. }))
        .collect();
    let links_only: Vec<&ChangedPage> = changed
        .iter()
        .filter(|p| matches!(p.change, pages::PageChange::LinksOnly { .. }))
        .collect();
    let not_compared: Vec<&ChangedPage> = changed
        .iter()
        .filter(|p| matches!(p.change, pages::PageChange::NotCompared(_)))
        .collect();
    writeln!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>archiver diff</title>\
         <style>{HTML_STYLE}</style></head><body>"
    )?;
    writeln!(out, "<h1>What changed</h1>")?;
    writeln!(
        out,
        "<p>old: <code>{}</code><br>new: <code>{}</code></p>",
        html_escape(&old.label),
        html_escape(&new.label)
    )?;
    writeln!(
        out,
        "<p><b>{}</b> added, <b>{}</b> removed, <b>{}</b> changed ({} content, {} only links, \
         {} not compared), <b>{}</b> unchanged, <b>{}</b> status changes.</p>",
        t.added,
        t.removed,
        t.changed,
        content.len(),
        links_only.len(),
        not_compared.len(),
        t.unchanged,
        t.status_changes
    )?;
    writeln!(out, "<table><tr><th>host</th><th>added</th><th>removed</th><th>changed</th><th>unchanged</th><th>status changes</th></tr>")?;
    let mut rows: Vec<(String, Counts)> = o.hosts.iter().map(|(h, c)| (h.clone(), *c)).collect();
    rows.push(("all hosts".to_string(), t));
    for (host, c) in rows {
        writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            html_escape(&host),
            c.added,
            c.removed,
            c.changed,
            c.unchanged,
            c.status_changes
        )?;
    }
    writeln!(out, "</table>")?;
    // Both captures of a page: their dates, each linking to its own capture in replay.
    let both = |url: &str, a: &str, b: &str| {
        format!(
            "{} &rarr; {}",
            replay_link(pywb, a, url, &capture_date(a)),
            replay_link(pywb, b, url, &capture_date(b))
        )
    };
    writeln!(out, "<h2>Content changed ({})</h2>", content.len())?;
    for p in &content {
        if let pages::PageChange::Content { sizes, words } = &p.change {
            writeln!(
                out,
                "<details open><summary><code>{}</code> {} ({} &rarr; {})</summary>\
                 <div class=\"words\">{words}</div></details>",
                html_escape(&p.url),
                both(&p.url, &p.old_ts, &p.new_ts),
                human_size(sizes.0),
                human_size(sizes.1)
            )?;
        }
    }
    writeln!(out, "<h2>Only links changed ({})</h2>", links_only.len())?;
    if !links_only.is_empty() {
        writeln!(out, "<ul class=\"changed\">")?;
    }
    for p in &links_only {
        if let pages::PageChange::LinksOnly {
            sizes,
            added,
            removed,
        } = &p.change
        {
            let list = |sign: &str, v: &[String]| -> String {
                v.iter()
                    .map(|l| format!(" {sign}<code>{}</code>", html_escape(l)))
                    .collect()
            };
            let what = if added.is_empty() && removed.is_empty() {
                " (only the markup changed)".to_string()
            } else {
                format!(":{}{}", list("+", added), list("&minus;", removed))
            };
            writeln!(
                out,
                "<li>{} {} ({} &rarr; {}){what}</li>",
                html_escape(&p.url),
                both(&p.url, &p.old_ts, &p.new_ts),
                human_size(sizes.0),
                human_size(sizes.1)
            )?;
        }
    }
    if !links_only.is_empty() {
        writeln!(out, "</ul>")?;
    }
    if !not_compared.is_empty() {
        writeln!(
            out,
            "<h2>Changed, text not compared ({})</h2>\n<ul class=\"changed\">",
            not_compared.len()
        )?;
        for p in &not_compared {
            if let pages::PageChange::NotCompared(why) = &p.change {
                writeln!(
                    out,
                    "<li>{} {} ({})</li>",
                    html_escape(&p.url),
                    both(&p.url, &p.old_ts, &p.new_ts),
                    html_escape(why)
                )?;
            }
        }
        writeln!(out, "</ul>")?;
    }
    // An added or removed URL has one capture: its replay link, date and status.
    let one_capture = |f: &[&str]| {
        let ts = f.get(1).unwrap_or(&"");
        format!(
            "{} {} [{}]",
            html_escape(f[0]),
            replay_link(pywb, ts, f[0], &capture_date(ts)),
            html_escape(f.get(2).unwrap_or(&"-"))
        )
    };
    html_section(out, "Added", "added", o.added, one_capture)?;
    html_section(out, "Removed", "removed", o.removed, one_capture)?;
    html_section(out, "Status changes", "changed", o.status, |f| {
        let (a, b) = (f.get(1).unwrap_or(&"-"), f.get(2).unwrap_or(&"-"));
        let (ta, tb) = (f.get(3).unwrap_or(&""), f.get(4).unwrap_or(&""));
        format!(
            "{} {} &rarr; {}",
            html_escape(f[0]),
            replay_link(pywb, ta, f[0], a),
            replay_link(pywb, tb, f[0], b)
        )
    })?;
    // Unchanged pages are most of a crawl: collapsed, to be opened when wanted.
    writeln!(
        out,
        "<details><summary><b>Unchanged ({})</b></summary>",
        o.unchanged.rows
    )?;
    if o.unchanged.rows > 0 {
        writeln!(out, "<ul>")?;
        o.unchanged.replay(|f| {
            let ts = f.get(2).unwrap_or(&"");
            writeln!(out, "<li>{}</li>", replay_link(pywb, ts, f[0], f[0]))
        })?;
        writeln!(out, "</ul>")?;
    }
    writeln!(out, "</details>\n</body></html>")
}

fn html_section(
    out: &mut dyn Write,
    title: &str,
    class: &str,
    spool: Spool,
    item: impl Fn(&[&str]) -> String,
) -> io::Result<()> {
    writeln!(out, "<h2>{title} ({})</h2>", spool.rows)?;
    if spool.rows == 0 {
        return Ok(());
    }
    writeln!(out, "<ul class=\"{class}\">")?;
    spool.replay(|f| writeln!(out, "<li>{}</li>", item(f)))?;
    writeln!(out, "</ul>")
}

// ---------------------------------------------------------------------------------------------
// --url: one page's text, old against new

/// The unified diff of the text of `url` between its captures in `old` and `new`, read from
/// the WARCs the indexes point to.
pub fn page_diff(old: &Crawl, new: &Crawl, url: &str) -> Result<String, DiffError> {
    let key = canon::surt(url);
    let a = find_capture(old, &key, url, "old")?;
    let b = find_capture(new, &key, url, "new")?;
    let a = resolve_revisit(a, old, new, url, "old")?;
    let b = resolve_revisit(b, new, old, url, "new")?;
    let text_a = page_text(&a.1, &a.0, url)?;
    let text_b = page_text(&b.1, &b.0, url)?;
    let lines_a: Vec<&str> = text_a.lines().collect();
    let lines_b: Vec<&str> = text_b.lines().collect();
    let ops = diff_lines(&lines_a, &lines_b);
    let mut out = format!(
        "--- {} {} (old)\n+++ {} {} (new)\n",
        a.0.url, a.0.timestamp, b.0.url, b.0.timestamp
    );
    let body = unified(&ops, CONTEXT);
    if body.is_empty() {
        out.push_str("(the extracted text is the same)\n");
    } else {
        out.push_str(&body);
    }
    Ok(out)
}

/// The latest capture of `key` in `crawl`.
fn find_capture(
    crawl: &Crawl,
    key: &str,
    url: &str,
    side: &'static str,
) -> Result<Capture, DiffError> {
    let found = captures_of(crawl, |c| c.key == key)?;
    found
        .into_iter()
        .max_by(|x, y| (&x.timestamp, !x.revisit).cmp(&(&y.timestamp, !y.revisit)))
        .ok_or_else(|| DiffError::NotCaptured {
            url: url.to_string(),
            side,
        })
}

/// Every capture of `crawl` for which `keep` is true.
fn captures_of(crawl: &Crawl, keep: impl Fn(&Capture) -> bool) -> Result<Vec<Capture>, DiffError> {
    let mut found = Vec::new();
    let mut stream = SideStream::open(crawl)?;
    while let Some(c) = stream.next_capture()? {
        if keep(&c) {
            found.push(c);
        }
    }
    Ok(found)
}

/// For a revisit, the capture it stands for (same key and digest, not a revisit), looked for
/// in its own crawl first, then in the other; with the crawl whose WARCs hold it.
fn resolve_revisit(
    c: Capture,
    own: &Crawl,
    other: &Crawl,
    url: &str,
    side: &'static str,
) -> Result<(Capture, Crawl), DiffError> {
    if !c.revisit {
        return Ok((c, own.clone()));
    }
    for crawl in [own, other] {
        let originals = captures_of(crawl, |o| {
            !o.revisit && o.key == c.key && o.digest.is_some() && o.digest == c.digest
        })?;
        if let Some(o) = originals
            .into_iter()
            .max_by(|x, y| x.timestamp.cmp(&y.timestamp))
        {
            return Ok((o, crawl.clone()));
        }
    }
    Err(DiffError::NoOriginal {
        url: url.to_string(),
        side,
    })
}

/// The text of the capture: record read from its WARC, HTTP head split off, transfer and
/// content codings undone, HTML turned into lines of text.
fn page_text(crawl: &Crawl, c: &Capture, url: &str) -> Result<String, DiffError> {
    let (mime, text, _) = page_source(crawl, c, url)?;
    if mime.contains("html") || (mime.is_empty() && text.trim_start().starts_with('<')) {
        Ok(html_text(&text))
    } else {
        Ok(text)
    }
}

/// The decoded body of a text capture, read from its WARC: its MIME type (lower case), its
/// text and its size in bytes. Captures that are not text are an error.
pub(crate) fn page_source(
    crawl: &Crawl,
    c: &Capture,
    url: &str,
) -> Result<(String, String, usize), DiffError> {
    let page_err = |message: String| DiffError::Page {
        url: url.to_string(),
        message,
    };
    let (Some(filename), Some(offset)) = (&c.filename, c.offset) else {
        return Err(page_err("the CDXJ line has no filename or offset".into()));
    };
    let path = crawl
        .warc_dirs
        .iter()
        .map(|d| d.join(filename))
        .find(|p| p.is_file())
        .ok_or_else(|| DiffError::WarcMissing {
            filename: filename.clone(),
            dirs: crawl.warc_dirs.clone(),
        })?;
    let payload = http::read_payload(&path, offset, MAX_PAGE_BLOCK, MAX_PAGE_BODY)?
        .ok_or_else(|| page_err("no HTTP head".into()))?;
    if payload.bad_chunking {
        return Err(page_err("bad chunked body".into()));
    }
    let decoded = &payload.body;
    if let Some(e) = &decoded.error {
        return Err(page_err(e.clone()));
    }
    let mime = payload
        .header("content-type")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let text = decode_text(&decoded.bytes, &mime);
    if mime.starts_with("text/")
        || mime.contains("html")
        || mime.contains("json")
        || mime.contains("xml")
        || mime.is_empty()
    {
        Ok((mime, text, decoded.bytes.len()))
    } else {
        Err(page_err(format!("not a text page ({mime})")))
    }
}

/// Bytes to text: Latin-1 when the page says so, UTF-8 (lossy) otherwise.
fn decode_text(bytes: &[u8], mime: &str) -> String {
    let latin1 = ["iso-8859-1", "latin1", "windows-1252", "us-ascii"]
        .iter()
        .any(|c| mime.contains(&format!("charset={c}")));
    if latin1 || (std::str::from_utf8(bytes).is_err() && !mime.contains("utf-8")) {
        bytes.iter().map(|&b| char::from(b)).collect()
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Elements after which the text starts a new line.
const BLOCKS: &str = "p, div, br, li, tr, td, th, h1, h2, h3, h4, h5, h6, title, section, \
                      article, header, footer, blockquote, pre, dd, dt, table, ul, ol, nav, \
                      aside, main, form, hr, figcaption, option";

/// The visible text of an HTML page, one line per block, whitespace collapsed; script, style
/// and template contents left out.
pub fn html_text(html: &str) -> String {
    use lol_html::{doc_text, element, EndTagHandler, HtmlRewriter, Settings};
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    let text = Rc::new(RefCell::new(String::new()));
    let hidden = Rc::new(Cell::new(0u32));
    {
        let (t1, t2, h1, h2) = (text.clone(), text.clone(), hidden.clone(), hidden.clone());
        let settings = Settings {
            element_content_handlers: vec![
                element!(
                    "script, style, template, noscript, head > *:not(title)",
                    move |el| {
                        h1.set(h1.get() + 1);
                        let h = h1.clone();
                        if let Some(handlers) = el.end_tag_handlers() {
                            let end: EndTagHandler<'static> = Box::new(move |_| {
                                h.set(h.get().saturating_sub(1));
                                Ok(())
                            });
                            handlers.push(end);
                        } else {
                            h.set(h.get().saturating_sub(1));
                        }
                        Ok(())
                    }
                ),
                element!(BLOCKS, move |el| {
                    t1.borrow_mut().push('\n');
                    let t = t1.clone();
                    if let Some(handlers) = el.end_tag_handlers() {
                        let end: EndTagHandler<'static> = Box::new(move |_| {
                            t.borrow_mut().push('\n');
                            Ok(())
                        });
                        handlers.push(end);
                    }
                    Ok(())
                }),
            ],
            document_content_handlers: vec![doc_text!(move |chunk| {
                if h2.get() == 0 {
                    // Line breaks in the source are spaces on screen; blocks make lines.
                    let mut t = t2.borrow_mut();
                    t.extend(
                        chunk
                            .as_str()
                            .chars()
                            .map(|c| if c == '\n' { ' ' } else { c }),
                    );
                }
                Ok(())
            })],
            ..Settings::new()
        };
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        // A parser error only cuts the text short; what was read is still worth comparing.
        if rewriter.write(html.as_bytes()).is_ok() {
            let _ = rewriter.end();
        }
    }
    let raw = text.borrow().clone();
    let mut out = String::new();
    for line in raw.lines() {
        let collapsed = decode_entities(&line.split_whitespace().collect::<Vec<_>>().join(" "));
        if !collapsed.is_empty() {
            out.push_str(&collapsed);
            out.push('\n');
        }
    }
    out
}

/// The character references text most often holds (lol_html hands text on undecoded).
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest[1..].find(';').map(|j| j + 1).filter(|&j| j <= 12);
        let decoded = end.and_then(|j| entity(&rest[1..j]).map(|c| (c, j)));
        match decoded {
            Some((c, j)) => {
                out.push(c);
                rest = &rest[j + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let value = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(value);
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "copy" => '©',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        _ => return None,
    })
}

/// One step of a line diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// Shortest edit script between two lists of lines (Myers' O(ND) algorithm), after taking
/// off the common start and end. Past [`MAX_EDITS`] differences the middle is shown as
/// wholly replaced.
pub fn diff_lines<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops: Vec<Op<'a>> = a[..head].iter().map(|l| Op::Same(l)).collect();
    match myers(ma, mb, MAX_EDITS) {
        Some(middle) => ops.extend(middle),
        None => {
            ops.extend(ma.iter().map(|l| Op::Del(l)));
            ops.extend(mb.iter().map(|l| Op::Add(l)));
        }
    }
    ops.extend(a[a.len() - tail..].iter().map(|l| Op::Same(l)));
    ops
}

/// Myers' greedy forward search, keeping each round's furthest points (only the 2d+1
/// diagonals that round can reach) to walk back the path. `None` past `max_d` edits.
fn myers<'a>(a: &[&'a str], b: &[&'a str], max_d: usize) -> Option<Vec<Op<'a>>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (a.len() + b.len()).min(max_d) as isize;
    let off = max + 1;
    let mut v = vec![0isize; (2 * off + 1) as usize];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=max {
        for k in (-d..=d).step_by(2) {
            let go_down =
                k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize]);
            let mut x = if go_down {
                v[(off + k + 1) as usize]
            } else {
                v[(off + k - 1) as usize] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(off + k) as usize] = x;
            if x >= n && y >= m {
                trace.push(v[(off - d) as usize..=(off + d) as usize].to_vec());
                return Some(backtrack(a, b, &trace));
            }
        }
        trace.push(v[(off - d) as usize..=(off + d) as usize].to_vec());
    }
    None
}

/// Walks the rounds of [`myers`] back from the end to the start.
fn backtrack<'a>(a: &[&'a str], b: &[&'a str], trace: &[Vec<isize>]) -> Vec<Op<'a>> {
    let mut ops = Vec::new();
    let (mut x, mut y) = (a.len() as isize, b.len() as isize);
    for d in (1..trace.len() as isize).rev() {
        let prev = &trace[(d - 1) as usize];
        let at = |k: isize| prev[(k + d - 1) as usize];
        let k = x - y;
        let go_down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let prev_k = if go_down { k + 1 } else { k - 1 };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        let (mid_x, mid_y) = if go_down {
            (prev_x, prev_y + 1)
        } else {
            (prev_x + 1, prev_y)
        };
        while x > mid_x && y > mid_y {
            ops.push(Op::Same(a[(x - 1) as usize]));
            x -= 1;
            y -= 1;
        }
        if go_down {
            ops.push(Op::Add(b[(y - 1) as usize]));
        } else {
            ops.push(Op::Del(a[(x - 1) as usize]));
        }
        x = prev_x;
        y = prev_y;
    }
    while x > 0 && y > 0 {
        ops.push(Op::Same(a[(x - 1) as usize]));
        x -= 1;
        y -= 1;
    }
    ops.reverse();
    ops
}

/// Unified-diff hunks (`@@ -a,b +c,d @@`) with `context` lines around each change; empty
/// when nothing differs.
pub fn unified(ops: &[Op<'_>], context: usize) -> String {
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| !matches!(op, Op::Same(_)))
        .map(|(i, _)| i)
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(context);
        let mut last = changed[i];
        while i + 1 < changed.len() && changed[i + 1] <= last + 2 * context + 1 {
            i += 1;
            last = changed[i];
        }
        let end = (last + context + 1).min(ops.len());
        let (mut a_line, mut b_line) = (1, 1);
        for op in &ops[..start] {
            match op {
                Op::Same(_) => {
                    a_line += 1;
                    b_line += 1;
                }
                Op::Del(_) => a_line += 1,
                Op::Add(_) => b_line += 1,
            }
        }
        let hunk = &ops[start..end];
        let a_len = hunk.iter().filter(|o| !matches!(o, Op::Add(_))).count();
        let b_len = hunk.iter().filter(|o| !matches!(o, Op::Del(_))).count();
        let _ = writeln!(out, "@@ -{a_line},{a_len} +{b_line},{b_len} @@");
        for op in hunk {
            let _ = match op {
                Op::Same(l) => writeln!(out, " {l}"),
                Op::Del(l) => writeln!(out, "-{l}"),
                Op::Add(l) => writeln!(out, "+{l}"),
            };
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(a: &[&str], ops: &[Op]) -> (Vec<String>, Vec<String>) {
        let mut old = Vec::new();
        let mut new = Vec::new();
        for op in ops {
            match op {
                Op::Same(l) => {
                    old.push(l.to_string());
                    new.push(l.to_string());
                }
                Op::Del(l) => old.push(l.to_string()),
                Op::Add(l) => new.push(l.to_string()),
            }
        }
        let _ = a;
        (old, new)
    }

    #[test]
    fn line_diff_is_minimal_and_reproduces_both_sides() {
        let a = ["a", "b", "c", "a", "b", "b", "a"];
        let b = ["c", "b", "a", "b", "a", "c"];
        let ops = diff_lines(&a, &b);
        let (old, new) = apply(&a, &ops);
        assert_eq!(old, a);
        assert_eq!(new, b);
        let edits = ops.iter().filter(|o| !matches!(o, Op::Same(_))).count();
        assert_eq!(edits, 5);
    }

    #[test]
    fn line_diff_handles_empty_and_equal_inputs() {
        assert!(diff_lines(&[], &[]).is_empty());
        assert_eq!(diff_lines(&["x"], &[]), vec![Op::Del("x")]);
        assert_eq!(diff_lines(&[], &["y"]), vec![Op::Add("y")]);
        assert_eq!(unified(&diff_lines(&["x", "y"], &["x", "y"]), 3), "");
    }

    #[test]
    fn unified_output_has_hunks_with_context() {
        let a: Vec<String> = (1..=20).map(|i| format!("line {i}")).collect();
        let mut b = a.clone();
        b[4] = "changed 5".into();
        b.insert(15, "new line".into());
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let b: Vec<&str> = b.iter().map(String::as_str).collect();
        let text = unified(&diff_lines(&a, &b), 2);
        assert!(
            text.starts_with("@@ -3,5 +3,5 @@\n line 3\n line 4\n-line 5\n+changed 5\n"),
            "{text}"
        );
        assert!(
            text.contains("@@ -14,4 +14,5 @@\n line 14\n line 15\n+new line\n line 16\n"),
            "{text}"
        );
    }

    #[test]
    fn html_text_keeps_visible_text_by_block() {
        let html = "<html><head><title>T &amp; t</title><style>p{}</style></head><body>\
                    <script>var x=1;</script><h1>Head</h1><p>One  <b>two</b>\nthree</p>\
                    <ul><li>a</li><li>b&#33;</li></ul></body></html>";
        assert_eq!(html_text(html), "T & t\nHead\nOne two three\na\nb!\n");
    }

    #[test]
    fn cdxj_lines_parse_and_non_http_is_skipped() {
        let c = parse_line(
            "com,example)/ 20261130233813 {\"url\": \"http://example.com/\", \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \"sha1:X\", \"length\": \"10\", \"offset\": 5, \"filename\": \"a.warc.gz\"}",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.offset, Some(5));
        assert_eq!(c.length, Some(10));
        assert_eq!(c.status.as_deref(), Some("200"));
        assert!(
            parse_line("org,gnu)/x 2026 {\"url\": \"metadata://gnu.org/x\"}")
                .unwrap()
                .is_none()
        );
        assert!(parse_line("garbage").is_err());
    }

    #[test]
    fn host_of_takes_the_authority() {
        assert_eq!(
            host_of("http://u:p@Example.COM:8080/x?y"),
            "example.com:8080"
        );
        assert_eq!(host_of("https://a.b/"), "a.b");
    }
}
