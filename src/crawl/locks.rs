//! The engine's locks and their order.
//!
//! The crawl engine has three locks, taken in one order: the scheduler (rank 1), the archive
//! desk (rank 2: the WARC writer and the digest index, `super::writer`), the journal (rank 3).
//! The order is in the types:
//!
//! - Each lock has a level ([`InSched`], [`InArchive`], [`InJournal`]) and opens only with a
//!   [`Key`] of a lower level, borrowed mutably for as long as the lock is held; it lends its
//!   closure the key of its own level. Inside the scheduler's closure the journal can be taken
//!   (with that key), inside the journal's no lock can, and no lock can be taken twice: the key
//!   that opened it is borrowed. Either mistake does not compile (the examples below).
//! - The key of a thread holding nothing, `Key<Free>`, comes only from a [`Root`], made where
//!   a task or thread starts holding nothing, and lent by [`Root::with`] to one synchronous
//!   stretch. Every engine method that locks takes that `&mut Key<Free>` from its caller, so
//!   none can be called from inside a lock's closure (the caller's key is borrowed there). The
//!   desks' `with_sched` and `with_journal` (`crawl/desks.rs`) lend their closures no key: the
//!   engine never holds two of its locks at once.
//! - A key is not `Send` and lives only inside [`Root::with`]'s closure, so it is never held
//!   across an `.await`; an async function takes its task's `&mut Root` instead (a root is
//!   `Send`) and borrows a key from it for each stretch that locks.
//!
//! What the types cannot see is a root made in the wrong place (inside a lock's closure, say):
//! the places that make one are listed by a unit test below (`ROOTS`), and [`Root::with`]
//! checks in debug builds (all the tests) that the thread really holds no engine lock.
//!
//! The data is only lent to a closure, so a guard never outlives the call and is never held
//! across an `.await` (the closure is synchronous). The module is public for its examples
//! alone, which show the rules at work (the engine's own types are private to `crawl`):
//!
//! ```
//! use archiver::crawl::locks::{InJournal, InSched, Ordered, Root};
//! let sched: Ordered<u32, InSched> = Ordered::new(1);
//! let journal: Ordered<u32, InJournal> = Ordered::new(3);
//! let mut root = Root::new();
//! // The journal inside the scheduler, with the scheduler's key: the order kept.
//! let n = root.with(|key| sched.with(key, |s, k| *s + journal.with(k, |j, _| *j)));
//! assert_eq!(n, 4);
//! // One after the other, with the same key.
//! root.with(|key| {
//!     journal.with(key, |_, _| ());
//!     sched.with(key, |_, _| ());
//! });
//! ```
//!
//! The scheduler inside the journal, with the journal's key, does not compile:
//!
//! ```compile_fail
//! use archiver::crawl::locks::{InJournal, InSched, Ordered, Root};
//! let sched: Ordered<u32, InSched> = Ordered::new(1);
//! let journal: Ordered<u32, InJournal> = Ordered::new(3);
//! Root::new().with(|key| journal.with(key, |_, k| sched.with(k, |_, _| ())));
//! ```
//!
//! nor with the key that opened the journal (what a nested call of an engine method would
//! do: that key is borrowed by the journal's lock):
//!
//! ```compile_fail
//! use archiver::crawl::locks::{InJournal, InSched, Ordered, Root};
//! let sched: Ordered<u32, InSched> = Ordered::new(1);
//! let journal: Ordered<u32, InJournal> = Ordered::new(3);
//! Root::new().with(|key| journal.with(key, |_, _| sched.with(key, |_, _| ())));
//! ```
//!
//! The same lock twice does not compile either way:
//!
//! ```compile_fail
//! use archiver::crawl::locks::{InSched, Ordered, Root};
//! let sched: Ordered<u32, InSched> = Ordered::new(1);
//! Root::new().with(|key| sched.with(key, |_, k| sched.with(k, |_, _| ())));
//! ```
//!
//! ```compile_fail
//! use archiver::crawl::locks::{InSched, Ordered, Root};
//! let sched: Ordered<u32, InSched> = Ordered::new(1);
//! Root::new().with(|key| sched.with(key, |_, _| sched.with(key, |_, _| ())));
//! ```
//!
//! and a key cannot leave its thread (so it cannot be held across an `.await` of a spawned
//! task, nor handed to a thread that holds a lock):
//!
//! ```compile_fail
//! use archiver::crawl::locks::Root;
//! fn send<T: Send>(_: T) {}
//! Root::new().with(|key| send(key));
//! ```
//!
//! # What is locked where
//!
//! | lock | holds | taken by |
//! | --- | --- | --- |
//! | scheduler (1) | queues, seen-set, sites, budgets, site book, content traps | the dispatcher (`turn`); each job (the site's address and pause, refusals, the links' seen-check and queueing, retry or finished, commit, robots.txt settled, archived bytes); each lookup's task; the browser's requests (seen, queued); the run's start and end, the report timer |
//! | archive desk (2) | the WARC writer, the digest index, whether a panic broke them | each job that keeps a record (one record written, its request too); the run's end (the last file closed) |
//! | journal (3) | crawl.log, statistics, refusals.log, run book, why the crawl stopped | every crawl.log and refusals.log line, a failure, the progress line after a job, the report timer, the run's start and end |
//!
//! Other mutexes the crawl reaches are leaves: whoever holds one takes no other lock, awaits
//! nothing and calls nothing that might, before letting it go. A thread holding a leaf waits
//! for no one, so no cycle of waits (a deadlock) can pass through it, whatever its caller holds:
//!
//! - the render book and the render queue's receiving end, taken once at start
//!   (`crawl/render.rs`): the book's closures touch the book alone;
//! - the dispatcher's free thread numbers (`crawl/driver.rs`): a pop or a push;
//! - the commit barrier's watch channel (`crawl/commits.rs`): a job awaits it holding no key
//!   (the scheduler's lock is taken before and after, each time from the job's root);
//! - run.log's file (`logs/runlog.rs`): one line written;
//! - the site book's writer (`crawl/desks.rs`): one snapshot written (synced and renamed)
//!   when it is newer than the last, outside every engine lock, released before run.log
//!   hears of a failure;
//! - the operator's orders and their compiled steering (`crawl/operator/`): an order changed
//!   and saved (its file, a shared crawl's database row) under the orders' mutex, which no
//!   engine lock is held with; the steering's read lock only to clone an `Arc` (the scheduler
//!   does that under its own lock, a leaf under a lock);
//! - the sitemaps' `lastmod`s (`crawl/sitemaps.rs`) and the DOM-link counts per site
//!   (`crawl/dom_links.rs`): an insert, a removal or a count;
//! - the progress line's rate samples (`logs/report.rs`, taken under the journal's lock when a
//!   job ends) and its terminal bar: a sample added, a message drawn;
//! - the DNS cache (`net/dns.rs`): a look-up or an insert, never across the lookup's `.await`;
//! - one exchange's capture of the wire bytes (`net/fetch.rs`), its own per request;
//! - the browser's DevTools maps of pending calls and sessions (`browser/cdp.rs`), a single
//!   insert, remove or send each; the browser process (an async mutex in `browser/process.rs`)
//!   and its tab permits, inside the browser, which never calls back into the crawl under them.
//!
//! The dispatcher's slots (a semaphore) are no lock on data: it waits for one holding no
//! engine lock, and a job gives its slot back when it ends.

