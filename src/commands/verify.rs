//! `archiver verify WARC…|DIR`: checks WARC (and ARC) files against WARC 1.1, for archivists
//! who need to trust a file before they keep it.
//!
//! Per record: the mandatory headers (§5.1 and the per-type ones of §6), `Content-Length`
//! against the block actually there, `WARC-Block-Digest` over the block and
//! `WARC-Payload-Digest` over the payload — the entity body *after* transfer decoding, so a
//! chunked response is digested without its chunk framing (§6.3.2; iipc/warc-specifications#22).
//! `warcio check` digests the framed bytes instead; records where the two conventions give
//! different answers are named, so a user knows why warcio complains. Across the files:
//! `WARC-Record-ID`s are unique, the records `WARC-Concurrent-To` and `WARC-Refers-To` name
//! exist, and every revisit's original is found (in the files, or in a CDXJ given with
//! `--index`). Per file: one gzip member per record (a file gzipped as one stream is said so,
//! and its records are still checked), gzip CRCs, truncation.
//!
//! Reading goes through the one member walker of `crate::warc::read` (inflating everything,
//! CRCs checked); files are spread over the CPU cores.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sha1::{Digest, Sha1};
use sha2::Sha256;

use crate::commands::http::{is_chunked, read_head};
use crate::commands::index::{self, IndexError, Problem, Span, Visitor, WarcHead};
use crate::warc::chunked::Dechunker;

/// The values WARC 1.1 §5.13 allows for WARC-Truncated.
const TRUNCATED_REASONS: [&str; 4] = ["length", "time", "disconnect", "unspecified"];

/// One problem found: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub file: PathBuf,
    pub offset: Option<u64>,
    pub record_id: Option<String>,
    pub what: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(o) = self.offset {
            write!(f, " offset {o}")?;
        }
        if let Some(id) = &self.record_id {
            write!(f, " {id}")?;
        }
        write!(f, ": {}", self.what)
    }
}

/// What `verify` found.
#[derive(Debug, Default)]
pub struct Report {
    pub files: usize,
    pub records: u64,
    /// Problems: the file does not hold what WARC 1.1 says it must.
    pub problems: Vec<Finding>,
    /// Not problems, but worth knowing: records where `warcio check` disagrees (and why),
    /// truncated captures, digests in algorithms not checked.
    pub notes: Vec<Finding>,
    /// Files that could not be read at all.
    pub unreadable: Vec<IndexError>,
    /// Records whose payload digest `warcio check` reports as failed although it is right.
    pub warcio_disagrees: u64,
    pub truncated: u64,
}

impl Report {
    /// The last line: counts.
    pub fn summary(&self) -> String {
        format!(
            "{} files, {} records: {} problems, {} unreadable files; {} truncated records, {} \
             records where warcio check digests the chunked framing and so disagrees",
            self.files,
            self.records,
            self.problems.len(),
            self.unreadable.len(),
            self.truncated,
            self.warcio_disagrees
        )
    }
}

/// Where a revisit's original may be found besides the files checked.
#[derive(Debug, Default)]
pub struct KnownCaptures {
    /// (URL, 14-digit timestamp) of every capture in the CDXJ files given.
    pub captures: HashSet<(String, String)>,
}

