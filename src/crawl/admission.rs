//! How many jobs the dispatcher lets in: at most [`HELD_MAX`] held up inside the crawler.
//!
//! A job in flight costs memory: its task, its connection's buffers (hyper's read and write
//! buffers, 8 KB each), its recorded bytes. On a fast network (loopback, a LAN) answers come
//! back faster than the crawler can handle them, and a dispatcher that starts every job that is
//! due (ten thousand robots.txt at the start of a 10,000-site crawl) fills the run queues with
//! jobs that wait for a CPU, each holding those buffers: the 10,000-site bench peaked at 270-300
//! MB this way, with thousands of requests in flight on two cores. A job waiting for a server's
//! answer holds its memory for a reason; a job waiting for the crawler (a CPU, the frontier's
//! commit, the WARC writer) only lengthens the queue it waits in.
//!
//! So each job's future is wrapped ([`Admission::admit`]) and counted as *held* unless it is
//! waiting for the network ([`remote`]) and nothing has woken it; the dispatcher starts a new
//! job only while fewer than the limit are held ([`Admission::room`]). Nothing is timed and
//! nothing is guessed about the network: on loopback nearly every job in flight is held, so
//! about [`HELD_MAX`] run at once, enough to keep every core busy; on the real network (hundreds
//! of milliseconds per answer) jobs spend their time waiting for servers, which does not count,
//! so thousands may be in flight as `sites_at_once` allows, as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicIsize, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;
use tokio::sync::Notify;

/// Jobs held up inside the crawler at most before the dispatcher waits. A few hundred keep
/// every worker busy (a job also waits for the archive desk's lock) at a few tens of KB each. A
/// job waiting for the frontier's group commit is not held: that wait is bounded by the
/// commit window (`commits::GROUP_WINDOW`), like a wait for a server by its timeout.
pub(super) const HELD_MAX: usize = 256;

/// The count of held jobs, shared by the dispatcher and every job's future.
pub(super) struct Admission {
    held: AtomicIsize,
    limit: usize,
    room: Notify,
}

impl Admission {
    pub(super) fn new(limit: usize) -> Arc<Admission> {
        Arc::new(Admission {
            held: AtomicIsize::new(0),
            limit: limit.max(1),
            room: Notify::new(),
        })
    }

    /// Jobs held up inside the crawler now.
    pub(super) fn held(&self) -> usize {
        usize::try_from(self.held.load(Ordering::SeqCst)).unwrap_or(0)
    }

    /// Waits until fewer than the limit are held.
    pub(super) async fn room(&self) {
        loop {
            // Made before looking: a job leaving in between leaves a permit, not a lost wake.
            let left = self.room.notified();
            if self.held() < self.limit {
                return;
            }
            left.await;
        }
    }

    /// A job's future, counted from now: held (it is runnable) until it waits for a server.
    pub(super) fn admit<F: Future>(self: &Arc<Self>, job: F) -> Admitted<F> {
        self.enter();
        Admitted {
            job: Box::pin(job),
            state: Arc::new(JobState {
                bits: AtomicU8::new(QUEUED),
                admission: self.clone(),
                waker: AtomicWaker::new(),
            }),
        }
    }

    fn enter(&self) {
        self.held.fetch_add(1, Ordering::SeqCst);
    }

    fn leave(&self) {
        // Counts move by one, so the count falls below the limit exactly here.
        let before = self.held.fetch_sub(1, Ordering::SeqCst);
        if before == self.limit as isize {
            self.room.notify_one();
        }
    }
}

/// Woken and not polled since: the job waits for a CPU.
const QUEUED: u8 = 1;
/// Inside [`remote`]: the job waits for a server (unless it is also queued).
const REMOTE: u8 = 2;
/// Finished or dropped: counted no more, whatever wakes it later.
const DONE: u8 = 4;

/// Whether a job in this state counts as held.
fn held(bits: u8) -> bool {
    bits & DONE == 0 && (bits & QUEUED != 0 || bits & REMOTE == 0)
}

/// One job's state, shared by its future and the wakers handed out while it runs.
struct JobState {
    bits: AtomicU8,
    admission: Arc<Admission>,
    /// The task's own waker, woken through ours.
    waker: AtomicWaker,
}

impl JobState {
    /// Changes the state and the count with it.
    fn update(&self, change: impl Fn(u8) -> u8) {
        let mut before = self.bits.load(Ordering::SeqCst);
        let after = loop {
            let after = change(before);
            match self
                .bits
                .compare_exchange_weak(before, after, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => break after,
                Err(now) => before = now,
            }
        };
        match (held(before), held(after)) {
            (false, true) => self.admission.enter(),
            (true, false) => self.admission.leave(),
            _ => {}
        }
    }
}

impl Wake for JobState {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.update(|b| if b & DONE == 0 { b | QUEUED } else { b });
        self.waker.wake();
    }
}

