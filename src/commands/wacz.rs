//! `archiver wacz CRAWLDIR -o FILE.wacz` (and `[output] wacz = true` at the end of a crawl):
//! packs a crawl as WACZ 1.1.1, the format Webrecorder's ReplayWeb.page, Browsertrix and pywb
//! share crawls in.
//!
//! ```text
//! archive/NAME.warc.gz     the crawl's WARCs, byte for byte, stored (not recompressed)
//! indexes/index.cdx        one sorted CDXJ over all of them (`filename` = NAME.warc.gz); named
//!                          .cdx, the name pywb's wb-manager and ReplayWeb.page look for
//! pages/pages.jsonl        {"format": "json-pages-1.0", …} then one line per HTML page
//! datapackage.json         profile, wacz_version, title, created, software, mainPage*,
//!                          resources: every file above with its sha256 and size
//! datapackage-digest.json  the sha256 of datapackage.json
//! ```
//!
//! Everything streams: each WARC is copied into the ZIP while it is hashed, the index and the
//! page list go through temporary files, so a crawl of many GB is packed in little memory. The
//! ZIP is written beside the target under a temporary name and renamed into place at the end.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::commands::index::{self, InputError};
use crate::commands::{http, io_at, IoAt};
use crate::extract::entities::decode_text;
use crate::warc::io::HashingWriter;

/// Largest record block read to find a page's title.
const MAX_TITLE_BLOCK: u64 = 4 * 1024 * 1024;
/// The part of a page searched for `<title>`.
const TITLE_SCAN: usize = 256 * 1024;
/// Files this large need ZIP64 entries.
const ZIP64_FROM: u64 = 0xffff_0000;

#[derive(Debug, thiserror::Error)]
pub enum WaczError {
    #[error(transparent)]
    Io(#[from] IoAt),
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{}: no closed WARC file to pack (files still being written end in .open)", .0.display())]
    NoWarcs(PathBuf),
    #[error("{}: cannot be indexed: {message}", .path.display())]
    Unindexable { path: PathBuf, message: String },
    #[error("two WARC files are both named {0}; WACZ keeps all WARCs in one archive/ folder")]
    DuplicateName(String),
    #[error("writing the ZIP: {0}")]
    Zip(#[from] zip::result::ZipError),
}

/// What to pack and how to describe it.
#[derive(Debug, Clone)]
pub struct WaczOptions {
    /// The crawl's output folder (its WARCs are found in it and its sub-folders).
    pub crawl_dir: PathBuf,
    pub output: PathBuf,
    /// `title` of the package (default: the crawl folder's name).
    pub title: Option<String>,
    /// The page replay opens first: the crawl's first seed. Default: the first page captured.
    pub main_page: Option<String>,
}

/// `[output] wacz = true`: what a crawl is packed as when it ends, `OUT/NAME.wacz` opening
/// at its first seed.
pub fn for_crawl(p: &crate::config::Profile) -> WaczOptions {
    let name: String = p
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    WaczOptions {
        crawl_dir: p.output_dir.clone(),
        output: p.output_dir.join(format!("{name}.wacz")),
        title: Some(p.name.clone()),
        main_page: p.seeds.first().map(|s| s.to_string()),
    }
}

/// Packs a crawl that ended ([`for_crawl`]) and says so in its run.log.
pub fn pack_crawl(opts: &WaczOptions) -> anyhow::Result<WaczReport> {
    let runlog = crate::logs::runlog::RunLog::open(&opts.crawl_dir.join("run.log"))?;
    let output = opts.output.display();
    match write(opts) {
        Ok(r) => {
            runlog.line(&format!(
                "wacz: {output} ({} WARC files, {} pages, {} bytes)",
                r.warcs, r.pages, r.bytes
            ));
            Ok(r)
        }
        Err(e) => {
            runlog.line(&format!("wacz: cannot write {output}: {e}"));
            anyhow::bail!("the crawl ended, but its WACZ could not be written: {e}")
        }
    }
}

/// What was packed.
#[derive(Debug, Default)]
pub struct WaczReport {
    pub warcs: usize,
    pub pages: usize,
    pub index_lines: u64,
    pub bytes: u64,
    /// `.open` WARCs left out.
    pub skipped_open: Vec<PathBuf>,
}

/// One file in the package, for `datapackage.json`.
struct Resource {
    name: String,
    path: String,
    hash: String,
    bytes: u64,
}

/// A page for `pages.jsonl`.
struct Page {
    url: String,
    ts: String,
    title: Option<String>,
}

/// Writes the WACZ `opts.output` for the crawl in `opts.crawl_dir`.
pub fn write(opts: &WaczOptions) -> Result<WaczReport, WaczError> {
    let found = index::find_archives(std::slice::from_ref(&opts.crawl_dir))?;
    let warcs: Vec<PathBuf> = found
        .files
        .into_iter()
        .filter(|p| file_name(p).contains(".warc"))
        .collect();
    if warcs.is_empty() {
        return Err(WaczError::NoWarcs(opts.crawl_dir.clone()));
    }
    let mut names: Vec<String> = warcs.iter().map(|p| file_name(p)).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(WaczError::DuplicateName(w[0].clone()));
    }
    let mut report = WaczReport {
        warcs: warcs.len(),
        skipped_open: found.open,
        ..WaczReport::default()
    };
    let out_dir = match opts.output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let work = tempfile::tempdir_in(&out_dir).map_err(io_at(&out_dir))?;

    // The index: every WARC read again (so it holds exactly what is packed).
    let cdxj_path = work.path().join("index.cdxj");
    let mut cdxj = BufWriter::new(File::create(&cdxj_path).map_err(io_at(&cdxj_path))?);
    let indexed = index::index_to(&warcs, &mut cdxj).map_err(io_at(&cdxj_path))?;
    cdxj.flush().map_err(io_at(&cdxj_path))?;
    drop(cdxj);
    if let Some(e) = indexed.failed.into_iter().next() {
        return Err(WaczError::Unindexable {
            path: opts.crawl_dir.clone(),
            message: e.to_string(),
        });
    }
    report.index_lines = indexed.lines;

    let pages = pages_of(&cdxj_path, &warcs)?;
    report.pages = pages.len();
    let pages_path = work.path().join("pages.jsonl");
    write_pages(&pages_path, &pages)?;

    let part = work.path().join("package.wacz");
    let file = File::create(&part).map_err(io_at(&part))?;
    let mut zip = ZipWriter::new(BufWriter::new(file));
    let mut resources = Vec::new();
    for warc in &warcs {
        let name = file_name(warc);
        resources.push(add_file(&mut zip, warc, &format!("archive/{name}"))?);
    }
    resources.push(add_file(&mut zip, &cdxj_path, "indexes/index.cdx")?);
    resources.push(add_file(&mut zip, &pages_path, "pages/pages.jsonl")?);

    let main = opts
        .main_page
        .clone()
        .or_else(|| pages.first().map(|p| p.url.clone()));
    let main_date = main.as_deref().and_then(|m| {
        pages
            .iter()
            .find(|p| p.url == m)
            .map(|p| p.ts.clone())
            .or_else(|| first_capture(&cdxj_path, m))
    });
    let title = opts.title.clone().unwrap_or_else(|| {
        opts.crawl_dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "archiver crawl".to_string())
    });
    let package = datapackage(&title, main.as_deref(), main_date.as_deref(), &resources);
    let package_hash = sha256_label(package.as_bytes());
    add_bytes(&mut zip, "datapackage.json", package.as_bytes())?;
    let digest = serde_json::json!({
        "path": "datapackage.json",
        "hash": package_hash,
    });
    let digest = serde_json::to_string_pretty(&digest).unwrap_or_default();
    add_bytes(&mut zip, "datapackage-digest.json", digest.as_bytes())?;
    let mut inner = zip.finish()?;
    inner.flush().map_err(io_at(&part))?;
    let file = inner
        .into_inner()
        .map_err(|e| io_at(&part)(e.into_error()))?;
    file.sync_all().map_err(io_at(&part))?;
    report.bytes = file.metadata().map_err(io_at(&part))?.len();
    drop(file);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o644))
            .map_err(io_at(&part))?;
    }
    std::fs::rename(&part, &opts.output).map_err(io_at(&opts.output))?;
    Ok(report)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Entry options: stored (WACZ wants the WARCs byte for byte, and readers seek into them);
