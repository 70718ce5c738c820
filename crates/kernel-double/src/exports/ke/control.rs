//! Test control of the fake ke exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;

/// Waits with a non-zero timeout that expired, so far (a driver that sleeps until woken adds none).
pub fn timed_out_waits() -> u64 {
    TIMED_OUT_WAITS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Runs every broadcast worker with the trap flag (EFLAGS.TF) set, so that a test's SIGTRAP handler sees
/// each of the worker's instructions without single-stepping the rest of the double
/// (tests/scenarios/common/single_step.rs). The test must have a SIGTRAP handler installed.
pub fn trace_broadcast_workers(on: bool) {
    TRACE_WORKERS.store(on, std::sync::atomic::Ordering::SeqCst);
}

/// KeIpiGenericCall calls so far.
pub fn ipi_calls() -> u64 {
    IPI_CALLS.load(std::sync::atomic::Ordering::Relaxed)
}

/// KeIpiGenericCall calls that have returned (every processor ran the worker) so far.
pub fn ipi_calls_returned() -> u64 {
    IPI_CALLS_RETURNED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Waits (up to 30 s of host time) until every driver system thread is parked in a wait that the
/// kernel's clock has not yet reached: after a test moves the clock, the threads' timers have fired
/// and their work is done (with `hal::stop_host_clock`, nothing else moves it).
pub fn settle_system_threads() {
    super::settle_system_threads(std::time::Duration::from_secs(30));
}

/// The kernel's system time (KeQuerySystemTime's clock) in milliseconds since the Unix epoch: the
/// host's, moved on by the clock advances tests make, or standing with the stopped host clock.
pub fn system_time_unix_millis() -> i64 {
    (super::system_time() - UNIX_EPOCH_100NS) / 10_000
}
