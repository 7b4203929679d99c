//! The desks every stage of a job works at, the engine's three locks and what hangs on them:
//! the scheduler (rank 1), the archive desk (rank 2: the WARC writer and the digest index), the
//! journal (rank 3: crawl.log, the statistics, refusals.log, the run book), run.log, and the
//! dispatcher's wake-up.
//!
//! Each lock is reached only through [`Desks::with_sched`], the archive desk's `write` and
//! `close`, or [`Desks::with_journal`], which take the caller's `&mut Key<Free>` (it holds no
//! engine lock) and lend the data to a closure that gets no key: no stage ever holds two of the
//! locks at once, and the types say so (see [`super::locks`]). `with_sched` also carries out
//! what the scheduler left in its outbox once its lock is released: the crawl.log line of every
//! dropped URL, run.log lines, name lookups, the site book's save, a stop, a wake-up.
//!
//! The stages take `&Desks` (and the few values they read), never the whole crawler: a stage
//! that logs a URL and settles it needs nothing else.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::Notify;
use url::Url;

use super::candidates::Dropped;
use super::commits::{wait, Barrier};
use super::journal::{Journal, LineWatcher};
use super::locks::{Free, InJournal, InSched, Key, Ordered, Root};
use super::sched::{Clock, Outbox, ResolveRequest, Sched};
use super::writer::ArchiveDesk;
use crate::frontier::Candidate;
use crate::logs::crawllog::{status, Entry};
use crate::logs::runlog::RunLog;
use crate::net::fetch::{FetchError, Fetched};

/// The scheduler, the archive desk, the journal and what hangs on them.
pub(super) struct Desks {
    sched: Ordered<Sched, InSched>,
    /// Writes the WARC records, in the order jobs hand them in.
    pub(super) archive: ArchiveDesk,
    journal: Ordered<Journal, InJournal>,
    pub(super) runlog: RunLog,
    /// Wakes the dispatcher: new work, a finished job, a resolved name, a stop.
    pub(super) wake: Notify,
    /// Asks the resolver task for name lookups.
    resolve_tx: tokio::sync::mpsc::UnboundedSender<ResolveRequest>,
    /// Jobs running now (the commit barrier waits for the others of its group).
    pub(super) running: AtomicUsize,
    /// Set by Ctrl-C or a fatal error: no new job starts; jobs in flight finish.
    stopping: AtomicBool,
    /// The last site book snapshot written (see `write_book`).
    book_written: Mutex<u64>,
    /// A write of the site book failed.
    book_failed: AtomicBool,
    /// Told every crawl.log line once the journal's lock is released (pages being rendered
    /// wait for the lines of their requests).
    watcher: std::sync::Arc<dyn LineWatcher>,
}

impl Desks {
    pub(super) fn new(
        sched: Sched,
        archive: ArchiveDesk,
        journal: Journal,
        runlog: RunLog,
        resolve_tx: tokio::sync::mpsc::UnboundedSender<ResolveRequest>,
        watcher: std::sync::Arc<dyn LineWatcher>,
    ) -> Desks {
        Desks {
            sched: Ordered::new(sched),
            archive,
            journal: Ordered::new(journal),
            runlog,
            wake: Notify::new(),
            resolve_tx,
            running: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            book_written: Mutex::new(0),
            book_failed: AtomicBool::new(false),
            watcher,
        }
    }

    /// Lock 1: lends the scheduler to `f`, then (the lock released) carries out what it left
    /// to do: crawl.log lines for dropped URLs, run.log lines, name lookups, the site book's
    /// save, a stop, a wake-up.
    pub(super) fn with_sched<R>(&self, key: &mut Key<Free>, f: impl FnOnce(&mut Sched) -> R) -> R {
        let (result, out) = self.sched.with(key, |s, _| {
            let result = f(s);
            (result, s.take_outbox())
        });
        self.carry_out(key, out);
        result
    }

