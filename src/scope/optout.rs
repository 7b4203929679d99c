//! Opt-out lists: what site owners asked us not to archive. This module reads and matches the
//! list files; the crawl checks every candidate against them, and the `optout` command
//! (`commands::optout`) applies them to WARCs already written (`archiver optout apply`) and
//! turns them into a pywb access-control file (`archiver optout aclj`).
//!
//! Every entry becomes one or more SURT prefixes and every check is "does the URL's SURT key
//! start with one of them": the same test pywb's access checker makes, so the crawler, the
//! rewrite and replay can never disagree about what an entry covers. (A consequence worth
//! knowing: like pywb, `www.` is ignored and `http`/`https` are the same site.)
//!
//! The file format, one entry per line:
//! ```text
//! # comments start with '#', at the start of a line or after whitespace
//! http://example.com/private/        2026-11-30   # URL prefix (http or https)
//! example.org                                     # a host, every port and path
//! example.net:8080                                # a host on one port
//! *.example.edu                                   # a domain and all its subdomains
//! .example.info                                   # the same, other spelling
//! com,example)/cgi-bin                            # a SURT prefix, used as written (lower-cased)
//! ```
//! The optional second field is the date the request was received (`YYYY-MM-DD`); it is kept
//! for reports. Anything else on a line is an error naming the file and line.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::PathBuf;

use chrono::NaiveDate;

use crate::cdx::canon;

/// What an entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// `http://example.com/private/`: every URL starting so (in SURT form).
    UrlPrefix,
    /// `example.com` or `example.com:8080`: the whole host (every port unless one is given).
    Host,
    /// `*.example.com` / `.example.com`: the host and all its subdomains.
    Domain,
    /// `com,example)/private`: a SURT prefix, as pywb's access rules write them.
    Surt,
}

/// One line of an opt-out list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptOutEntry {
    pub kind: EntryKind,
    /// The entry as written.
    pub text: String,
    /// When the request was received, if the line says.
    pub received: Option<NaiveDate>,
    /// The list file it came from.
    pub source: PathBuf,
    /// 1-based line number in `source`.
    pub line: usize,
    /// The SURT keys it stands for.
    pub rules: Vec<Rule>,
}

/// One SURT key an entry stands for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    pub key: String,
    /// Only this exact key (pywb's `###` rules), not everything starting with it. Needed
    /// because SURT drops a path's trailing slash: `http://h/dir/` has the key `h)/dir`, and
    /// covering the folder must not cover `h)/directory`.
    pub exact: bool,
}

impl Rule {
    fn prefix(key: String) -> Rule {
        Rule { key, exact: false }
    }
}

impl fmt::Display for OptOutEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}:{}", self.text, self.source.display(), self.line)?;
        if let Some(d) = self.received {
            write!(f, ", received {d}")?;
        }
        write!(f, ")")
    }
}

/// A malformed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub source: PathBuf,
    pub line: usize,
    pub text: String,
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {:?}",
            self.source.display(),
            self.line,
            self.message,
            self.text
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OptOutError {
    #[error("cannot read the opt-out list {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("malformed opt-out list:\n{}", .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Malformed(Vec<LineError>),
}

/// The entries of one or more opt-out lists, indexed for prefix lookups.
#[derive(Debug, Clone, Default)]
pub struct OptOutList {
    entries: Vec<OptOutEntry>,
    /// (SURT prefix, entry index), sorted by prefix, one per prefix (the first entry wins).
    prefixes: Vec<(String, usize)>,
    /// Exact SURT keys → entry index.
    exact: HashMap<String, usize>,
}

impl OptOutList {
    /// Reads and checks every list; all malformed lines of all files are reported together.
    pub fn load(paths: &[PathBuf]) -> Result<OptOutList, OptOutError> {
        let mut entries = Vec::new();
        let mut errors = Vec::new();
        for path in paths {
            let text = fs::read(path).map_err(|source| OptOutError::Io {
                path: path.clone(),
                source,
            })?;
            let text = String::from_utf8_lossy(&text);
            for (i, raw) in text.lines().enumerate() {
                match parse_line(raw) {
                    Ok(None) => {}
                    Ok(Some(parsed)) => entries.push(OptOutEntry {
                        kind: parsed.kind,
                        text: parsed.text,
                        received: parsed.received,
                        source: path.clone(),
                        line: i + 1,
                        rules: parsed.rules,
                    }),
                    Err(message) => errors.push(LineError {
                        source: path.clone(),
                        line: i + 1,
                        text: raw.trim().to_string(),
                        message,
                    }),
                }
            }
        }
        if !errors.is_empty() {
            return Err(OptOutError::Malformed(errors));
        }
        Ok(OptOutList::from_entries(entries))
    }

