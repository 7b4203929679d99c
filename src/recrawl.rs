//! Conditional re-crawling: what earlier crawls archived with a validator, so a request for the
//! same URL can carry `If-None-Match` / `If-Modified-Since`, and a `304` be written as a
//! revisit of that capture.
//!
//! The validators (`ETag`, `Last-Modified`) live in the earlier WARCs' response headers, not in
//! their CDXJ. They are indexed once, when the crawl opens: every `200` capture line of the
//! earlier CDXJ files (revisits left out; the latest capture of a URL wins), at most
//! [`MAX_CAPTURES`] of them, each read at its file and offset, at most [`HEAD_BYTES`] of its
//! block. What is kept per URL is small (the earlier record's date and ID, payload digest and
//! size, and the two validators), about 300 bytes.
//!
//! "A place naming an earlier crawl" is resolved by [`place_of`] alone (an output folder, its
//! `indexes/`, or one `.cdxj` file), so it can be replaced by a resolver shared with `[dedup]`.

use std::collections::HashMap;
use std::fs;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use url::Url;

/// Captures indexed from earlier crawls, at most.
pub const MAX_CAPTURES: usize = 1_000_000;
/// Bytes of an earlier record's block read for its HTTP head.
pub const HEAD_BYTES: u64 = 64 * 1024;

/// The `[recrawl]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecrawlSettings {
    /// Earlier crawls: output folders, their `indexes/` folders, or `.cdxj` files.
    pub previous: Vec<PathBuf>,
    /// Queue every URL the earlier crawls archived, linked or not.
    pub revisit_unlinked: bool,
}

impl Default for RecrawlSettings {
    fn default() -> Self {
        RecrawlSettings {
            previous: Vec::new(),
            revisit_unlinked: true,
        }
    }
}

/// One earlier capture of a URL with what a conditional request and its revisit need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    /// WARC-Target-URI of the earlier response.
    pub url: String,
    /// Its WARC-Date, as written.
    pub warc_date: String,
    /// Its WARC-Record-ID.
    pub record_id: Option<String>,
    /// Its WARC-Payload-Digest (`sha1:…`).
    pub payload_digest: String,
    /// Bytes of its payload as stored (the bytes a 304 saved).
    pub payload_len: u64,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The WARC file and offset of the earlier response record.
    pub record: (PathBuf, u64),
}

impl Earlier {
    /// The earlier response's entity body (transfer coding removed, content coding kept) and
    /// its `Content-Encoding`, at most `max` bytes of the record's block: what a 304 for a
    /// sitemap stands for, read again to find its locations.
    pub fn payload(&self, max: u64) -> Option<(Vec<u8>, Option<String>)> {
        let (path, offset) = &self.record;
        let (_, block) = crate::warc::read::read_record_at(path, *offset, max).ok()?;
        let head = crate::warc::http_head(&block)?;
        let text = String::from_utf8_lossy(head);
        let body = &block[head.len()..];
        let body = if crate::warc::is_chunked(&text) {
            crate::warc::chunked::dechunk(body).0
        } else {
            body.to_vec()
        };
        let encoding = crate::warc::header(&text, "content-encoding").map(str::to_string);
        Some((body, encoding))
    }

    /// The conditional headers a request for this URL carries: `If-None-Match` with the ETag,
    /// `If-Modified-Since` with the Last-Modified (RFC 9110 §13.1: a server that knows ETags
    /// uses the first and ignores the second).
    pub fn conditions(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(etag) = &self.etag {
            out.push(("If-None-Match", etag.clone()));
        }
        if let Some(lm) = &self.last_modified {
            out.push(("If-Modified-Since", lm.clone()));
        }
        out
    }
}

/// What was read of the earlier crawls.
#[derive(Debug, Default)]
pub struct EarlierCaptures {
    by_url: HashMap<String, Earlier>,
    /// Every URL they archived with a 200 (to queue again), in the order read.
    urls: Vec<String>,
    /// What loading found.
    pub stats: LoadStats,
}

/// Counts of the load, for run.log.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadStats {
    pub files: usize,
    pub captures: usize,
    pub with_validator: usize,
    /// Records that could not be read at the place their line gives.
    pub unreadable: usize,
    /// Captures past [`MAX_CAPTURES`], not indexed.
    pub left_out: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum RecrawlError {
    #[error("cannot read {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Locate(#[from] crate::cdx::locate::LocateError),
}

