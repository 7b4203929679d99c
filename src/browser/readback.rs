//! The browser's answers read back from the crawl's own WARCs.
//!
//! A URL the crawl has fetched is never asked of its server again: when the browser wants it,
//! its response record is read back from the WARC at the offset crawl.log gave it, and the
//! recorded HTTP message is decoded by hyper, the parser that read it live. The browser so sees
//! exactly what the archive holds (and what replay will show), whichever run of the crawl
//! fetched it, and no body is held in memory for it meanwhile: only where each record is.
//!
//! [`Ledger`] is that map, read from crawl.log when the first page goes to the browser and
//! filled from each final crawl.log line written from then on (a crawl that renders nothing
//! keeps none); [`read_back`] reads one answer.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use url::Url;

use crate::browser::BrowserAnswer;
use crate::frontier::seen_key;
use crate::net::fetch::Fetched;

/// Largest body handed to the browser (decoded); a longer one is cut there.
pub(crate) const MAX_BROWSER_BODY: usize = 32 << 20;
/// Room for the HTTP head in a record's block, beyond the body.
const MAX_HTTP_HEAD: u64 = 1 << 20;
/// The annotation of a revisit line: its payload is that of an earlier record.
const REVISIT: &str = "duplicate:digest";

/// An answer as the browser gets it: decoded body, headers as received.
#[derive(Debug)]
pub(crate) struct Copy {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Copy {
    /// The page being rendered, from its own fetch (it is archived only once rendered).
    pub(crate) fn of(f: &Fetched) -> Copy {
        let body = decoded(f.header("content-encoding"), &f.payload);
        Copy {
            status: f.status,
            headers: text_headers(&f.headers),
            body,
        }
    }

    pub(crate) fn answer(&self) -> BrowserAnswer {
        BrowserAnswer::Response {
            status: self.status,
            headers: self.headers.clone(),
            body: self.body.clone(),
        }
    }
}

fn decoded(encoding: Option<&str>, body: &[u8]) -> Vec<u8> {
    crate::extract::decode_body(encoding, body, MAX_BROWSER_BODY).bytes
}

fn text_headers(h: &hyper::HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect()
}

/// Where a URL's answer is: a response record (a revisit's original, found by its digest).
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub(crate) filename: String,
    pub(crate) offset: u64,
    /// The record is the URL's own (its WARC-Target-URI is checked): not a revisit's original.
    pub(crate) own: bool,
}

/// What the crawl knows of a URL so far.
#[derive(Debug)]
pub(crate) enum Known {
    /// Archived: its record is there.
    At(Found),
    /// Given a final crawl.log line, but no record the browser can be answered from (dropped,
    /// failed, discarded, or a revisit of a record of another crawl).
    Settled,
    /// Not settled yet: queued, in flight, or never seen.
    Unknown,
}

#[derive(Debug, Clone, Copy)]
struct Spot {
    file: u32,
    offset: u64,
    own: bool,
}

/// Where every URL this crawl archived is, and which URLs it settled, keyed by hashes (of the
/// seen-set key, of the payload digest): about 50 bytes a URL.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    files: Vec<String>,
    file_ids: HashMap<String, u32>,
    by_url: HashMap<u64, Spot, Seeded>,
    /// The first 200 response archived with each payload digest: a revisit's original.
    by_digest: HashMap<u64, Spot, Seeded>,
    settled: HashSet<u64, Seeded>,
}

/// The maps' hasher: their keys are hashes already, so SipHash over them again (a line is
/// noted for every URL) buys nothing that foldhash's per-process random seed does not.
type Seeded = foldhash::fast::RandomState;

/// One final crawl.log line, as the ledger reads it.
pub(crate) struct Line<'a> {
    pub(crate) uri: &'a str,
    pub(crate) status: i32,
    pub(crate) digest: Option<&'a str>,
    pub(crate) annotations: &'a [String],
    pub(crate) extra: Option<&'a serde_json::Value>,
}

/// A final line logged while the ledger is being read from crawl.log, kept to be noted after
/// the lines read, in the order they were logged.
pub(crate) struct Pending {
    key: String,
    uri: String,
    status: i32,
    digest: Option<String>,
    annotations: Vec<String>,
    extra: Option<serde_json::Value>,
}

