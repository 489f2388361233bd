//! The crate's one policy for a poisoned lock: take the data and go on.
//!
//! A lock is poisoned when a thread panicked while holding it. Every critical section in
//! this crate is short and leaves what it guards whole between two statements (a counter
//! bumped, a slot filled or taken, an entry pushed, a line appended), so what a poisoned
//! lock guards is still sound; the panic itself is reported where it happened (its
//! message on stderr, a task's `JoinError`). Skipping the work instead, as an
//! `if let Ok(..) = mutex.lock()` does, silently drops what the lock guards: a call not
//! counted against a limit (which then never stops the run), a warning, an event, a
//! reloaded definition. Panicking in turn would spread one failure to every thread that
//! touches the lock. So nothing in the crate locks a `std` lock except through these
//! functions, and a poisoned lock is never a reason to skip work.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, poisoned or not.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Locks `lock` for reading, poisoned or not.
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Locks `lock` for writing, poisoned or not.
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Poisons `mutex` by panicking while holding it on another thread.
    fn poison<T: Send>(mutex: &Mutex<T>) {
        std::thread::scope(|scope| {
            let _ = scope
                .spawn(|| {
                    let _held = mutex.lock();
                    panic!("poisons the lock on purpose");
                })
                .join();
        });
        assert!(mutex.is_poisoned());
    }

    #[test]
    fn a_poisoned_lock_still_gives_its_data() {
        let count = Mutex::new(1);
        poison(&count);
        *lock(&count) += 1;
        assert_eq!(*lock(&count), 2);
    }
}
