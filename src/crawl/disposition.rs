//! What is done with an answer once `decide` has spoken: the crawl.log line, and for what is
//! kept the WARC record (a response, or a revisit when the payload was archived before: the
//! deduplication) and so its CDXJ line.

use super::decide::Disposition;
use super::engine::Crawler;
use crate::dedup::DigestIndex;
use crate::frontier::{Candidate, FirstCapture, SharedDigests};
use crate::net::fetch::Fetched;
use crate::warc::{Exchange, Revisit, WarcError, WarcWriter};

/// Everything behind the archive lock.
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
            return Some(owned(o));
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
    fn write(&mut self, uri: &str, f: &mut Fetched) -> Result<Record, WarcError> {
        let dedupable = f.status == 200 && f.truncated.is_none();
        let original = if dedupable {
            self.original(&f.payload_digest)
        } else {
            None
        };
        if let Some((refers_uri, refers_date, refers_id)) = original {
            let head = f
                .response
                .head(64 * 1024)
                .map_err(|source| WarcError::Spool {
                    uri: uri.to_string(),
                    source,
                })?;
            if let Some(http_head) = crate::warc::http_head(&head) {
                let written = self.warc.write_revisit(Revisit {
                    target_uri: uri,
                    date: f.started,
                    ip: Some(f.ip),
                    request: &f.request,
                    http_head,
                    payload_digest: f.payload_digest.clone(),
                    refers_to_uri: &refers_uri,
                    refers_to_date: &refers_date,
                    refers_to_record_id: refers_id.as_deref(),
                })?;
                return Ok(Record::Revisit(written));
            }
        }
        let written = self.warc.write_exchange(Exchange {
            target_uri: uri,
            date: f.started,
            ip: Some(f.ip),
            request: &f.request,
            response: &mut f.response,
            payload_digest: Some(f.payload_digest.clone()),
            truncated: f.truncated,
        })?;
        // Bounded by the profile, not by the length of the crawl: once full, the originals
        // already known still serve, new payloads are simply not remembered.
        if let (true, Some(shared)) = (dedupable, self.shared.as_mut()) {
            shared.add(
                &f.payload_digest,
                FirstCapture {
                    uri: uri.to_string(),
                    date: written.warc_date.clone(),
                    record_id: Some(written.record_id.clone()),
                },
            );
        }
        if dedupable && self.digests.len() < self.max_digests {
            self.digests.add(
                200,
                &f.payload_digest,
                uri,
                &written.warc_date,
                Some(&written.record_id),
            );
        }
        Ok(Record::Full(written))
    }
}

impl Crawler {
    /// Carries out a disposition: logs the URL, archives what is kept, and settles the URL
    /// (finished, or queued again for a retry).
    pub(super) fn dispose(
        &self,
        origin: &str,
        c: Candidate,
        f: &mut Fetched,
        thread: usize,
        disposition: Disposition,
    ) {
        match disposition {
            Disposition::Retry { notes } => {
                self.log_fetched(&c, f, thread, notes);
                return self.retry_later(origin, c);
            }
            Disposition::Refused { notes } | Disposition::Discard { notes } => {
                self.log_fetched(&c, f, thread, notes);
            }
            Disposition::NotKept { notes } => {
                // The body was never read, so nothing of it can be written.
                let extra = serde_json::json!({
                    "content-type": f.header("content-type"),
                    "content-length": f.header("content-length"),
                });
                self.log_fetched_with(&c, f, thread, notes, Some(extra));
            }
            Disposition::Archive { notes } => self.archive(origin, &c, f, thread, notes),
        }
        self.finished(&c.url);
    }

    /// Writes the exchange to the WARC (and so the CDXJ) and logs it: a full response, or a
    /// revisit record when an identical payload was archived before (in this crawl or in an
    /// earlier one the profile names). A record that cannot be written (a full disk, say) stops
    /// the crawl cleanly: it can be resumed once there is room.
    pub(super) fn archive(
        &self,
        origin: &str,
        c: &Candidate,
        f: &mut Fetched,
        thread: usize,
        mut notes: Vec<String>,
    ) {
        if let Some(t) = f.truncated {
            notes.push(format!("truncated:{t}"));
        }
        let uri = f.url.to_string();
        let result = tokio::task::block_in_place(|| self.with_archive(|a| a.write(&uri, f)));
        // Where the record is, as Heritrix's crawl.log says it: a line leads to its bytes.
        let extra = result.as_ref().ok().map(|r| {
            let w = r.written();
            serde_json::json!({ "warcFilename": w.filename, "warcFileOffset": w.offset })
        });
        match result {
            Ok(Record::Full(_)) => self.with_sched(|s| {
                if let Some(site) = s.sites.get_mut(origin) {
                    site.archived_bytes += f.payload_len;
                }
            }),
            Ok(Record::Revisit(_)) => notes.push("duplicate:digest".to_string()),
            Err(e) => {
                notes.push("warc-write-failed".to_string());
                self.fail(format!("cannot write the WARC record of {uri}: {e}"));
            }
        }
        self.log_fetched_with(c, f, thread, notes, extra);
    }
}

/// What `archive` wrote, and where.
pub(super) enum Record {
    Full(crate::warc::Written),
    Revisit(crate::warc::Written),
}

impl Record {
    pub(super) fn written(&self) -> &crate::warc::Written {
        match self {
            Record::Full(w) | Record::Revisit(w) => w,
        }
    }
}

/// An original capture, owned (the index's entry borrows from the index).
fn owned(o: crate::dedup::Original<'_>) -> (String, String, Option<String>) {
    (o.url.to_string(), o.warc_date.to_string(), o.record_id)
}