impl KnownCaptures {
    /// Reads CDXJ files (as `archiver index` and pywb write them).
    pub fn load(paths: &[PathBuf]) -> io::Result<KnownCaptures> {
        let mut known = KnownCaptures::default();
        for path in paths {
            let file = File::open(path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            for line in BufReader::new(file).lines() {
                let line = line?;
                let Some((_key, ts, json)) = crate::cdx::split_line(&line) else {
                    continue;
                };
                let url = serde_json::from_str::<serde_json::Value>(json)
                    .ok()
                    .and_then(|v| v.get("url").and_then(|u| u.as_str()).map(str::to_string));
                if let Some(url) = url {
                    known
                        .captures
                        .insert((without_scheme(&url).to_string(), ts.to_string()));
                }
            }
        }
        Ok(known)
    }
}

/// What is kept of each record for the checks across files.
#[derive(Debug, Clone)]
struct Seen {
    file: usize,
    offset: u64,
    record_type: String,
    id: Option<String>,
    uri: Option<String>,
    date: Option<String>,
    concurrent_to: Vec<String>,
    refers_to: Option<String>,
    refers_to_uri: Option<String>,
    refers_to_date: Option<String>,
}

/// Checks `paths` (files as given; folders searched with their sub-folders).
pub fn verify(paths: &[PathBuf], known: &KnownCaptures) -> Report {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, paths.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, FileResult)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = paths.get(i) else { return };
                let result = check_file(i, path);
                if let Ok(mut r) = results.lock() {
                    r.push((i, result));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|(i, _)| *i);
    let mut report = Report {
        files: paths.len(),
        ..Report::default()
    };
    let mut seen = Vec::new();
    for (_, r) in results {
        report.records += r.seen.len() as u64;
        report.problems.extend(r.problems);
        report.notes.extend(r.notes);
        report.warcio_disagrees += r.warcio_disagrees;
        report.truncated += r.truncated;
        if let Some(e) = r.unreadable {
            report.unreadable.push(e);
        }
        seen.extend(r.seen);
    }
    cross_check(paths, &seen, known, &mut report);
    report
}

/// The checks that need every record: unique ids, link targets, revisit originals.
fn cross_check(paths: &[PathBuf], seen: &[Seen], known: &KnownCaptures, report: &mut Report) {
    let mut by_id: HashMap<&str, &Seen> = HashMap::new();
    let mut captures: HashSet<(&str, &str)> = HashSet::new();
    for s in seen {
        if let Some(id) = s.id.as_deref() {
            if let Some(first) = by_id.get(id) {
                report.problems.push(finding(
                    paths,
                    s,
                    format!(
                        "WARC-Record-ID is not unique: also at {} offset {}",
                        paths[first.file].display(),
                        first.offset
                    ),
                ));
            } else {
                by_id.insert(id, s);
            }
        }
        if let (Some(uri), Some(date)) = (s.uri.as_deref(), s.date.as_deref()) {
            if s.record_type != "request" {
                captures.insert((without_scheme(uri), date));
            }
        }
    }
    for s in seen {
        for target in &s.concurrent_to {
            if !by_id.contains_key(target.as_str()) {
                report.problems.push(finding(
                    paths,
                    s,
                    format!("WARC-Concurrent-To {target} names no record in these files"),
                ));
            }
        }
        let refers_found = s.refers_to.as_deref().map(|id| by_id.contains_key(id));
        if refers_found == Some(false) && s.record_type != "revisit" {
            report.problems.push(finding(
                paths,
                s,
                format!(
                    "WARC-Refers-To {} names no record in these files",
                    s.refers_to.as_deref().unwrap_or_default()
                ),
            ));
        }
        if s.record_type == "revisit" && refers_found != Some(true) {
            let by_uri = match (s.refers_to_uri.as_deref(), s.refers_to_date.as_deref()) {
                (Some(uri), Some(date)) => {
                    captures.contains(&(without_scheme(uri), date))
                        || known.captures.contains(&(
                            without_scheme(uri).to_string(),
                            crate::cdx::timestamp14(date),
                        ))
                }
                _ => false,
            };
            if !by_uri {
                let what = match (&s.refers_to, &s.refers_to_uri) {
                    (Some(id), _) => format!(
                        "revisit whose original {id} is in none of these files{}",
                        if known.captures.is_empty() {
                            " (give the collection's CDXJ with --index to look there)"
                        } else {
                            " nor in the --index CDXJ"
                        }
                    ),
                    (None, Some(uri)) => format!(
                        "revisit whose original ({uri} at {}) is in none of these files{}",
                        s.refers_to_date
                            .as_deref()
                            .unwrap_or("no WARC-Refers-To-Date"),
                        if known.captures.is_empty() {
                            " (give the collection's CDXJ with --index to look there)"
                        } else {
                            " nor in the --index CDXJ"
                        }
                    ),
                    (None, None) => {
                        "revisit without WARC-Refers-To or WARC-Refers-To-Target-URI".into()
                    }
                };
                report.problems.push(finding(paths, s, what));
            }
        }
    }
}