use std::cell::Cell;
use std::marker::PhantomData;
// parking_lot's mutex spins briefly before it parks: the engine's locks are held for
// microseconds, so a waiter usually gets the lock without the two system calls (futex wait and
// wake) and the context switch a std mutex pays under contention.
use parking_lot::Mutex;

thread_local! {
    /// The rank of the engine lock this thread holds now (0: none).
    static HELD: Cell<u8> = const { Cell::new(0) };
}

/// A level of the lock order: the highest engine lock a thread holds.
pub trait Level {
    const RANK: u8;
}

/// No engine lock held.
pub enum Free {}
/// The scheduler's lock held (rank 1).
pub enum InSched {}
/// The archive desk's lock held (rank 2).
pub enum InArchive {}
/// The journal's lock held (rank 3).
pub enum InJournal {}

impl Level for Free {
    const RANK: u8 = 0;
}
impl Level for InSched {
    const RANK: u8 = 1;
}
impl Level for InArchive {
    const RANK: u8 = 2;
}
impl Level for InJournal {
    const RANK: u8 = 3;
}

/// A thread at level `Self` may take the lock of level `L`: `Self` ranks below `L`.
pub trait Below<L: Level>: Level {}
impl Below<InSched> for Free {}
impl Below<InArchive> for Free {}
impl Below<InArchive> for InSched {}
impl Below<InJournal> for Free {}
impl Below<InJournal> for InSched {}
impl Below<InJournal> for InArchive {}