    /// Builds the prefix index.
    fn from_entries(entries: Vec<OptOutEntry>) -> OptOutList {
        let mut prefixes: Vec<(String, usize)> = Vec::new();
        let mut exact: HashMap<String, usize> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            for rule in &e.rules {
                if rule.exact {
                    exact.entry(rule.key.clone()).or_insert(i);
                } else {
                    prefixes.push((rule.key.clone(), i));
                }
            }
        }
        prefixes.sort();
        prefixes.dedup_by(|b, a| a.0 == b.0);
        OptOutList {
            entries,
            prefixes,
            exact,
        }
    }

    pub fn entries(&self) -> &[OptOutEntry] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry covering `url`, if any (the most specific one).
    pub fn matches(&self, url: &url::Url) -> Option<&OptOutEntry> {
        self.matches_str(url.as_str())
    }

    /// [`matches`](Self::matches) for a URL as written in a WARC (it may not parse).
    pub fn matches_str(&self, url: &str) -> Option<&OptOutEntry> {
        // No rule at all (the usual crawl): no SURT key to build for every link.
        if self.prefixes.is_empty() && self.exact.is_empty() {
            return None;
        }
        self.matches_key(&canon::surt(url))
    }

    /// The entry covering `key` (a SURT key): one naming it exactly, else the one with the
    /// longest prefix of it.
    pub fn matches_key(&self, key: &str) -> Option<&OptOutEntry> {
        if let Some(&i) = self.exact.get(key) {
            return Some(&self.entries[i]);
        }
        longest_prefix(&self.prefixes, key).map(|i| &self.entries[self.prefixes[i].1])
    }

    /// True when an entry covers every URL of `url`'s host and port, so that nothing there
    /// may be requested, not even robots.txt.
    pub fn blocks_whole_host(&self, url: &url::Url) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        let root = match url.port() {
            Some(port) => format!("{}://{host}:{port}/", url.scheme()),
            None => format!("{}://{host}/", url.scheme()),
        };
        // Every key on that host and port starts with the root's key, so a prefix of the
        // root's key covers them all.
        self.matches_str(&root).is_some()
    }

    /// pywb access-control lines (`.aclj`) excluding every prefix (exact keys carry pywb's
    /// `###` suffix), in the order pywb's binary search needs: whole lines sorted in
    /// descending byte order.
    pub fn aclj_lines(&self) -> Vec<String> {
        let keys = self
            .prefixes
            .iter()
            .map(|(p, _)| p.clone())
            .chain(self.exact.keys().map(|k| format!("{k}###")));
        let mut lines: Vec<String> = keys
            .map(|k| format!("{k} - {{\"access\": \"exclude\"}}"))
            .collect();
        lines.sort_unstable_by(|a, b| b.cmp(a));
        lines
    }
}

/// Index of the longest prefix of `key` in `sorted` (sorted by prefix). Each step looks at the
/// greatest prefix not above the current bound; when it is not a prefix of `key`, no longer
/// prefix can be either, so the bound shrinks to what the two have in common.
fn longest_prefix(sorted: &[(String, usize)], key: &str) -> Option<usize> {
    let key = key.as_bytes();
    let mut bound = key;
    loop {
        let i = sorted.partition_point(|(p, _)| p.as_bytes() <= bound);
        if i == 0 {
            return None;
        }
        let candidate = sorted[i - 1].0.as_bytes();
        if key.starts_with(candidate) {
            return Some(i - 1);
        }
        let common = candidate
            .iter()
            .zip(bound)
            .take_while(|(a, b)| a == b)
            .count();
        bound = &bound[..common];
    }
}

/// An entry as parsed from one line, before it knows its file.
struct Parsed {
    kind: EntryKind,
    text: String,
    received: Option<NaiveDate>,
    rules: Vec<Rule>,
}

