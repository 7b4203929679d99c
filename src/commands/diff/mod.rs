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
//!
//! The road through this folder: `cdxj` finds and merges each crawl's indexes, `compare`
//! walks the two streams and counts, `report` renders text, JSON or HTML (asking `pages` what
//! changed on a changed page), `page` reads one page's text back for `--url`, and `lines` is
//! the line diff both use.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::commands::index::{self, IndexError};
use crate::commands::{io_at, IoAt};

mod cdxj;
mod compare;
mod lines;
mod page;
mod pages;
mod report;

pub use cdxj::{Capture, Crawl};
pub use compare::Counts;
pub use lines::{diff_lines, unified, Op};
pub use page::page_diff;

use compare::{compare, CompareError};
use report::{render_html, render_json, render_text};

#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(transparent)]
    Io(#[from] IoAt),
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

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Html,
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
        CompareError::Io(source) => io_at(&std::env::temp_dir())(source).into(),
    })?;
    let total = outcome.total;
    let out_err = |source| io_at(Path::new("<output>"))(source);
    match format {
        Format::Text => render_text(old, new, outcome, all, out).map_err(out_err)?,
        Format::Json => render_json(old, new, outcome, out).map_err(out_err)?,
        Format::Html => render_html(old, new, outcome, pywb, out).map_err(out_err)?,
    }
    Ok(total)
}
