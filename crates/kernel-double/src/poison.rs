//! Locks of the double's global state that ignore poisoning.
//!
//! A scenario's assertion can panic on a thread that holds one of the fake kernel's locks (a driver
//! thread whose check fails, a test thread reading a table). `std::sync` then poisons the lock
//! (<https://doc.rust-lang.org/std/sync/struct.Mutex.html#poisoning>), and every later user would panic
//! too, hiding the first failure behind a cascade and making the end-of-run report unreadable. The
//! double's tables stay consistent across such a panic (each update is one insertion, removal or
//! assignment), so their users take the data as it is.

use std::sync::{LockResult, PoisonError};

/// The guard of a lock (`lock`, `read`, `write`, `Condvar::wait`...), poisoned or not.
pub trait IgnorePoison<Guard> {
    /// The guard, whether or not a panicking thread held the lock before.
    fn ignore_poison(self) -> Guard;
}

impl<Guard> IgnorePoison<Guard> for LockResult<Guard> {
    fn ignore_poison(self) -> Guard {
        self.unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_poisoned_lock_still_gives_its_data() {
        let lock = Mutex::new(1);
        let _ = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let _guard = lock.lock().ignore_poison();
                    panic!("poisons the lock");
                })
                .join()
        });
        assert!(lock.is_poisoned());
        *lock.lock().ignore_poison() += 1;
        assert_eq!(*lock.lock().ignore_poison(), 2);
    }
}
