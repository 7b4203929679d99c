//! `archiver index`: sorted CDXJ for any WARC file (ours, warcio's, wget's, Heritrix's), and the
//! record-by-record WARC reader that `optout` and `diff` use as well.
//!
//! A CDXJ line needs the offset and the *compressed* length of its record. The `warc` crate
//! reads gzip WARCs through one `MultiGzDecoder`, which hides where a member starts and ends, so
//! this module walks the file itself: one gzip member at a time with `flate2::Decompress`
//! (state reused between members), counting the compressed bytes each member takes. Plain
//! `.warc` files are walked record by record the same way. Nothing is held whole in memory: a
//! record's block streams through a hash (when a digest must be computed) and is dropped.
//! `archiver index` does not even inflate what it does not read: see [`walk_skimming`].
//!
//! The lines themselves come from [`crate::cdx::cdxj_line`], the same function the WARC writer
//! uses, so `archiver index` and the crawler's own indexes agree with `cdxj-indexer` in one
//! place. Which records get a line, and what is computed when a header is missing, follows
//! cdxj-indexer 1.5.0 (warcio's lenient reading): see [`CdxVisitor`].
//!
//! Damaged input is reported, never fatal for the other files: a corrupt or truncated member
//! is reported with its offset and the walk resumes at the next gzip member (or `WARC/` line)
//! found after it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use flate2::{Crc, Decompress, FlushDecompress, Status};
use sha1::{Digest, Sha1};

use crate::arc;
use crate::cdx::{self, CdxRecord, LineSorter};
use crate::spool::sha1_label;

/// Read buffer over the file: large, because inflating is the hot loop.
const INPUT_BUF: usize = 256 * 1024;
/// Inflated bytes handed out per step, at most.
const OUTPUT_BUF: usize = 64 * 1024;
/// Inflated bytes of the first step of a member. Steps double from here, so reading the
/// headers inflates little more than the headers (the rest may be skimmed, not inflated).
const FIRST_STEP: usize = 1024;
/// A WARC or HTTP header line longer than this is damage, not data.
const MAX_LINE: u64 = 64 * 1024;
/// More header lines than this in one WARC head is damage too.
const MAX_HEAD_LINES: usize = 4096;
/// The HTTP head kept for the CDXJ fields (status, mime); longer heads are cut here, which only
/// matters when a digest must be computed (then the record is reported).
const MAX_HTTP_HEAD: usize = 1024 * 1024;
/// Sorted runs spill to temporary files beyond this many bytes of lines.
const SORT_RUN_BYTES: usize = 64 * 1024 * 1024;
/// Lines sent from a worker thread to the sorter in one message.
const LINE_BATCH: usize = 4096;
/// Blocks of a plain WARC with at least this much left unread are skipped by a seek rather
/// than read (see [`walk_skimming`]; gzip members are skimmed whatever is left).
const SKIM_MIN: u64 = 2 * 1024;
/// Input bytes an inflater may have taken in without using them yet (a 64-bit bit buffer).
const HELD_INPUT: u64 = 8;
/// Compressed bytes looked at per read while skimming.
const SKIM_CHUNK: usize = 1024 * 1024;

/// The `version` of heads read from ARC records.
const ARC_VERSION: &str = "ARC/1.0";

/// The WARC versions warcio accepts on a record's first line (compared upper-cased).
const WARC_VERSIONS: [&str; 4] = ["WARC/1.1", "WARC/1.0", "WARC/0.17", "WARC/0.18"];

/// Why a whole file could not be indexed (damage inside a file is a [`Problem`] instead).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: not a WARC or ARC file (it starts with {start:?})", .path.display())]
    NotWarc { path: PathBuf, start: String },
    #[error(
        "{}: the gzip member at offset {offset} holds more than one record, so records have no \
         offsets of their own; recompress it one member per record (`warcio recompress`)",
        .path.display()
    )]
    NotPerRecordGzip { path: PathBuf, offset: u64 },
    #[error("{}: no record starts at offset {offset}: {message}", .path.display())]
    NoRecordAt {
        path: PathBuf,
        offset: u64,
        message: String,
    },
}

/// Damage found inside a file: where, and what. The walk went on after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub offset: u64,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "offset {}: {}", self.offset, self.message)
    }
}

/// Where a record sits in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte of the record (of its gzip member in a `.warc.gz`).
    pub offset: u64,
    /// The CDXJ length: the whole gzip member, or in a plain WARC the header and block
    /// without the blank lines after it (as warcio counts it).
    pub length: u64,
    /// Where the next record starts: copying `offset..end` copies the record whole.
    pub end: u64,
}

/// The WARC header block of one record, as warcio reads it: names and values decoded per line
/// (UTF-8, else Latin-1), values without surrounding whitespace, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WarcHead {
    /// The first line, e.g. `WARC/1.1`.
    pub version: String,
    pub fields: Vec<(String, String)>,
}

impl WarcHead {
    /// Whether the record came from an ARC file (its fields are warcio's WARC rendering).
    pub fn is_arc(&self) -> bool {
        self.version == ARC_VERSION
    }

    /// What follows the block of this record: a newline in ARC, two CRLFs in WARC.
    fn trailer_len(&self) -> u64 {
        if self.is_arc() {
            1
        } else {
            4
        }
    }

    /// The first field called `name` (case-insensitive), as warcio's `get_header`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// WARC-Type, e.g. `response`.
    pub fn record_type(&self) -> Option<&str> {
        self.get("WARC-Type")
    }

    /// WARC-Record-ID, e.g. `<urn:uuid:…>`.
    pub fn record_id(&self) -> Option<&str> {
        self.get("WARC-Record-ID")
    }

    /// WARC-Target-URI as warcio hands it on: `<…>` unwrapped (a wget 1.19 bug) and spaces
    /// written `%20`.
    pub fn target_uri(&self) -> Option<String> {
        let raw = self.get("WARC-Target-URI")?;
        let unwrapped = match raw.strip_prefix('<').and_then(|r| r.strip_suffix('>')) {
            Some(inner) => inner,
            None => raw,
        };
        Some(unwrapped.replace(' ', "%20"))
    }

    /// Content-Length: `None` when missing, `Err` when not a number.
    pub fn content_length(&self) -> Option<Result<u64, String>> {
        let raw = self.get("Content-Length")?;
        let digits = raw.trim().trim_start_matches('+');
        Some(
            digits
                .parse::<u64>()
                .map_err(|_| format!("Content-Length {raw:?} is not a number")),
        )
    }
}

/// What a walk over one file reports to its user, record by record.
pub trait Visitor {
    /// What `record` hands on to `done`.
    type Item;

    /// Reads what it needs of the record's block (at most Content-Length bytes; the walker
    /// skips the rest). An I/O error here is damage in the file: the record is dropped.
    fn record(
        &mut self,
        offset: u64,
        head: &WarcHead,
        block: &mut dyn BufRead,
    ) -> io::Result<Self::Item>;

    /// The record was read to its end without damage; `span` says where it is.
    fn done(&mut self, span: Span, head: WarcHead, item: Self::Item);

    /// Damage found; the walk goes on after it where it can.
    fn problem(&mut self, problem: Problem);
}

/// Walks every record of the WARC file at `path` (gzip per record, or plain), calling
/// `visitor` for each. Fails only when the file cannot be read at all, is not a WARC, or is
/// gzipped as one stream (then no record has an offset of its own).
pub fn walk<V: Visitor>(path: &Path, visitor: &mut V) -> Result<(), IndexError> {
    walk_with(path, visitor, false)
}

/// [`walk`], but the part of a block the visitor did not read is skipped instead of inflated
/// when that is safe to do: a gzip member ends with the size of what it holds, and the WARC
/// headers say what that size is (head + Content-Length + the closing blank lines), so the end
/// of the member is the first place after which the size field and the next member's magic
/// bytes (or the end of the file) follow. Where no such place turns up the member is inflated
/// as usual. The price: a skipped body's CRC is not checked (damage there goes unnoticed;
/// `warcio check` and [`walk`] do check it). Plain WARCs simply seek over the block.
pub fn walk_skimming<V: Visitor>(path: &Path, visitor: &mut V) -> Result<(), IndexError> {
    walk_with(path, visitor, true)
}

