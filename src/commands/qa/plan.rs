//! What `archiver qa` replays and what it knows of every URL, both read from the crawl's
//! crawl.log: the archived HTML pages (all, or a sample spread over the sites) and the last
//! word crawl.log has on each URL (the reasons of what the archive lacks).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use url::Url;

use crate::browser::readback::{Known, Ledger};
use crate::frontier::seen_key;
use crate::logs::crawllog::{parse_line, read_lines};

/// What crawl.log's last line of a URL says (retries and the browser's own refusals left
/// aside, as the renderer's ledger leaves them).
#[derive(Debug, Clone, Copy)]
pub(super) struct LastWord {
    pub(super) status: i32,
    /// An annotation names a scope rule (`scope:…`).
    pub(super) scope_rule: bool,
    /// The line names a WARC record (`warcFilename` in its JSON).
    pub(super) recorded: bool,
}

/// An archived HTML page to replay.
#[derive(Debug, Clone)]
pub(super) struct PageRef {
    pub(super) url: Url,
    /// The page's hop path from its seed (`-` for a seed), for a patch crawl's embeds.
    pub(super) path: String,
}

/// One crawl folder as qa reads it.
pub(super) struct CrawlDir {
    pub(super) warc_dir: PathBuf,
    /// Where each archived URL's record is (the renderer's ledger, read the same way).
    pub(super) ledger: Ledger,
    /// The last word on every URL crawl.log names, by a hash of its seen-set key (16 bytes a
    /// URL: a crawl of millions of URLs is read whole).
    pub(super) words: HashMap<u64, LastWord>,
    /// The archived HTML pages, in crawl.log's order.
    pub(super) pages: Vec<PageRef>,
}

/// Why a crawl folder cannot be checked.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}: no crawl.log there (give the crawl's output folder)")]
    NoCrawlLog(PathBuf),
    #[error(transparent)]
    Io(#[from] crate::commands::IoAt),
}

impl CrawlDir {
    /// Reads `dir/crawl.log` (and nothing else: the WARCs are read page by page).
    pub(super) fn open(dir: &Path) -> Result<CrawlDir, PlanError> {
        let log = dir.join("crawl.log");
        if !log.is_file() {
            return Err(PlanError::NoCrawlLog(dir.to_path_buf()));
        }
        let ledger = Ledger::load(&log, &[]).map_err(crate::commands::io_at(&log))?;
        let mut words = HashMap::new();
        let mut candidates = Vec::new();
        read_lines(&log, |text| note_line(text, &mut words, &mut candidates))
            .map_err(crate::commands::io_at(&log))?;
        let mut seen = HashSet::new();
        let pages = candidates
            .into_iter()
            .filter(|p: &PageRef| matches!(ledger.known(&seen_key(&p.url)), Known::At(_)))
            .filter(|p| seen.insert(seen_key(&p.url)))
            .collect();
        Ok(CrawlDir {
            warc_dir: dir.join("warcs"),
            ledger,
            words,
            pages,
        })
    }

    /// The last word crawl.log has on `url`, if it names it.
    pub(super) fn word(&self, url: &Url) -> Option<&LastWord> {
        self.words.get(&key_hash(&seen_key(url)))
    }
}

/// Takes one crawl.log line in: the URL's last word, and the page it is if it is one.
fn note_line(text: &str, words: &mut HashMap<u64, LastWord>, pages: &mut Vec<PageRef>) {
    let Some(p) = parse_line(text) else { return };
    let Ok(url) = Url::parse(&p.uri) else { return };
    // Fields 5 and 6 (hop path, via) are not in `Parsed`: the first twelve hold no spaces.
    let path = text.split_whitespace().nth(4).unwrap_or("-").to_string();
    let passing = p
        .annotations
        .iter()
        .any(|a| a.starts_with("retry:") || a.starts_with("browser:"));
    let recorded = p.extra.contains("\"warcFilename\"");
    let key = key_hash(&seen_key(&url));
    // A retry or a refusal by the browser is not the last word, unless nothing else is said.
    if !passing || !words.contains_key(&key) {
        let scope_rule = p.annotations.iter().any(|a| a.starts_with("scope:"));
        words.insert(
            key,
            LastWord {
                status: p.status,
                scope_rule,
                recorded,
            },
        );
    }
    let html = p.mime.as_deref().is_some_and(is_html_mime);
    if (200..300).contains(&p.status) && html && recorded && !is_requisite(&path) {
        pages.push(PageRef { url, path });
    }
}

