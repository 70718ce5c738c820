//! The session lock: spin's reader-writer lock in the driver (no kernel object, usable at any
//! IRQL), loom's under the model checker, so that loom explores collects racing acquisitions and
//! releases.

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