fn finding(paths: &[PathBuf], s: &Seen, what: String) -> Finding {
    Finding {
        file: paths[s.file].clone(),
        offset: Some(s.offset),
        record_id: s.id.clone(),
        what,
    }
}

/// A URL without `http://` or `https://`: as in pywb, both schemes are one page, and
/// recorders do write a revisit of an http capture with an https WARC-Refers-To-Target-URI.
fn without_scheme(url: &str) -> &str {
    url.strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url)
}

/// What checking one file gave.
#[derive(Default)]
struct FileResult {
    seen: Vec<Seen>,
    problems: Vec<Finding>,
    notes: Vec<Finding>,
    unreadable: Option<IndexError>,
    warcio_disagrees: u64,
    truncated: u64,
}

/// Checks one file; a file gzipped as one stream is inflated to a temporary file first (its
/// records have no offsets of their own, so offsets are then in the inflated stream).
fn check_file(index: usize, path: &Path) -> FileResult {
    let mut v = Checker {
        file: index,
        path: path.to_path_buf(),
        result: FileResult::default(),
    };
    match index::walk(path, &mut v) {
        Ok(()) => v.result,
        Err(IndexError::NotPerRecordGzip { .. }) => {
            let mut v = Checker {
                file: index,
                path: path.to_path_buf(),
                result: FileResult::default(),
            };
            v.result.problems.push(Finding {
                file: path.to_path_buf(),
                offset: None,
                record_id: None,
                what: "the file is one gzip stream, not one gzip member per record (WARC 1.1 \
                       annex D.2): no record can be read on its own, so replay tools cannot \
                       use it; offsets below are in the inflated stream"
                    .into(),
            });
            match inflate_to_temp(path) {
                Ok(tmp) => {
                    if let Err(e) = index::walk(tmp.path(), &mut v) {
                        v.result.unreadable = Some(e);
                    }
                }
                Err(source) => {
                    v.result.unreadable = Some(IndexError::Io {
                        path: path.to_path_buf(),
                        source,
                    })
                }
            }
            v.result
        }
        Err(e) => {
            v.result.unreadable = Some(e);
            v.result
        }
    }
}

fn inflate_to_temp(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let mut tmp = tempfile::NamedTempFile::new()?;
    let mut gz = flate2::read::MultiGzDecoder::new(BufReader::new(File::open(path)?));
    io::copy(&mut gz, tmp.as_file_mut())?;
    Ok(tmp)
}

/// The digest a header names: algorithm and value, decoded.
enum Expected {
    Sha1(Vec<u8>),
    Sha256(Vec<u8>),
    /// An algorithm or encoding not checked here.
    Other(String),
}

/// Parses `sha1:BASE32`, `sha1:HEX`, `sha256:HEX`, `sha256:BASE32` (case-insensitive).
fn parse_digest(label: &str) -> Expected {
    let Some((algo, value)) = label.split_once(':') else {
        return Expected::Other(label.to_string());
    };
    let want = match algo.to_ascii_lowercase().as_str() {
        "sha1" => 20,
        "sha256" => 32,
        _ => return Expected::Other(label.to_string()),
    };
    let value = value.trim();
    let decoded = if value.len() == want * 2 {
        data_encoding::HEXLOWER_PERMISSIVE
            .decode(value.as_bytes())
            .ok()
    } else {
        data_encoding::BASE32
            .decode(value.to_ascii_uppercase().as_bytes())
            .ok()
    };
    match decoded {
        Some(bytes) if bytes.len() == want && want == 20 => Expected::Sha1(bytes),
        Some(bytes) if bytes.len() == want => Expected::Sha256(bytes),
        _ => Expected::Other(label.to_string()),
    }
}

