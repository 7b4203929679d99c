//! What the last run archived: the question a resumed crawl asks of every URL that was in
//! flight when that run stopped.
//!
//! A URL is marked done in the frontier only after its record is written, so a run killed in
//! between leaves an archived URL "in flight". Its record is in one of two places: an `.open`
//! WARC that recovery closes at start, or a WARC the writer closed (rotated) right after writing
//! it, before the frontier heard of it. The first are known from recovery; the second from the
//! CDXJ the writer puts beside every closed WARC (index first, then rename), read only for the
//! files closed since the last run began, and only when some in-flight URL is still unaccounted.

use std::collections::HashSet;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// URLs archived by the run that stopped, found at start.
pub(super) struct ArchivedBefore {
    /// Captured in the `.open` WARCs recovery closed.
    recovered: HashSet<String>,
    /// The crawl's index folder (one `<warc stem>.cdxj` per closed WARC).
    index_dir: PathBuf,
    /// When the last run started (None: unknown, every index is read).
    since: Option<SystemTime>,
}

impl ArchivedBefore {
    pub(super) fn new(
        recovered: HashSet<String>,
        index_dir: &Path,
        last_run_started: Option<&str>,
    ) -> ArchivedBefore {
        let since = last_run_started.and_then(parse_started).map(|t| {
            // The run book keeps whole seconds; a file closed in the run's first second must
            // still count.
            t.checked_sub(Duration::from_secs(2)).unwrap_or(t)
        });
        ArchivedBefore {
            recovered,
            index_dir: index_dir.to_path_buf(),
            since,
        }
    }

    /// Which of `urls` were archived: captured in a recovered WARC, or indexed in a WARC closed
    /// since the last run began. An index that cannot be read counts as holding none of them
    /// (the URL is fetched again: archived twice rather than lost).
    pub(super) fn find(&self, urls: &[&str]) -> HashSet<String> {
        let mut found: HashSet<String> = urls
            .iter()
            .filter(|u| self.recovered.contains(**u))
            .map(|u| u.to_string())
            .collect();
        let mut wanted: HashSet<&str> = urls
            .iter()
            .copied()
            .filter(|u| !found.contains(*u))
            .collect();
        if wanted.is_empty() {
            return found;
        }
        for index in self.recent_indexes() {
            scan_index(&index, &mut wanted, &mut found);
            if wanted.is_empty() {
                break;
            }
        }
        found
    }

    /// The index files written since the last run began, newest first.
    fn recent_indexes(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.index_dir) else {
            return Vec::new();
        };
        let mut files: Vec<(SystemTime, PathBuf)> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".cdxj"))
            .filter_map(|e| {
                let modified = e.metadata().ok()?.modified().ok()?;
                let recent = self.since.is_none_or(|since| modified >= since);
                recent.then(|| (modified, e.path()))
            })
            .collect();
        files.sort_by_key(|f| std::cmp::Reverse(f.0));
        files.into_iter().map(|(_, p)| p).collect()
    }
}

/// Moves every wanted URL that has a line in the CDXJ file `path` from `wanted` to `found`.
fn scan_index(path: &Path, wanted: &mut HashSet<&str>, found: &mut HashSet<String>) {
    let Ok(file) = std::fs::File::open(path) else {
        return;
    };
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else {
            return;
        };
        let Some(url) = cdxj_url(&line) else {
            continue;
        };
        if wanted.remove(url.as_str()) {
            found.insert(url);
            if wanted.is_empty() {
                return;
            }
        }
    }
}

/// The `url` field of a CDXJ line (`KEY TIMESTAMP {json}`).
fn cdxj_url(line: &str) -> Option<String> {
    let (_, _, json) = crate::cdx::split_line(line)?;
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    value.get("url")?.as_str().map(str::to_string)
}

/// A run book time (`2026-12-02T03:04:05Z`).
fn parse_started(s: &str) -> Option<SystemTime> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    let secs = u64::try_from(t.timestamp()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(dir: &Path, name: &str, urls: &[&str]) {
        let lines: String = urls
            .iter()
            .map(|u| {
                format!("com,example)/ 20261202000000 {{\"url\": \"{u}\", \"status\": \"200\"}}\n")
            })
            .collect();
        std::fs::write(dir.join(name), lines).unwrap();
    }

    #[test]
    fn finds_urls_in_recovered_files_and_in_indexes_of_closed_files() {
        let dir = tempfile::tempdir().unwrap();
        index(dir.path(), "A-00001.cdxj", &["http://example.com/closed"]);
        // Not an index: a half-written one is never read.
        index(
            dir.path(),
            "A-00002.cdxj.part",
            &["http://example.com/half"],
        );
        let recovered = HashSet::from(["http://example.com/open".to_string()]);
        let started = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let a = ArchivedBefore::new(recovered, dir.path(), Some(&started));
        let found = a.find(&[
            "http://example.com/open",
            "http://example.com/closed",
            "http://example.com/half",
            "http://example.com/never",
        ]);
        let mut found: Vec<_> = found.into_iter().collect();
        found.sort();
        assert_eq!(
            found,
            ["http://example.com/closed", "http://example.com/open"]
        );
    }

    #[test]
    fn indexes_older_than_the_last_run_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        index(dir.path(), "A-00001.cdxj", &["http://example.com/old"]);
        let a = ArchivedBefore::new(HashSet::new(), dir.path(), Some("2099-01-01T00:00:00Z"));
        assert!(a.find(&["http://example.com/old"]).is_empty());
        // Without a run book every index counts.
        let a = ArchivedBefore::new(HashSet::new(), dir.path(), None);
        assert_eq!(a.find(&["http://example.com/old"]).len(), 1);
    }

    #[test]
    fn a_missing_index_folder_finds_nothing() {
        let a = ArchivedBefore::new(HashSet::new(), Path::new("/nonexistent/indexes"), None);
        assert!(a.find(&["http://example.com/"]).is_empty());
    }
}