/// Where an earlier crawl's index and WARCs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub cdxj: Vec<PathBuf>,
    /// Folders a CDXJ `filename` is looked up in, in order.
    pub warc_dirs: Vec<PathBuf>,
}

/// Resolves a place naming an earlier crawl: its output folder (`indexes/`, `warcs/`), its
/// `indexes/` folder (WARCs beside it in `../warcs/`), or one `.cdxj` file (the same).
pub fn place_of(path: &Path) -> Result<Place, RecrawlError> {
    // The one resolver of "a place naming an earlier crawl", shared with `[dedup] previous`.
    let cdxj = crate::cdx::locate::crawl_indexes(path)?;
    let index_dir = cdxj
        .first()
        .and_then(|f| f.parent())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let mut warc_dirs = Vec::new();
    if let Some(up) = index_dir.parent() {
        warc_dirs.push(up.join("warcs"));
    }
    warc_dirs.push(index_dir);
    Ok(Place { cdxj, warc_dirs })
}

/// One CDXJ line that may be an earlier capture: (url, timestamp, filename, offset, mime).
struct Line {
    url: String,
    timestamp: String,
    filename: String,
    offset: u64,
}

fn capture_line(line: &str) -> Option<(Line, Option<String>)> {
    let (_key, timestamp, json) = crate::cdx::split_line(line)?;
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let mime = text("mime");
    if mime.as_deref() == Some("warc/revisit") || text("status").as_deref() != Some("200") {
        return None;
    }
    let url = Url::parse(&text("url")?).ok()?.to_string();
    let line = Line {
        url,
        timestamp: timestamp.to_string(),
        filename: text("filename")?,
        offset: text("offset")?.parse().ok()?,
    };
    Some((line, mime))
}

impl EarlierCaptures {
    /// Reads the earlier crawls the settings name. A place that names no crawl is an error
    /// (a wrong path must not silently turn the re-crawl into a full one); a record that
    /// cannot be read is counted and its URL fetched unconditionally.
    pub fn load(settings: &RecrawlSettings) -> Result<EarlierCaptures, RecrawlError> {
        let mut lines: HashMap<String, Line> = HashMap::new();
        let mut order = Vec::new();
        let mut stats = LoadStats::default();
        let mut dirs_of: HashMap<String, Vec<PathBuf>> = HashMap::new();
        for path in &settings.previous {
            let place = place_of(path)?;
            for file in &place.cdxj {
                stats.files += 1;
                let f = fs::File::open(file).map_err(|source| RecrawlError::Io {
                    path: file.clone(),
                    source,
                })?;
                for text in BufReader::new(f).lines().map_while(Result::ok) {
                    let Some((line, mime)) = capture_line(&text) else {
                        continue;
                    };
                    if !lines.contains_key(&line.url) {
                        if lines.len() >= MAX_CAPTURES {
                            stats.left_out += 1;
                            continue;
                        }
                        if worth_queueing(&line.url, mime.as_deref()) {
                            order.push(line.url.clone());
                        }
                    }
                    dirs_of
                        .entry(line.filename.clone())
                        .or_insert_with(|| place.warc_dirs.clone());
                    let newer = lines
                        .get(&line.url)
                        .is_none_or(|old| old.timestamp <= line.timestamp);
                    if newer {
                        lines.insert(line.url.clone(), line);
                    }
                }
            }
        }
        let mut by_url = HashMap::with_capacity(lines.len());
        // Read in file and offset order: each file from its start to its end, not a seek
        // across the earlier crawl for every URL.
        let mut lines: Vec<(String, Line)> = lines.into_iter().collect();
        lines.sort_by(|a, b| (&a.1.filename, a.1.offset).cmp(&(&b.1.filename, b.1.offset)));
        for (url, line) in lines {
            stats.captures += 1;
            let dirs = dirs_of.get(&line.filename).map_or(&[][..], Vec::as_slice);
            match read_earlier(dirs, &line) {
                Some(earlier) => {
                    if earlier.etag.is_some() || earlier.last_modified.is_some() {
                        stats.with_validator += 1;
                    }
                    by_url.insert(url, earlier);
                }
                None => stats.unreadable += 1,
            }
        }
        Ok(EarlierCaptures {
            by_url,
            urls: order,
            stats,
        })
    }

