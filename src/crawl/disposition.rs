//! What is done with an answer once `decide` has spoken: the crawl.log line, and for what is
//! kept the WARC record (a response, or a revisit when the payload was archived before: the
//! deduplication) and so its CDXJ line.

use super::decide::Disposition;
use super::engine::Crawler;
use super::locks::Root;
use super::writer::{Record, ToArchive};
use crate::frontier::Candidate;
use crate::net::fetch::Fetched;

impl Crawler {
    /// Carries out a disposition: logs the URL, archives what is kept, and settles the URL
    /// (finished, or queued again for a retry).
    pub(super) async fn dispose(
        &self,
        root: &mut Root,
        origin: &str,
        c: Candidate,
        f: &mut Fetched,
        thread: usize,
        disposition: Disposition,
    ) {
        match disposition {
            Disposition::Retry { notes } => {
                return root.with(|key| {
                    self.log_fetched(key, &c, f, thread, notes);
                    self.retry_later(key, origin, c)
                });
            }
            Disposition::Refused { notes } | Disposition::Discard { notes } => {
                root.with(|key| self.log_fetched(key, &c, f, thread, notes));
            }
            Disposition::NotKept { notes } => {
                // The body was never read, so nothing of it can be written.
                let extra = serde_json::json!({
                    "content-type": f.header("content-type"),
                    "content-length": f.header("content-length"),
                });
                root.with(|key| self.log_fetched_with(key, &c, f, thread, notes, Some(extra)));
            }
            Disposition::Archive { notes } => {
                self.archive(root, origin, &c, f, thread, notes).await
            }
        }
        root.with(|key| self.finished(key, &c.url));
    }

    /// Writes the exchange to the WARC (and so the CDXJ) and logs it: a full response, or a
    /// revisit record when an identical payload was archived before (in this crawl or in an
    /// earlier one the profile names). A record that cannot be written (a full disk, say) stops
    /// the crawl cleanly: it can be resumed once there is room.
    /// The record is written at the archive desk (see `super::writer`) before this returns, so
    /// the URL is settled only once its record is with the OS.
    pub(super) async fn archive(
        &self,
        root: &mut Root,
        origin: &str,
        c: &Candidate,
        f: &mut Fetched,
        thread: usize,
        mut notes: Vec<String>,
    ) {
        if let Some(t) = f.truncated {
            notes.push(format!("truncated:{t}"));
        }
        let mut ex = ToArchive::take(f);
        if f.status == 304 {
            // A 304 confirms the earlier capture the request named; without one (the server
            // answered a request that was not conditional) it is archived as it came.
            ex.not_modified = self.earlier.get(&f.url).cloned();
            if ex.not_modified.is_none() {
                notes.push("not-modified:no-earlier-capture".to_string());
                self.runlog.line(&format!(
                    "{}: 304 without an earlier capture; archived as is",
                    f.url
                ));
            }
        }
        let result = root.with(|key| self.archive.write(key, ex));
        // Where the record is, as Heritrix's crawl.log says it: a line leads to its bytes.
        let mut extra = result.as_ref().ok().map(|r| {
            let w = r.written();
            serde_json::json!({ "warcFilename": w.filename, "warcFileOffset": w.offset })
        });
        // What a sitemap said of this URL's last change.
        if let (Some(serde_json::Value::Object(m)), Some(lastmod)) =
            (extra.as_mut(), self.sitemaps.lastmod_of(&c.url))
        {
            m.insert("lastmod".to_string(), lastmod.into());
        }
        root.with(|key| {
            match result {
                Ok(Record::Full(_)) => {
                    self.with_sched(key, |s| s.record_archived(origin, f.payload_len))
                }
                Ok(Record::Revisit(_)) => notes.push("duplicate:digest".to_string()),
                Ok(Record::NotModified(_, saved)) => {
                    notes.push(format!("{}{saved}", crate::logs::report::NOT_MODIFIED));
                }
                Err(e) => {
                    notes.push("warc-write-failed".to_string());
                    self.fail(
                        key,
                        format!("cannot write the WARC record of {}: {e}", f.url),
                    );
                }
            }
            self.log_fetched_with(key, c, f, thread, notes, extra);
        });
    }
}
