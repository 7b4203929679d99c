//! The engine's locks and their order.
//!
//! The crawl engine has three locks, always taken in one order: the scheduler, the archive,
//! the journal. The order is in the types. Each lock has a level ([`InSched`], [`InArchive`],
//! [`InJournal`]) and opens only with a [`Key`] of a lower level, and it lends its closure the
//! key of its own level: inside the scheduler's closure the archive and the journal can be taken
//! (with that key) but not the scheduler again, inside the journal's no lock can. Taking two
//! locks the wrong way round does not compile.
//!
//! What the types cannot see is a fresh key made inside a closure: [`Key::none`] is the key of
//! a thread holding no lock, and the `Crawler`'s own `with_*` methods start from it. Whether the
//! thread really holds none is checked when it is made, in debug builds (all the tests).
//!
//! The data is only lent to a closure, so a guard never outlives the call and is never held
//! across an `.await` (the closure is synchronous; a key is not `Send`).

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::Mutex;

thread_local! {
    /// The rank of the engine lock this thread holds now (0: none).
    static HELD: Cell<u8> = const { Cell::new(0) };
}

/// A level of the lock order: the highest engine lock a thread holds.
pub(super) trait Level {
    const RANK: u8;
}

/// No engine lock held.
pub(super) enum Free {}
/// The scheduler's lock held (rank 1).
pub(super) enum InSched {}
/// The archive's lock held (rank 2).
pub(super) enum InArchive {}
/// The journal's lock held (rank 3).
pub(super) enum InJournal {}

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
pub(super) trait Below<L: Level>: Level {}
impl Below<InSched> for Free {}
impl Below<InArchive> for Free {}
impl Below<InArchive> for InSched {}
impl Below<InJournal> for Free {}
impl Below<InJournal> for InSched {}
impl Below<InJournal> for InArchive {}

/// Proof that the thread holds no engine lock above level `L`. Borrowed mutably by the lock it
/// opens, so the closure cannot use it again; neither `Clone` nor `Send`.
pub(super) struct Key<L: Level> {
    _level: PhantomData<(L, *const ())>,
}

impl<L: Level> Key<L> {
    fn new() -> Key<L> {
        Key {
            _level: PhantomData,
        }
    }
}

impl Key<Free> {
    /// The key of a thread that holds no engine lock.
    pub(super) fn none() -> Key<Free> {
        let held = HELD.with(Cell::get);
        debug_assert!(
            held == 0,
            "engine lock order broken: a fresh key made while holding the lock of rank {held}"
        );
        Key::new()
    }
}

/// Data behind the mutex of level `L`.
pub(super) struct Ordered<T, L: Level> {
    inner: Mutex<T>,
    _level: PhantomData<L>,
}

impl<T, L: Level> Ordered<T, L> {
    pub(super) fn new(value: T) -> Self {
        Ordered {
            inner: Mutex::new(value),
            _level: PhantomData,
        }
    }

    /// Lends the data and the key of this lock's level to `f`, under the lock; `key` shows the
    /// thread holds only locks that come before it. A task that panicked while holding it
    /// leaves the data consistent between statements, so the crawl carries on rather than
    /// losing more.
    pub(super) fn with<H: Below<L>, R>(
        &self,
        _key: &mut Key<H>,
        f: impl FnOnce(&mut T, &mut Key<L>) -> R,
    ) -> R {
        let _rank = Rank::enter(L::RANK);
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard, &mut Key::new())
    }
}

/// Marks the thread as holding a lock of some rank until dropped (for [`Key::none`]'s check).
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
        let mut key = Key::none();
        let sum = sched.with(&mut key, |a, k| {
            archive.with(k, |b, k| *a + *b + journal.with(k, |c, _| *c))
        });
        assert_eq!(sum, 6);
        // Released: the thread holds nothing, so a fresh key may be made and rank 1 taken.
        assert_eq!(sched.with(&mut Key::none(), |a, _| *a), 1);
        // A later lock may be taken alone, or skipping one between.
        assert_eq!(journal.with(&mut key, |c, _| *c), 3);
        assert_eq!(sched.with(&mut key, |_, k| journal.with(k, |c, _| *c)), 3);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "engine lock order broken")]
    fn a_fresh_key_made_under_a_lock_panics_in_debug_builds() {
        let sched: Ordered<u32, InSched> = Ordered::new(1);
        let journal: Ordered<u32, InJournal> = Ordered::new(3);
        journal.with(&mut Key::none(), |_, _| {
            sched.with(&mut Key::none(), |_, _| ())
        });
    }
}
