//! The engine's locks and their order.
//!
//! The crawl engine has three locks, always taken in the order of their rank: the scheduler
//! (1), the archive (2), the journal (3). Each lock's type carries its rank ([`Ordered`]), the
//! data is only lent to a closure (so a guard never outlives the call, and is never held
//! across an `.await`: the closure is synchronous), and every lock checks in debug builds
//! (all the tests) that the thread holds no lock of the same or a later rank.

use std::cell::Cell;
use std::sync::Mutex;

thread_local! {
    /// The highest rank of the engine locks this thread holds now (0: none).
    static HELD: Cell<u8> = const { Cell::new(0) };
}

/// Data behind a mutex of rank `RANK`.
pub(super) struct Ordered<T, const RANK: u8> {
    inner: Mutex<T>,
}

impl<T, const RANK: u8> Ordered<T, RANK> {
    pub(super) fn new(value: T) -> Self {
        Ordered {
            inner: Mutex::new(value),
        }
    }

    /// Lends the data to `f` under the lock. A task that panicked while holding it leaves
    /// the data consistent between statements, so the crawl carries on rather than losing
    /// more.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let _rank = Rank::enter(RANK);
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }
}

/// Marks the thread as holding a lock of some rank until dropped.
struct Rank {
    before: u8,
}

impl Rank {
    fn enter(rank: u8) -> Rank {
        let before = HELD.with(Cell::get);
        debug_assert!(
            before < rank,
            "engine lock order broken: rank {rank} taken while holding rank {before}"
        );
        HELD.with(|h| h.set(rank));
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
    fn locks_nest_in_rank_order() {
        let one: Ordered<u32, 1> = Ordered::new(1);
        let three: Ordered<u32, 3> = Ordered::new(3);
        let sum = one.with(|a| three.with(|b| *a + *b));
        assert_eq!(sum, 4);
        // Released: the rank is back to none, so rank 1 may be taken again.
        assert_eq!(one.with(|a| *a), 1);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "engine lock order broken")]
    fn a_lock_taken_out_of_order_panics_in_debug_builds() {
        let one: Ordered<u32, 1> = Ordered::new(1);
        let three: Ordered<u32, 3> = Ordered::new(3);
        three.with(|_| one.with(|_| ()));
    }
}