/// A job's future, counted by its [`Admission`] (see the module doc).
pub(super) struct Admitted<F> {
    job: Pin<Box<F>>,
    state: Arc<JobState>,
}

tokio::task_local! {
    /// The state of the job polled now, for [`remote`].
    static CURRENT: Arc<JobState>;
}

impl<F: Future> Future for Admitted<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        this.state.waker.register(cx.waker());
        // Running now; a wake while it runs marks it queued again (and it is polled again).
        this.state.update(|b| b & !QUEUED);
        let waker = Waker::from(this.state.clone());
        let mut job_cx = Context::from_waker(&waker);
        let state = this.state.clone();
        let out = CURRENT.sync_scope(state, || this.job.as_mut().poll(&mut job_cx));
        if out.is_ready() {
            this.state.update(|b| b | DONE);
        }
        out
    }
}

impl<F> Drop for Admitted<F> {
    fn drop(&mut self) {
        self.state.update(|b| b | DONE);
    }
}

/// Runs `work`, a wait for a server (connecting, sending, the answer), as not held: while it
/// waits for the network the job does not count against the limit. Outside an admitted job
/// it is `work` itself.
pub(super) async fn remote<F: Future>(work: F) -> F::Output {
    let state = CURRENT.try_with(Arc::clone).ok();
    let _away = state.map(|s| {
        s.update(|b| b | REMOTE);
        Away(s)
    });
    work.await
}

/// Marks the job back inside the crawler when its wait for the network ends (or is dropped).
struct Away(Arc<JobState>);

impl Drop for Away {
    fn drop(&mut self) {
        self.0.update(|b| b & !REMOTE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A future that is pending until told, waking its task when told.
    #[derive(Default)]
    struct Gate {
        open: std::sync::Mutex<(bool, Option<Waker>)>,
    }

    impl Gate {
        fn open(&self) {
            let mut g = self.open.lock().unwrap();
            g.0 = true;
            if let Some(w) = g.1.take() {
                w.wake();
            }
        }

        fn wait(self: &Arc<Self>) -> impl Future<Output = ()> {
            let gate = self.clone();
            std::future::poll_fn(move |cx| {
                let mut g = gate.open.lock().unwrap();
                if g.0 {
                    return Poll::Ready(());
                }
                g.1 = Some(cx.waker().clone());
                Poll::Pending
            })
        }
    }

    fn noop_cx() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    #[test]
    fn a_job_is_held_until_it_waits_for_a_server() {
        let admission = Admission::new(2);
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        let mut job = admission.admit(async move { remote(g.wait()).await });
        // Started and not yet run: it waits for a CPU.
        assert_eq!(admission.held(), 1);
        let mut cx = noop_cx();
        assert!(Pin::new(&mut job).poll(&mut cx).is_pending());
        assert_eq!(
            admission.held(),
            0,
            "waiting for the network does not count"
        );
        // The answer comes: runnable again, so held until it runs.
        gate.open();
        assert_eq!(admission.held(), 1);
        assert!(Pin::new(&mut job).poll(&mut cx).is_ready());
        assert_eq!(admission.held(), 0);
        // A late wake of a finished job changes nothing.
        job.state.clone().wake();
        assert_eq!(admission.held(), 0);
    }

    #[test]
    fn a_job_waiting_inside_the_crawler_stays_held_and_a_dropped_one_leaves() {
        let admission = Admission::new(8);
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        // Waiting for something of the crawler's own (the WARC writer, say): held.
        let mut job = admission.admit(async move { g.wait().await });
        let mut cx = noop_cx();
        assert!(Pin::new(&mut job).poll(&mut cx).is_pending());
        assert_eq!(admission.held(), 1);
        drop(job);
        assert_eq!(admission.held(), 0);
        // Dropped while woken and not yet run: left once, not twice.
        let mut job = admission.admit(std::future::pending::<()>());
        assert!(Pin::new(&mut job).poll(&mut cx).is_pending());
        job.state.clone().wake();
        job.state.clone().wake();
        assert_eq!(admission.held(), 1);
        drop(job);
        assert_eq!(admission.held(), 0);
    }

    #[tokio::test]
    async fn the_dispatcher_waits_for_room_and_is_told_when_there_is() {
        let admission = Admission::new(2);
        let gates: Vec<Arc<Gate>> = (0..2).map(|_| Arc::new(Gate::default())).collect();
        let mut jobs: Vec<_> = gates
            .iter()
            .map(|g| {
                let g = g.clone();
                admission.admit(async move { g.wait().await })
            })
            .collect();
        assert_eq!(admission.held(), 2);
        let waiting = tokio::spawn({
            let admission = admission.clone();
            async move { admission.room().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "no room while the limit is held");
        gates[0].open();
        let mut cx = noop_cx();
        assert!(Pin::new(&mut jobs[0]).poll(&mut cx).is_ready());
        assert_eq!(admission.held(), 1);
        waiting.await.unwrap();
    }
}
