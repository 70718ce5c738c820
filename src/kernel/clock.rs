//! The system performance counter, the time base PDH uses for rates and timers.

use windows_sys::Wdk::System::SystemServices::KeQueryPerformanceCounter;

/// The performance counter now, in its own ticks (the frequency PCW reports to PDH).
pub fn performance_counter() -> u64 {
    // SAFETY: callable at any IRQL; the frequency output is optional and not requested.
    unsafe { KeQueryPerformanceCounter(core::ptr::null_mut()) as u64 }
}