impl Pending {
    pub(crate) fn of(line: &Line<'_>, seen_key: String) -> Pending {
        Pending {
            key: seen_key,
            uri: line.uri.to_string(),
            status: line.status,
            digest: line.digest.map(str::to_string),
            annotations: line.annotations.to_vec(),
            extra: line.extra.cloned(),
        }
    }

    /// Notes the line in `ledger`, as if it had been noted when logged.
    pub(crate) fn note_in(&self, ledger: &mut Ledger) {
        let line = Line {
            uri: &self.uri,
            status: self.status,
            digest: self.digest.as_deref(),
            annotations: &self.annotations,
            extra: self.extra.as_ref(),
        };
        ledger.note_keyed(&line, &self.key);
    }
}

impl Line<'_> {
    /// Whether the line is the URL's last word: not a try to be made again (`retry:N`), nor a
    /// request the browser refused by itself (`browser:…`: the URL was not judged, and may
    /// still be fetched when found otherwise).
    pub(crate) fn settles(&self) -> bool {
        !self
            .annotations
            .iter()
            .any(|a| a.starts_with("retry:") || a.starts_with("browser:"))
    }
}

impl Ledger {
    /// The keys of URLs found archived in WARCs recovered at start, as [`Ledger::load`] takes
    /// them: 8 bytes a URL, kept until the ledger is read.
    pub(crate) fn recovered_keys(recovered: &HashSet<String>) -> Vec<u64> {
        recovered
            .iter()
            .filter_map(|uri| Url::parse(uri).ok())
            .map(|url| key_hash(&seen_key(&url)))
            .collect()
    }

    /// A ledger that knows only the URLs found archived in WARCs recovered at start (no line
    /// says where their records are: they are settled).
    pub(crate) fn settled(recovered: &[u64]) -> Ledger {
        let mut ledger = Ledger::default();
        ledger.settled.extend(recovered.iter().copied());
        ledger
    }

    /// The ledger of crawl.log (missing: empty), plus the recovered URLs ([`Ledger::settled`]).
    pub(crate) fn load(crawl_log: &Path, recovered: &[u64]) -> std::io::Result<Ledger> {
        let mut ledger = Ledger::settled(recovered);
        crate::logs::crawllog::read_lines(crawl_log, |text| {
            // A torn line (a crash) says nothing: its URL is fetched again or waited for.
            let Some(p) = crate::logs::crawllog::parse_line(text) else {
                return;
            };
            let extra = serde_json::from_str(&p.extra).ok();
            let line = Line {
                uri: &p.uri,
                status: p.status,
                digest: p.digest.as_deref(),
                annotations: &p.annotations,
                extra: extra.as_ref(),
            };
            if line.settles() {
                ledger.note(&line);
            }
        })?;
        Ok(ledger)
    }

    /// Takes a final line in; returns where the URL's answer is, if the browser can have one.
    pub(crate) fn note(&mut self, line: &Line<'_>) -> Option<Found> {
        let url = Url::parse(line.uri).ok()?;
        self.note_keyed(line, &seen_key(&url))
    }

    /// [`Ledger::note`] of a line whose URL's seen-set key the caller has at hand.
    pub(crate) fn note_keyed(&mut self, line: &Line<'_>, seen_key: &str) -> Option<Found> {
        let key = key_hash(seen_key);
        self.settled.insert(key);
        let extra = line.extra?;
        let filename = extra.get("warcFilename")?.as_str()?;
        let offset = extra.get("warcFileOffset")?.as_u64()?;
        let digest = line.digest.filter(|d| *d != "-").map(key_hash);
        let spot = if line.annotations.iter().any(|a| a == REVISIT) {
            // A revisit record holds no payload: the browser gets its original.
            Spot {
                own: false,
                ..*self.by_digest.get(&digest?)?
            }
        } else {
            let here = Spot {
                file: self.file_id(filename),
                offset,
                own: true,
            };
            if let (Some(d), 200) = (digest, line.status) {
                self.by_digest.entry(d).or_insert(here);
            }
            here
        };
        self.by_url.insert(key, spot);
        Some(self.found(spot))
    }

    /// What is known of the URL with this seen-set key.
    pub(crate) fn known(&self, key: &str) -> Known {
        let h = key_hash(key);
        match self.by_url.get(&h) {
            Some(spot) => Known::At(self.found(*spot)),
            None if self.settled.contains(&h) => Known::Settled,
            None => Known::Unknown,
        }
    }