fn walk_with<V: Visitor>(path: &Path, visitor: &mut V, skim: bool) -> Result<(), IndexError> {
    walk_range(path, visitor, skim, 0, u64::MAX).map(|_| ())
}

/// Walks the records that start in `start..stop` (`start` must be where a gzip member
/// starts); returns where the walk stopped: the end of the last record read (the start of the
/// first record at or after `stop`, when it stopped there).
fn walk_range<V: Visitor>(
    path: &Path,
    visitor: &mut V,
    skim: bool,
    start: u64,
    stop: u64,
) -> Result<u64, IndexError> {
    let io_err = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut src = Source::open(path).map_err(io_err)?;
    src.seek_to(start).map_err(io_err)?;
    let skim = if skim {
        let file = File::open(path).map_err(io_err)?;
        let len = file.metadata().map_err(io_err)?.len();
        Some((file, len))
    } else {
        None
    };
    let gzip = src
        .peek()
        .map_err(|source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        })?
        .starts_with(&[0x1f, 0x8b]);
    let mut walker = Walker {
        path,
        src,
        inflater: Inflater::new(),
        pending: None,
        // A walk from inside the file follows records already found.
        records: u64::from(start > 0),
        skim,
        skim_buf: vec![0; SKIM_CHUNK],
        stop,
    };
    if gzip {
        walker.walk_gzip(visitor)?;
    } else {
        walker.walk_plain(visitor)?;
    }
    Ok(walker.src.pos)
}

/// Reads the one record starting at `offset` (as a CDXJ line gives it): its head and up to
/// `max_block` bytes of its block.
pub fn read_record_at(
    path: &Path,
    offset: u64,
    max_block: u64,
) -> Result<(WarcHead, Vec<u8>), IndexError> {
    let io_err = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    let no_record = |message: String| IndexError::NoRecordAt {
        path: path.to_path_buf(),
        offset,
        message,
    };
    let mut src = Source::open(path).map_err(io_err)?;
    src.seek_to(offset).map_err(io_err)?;
    let gzip = src.peek().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
    let mut inflater = Inflater::new();
    let mut member;
    let reader: &mut dyn BufRead = if gzip {
        read_gzip_header(&mut src).map_err(|e| no_record(e.to_string()))?;
        member = Member {
            src: &mut src,
            inf: &mut inflater,
        };
        &mut member
    } else {
        &mut src
    };
    let head = match read_head(reader).map_err(|e| no_record(e.to_string()))? {
        HeadRead::Head(head) => head,
        HeadRead::Eof => return Err(no_record("the file ends there".into())),
        HeadRead::NotWarc(line) => return Err(no_record(format!("it starts with {line:?}"))),
    };
    let limit = match head.content_length() {
        Some(Ok(n)) => n.min(max_block),
        Some(Err(e)) => return Err(no_record(e)),
        None => max_block,
    };
    let mut block = Vec::new();
    reader
        .take(limit)
        .read_to_end(&mut block)
        .map_err(|e| no_record(e.to_string()))?;
    Ok((head, block))
}

/// Sorted, de-duplicated CDXJ lines of one WARC file, with `filename` as the CDXJ `filename`
/// (the file may be read under a temporary name), and the damage found.
pub fn cdxj_for_file(
    path: &Path,
    filename: &str,
) -> Result<(Vec<String>, Vec<Problem>), IndexError> {
    let mut visitor = CdxVisitor::new(filename);
    walk_skimming(path, &mut visitor)?;
    let mut lines = visitor.lines;
    cdx::sort_lines(&mut lines);
    lines.dedup();
    Ok((lines, visitor.problems))
}

/// Why the inputs of `index`, `diff` or `optout` name nothing to read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{}: no such file or folder", .0.display())]
    Missing(PathBuf),
    #[error("{}: no WARC or ARC file (.warc.gz, .warc, .arc.gz, .arc) in this folder or its sub-folders", .0.display())]
    NoArchives(PathBuf),
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Archive files found for the inputs.
#[derive(Debug, Default, Clone)]
pub struct Found {
    /// WARC and ARC files, in the order given (each folder's files sorted).
    pub files: Vec<PathBuf>,
    /// `.open` files (still being written by a crawl) that were left out.
    pub open: Vec<PathBuf>,
}

/// Whether a file name is one of the archive formats read here.
pub fn is_archive_name(name: &str) -> bool {
    [".warc.gz", ".warc", ".arc.gz", ".arc"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// The WARC and ARC files named by `inputs`: files as given, folders searched recursively
/// (sorted) as cdxj-indexer does, so a crawl's output folder, its `warcs/` folder or any tree of
/// archives works. A folder without any archive is an error naming it: a mistyped folder must
/// not pass for an empty collection. Hidden files and `.open` files are left out.
pub fn find_archives(inputs: &[PathBuf]) -> Result<Found, InputError> {
    let mut found = Found::default();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => InputError::Missing(input.clone()),
            _ => InputError::Io {
                path: input.clone(),
                source: e,
            },
        })?;
        if !meta.is_dir() {
            found.files.push(input.clone());
            continue;
        }
        let mut here = Found::default();
        collect_archives(input, &mut here)?;
        if here.files.is_empty() {
            return Err(InputError::NoArchives(input.clone()));
        }
        here.files.sort();
        here.open.sort();
        found.files.extend(here.files);
        found.open.extend(here.open);
    }
    Ok(found)
}

fn collect_archives(dir: &Path, found: &mut Found) -> Result<(), InputError> {
    let io_err = |source| InputError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let path = entry.map_err(io_err)?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect_archives(&path, found)?;
        } else if is_archive_name(&name) {
            found.files.push(path);
        } else if name.strip_suffix(".open").is_some_and(is_archive_name) {
            found.open.push(path);
        }
    }
    Ok(())
}

/// What `archiver index` did.
#[derive(Debug, Default)]
pub struct IndexReport {
    /// Files indexed (with or without damage).
    pub files: usize,
    /// Lines written (after removing duplicates).
    pub lines: u64,
    /// Damage found, per file.
    pub problems: Vec<(PathBuf, Problem)>,
    /// Files that could not be indexed at all.
    pub failed: Vec<IndexError>,
}

/// One piece of work for an indexing thread: a whole file, or one part of a large file split
/// at gzip member boundaries (so that one big WARC uses every core too).
struct Job {
    file: usize,
    start: u64,
    stop: u64,
    /// `Some((part, parts))` when the file is split.
    part: Option<(usize, usize)>,
}

/// Files at least this large are split when there are fewer files than threads...
const SPLIT_MIN: u64 = 32 * 1024 * 1024;
/// ...and at most this large: a part's lines are held until its neighbours confirm the split.
const SPLIT_MAX: u64 = 2 * 1024 * 1024 * 1024;

/// The jobs for `paths` on `threads` threads.
fn plan_jobs(paths: &[PathBuf], threads: usize, split_min: u64) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (file, path) in paths.iter().enumerate() {
        let splits = if paths.len() < threads {
            split_points(path, threads, split_min)
        } else {
            Vec::new()
        };
        if splits.is_empty() {
            jobs.push(Job {
                file,
                start: 0,
                stop: u64::MAX,
                part: None,
            });
            continue;
        }
        let parts = splits.len() + 1;
        let mut bounds = vec![0];
        bounds.extend(&splits);
        bounds.push(u64::MAX);
        for k in 0..parts {
            jobs.push(Job {
                file,
                start: bounds[k],
                stop: bounds[k + 1],
                part: Some((k, parts)),
            });
        }
    }
    jobs
}

/// Offsets that split a large gzip WARC into about `n` parts, each the start of a gzip member
/// that holds a WARC record head. Empty when the file is small, plain, ARC, or no such member
/// turns up.
fn split_points(path: &Path, n: usize, split_min: u64) -> Vec<u64> {
    let Ok(len) = std::fs::metadata(path).map(|m| m.len()) else {
        return Vec::new();
    };
    if !(split_min..=SPLIT_MAX).contains(&len) || n < 2 {
        return Vec::new();
    }
    let gzip = Source::open(path)
        .and_then(|mut s| Ok(s.peek()?.starts_with(&[0x1f, 0x8b])))
        .unwrap_or(false);
    if !gzip {
        return Vec::new();
    }
    let mut points = Vec::new();
    for k in 1..n {
        let Some(at) = member_near(path, len / n as u64 * k as u64) else {
            continue;
        };
        if points.last().is_none_or(|&last| at > last) {
            points.push(at);
        }
    }
    points
}