/// SHA-1 and SHA-256 of the same bytes (both, since which one a header asks for is only
/// known per record; SHA-256 only when asked).
#[derive(Clone)]
struct Hashes {
    sha1: Sha1,
    sha256: Option<Sha256>,
}

impl Hashes {
    fn new(sha256: bool) -> Hashes {
        Hashes {
            sha1: Sha1::new(),
            sha256: sha256.then(Sha256::new),
        }
    }
    fn update(&mut self, data: &[u8]) {
        self.sha1.update(data);
        if let Some(h) = &mut self.sha256 {
            h.update(data);
        }
    }
    /// Whether these bytes have the digest `expected`; `None` when it cannot be checked.
    fn matches(&self, expected: &Expected) -> Option<bool> {
        match expected {
            Expected::Sha1(want) => Some(self.sha1.clone().finalize().as_slice() == want),
            Expected::Sha256(want) => self
                .sha256
                .as_ref()
                .map(|h| h.clone().finalize().as_slice() == want),
            Expected::Other(_) => None,
        }
    }
}

/// What reading one block found.
struct BlockCheck {
    block: Option<bool>,
    /// The payload digest over the de-chunked body (the WARC 1.1 payload).
    payload: Option<bool>,
    /// The same over the bytes as framed (warcio's convention), when they differ.
    framed: Option<bool>,
    http_head_missing: bool,
    bad_chunking: bool,
    /// The head says chunked, the body has no framing.
    unframed: bool,
}

struct Checker {
    file: usize,
    path: PathBuf,
    result: FileResult,
}

impl Checker {
    fn problem(&mut self, offset: u64, id: Option<&str>, what: String) {
        self.result.problems.push(Finding {
            file: self.path.clone(),
            offset: Some(offset),
            record_id: id.map(str::to_string),
            what,
        });
    }
    fn note(&mut self, offset: u64, id: Option<&str>, what: String) {
        self.result.notes.push(Finding {
            file: self.path.clone(),
            offset: Some(offset),
            record_id: id.map(str::to_string),
            what,
        });
    }

    /// The mandatory fields of WARC 1.1 §5.1 and §6, and well-formed values.
    fn check_headers(&mut self, offset: u64, head: &WarcHead) {
        let id = head.record_id();
        let kind = head.record_type().unwrap_or("");
        let mut missing: Vec<&str> = ["WARC-Record-ID", "Content-Length", "WARC-Date", "WARC-Type"]
            .into_iter()
            .filter(|n| head.get(n).is_none())
            .collect();
        let needs_uri = matches!(
            kind,
            "response" | "resource" | "request" | "revisit" | "conversion" | "continuation"
        );
        if needs_uri && head.get("WARC-Target-URI").is_none() {
            missing.push("WARC-Target-URI");
        }
        if kind == "revisit" && head.get("WARC-Profile").is_none() {
            missing.push("WARC-Profile");
        }
        if kind == "continuation" {
            for n in ["WARC-Segment-Origin-ID", "WARC-Segment-Number"] {
                if head.get(n).is_none() {
                    missing.push(n);
                }
            }
        }
        if !missing.is_empty() {
            self.problem(
                offset,
                id,
                format!("missing mandatory header {}", missing.join(", ")),
            );
        }
        if let Some(Err(e)) = head.content_length() {
            self.problem(offset, id, e);
        }
        if let Some(rid) = id {
            if !(rid.starts_with('<') && rid.ends_with('>') && rid.contains(':')) {
                self.problem(
                    offset,
                    id,
                    "WARC-Record-ID is not a URI in angle brackets".into(),
                );
            }
        }
        if let Some(date) = head.get("WARC-Date") {
            if chrono::DateTime::parse_from_rfc3339(date).is_err() || !date.ends_with('Z') {
                self.problem(
                    offset,
                    id,
                    format!("WARC-Date {date:?} is not a UTC W3C-ISO8601 date"),
                );
            }
        }
        if let Some(t) = head.get("WARC-Truncated") {
            self.result.truncated += 1;
            if TRUNCATED_REASONS.contains(&t) {
                self.note(
                    offset,
                    id,
                    format!("truncated capture (WARC-Truncated: {t})"),
                );
            } else {
                self.problem(
                    offset,
                    id,
                    format!(
                        "WARC-Truncated {t:?} is none of {}",
                        TRUNCATED_REASONS.join(", ")
                    ),
                );
            }
        }
    }

