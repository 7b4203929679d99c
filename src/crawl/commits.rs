//! Group commit of the frontier: when its changes are made durable, and who waits for that.
//!
//! Every change of the frontier (a URL taken, outlinks queued, a URL finished) goes into one
//! open transaction; a commit makes all changes so far durable at once. A commit costs a write
//! of every database page the transaction touched, so one commit for several URLs costs little
//! more than one for a single URL. The crawl used to commit twice per URL (before its record was
//! written, and when its budget was given back); it now commits once per group of URLs.
//!
//! # What must be durable when (the crash guarantees)
//! 1. **Before a URL's WARC record is written**, the frontier must hold, committed, the URL's
//!    own move to the in-flight list and everything its page queued (seen-marks and outlinks).
//!    This is the *barrier* of [`Commits::barrier`]: the job waits there until a commit made
//!    after its own changes. Then, whatever moment a crash comes:
//!    - before the record: the URL is in flight (or still queued), never archived, so it is
//!      fetched again and its outlinks are queued again — nothing lost, nothing archived twice;
//!    - after the record: its outlinks are durable; the URL is in flight unless its done-mark was
//!      committed too, and a URL in flight on resume is looked up in the WARCs recovered at start
//!      and in the indexes of the WARCs closed since the last run began (`archived.rs`): found
//!      there, it counts as done and is not fetched again.
//! 2. **A done-mark may be late.** Marking a URL finished, putting a URL back for a retry,
//!    dropping a URL that robots.txt forbids: none of these comes with a record whose URL could
//!    be lost, so they wait for the next commit, whoever makes it. Lost in a crash, each is
//!    settled on resume as above (archived: done; not archived: fetched again, which may fetch a
//!    URL that was not kept, such as a 404, a second time — never one that was archived).
//! 3. Outlinks are never durable later than their page's done-mark: both are changes of the same
//!    transaction, made in that order, and a commit makes a prefix of the changes durable.
//!
//! # When a commit is made
//! - At a barrier, at once when every running job is at the barrier (no other job can join the
//!   group: a crawl of one site never waits), or when the last commit is [`GROUP_WINDOW`] old;
//!   otherwise the job waits for another job's commit, at most until the window is over. So a
//!   busy crawl commits at most once per window plus once per round of its running jobs.
//! - When a job ends ([`Commits::after_job`]): if the jobs still running are all waiting at the
//!   barrier (the one that ended would otherwise keep them waiting for nothing), or if the last
//!   commit is [`LATE_LIMIT`] old, so late changes (2.) do not pile up in a quiet crawl.
//! - A shared (PostgreSQL) frontier commits at every barrier and every job's end, as before:
//!   its commit also gives leases back to the other workers, which must not wait.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::frontier::{Frontier, FrontierError};

/// How long a job at the barrier waits for others to join its commit. Milliseconds against
/// the seconds a site waits between two requests: it delays the record, never a request (the
/// pause is counted from the end of the answer). A commit writes every database page its
/// group touched to the WAL, so fewer, bigger groups write far less: at the 10,000-site start
/// (tools/bench/RESULTS-scale.md) 15 ms instead of 5 took the crawler from 0.239 to 0.190 ms
/// of CPU a request. A job waiting here is not counted as held by the admission (it waits
/// for a clock, like a job waiting for a server), so a longer window does not slow the
/// dispatcher; at most the jobs of one window wait at once.
pub(super) const GROUP_WINDOW: Duration = Duration::from_millis(25);

/// Oldest a late change (a done-mark, a retry) gets before a job's end commits it.
pub(super) const LATE_LIMIT: Duration = Duration::from_millis(200);

/// The commit book, behind the scheduler lock (next to the frontier it commits).
#[derive(Debug)]
pub(super) struct Commits {
    /// Commits made so far; also what the watch channel says.
    made: u64,
    last: Instant,
    /// Jobs waiting for commit number `made + 1`.
    waiting: usize,
    told: watch::Sender<u64>,
}