    /// Lock 3: crawl.log, the statistics, refusals.log and the run book.
    pub(super) fn with_journal<R>(
        &self,
        key: &mut Key<Free>,
        f: impl FnOnce(&mut Journal) -> R,
    ) -> R {
        self.journal.with(key, |j, _| f(j))
    }

    /// The scheduler's outbox, done in the order it was filled, kind by kind.
    fn carry_out(&self, key: &mut Key<Free>, out: Outbox) {
        for dropped in out.drops {
            self.log_drop(key, dropped);
        }
        for line in &out.notes {
            self.runlog.line(line);
        }
        let mut lost = 0;
        for request in out.resolve {
            // The resolver task is gone only when the crawl is ending.
            if self.resolve_tx.send(request).is_err() {
                lost += 1;
            }
        }
        if lost > 0 {
            self.sched
                .with(key, |s, _| (0..lost).for_each(|_| s.resolve_lost()));
        }
        if let Some(save) = out.book {
            self.write_book(save);
        }
        if let Some(why) = out.failure {
            self.fail(key, why);
        }
        if out.wake {
            self.wake.notify_one();
        }
    }

    /// Writes a snapshot of the site book unless a newer one was written already (two jobs'
    /// snapshots may come in either order). Under no engine lock: only the desks' own mutex of
    /// the last number written, a leaf (released before run.log hears of a failure). Such
    /// writes are rare — a new `Retry-After` floor, a suspension, the end of a run.
    fn write_book(&self, save: crate::logs::runlog::BookSave) {
        let written = {
            let mut last = self.book_written.lock().unwrap_or_else(|p| p.into_inner());
            if save.seq <= *last {
                return;
            }
            *last = save.seq;
            save.write()
        };
        if let Err(e) = written {
            // The book in memory is right; the run's last save writes it again.
            self.book_failed.store(true, Ordering::SeqCst);
            self.runlog
                .line(&format!("cannot save the site book: {e:#}"));
        }
    }

    /// A write of the site book failed during the run (its last save must be whole).
    pub(super) fn book_failed(&self) -> bool {
        self.book_failed.load(Ordering::SeqCst)
    }

