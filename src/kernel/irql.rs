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

/// RFLAGS.IF.
const INTERRUPT_FLAG: u64 = 1 << 9;

/// Runs `work` with maskable interrupts disabled on this processor (`cli`), then enables them again
/// if they were enabled before (`sti`): inside the all-processor call this keeps the PMI, a maskable
/// interrupt at PROFILE_LEVEL above the call's IPI_LEVEL, out of a read. `work` must be short: it
/// delays every interrupt on the processor.
#[inline(always)]
pub fn with_interrupts_disabled<R>(work: impl FnOnce() -> R) -> R {
    let flags: u64;
    // SAFETY: reads RFLAGS and clears IF; CLI is permitted at CPL 0. Not `nomem`: the reads inside
    // must stay inside.
    unsafe { core::arch::asm!("pushfq", "pop {}", "cli", out(reg) flags) };
    let result = work();
    if flags & INTERRUPT_FLAG != 0 {
        // SAFETY: re-enables what was enabled on entry; STI is permitted at CPL 0.
        unsafe { core::arch::asm!("sti", options(nostack)) };
    }
    result
}
