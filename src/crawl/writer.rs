//! The archive thread: one OS thread owns the WARC writer and the digest index ([`Archive`]);
//! jobs hand it their exchange over a bounded channel and await where the record went.
//!
//! Compressing and writing a record is blocking, CPU-heavy work. Done on the async workers
//! (under `block_in_place`) it held up every other site's exchange on that worker and made
//! tokio start a new blocking thread each time the worker was handed over: hundreds of threads,
//! and the memory glibc keeps for each. One thread instead writes the records one after another,
//! beside the async workers (so the crawl uses a second core), with one deflate state and one
//! buffer for all of them.
//!
//! The guarantees are those of the lock it replaces. A job's URL is settled only after the
//! reply, and the reply comes after the record's bytes are with the OS. The digest index is
//! asked and filled here, record by record, so a revisit always refers to a record written
//! before it. Closing (rotation, the last file) happens here too, so the CDXJ is written and the
//! `.open` name dropped in the order the records went in.

use std::net::IpAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use crate::dedup::DigestIndex;
use crate::frontier::{FirstCapture, SharedDigests};
use crate::net::fetch::Fetched;
use crate::spool::Spool;
use crate::warc::{Exchange, Revisit, WarcError, WarcWriter, Written};

/// Exchanges waiting for the thread, at most. Enough to cover a burst (ten thousand sites
/// answering within the same second); when full, jobs wait their turn, so a slow disk slows
/// the crawl instead of filling the memory.
const QUEUE: usize = 256;

/// What the thread does.
enum Order {
    Write(
        Box<ToArchive>,
        oneshot::Sender<Result<Record, ArchiveError>>,
    ),
    Close(oneshot::Sender<Result<(), ArchiveError>>),
}

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
        }
    }
}

/// What was written, and where.
pub(super) enum Record {
    Full(Written),
    Revisit(Written),
}

impl Record {
    pub(super) fn written(&self) -> &Written {
        match self {
            Record::Full(w) | Record::Revisit(w) => w,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(super) enum ArchiveError {
    #[error(transparent)]
    Warc(#[from] WarcError),
    /// The thread met a bug (a panic) or is gone: nothing more is written in this run, and the
    /// `.open` file is left for the next run's recovery to close.
    #[error("the WARC writer stopped: {0}")]
    Stopped(String),
}

/// The job side of the thread.
pub(super) struct ArchiveThread {
    orders: mpsc::Sender<Order>,
}

impl ArchiveThread {
    /// Starts the thread, which owns `archive` from now on.
    pub(super) fn start(archive: Archive) -> std::io::Result<ArchiveThread> {
        let (orders, inbox) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("warc-writer".to_string())
            .spawn(move || serve(archive, inbox))?;
        Ok(ArchiveThread { orders })
    }

    /// Writes the exchange (a response, or a revisit of an earlier identical payload) and its
    /// request; returns once the bytes are with the OS.
    pub(super) async fn write(&self, ex: ToArchive) -> Result<Record, ArchiveError> {
        let (reply, answer) = oneshot::channel();
        self.ask(Order::Write(Box::new(ex), reply), answer).await
    }

    /// Closes the current WARC (index, then rename). The next write opens a new one.
    pub(super) async fn close(&self) -> Result<(), ArchiveError> {
        let (reply, answer) = oneshot::channel();
        self.ask(Order::Close(reply), answer).await
    }

    async fn ask<T>(
        &self,
        order: Order,
        answer: oneshot::Receiver<Result<T, ArchiveError>>,
    ) -> Result<T, ArchiveError> {
        let gone = || ArchiveError::Stopped("its thread has ended".to_string());
        self.orders.send(order).await.map_err(|_| gone())?;
        answer.await.unwrap_or_else(|_| Err(gone()))
    }
}

/// The thread: carries out the orders in the order they came, until every job side is gone.
/// A panic is caught so that the job waiting gets an error (and the crawl stops cleanly)
/// rather than waiting for ever; after one, the half-written file is left `.open` for the
/// recovery of the next run instead of being sealed here with whatever it holds.
fn serve(archive: Archive, mut inbox: mpsc::Receiver<Order>) {
    let mut archive = Some(archive);
    let mut broken: Option<String> = None;
    while let Some(mut order) = inbox.blocking_recv() {
        let result = match (&broken, archive.as_mut()) {
            (None, Some(a)) => catch_unwind(AssertUnwindSafe(|| carry_out(a, &mut order))),
            _ => Ok(None),
        };
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(panic) => {
                let why = panic_text(&*panic);
                tracing::error!("the WARC writer thread panicked: {why}");
                broken = Some(why);
                None
            }
        };
        let stopped = || ArchiveError::Stopped(broken.clone().unwrap_or_default());
        match (order, outcome) {
            (Order::Write(_, reply), Some(Done::Wrote(r))) => drop(reply.send(r)),
            (Order::Close(reply), Some(Done::Closed(r))) => drop(reply.send(r)),
            (Order::Write(_, reply), _) => drop(reply.send(Err(stopped()))),
            (Order::Close(reply), _) => drop(reply.send(Err(stopped()))),
        }
    }
    if broken.is_some() {
        // Dropping the writer would seal the file as it is, torn record and all.
        std::mem::forget(archive.take());
    }
}

enum Done {
    Wrote(Result<Record, ArchiveError>),
    Closed(Result<(), ArchiveError>),
}

fn carry_out(archive: &mut Archive, order: &mut Order) -> Option<Done> {
    Some(match order {
        Order::Write(ex, _) => Done::Wrote(archive.write(ex).map_err(ArchiveError::from)),
        Order::Close(_) => Done::Closed(archive.warc.close().map_err(ArchiveError::from)),
    })
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

/// The WARC writer and what deduplication needs, owned by the thread.
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
        }
    }

    /// Records go in the order they were handed in, an identical payload becomes a revisit of
    /// the first, offsets grow, and close seals the file (CDXJ, then the rename).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_thread_writes_in_order_dedups_and_seals() {
        let dir = tempfile::tempdir().unwrap();
        let settings = WarcSettings {
            warc_dir: dir.path().join("warcs"),
            index_dir: dir.path().join("indexes"),
            prefix: "T".to_string(),
            max_bytes: 1 << 30,
            version: WarcVersion::V1_1,
            info: Vec::new(),
        };
        let warc = WarcWriter::new(settings).unwrap();
        let thread =
            ArchiveThread::start(Archive::new(warc, DigestIndex::new(), 10, None)).unwrap();
        let a = thread
            .write(exchange("http://a.test/", "same"))
            .await
            .unwrap();
        let b = thread
            .write(exchange("http://b.test/", "other"))
            .await
            .unwrap();
        let c = thread
            .write(exchange("http://c.test/", "same"))
            .await
            .unwrap();
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
        thread.close().await.unwrap();
        let name = &a.written().filename;
        assert!(
            dir.path().join("warcs").join(name).is_file(),
            "renamed from .open"
        );
        let stem = name.strip_suffix(".warc.gz").unwrap();
        let cdxj = std::fs::read_to_string(dir.path().join("indexes").join(format!("{stem}.cdxj")));
        assert_eq!(cdxj.unwrap().lines().count(), 3);
        // A write after close opens the next file.
        let d = thread
            .write(exchange("http://d.test/", "new"))
            .await
            .unwrap();
        assert_ne!(&d.written().filename, name);
    }
}