/// The first offset at or after `from` where a gzip member starts whose record reads as a WARC
/// head (looked for in the next 4 MiB).
fn member_near(path: &Path, from: u64) -> Option<u64> {
    let mut src = Source::open(path).ok()?;
    let mut at = from;
    let limit = from + 4 * 1024 * 1024;
    while at < limit {
        let found = src.find(at, &[0x1f, 0x8b, 0x08], false).ok()??;
        if let Ok((head, _)) = read_record_at(path, found, 0) {
            if !head.is_arc() && head.record_type().is_some() {
                return Some(found);
            }
        }
        at = found + 1;
    }
    None
}

/// One message from an indexing thread.
enum Msg {
    Lines(Vec<String>),
    Problem(PathBuf, Problem),
    Failed(IndexError),
    Indexed,
    /// A part of a split file: held until every part is in.
    Part {
        file: usize,
        part: usize,
        parts: usize,
        start: u64,
        result: Result<u64, IndexError>,
        lines: Vec<String>,
        problems: Vec<Problem>,
    },
}

/// The parts of a split file received so far.
type Parts = Vec<Option<(u64, Result<u64, IndexError>, Vec<String>, Vec<Problem>)>>;

/// Indexes `paths` (files are spread over the CPU cores, large files split when there are
/// fewer files than cores) and writes the sorted, de-duplicated CDXJ to `out`, as
/// `cdxj-indexer --sort` would. Damage and unreadable files are in the report; `out` gets the
/// lines of everything that could be read.
pub fn index_to(paths: &[PathBuf], out: &mut dyn Write) -> io::Result<IndexReport> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(1);
    index_with(paths, out, threads, SPLIT_MIN)
}

/// [`index_to`] on `threads` threads, splitting files from `split_min` bytes.
fn index_with(
    paths: &[PathBuf],
    out: &mut dyn Write,
    threads: usize,
    split_min: u64,
) -> io::Result<IndexReport> {
    let jobs = plan_jobs(paths, threads, split_min);
    let threads = threads.min(jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::sync_channel::<Msg>(64);
    let mut sorter = LineSorter::new(SORT_RUN_BYTES);
    let mut report = IndexReport::default();
    let mut sort_error = None;
    let mut parts: std::collections::HashMap<usize, Parts> = std::collections::HashMap::new();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            let next = &next;
            let jobs = &jobs;
            scope.spawn(move || index_worker(paths, jobs, next, tx));
        }
        drop(tx);
        let mut add = |sorter: &mut LineSorter, lines: Vec<String>| {
            if sort_error.is_none() {
                if let Err(e) = sorter.extend(lines) {
                    sort_error = Some(e);
                }
            }
        };
        for msg in rx {
            match msg {
                Msg::Lines(lines) => add(&mut sorter, lines),
                Msg::Problem(path, problem) => report.problems.push((path, problem)),
                Msg::Failed(e) => report.failed.push(e),
                Msg::Indexed => report.files += 1,
                Msg::Part {
                    file,
                    part,
                    parts: n,
                    start,
                    result,
                    lines,
                    problems,
                } => {
                    let got = parts
                        .entry(file)
                        .or_insert_with(|| (0..n).map(|_| None).collect());
                    got[part] = Some((start, result, lines, problems));
                    if got.iter().all(Option::is_some) {
                        let got = parts.remove(&file).unwrap_or_default();
                        let path = &paths[file];
                        match join_parts(got) {
                            Some((lines, problems)) => {
                                add(&mut sorter, lines);
                                report
                                    .problems
                                    .extend(problems.into_iter().map(|p| (path.clone(), p)));
                                report.files += 1;
                            }
                            // The parts do not meet: read the file again in one go.
                            None => match index_whole(path) {
                                Ok((lines, problems)) => {
                                    add(&mut sorter, lines);
                                    report
                                        .problems
                                        .extend(problems.into_iter().map(|p| (path.clone(), p)));
                                    report.files += 1;
                                }
                                Err(e) => report.failed.push(e),
                            },
                        }
                    }
                }
            }
        }
    });
    if let Some(e) = sort_error {
        return Err(e);
    }
    report.lines = sorter.finish(out)?;
    Ok(report)
}

/// The lines and problems of a split file, when each part ended exactly where the next one
/// starts (so no record was read twice or missed) and none failed.
fn join_parts(parts: Parts) -> Option<(Vec<String>, Vec<Problem>)> {
    let parts: Vec<_> = parts.into_iter().collect::<Option<Vec<_>>>()?;
    let starts: Vec<u64> = parts.iter().map(|p| p.0).collect();
    let mut lines = Vec::new();
    let mut problems = Vec::new();
    for (k, (_, result, l, p)) in parts.into_iter().enumerate() {
        let end = result.ok()?;
        if let Some(&next) = starts.get(k + 1) {
            if end != next {
                return None;
            }
        }
        lines.extend(l);
        problems.extend(p);
    }
    Some((lines, problems))
}

/// A whole file's lines and problems, read on this thread.
fn index_whole(path: &Path) -> Result<(Vec<String>, Vec<Problem>), IndexError> {
    let mut visitor = CdxVisitor::new(&file_name_of(path));
    walk_skimming(path, &mut visitor)?;
    Ok((visitor.lines, visitor.problems))
}

fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Takes the next job not yet taken and indexes it: a whole file sends its lines in batches,
/// a part of a split file sends them once it is done.
fn index_worker(paths: &[PathBuf], jobs: &[Job], next: &AtomicUsize, tx: mpsc::SyncSender<Msg>) {
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(job) = jobs.get(i) else { return };
        let path = &paths[job.file];
        let mut visitor = CdxVisitor::new(&file_name_of(path));
        let sent = if let Some((part, parts)) = job.part {
            let result = walk_range(path, &mut visitor, true, job.start, job.stop);
            tx.send(Msg::Part {
                file: job.file,
                part,
                parts,
                start: job.start,
                result,
                lines: visitor.lines,
                problems: visitor.problems,
            })
            .is_ok()
        } else {
            visitor.sink = Some((tx.clone(), path.clone()));
            let result = walk_skimming(path, &mut visitor);
            let rest = std::mem::take(&mut visitor.lines);
            tx.send(Msg::Lines(rest)).is_ok()
                && match result {
                    Ok(()) => tx.send(Msg::Indexed).is_ok(),
                    Err(e) => tx.send(Msg::Failed(e)).is_ok(),
                }
        };
        if !sent {
            return;
        }
    }
}

/// What the CDXJ visitor keeps of a record between reading its block and knowing its length.
struct Pending {
    url: String,
    date: String,
    record_type: String,
    content_type: Option<String>,
    http_head: Vec<u8>,
    digest: Option<String>,
}

/// Builds CDXJ lines the way cdxj-indexer 1.5.0 does with its default options:
/// - records `response`, `revisit`, `resource`, `metadata`; not resources and metadata typed
///   `application/warc-fields` ([`cdx::is_indexed`]);
/// - `digest` is WARC-Payload-Digest, or when a response, resource or metadata record lacks it,
///   the SHA-1 of the payload as it sits in the record (after the HTTP head, if one was read);
/// - a response whose block is empty although Content-Length says otherwise gets no line
///   (warcio skips it).
///
/// Where cdxj-indexer would crash (no WARC-Target-URI, no WARC-Date) the record is reported and
/// skipped instead.
struct CdxVisitor {
    filename: String,
    lines: Vec<String>,
    problems: Vec<Problem>,
    /// When set, lines and problems go to the sorter thread in batches instead of piling up.
    sink: Option<(mpsc::SyncSender<Msg>, PathBuf)>,
}

impl CdxVisitor {
    fn new(filename: &str) -> CdxVisitor {
        CdxVisitor {
            filename: filename.to_string(),
            lines: Vec::new(),
            problems: Vec::new(),
            sink: None,
        }
    }

