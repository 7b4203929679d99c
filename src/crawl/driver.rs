//! The async loop: the dispatcher that starts jobs as budgets become free, the resolver task,
//! the signals (Ctrl-C, SIGTERM, SIGUSR1) and the report timer. No task, thread or timer
//! exists per site: the dispatcher asks the scheduler what may go and sleeps until then.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::admission::{Admission, HELD_MAX};
use super::engine::Crawler;
use super::locks::{Free, Key, Root};
use super::sched::{Clock, Job, Pace, ResolveRequest, Turn};
use super::Ended;
use crate::config::Profile;

/// Runs the crawl a profile describes, to the end. Returns the whole crawl's statistics.
pub(super) async fn run(
    profile: Profile,
    patch: Vec<crate::commands::qa::PatchLine>,
) -> anyhow::Result<Ended> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let slots = super::descriptors::slots(profile.sites_at_once);
    let (crawler, archived) = Crawler::open(profile, tx)?;
    if slots.jobs < crawler.profile.sites_at_once {
        crawler.desks.runlog.line(&format!(
            "open-file limit {}: {} requests at once instead of sites_at_once {}",
            slots.limit, slots.jobs, crawler.profile.sites_at_once
        ));
    }
    let crawler = Arc::new(crawler);
    let resolver = spawn_resolver(crawler.clone(), rx, slots.lookups);
    let control = super::control::serve(crawler.clone()).await?;
    // The main task's root: between its steps it holds no engine lock.
    let mut root = Root::new();
    if !root.with(|key| begin(&crawler, key, &archived, &patch)) {
        resolver.abort();
        control
            .into_iter()
            .for_each(super::control::Endpoint::close);
        return crawler
            .leave_complete(&mut root)
            .await
            .map(Ended::AlreadyComplete);
    }
    watch_ctrl_c(crawler.clone());
    let reports = spawn_reports(crawler.clone());
    let renders = super::render_job::render_tasks(crawler.clone());
    dispatch(crawler.clone(), slots.jobs).await;
    // Stopped early: the browser is closed, so pages still rendering are disposed of at once.
    crawler.rendering.close().await;
    crawler.rendering.settle().await;
    renders.abort();
    resolver.abort();
    reports.abort();
    control
        .into_iter()
        .for_each(super::control::Endpoint::close);
    crawler.finish(&mut root).await.map(Ended::Ran)
}

/// The dispatcher: starts jobs as budgets become free, at most `at_once` at a time (the
/// profile's `sites_at_once`, or fewer under a low open-file limit), until nothing is left.
/// A job starts only while fewer than [`HELD_MAX`] are held up inside the crawler (see
/// `admission.rs`): jobs waiting for servers may be many, jobs waiting for a CPU may not.
async fn dispatch(crawler: Arc<Crawler>, at_once: usize) {
    let slots = Arc::new(Semaphore::new(at_once));
    let admission = Admission::new(HELD_MAX);
    let threads = Arc::new(Mutex::new((1..=at_once).rev().collect::<Vec<_>>()));
    let mut root = Root::new();
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            break;
        };
        admission.room().await;
        let Some((budget, job)) = next_job(&crawler, &mut root).await else {
            break;
        };
        let origin = job.origin().to_string();
        let thread = take(&threads).pop().unwrap_or(0);
        let crawler = crawler.clone();
        let threads = threads.clone();
        crawler.desks.running.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(admission.admit(async move {
            // The job's task: it starts holding nothing.
            let mut root = Root::new();
            let mut pace = super::job::run_caught(&crawler, &mut root, job, thread).await;
            pace.base = crawler.operator.steering().pause(&origin, pace.base);
            crawler.desks.running.fetch_sub(1, Ordering::SeqCst);
            root.with(|key| release(&crawler, key, &budget, pace));
            take(&threads).push(thread);
            drop(permit);
        }));
    }
    // Let the jobs in flight finish: each holds a permit until it ends.
    let all = u32::try_from(at_once).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// The free thread numbers (crawl.log's thread field): a plain list, no engine lock.
fn take(threads: &Mutex<Vec<usize>>) -> std::sync::MutexGuard<'_, Vec<usize>> {
    threads.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shortest sleep of the dispatcher between two due sites (see `next_job`).
const DISPATCH_TICK: Duration = Duration::from_millis(5);

/// Waits until a budget may go and returns its next job; None when the crawl is over.
async fn next_job(crawler: &Crawler, root: &mut Root) -> Option<(String, Job)> {
    loop {
        // Created before looking: a notify_one in between is kept as a permit, not lost.
        let woken = crawler.desks.wake.notified();
        if crawler.desks.stopped() {
            return None;
        }
        if crawler.operator.paused() {
            // Paused by the operator: nothing starts until a resume wakes us (looked at each
            // half second too, for an order another worker of a shared crawl received).
            let _ = tokio::time::timeout(Duration::from_millis(500), woken).await;
            continue;
        }
        let gate = crawler.gate();
        let turn = root.with(|key| {
            crawler
                .desks
                .with_sched(key, |s| s.turn(&gate, Clock::now()))
        });
        match turn {
            Turn::Go(budget, job) => return Some((budget, job)),
            // A page still rendering may queue what its browser asks for.
            Turn::Over if crawler.rendering.active() > 0 => woken.await,
            // A held site still has work: the crawl waits for the operator to release it.
            Turn::Over
                if root.with(|key| crawler.desks.with_sched(key, |s| s.held_with_work())) =>
            {
                let _ = tokio::time::timeout(Duration::from_millis(500), woken).await;
            }
            Turn::Over => return None,
            Turn::Wait(Some(at)) => {
                // Sleep at least a tick: the sites due meanwhile start together on one wake-up
                // instead of one wake-up each (thousands a second at scale, each a thread woken
                // and put back to sleep). A request starts at most a tick after it may; the pause
                // before it only grows.
                let at = at.max(Instant::now() + DISPATCH_TICK);
                tokio::select! {
                    _ = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {}
                    _ = woken => {}
                }
            }
            Turn::Wait(None) => woken.await,
        }
    }
}