fn key_hash(key: &str) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

fn is_html_mime(mime: &str) -> bool {
    let m = mime.split(';').next().unwrap_or("").trim();
    m.eq_ignore_ascii_case("text/html") || m.eq_ignore_ascii_case("application/xhtml+xml")
}

/// A requisite (an embed, maybe through redirects): a frame, not a page of its own.
fn is_requisite(path: &str) -> bool {
    path.chars().rev().find(|c| *c != 'R') == Some('E')
}

/// The pages to replay: all, or `n` of them spread over the sites — one of each site in turn,
/// in crawl order — so a sample of a crawl of many sites sees each of them.
pub(super) fn sample(pages: &[PageRef], n: Option<usize>) -> Vec<PageRef> {
    let Some(n) = n else {
        return pages.to_vec();
    };
    let mut sites: Vec<(String, VecDeque<&PageRef>)> = Vec::new();
    for p in pages {
        let site = site_of(&p.url);
        match sites.iter_mut().find(|(s, _)| *s == site) {
            Some((_, q)) => q.push_back(p),
            None => sites.push((site, VecDeque::from([p]))),
        }
    }
    let mut out = Vec::new();
    while out.len() < n && sites.iter().any(|(_, q)| !q.is_empty()) {
        for (_, q) in sites.iter_mut() {
            if out.len() == n {
                break;
            }
            if let Some(p) = q.pop_front() {
                out.push(p.clone());
            }
        }
    }
    out
}

/// The site of a URL as the report groups it: scheme, host and port.
pub(super) fn site_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(u: &str) -> PageRef {
        PageRef {
            url: Url::parse(u).unwrap(),
            path: "L".into(),
        }
    }

    #[test]
    fn a_sample_takes_each_site_in_turn() {
        let pages = [
            page("http://a/1"),
            page("http://a/2"),
            page("http://a/3"),
            page("http://b/1"),
            page("http://c/1"),
        ];
        let got: Vec<String> = sample(&pages, Some(4))
            .iter()
            .map(|p| p.url.to_string())
            .collect();
        assert_eq!(
            got,
            ["http://a/1", "http://b/1", "http://c/1", "http://a/2"]
        );
        assert_eq!(sample(&pages, None).len(), 5);
        assert_eq!(sample(&pages, Some(50)).len(), 5);
    }

    #[test]
    fn the_last_word_is_not_a_retry_and_frames_are_not_pages() {
        let mut words = HashMap::new();
        let mut pages = Vec::new();
        let line = |status: &str, uri: &str, path: &str, mime: &str, notes: &str, extra: &str| {
            format!(
                "2026-01-01T00:00:00.000Z {status} 10 {uri} {path} - {mime} #001 - sha1:X - \
                 {notes} {extra}"
            )
        };
        let rec = r#"{"warcFilename":"A.warc.gz","warcFileOffset":0}"#;
        note_line(
            &line("-2", "http://h/x", "LE", "-", "-", "{}"),
            &mut words,
            &mut pages,
        );
        note_line(
            &line("-2", "http://h/x", "LE", "-", "retry:1", "{}"),
            &mut words,
            &mut pages,
        );
        note_line(
            &line("200", "http://h/", "-", "text/html", "-", rec),
            &mut words,
            &mut pages,
        );
        note_line(
            &line("200", "http://h/f", "LE", "text/html", "-", rec),
            &mut words,
            &mut pages,
        );
        let x = &words[&key_hash(&seen_key(&Url::parse("http://h/x").unwrap()))];
        assert_eq!(x.status, -2);
        assert!(!x.scope_rule && !x.recorded, "{x:?}");
        let urls: Vec<&str> = pages.iter().map(|p| p.url.as_str()).collect();
        assert_eq!(urls, ["http://h/"]);
    }
}