    /// The fields of a record that gets a line, or `None` (with a problem when the record
    /// should have had one).
    fn pending(
        &mut self,
        offset: u64,
        head: &WarcHead,
        block: &mut dyn BufRead,
    ) -> io::Result<Option<Pending>> {
        let Some(record_type) = head.record_type() else {
            return Ok(None);
        };
        let content_type = head.get("Content-Type");
        let probe = CdxRecord {
            url: "",
            warc_date: "",
            record_type,
            content_type,
            http_head: b"",
            payload_digest: None,
            length: 0,
            offset: 0,
            filename: "",
        };
        if !cdx::is_indexed(&probe) {
            return Ok(None);
        }
        let (Some(url), Some(date)) = (head.target_uri(), head.get("WARC-Date")) else {
            self.problem(Problem {
                offset,
                message: format!("{record_type} record without WARC-Target-URI or WARC-Date"),
            });
            return Ok(None);
        };
        let http = has_http_head(record_type, &url)
            && !matches!(head.content_length(), Some(Ok(0)) | Some(Err(_)));
        let http_head = if http {
            read_http_head(block)?
        } else {
            Vec::new()
        };
        if http && http_head.is_empty() && record_type == "response" {
            self.problem(Problem {
                offset,
                message: "response record with an empty block: no line (as cdxj-indexer)".into(),
            });
            return Ok(None);
        }
        let digest = match head.get("WARC-Payload-Digest") {
            Some(d) => Some(d.to_string()),
            None if record_type != "revisit" => Some(payload_sha1(block)?),
            None => None,
        };
        Ok(Some(Pending {
            url,
            date: date.to_string(),
            record_type: record_type.to_string(),
            content_type: content_type.map(str::to_string),
            http_head,
            digest,
        }))
    }

    /// Sends what piled up to the sorter thread, if there is one.
    fn flush(&mut self, force: bool) {
        let Some((tx, _)) = &self.sink else { return };
        if force || self.lines.len() >= LINE_BATCH {
            let lines = std::mem::take(&mut self.lines);
            // A closed channel means the receiver is gone; nothing useful is left to do.
            let _ = tx.send(Msg::Lines(lines));
        }
    }
}

impl Visitor for CdxVisitor {
    type Item = Option<Pending>;

    fn record(
        &mut self,
        offset: u64,
        head: &WarcHead,
        block: &mut dyn BufRead,
    ) -> io::Result<Option<Pending>> {
        self.pending(offset, head, block)
    }

    fn done(&mut self, span: Span, _head: WarcHead, item: Option<Pending>) {
        let Some(p) = item else { return };
        let line = cdx::cdxj_line(&CdxRecord {
            url: &p.url,
            warc_date: &p.date,
            record_type: &p.record_type,
            content_type: p.content_type.as_deref(),
            http_head: &p.http_head,
            payload_digest: p.digest.as_deref(),
            length: span.length,
            offset: span.offset,
            filename: &self.filename,
        });
        self.lines.push(line);
        self.flush(false);
    }

    fn problem(&mut self, problem: Problem) {
        match &self.sink {
            Some((tx, path)) => {
                let _ = tx.send(Msg::Problem(path.clone(), problem));
            }
            None => self.problems.push(problem),
        }
    }
}

/// warcio reads an HTTP head only for these record types and only when the target URI starts
/// with `http:` or `https:` (case-sensitive).
fn has_http_head(record_type: &str, url: &str) -> bool {
    matches!(record_type, "response" | "revisit" | "request")
        && (url.starts_with("http:") || url.starts_with("https:"))
}

/// Reads the HTTP head off the block where warcio's parser would stop: after the status line
/// and every line up to the first one that is blank once trailing whitespace is removed (or the
/// status line alone, when it is blank itself). Empty when the block is.
fn read_http_head(block: &mut dyn BufRead) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    loop {
        let start = head.len();
        let n = read_line(block, &mut head)?;
        if n == 0 {
            return Ok(head);
        }
        if head[start..].iter().all(|&b| is_py_space_byte(b)) {
            return Ok(head);
        }
        if head.len() > MAX_HTTP_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "HTTP head longer than 1 MiB",
            ));
        }
    }
}

/// `sha1:BASE32` of what is left of the block.
fn payload_sha1(block: &mut dyn BufRead) -> io::Result<String> {
    let mut hasher = Sha1::new();
    loop {
        let buf = block.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        hasher.update(buf);
        let n = buf.len();
        block.consume(n);
    }
    Ok(sha1_label(hasher.finalize().as_slice()))
}

/// Whitespace as Python's `bytes.isspace()` / `str.rstrip()` sees it in an ASCII line (the
/// four information separators count for `str`, so they are included).
fn is_py_space_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1f)
}

/// Python's `str.isspace()` for one character.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Appends one line (up to and including `\n`) to `buf`; 0 at the end of input. A line longer
/// than [`MAX_LINE`] is an error: headers that long are damage.
fn read_line(r: &mut dyn BufRead, buf: &mut Vec<u8>) -> io::Result<usize> {
    let n = Read::take(&mut *r, MAX_LINE).read_until(b'\n', buf)?;
    if n as u64 == MAX_LINE && buf.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "header line longer than 64 KiB",
        ));
    }
    Ok(n)
}

/// A header line as warcio decodes it: UTF-8, else Latin-1; trailing whitespace removed.
/// Borrowed when the line is UTF-8 (every header line of every record goes through here).
fn decode_line(line: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(line) {
        Ok(s) => std::borrow::Cow::Borrowed(s.trim_end_matches(is_py_space)),
        Err(_) => {
            let text: String = line.iter().map(|&b| char::from(b)).collect();
            std::borrow::Cow::Owned(text.trim_end_matches(is_py_space).to_string())
        }
    }
}

/// How reading a WARC head ended.
enum HeadRead {
    Head(WarcHead),
    /// No more input (blank lines only).
    Eof,
    /// The first line is not a WARC version line.
    NotWarc(String),
}

/// Reads a WARC head the way warcio does (continuation lines appended, lines without `:`
/// dropped), after skipping blank lines.
fn read_head(r: &mut dyn BufRead) -> io::Result<HeadRead> {
    let mut buf = Vec::new();
    let first = loop {
        buf.clear();
        if read_line(r, &mut buf)? == 0 {
            return Ok(HeadRead::Eof);
        }
        let line = decode_line(&buf);
        if !line.is_empty() {
            break line.into_owned();
        }
    };
    let is_warc = WARC_VERSIONS.iter().any(|v| {
        first
            .as_bytes()
            .get(..v.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(v.as_bytes()))
    });
    if !is_warc {
        return read_arc_head(&first, r);
    }
    let mut fields: Vec<(String, String)> = Vec::with_capacity(16);
    let mut current: Option<(String, String)> = None;
    let mut lines = 0;
    loop {
        buf.clear();
        let n = read_line(r, &mut buf)?;
        let line = decode_line(&buf);
        if n == 0 || line.is_empty() {
            break;
        }
        lines += 1;
        if lines > MAX_HEAD_LINES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "more than 4096 WARC header lines",
            ));
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = current.as_mut() {
                value.push_str(&line);
            }
            continue;
        }
        if let Some(done) = current.take() {
            fields.push(done);
        }
        current = line.split_once(':').map(|(name, value)| {
            (
                name.trim_end_matches([' ', '\t']).to_string(),
                value.trim_start_matches(is_py_space).to_string(),
            )
        });
    }
    if let Some(done) = current {
        fields.push(done);
    }
    Ok(HeadRead::Head(WarcHead {
        version: first,
        fields,
    }))
}

/// An ARC record's head, as warcio turns it into WARC headers (see [`crate::arc`]); the
/// version block's two extra lines are read here too. `NotWarc` when `first` is no ARC line.
fn read_arc_head(first: &str, r: &mut dyn BufRead) -> io::Result<HeadRead> {
    let Some(arc) = arc::parse_header_line(first) else {
        return Ok(HeadRead::NotWarc(first.chars().take(40).collect()));
    };
    let mut extra = 0;
    if arc.is_filedesc() {
        let mut buf = Vec::new();
        for _ in 0..2 {
            extra += read_line(r, &mut buf)? as u64;
        }
    }
    Ok(HeadRead::Head(WarcHead {
        version: ARC_VERSION.to_string(),
        fields: arc.warc_fields(extra),
    }))
}

/// The file, read through a large buffer, counting the bytes consumed (the offset of the next
/// byte), and able to jump to another offset when resynchronising after damage.
struct Source {
    inner: BufReader<File>,
    pos: u64,
}

