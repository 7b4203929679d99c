//! The archive desk: the WARC writer and the digest index ([`Archive`]) behind the engine's
//! rank-2 lock; a job hands in its exchange and gets back where the record went.
//!
//! A record is written by the job's own task, on the async worker it runs on: compressing and
//! writing the few KB of a typical exchange takes tens of microseconds, less than handing it to
//! another thread and being woken with the answer (two thread wake-ups per exchange, which on an
//! idle machine cost more than the work; tools/bench/RESULTS.md, "Many sites: one async
//! worker"). A big record (a body
//! spooled to disk, or over [`BIG_RECORD`]) and any record that may ask the shared frontier's
//! database for a digest is written under `block_in_place`, so the other sites' exchanges on that
//! worker go on meanwhile; those are rare, so the blocking pool stays small.
//!
//! The guarantees: a job's URL is settled only after `write` returns, and it returns after the
//! record's bytes are with the OS. The digest index is asked and filled under the same lock,
//! record by record, so a revisit always refers to a record written before it. Closing (rotation,
//! the last file) happens under it too, so the CDXJ is written and the `.open` name dropped in the
//! order the records went in. A panic while writing leaves the desk broken: nothing more is
//! written in this run, and the half-written file is left `.open` for the next run's recovery.

use std::net::IpAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use chrono::{DateTime, Utc};

use super::locks::{Free, InArchive, Key, Ordered};
use crate::dedup::DigestIndex;
use crate::frontier::{FirstCapture, SharedDigests};
use crate::net::fetch::Fetched;
use crate::spool::Spool;
use crate::warc::{Exchange, Revisit, WarcError, WarcWriter, Written};

/// A response at least this big is written beside the async workers (`block_in_place`).
const BIG_RECORD: u64 = 256 * 1024;

/// What archiving one exchange needs from its `Fetched`: the bytes of both messages (taken out
/// of it, since nothing reads them after the record is written) and the record's fields.
pub(super) struct ToArchive {
    uri: String,
    started: DateTime<Utc>,
    ip: IpAddr,
    request: Vec<u8>,
    response: Spool,
    status: u16,
    truncated: Option<&'static str>,
    payload_digest: String,
    /// For a 304: the earlier capture it confirms (then a server-not-modified revisit).
    pub(super) not_modified: Option<crate::recrawl::Earlier>,
}

impl ToArchive {
    /// Takes the request and response bytes out of `f` (left empty) along with the fields the
    /// records carry.
    pub(super) fn take(f: &mut Fetched) -> ToArchive {
        ToArchive {
            uri: f.url.to_string(),
            started: f.started,
            ip: f.ip,
            request: std::mem::take(&mut f.request),
            response: std::mem::take(&mut f.response),
            status: f.status,
            truncated: f.truncated,
            payload_digest: f.payload_digest.clone(),
            not_modified: None,
        }
    }

    /// Too big, or too slow, to write on an async worker.
    fn blocking(&self, shared_digests: bool) -> bool {
        self.response.on_disk() || self.response.len() >= BIG_RECORD || shared_digests
    }
}

/// What was written, and where.
pub(super) enum Record {
    Full(Written),
    Revisit(Written),
    /// A 304 written as a server-not-modified revisit; the earlier payload's size.
    NotModified(Written, u64),
}

