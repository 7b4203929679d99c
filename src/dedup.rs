//! The digest index that finds duplicate payloads, so a response whose payload was archived
//! before is written as a `revisit` record pointing at the original instead of a second copy.
//!
//! It knows two sources: captures this crawl wrote (added right after each write) and captures
//! of earlier crawls, read from their CDXJ files. For each payload digest it keeps what a
//! revisit must name, the original's URL and WARC-Date (and its record ID when this crawl wrote
//! it), because pywb resolves a revisit by looking that URL up near that date with the same
//! digest.
//!
//! A crawl of a large site sees millions of payloads, so an entry is kept small: the 20 raw
//! SHA-1 bytes (not the 37-character label), the record ID as a 16-byte UUID, date and URL end
//! to end in blocks of text shared by many entries (no allocation, pointer or allocator
//! rounding of their own). Entries sit in one vector, in the order added; the hash table holds
//! only their 4-byte positions, so its slack (a table is between 44% and 87% full) costs little:
//! about 120–160 bytes an entry in all, 60 of them the date and URL.

use std::fs::File;
use std::hash::BuildHasher as _;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use uuid::Uuid;

/// The only HTTP status deduplicated. A 404 (or 500, or redirect) whose body equals another
/// one is still a separate answer: what was captured is that *this* URL answered so, and error
/// pages are often one template served for thousands of URLs, so deduplicating them would tie
/// the replay of every missing page to some unrelated URL's capture while saving little. A 200
/// with a known payload is the same resource archived again: the case revisits exist for.
pub const DEDUP_STATUS: u16 = 200;

/// The `[dedup]` table: which earlier crawls count as archived, and how much is kept in memory.
#[derive(Debug, Clone)]
pub struct DedupSettings {
    /// Earlier crawls (output folders, their `indexes/` folders or CDXJ files): payloads
    /// archived there become revisits here.
    pub previous: Vec<PathBuf>,
    /// Most payload digests kept in memory for revisits (about 120–160 bytes each).
    pub max_digests: usize,
}

impl Default for DedupSettings {
    fn default() -> Self {
        DedupSettings {
            previous: Vec::new(),
            max_digests: 1_000_000,
        }
    }
}

/// Raw SHA-1 bytes.
type Sha1Key = [u8; 20];

/// Payload digest → the original capture.
#[derive(Default)]
pub struct DigestIndex {
    /// Positions in `entries`, found by the hash of their digest.
    slots: hashbrown::HashTable<u32>,
    entries: Vec<Entry>,
    /// The originals' dates and URLs, end to end, in blocks of at least [`TEXT_BLOCK`] bytes
    /// that are only ever appended to. A string per entry cost a third of the index more: its
    /// 16-byte pointer in the table, and the allocator's rounding of each one.
    texts: Vec<String>,
    /// The block texts are appended to (a text longer than a block gets one of its own and
    /// leaves this one open).
    open_block: usize,
    /// Seeded per process: digests come from payloads servers choose, and a fixed hash of
    /// them would let a server pile its payloads into one run of slots.
    hasher: foldhash::fast::RandomState,
}

impl std::fmt::Debug for DigestIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestIndex")
            .field("entries", &self.entries.len())
            .field("text_blocks", &self.texts.len())
            .finish()
    }
}

/// Bytes of one block of `DigestIndex::texts` (a longer text gets a block of its own).
const TEXT_BLOCK: usize = 1 << 20;

/// One original, compactly: its digest, and where its `date` then `url` are in the texts.
#[derive(Debug)]
struct Entry {
    key: Sha1Key,
    block: u32,
    start: u32,
    len: u32,
    date_len: u8,
    record_id: Option<Uuid>,
}

/// The capture a duplicate refers to: what `warc::Revisit` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original<'a> {
    /// WARC-Refers-To-Target-URI.
    pub url: &'a str,
    /// WARC-Refers-To-Date: a full WARC date.
    pub warc_date: &'a str,
    /// WARC-Refers-To (`<urn:uuid:…>`), known only for records this crawl wrote.
    pub record_id: Option<String>,
}