impl Source {
    fn open(path: &Path) -> io::Result<Source> {
        let file = File::open(path)?;
        if file.metadata()?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a directory",
            ));
        }
        Ok(Source {
            inner: BufReader::with_capacity(INPUT_BUF, file),
            pos: 0,
        })
    }

    fn seek_to(&mut self, pos: u64) -> io::Result<()> {
        match pos
            .checked_sub(self.pos)
            .and_then(|d| i64::try_from(d).ok())
        {
            // Forward: keeps what is buffered when the target lies within it.
            Some(forward) => self.inner.seek_relative(forward)?,
            None => {
                self.inner.seek(SeekFrom::Start(pos))?;
            }
        }
        self.pos = pos;
        Ok(())
    }

    /// What is buffered at the current offset (empty at the end of the file).
    fn peek(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    /// The offset of the next occurrence of `pattern` at or after `from` (at a line start when
    /// `line_start`), leaving the source there; `None` at the end of the file.
    fn find(&mut self, from: u64, pattern: &[u8], line_start: bool) -> io::Result<Option<u64>> {
        self.seek_to(from)?;
        let mut prev_newline = from == 0;
        if from > 0 && line_start {
            self.seek_to(from - 1)?;
            let mut one = [0u8; 1];
            self.read_exact(&mut one)?;
            prev_newline = one[0] == b'\n';
        }
        let mut window: Vec<u8> = Vec::with_capacity(INPUT_BUF + pattern.len());
        let mut window_start = self.pos;
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(None);
            }
            window.extend_from_slice(buf);
            let n = buf.len();
            self.inner.consume(n);
            self.pos += n as u64;
            for i in 0..window.len().saturating_sub(pattern.len() - 1) {
                let at_line = if i == 0 {
                    prev_newline
                } else {
                    window[i - 1] == b'\n'
                };
                if window[i..].starts_with(pattern) && (!line_start || at_line) {
                    let found = window_start + i as u64;
                    self.seek_to(found)?;
                    return Ok(Some(found));
                }
            }
            let keep = pattern.len() - 1;
            let cut = window.len() - keep.min(window.len());
            if cut > 0 {
                prev_newline = window[cut - 1] == b'\n';
            }
            window.drain(..cut);
            window_start += cut as u64;
        }
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.pos += amt as u64;
        self.inner.consume(amt);
    }
}

/// Inflate state and output buffer, reused from member to member.
struct Inflater {
    z: Decompress,
    crc: Crc,
    out: Vec<u8>,
    start: usize,
    end: usize,
    done: bool,
    /// Output room of the next step.
    step: usize,
}

impl Inflater {
    fn new() -> Inflater {
        Inflater {
            z: Decompress::new(false),
            crc: Crc::new(),
            out: vec![0; OUTPUT_BUF],
            start: 0,
            end: 0,
            done: false,
            step: FIRST_STEP,
        }
    }

    /// Inflated bytes of this member handed out so far.
    fn out_pos(&self) -> u64 {
        self.z.total_out() - (self.end - self.start) as u64
    }

    fn reset(&mut self) {
        self.z.reset(false);
        self.crc.reset();
        self.start = 0;
        self.end = 0;
        self.done = false;
        self.step = FIRST_STEP;
    }
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the file ends inside this gzip member (truncated)",
    )
}

/// Reads a gzip member header (RFC 1952). `Ok(false)` at the end of the file.
fn read_gzip_header(src: &mut Source) -> io::Result<bool> {
    if src.peek()?.is_empty() {
        return Ok(false);
    }
    let mut fixed = [0u8; 10];
    src.read_exact(&mut fixed).map_err(|_| truncated())?;
    if fixed[..3] != [0x1f, 0x8b, 0x08] {
        return Err(invalid(format!(
            "not a gzip member (starts with {:02x} {:02x} {:02x})",
            fixed[0], fixed[1], fixed[2]
        )));
    }
    let flags = fixed[3];
    if flags & 0xe0 != 0 {
        return Err(invalid("gzip header with reserved flags set"));
    }
    if flags & 0x04 != 0 {
        let mut len = [0u8; 2];
        src.read_exact(&mut len).map_err(|_| truncated())?;
        let len = u64::from(u16::from_le_bytes(len));
        let skipped = io::copy(&mut Read::take(&mut *src, len), &mut io::sink())?;
        if skipped != len {
            return Err(truncated());
        }
    }
    for flag in [0x08, 0x10] {
        if flags & flag != 0 {
            let mut text = Vec::new();
            Read::take(&mut *src, MAX_LINE).read_until(0, &mut text)?;
            if text.last() != Some(&0) {
                return Err(invalid("gzip header name or comment not terminated"));
            }
        }
    }
    if flags & 0x02 != 0 {
        let mut crc = [0u8; 2];
        src.read_exact(&mut crc).map_err(|_| truncated())?;
    }
    Ok(true)
}

/// The inflated bytes of one gzip member; its CRC and size are checked at its end, after which
/// it reads as empty.
struct Member<'a> {
    src: &'a mut Source,
    inf: &'a mut Inflater,
}

impl Member<'_> {
    /// Inflates the next piece into the output buffer.
    fn inflate_some(&mut self) -> io::Result<()> {
        let inf = &mut *self.inf;
        let input = self.src.inner.fill_buf()?;
        if input.is_empty() {
            return Err(truncated());
        }
        let (in0, out0) = (inf.z.total_in(), inf.z.total_out());
        let room = inf.step;
        inf.step = (inf.step * 2).min(OUTPUT_BUF);
        let status = inf
            .z
            .decompress(input, &mut inf.out[..room], FlushDecompress::None)
            .map_err(|e| invalid(format!("corrupt deflate data: {e}")))?;
        let used = (inf.z.total_in() - in0) as usize;
        let made = (inf.z.total_out() - out0) as usize;
        self.src.consume(used);
        inf.crc.update(&inf.out[..made]);
        inf.start = 0;
        inf.end = made;
        match status {
            Status::StreamEnd => self.finish(),
            _ if used == 0 && made == 0 => Err(invalid("deflate data makes no progress")),
            _ => Ok(()),
        }
    }

    /// Reads and checks the 8-byte trailer (CRC-32 and size of the inflated data).
    fn finish(&mut self) -> io::Result<()> {
        let mut trailer = [0u8; 8];
        self.src.read_exact(&mut trailer).map_err(|_| truncated())?;
        let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        if crc != self.inf.crc.sum() || size != self.inf.z.total_out() as u32 {
            return Err(invalid("gzip member fails its CRC or size check"));
        }
        self.inf.done = true;
        Ok(())
    }

    /// Inflates the rest of the member; says whether anything but whitespace was left, and
    /// whether that looks like another record.
    fn drain(&mut self) -> io::Result<Leftover> {
        let mut left = Leftover::default();
        loop {
            let buf = self.fill_buf()?;
            if buf.is_empty() {
                return Ok(left);
            }
            if !left.data {
                if let Some(i) = buf.iter().position(|&b| !is_py_space_byte(b)) {
                    left.data = true;
                    left.record = buf[i..].starts_with(b"WARC/");
                }
            }
            let n = buf.len();
            self.consume(n);
        }
    }
}

/// What followed a record inside its gzip member.
#[derive(Default)]
struct Leftover {
    /// Something other than the blank lines that end a record.
    data: bool,
    /// …and it starts like a WARC record.
    record: bool,
}

impl Read for Member<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Member<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.inf.start == self.inf.end && !self.inf.done {
            self.inflate_some()?;
        }
        Ok(&self.inf.out[self.inf.start..self.inf.end])
    }
    fn consume(&mut self, amt: usize) {
        self.inf.start = (self.inf.start + amt).min(self.inf.end);
    }
}

/// Reading one file.
struct Walker<'p> {
    path: &'p Path,
    src: Source,
    inflater: Inflater,
    /// Damage waiting to be reported once we know where reading resumed.
    pending: Option<Problem>,
    /// Records read so far (a damaged first record of a non-WARC file is fatal).
    records: u64,
    /// When skimming: a second handle on the file (to look ahead without moving the
    /// inflater's input) and the file's length.
    skim: Option<(File, u64)>,
    /// Look-ahead buffer of the skim.
    skim_buf: Vec<u8>,
    /// No record starting at or after this offset is read (another thread reads them).
    stop: u64,
}

/// How one attempt to read a record ended.
enum Step<I> {
    Record(Span, WarcHead, I),
    /// An empty gzip member or trailing blank lines: nothing to report.
    Nothing,
    End,
}

