//! What is done with an answer once `decide` has spoken: the crawl.log line, and for what is
//! kept the WARC record (a response, or a revisit when the payload was archived before: the
//! deduplication) and so its CDXJ line.

use super::decide::Disposition;
use super::desks::Desks;
use super::locks::Root;
use super::sitemaps::Sitemaps;
use super::writer::{Record, ToArchive};
use crate::frontier::Candidate;
use crate::net::fetch::Fetched;
use crate::recrawl::EarlierCaptures;

/// What the archiving of a record reads besides the answer: an earlier crawl's captures (a
/// 304 confirms one of them) and the sitemaps' `lastmod`s (crawl.log shows them).
pub(super) struct Keeping<'a> {
    pub(super) earlier: &'a EarlierCaptures,
    pub(super) sitemaps: &'a Sitemaps,
}

/// One URL's answer and what `decide` made of it.
pub(super) struct Todo<'a> {
    pub(super) origin: &'a str,
    pub(super) candidate: Candidate,
    pub(super) thread: usize,
    pub(super) disposition: Disposition,
}

/// Carries out a disposition: logs the URL, archives what is kept, and settles the URL
/// (finished, or queued again for a retry).
pub(super) async fn dispose(
    desks: &Desks,
    keeping: &Keeping<'_>,
    root: &mut Root,
    f: &mut Fetched,
    todo: Todo<'_>,
) {
    let Todo {
        origin,
        candidate: c,
        thread,
        disposition,
    } = todo;
    match disposition {
        Disposition::Retry { notes } => {
            return root.with(|key| {
                desks.log_fetched(key, &c, f, thread, notes);
                desks.retry_later(key, origin, c)
            });
        }
        Disposition::Refused { notes } | Disposition::Discard { notes } => {
            root.with(|key| desks.log_fetched(key, &c, f, thread, notes));
        }
        Disposition::NotKept { notes } => {
            // The body was never read, so nothing of it can be written.
            let extra = serde_json::json!({
                "content-type": f.header("content-type"),
                "content-length": f.header("content-length"),
            });
            root.with(|key| desks.log_fetched_with(key, &c, f, thread, notes, Some(extra)));
        }
        Disposition::Archive { notes } => {
            let kept = Kept {
                origin,
                c: &c,
                thread,
                notes,
            };
            archive(desks, keeping, root, f, kept).await
        }
    }
    root.with(|key| desks.finished(key, &c.url));
}

/// An answer to archive, and its crawl.log notes so far.
pub(super) struct Kept<'a> {
    pub(super) origin: &'a str,
    pub(super) c: &'a Candidate,
    pub(super) thread: usize,
    pub(super) notes: Vec<String>,
}

/// Writes the exchange to the WARC (and so the CDXJ) and logs it: a full response, or a
/// revisit record when an identical payload was archived before (in this crawl or in an
/// earlier one the profile names). A record that cannot be written (a full disk, say) stops
/// the crawl cleanly: it can be resumed once there is room.
/// The record is written at the archive desk (see `super::writer`) before this returns, so
/// the URL is settled only once its record is with the OS.
pub(super) async fn archive(
    desks: &Desks,
    keeping: &Keeping<'_>,
    root: &mut Root,
    f: &mut Fetched,
    kept: Kept<'_>,
) {
    let Kept {
        origin,
        c,
        thread,
        mut notes,
    } = kept;
    if let Some(t) = f.truncated {
        notes.push(format!("truncated:{t}"));
    }
    let mut ex = ToArchive::take(f);
    if f.status == 304 {
        // A 304 confirms the earlier capture the request named; without one (the server
        // answered a request that was not conditional) it is archived as it came.
        ex.not_modified = keeping.earlier.get(&f.url).cloned();
        if ex.not_modified.is_none() {
            notes.push("not-modified:no-earlier-capture".to_string());
            desks.runlog.line(&format!(
                "{}: 304 without an earlier capture; archived as is",
                f.url
            ));
        }
    }
    let result = root.with(|key| desks.archive.write(key, ex));
    // Where the record is, as Heritrix's crawl.log says it: a line leads to its bytes.
    let mut extra = result.as_ref().ok().map(|r| {
        let w = r.written();
        serde_json::json!({ "warcFilename": w.filename, "warcFileOffset": w.offset })
    });
    // What a sitemap said of this URL's last change.
    if let (Some(serde_json::Value::Object(m)), Some(lastmod)) =
        (extra.as_mut(), keeping.sitemaps.lastmod_of(&c.url))
    {
        m.insert("lastmod".to_string(), lastmod.into());
    }
    root.with(|key| {
        match result {
            Ok(Record::Full(_)) => {
                desks.with_sched(key, |s| s.record_archived(origin, f.payload_len))
            }
            Ok(Record::Revisit(_)) => notes.push("duplicate:digest".to_string()),
            Ok(Record::NotModified(_, saved)) => {
                notes.push(format!("{}{saved}", crate::logs::report::NOT_MODIFIED));
            }
            Err(e) => {
                notes.push("warc-write-failed".to_string());
                desks.fail(
                    key,
                    format!("cannot write the WARC record of {}: {e}", f.url),
                );
            }
        }
        desks.log_fetched_with(key, c, f, thread, notes, extra);
    });
}
