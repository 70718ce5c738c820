//! Fault: an MSR write without owning the PMU. DriverEntry clears IA32_PERF_GLOBAL_CTRL without having
//! called HalAllocateHardwareCounters, trampling whoever owns the counters (WPR, VTune).
#![no_std]

#[path = "../../kernel.rs"]
mod kernel;

use kernel::*;

const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;

/// The fault, in .text (so the reported RVA can be checked after INIT is discarded).
#[inline(never)]
fn stop_every_counter() {
    // SAFETY: kernel mode; an architectural MSR. What is wrong is who calls it: nobody owns the PMU.
    unsafe { wrmsr(IA32_PERF_GLOBAL_CTRL, 0) };
}

/// # Safety
/// Called by the I/O manager with a valid driver object.
#[unsafe(no_mangle)]
#[unsafe(link_section = "INIT")]
pub unsafe extern "system" fn DriverEntry(driver: *mut u8, _registry_path: *const u8) -> NtStatus {
    stop_every_counter();
    // SAFETY: the driver object DriverEntry received.
    unsafe { set_unload(driver, unload) };
    STATUS_SUCCESS
}

unsafe extern "system" fn unload(_driver: *mut u8) {}