/// What a job at the barrier does next.
#[derive(Debug)]
pub(super) enum Barrier {
    /// Its changes are durable: go on.
    Passed,
    /// Wait for commit number `ticket`, or until `deadline`, then [`Commits::settle`].
    Wait {
        ticket: u64,
        deadline: Instant,
        told: watch::Receiver<u64>,
    },
}

impl Commits {
    pub(super) fn new(now: Instant) -> Commits {
        Commits {
            made: 0,
            last: now,
            waiting: 0,
            told: watch::Sender::new(0),
        }
    }

    /// Commits now; every job waiting is covered (its changes came before this commit).
    pub(super) fn commit(
        &mut self,
        frontier: &mut dyn Frontier,
        now: Instant,
    ) -> Result<(), FrontierError> {
        frontier.commit()?;
        self.made += 1;
        self.last = now;
        self.waiting = 0;
        self.told.send_replace(self.made);
        Ok(())
    }

    /// A job whose changes must be durable before it writes a record (see the module doc).
    /// `running`: jobs running now, this one included.
    pub(super) fn barrier(
        &mut self,
        frontier: &mut dyn Frontier,
        running: usize,
        now: Instant,
    ) -> Result<Barrier, FrontierError> {
        let window_over = now.saturating_duration_since(self.last) >= GROUP_WINDOW;
        if frontier.shared() || window_over || self.waiting + 1 >= running {
            self.commit(frontier, now)?;
            return Ok(Barrier::Passed);
        }
        self.waiting += 1;
        Ok(Barrier::Wait {
            ticket: self.made + 1,
            deadline: self.last + GROUP_WINDOW,
            told: self.told.subscribe(),
        })
    }

    /// A job back from waiting (told, or its deadline passed): commits unless a commit since
    /// it began waiting covered it.
    pub(super) fn settle(
        &mut self,
        frontier: &mut dyn Frontier,
        ticket: u64,
        now: Instant,
    ) -> Result<(), FrontierError> {
        if self.made >= ticket {
            return Ok(());
        }
        self.commit(frontier, now)
    }

    /// A job ended; `running`: the jobs still running.
    pub(super) fn after_job(
        &mut self,
        frontier: &mut dyn Frontier,
        running: usize,
        now: Instant,
    ) -> Result<(), FrontierError> {
        let all_waiting = self.waiting > 0 && self.waiting >= running;
        let stale = now.saturating_duration_since(self.last) >= LATE_LIMIT;
        if frontier.shared() || all_waiting || stale {
            self.commit(frontier, now)?;
        }
        Ok(())
    }

    /// Commits made so far.
    #[cfg(test)]
    pub(super) fn made(&self) -> u64 {
        self.made
    }
}

