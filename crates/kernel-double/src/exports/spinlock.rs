//! Executive spin locks with their documented IRQL rules, checked as Driver Verifier does:
//!
//! * `KIRQL KeAcquireSpinLockRaiseToDpc(PKSPIN_LOCK)` (what KeAcquireSpinLock expands to on x64):
//!   IRQL <= DISPATCH_LEVEL; raises to DISPATCH_LEVEL and returns the previous IRQL.
//! * `VOID KeReleaseSpinLock(PKSPIN_LOCK, KIRQL NewIrql)`: at DISPATCH_LEVEL; releases and lowers to
//!   NewIrql.
//! * `VOID KeAcquireSpinLockAtDpcLevel(PKSPIN_LOCK)` / `VOID KeReleaseSpinLockFromDpcLevel(PKSPIN_LOCK)`:
//!   at DISPATCH_LEVEL exactly (the caller is already there; the IRQL does not change).
//!
//! A spin lock above DISPATCH_LEVEL (in an ISR or the PMU overflow handler at PROFILE_LEVEL) is a
//! violation naming the export and the driver's call site: such a lock can be held by code the
//! interrupt interrupted on the same processor, and the processor then spins for ever. So is
//! acquiring a lock this processor already holds (a certain deadlock, reported instead of hanging) and
//! releasing a lock that is not held. The lock word is the driver's KSPIN_LOCK: 0 when free, else the
//! owning virtual processor's index + 1 (the double's own encoding; Windows stores a thread pointer).
//!
//! Acquiring also raises the IRQL through the KPCR, so Force IRQL Checking (the loader's PAGE
//! trimming) sees spin lock holders as it sees `mov cr8`.

use super::call::{Call, enter};
use crate::cpu::DISPATCH_LEVEL;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The driver's KSPIN_LOCK as an atomic word, or None (recording a violation) if NULL or misaligned.
fn lock_word<'a>(call: &Call, lock: *mut usize) -> Option<&'a AtomicUsize> {
    if lock.is_null() || !(lock as usize).is_multiple_of(std::mem::align_of::<usize>()) {
        call.violation(format!("invalid KSPIN_LOCK address {lock:?}"));
        return None;
    }
    // SAFETY: the driver passes a KSPIN_LOCK it owns (checked non-null and aligned), which it only
    // touches through these routines while the lock is in use.
    Some(unsafe { AtomicUsize::from_ptr(lock) })
}

/// Spins until the lock is this processor's. Returns false (after a violation) if it already was.
fn acquire(call: &Call, word: &AtomicUsize) -> bool {
    let me = call.kpcr.processor_index() as usize + 1;
    loop {
        match word.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(owner) if owner == me => {
                call.violation(format!(
                    "spin lock {:p} is already held by this processor {}: deadlock",
                    word,
                    me - 1
                ));
                return false;
            }
            Err(_) => std::thread::yield_now(),
        }
    }
}

fn release(call: &Call, word: &AtomicUsize) {
    if word.swap(0, Ordering::Release) == 0 {
        call.violation(format!("spin lock {word:p} released but not held"));
    }
}

/// A violation if the IRQL is not exactly DISPATCH_LEVEL (above it, `enter` already recorded one).
fn require_dispatch(call: &Call) {
    let irql = call.kpcr.irql();
    if irql < DISPATCH_LEVEL {
        call.violation(format!("called at IRQL {irql}, below DISPATCH_LEVEL"));
    }
}

/// `KIRQL KeAcquireSpinLockRaiseToDpc(PKSPIN_LOCK SpinLock)`: IRQL <= DISPATCH_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_acquire_spin_lock_raise_to_dpc(lock: *mut usize) -> u8 {
    let call = enter("KeAcquireSpinLockRaiseToDpc", DISPATCH_LEVEL);
    let previous = call.kpcr.irql();
    // Never lowers: above DISPATCH_LEVEL (a violation already) the IRQL stays where it is.
    call.kpcr.set_irql(previous.max(DISPATCH_LEVEL));
    if let Some(word) = lock_word(&call, lock) {
        acquire(&call, word);
    }
    previous
}

/// `VOID KeReleaseSpinLock(PKSPIN_LOCK SpinLock, KIRQL NewIrql)`: at DISPATCH_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_release_spin_lock(lock: *mut usize, new_irql: u8) {
    let call = enter("KeReleaseSpinLock", DISPATCH_LEVEL);
    require_dispatch(&call);
    if let Some(word) = lock_word(&call, lock) {
        release(&call, word);
    }
    if new_irql > DISPATCH_LEVEL && new_irql != call.kpcr.irql() {
        call.violation(format!("NewIrql {new_irql} above DISPATCH_LEVEL"));
    }
    call.kpcr.set_irql(new_irql & 0xF);
}

