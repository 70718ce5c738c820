//! Cheap when nobody is watching: with no query active and nothing owned, the driver's housekeeping
//! thread sleeps until woken, with no timer. It wakes for a session (to schedule the release after the
//! hysteresis), releases the counters, and goes back to sleeping without a timeout.

use crate::common;

use common::*;
use kernel_double::control::{hal, ke, pcw};
use kernel_double::cpu::cpuid;
use kernel_double::status::STATUS_SUCCESS;
use std::time::Duration;

#[test]
fn the_housekeeping_thread_sleeps_without_a_timer_while_idle() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);

    // Idle after load: longer than the 2 s hysteresis on the kernel's clock (moved forward, which
    // wakes every timed wait whose timeout passes), and no timed wake-up at all.
    let before = ke::timed_out_waits();
    let_time_pass();
    assert_eq!(ke::timed_out_waits(), before, "the idle driver woke up on a timer");

    // A query owns the counters; once it goes, the thread is woken, releases them after the hysteresis...
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(matches!(hal::owner(), Some(hal::Owner::Driver { .. })));
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    until_released(|| hal::owner().is_none(), Duration::from_secs(8));
    assert!(ke::timed_out_waits() > before, "the release came without the hysteresis timer");

    // ...and goes back to sleeping without a timer.
    let after_release = ke::timed_out_waits();
    let_time_pass();
    assert_eq!(ke::timed_out_waits(), after_release, "the thread kept waking up after the release");

    assert!(driver.unload());
    assert_clean();
}

/// 2.6 s on the kernel's clock, in steps, with a moment after each for any thread a timeout wakes to
/// run (and be counted by `ke::timed_out_waits`).
fn let_time_pass() {
    for _ in 0..26 {
        tick_kernel_clock();
    }
}