impl Walker<'_> {
    fn io(&self, source: io::Error) -> IndexError {
        IndexError::Io {
            path: self.path.to_path_buf(),
            source,
        }
    }

    fn walk_gzip<V: Visitor>(&mut self, visitor: &mut V) -> Result<(), IndexError> {
        loop {
            let offset = self.src.pos;
            if offset >= self.stop {
                break;
            }
            match self.gzip_record(offset, visitor) {
                Ok(Step::Record(span, head, item)) => {
                    self.resumed(visitor, offset);
                    self.records += 1;
                    visitor.done(span, head, item);
                }
                Ok(Step::Nothing) => {}
                Ok(Step::End) => break,
                Err(RecordError::Fatal(e)) => return Err(e),
                Err(RecordError::Damage(message)) => {
                    self.damaged(offset, message);
                    match self.src.find(offset + 1, &[0x1f, 0x8b, 0x08], false) {
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(e) => return Err(self.io(e)),
                    }
                }
            }
        }
        self.give_up(visitor);
        Ok(())
    }

    /// Reads the gzip member at the current offset as one record.
    fn gzip_record<V: Visitor>(
        &mut self,
        offset: u64,
        visitor: &mut V,
    ) -> Result<Step<V::Item>, RecordError> {
        match read_gzip_header(&mut self.src) {
            Ok(false) => return Ok(Step::End),
            Ok(true) => {}
            Err(e) if offset == 0 => {
                return Err(RecordError::Fatal(IndexError::NotWarc {
                    path: self.path.to_path_buf(),
                    start: e.to_string(),
                }))
            }
            Err(e) => return Err(RecordError::Damage(e.to_string())),
        }
        self.inflater.reset();
        let mut member = Member {
            src: &mut self.src,
            inf: &mut self.inflater,
        };
        let head = match read_head(&mut member).map_err(damage)? {
            HeadRead::Head(head) => head,
            HeadRead::Eof => return Ok(Step::Nothing),
            HeadRead::NotWarc(line) if self.records == 0 && self.pending.is_none() => {
                return Err(RecordError::Fatal(IndexError::NotWarc {
                    path: self.path.to_path_buf(),
                    start: line,
                }))
            }
            HeadRead::NotWarc(line) => {
                return Err(RecordError::Damage(format!(
                    "gzip member does not hold a WARC record (it starts with {line:?})"
                )))
            }
        };
        let limit = match head.content_length() {
            Some(Ok(n)) => n,
            // warcio reads a record with an unreadable length as empty.
            Some(Err(_)) => 0,
            None => u64::MAX,
        };
        let mut block = (&mut member).take(limit);
        let item = visitor.record(offset, &head, &mut block).map_err(damage)?;
        let remaining = block.limit();
        // Once the inflater has met the member's end (a large step can inflate all of a small
        // member), the member ends where the input stands: nothing is left to skim, and a
        // search from there would only find a later member of the same size. Otherwise even
        // a few bytes left are skimmed: on WARCs of small records, inflating the rest of each
        // member (request records, short pages) was most of the time `index` spent.

        if limit != u64::MAX && !self.inflater.done {
            let expected = self.inflater.out_pos() + remaining + head.trailer_len();
            if let Some(end) = self.member_end(offset, expected).map_err(damage)? {
                self.src.seek_to(end).map_err(damage)?;
                let length = end - offset;
                return Ok(Step::Record(
                    Span {
                        offset,
                        length,
                        end,
                    },
                    head,
                    item,
                ));
            }
        }
        let mut member = Member {
            src: &mut self.src,
            inf: &mut self.inflater,
        };
        io::copy(&mut (&mut member).take(remaining), &mut io::sink()).map_err(damage)?;
        let left = member.drain().map_err(damage)?;
        if left.record {
            return Err(RecordError::Fatal(IndexError::NotPerRecordGzip {
                path: self.path.to_path_buf(),
                offset,
            }));
        }
        if left.data {
            visitor.problem(Problem {
                offset,
                message: "unexpected bytes after the record inside its gzip member (bad \
                          Content-Length?)"
                    .into(),
            });
        }
        let end = self.src.pos;
        Ok(Step::Record(
            Span {
                offset,
                length: end - offset,
                end,
            },
            head,
            item,
        ))
    }

    /// Where the current gzip member (starting at `member`) ends, found without inflating it:
    /// the first offset from a few bytes before the inflater's input position on that is
    /// preceded by `isize` (the member's inflated size, little-endian, modulo 2^32) and followed
    /// by a gzip magic or the end of the file. `None` when not skimming or when nothing fits
    /// (the caller then inflates). Only called while the member is not yet inflated to its end:
    /// a search that starts past the true end finds a later member of the same size.
    fn member_end(&mut self, member: u64, isize: u64) -> io::Result<Option<u64>> {
        let Some((file, len)) = &self.skim else {
            return Ok(None);
        };
        let size = (isize as u32).to_le_bytes();
        let start = self.src.pos;
        // Stored deflate blocks add 5 bytes per 64 KiB: the member cannot end much later.
        let limit = (start + isize + isize / 1000 + 1024).min(*len);
        // An inflater may hold input it has read but not yet used (its bit buffer), so the
        // trailer can begin a few bytes before `start`: look there first.
        let back = start.saturating_sub(HELD_INPUT).max(member + 18);
        if back < start {
            let mut near = [0u8; 2 * HELD_INPUT as usize + 8];
            let want = ((start + 8 - back) as usize + 3).min(near.len());
            let n = read_at_most(file, &mut near[..want], back)?;
            if let Some(i) = find_member_end(&near[..n], size) {
                return Ok(Some(back + i as u64));
            }
        }
        // Small members are usually in the read buffer already.
        let buffered = self.src.inner.buffer();
        if let Some(i) = find_member_end(buffered, size) {
            return Ok(Some(start + i as u64));
        }
        let mut at = start + (buffered.len() as u64).saturating_sub(7);
        let buf = &mut self.skim_buf;
        while at + 8 <= limit {
            let want = ((limit - at) as usize + 3).min(SKIM_CHUNK);
            let n = read_at_most(file, &mut buf[..want], at)?;
            if let Some(i) = find_member_end(&buf[..n], size) {
                return Ok(Some(at + i as u64));
            }
            if n < 8 || at + n as u64 >= *len {
                break;
            }
            at += (n - 7) as u64;
        }
        // The last member of the file.
        if *len >= member + 18 && *len <= limit {
            let mut tail = [0u8; 4];
            if read_at_most(file, &mut tail, *len - 4)? == 4 && tail == size {
                return Ok(Some(*len));
            }
        }
        Ok(None)
    }

    fn walk_plain<V: Visitor>(&mut self, visitor: &mut V) -> Result<(), IndexError> {
        loop {
            skip_blank_lines(&mut self.src).map_err(|e| self.io(e))?;
            let offset = self.src.pos;
            match self.plain_record(offset, visitor) {
                Ok(Step::Record(span, head, item)) => {
                    self.resumed(visitor, offset);
                    self.records += 1;
                    visitor.done(span, head, item);
                }
                Ok(Step::Nothing) => {}
                Ok(Step::End) => break,
                Err(RecordError::Fatal(e)) => return Err(e),
                Err(RecordError::Damage(message)) => {
                    self.damaged(offset, message);
                    match self.src.find(offset + 1, b"WARC/", true) {
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(e) => return Err(self.io(e)),
                    }
                }
            }
        }
        self.give_up(visitor);
        Ok(())
    }

    /// Reads the plain record at the current offset.
    fn plain_record<V: Visitor>(
        &mut self,
        offset: u64,
        visitor: &mut V,
    ) -> Result<Step<V::Item>, RecordError> {
        let head = match read_head(&mut self.src).map_err(damage)? {
            HeadRead::Head(head) => head,
            HeadRead::Eof => return Ok(Step::End),
            HeadRead::NotWarc(line) if self.records == 0 && self.pending.is_none() => {
                return Err(RecordError::Fatal(IndexError::NotWarc {
                    path: self.path.to_path_buf(),
                    start: line,
                }))
            }
            HeadRead::NotWarc(line) => {
                return Err(RecordError::Damage(format!(
                    "no WARC record here (the line is {line:?})"
                )))
            }
        };
        let limit = match head.content_length() {
            Some(Ok(n)) => n,
            Some(Err(e)) => return Err(RecordError::Damage(e)),
            None => return Err(RecordError::Damage("record without Content-Length".into())),
        };
        let mut block = (&mut self.src).take(limit);
        let item = visitor.record(offset, &head, &mut block).map_err(damage)?;
        let remaining = block.limit();
        match &self.skim {
            Some((_, len)) if remaining >= SKIM_MIN && self.src.pos + remaining <= *len => {
                let to = self.src.pos + remaining;
                self.src.seek_to(to).map_err(damage)?;
            }
            _ => {
                let copied = io::copy(&mut (&mut self.src).take(remaining), &mut io::sink())
                    .map_err(damage)?;
                if copied < remaining {
                    return Err(RecordError::Damage(
                        "the file ends inside this record (truncated)".into(),
                    ));
                }
            }
        }
        let length = self.src.pos - offset;
        let clean = skip_blank_lines(&mut self.src).map_err(damage)?;
        if !clean {
            visitor.problem(Problem {
                offset,
                message: "record not followed by a blank line (bad Content-Length?)".into(),
            });
        }
        let end = self.src.pos;
        Ok(Step::Record(
            Span {
                offset,
                length,
                end,
            },
            head,
            item,
        ))
    }

    /// Remembers damage at `offset`; reported once we know where reading resumed.
    fn damaged(&mut self, offset: u64, message: String) {
        if self.pending.is_none() {
            self.pending = Some(Problem { offset, message });
        }
    }

    /// A record was read again after damage: report the damage with the resume point.
    fn resumed<V: Visitor>(&mut self, visitor: &mut V, at: u64) {
        if let Some(mut p) = self.pending.take() {
            p.message = format!(
                "{}; skipped {} bytes to the record at offset {at}",
                p.message,
                at - p.offset
            );
            visitor.problem(p);
        }
    }

    /// The file ended while looking for a record after damage.
    fn give_up<V: Visitor>(&mut self, visitor: &mut V) {
        if let Some(mut p) = self.pending.take() {
            p.message = format!("{}; no further record found", p.message);
            visitor.problem(p);
        }
    }
}

