//! The system performance counter, the time base PDH uses for rates and timers.

use windows_sys::Wdk::System::SystemServices::KeQueryPerformanceCounter;

/// The performance counter now, in its own ticks (the frequency PCW reports to PDH).
pub fn performance_counter() -> u64 {
    // SAFETY: callable at any IRQL; the frequency output is optional and not requested.
    unsafe { KeQueryPerformanceCounter(core::ptr::null_mut()) as u64 }
}

/// The performance counter now, in nanoseconds (the unit of Avg. Collect Time (ns)).
pub fn nanoseconds() -> u64 {
    let mut frequency = 0i64;
    // SAFETY: callable at any IRQL; `frequency` is a valid output.
    let ticks = unsafe { KeQueryPerformanceCounter(&mut frequency) } as u64;
    let frequency = frequency.max(1) as u128;
    (u128::from(ticks) * 1_000_000_000 / frequency).min(u128::from(u64::MAX)) as u64
}

/// Converts performance-counter ticks to 100 ns units (the unit of kernel timeouts).
pub fn ticks_to_100ns(ticks: u64) -> u64 {
    let mut frequency = 0i64;
    // SAFETY: callable at any IRQL; `frequency` is a valid output.
    unsafe { KeQueryPerformanceCounter(&mut frequency) };
    let frequency = frequency.max(1) as u128;
    (u128::from(ticks) * 10_000_000 / frequency).min(u128::from(u64::MAX)) as u64
}
