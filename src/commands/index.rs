//! `archiver index`: sorted CDXJ for any WARC or ARC file (ours, warcio's, wget's,
//! Heritrix's, the Internet Archive's), read through the one record walker of
//! `crate::warc::read`.
//!
//! The lines themselves come from [`crate::cdx::cdxj_line`], the same function the WARC writer
//! uses, so `archiver index` and the crawler's own indexes agree with `cdxj-indexer` in one
//! place. Which records get a line, and what is computed when a header is missing, follows
//! cdxj-indexer 1.5.0 (warcio's lenient reading): see `CdxVisitor`. Large files are split at
//! gzip member boundaries so that one big WARC uses every core.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use sha1::{Digest, Sha1};

use crate::cdx::{self, CdxRecord, LineSorter};
use crate::commands::{io_at, IoAt};
use crate::spool::sha1_label;
use crate::warc::head::{is_py_space_byte, read_line};
use crate::warc::member::Source;
use crate::warc::read::walk_range;
// The reader's types, under the names the offline commands have always imported them by.
pub use crate::warc::head::WarcHead;
pub use crate::warc::read::{
    read_record_at, walk, walk_skimming, IndexError, Problem, Span, Visitor,
};

/// The HTTP head kept for the CDXJ fields (status, mime); longer heads are cut here, which only
/// matters when a digest must be computed (then the record is reported).
const MAX_HTTP_HEAD: usize = 1024 * 1024;

/// Sorted runs spill to temporary files beyond this many bytes of lines.
const SORT_RUN_BYTES: usize = 64 * 1024 * 1024;

/// Lines sent from a worker thread to the sorter in one message.
const LINE_BATCH: usize = 4096;

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
    #[error(transparent)]
    Io(#[from] IoAt),
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
            _ => io_at(input)(e).into(),
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
    for entry in std::fs::read_dir(dir).map_err(io_at(dir))? {
        let path = entry.map_err(io_at(dir))?.path();
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
            self.problem(Problem::at(
                offset,
                format!("{record_type} record without WARC-Target-URI or WARC-Date"),
            ));
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
            self.problem(Problem::at(
                offset,
                "response record with an empty block: no line (as cdxj-indexer)".into(),
            ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warc::head::{read_head, HeadRead};
    use crate::warc::member::find_byte;
    use crate::warc::read::walk_with;
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