/// `VOID KeAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock)`: at DISPATCH_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_acquire_spin_lock_at_dpc_level(lock: *mut usize) {
    let call = enter("KeAcquireSpinLockAtDpcLevel", DISPATCH_LEVEL);
    require_dispatch(&call);
    if let Some(word) = lock_word(&call, lock) {
        acquire(&call, word);
    }
}

/// `VOID KeReleaseSpinLockFromDpcLevel(PKSPIN_LOCK SpinLock)`: at DISPATCH_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_release_spin_lock_from_dpc_level(lock: *mut usize) {
    let call = enter("KeReleaseSpinLockFromDpcLevel", DISPATCH_LEVEL);
    require_dispatch(&call);
    if let Some(word) = lock_word(&call, lock) {
        release(&call, word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{self, PASSIVE_LEVEL, PROFILE_LEVEL};
    use crate::violations;

    fn spin_lock_violations() -> Vec<violations::Violation> {
        violations::take().into_iter().filter(|violation| violation.at.contains("SpinLock")).collect()
    }

    /// One test: the violations list is per process, and `cargo test` runs a file's tests on threads.
    #[test]
    fn spin_locks() {
        excludes_other_processors();
        irql_rules_and_misuse();
    }

    fn irql_rules_and_misuse() {
        let kpcr = cpu::enter(1);
        let mut lock = 0usize;
        // SAFETY: a live KSPIN_LOCK; misuse is recorded, not executed.
        unsafe {
            let old = ke_acquire_spin_lock_raise_to_dpc(&mut lock);
            assert_eq!((old, kpcr.irql(), lock), (PASSIVE_LEVEL, DISPATCH_LEVEL, 2));
            ke_release_spin_lock(&mut lock, old);
            assert_eq!((kpcr.irql(), lock), (PASSIVE_LEVEL, 0));
            kpcr.set_irql(DISPATCH_LEVEL);
            ke_acquire_spin_lock_at_dpc_level(&mut lock);
            ke_release_spin_lock_from_dpc_level(&mut lock);
            kpcr.set_irql(PASSIVE_LEVEL);
            assert_eq!(spin_lock_violations(), []);

            // At DPC level from PASSIVE_LEVEL, twice on one processor, a release of a free lock.
            ke_acquire_spin_lock_at_dpc_level(&mut lock);
            kpcr.set_irql(DISPATCH_LEVEL);
            ke_acquire_spin_lock_at_dpc_level(&mut lock);
            ke_release_spin_lock_from_dpc_level(&mut lock);
            ke_release_spin_lock_from_dpc_level(&mut lock);
            // At PROFILE_LEVEL: the IRQL is not lowered.
            kpcr.set_irql(PROFILE_LEVEL);
            let old = ke_acquire_spin_lock_raise_to_dpc(&mut lock);
            assert_eq!((old, kpcr.irql()), (PROFILE_LEVEL, PROFILE_LEVEL));
            ke_release_spin_lock(&mut lock, old);
            assert_eq!(kpcr.irql(), PROFILE_LEVEL);
            kpcr.set_irql(PASSIVE_LEVEL);
        }
        let found: Vec<String> = spin_lock_violations().iter().map(ToString::to_string).collect();
        assert_eq!(found.len(), 5, "{found:#?}");
        assert!(
            found[0].contains("KeAcquireSpinLockAtDpcLevel") && found[0].contains("below DISPATCH_LEVEL")
        );
        assert!(found[1].contains("already held by this processor 1"));
        assert!(found[2].contains("released but not held"));
        assert!(found[3].contains("KeAcquireSpinLockRaiseToDpc") && found[3].contains("IRQL 15, above"));
        assert!(found[4].contains("KeReleaseSpinLock") && found[4].contains("IRQL 15, above"));
    }

    fn excludes_other_processors() {
        cpu::enter(0);
        let lock = Box::leak(Box::new(0usize)) as *mut usize as usize;
        let inside = std::sync::Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|vp| {
                let inside = inside.clone();
                std::thread::spawn(move || {
                    cpu::enter(vp);
                    for _ in 0..200 {
                        // SAFETY: a leaked, live KSPIN_LOCK.
                        unsafe {
                            let old = ke_acquire_spin_lock_raise_to_dpc(lock as *mut usize);
                            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                            inside.fetch_sub(1, Ordering::SeqCst);
                            ke_release_spin_lock(lock as *mut usize, old);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(spin_lock_violations(), []);
    }
}
