//! Atomics and locks, chosen in one place for the whole driver's pure logic (as tokio's `src/loom`
//! makes the choice for tokio): core's atomics and spin's reader-writer lock in the driver and in
//! ordinary tests, loom's when built with `--cfg loom`, so that the model checker explores every
//! interleaving of the state that threads share.
//!
//! * The top level is what the loom models reach: the fold and poll protocol's counts
//!   (`crate::pmu::fold`, `crate::pmu::poll`), the wraps of IA32_PERF_METRICS (`crate::pmu::topdown`),
//!   the collect-rate bound (`crate::session::throttle`), the activity schedule
//!   (`crate::session::schedule`) and the session lock ([`SessionLock`]).
//! * [`unmodelled`] is core's atomics under loom too, for state that no model races or that loom's
//!   atomics cannot hold: state initialised in a `const` (loom's `new` is not a `const fn`: the
//!   overflow handler's owned masks), memory the platform allocates zeroed (a processor's own state,
//!   read and written only on that processor inside the all-processor call), and PCW's query count.
//!
//! The published blocks (`crate::counters`, generated) keep core's atomics in every build: their
//! layout is the counterset's, which PCW reads. `src/kernel/` is the FFI boundary and uses core's
//! atomics directly; it is not built on the host.

#[cfg(loom)]
pub use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};

#[cfg(not(loom))]
pub use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};

/// One `Ordering` in every build: loom's is core's (std's re-export).
pub use core::sync::atomic::{Ordering, compiler_fence};

/// Core's atomics in every build, loom's included (see the module's comment for which state).
pub mod unmodelled {
    pub use core::sync::atomic::{AtomicI16, AtomicU8, AtomicU32, AtomicU64};
}

#[cfg(not(loom))]
type Inner<T> = spin::RwLock<T>;
#[cfg(loom)]
type Inner<T> = loom::sync::RwLock<T>;

#[cfg(not(loom))]
pub type ReadGuard<'a, T> = spin::RwLockReadGuard<'a, T>;
#[cfg(loom)]
pub type ReadGuard<'a, T> = loom::sync::RwLockReadGuard<'a, T>;

#[cfg(not(loom))]
pub type WriteGuard<'a, T> = spin::RwLockWriteGuard<'a, T>;
#[cfg(loom)]
pub type WriteGuard<'a, T> = loom::sync::RwLockWriteGuard<'a, T>;

/// The session lock: spin's reader-writer lock in the driver (no kernel object, usable at any IRQL),
/// loom's under the model checker, so that loom explores collects racing acquisitions and releases.
pub struct SessionLock<T>(Inner<T>);

impl<T> SessionLock<T> {
    pub fn new(value: T) -> Self {
        SessionLock(Inner::new(value))
    }

    /// The write side, waited for: ownership changes, at PASSIVE_LEVEL.
    pub fn write(&self) -> WriteGuard<'_, T> {
        #[cfg(not(loom))]
        return self.0.write();
        #[cfg(loom)]
        return self.0.write().unwrap();
    }

    /// The read side, waited for: only for a lock whose writers hold it for a copy (the last plan).
    pub fn read(&self) -> ReadGuard<'_, T> {
        #[cfg(not(loom))]
        return self.0.read();
        #[cfg(loom)]
        return self.0.read().unwrap();
    }

    /// The read side if no change is in progress: collects never wait.
    pub fn try_read(&self) -> Option<ReadGuard<'_, T>> {
        #[cfg(not(loom))]
        return self.0.try_read();
        #[cfg(loom)]
        return self.0.try_read().ok();
    }
}