/// Why reading one record failed.
enum RecordError {
    /// The whole file is unusable.
    Fatal(IndexError),
    /// This record is damaged; look for the next one.
    Damage(String),
}

fn damage(e: io::Error) -> RecordError {
    RecordError::Damage(e.to_string())
}

/// The first index in `window` preceded by `size` (a gzip trailer's size field) and followed by
/// a gzip member's magic bytes.
fn find_member_end(window: &[u8], size: [u8; 4]) -> Option<usize> {
    let n = window.len();
    let mut i = 4;
    while i + 3 <= n {
        let next = find_byte(&window[i..n - 2], 0x1f)? + i;
        if window[next + 1] == 0x8b && window[next + 2] == 0x08 && window[next - 4..next] == size {
            return Some(next);
        }
        i = next + 1;
    }
    None
}

/// The first `byte` in `hay`, eight bytes at a time (this scan is most of what skimming
/// costs).
fn find_byte(hay: &[u8], byte: u8) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let pattern = LOW * u64::from(byte);
    let mut chunks = hay.chunks_exact(8);
    for (k, chunk) in chunks.by_ref().enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ pattern;
        if x.wrapping_sub(LOW) & !x & HIGH != 0 {
            return chunk.iter().position(|&b| b == byte).map(|j| k * 8 + j);
        }
    }
    let done = hay.len() - chunks.remainder().len();
    chunks
        .remainder()
        .iter()
        .position(|&b| b == byte)
        .map(|j| done + j)
}