/// One line: `Ok(None)` for blank and comment lines.
fn parse_line(raw: &str) -> Result<Option<Parsed>, String> {
    let text = strip_comment(raw);
    let mut fields = text.split_whitespace();
    let Some(entry) = fields.next() else {
        return Ok(None);
    };
    let received =
        match fields.next() {
            None => None,
            Some(d) => Some(NaiveDate::parse_from_str(d, "%Y-%m-%d").map_err(|_| {
                format!("{d:?} is not a date (YYYY-MM-DD); write one entry per line")
            })?),
        };
    if fields.next().is_some() {
        return Err("expected an entry and at most a date (YYYY-MM-DD)".into());
    }
    let (kind, rules) = classify(entry)?;
    Ok(Some(Parsed {
        kind,
        text: entry.to_string(),
        received,
        rules,
    }))
}

/// The line without its comment: `#` at the start or after whitespace starts one (a `#`
/// inside a URL does not).
fn strip_comment(raw: &str) -> &str {
    let mut prev_space = true;
    for (i, c) in raw.char_indices() {
        if c == '#' && prev_space {
            return &raw[..i];
        }
        prev_space = c.is_whitespace();
    }
    raw
}

/// What kind of entry `entry` is, and its SURT keys.
fn classify(entry: &str) -> Result<(EntryKind, Vec<Rule>), String> {
    if entry.contains("://") {
        return url_prefix(entry).map(|rules| (EntryKind::UrlPrefix, rules));
    }
    if entry.contains(')') || entry.contains(',') {
        return surt_prefix(entry).map(|p| (EntryKind::Surt, vec![Rule::prefix(p)]));
    }
    if let Some(domain) = entry.strip_prefix("*.").or_else(|| entry.strip_prefix('.')) {
        let base = host_key(domain)?;
        if base.contains(':') {
            return Err("a domain entry cannot name a port".into());
        }
        if domain.parse::<std::net::IpAddr>().is_ok() {
            return Err("an IP address has no subdomains".into());
        }
        let keys = [format!("{base})"), format!("{base}:"), format!("{base},")];
        return Ok((
            EntryKind::Domain,
            keys.into_iter().map(Rule::prefix).collect(),
        ));
    }
    let base = host_key(entry)?;
    let keys = if base.contains(':') {
        vec![format!("{base})")]
    } else {
        vec![format!("{base})"), format!("{base}:")]
    };
    Ok((
        EntryKind::Host,
        keys.into_iter().map(Rule::prefix).collect(),
    ))
}

/// `http://…` or `https://…` → the SURT key of that URL, used as a prefix. A folder
/// (`…/dir/`) loses its slash in SURT form, so it becomes the folder's own key exactly plus
/// everything under `dir/` and `dir?`.
fn url_prefix(entry: &str) -> Result<Vec<Rule>, String> {
    let url = url::Url::parse(entry).map_err(|e| format!("not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("a URL prefix must start with http:// or https://".into());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("a URL prefix needs a host".into());
    }
    let key = canon::surt(entry);
    if !key.contains(')') {
        return Err("cannot turn this URL into a SURT key".into());
    }
    let folder = url.path().len() > 1 && url.path().ends_with('/') && url.query().is_none();
    if folder && !key.ends_with('/') {
        return Ok(vec![
            Rule {
                key: key.clone(),
                exact: true,
            },
            Rule::prefix(format!("{key}/")),
            Rule::prefix(format!("{key}?")),
        ]);
    }
    Ok(vec![Rule::prefix(key)])
}

/// A SURT prefix as written: `com,example)/private`. Lower-cased, as every key is.
fn surt_prefix(entry: &str) -> Result<String, String> {
    let first = entry.find([',', ')']).unwrap_or(0);
    let label = &entry[..first];
    let label_ok = !label.is_empty()
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '*');
    if !label_ok || entry.starts_with('(') {
        return Err(
            "not a SURT prefix: it must start with a reversed host such as com,example)/".into(),
        );
    }
    if label == "*" {
        return Err("a SURT prefix cannot be a wildcard".into());
    }
    Ok(entry.to_ascii_lowercase())
}