    pub(super) fn stopped(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Stops the crawl: nothing new starts, jobs in flight finish, files are closed.
    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Stops the crawl on a frontier failure (e.g. a full disk): the crawl can be resumed.
    pub(super) fn fail(&self, key: &mut Key<Free>, e: impl std::fmt::Display) {
        tracing::error!("{e}");
        self.runlog.line(&format!("stopping: {e}"));
        self.with_journal(key, |j| {
            j.fatal.get_or_insert_with(|| e.to_string());
        });
        self.stop();
    }

    /// Makes the frontier's changes so far durable.
    pub(super) fn commit(&self, key: &mut Key<Free>) {
        self.with_sched(key, |s| s.commit(Instant::now()));
    }

    /// Marks an in-flight URL finished.
    pub(super) fn finished(&self, key: &mut Key<Free>, url: &Url) {
        self.with_sched(key, |s| s.finished(url));
    }

    /// A URL tried again later.
    pub(super) fn retry_later(&self, key: &mut Key<Free>, origin: &str, candidate: Candidate) {
        self.with_sched(key, |s| s.retry_later(origin, candidate, Clock::now()));
    }

    /// The barrier of a job about to write its record: returns once the frontier's changes so
    /// far (this job's included) are committed, by this job or by another of its group.
    pub(super) async fn durable(&self, root: &mut Root) {
        let running = self.running.load(std::sync::atomic::Ordering::SeqCst);
        let barrier = root.with(|key| self.with_sched(key, |s| s.barrier(running, Instant::now())));
        let Some(Barrier::Wait {
            ticket,
            deadline,
            told,
        }) = barrier
        else {
            return;
        };
        // Out of the admission's count while it waits (see `commits::GROUP_WINDOW`).
        if !super::admission::remote(wait(ticket, deadline, told)).await {
            root.with(|key| self.with_sched(key, |s| s.settle(ticket, Instant::now())));
        }
    }

    pub(super) fn log_fetched(
        &self,
        key: &mut Key<Free>,
        c: &Candidate,
        f: &Fetched,
        thread: usize,
        annotations: Vec<String>,
    ) {
        self.log_fetched_with(key, c, f, thread, annotations, None);
    }

    pub(super) fn log_fetched_with(
        &self,
        key: &mut Key<Free>,
        c: &Candidate,
        f: &Fetched,
        thread: usize,
        mut annotations: Vec<String>,
        extra: Option<serde_json::Value>,
    ) {
        // Interim answers are not archived; crawl.log keeps that they came.
        annotations.extend(f.interim.iter().map(|s| format!("interim:{s}")));
        if f.excess_bytes > 0 {
            annotations.push(format!("excess-bytes:{}", f.excess_bytes));
        }
        let mime = f.mime();
        self.write_log(
            key,
            Entry {
                status: i32::from(f.status),
                // A body not read (dropped on its headers) has no size or digest to show.
                size: (!f.body_skipped).then_some(f.payload_len),
                uri: c.url.as_str(),
                url: Some(&c.url),
                path: &c.path,
                via: c.via.as_ref().map(Url::as_str),
                mime: mime.as_deref(),
                thread,
                fetch: Some((f.started, f.duration())),
                digest: (!f.body_skipped).then_some(f.payload_digest.as_str()),
                annotations,
                extra,
            },
        );
    }

    pub(super) fn log_error(
        &self,
        key: &mut Key<Free>,
        c: &Candidate,
        e: &FetchError,
        thread: usize,
        annotations: Vec<String>,
    ) {
        if let FetchError::Refused(refused) = e {
            let why = crate::net::guard::Refused::ANNOTATION;
            return self.log_dropped(key, c, status::OUT_OF_SCOPE, why, Some(refused.extra()));
        }
        self.write_log(
            key,
            Entry {
                status: e.status(),
                uri: c.url.as_str(),
                url: Some(&c.url),
                path: &c.path,
                via: c.via.as_ref().map(Url::as_str),
                thread,
                annotations,
                extra: Some(serde_json::json!({ "error": e.to_string() })),
                ..Entry::default()
            },
        );
    }

    /// The one crawl.log line of a URL the decide rules dropped.
    pub(super) fn log_drop(&self, key: &mut Key<Free>, d: Dropped) {
        self.log_dropped(key, &d.candidate, d.status, d.why, d.extra);
    }

    /// A redirect whose `Location` is empty or no URL: logged `-7` (Heritrix's "unfetchable
    /// URI") under the text received, with the redirecting URL as the via.
    pub(super) fn log_bad_location(&self, key: &mut Key<Free>, parent: &Candidate, text: &str) {
        let uri = if text.is_empty() { "-" } else { text };
        self.write_log(
            key,
            Entry {
                status: status::UNFETCHABLE_URI,
                uri,
                path: &format!("{}R", parent.path),
                via: Some(parent.url.as_str()),
                annotations: vec!["bad-location".to_string()],
                extra: Some(serde_json::json!({ "location": text })),
                ..Entry::default()
            },
        );
    }

    pub(super) fn log_unfetched(&self, key: &mut Key<Free>, c: &Candidate, status: i32, why: &str) {
        self.log_dropped(key, c, status, why, None);
    }

    /// A URL that is not fetched: its negative status, why, and what else is worth keeping.
    pub(super) fn log_dropped(
        &self,
        key: &mut Key<Free>,
        c: &Candidate,
        status: i32,
        why: &str,
        extra: Option<serde_json::Value>,
    ) {
        self.write_log(
            key,
            Entry {
                status,
                uri: c.url.as_str(),
                url: Some(&c.url),
                path: &c.path,
                via: c.via.as_ref().map(Url::as_str),
                annotations: vec![why.to_string()],
                extra,
                ..Entry::default()
            },
        );
    }

    fn write_log(&self, key: &mut Key<Free>, entry: Entry<'_>) {
        self.with_journal(key, |j| j.write(&entry));
        // A final line may be what a page being rendered waits for.
        self.watcher.logged(&entry);
    }
}