/// Proof that the thread holds no engine lock above level `L`. Borrowed mutably by the lock it
/// opens, so the closure cannot use it again; neither `Clone` nor `Send`.
pub struct Key<L: Level> {
    _level: PhantomData<(L, *const ())>,
}

impl<L: Level> Key<L> {
    fn new() -> Key<L> {
        Key {
            _level: PhantomData,
        }
    }
}

/// Where a task or thread that holds no engine lock starts: the one source of a
/// `Key<Free>`. A task owns its root across `.await`s (a root is `Send`, so the task can still
/// be spawned) and borrows a key from it for each synchronous stretch that locks; the key lives
/// only inside [`Root::with`]'s closure, so it is never held across an `.await`.
///
/// Made only where a task or thread begins holding nothing (the unit test
/// `roots_are_made_only_where_a_task_starts` lists the places); neither `Clone` nor `Sync`.
pub struct Root {
    _not_sync: PhantomData<Cell<()>>,
}

impl Root {
    /// The root of a task or thread that starts here, holding no engine lock.
    // No `Default`: every root is made by name, so the unit test can find them all.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Root {
        Root {
            _not_sync: PhantomData,
        }
    }

    /// Lends `f` the key of a thread that holds no engine lock. The root is borrowed for the
    /// call, so `f` cannot ask it again; whether the thread really holds none is checked here
    /// in debug builds (all the tests), for a root made where it should not be.
    pub fn with<R>(&mut self, f: impl FnOnce(&mut Key<Free>) -> R) -> R {
        let held = HELD.with(Cell::get);
        debug_assert!(
            held == 0,
            "engine lock order broken: a root key taken while holding the lock of rank {held}"
        );
        f(&mut Key::new())
    }
}

/// Data behind the mutex of level `L`.
pub struct Ordered<T, L: Level> {
    inner: Mutex<T>,
    _level: PhantomData<L>,
}

impl<T, L: Level> Ordered<T, L> {
    pub fn new(value: T) -> Self {
        Ordered {
            inner: Mutex::new(value),
            _level: PhantomData,
        }
    }

    /// Lends the data and the key of this lock's level to `f`, under the lock; `key` shows the
    /// thread holds only locks that come before it. A task that panicked while holding it
    /// leaves the data consistent between statements, so the crawl carries on rather than
    /// losing more.
    pub fn with<H: Below<L>, R>(
        &self,
        _key: &mut Key<H>,
        f: impl FnOnce(&mut T, &mut Key<L>) -> R,
    ) -> R {
        let _rank = Rank::enter(L::RANK);
        let mut guard = self.inner.lock();
        f(&mut guard, &mut Key::new())
    }
}

/// Marks the thread as holding a lock of some rank until dropped (for [`Root::with`]'s check).
struct Rank {
    before: u8,
}

impl Rank {
    fn enter(rank: u8) -> Rank {
        let before = HELD.with(|h| h.replace(rank));
        Rank { before }
    }
}