    /// Reads the block, digesting it whole and its payload both ways.
    fn read_block(
        &mut self,
        head: &WarcHead,
        block: &mut dyn BufRead,
        block_digest: Option<&Expected>,
        payload_digest: Option<&Expected>,
    ) -> io::Result<BlockCheck> {
        let sha256 = matches!(block_digest, Some(Expected::Sha256(_)))
            || matches!(payload_digest, Some(Expected::Sha256(_)));
        let mut whole = Hashes::new(sha256);
        let kind = head.record_type().unwrap_or("");
        let uri = head.get("WARC-Target-URI").unwrap_or("");
        let is_http = matches!(kind, "response" | "request")
            && (uri.starts_with("http:") || uri.starts_with("https:"))
            && head
                .get("Content-Type")
                .is_some_and(|c| c.to_ascii_lowercase().starts_with("application/http"));
        let mut framed = payload_digest.map(|_| Hashes::new(sha256));
        let mut dechunked: Option<(Hashes, Dechunker)> = None;
        let mut http_head_missing = false;
        if is_http && payload_digest.is_some() {
            let mut http = Vec::new();
            let ended = read_head(block, &mut http)?;
            whole.update(&http);
            if !ended {
                http_head_missing = true;
            } else if is_chunked(&String::from_utf8_lossy(&http)) {
                dechunked = Some((Hashes::new(sha256), Dechunker::default()));
            }
        }
        loop {
            let buf = block.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            whole.update(buf);
            if let Some(f) = &mut framed {
                f.update(buf);
            }
            if let Some((h, d)) = &mut dechunked {
                d.feed(buf, |piece| h.update(piece));
            }
            let n = buf.len();
            block.consume(n);
        }
        let block = block_digest.and_then(|e| whole.matches(e));
        let mut bad_chunking = false;
        let mut unframed = false;
        let (payload, framed_ok) = match (payload_digest, framed, dechunked) {
            (Some(e), Some(f), Some((_, d))) if d.unframed() => {
                unframed = true;
                (f.matches(e), None)
            }
            (Some(e), Some(f), Some((h, d))) => {
                bad_chunking = !d.complete();
                let de = h.matches(e);
                let fr = f.matches(e);
                (de, if fr != de { fr } else { None })
            }
            (Some(e), Some(f), None) => (f.matches(e), None),
            _ => (None, None),
        };
        Ok(BlockCheck {
            block,
            payload,
            framed: framed_ok,
            http_head_missing,
            bad_chunking,
            unframed,
        })
    }
}

impl Visitor for Checker {
    type Item = ();