/// What loading CDXJ files found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadStats {
    pub files: usize,
    /// Capture lines read (header lines such as `!meta` not counted).
    pub lines: u64,
    /// Lines whose digest was new and is now in the index.
    pub added: u64,
    /// Lines that cannot be an original: not status 200, a revisit, a digest that is not
    /// SHA-1, or a digest already known.
    pub ignored: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum DedupError {
    #[error(transparent)]
    Locate(#[from] crate::cdx::locate::LocateError),
    #[error("cannot read the CDXJ index {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}:{line}: not a CDXJ line ({why})", .path.display())]
    Malformed {
        path: PathBuf,
        line: u64,
        why: String,
    },
}

impl DigestIndex {
    pub fn new() -> DigestIndex {
        DigestIndex::default()
    }

    /// Number of payloads known.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records a response this crawl wrote, so a later identical payload becomes a revisit.
    /// `warc_date` and `record_id` are those of the written record (`warc::Written`). Only
    /// full (not truncated) responses should be added: a cut payload is no original.
    /// Returns false, adding nothing, when the status is not 200, the digest is not SHA-1
    /// (the writer only writes SHA-1, so no other could ever match), the date is not a WARC
    /// date, or the digest is known already (the first original stays: it is the one earlier
    /// revisits name). A record ID that is not `<urn:uuid:…>` is dropped (WARC-Refers-To is
    /// optional; pywb does not use it).
    pub fn add(
        &mut self,
        status: u16,
        payload_digest: &str,
        url: &str,
        warc_date: &str,
        record_id: Option<&str>,
    ) -> bool {
        if status != DEDUP_STATUS || chrono::DateTime::parse_from_rfc3339(warc_date).is_err() {
            return false;
        }
        let Some(key) = sha1_key(payload_digest) else {
            return false;
        };
        self.insert(key, warc_date, url, record_id.and_then(parse_record_id))
    }

    /// The original of a payload, if a response with status `status` and this digest should be
    /// written as a revisit (never for a status other than 200; see [`DEDUP_STATUS`]).
    pub fn find(&self, status: u16, payload_digest: &str) -> Option<Original<'_>> {
        if status != DEDUP_STATUS {
            return None;
        }
        let entry = self.entry(&sha1_key(payload_digest)?)?;
        let start = entry.start as usize;
        let text = self
            .texts
            .get(entry.block as usize)?
            .get(start..start + entry.len as usize)?;
        let (warc_date, url) = text.split_at_checked(usize::from(entry.date_len))?;
        Some(Original {
            url,
            warc_date,
            record_id: entry.record_id.map(|id| format!("<urn:uuid:{id}>")),
        })
    }

    /// Adds the originals listed in CDXJ files (`SURT TIMESTAMP14 {json}`, as this crawler
    /// and cdxj-indexer write them). A path is a crawl's output folder, a folder of `*.cdxj`
    /// (its `indexes/`) or a file ([`crate::cdx::locate::crawl_indexes`]); a folder that holds
    /// no index is an error. Files are read in the order given and the first line of a digest wins.
    /// A line that is not CDXJ is an error naming file and line: a wrong file named in the
    /// profile should stop the crawl, not silently disable deduplication.
    pub fn load_cdxj<P: AsRef<Path>>(&mut self, paths: &[P]) -> Result<LoadStats, DedupError> {
        let mut stats = LoadStats::default();
        for path in paths {
            for file in crate::cdx::locate::crawl_indexes(path.as_ref())? {
                self.load_file(&file, &mut stats)?;
                stats.files += 1;
            }
        }
        Ok(stats)
    }

    fn load_file(&mut self, path: &Path, stats: &mut LoadStats) -> Result<(), DedupError> {
        let io_err = |source| DedupError::Io {
            path: path.to_path_buf(),
            source,
        };
        let reader = BufReader::new(File::open(path).map_err(io_err)?);
        for (n, line) in reader.lines().enumerate() {
            let line = line.map_err(io_err)?;
            if line.trim().is_empty() || line.starts_with('!') {
                continue;
            }
            stats.lines += 1;
            let parsed = parse_line(&line).map_err(|why| DedupError::Malformed {
                path: path.to_path_buf(),
                line: n as u64 + 1,
                why,
            })?;
            let added = parsed.is_some_and(|(key, date, url)| self.insert(key, &date, &url, None));
            if added {
                stats.added += 1;
            } else {
                stats.ignored += 1;
            }
        }
        Ok(())
    }

    /// Adds an entry unless the digest is known; false when nothing was added.
    fn insert(&mut self, key: Sha1Key, date: &str, url: &str, record_id: Option<Uuid>) -> bool {
        let Ok(date_len) = u8::try_from(date.len()) else {
            return false;
        };
        if self.entry(&key).is_some() {
            return false;
        }
        let Ok(position) = u32::try_from(self.entries.len()) else {
            return false;
        };
        let Some((block, start, len)) = self.store_text(date, url) else {
            return false;
        };
        self.entries.push(Entry {
            key,
            block,
            start,
            len,
            date_len,
            record_id,
        });
        let DigestIndex {
            slots,
            entries,
            hasher,
            ..
        } = self;
        let rehash = |&i: &u32| {
            entries
                .get(i as usize)
                .map_or(0, |e| hasher.hash_one(e.key))
        };
        slots.insert_unique(hasher.hash_one(key), position, rehash);
        true
    }

    /// The entry of a digest, if known.
    fn entry(&self, key: &Sha1Key) -> Option<&Entry> {
        let same = |&i: &u32| self.entries.get(i as usize).is_some_and(|e| e.key == *key);
        let position = self.slots.find(self.hasher.hash_one(key), same)?;
        self.entries.get(*position as usize)
    }

    /// Appends `date` then `url` to the texts: (block, start, length), or None for a text
    /// whose place does not fit the entry's 32-bit fields (nothing is appended then).
    fn store_text(&mut self, date: &str, url: &str) -> Option<(u32, u32, u32)> {
        let len = date.len() + url.len();
        let open = self.texts.get(self.open_block);
        let (block, start) = match open.filter(|b| b.capacity() - b.len() >= len) {
            Some(b) => (self.open_block, b.len()),
            None => (self.texts.len(), 0),
        };
        let place = (
            u32::try_from(block).ok()?,
            u32::try_from(start).ok()?,
            u32::try_from(len).ok()?,
        );
        if block == self.texts.len() {
            self.texts.push(String::with_capacity(len.max(TEXT_BLOCK)));
            if len < TEXT_BLOCK {
                self.open_block = block;
            }
        }
        let text = self.texts.get_mut(block)?;
        text.push_str(date);
        text.push_str(url);
        Some(place)
    }
}