/// The host part of the SURT key of `host` (with its port, if given), without the `)`:
/// `www.Example.com` → `com,example`, `example.com:8080` → `com,example:8080`.
fn host_key(host: &str) -> Result<String, String> {
    let ok_chars = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:[]".contains(c) || !c.is_ascii());
    if !ok_chars || host.starts_with('.') {
        return Err("not a host name".into());
    }
    let url =
        url::Url::parse(&format!("http://{host}/")).map_err(|e| format!("not a host ({e})"))?;
    if url.host_str().is_none_or(str::is_empty) || url.path() != "/" {
        return Err("not a host name".into());
    }
    let key = canon::surt(&format!("http://{host}/"));
    match key.find(')') {
        Some(end) if end > 0 => Ok(key[..end].to_string()),
        _ => Err("cannot turn this host into a SURT key".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(text: &str) -> Result<OptOutList, OptOutError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("optout.txt");
        fs::write(&p, text).unwrap();
        OptOutList::load(&[p])
    }

    fn u(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    #[test]
    fn every_kind_of_entry_matches_what_it_names() {
        let l = list(
            "# opt-outs\n\
             http://example.com/private/  2026-11-30  # by mail\n\
             example.org\n\
             example.net:8080\n\
             *.example.edu\n\
             .example.info\n\
             com,example)/cgi-bin\n",
        )
        .unwrap();
        assert_eq!(l.entries().len(), 6);
        let e = l.matches(&u("http://example.com/private/x")).unwrap();
        assert_eq!(e.kind, EntryKind::UrlPrefix);
        assert_eq!(e.line, 2);
        assert_eq!(e.received, NaiveDate::from_ymd_opt(2026, 11, 30));
        assert!(l.matches(&u("https://www.example.com/private/")).is_some());
        assert!(l.matches(&u("http://example.com/public/")).is_none());
        // SURT has no trailing slash: /private and /private/ are one page to pywb.
        assert!(l.matches(&u("http://example.com/private")).is_some());
        assert!(l.matches(&u("http://example.com/private/?a=1")).is_some());
        assert!(l.matches(&u("http://example.com/privateer/")).is_none());
        assert!(l.matches(&u("http://example.org:81/a")).is_some());
        assert!(l.matches(&u("http://sub.example.org/a")).is_none());
        assert!(l.matches(&u("http://example.orgy/")).is_none());
        assert!(l.matches(&u("http://example.net:8080/a")).is_some());
        assert!(l.matches(&u("http://example.net/a")).is_none());
        for url in [
            "http://example.edu/",
            "http://a.b.example.edu:9/x",
            "http://example.info/",
        ] {
            assert_eq!(l.matches(&u(url)).unwrap().kind, EntryKind::Domain, "{url}");
        }
        assert!(l.matches(&u("http://notexample.edu/")).is_none());
        assert_eq!(
            l.matches(&u("http://example.com/cgi-bin/x?a=1"))
                .unwrap()
                .kind,
            EntryKind::Surt
        );
    }

    #[test]
    fn whole_host_blocks_only_for_host_wide_entries() {
        let l =
            list("127.0.0.1\nhttp://example.com/private/\n*.example.edu\nhttp://example.org/\n")
                .unwrap();
        assert!(l.blocks_whole_host(&u("http://127.0.0.1:8080/robots.txt")));
        assert!(!l.blocks_whole_host(&u("http://127.0.0.2:8080/")));
        assert!(!l.blocks_whole_host(&u("http://example.com/private/")));
        assert!(l.blocks_whole_host(&u("https://www.example.edu/")));
        assert!(l.blocks_whole_host(&u("http://example.org/anything")));
    }

    #[test]
    fn malformed_lines_are_all_named() {
        let err = list(
            "example.com\nhttp://a.com/ 2026-13-01\nftp://x.org/\n(com,example)/\nexample.com extra words\nbad host!\n*.1.2.3.4\n",
        )
        .unwrap_err();
        let OptOutError::Malformed(errors) = &err else {
            panic!("{err}")
        };
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 5, 6, 7], "{err}");
        assert!(err.to_string().contains("optout.txt:2:"), "{err}");
    }

    #[test]
    fn longest_prefix_wins_and_is_found_past_longer_neighbours() {
        let l = list("com,example)/\ncom,example)/a/b\ncom,example)/a/bz\n").unwrap();
        assert_eq!(l.matches_key("com,example)/a/b/c").unwrap().line, 2);
        assert_eq!(l.matches_key("com,example)/a/c").unwrap().line, 1);
        assert!(l.matches_key("com,examplf)/").is_none());
    }

    #[test]
    fn aclj_lines_are_sorted_descending() {
        let l = list("example.com\nhttp://example.com/private/\n").unwrap();
        let lines = l.aclj_lines();
        let mut sorted = lines.clone();
        sorted.sort();
        sorted.reverse();
        assert_eq!(lines, sorted);
        for key in [
            "com,example)/private###",
            "com,example)/private/",
            "com,example:",
        ] {
            let line = format!("{key} - {{\"access\": \"exclude\"}}");
            assert!(lines.contains(&line), "{lines:?}");
        }
        assert_eq!(lines.len(), 5, "{lines:?}");
    }
}