    /// The earlier capture of a URL, if any.
    pub fn get(&self, url: &Url) -> Option<&Earlier> {
        if self.by_url.is_empty() {
            return None;
        }
        self.by_url.get(url.as_str())
    }

    /// The URLs to queue again: every 200 the earlier crawls archived but robots.txt files and
    /// what looks like a sitemap or feed (XML, gzip: found again through robots.txt, where
    /// their discovery path makes them read as sitemaps).
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    pub fn is_empty(&self) -> bool {
        self.by_url.is_empty()
    }
}

fn worth_queueing(url: &str, mime: Option<&str>) -> bool {
    let mime = mime.unwrap_or("").to_ascii_lowercase();
    let feedish = (mime.contains("xml") && !mime.contains("html")) || mime.contains("gzip");
    !feedish && !url.ends_with("/robots.txt")
}

/// The earlier record a line points to, read for its validators; None when it cannot be read
/// or is not a 200 response.
fn read_earlier(dirs: &[PathBuf], line: &Line) -> Option<Earlier> {
    let path = dirs
        .iter()
        .map(|d| d.join(&line.filename))
        .find(|p| p.is_file())?;
    let (head, block) = crate::warc::read::read_record_at(&path, line.offset, HEAD_BYTES).ok()?;
    if head.record_type() != Some("response") {
        return None;
    }
    let http = crate::warc::http_head(&block)?;
    let text = String::from_utf8_lossy(http);
    let status = text.lines().next()?.split_whitespace().nth(1)?;
    if status != "200" {
        return None;
    }
    let first = |name: &str| {
        crate::warc::header(&text, name)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let (etag, last_modified) = (first("etag"), first("last-modified"));
    let length = head.content_length()?.ok()?;
    Some(Earlier {
        url: head.target_uri()?,
        warc_date: head.get("WARC-Date")?.to_string(),
        record_id: head.record_id().map(str::to_string),
        payload_digest: head.get("WARC-Payload-Digest")?.to_string(),
        payload_len: length.saturating_sub(http.len() as u64),
        etag,
        last_modified,
        record: (path, line.offset),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_is_a_folder_its_indexes_or_a_cdxj_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("crawl");
        fs::create_dir_all(out.join("indexes")).unwrap();
        fs::create_dir_all(out.join("warcs")).unwrap();
        let file = out.join("indexes").join("A.cdxj");
        fs::write(&file, "").unwrap();
        let whole = place_of(&out).unwrap();
        assert_eq!(whole.cdxj, std::slice::from_ref(&file));
        assert_eq!(whole.warc_dirs[0], out.join("warcs"));
        assert_eq!(place_of(&out.join("indexes")).unwrap(), whole);
        assert_eq!(place_of(&file).unwrap(), whole);
        let empty = dir.path().join("empty");
        fs::create_dir_all(&empty).unwrap();
        assert!(matches!(
            place_of(&empty),
            Err(RecrawlError::Locate(
                crate::cdx::locate::LocateError::NoIndex(_)
            ))
        ));
        assert!(place_of(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn only_200_captures_are_earlier_ones() {
        let ok = r#"com,example)/ 20261101000000 {"url": "http://example.com/", "mime": "text/html", "status": "200", "digest": "sha1:X", "length": "10", "offset": "42", "filename": "A.warc.gz"}"#;
        let (line, mime) = capture_line(ok).unwrap();
        assert_eq!(
            (line.url.as_str(), line.offset),
            ("http://example.com/", 42)
        );
        assert_eq!(mime.as_deref(), Some("text/html"));
        assert!(capture_line(&ok.replace("\"200\"", "\"404\"")).is_none());
        assert!(capture_line(&ok.replace("text/html", "warc/revisit")).is_none());
        assert!(capture_line("junk").is_none());
        assert!(worth_queueing("http://example.com/a", Some("text/html")));
        assert!(!worth_queueing(
            "http://example.com/s.xml",
            Some("application/xml")
        ));
        assert!(!worth_queueing(
            "http://example.com/robots.txt",
            Some("text/plain")
        ));
    }

    /// A crawl folder written by the library's own WARC writer: a chunked, gzipped sitemap
    /// with an ETag, a page with only a Last-Modified, a page with neither, and a 404.
    #[test]
    fn earlier_captures_are_read_from_their_warcs() {
        use crate::warc::{Exchange, WarcSettings, WarcVersion, WarcWriter};
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("crawl");
        let settings = WarcSettings {
            warc_dir: out.join("warcs"),
            index_dir: out.join("indexes"),
            prefix: "T".into(),
            max_bytes: 1 << 30,
            version: WarcVersion::V1_1,
            info: Vec::new(),
        };
        let mut w = WarcWriter::new(settings).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"<urlset><url><loc>http://a.test/x</loc></url></urlset>")
            .unwrap();
        let gz = gz.finish().unwrap();
        let mut chunked = format!("{:x}\r\n", gz.len()).into_bytes();
        chunked.extend_from_slice(&gz);
        chunked.extend_from_slice(b"\r\n0\r\n\r\n");
        let head = |status: &str, extra: &str, body: &[u8]| {
            let mut r = format!("HTTP/1.1 {status}\r\n{extra}\r\n").into_bytes();
            r.extend_from_slice(body);
            r
        };
        let cases: [(&str, Vec<u8>, &[u8]); 4] = [
            (
                "http://a.test/s.xml",
                head(
                    "200 OK",
                    "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\nETag: \"v1\"\r\n",
                    &chunked,
                ),
                &gz,
            ),
            (
                "http://a.test/lm",
                head(
                    "200 OK",
                    "Last-Modified: Sun, 01 Nov 2026 00:00:00 GMT\r\nContent-Length: 2\r\n",
                    b"hi",
                ),
                b"hi",
            ),
            (
                "http://a.test/plain",
                head("200 OK", "Content-Length: 2\r\n", b"ho"),
                b"ho",
            ),
            (
                "http://a.test/gone",
                head("404 Not Found", "Content-Length: 0\r\n", b""),
                b"",
            ),
        ];
        for (uri, response, payload) in &cases {
            let mut spool = crate::spool::Spool::default();
            spool.append(response).unwrap();
            w.write_exchange(Exchange {
                target_uri: uri,
                date: chrono::Utc::now(),
                ip: None,
                request: b"GET / HTTP/1.1\r\n\r\n",
                response: &mut spool,
                payload_digest: Some(crate::spool::sha1_of(payload)),
                truncated: None,
            })
            .unwrap();
        }
        w.close().unwrap();
        let settings = RecrawlSettings {
            previous: vec![out.join("indexes")],
            revisit_unlinked: true,
        };
        let earlier = EarlierCaptures::load(&settings).unwrap();
        assert_eq!(earlier.stats.captures, 3, "{:?}", earlier.stats);
        assert_eq!(earlier.stats.with_validator, 2, "{:?}", earlier.stats);
        let url = |s: &str| Url::parse(s).unwrap();
        let sitemap = earlier.get(&url("http://a.test/s.xml")).unwrap();
        assert_eq!(sitemap.etag.as_deref(), Some("\"v1\""));
        assert_eq!(sitemap.last_modified, None);
        assert_eq!(sitemap.payload_digest, crate::spool::sha1_of(&gz));
        assert_eq!(
            sitemap.payload(1 << 20),
            Some((gz.clone(), Some("gzip".to_string())))
        );
        let lm = earlier.get(&url("http://a.test/lm")).unwrap();
        assert_eq!(lm.conditions().len(), 1);
        assert_eq!(lm.payload_len, 2);
        assert!(earlier
            .get(&url("http://a.test/plain"))
            .unwrap()
            .conditions()
            .is_empty());
        assert!(earlier.get(&url("http://a.test/gone")).is_none());
        // Queued again: the 200s, not the 404.
        assert!(earlier.urls().contains(&"http://a.test/lm".to_string()));
        assert!(!earlier.urls().contains(&"http://a.test/gone".to_string()));
    }

    #[test]
    fn conditions_carry_both_validators() {
        let e = Earlier {
            url: "http://example.com/".into(),
            warc_date: "2026-11-01T00:00:00Z".into(),
            record_id: None,
            payload_digest: "sha1:X".into(),
            payload_len: 3,
            etag: Some("\"v1\"".into()),
            last_modified: Some("Sun, 01 Nov 2026 00:00:00 GMT".into()),
            record: (PathBuf::from("A.warc.gz"), 0),
        };
        assert_eq!(
            e.conditions(),
            [
                ("If-None-Match", "\"v1\"".to_string()),
                (
                    "If-Modified-Since",
                    "Sun, 01 Nov 2026 00:00:00 GMT".to_string()
                )
            ]
        );
    }
}
