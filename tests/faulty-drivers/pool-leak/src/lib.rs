//! Fault: a pool leak. DriverEntry allocates 64 bytes of non-paged pool tagged "Leak" and DriverUnload
//! never frees them (Driver Verifier bug-checks 0x62 at unload: the driver left pool allocated).
#![no_std]

#[path = "../../kernel.rs"]
mod kernel;

use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::*;

pub const TAG: u32 = u32::from_le_bytes(*b"Leak");
static BLOCK: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());

/// # Safety
/// Called by the I/O manager with a valid driver object.
#[unsafe(no_mangle)]
#[unsafe(link_section = "INIT")]
pub unsafe extern "system" fn DriverEntry(driver: *mut u8, _registry_path: *const u8) -> NtStatus {
    // SAFETY: PASSIVE_LEVEL, a valid pool type and tag.
    let block = unsafe { ExAllocatePool2(POOL_FLAG_NON_PAGED, 64, TAG) };
    if block.is_null() {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    BLOCK.store(block, Ordering::Relaxed);
    // SAFETY: the driver object DriverEntry received.
    unsafe { set_unload(driver, unload) };
    STATUS_SUCCESS
}

/// The fault: forgets BLOCK.
unsafe extern "system" fn unload(_driver: *mut u8) {}