/// One CDXJ line → (digest, WARC date, url) if it can be an original, `None` if it cannot
/// (see [`LoadStats::ignored`]), an error if it is not CDXJ at all.
fn parse_line(line: &str) -> Result<Option<(Sha1Key, String, String)>, String> {
    let Some((_key, timestamp, json)) = crate::cdx::split_line(line) else {
        return Err("expected: key, timestamp, JSON".into());
    };
    let date = crate::cdx::warc_date_of(timestamp)
        .ok_or_else(|| format!("bad timestamp {timestamp:?}"))?;
    let fields: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("bad JSON: {e}"))?;
    let text = |name: &str| match fields.get(name) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let url = text("url").ok_or("no url")?;
    // pywb never takes a revisit as the original of another revisit, so neither do we.
    if text("mime").as_deref() == Some("warc/revisit") || text("status").as_deref() != Some("200") {
        return Ok(None);
    }
    Ok(text("digest")
        .as_deref()
        .and_then(sha1_key)
        .map(|key| (key, date, url)))
}

/// The 20 bytes of a `sha1:BASE32` digest (label case-insensitive; a bare base32 value, as
/// some CDX writers store it, is accepted too). `None` for any other algorithm or a bad value.
fn sha1_key(digest: &str) -> Option<Sha1Key> {
    let value = match digest.split_once(':') {
        Some((algo, value)) if algo.eq_ignore_ascii_case("sha1") => value,
        Some(_) => return None,
        None => digest,
    };
    if value.len() != 32 {
        return None;
    }
    let bytes = data_encoding::BASE32
        .decode(value.to_ascii_uppercase().as_bytes())
        .ok()?;
    bytes.try_into().ok()
}

