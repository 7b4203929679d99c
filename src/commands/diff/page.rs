//! `diff --url`: one page's text, old against new, read back from the WARCs the indexes point
//! to (through [`crate::commands::http::read_payload`]).

use crate::cdx::canon;
use crate::commands::http;
use crate::extract::text::decoded_text;

use super::cdxj::{Capture, Crawl, SideStream};
use super::lines::{diff_lines, unified};
use super::DiffError;

/// Largest record block read for `--url`.
const MAX_PAGE_BLOCK: u64 = 64 * 1024 * 1024;
/// Largest decoded page body compared by `--url`.
const MAX_PAGE_BODY: usize = 32 * 1024 * 1024;
/// Unchanged lines shown around each change in the page diff.
const CONTEXT: usize = 3;

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
        Ok(decoded_text(&text))
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
pub(super) fn decode_text(bytes: &[u8], mime: &str) -> String {
    let latin1 = ["iso-8859-1", "latin1", "windows-1252", "us-ascii"]
        .iter()
        .any(|c| mime.contains(&format!("charset={c}")));
    if latin1 || (std::str::from_utf8(bytes).is_err() && !mime.contains("utf-8")) {
        bytes.iter().map(|&b| char::from(b)).collect()
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}