/// ZIP64 for large files.
fn stored(size: u64) -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        .large_file(size >= ZIP64_FROM)
}

/// Copies the file at `src` into the ZIP as `path`, hashing it on the way.
fn add_file<W: Write + io::Seek>(
    zip: &mut ZipWriter<W>,
    src: &Path,
    path: &str,
) -> Result<Resource, WaczError> {
    let mut input = File::open(src).map_err(io_at(src))?;
    let size = input.metadata().map_err(io_at(src))?.len();
    zip.start_file(path, stored(size))?;
    let mut sink = HashingWriter::<_, Sha256>::new(&mut *zip);
    io::copy(&mut input, &mut sink).map_err(io_at(src))?;
    if sink.count() != size {
        let changed = io::Error::other("the file changed while it was being packed");
        return Err(io_at(src)(changed).into());
    }
    let hash = format!("sha256:{}", data_encoding::HEXLOWER.encode(&sink.finish()));
    Ok(Resource {
        name: path.rsplit('/').next().unwrap_or(path).to_string(),
        path: path.to_string(),
        hash,
        bytes: size,
    })
}

fn add_bytes<W: Write + io::Seek>(
    zip: &mut ZipWriter<W>,
    path: &str,
    data: &[u8],
) -> Result<(), WaczError> {
    zip.start_file(path, stored(data.len() as u64))?;
    zip.write_all(data)
        .map_err(|e| io_at(Path::new(path))(e).into())
}

fn sha256_label(data: &[u8]) -> String {
    format!(
        "sha256:{}",
        data_encoding::HEXLOWER.encode(&Sha256::digest(data))
    )
}

