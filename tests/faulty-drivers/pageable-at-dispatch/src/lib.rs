//! Fault: pageable code run at DISPATCH_LEVEL. `checksum` lives in the PAGE section. DriverEntry calls
//! it once at PASSIVE_LEVEL (allowed), then raises to DISPATCH_LEVEL with `mov cr8` (KeRaiseIrql's
//! inline x64 form) and calls it again: on Windows a page fault at DISPATCH_LEVEL is bug check 0xD1 /
//! 0xA, and Driver Verifier's Force IRQL Checking makes it certain by trimming pageable memory whenever
//! the IRQL is raised.
#![no_std]

#[path = "../../kernel.rs"]
mod kernel;

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::*;

static SUM: AtomicU64 = AtomicU64::new(0);

/// Pageable code.
#[inline(never)]
#[unsafe(link_section = "PAGE")]
extern "system" fn checksum(value: u64) -> u64 {
    core::hint::black_box(value).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17)
}

/// # Safety
/// Called by the I/O manager with a valid driver object.
#[unsafe(no_mangle)]
#[unsafe(link_section = "INIT")]
pub unsafe extern "system" fn DriverEntry(driver: *mut u8, _registry_path: *const u8) -> NtStatus {
    SUM.store(checksum(1), Ordering::Relaxed);
    // SAFETY: raising to DISPATCH_LEVEL and back; the fault is what runs in between.
    unsafe {
        let previous = set_irql(DISPATCH_LEVEL);
        SUM.fetch_add(checksum(2), Ordering::Relaxed);
        set_irql(previous);
        set_unload(driver, unload);
    }
    STATUS_SUCCESS
}

unsafe extern "system" fn unload(_driver: *mut u8) {}