/// Waits at the barrier: until commit `ticket` is made or the deadline passes. True when the
/// commit came (nothing left to do), false when the job must settle it itself.
pub(super) async fn wait(ticket: u64, deadline: Instant, mut told: watch::Receiver<u64>) -> bool {
    let deadline = tokio::time::Instant::from_std(deadline);
    matches!(
        tokio::time::timeout_at(deadline, told.wait_for(|made| *made >= ticket)).await,
        Ok(Ok(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontier::sqlite::{CrawlIdentity, SqliteFrontier};
    use crate::frontier::Candidate;
    use url::Url;

    fn frontier(dir: &std::path::Path) -> SqliteFrontier {
        let id = CrawlIdentity {
            name: "commits".into(),
            seeds: vec!["http://a/".into()],
        };
        SqliteFrontier::open(dir, &id).unwrap()
    }

    fn push(f: &mut SqliteFrontier, url: &str) {
        let c = Candidate::seed(Url::parse(url).unwrap());
        f.push("http://a", c).unwrap();
    }

    fn queued_after_reopen(dir: &std::path::Path) -> usize {
        frontier(dir).total_queued()
    }

    #[test]
    fn a_lone_job_commits_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = frontier(dir.path());
        let now = Instant::now();
        let mut c = Commits::new(now);
        push(&mut f, "http://a/1");
        let b = c.barrier(&mut f, 1, now).unwrap();
        assert!(matches!(b, Barrier::Passed));
        assert_eq!(c.made(), 1);
        drop(f);
        assert_eq!(queued_after_reopen(dir.path()), 1);
    }

    #[test]
    fn jobs_at_the_barrier_share_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = frontier(dir.path());
        let now = Instant::now();
        let mut c = Commits::new(now);
        // Three jobs running: the first two wait, the third (all at the barrier) commits.
        push(&mut f, "http://a/1");
        let Barrier::Wait { ticket: t1, .. } = c.barrier(&mut f, 3, now).unwrap() else {
            panic!("the first of three jobs should wait");
        };
        push(&mut f, "http://a/2");
        let Barrier::Wait { ticket: t2, .. } = c.barrier(&mut f, 3, now).unwrap() else {
            panic!("the second of three jobs should wait");
        };
        assert_eq!(c.made(), 0, "nothing committed while others may join");
        push(&mut f, "http://a/3");
        assert!(matches!(
            c.barrier(&mut f, 3, now).unwrap(),
            Barrier::Passed
        ));
        assert_eq!(c.made(), 1);
        // The waiters are covered: settling commits nothing more.
        c.settle(&mut f, t1, now).unwrap();
        c.settle(&mut f, t2, now).unwrap();
        assert_eq!(c.made(), 1);
        drop(f);
        assert_eq!(queued_after_reopen(dir.path()), 3);
    }

    #[test]
    fn a_waiter_past_its_deadline_commits_itself() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = frontier(dir.path());
        let now = Instant::now();
        let mut c = Commits::new(now);
        push(&mut f, "http://a/1");
        let Barrier::Wait {
            ticket, deadline, ..
        } = c.barrier(&mut f, 2, now).unwrap()
        else {
            panic!("one of two jobs should wait");
        };
        assert!(deadline <= now + GROUP_WINDOW);
        c.settle(&mut f, ticket, deadline).unwrap();
        assert_eq!(c.made(), 1);
        drop(f);
        assert_eq!(queued_after_reopen(dir.path()), 1);
    }

    #[test]
    fn an_old_commit_is_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = frontier(dir.path());
        let start = Instant::now();
        let mut c = Commits::new(start);
        push(&mut f, "http://a/1");
        let later = start + GROUP_WINDOW;
        assert!(matches!(
            c.barrier(&mut f, 5, later).unwrap(),
            Barrier::Passed
        ));
        assert_eq!(c.made(), 1);
    }

    #[test]
    fn a_job_that_ends_frees_the_waiters_or_commits_late_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = frontier(dir.path());
        let now = Instant::now();
        let mut c = Commits::new(now);
        push(&mut f, "http://a/1");
        assert!(matches!(
            c.barrier(&mut f, 2, now).unwrap(),
            Barrier::Wait { .. }
        ));
        // The other job ends without reaching the barrier: one job left, and it waits.
        c.after_job(&mut f, 1, now).unwrap();
        assert_eq!(c.made(), 1);
        // A late change alone is committed once it is old enough, not before.
        f.done(&Url::parse("http://a/1").unwrap()).unwrap();
        c.after_job(&mut f, 0, now + LATE_LIMIT / 2).unwrap();
        assert_eq!(c.made(), 1);
        c.after_job(&mut f, 0, now + LATE_LIMIT).unwrap();
        assert_eq!(c.made(), 2);
    }

    #[tokio::test]
    async fn a_waiter_is_told_of_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = frontier(dir.path());
        let now = Instant::now();
        let mut c = Commits::new(now);
        push(&mut f, "http://a/1");
        let Barrier::Wait {
            ticket,
            deadline,
            told,
        } = c.barrier(&mut f, 2, now).unwrap()
        else {
            panic!("one of two jobs should wait");
        };
        c.commit(&mut f, now).unwrap();
        // Told at once, long before a deadline an hour away.
        let far = deadline + Duration::from_secs(3600);
        assert!(wait(ticket, far, told).await);
        // Not told: the deadline passes and the job must settle.
        let Barrier::Wait { ticket, told, .. } = c.barrier(&mut f, 2, now).unwrap() else {
            panic!("one of two jobs should wait");
        };
        assert!(!wait(ticket, Instant::now(), told).await);
    }
}
