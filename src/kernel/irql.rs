//! The current IRQL.

/// The highest device IRQL on x64; above it (clock, IPI, profile, high) only resident, lock-free code
/// runs.
pub const MAX_DEVICE_LEVEL: u8 = 12;

/// Reads the current IRQL from CR8, as `KeGetCurrentIrql` does inline on x64 (wdm.h). Reading it
/// costs no call and works at every IRQL.
#[inline(always)]
pub fn current() -> u8 {
    let irql: u64;
    // SAFETY: reading CR8 has no side effects and is permitted at CPL 0, where this code runs.
    unsafe { core::arch::asm!("mov {}, cr8", out(reg) irql, options(nomem, nostack, preserves_flags)) };
    irql as u8
}