    fn record(&mut self, offset: u64, head: &WarcHead, block: &mut dyn BufRead) -> io::Result<()> {
        let arc = head.is_arc();
        if !arc {
            self.check_headers(offset, head);
        }
        let id = head.record_id().map(str::to_string);
        let kind = head.record_type().unwrap_or("").to_string();
        let block_digest = head.get("WARC-Block-Digest").map(parse_digest);
        // A revisit's payload digest is its original's: nothing here to digest.
        let payload_digest = head
            .get("WARC-Payload-Digest")
            .filter(|_| kind != "revisit")
            .map(parse_digest);
        for label in [&block_digest, &payload_digest].into_iter().flatten() {
            if let Expected::Other(l) = label {
                self.note(
                    offset,
                    id.as_deref(),
                    format!("digest {l} not checked (only sha1 and sha256 are)"),
                );
            }
        }
        let check = self.read_block(head, block, block_digest.as_ref(), payload_digest.as_ref())?;
        // A block shorter than its Content-Length is reported by the walk (`problem`).
        if check.block == Some(false) {
            self.problem(
                offset,
                id.as_deref(),
                "WARC-Block-Digest does not match the block".into(),
            );
        }
        if check.http_head_missing {
            self.problem(
                offset,
                id.as_deref(),
                "no complete HTTP head in an application/http block".into(),
            );
        }
        if check.unframed {
            self.note(
                offset,
                id.as_deref(),
                "the HTTP head says Transfer-Encoding: chunked but the body is stored without \
                 chunk framing; its payload digest is checked over the body as stored"
                    .into(),
            );
        }
        if check.bad_chunking {
            self.problem(
                offset,
                id.as_deref(),
                "Transfer-Encoding: chunked, but the body's chunk framing is broken".into(),
            );
        }
        match (check.payload, check.framed) {
            (Some(false), Some(true)) => self.problem(
                offset,
                id.as_deref(),
                "WARC-Payload-Digest is over the chunked framing, not the de-chunked payload \
                 (WARC 1.1 §6.3.2); warcio check accepts it"
                    .into(),
            ),
            (Some(false), _) => self.problem(
                offset,
                id.as_deref(),
                "WARC-Payload-Digest does not match the payload".into(),
            ),
            (Some(true), Some(false)) => {
                self.result.warcio_disagrees += 1;
                self.note(
                    offset,
                    id.as_deref(),
                    "payload digest right (over the de-chunked body, WARC 1.1 §6.3.2); \
                     warcio check digests the chunked framing and reports it failed"
                        .into(),
                );
            }
            _ => {}
        }
        Ok(())
    }

    fn done(&mut self, span: Span, head: WarcHead, _: ()) {
        let all = |name: &str| -> Vec<String> {
            head.fields
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
                .collect()
        };
        self.result.seen.push(Seen {
            file: self.file,
            offset: span.offset,
            record_type: head.record_type().unwrap_or("").to_string(),
            id: head.record_id().map(str::to_string),
            uri: head.get("WARC-Target-URI").map(str::to_string),
            date: head.get("WARC-Date").map(str::to_string),
            concurrent_to: all("WARC-Concurrent-To"),
            refers_to: head.get("WARC-Refers-To").map(str::to_string),
            refers_to_uri: head.get("WARC-Refers-To-Target-URI").map(str::to_string),
            refers_to_date: head.get("WARC-Refers-To-Date").map(str::to_string),
        });
    }

    fn problem(&mut self, problem: Problem) {
        self.result.problems.push(Finding {
            file: self.path.clone(),
            offset: Some(problem.offset),
            record_id: None,
            what: problem.message,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_parse_in_base32_and_hex() {
        let sha1 = crate::spool::sha1_of(b"abc");
        assert!(matches!(parse_digest(&sha1), Expected::Sha1(_)));
        let hex = "sha1:a9993e364706816aba3e25717850c26c9cd0d89d";
        assert!(matches!(parse_digest(hex), Expected::Sha1(_)));
        let s256 = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let Expected::Sha256(want) = parse_digest(s256) else {
            panic!()
        };
        assert_eq!(Sha256::digest(b"abc").as_slice(), &want[..]);
        assert!(matches!(parse_digest("md5:xyz"), Expected::Other(_)));
    }
}