/// Picks up what an earlier run left, queues the seeds and records the run's start; false
/// when an earlier run left nothing to do (then nothing is recorded). A patch list's URLs
/// count as new seeds: a complete crawl runs again for them.
fn begin(
    crawler: &Crawler,
    key: &mut Key<Free>,
    archived: &super::archived::ArchivedBefore,
    patch: &[crate::commands::qa::PatchLine],
) -> bool {
    let flying = match crawler
        .desks
        .with_sched(key, |s| s.resume(archived, Clock::now()))
    {
        Ok(n) => n,
        Err(e) => {
            crawler.desks.fail(key, e);
            0
        }
    };
    // Nothing left by an earlier run: a patch URL seen before cannot be queued twice.
    let idle = flying == 0 && crawler.desks.with_sched(key, |s| s.left_anywhere()) == 0;
    let new_seeds = crawler.queue_seeds(key)
        + super::recrawl::queue_earlier(crawler, key)
        + super::patch::queue_patch(crawler, key, patch, idle);
    if crawler.already_complete(key, flying, new_seeds) {
        return false;
    }
    if let Err(e) = crawler.desks.with_journal(key, |j| j.runs.start()) {
        crawler
            .desks
            .runlog
            .line(&format!("cannot record the run: {e:#}"));
    }
    true
}

/// Gives a budget back with the pause its last answer calls for (and commits the frontier
/// when `commits.rs` says).
fn release(crawler: &Crawler, key: &mut Key<Free>, budget: &str, pace: Pace) {
    let due = crawler.progress.due();
    let active = crawler.desks.running.load(Ordering::SeqCst);
    let gauges = crawler.desks.with_sched(key, |s| {
        s.release(budget, pace, active, Instant::now());
        due.then(|| s.gauges(active, std::time::SystemTime::now()))
    });
    if let Some(gauges) = gauges {
        crawler
            .desks
            .with_journal(key, |j| crawler.progress.update(&j.stats, gauges));
    }
}

/// Writes `report.json` every minute and whenever the process gets SIGUSR1 (on demand:
/// `kill -USR1 PID`), so a long crawl can be inspected while it runs.
fn spawn_reports(crawler: Arc<Crawler>) -> tokio::task::JoinHandle<()> {
    // Installed before the crawl starts: SIGUSR1's default action would end the process.
    let mut usr1 =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()).ok();
    tokio::spawn(async move {
        let mut root = Root::new();
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        tick.tick().await;
        loop {
            match usr1.as_mut() {
                Some(sig) => {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = sig.recv() => {}
                    }
                }
                None => {
                    tick.tick().await;
                }
            }
            root.with(|key| crawler.report_now(key));
        }
    })
}

/// First Ctrl-C (or SIGTERM): finish the exchanges in flight, close the WARC files, stop.
/// Second: stop at once; every record already written is a complete gzip member and stays
/// readable, and the next run closes the `.open` file properly.
fn watch_ctrl_c(crawler: Arc<Crawler>) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        if !stop_signal(&mut term).await {
            return;
        }
        eprintln!(
            "\narchiver: stopping after the requests in flight (Ctrl-C again to stop at once)"
        );
        crawler.interrupted.store(true, Ordering::SeqCst);
        crawler.desks.stop();
        if stop_signal(&mut term).await {
            eprintln!("archiver: stopped at once; the WARC being written keeps its .open name");
            std::process::exit(130);
        }
    });
}

/// Waits for Ctrl-C or SIGTERM; false when no signal can be listened for.
async fn stop_signal(term: &mut Option<tokio::signal::unix::Signal>) -> bool {
    match term.as_mut() {
        Some(t) => {
            tokio::select! {
                r = tokio::signal::ctrl_c() => r.is_ok(),
                r = t.recv() => r.is_some(),
            }
        }
        None => tokio::signal::ctrl_c().await.is_ok(),
    }
}

/// Runs name lookups as they are asked for, each in its own small task, so a slow DNS server
/// never holds up the dispatcher.
fn spawn_resolver(
    crawler: Arc<Crawler>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<ResolveRequest>,
    at_once: usize,
) -> tokio::task::JoinHandle<()> {
    // Lookups wait for a slot: ten thousand sites due at once must not open ten thousand
    // resolver sockets and run the process out of descriptors.
    let slots = Arc::new(Semaphore::new(at_once.max(1)));
    tokio::spawn(async move {
        while let Some(req) = rx.recv().await {
            let c = crawler.clone();
            let slots = slots.clone();
            tokio::spawn(async move {
                if !req.after.is_zero() {
                    tokio::time::sleep(req.after).await;
                }
                let Ok(slot) = slots.acquire_owned().await else {
                    return;
                };
                let answer = c.net.resolver.resolve(&req.host).await;
                drop(slot);
                // A lookup's task starts holding nothing.
                let mut root = Root::new();
                root.with(|key| {
                    c.desks
                        .with_sched(key, |s| s.resolved(&req.origin, answer, Clock::now()))
                });
            });
        }
    })
}