    fn found(&self, spot: Spot) -> Found {
        Found {
            filename: self.files[spot.file as usize].clone(),
            offset: spot.offset,
            own: spot.own,
        }
    }

    fn file_id(&mut self, name: &str) -> u32 {
        if let Some(id) = self.file_ids.get(name) {
            return *id;
        }
        let id = self.files.len() as u32;
        self.files.push(name.to_string());
        self.file_ids.insert(name.to_string(), id);
        id
    }
}

fn key_hash(key: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// Reads the answer at `found` back from the WARCs in `warc_dir` (the file may still be open,
/// `….open`, or closed and renamed meanwhile), for the browser's request of `url`.
pub(crate) async fn read_back(warc_dir: &Path, found: &Found, url: &Url) -> Result<Copy, String> {
    let paths = [
        warc_dir.join(&found.filename),
        warc_dir.join(format!("{}.open", found.filename)),
    ];
    let offset = found.offset;
    let max_block = MAX_BROWSER_BODY as u64 + MAX_HTTP_HEAD;
    let read = tokio::task::spawn_blocking(move || read_either(&paths, offset, max_block))
        .await
        .map_err(|e| format!("reading the record failed: {e}"))??;
    let (head, block) = read;
    if head.record_type() != Some("response") {
        return Err(format!(
            "the record at {}:{offset} is a {}, not a response",
            found.filename,
            head.record_type().unwrap_or("record without a type")
        ));
    }
    if found.own {
        let target = head.target_uri().and_then(|u| Url::parse(&u).ok());
        if target.as_ref().map(seen_key) != Some(seen_key(url)) {
            return Err(format!(
                "the record at {}:{offset} is not that of {url}",
                found.filename
            ));
        }
    }
    decode_http(block, url).await
}

/// The record at `offset` of the first of `paths` that has it. The open name is tried after
/// the closed one, and the closed one again: the file may be renamed between two tries.
fn read_either(
    paths: &[PathBuf; 2],
    offset: u64,
    max_block: u64,
) -> Result<(crate::warc::head::WarcHead, Vec<u8>), String> {
    let read = |p: &PathBuf| crate::warc::read::read_record_at(p, offset, max_block);
    read(&paths[0])
        .or_else(|_| read(&paths[1]))
        .or_else(|_| read(&paths[0]))
        .map_err(|e| e.to_string())
}

/// Decodes a recorded HTTP response the way the fetcher read it live: hyper's HTTP/1 client
/// over an in-memory stream that plays the recorded bytes back (status, headers, chunked or
/// delimited body), then the content coding undone. A record whose body was cut
/// (`max_body_bytes`) gives what it holds.
async fn decode_http(block: Vec<u8>, url: &Url) -> Result<Copy, String> {
    let (client, mut server) = tokio::io::duplex(64 * 1024);
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .handshake::<_, Empty<Bytes>>(hyper_util::rt::TokioIo::new(client))
        .await
        .map_err(|e| e.to_string())?;
    let conn = tokio::spawn(conn);
    let play = tokio::spawn(async move {
        // hyper takes bytes that come before its request is out for a broken connection:
        // the answer is played once the request's head has been read.
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            match server.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        let _ = server.write_all(&block).await;
        let _ = server.shutdown().await;
        // Kept open until hyper has read everything (dropping it would cut the stream).
        server
    });
    let request = hyper::Request::get(url.path())
        .header(hyper::header::HOST, url.host_str().unwrap_or_default())
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let result = async {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("the recorded answer does not parse: {e}"))?;
        let (parts, mut body) = response.into_parts();
        let mut bytes = Vec::new();
        while let Some(frame) = body.frame().await {
            // A cut record ends early: what it holds is the answer.
            let Ok(frame) = frame else { break };
            if let Ok(data) = frame.into_data() {
                bytes.extend_from_slice(&data);
            }
            if bytes.len() > MAX_BROWSER_BODY {
                break;
            }
        }
        let encoding = parts
            .headers
            .get("content-encoding")
            .and_then(|v| v.to_str().ok());
        Ok(Copy {
            status: parts.status.as_u16(),
            headers: text_headers(&parts.headers),
            body: decoded(encoding, &bytes),
        })
    }
    .await;
    drop(sender);
    conn.abort();
    play.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(
        uri: &'a str,
        digest: &'a str,
        notes: &'a [String],
        extra: &'a serde_json::Value,
    ) -> Line<'a> {
        Line {
            uri,
            status: 200,
            digest: Some(digest),
            annotations: notes,
            extra: Some(extra),
        }
    }

    #[test]
    fn a_revisit_points_at_its_original_and_a_dropped_url_is_settled() {
        let mut ledger = Ledger::default();
        let at = serde_json::json!({"warcFilename": "A.warc.gz", "warcFileOffset": 100});
        let again = serde_json::json!({"warcFilename": "B.warc.gz", "warcFileOffset": 7});
        ledger.note(&line("http://h/a", "sha1:X", &[], &at));
        let dup = [REVISIT.to_string()];
        let found = ledger
            .note(&line("http://h/b", "sha1:X", &dup, &again))
            .expect("the original");
        assert_eq!(
            (found.filename.as_str(), found.offset, found.own),
            ("A.warc.gz", 100, false)
        );
        let none = serde_json::json!({});
        let dropped = Line {
            status: -9998,
            digest: None,
            ..line("http://h/c", "-", &[], &none)
        };
        assert!(ledger.note(&dropped).is_none());
        let key = |u: &str| seen_key(&Url::parse(u).unwrap());
        assert!(matches!(ledger.known(&key("http://h/c")), Known::Settled));
        assert!(matches!(ledger.known(&key("http://h/a#top")), Known::At(_)));
        assert!(matches!(ledger.known(&key("http://h/d")), Known::Unknown));
    }

    #[test]
    fn lines_kept_while_crawl_log_was_read_are_noted_after_it_as_if_read_there() {
        let at = |f: &str, o: u64| serde_json::json!({"warcFilename": f, "warcFileOffset": o});
        let key = |u: &str| seen_key(&Url::parse(u).unwrap());
        let mut read = Ledger::default();
        read.note(&line("http://h/a", "sha1:X", &[], &at("A.warc.gz", 1)));
        read.note(&line("http://h/b", "sha1:Y", &[], &at("A.warc.gz", 2)));
        // Logged meanwhile: a revisit of a payload whose original is only in the file read, and
        // a newer line of a URL the file has too.
        let dup = [REVISIT.to_string()];
        let kept = [
            Pending::of(
                &line("http://h/c", "sha1:X", &dup, &at("B.warc.gz", 3)),
                key("http://h/c"),
            ),
            Pending::of(
                &line("http://h/b", "sha1:Y", &[], &at("B.warc.gz", 4)),
                key("http://h/b"),
            ),
            // Kept later still: the last line of a URL is where its answer is.
            Pending::of(
                &line("http://h/b", "sha1:Y", &[], &at("B.warc.gz", 5)),
                key("http://h/b"),
            ),
        ];
        for p in &kept {
            p.note_in(&mut read);
        }
        let place = |u: &str| match read.known(&key(u)) {
            Known::At(f) => (f.filename, f.offset, f.own),
            other => panic!("{u}: {other:?}"),
        };
        assert_eq!(place("http://h/c"), ("A.warc.gz".to_string(), 1, false));
        assert_eq!(place("http://h/b"), ("B.warc.gz".to_string(), 5, true));
        assert_eq!(place("http://h/a"), ("A.warc.gz".to_string(), 1, true));
    }

    #[tokio::test]
    async fn a_chunked_gzipped_record_decodes_as_the_browser_needs_it() {
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"hello, browser").unwrap();
        let body = gz.finish().unwrap();
        let (a, b) = body.split_at(5);
        let mut block =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n\
            Transfer-Encoding: chunked\r\n\r\n"
                .to_vec();
        for piece in [a, b] {
            block.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            block.extend_from_slice(piece);
            block.extend_from_slice(b"\r\n");
        }
        block.extend_from_slice(b"0\r\n\r\n");
        let url = Url::parse("http://h/x").unwrap();
        let copy = decode_http(block, &url).await.unwrap();
        assert_eq!(copy.status, 200);
        assert_eq!(copy.body, b"hello, browser");
        assert!(copy
            .headers
            .iter()
            .any(|(n, v)| n == "content-type" && v == "text/plain"));
    }

    #[tokio::test]
    async fn a_cut_record_gives_what_it_holds() {
        let block = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this".to_vec();
        let url = Url::parse("http://h/x").unwrap();
        let copy = decode_http(block, &url).await.unwrap();
        assert_eq!(copy.body, b"only this");
        assert!(decode_http(b"not http at all".to_vec(), &url)
            .await
            .is_err());
    }
}