impl Drop for Rank {
    fn drop(&mut self) {
        HELD.with(|h| h.set(self.before));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_nest_in_rank_order_through_their_keys() {
        let sched: Ordered<u32, InSched> = Ordered::new(1);
        let archive: Ordered<u32, InArchive> = Ordered::new(2);
        let journal: Ordered<u32, InJournal> = Ordered::new(3);
        let mut root = Root::new();
        root.with(|key| {
            let sum = sched.with(key, |a, k| {
                archive.with(k, |b, k| *a + *b + journal.with(k, |c, _| *c))
            });
            assert_eq!(sum, 6);
            // Released: the key opens rank 1 again.
            assert_eq!(sched.with(key, |a, _| *a), 1);
            // A later lock may be taken alone, or skipping one between.
            assert_eq!(journal.with(key, |c, _| *c), 3);
            assert_eq!(sched.with(key, |_, k| journal.with(k, |c, _| *c)), 3);
        });
        // The root lends a key again once the last one is gone.
        assert_eq!(root.with(|key| archive.with(key, |b, _| *b)), 2);
    }

    #[test]
    fn a_root_can_be_held_across_an_await_in_a_spawned_task() {
        fn send<T: Send>(_: &T) {}
        let task = async {
            let mut root = Root::new();
            tokio::task::yield_now().await;
            root.with(|_| ());
        };
        send(&task);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "engine lock order broken")]
    fn a_root_used_under_a_lock_panics_in_debug_builds() {
        let sched: Ordered<u32, InSched> = Ordered::new(1);
        let journal: Ordered<u32, InJournal> = Ordered::new(3);
        Root::new()
            .with(|key| journal.with(key, |_, _| Root::new().with(|k| sched.with(k, |_, _| ()))));
    }

    /// The places a task or thread starts holding no engine lock: (file under `src/`, the
    /// function that makes the root). A root made anywhere else could be made under a lock,
    /// where its key would let the engine take its locks out of order.
    const ROOTS: &[(&str, &str)] = &[
        // The main task: open, begin, finish.
        ("crawl/driver.rs", "run"),
        // The dispatcher's loop, and each job's task it spawns (a panic in a job is caught
        // in that task, whose root holds nothing again once the panic has unwound).
        ("crawl/driver.rs", "dispatch"),
        ("crawl/driver.rs", "spawn_reports"),
        // Each name lookup's task.
        ("crawl/driver.rs", "spawn_resolver"),
        // A render's task, at its end.
        ("crawl/render_job.rs", "render"),
        // Each request the browser makes, and each thing it refused.
        ("crawl/render_job.rs", "fetch"),
        ("crawl/render_job.rs", "refused"),
        // The control endpoint: its sampler's task, each request's blocking thread, and the
        // task that takes up a shared crawl's orders from other workers.
        ("crawl/control/http.rs", "sample"),
        ("crawl/control/http.rs", "run_blocking"),
        ("crawl/control/http.rs", "follow"),
    ];

    #[test]
    fn roots_are_made_only_where_a_task_starts() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        for path in rust_files(&src) {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .to_string();
            if name == "crawl/locks.rs" {
                continue;
            }
            // No other way to a key: it is made in this file alone.
            assert!(!text.contains("Key::new("), "{name} makes a Key");
            found.extend(roots_in(&text).into_iter().map(|f| (name.clone(), f)));
        }
        for (file, func) in &found {
            assert!(
                ROOTS.contains(&(file.as_str(), func.as_str())),
                "{file}: `{func}` makes a Root, but is not a place where a task starts holding \
                 nothing (see ROOTS)"
            );
        }
        for root in ROOTS {
            let listed = (root.0.to_string(), root.1.to_string());
            assert!(found.contains(&listed), "{root:?} makes no Root any more");
        }
    }

    #[test]
    fn the_roots_check_names_the_function_that_makes_each_root() {
        let text = "async fn run() {\n    let mut root = Root::new();\n}\n\
                    fn helper(&self, key: &mut Key<Free>) {\n    \
                    self.with_sched(key, |s| Root::new().with(|k| s.go(k)));\n}\n";
        assert_eq!(roots_in(text), ["run", "helper"]);
        assert!(!ROOTS.iter().any(|(_, f)| *f == "helper"));
    }

    /// The function each `Root::new()` of a source file is made in.
    /// Unit tests left out: each test starts on a thread of its own, holding nothing.
    fn roots_in(text: &str) -> Vec<String> {
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
        code.match_indices("Root::new()")
            .map(|(at, _)| enclosing_fn(&code[..at]))
            .collect()
    }

    /// The name of the last `fn` declared before the end of `before`.
    fn enclosing_fn(before: &str) -> String {
        let at = before.rfind("fn ").unwrap() + 3;
        before[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    }

    fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.extend(rust_files(&path));
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
        files
    }
}