/// `<urn:uuid:…>` → the UUID (the only record ID form this crawler writes).
fn parse_record_id(id: &str) -> Option<Uuid> {
    let inner = id.strip_prefix("<urn:uuid:")?.strip_suffix('>')?;
    Uuid::parse_str(inner).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::sha1_of;
    use std::fs;

    const DATE: &str = "2026-11-30T23:38:13.123456Z";
    const ID: &str = "<urn:uuid:0b5a6f33-4d2c-4f6e-9a51-2f0c9a3c1e77>";

    #[test]
    fn finds_what_this_crawl_wrote_with_its_record_id() {
        let mut index = DigestIndex::new();
        let d = sha1_of(b"payload");
        assert!(index.add(200, &d, "http://h/a", DATE, Some(ID)));
        let found = index.find(200, &d).unwrap();
        assert_eq!(
            found,
            Original {
                url: "http://h/a",
                warc_date: DATE,
                record_id: Some(ID.to_string()),
            }
        );
        assert!(index.find(200, &sha1_of(b"other")).is_none());
        assert_eq!(index.len(), 1);
    }

    #[test]
    fn only_status_200_is_deduplicated() {
        let mut index = DigestIndex::new();
        let d = sha1_of(b"not found page");
        assert!(!index.add(404, &d, "http://h/x", DATE, None));
        assert!(index.is_empty());
        assert!(index.add(200, &d, "http://h/a", DATE, None));
        assert!(index.find(404, &d).is_none());
        assert!(index.find(301, &d).is_none());
        assert!(index.find(200, &d).is_some());
    }

    #[test]
    fn first_original_wins_and_odd_input_is_ignored() {
        let mut index = DigestIndex::new();
        let d = sha1_of(b"x");
        assert!(index.add(200, &d, "http://h/first", DATE, Some("<not-a-uuid>")));
        assert!(!index.add(200, &d, "http://h/second", DATE, Some(ID)));
        let found = index.find(200, &d).unwrap();
        assert_eq!(found.url, "http://h/first");
        assert_eq!(found.record_id, None);
        // Other algorithms, broken values and bad dates add nothing.
        assert!(!index.add(200, "sha256:ABCDEF", "http://h/", DATE, None));
        assert!(!index.add(200, "sha1:TOOSHORT", "http://h/", DATE, None));
        assert!(!index.add(200, &sha1_of(b"y"), "http://h/", "yesterday", None));
        assert_eq!(index.len(), 1);
        // The label's case and a bare value find the same entry.
        let bare = d.trim_start_matches("sha1:");
        assert!(index.find(200, bare).is_some());
        assert!(index
            .find(200, &format!("SHA1:{}", bare.to_lowercase()))
            .is_some());
        assert!(index.find(200, "md5:whatever").is_none());
    }

    #[test]
    fn entries_stay_small() {
        // An entry: digest 20 bytes, place of its text 13, record ID 17; plus its 4-byte slot,
        // and date and URL in a shared block.
        assert!(std::mem::size_of::<Entry>() <= 52);
        assert_eq!(std::mem::size_of::<Sha1Key>(), 20);
    }

    #[test]
    fn texts_across_blocks_and_longer_than_one_come_back_whole() {
        let mut index = DigestIndex::new();
        let long = format!("http://h/{}", "x".repeat(TEXT_BLOCK + 10));
        let url = |i: usize| match i {
            // The very first text is longer than a block, and one in the middle.
            0 | 7_000 => long.clone(),
            _ => format!("http://site-{i}.test/page/{i}?q={}", "y".repeat(i % 300)),
        };
        for i in 0..20_000usize {
            assert!(index.add(200, &sha1_of(&i.to_le_bytes()), &url(i), DATE, None));
        }
        assert!(index.texts.len() > 3, "{} blocks", index.texts.len());
        // The long text's block did not close the one being filled: one block at most (the
        // last) is left well short of full.
        let short = index
            .texts
            .iter()
            .filter(|b| b.len() < TEXT_BLOCK - 2_000)
            .count();
        assert!(short <= 1, "{short} blocks left part empty");
        for i in 0..20_000usize {
            let found = index.find(200, &sha1_of(&i.to_le_bytes())).unwrap();
            assert_eq!(
                (found.url, found.warc_date),
                (url(i).as_str(), DATE),
                "entry {i}"
            );
        }
    }

    fn line(key: &str, ts: &str, json: serde_json::Value) -> String {
        format!("{key} {ts} {json}")
    }

    #[test]
    fn loads_originals_from_cdxj_files_and_folders() {
        let dir = tempfile::tempdir().unwrap();
        let a = sha1_of(b"a");
        let b = sha1_of(b"b");
        let c = sha1_of(b"c");
        let lines = [
            "!meta 0 {\"note\": \"header lines are skipped\"}".to_string(),
            line(
                "h)/a",
                "20261130233813",
                serde_json::json!({"url": "http://h/a", "mime": "text/html", "status": "200",
                    "digest": a, "length": "10", "offset": "0", "filename": "x.warc.gz"}),
            ),
            // Same digest again: the first stays.
            line(
                "h)/a2",
                "20261201000000",
                serde_json::json!({"url": "http://h/a2", "status": "200", "digest": a}),
            ),
            // A 404 and a revisit cannot be originals.
            line(
                "h)/b",
                "20261130233814",
                serde_json::json!({"url": "http://h/b", "status": "404", "digest": b}),
            ),
            line(
                "h)/b2",
                "20261130233815",
                serde_json::json!({"url": "http://h/b2", "mime": "warc/revisit",
                    "status": "200", "digest": b}),
            ),
            // No digest, a non-SHA-1 digest.
            line(
                "h)/n",
                "20261130233816",
                serde_json::json!({"url": "http://h/n", "status": "200"}),
            ),
            line(
                "h)/s",
                "20261130233817",
                serde_json::json!({"url": "http://h/s", "status": "200", "digest": "sha256:AAAA"}),
            ),
            String::new(),
        ];
        let first = dir.path().join("one.cdxj");
        fs::write(&first, lines.join("\n")).unwrap();
        let folder = dir.path().join("older");
        fs::create_dir(&folder).unwrap();
        fs::write(
            folder.join("two.cdxj"),
            line(
                "h)/c",
                "20250101010101",
                serde_json::json!({"url": "http://h/c", "status": 200, "digest": c}),
            ),
        )
        .unwrap();
        fs::write(folder.join("ignored.txt"), "not an index").unwrap();

        let mut index = DigestIndex::new();
        let stats = index.load_cdxj(&[&first, &folder]).unwrap();
        assert_eq!(
            stats,
            LoadStats {
                files: 2,
                lines: 7,
                added: 2,
                ignored: 5,
            }
        );
        let found = index.find(200, &a).unwrap();
        assert_eq!(found.url, "http://h/a");
        assert_eq!(found.warc_date, "2026-11-30T23:38:13Z");
        assert_eq!(found.record_id, None);
        assert!(index.find(200, &b).is_none());
        assert_eq!(
            index.find(200, &c).unwrap().warc_date,
            "2025-01-01T01:01:01Z"
        );
    }

    #[test]
    fn a_file_that_is_not_cdxj_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.cdxj");
        let good = line(
            "h)/a",
            "20261130233813",
            serde_json::json!({"url": "http://h/a", "status": "200", "digest": sha1_of(b"a")}),
        );
        for (bad, why) in [
            ("WARC/1.1", "expected"),
            ("h)/a 2026 {}", "bad timestamp"),
            ("h)/a 20261130233813 {not json", "bad JSON"),
            ("h)/a 20261130233813 {\"status\": \"200\"}", "no url"),
        ] {
            fs::write(&path, format!("{good}\n{bad}\n")).unwrap();
            let err = DigestIndex::new().load_cdxj(&[&path]).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(&format!("{}:2:", path.display())), "{text}");
            assert!(text.contains(why), "{text}");
        }
        let missing = dir.path().join("missing.cdxj");
        let err = DigestIndex::new().load_cdxj(&[&missing]).unwrap_err();
        assert!(matches!(err, DedupError::Locate(_)), "{err}");
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(err.to_string().contains("missing.cdxj"), "{err}");
    }

    // ----- end to end: writer + index + pywb -----

    use crate::spool::Spool;
    use crate::warc::tests::{our_lines, required_venv};
    use crate::warc::{http_head, Exchange, Revisit, WarcSettings, WarcVersion, WarcWriter};
    use chrono::{DateTime, Utc};
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

    fn at(date: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(date)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn response(body: &[u8], extra: &str) -> Vec<u8> {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n{extra}\r\n",
            body.len()
        );
        [head.as_bytes(), body].concat()
    }

    /// Writes a 200 response of `body` at `uri` unless the index knows the payload, in which
    /// case a revisit: the decision the crawler makes for every response.
    fn archive(
        w: &mut WarcWriter,
        index: &mut DigestIndex,
        uri: &str,
        date: &str,
        raw: &[u8],
        body: &[u8],
    ) -> String {
        let digest = sha1_of(body);
        if let Some(orig) = index.find(200, &digest) {
            let written = w
                .write_revisit(Revisit {
                    target_uri: uri,
                    date: at(date),
                    ip: None,
                    request: REQUEST,
                    http_head: http_head(raw).unwrap(),
                    payload_digest: digest,
                    refers_to_uri: orig.url,
                    refers_to_date: orig.warc_date,
                    refers_to_record_id: orig.record_id.as_deref(),
                })
                .unwrap();
            return written.warc_date;
        }
        let mut spool = Spool::new(1 << 20);
        spool.append(raw).unwrap();
        let written = w
            .write_exchange(Exchange {
                target_uri: uri,
                date: at(date),
                ip: None,
                request: REQUEST,
                response: &mut spool,
                payload_digest: Some(digest.clone()),
                truncated: None,
            })
            .unwrap();
        assert!(index.add(
            200,
            &digest,
            uri,
            &written.warc_date,
            Some(&written.record_id)
        ));
        written.warc_date
    }

    /// pywb's `wayback`, bound to loopback, killed when dropped.
    struct Wayback {
        child: Child,
        addr: SocketAddr,
        log: PathBuf,
    }

    impl Wayback {
        fn start(venv: &Path, dir: &Path, index: &Path, warcs: &Path) -> Wayback {
            let config = format!(
                "collections:\n  c:\n    index_paths: '{}'\n    archive_paths: ['{}/']\n",
                index.display(),
                warcs.display()
            );
            fs::write(dir.join("config.yaml"), config).unwrap();
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let log = dir.join("wayback.log");
            let child = Command::new(venv.join("bin/wayback"))
                .args(["-b", "127.0.0.1", "-p", &port.to_string()])
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(File::create(&log).unwrap())
                .stderr(File::create(dir.join("wayback.err")).unwrap())
                .spawn()
                .unwrap();
            let mut wb = Wayback {
                child,
                addr: SocketAddr::from(([127, 0, 0, 1], port)),
                log,
            };
            wb.wait_ready();
            wb
        }

        fn logs(&self) -> String {
            let dir = self.log.parent().unwrap();
            format!(
                "{}\n{}",
                fs::read_to_string(&self.log).unwrap_or_default(),
                fs::read_to_string(dir.join("wayback.err")).unwrap_or_default()
            )
        }

        fn wait_ready(&mut self) {
            let start = Instant::now();
            loop {
                if let Some(status) = self.child.try_wait().unwrap() {
                    panic!("wayback exited early ({status}):\n{}", self.logs());
                }
                if get(self.addr, "/").is_ok_and(|(status, _)| status == 200) {
                    return;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "wayback did not answer within 60 s:\n{}",
                    self.logs()
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }

    impl Drop for Wayback {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// GET with `Connection: close`; (status, body). Bodies here are small and unchunked
    /// only when pywb says so, so chunked framing is removed.
    fn get(addr: SocketAddr, target: &str) -> std::io::Result<(u16, Vec<u8>)> {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            s,
            "GET {target} HTTP/1.1\r\nHost: {addr}\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n"
        )?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)?;
        let bad = || std::io::Error::from(std::io::ErrorKind::InvalidData);
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(bad)?;
        let head = String::from_utf8_lossy(&raw[..end]).to_lowercase();
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(bad)?;
        let mut body = raw[end + 4..].to_vec();
        if head.contains("transfer-encoding: chunked") {
            body = crate::warc::chunked::dechunk_strict(&body).ok_or_else(bad)?;
        }
        Ok((status, body))
    }

    #[test]
    fn pywb_replays_revisits_through_their_originals() {
        let venv = required_venv();
        let dir = tempfile::tempdir().unwrap();
        let settings = WarcSettings {
            warc_dir: dir.path().join("warcs"),
            index_dir: dir.path().join("indexes"),
            prefix: "ARCHIVER".into(),
            max_bytes: 1 << 30,
            version: WarcVersion::V1_1,
            info: Vec::new(),
        };
        let old_body = b"<html><body>archived last year</body></html>\n";
        let new_body = b"<html><body>archived in this crawl</body></html>\n";

        // An earlier crawl: one response, in its own WARC with its own CDXJ.
        let mut w = WarcWriter::new(settings.clone()).unwrap();
        let mut index = DigestIndex::new();
        let old_date = archive(
            &mut w,
            &mut index,
            "http://127.0.0.1:8080/old",
            "2025-11-30T10:00:00.25Z",
            &response(old_body, ""),
            old_body,
        );
        w.close().unwrap();
        let old_warc = w.closed_files()[0].clone();

        // This crawl knows it only through that CDXJ (no record ID, date from the timestamp).
        let mut index = DigestIndex::new();
        let stats = index.load_cdxj(&[&settings.index_dir]).unwrap();
        assert_eq!(stats.added, 1);
        let orig = index.find(200, &sha1_of(old_body)).unwrap();
        assert_eq!(orig.warc_date, "2025-11-30T10:00:00Z");
        assert_eq!(crate::cdx::timestamp14(&old_date), "20251130100000");

        let mut w = WarcWriter::new(settings.clone()).unwrap();
        let dates = [
            "2026-11-30T10:00:00Z",
            "2026-11-30T10:00:01Z",
            "2026-11-30T10:00:02Z",
        ];
        let raw_copy = response(old_body, "X-Copy: of last year\r\n");
        let copy_date = archive(
            &mut w,
            &mut index,
            "http://127.0.0.1:8080/copy-of-old",
            dates[0],
            &raw_copy,
            old_body,
        );
        let raw_new = response(new_body, "");
        archive(
            &mut w,
            &mut index,
            "http://127.0.0.1:8080/new",
            dates[1],
            &raw_new,
            new_body,
        );
        let again_date = archive(
            &mut w,
            &mut index,
            "http://127.0.0.1:8080/new-again",
            dates[2],
            &raw_new,
            new_body,
        );
        w.close().unwrap();
        let warc = w.closed_files()[0].clone();
        let lines = our_lines(&settings.index_dir, &warc);
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains("\"warc/revisit\""))
                .count(),
            2
        );

        let wb = Wayback::start(&venv, dir.path(), &settings.index_dir, &settings.warc_dir);
        for (uri, date, body) in [
            (
                "http://127.0.0.1:8080/copy-of-old",
                &copy_date,
                &old_body[..],
            ),
            (
                "http://127.0.0.1:8080/new-again",
                &again_date,
                &new_body[..],
            ),
            ("http://127.0.0.1:8080/old", &old_date, &old_body[..]),
        ] {
            let target = format!("/c/{}id_/{uri}", crate::cdx::timestamp14(date));
            let (status, got) = get(wb.addr, &target).unwrap();
            assert_eq!(
                (status, String::from_utf8_lossy(&got)),
                (200, String::from_utf8_lossy(body)),
                "GET {target} ({} and {} in the collection)\n{}",
                file_name(&old_warc),
                file_name(&warc),
                wb.logs()
            );
        }
    }

    fn file_name(p: &Path) -> String {
        p.file_name().unwrap().to_string_lossy().into_owned()
    }
}
