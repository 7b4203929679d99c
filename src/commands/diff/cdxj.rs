//! A crawl's CDXJ indexes as `diff` reads them: where they are (indexing bare WARCs first), and
//! their lines parsed and merged into one stream sorted by SURT key.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{index, DiffError};
use crate::cdx::locate;
use crate::commands::io_at;

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
        let warc_dirs = if path.join("indexes").is_dir() {
            vec![path.join("warcs"), path.to_path_buf()]
        } else {
            vec![path.to_path_buf(), path.join("..").join("warcs")]
        };
        let indexes = match locate::crawl_indexes(path) {
            Ok(indexes) => indexes,
            Err(locate::LocateError::NoIndex(_)) => Vec::new(),
            Err(locate::LocateError::Missing(p)) => {
                return Err(DiffError::Input(index::InputError::Missing(p)))
            }
            Err(locate::LocateError::Io { path, source }) => {
                return Err(io_at(&path)(source).into())
            }
        };
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
    let Some((key, ts, json)) = crate::cdx::split_line(line) else {
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
pub(super) struct SideStream {
    readers: Vec<IndexReader>,
    heap: BinaryHeap<Reverse<(String, usize, u64)>>,
    /// A capture read ahead while grouping.
    peeked: Option<Capture>,
}

impl SideStream {
    pub(super) fn open(crawl: &Crawl) -> Result<SideStream, DiffError> {
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
    pub(super) fn next_capture(&mut self) -> Result<Option<Capture>, DiffError> {
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
    pub(super) fn next_page(&mut self) -> Result<Option<Capture>, DiffError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