/// `datapackage.json` as WACZ 1.1.1 describes it.
fn datapackage(
    title: &str,
    main: Option<&str>,
    main_date: Option<&str>,
    resources: &[Resource],
) -> String {
    let mut package = serde_json::json!({
        "profile": "data-package",
        "wacz_version": "1.1.1",
        "title": title,
        "created": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "software": format!("archiver {}", env!("CARGO_PKG_VERSION")),
        "resources": resources.iter().map(|r| serde_json::json!({
            "name": r.name,
            "path": r.path,
            "hash": r.hash,
            "bytes": r.bytes,
        })).collect::<Vec<_>>(),
    });
    if let Some(m) = main {
        package["mainPageUrl"] = serde_json::json!(m);
    }
    if let Some(d) = main_date {
        package["mainPageDate"] = serde_json::json!(d);
    }
    serde_json::to_string_pretty(&package).unwrap_or_default()
}

/// The JSON fields of a CDXJ line that the page list needs.
#[derive(serde::Deserialize)]
struct Line {
    url: String,
    #[serde(default)]
    mime: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    offset: Option<String>,
    #[serde(default)]
    filename: Option<String>,
}

/// The archived HTML pages: every URL's first capture answered 2xx with an HTML type (not
/// revisits: their type is the original's), in capture order, with its title.
fn pages_of(cdxj: &Path, warcs: &[PathBuf]) -> Result<Vec<Page>, WaczError> {
    let reader = BufReader::new(File::open(cdxj).map_err(io_at(cdxj))?);
    let mut pages: Vec<(String, Page)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for line in reader.lines() {
        let line = line.map_err(io_at(cdxj))?;
        let Some((key, ts, json)) = crate::cdx::split_line(&line) else {
            continue;
        };
        let Ok(l) = serde_json::from_str::<Line>(json) else {
            continue;
        };
        let html = l.mime.as_deref().is_some_and(|m| m.contains("html"));
        let ok = l.status.as_deref().is_some_and(|s| s.starts_with('2'));
        if !html || !ok || !seen.insert(key.to_string()) {
            continue;
        }
        let Some(iso) = crate::cdx::warc_date_of(ts) else {
            continue;
        };
        let title = match (
            &l.filename,
            l.offset.as_deref().and_then(|o| o.parse().ok()),
        ) {
            (Some(f), Some(offset)) => warcs
                .iter()
                .find(|w| file_name(w) == *f)
                .and_then(|w| page_title(w, offset)),
            _ => None,
        };
        pages.push((
            ts.to_string(),
            Page {
                url: l.url,
                ts: iso,
                title,
            },
        ));
    }
    // The index is in SURT order; a page list reads best in capture order.
    pages.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(pages.into_iter().map(|(_, p)| p).collect())
}

/// The RFC 3339 date of the first capture of `url` in the index (any status).
fn first_capture(cdxj: &Path, url: &str) -> Option<String> {
    let reader = BufReader::new(File::open(cdxj).ok()?);
    let mut best: Option<String> = None;
    for line in reader.lines().map_while(Result::ok) {
        let Some((_, ts, json)) = crate::cdx::split_line(&line) else {
            continue;
        };
        if serde_json::from_str::<Line>(json).is_ok_and(|l| l.url == url)
            && best.as_deref().is_none_or(|b| ts < b)
        {
            best = Some(ts.to_string());
        }
    }
    best.and_then(|b| crate::cdx::warc_date_of(&b))
}

fn write_pages(path: &Path, pages: &[Page]) -> Result<(), WaczError> {
    let mut out = BufWriter::new(File::create(path).map_err(io_at(path))?);
    let mut write = || -> io::Result<()> {
        let header = serde_json::json!({
            "format": "json-pages-1.0",
            "id": "pages",
            "title": "All Pages",
        });
        writeln!(out, "{header}")?;
        for p in pages {
            let mut line = serde_json::json!({ "url": p.url, "ts": p.ts });
            if let Some(t) = &p.title {
                line["title"] = serde_json::json!(t);
            }
            writeln!(out, "{line}")?;
        }
        out.flush()
    };
    Ok(write().map_err(io_at(path))?)
}

/// The `<title>` of the HTML page in the record at `offset`, if it has one.
fn page_title(warc: &Path, offset: u64) -> Option<String> {
    // Broken chunking or a corrupt coding still leaves the start of the page, where the
    // title is.
    let payload = http::read_payload(warc, offset, MAX_TITLE_BLOCK, TITLE_SCAN).ok()??;
    let bytes = &payload.body.bytes;
    title_in(&String::from_utf8_lossy(
        &bytes[..bytes.len().min(TITLE_SCAN)],
    ))
}

/// The text of the first `<title>` element: character references decoded, whitespace
/// collapsed.
fn title_in(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let raw = &html[start..end];
    let text = decode_text(raw)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_found_and_cleaned() {
        assert_eq!(
            title_in("<html><head><TITLE lang=en>\n  Fish &amp; Chips </title>").as_deref(),
            Some("Fish & Chips")
        );
        assert_eq!(
            title_in("<title>caf&eacute;&nbsp;&#39;&#x27;</title>").as_deref(),
            Some("caf\u{e9} ''")
        );
        assert_eq!(title_in("<p>no title</p>"), None);
        assert_eq!(title_in("<title></title>"), None);
    }
}