impl Record {
    pub(super) fn written(&self) -> &Written {
        match self {
            Record::Full(w) | Record::Revisit(w) | Record::NotModified(w, _) => w,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(super) enum ArchiveError {
    #[error(transparent)]
    Warc(#[from] WarcError),
    /// The writer met a bug (a panic) earlier: nothing more is written in this run, and the
    /// `.open` file is left for the next run's recovery to close.
    #[error("the WARC writer stopped: {0}")]
    Stopped(String),
}

/// The archive and whether a panic broke it, behind the rank-2 lock.
struct Desk {
    archive: Option<Archive>,
    broken: Option<String>,
}

impl Drop for Desk {
    fn drop(&mut self) {
        if self.broken.is_some() {
            // Dropping the writer would seal the file as it is, torn record and all.
            std::mem::forget(self.archive.take());
        }
    }
}

/// Where jobs hand in their exchanges.
pub(super) struct ArchiveDesk {
    desk: Ordered<Desk, InArchive>,
    /// The archive may ask the shared frontier's database (a network round trip).
    shared_digests: bool,
}

impl ArchiveDesk {
    pub(super) fn new(archive: Archive) -> ArchiveDesk {
        let shared_digests = archive.shared.is_some();
        ArchiveDesk {
            desk: Ordered::new(Desk {
                archive: Some(archive),
                broken: None,
            }),
            shared_digests,
        }
    }

    /// Writes the exchange (a response, or a revisit of an earlier identical payload) and its
    /// request; returns once the bytes are with the OS.
    pub(super) fn write(
        &self,
        key: &mut Key<Free>,
        mut ex: ToArchive,
    ) -> Result<Record, ArchiveError> {
        let blocking = ex.blocking(self.shared_digests);
        let write = || self.carry_out(key, |a| a.write(&mut ex).map_err(ArchiveError::from));
        beside_workers(blocking, write)
    }

    /// Closes the current WARC (index, then rename). The next write opens a new one.
    pub(super) fn close(&self, key: &mut Key<Free>) -> Result<(), ArchiveError> {
        let close = || self.carry_out(key, |a| a.warc.close().map_err(ArchiveError::from));
        beside_workers(true, close)
    }

    /// Runs `work` on the archive under its lock, unless a panic broke it; a panic in `work`
    /// breaks it.
    fn carry_out<T>(
        &self,
        key: &mut Key<Free>,
        work: impl FnOnce(&mut Archive) -> Result<T, ArchiveError>,
    ) -> Result<T, ArchiveError> {
        self.desk.with(key, |desk, _| {
            if let Some(why) = &desk.broken {
                return Err(ArchiveError::Stopped(why.clone()));
            }
            let Some(archive) = desk.archive.as_mut() else {
                return Err(ArchiveError::Stopped("the archive is gone".to_string()));
            };
            match catch_unwind(AssertUnwindSafe(|| work(archive))) {
                Ok(result) => result,
                Err(panic) => {
                    let why = crate::logs::runlog::panic_message(&*panic);
                    tracing::error!("the WARC writer panicked: {why}");
                    desk.broken = Some(why.clone());
                    Err(ArchiveError::Stopped(why))
                }
            }
        })
    }
}

/// Runs `work` here, or under `block_in_place` when it may block for long (on the crawl's
/// multi-threaded runtime; a single-threaded one, as in some tests, runs it here).
fn beside_workers<R>(blocking: bool, work: impl FnOnce() -> R) -> R {
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if blocking && multi {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

/// The WARC writer and what deduplication needs, behind the desk's lock.
pub(super) struct Archive {
    pub(super) warc: WarcWriter,
    /// Payload digests already archived, for revisit records.
    digests: DigestIndex,
    /// Most digests remembered (`[dedup] max_digests`).
    max_digests: usize,
    /// Every worker's digests, in a shared crawl: asked when `digests` has no match.
    shared: Option<Box<dyn SharedDigests>>,
}

impl Archive {
    pub(super) fn new(
        warc: WarcWriter,
        digests: DigestIndex,
        max_digests: usize,
        shared: Option<Box<dyn SharedDigests>>,
    ) -> Archive {
        Archive {
            warc,
            digests,
            max_digests,
            shared,
        }
    }

    /// The first capture of a payload: this worker's own, else (in a shared crawl) another
    /// worker's, remembered here from then on. A database that cannot answer means a full
    /// record, never a wrong revisit.
    fn original(&mut self, digest: &str) -> Option<(String, String, Option<String>)> {
        if let Some(o) = self.digests.find(200, digest) {
            return Some((o.url.to_string(), o.warc_date.to_string(), o.record_id));
        }
        let first = self.shared.as_mut()?.find(digest).ok()??;
        if self.digests.len() < self.max_digests {
            let id = first.record_id.as_deref();
            self.digests.add(200, digest, &first.uri, &first.date, id);
        }
        Some((first.uri, first.date, first.record_id))
    }

    /// Writes the record of an exchange: a revisit when an identical payload was archived
    /// before (in this crawl or in an earlier one the profile names), else the response and
    /// its request.
    fn write(&mut self, ex: &mut ToArchive) -> Result<Record, WarcError> {
        if let Some(earlier) = ex.not_modified.take().filter(|_| ex.status == 304) {
            match self.write_not_modified(ex, &earlier) {
                // An earlier capture whose fields cannot be named (a date not in UTC, say):
                // the 304 is archived as it came rather than the crawl stopped.
                Err(WarcError::BadHeaderValue { .. }) => {}
                other => return other,
            }
        }
        let dedupable = ex.status == 200 && ex.truncated.is_none();
        let original = if dedupable {
            self.original(&ex.payload_digest)
        } else {
            None
        };
        if let Some((refers_uri, refers_date, refers_id)) = original {
            if let Some(written) = self.write_revisit(ex, &refers_uri, &refers_date, refers_id)? {
                return Ok(Record::Revisit(written));
            }
        }
        let written = self.warc.write_exchange(Exchange {
            target_uri: &ex.uri,
            date: ex.started,
            ip: Some(ex.ip),
            request: &ex.request,
            response: &mut ex.response,
            payload_digest: Some(ex.payload_digest.clone()),
            truncated: ex.truncated,
        })?;
        if dedupable {
            self.remember(&ex.uri, &ex.payload_digest, &written);
        }
        Ok(Record::Full(written))
    }

    /// The revisit record of `ex`, or None when its response has no complete HTTP head to
    /// store (then the full record is written).
    fn write_revisit(
        &mut self,
        ex: &mut ToArchive,
        refers_uri: &str,
        refers_date: &str,
        refers_id: Option<String>,
    ) -> Result<Option<Written>, WarcError> {
        let head = ex
            .response
            .head(64 * 1024)
            .map_err(|source| WarcError::Spool {
                uri: ex.uri.clone(),
                source,
            })?;
        let Some(http_head) = crate::warc::http_head(&head) else {
            return Ok(None);
        };
        let written = self.warc.write_revisit(Revisit {
            target_uri: &ex.uri,
            date: ex.started,
            ip: Some(ex.ip),
            request: &ex.request,
            http_head,
            payload_digest: ex.payload_digest.clone(),
            refers_to_uri: refers_uri,
            refers_to_date: refers_date,
            refers_to_record_id: refers_id.as_deref(),
        })?;
        Ok(Some(written))
    }

    /// A 304 that confirms an earlier capture: a server-not-modified revisit of it, the
    /// request, and the 304's own head in a metadata record (`crate::warc::NotModified`).
    fn write_not_modified(
        &mut self,
        ex: &mut ToArchive,
        earlier: &crate::recrawl::Earlier,
    ) -> Result<Record, WarcError> {
        let answer = ex
            .response
            .head(64 * 1024)
            .map_err(|source| WarcError::Spool {
                uri: ex.uri.clone(),
                source,
            })?;
        let written = self.warc.write_not_modified(crate::warc::NotModified {
            revisit: Revisit {
                target_uri: &ex.uri,
                date: ex.started,
                ip: Some(ex.ip),
                request: &ex.request,
                http_head: &[],
                payload_digest: earlier.payload_digest.clone(),
                refers_to_uri: &earlier.url,
                refers_to_date: &earlier.warc_date,
                refers_to_record_id: earlier.record_id.as_deref(),
            },
            answer: &answer,
        })?;
        Ok(Record::NotModified(written, earlier.payload_len))
    }

    /// A payload archived for the first time becomes the original of later identical ones.
    /// Bounded by the profile, not by the length of the crawl: once full, the originals
    /// already known still serve, new payloads are simply not remembered.
    fn remember(&mut self, uri: &str, digest: &str, written: &Written) {
        if let Some(shared) = self.shared.as_mut() {
            shared.add(
                digest,
                FirstCapture {
                    uri: uri.to_string(),
                    date: written.warc_date.clone(),
                    record_id: Some(written.record_id.clone()),
                },
            );
        }
        if self.digests.len() < self.max_digests {
            let id = Some(written.record_id.as_str());
            self.digests.add(200, digest, uri, &written.warc_date, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::locks::Root;
    use crate::warc::{WarcSettings, WarcVersion};

    fn exchange(uri: &str, body: &str) -> ToArchive {
        let mut response = Spool::default();
        let text = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        response.append(text.as_bytes()).unwrap();
        ToArchive {
            uri: uri.to_string(),
            started: Utc::now(),
            ip: "127.0.0.1".parse().unwrap(),
            request: format!("GET {uri} HTTP/1.1\r\n\r\n").into_bytes(),
            response,
            status: 200,
            truncated: None,
            payload_digest: crate::spool::sha1_of(body.as_bytes()),
            not_modified: None,
        }
    }

    /// Records go in the order they were handed in, an identical payload becomes a revisit of
    /// the first, offsets grow, and close seals the file (CDXJ, then the rename).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_desk_writes_in_order_dedups_and_seals() {
        let dir = tempfile::tempdir().unwrap();
        let desk = desk_in(dir.path());
        let mut root = Root::new();
        let mut write = |uri: &str, body: &str| root.with(|k| desk.write(k, exchange(uri, body)));
        let a = write("http://a.test/", "same").unwrap();
        let b = write("http://b.test/", "other").unwrap();
        let c = write("http://c.test/", "same").unwrap();
        assert!(matches!(a, Record::Full(_)) && matches!(b, Record::Full(_)));
        assert!(
            matches!(c, Record::Revisit(_)),
            "the same payload again is a revisit"
        );
        let offsets: Vec<u64> = [&a, &b, &c].iter().map(|r| r.written().offset).collect();
        assert!(
            offsets[0] < offsets[1] && offsets[1] < offsets[2],
            "{offsets:?}"
        );
        root.with(|k| desk.close(k)).unwrap();
        let name = &a.written().filename;
        assert!(
            dir.path().join("warcs").join(name).is_file(),
            "renamed from .open"
        );
        let stem = name.strip_suffix(".warc.gz").unwrap();
        let cdxj = std::fs::read_to_string(dir.path().join("indexes").join(format!("{stem}.cdxj")));
        assert_eq!(cdxj.unwrap().lines().count(), 3);
        // A write after close opens the next file; a big one is written beside the workers.
        let big = "x".repeat(BIG_RECORD as usize + 10);
        let d = root
            .with(|k| desk.write(k, exchange("http://d.test/", &big)))
            .unwrap();
        assert_ne!(&d.written().filename, name);
    }

    /// A panic while writing breaks the desk: later writes are refused, and the `.open` file
    /// is left as it is for the next run's recovery rather than sealed.
    #[test]
    fn a_panic_breaks_the_desk_and_leaves_the_file_open() {
        let dir = tempfile::tempdir().unwrap();
        let desk = desk_in(dir.path());
        let mut root = Root::new();
        root.with(|k| desk.write(k, exchange("http://a.test/", "one")))
            .unwrap();
        let boom =
            root.with(|k| desk.carry_out(k, |_| -> Result<(), ArchiveError> { panic!("boom") }));
        assert!(matches!(boom, Err(ArchiveError::Stopped(why)) if why == "boom"));
        let after = root.with(|k| desk.write(k, exchange("http://b.test/", "two")));
        assert!(matches!(after, Err(ArchiveError::Stopped(_))));
        drop(desk);
        let names: Vec<String> = std::fs::read_dir(dir.path().join("warcs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert!(names.iter().all(|n| n.ends_with(".open")), "{names:?}");
    }

    fn desk_in(dir: &std::path::Path) -> ArchiveDesk {
        ArchiveDesk::new(Archive::new(writer(dir), DigestIndex::new(), 10, None))
    }

    fn writer(dir: &std::path::Path) -> WarcWriter {
        let settings = WarcSettings {
            warc_dir: dir.join("warcs"),
            index_dir: dir.join("indexes"),
            prefix: "T".to_string(),
            max_bytes: 1 << 30,
            version: WarcVersion::V1_1,
            info: Vec::new(),
        };
        WarcWriter::new(settings).unwrap()
    }
}