/// Reads up to `buf.len()` bytes at `offset` (fewer only at the end of the file).
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Consumes whitespace-only lines. `false` when what follows is neither the end of the file nor
/// a blank line (the record before was longer than its Content-Length said).
fn skip_blank_lines(src: &mut Source) -> io::Result<bool> {
    let mut skipped_any = false;
    loop {
        let buf = src.peek()?;
        if buf.is_empty() {
            return Ok(true);
        }
        let line_end = buf.iter().position(|&b| b == b'\n');
        let upto = line_end.map(|i| i + 1).unwrap_or(buf.len());
        let blank = buf[..upto].iter().all(|&b| is_py_space_byte(b));
        if !blank {
            return Ok(skipped_any || buf.starts_with(b"WARC/"));
        }
        src.consume(upto);
        skipped_any = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;

    fn record(kind: &str, uri: &str, block: &[u8], extra: &str) -> Vec<u8> {
        let mut r = format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:{kind}-{}>\r\n\
             WARC-Date: 2026-11-30T23:38:13.123456Z\r\nWARC-Target-URI: {uri}\r\n{extra}\
             Content-Length: {}\r\n\r\n",
            uri.len(),
            block.len()
        )
        .into_bytes();
        r.extend_from_slice(block);
        r.extend_from_slice(b"\r\n\r\n");
        r
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    const PAGE: &[u8] =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>hello</p>";

    /// Collects spans and record types.
    #[derive(Default)]
    struct Collect {
        seen: Vec<(Span, String)>,
        problems: Vec<Problem>,
    }

    impl Visitor for Collect {
        type Item = usize;
        fn record(&mut self, _: u64, _: &WarcHead, block: &mut dyn BufRead) -> io::Result<usize> {
            let mut first = [0u8; 4];
            block.read(&mut first)
        }
        fn done(&mut self, span: Span, head: WarcHead, _: usize) {
            self.seen
                .push((span, head.record_type().unwrap_or("").to_string()));
        }
        fn problem(&mut self, p: Problem) {
            self.problems.push(p);
        }
    }

    fn write_tmp(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, data).unwrap();
        p
    }

    #[test]
    fn gzip_members_give_offsets_and_compressed_lengths() {
        let a = gz(&record("response", "http://a/", PAGE, ""));
        let b = gz(&record(
            "request",
            "http://a/",
            b"GET / HTTP/1.1\r\n\r\n",
            "",
        ));
        let dir = tempfile::tempdir().unwrap();
        let path = write_tmp(&dir, "x.warc.gz", &[a.clone(), b.clone()].concat());
        let mut c = Collect::default();
        walk(&path, &mut c).unwrap();
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        let la = a.len() as u64;
        assert_eq!(
            c.seen,
            vec![
                (
                    Span {
                        offset: 0,
                        length: la,
                        end: la
                    },
                    "response".to_string()
                ),
                (
                    Span {
                        offset: la,
                        length: b.len() as u64,
                        end: la + b.len() as u64
                    },
                    "request".to_string()
                ),
            ]
        );
    }

    #[test]
    fn plain_records_length_excludes_the_blank_lines() {
        let a = record("response", "http://a/", PAGE, "");
        let b = record("resource", "http://a/x", b"abc", "");
        let dir = tempfile::tempdir().unwrap();
        let path = write_tmp(&dir, "x.warc", &[a.clone(), b.clone()].concat());
        let mut c = Collect::default();
        walk(&path, &mut c).unwrap();
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        let la = a.len() as u64;
        assert_eq!(c.seen[0].0.length, la - 4);
        assert_eq!(c.seen[0].0.end, la);
        assert_eq!(c.seen[1].0.offset, la);
    }

    #[test]
    fn a_corrupt_member_is_reported_and_skipped() {
        let a = gz(&record("response", "http://a/", PAGE, ""));
        let mut b = gz(&record("response", "http://b/", PAGE, ""));
        let len_b = b.len();
        b[len_b / 2] ^= 0xff;
        b[len_b / 2 + 1] ^= 0x55;
        let c_rec = gz(&record("response", "http://c/", PAGE, ""));
        let dir = tempfile::tempdir().unwrap();
        let data = [a.clone(), b.clone(), c_rec.clone()].concat();
        let path = write_tmp(&dir, "x.warc.gz", &data);
        let mut c = Collect::default();
        walk(&path, &mut c).unwrap();
        assert_eq!(c.seen.len(), 2, "{:?}", c.seen);
        assert_eq!(c.seen[1].0.offset, (a.len() + b.len()) as u64);
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert_eq!(c.problems[0].offset, a.len() as u64);
        assert!(
            c.problems[0]
                .message
                .contains(&format!("to the record at offset {}", a.len() + b.len())),
            "{}",
            c.problems[0]
        );
    }

    #[test]
    fn a_truncated_file_reports_the_last_record() {
        let a = gz(&record("response", "http://a/", PAGE, ""));
        let b = gz(&record("response", "http://b/", PAGE, ""));
        let dir = tempfile::tempdir().unwrap();
        let data = [a.clone(), b[..b.len() - 10].to_vec()].concat();
        let path = write_tmp(&dir, "x.warc.gz", &data);
        let mut c = Collect::default();
        walk(&path, &mut c).unwrap();
        assert_eq!(c.seen.len(), 1);
        assert_eq!(c.problems.len(), 1);
        assert_eq!(c.problems[0].offset, a.len() as u64);
        assert!(
            c.problems[0].message.contains("truncated"),
            "{}",
            c.problems[0]
        );
    }

    #[test]
    fn plain_damage_resumes_at_the_next_warc_line() {
        let a = record("response", "http://a/", PAGE, "");
        let b = record("response", "http://b/", PAGE, "");
        let junk = b"garbage line\r\nmore\r\n".to_vec();
        let dir = tempfile::tempdir().unwrap();
        let path = write_tmp(&dir, "x.warc", &[a.clone(), junk.clone(), b].concat());
        let mut c = Collect::default();
        walk(&path, &mut c).unwrap();
        assert_eq!(c.seen.len(), 2, "{:?} {:?}", c.seen, c.problems);
        assert_eq!(c.seen[1].0.offset, (a.len() + junk.len()) as u64);
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
    }

    #[test]
    fn non_warc_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = write_tmp(&dir, "a.txt", b"hello world\n");
        assert!(matches!(
            walk(&text, &mut Collect::default()),
            Err(IndexError::NotWarc { .. })
        ));
        let gzipped = write_tmp(&dir, "a.gz", &gz(b"just text\n"));
        assert!(matches!(
            walk(&gzipped, &mut Collect::default()),
            Err(IndexError::NotWarc { .. })
        ));
        let err = walk(dir.path(), &mut Collect::default()).unwrap_err();
        assert!(matches!(err, IndexError::Io { .. }), "{err}");
    }

    #[test]
    fn one_gzip_stream_for_many_records_is_refused() {
        let both = [
            record("response", "http://a/", PAGE, ""),
            record("response", "http://b/", PAGE, ""),
        ]
        .concat();
        let dir = tempfile::tempdir().unwrap();
        let path = write_tmp(&dir, "x.warc.gz", &gz(&both));
        assert!(matches!(
            walk(&path, &mut Collect::default()),
            Err(IndexError::NotPerRecordGzip { offset: 0, .. })
        ));
    }

    #[test]
    fn missing_digests_are_computed_over_the_payload() {
        let dir = tempfile::tempdir().unwrap();
        let data = [
            gz(&record("response", "http://a/", PAGE, "")),
            gz(&record(
                "resource",
                "http://a/r",
                b"abc",
                "Content-Type: text/plain\r\n",
            )),
            gz(&record(
                "metadata",
                "http://a/",
                b"x: y\r\n",
                "Content-Type: application/warc-fields\r\n",
            )),
        ]
        .concat();
        let path = write_tmp(&dir, "x.warc.gz", &data);
        let (lines, problems) = cdxj_for_file(&path, "x.warc.gz").unwrap();
        assert!(problems.is_empty());
        assert_eq!(lines.len(), 2, "{lines:?}");
        let page = crate::spool::sha1_of(b"<p>hello</p>");
        let abc = crate::spool::sha1_of(b"abc");
        assert!(lines.iter().any(|l| l.contains(&page)), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains(&abc)), "{lines:?}");
    }

    #[test]
    fn read_record_at_reads_one_record() {
        let a = gz(&record("response", "http://a/", PAGE, ""));
        let b = gz(&record(
            "response",
            "http://b/",
            b"HTTP/1.1 404 X\r\n\r\n",
            "",
        ));
        let dir = tempfile::tempdir().unwrap();
        let path = write_tmp(&dir, "x.warc.gz", &[a.clone(), b].concat());
        let (head, block) = read_record_at(&path, a.len() as u64, 1 << 20).unwrap();
        assert_eq!(head.target_uri().as_deref(), Some("http://b/"));
        assert_eq!(block, b"HTTP/1.1 404 X\r\n\r\n");
        assert!(read_record_at(&path, 5, 1 << 20).is_err());
    }

    /// Spans and types seen by a walk.
    fn spans(path: &Path, skim: bool) -> Vec<(Span, String)> {
        let mut c = Collect::default();
        walk_with(path, &mut c, skim).unwrap();
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        c.seen
    }

    #[test]
    fn skimming_finds_the_same_boundaries_even_when_members_look_alike() {
        // Bodies that compress to a few bytes, then members of exactly the same size: a skim
        // that started looking past the true end would land on a neighbour's end.
        let dir = tempfile::tempdir().unwrap();
        let mut data = Vec::new();
        for n in (2048..2600).step_by(37) {
            let mut block = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
            block.extend(std::iter::repeat_n(0u8, n));
            for _ in 0..3 {
                data.extend(gz(&record("response", "http://a/", &block, "")));
            }
            let mut noisy = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
            noisy.extend((0..n as u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8));
            data.extend(gz(&record("response", "http://b/", &noisy, "")));
        }
        let path = write_tmp(&dir, "x.warc.gz", &data);
        let full = spans(&path, false);
        assert_eq!(full.len(), 4 * 15);
        assert_eq!(spans(&path, true), full);
        let plain: Vec<u8> = (2048..2100)
            .flat_map(|n| record("resource", "http://c/", &vec![b'x'; n], ""))
            .collect();
        let path = write_tmp(&dir, "x.warc", &plain);
        assert_eq!(spans(&path, true), spans(&path, false));
    }

    #[test]
    fn a_file_split_over_threads_gives_the_lines_of_one_walk() {
        let dir = tempfile::tempdir().unwrap();
        let mut data = Vec::new();
        for i in 0..600 {
            let mut block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n".to_vec();
            block.extend((0..(i * 37 % 5000)).map(|j: u32| b'a' + (j * i % 26) as u8));
            data.extend(gz(&record(
                "response",
                &format!("http://a/{i}"),
                &block,
                "",
            )));
        }
        let path = write_tmp(&dir, "x.warc.gz", &data);
        let paths = vec![path.clone()];
        let parts = plan_jobs(&paths, 3, 0);
        assert_eq!(parts.len(), 3, "split in three");
        let mut whole = Vec::new();
        index_with(&paths, &mut whole, 1, 0).unwrap();
        let mut split = Vec::new();
        let report = index_with(&paths, &mut split, 3, 0).unwrap();
        assert_eq!(report.lines, 600);
        assert_eq!(
            String::from_utf8(split).unwrap(),
            String::from_utf8(whole).unwrap()
        );
        // Parts that do not meet are thrown away and the file read in one go.
        let (lines, _) = index_whole(&path).unwrap();
        let bad: Parts = vec![
            Some((0, Ok(5), lines.clone(), Vec::new())),
            Some((7, Ok(u64::MAX), Vec::new(), Vec::new())),
        ];
        assert!(join_parts(bad).is_none());
    }

    #[test]
    fn find_byte_agrees_with_a_plain_search() {
        let hay: Vec<u8> = (0..300u32).map(|i| (i * 37 % 251) as u8).collect();
        for start in 0..20 {
            for byte in [0u8, 0x1f, 0x80, 0xff, 7] {
                let plain = hay[start..].iter().position(|&b| b == byte);
                assert_eq!(find_byte(&hay[start..], byte), plain, "{start} {byte}");
            }
        }
    }

    #[test]
    fn head_parsing_follows_warcio() {
        let mut r: &[u8] =
            b"\r\nWARC/1.0\r\nWARC-Type: response\r\nX-Long: a\r\n  b\r\nnocolon\r\nWARC-Target-URI: <http://a/b c>\r\n\r\n";
        let HeadRead::Head(h) = read_head(&mut r).unwrap() else {
            panic!()
        };
        assert_eq!(h.version, "WARC/1.0");
        assert_eq!(h.get("x-long"), Some("a  b"));
        assert_eq!(h.target_uri().as_deref(), Some("http://a/b%20c"));
        let mut r: &[u8] = b"HTTP/1.1 200 OK\r\n\r\n";
        assert!(matches!(read_head(&mut r).unwrap(), HeadRead::NotWarc(_)));
    }
}
