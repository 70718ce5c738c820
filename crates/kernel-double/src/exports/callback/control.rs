//! Test control of the fake callback exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Registrations and object references the driver still holds.
pub fn outstanding() -> usize {
    with_state(|state| state.references + state.registrations.len())
}

/// A sleep and a resume (S3, or S4 and back): the power callbacks hear that S0 is about to be left,
/// every processor's PMU comes back with its power-on values ([`pmu::power_on_reset`]), and the
/// callbacks hear that the system is back in S0. Called by a test, from a thread that is not running
/// driver code.
pub fn suspend_resume() {
    notify(false);
    pmu::power_on_reset();
    notify(true);
}

/// A sleep and a resume whose "back in S0" notification comes late, as on Windows: the callbacks hear
/// that S0 is about to be left, the PMU comes back with its power-on values, and the "back in S0" call
/// is made from a work item that resume queues (PopUnlockAfterSleepWorker, observed in decompiled
/// Windows builds), which a system worker thread runs only after `reads` more all-processor calls
/// (KeIpiGenericCall: the driver's collects and polls) have returned on the reset PMU. The worker is a
/// thread of its own, so the call may run while a collect is still finishing, as it can on Windows.
/// Wait for it with [`LateResume::back_in_s0`]. Called by a test, from a thread that is not running
/// driver code.
pub fn suspend_resume_late(reads: u64) -> LateResume {
    notify(false);
    pmu::power_on_reset();
    let due = crate::exports::ke::control::ipi_calls_returned() + reads;
    let delivered = Arc::new(AtomicBool::new(false));
    let cancelled = Arc::new(AtomicBool::new(false));
    let worker = {
        let (delivered, cancelled) = (Arc::clone(&delivered), Arc::clone(&cancelled));
        std::thread::Builder::new()
            .name("power-state-work-item".into())
            .spawn(move || {
                while crate::exports::ke::control::ipi_calls_returned() < due {
                    if cancelled.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                crate::cpu::enter(0);
                notify(true);
                delivered.store(true, Ordering::SeqCst);
            })
            .expect("the power work item's thread starts")
    };
    LateResume { worker: Some(worker), delivered, cancelled }
}

/// A "back in S0" notification still to come ([`suspend_resume_late`]).
pub struct LateResume {
    worker: Option<std::thread::JoinHandle<()>>,
    delivered: Arc<AtomicBool>,
    cancelled: Arc<AtomicBool>,
}

impl LateResume {
    /// Whether the callbacks have heard that the system is back in S0.
    pub fn delivered(&self) -> bool {
        self.delivered.load(Ordering::SeqCst)
    }

    /// Waits until the callbacks have heard that the system is back in S0 (the test must have made the
    /// all-processor calls it is waiting for). Panics after 30 s.
    pub fn back_in_s0(mut self) {
        let started = Instant::now();
        while !self.delivered() {
            assert!(started.elapsed() < Duration::from_secs(30), "the late \"back in S0\" call never came");
            std::thread::sleep(Duration::from_millis(1));
        }
        if let Some(worker) = self.worker.take() {
            worker.join().expect("the power work item's thread");
        }
    }
}

impl Drop for LateResume {
    /// A notification never waited for is dropped, as if the test ended before the work item ran.
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::SeqCst);
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}
