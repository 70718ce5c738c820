//! Fault: a write past the end of an allocation. DriverEntry allocates 32 bytes of non-paged pool tagged
//! "Ovrn" and writes the byte just past them (Driver Verifier's special pool puts the allocation's end
//! against a no-access page, so the write faults at once: bug check 0xCD, PAGE_FAULT_BEYOND_END_OF_
//! ALLOCATION).
#![no_std]

#[path = "../../kernel.rs"]
mod kernel;

use kernel::*;

pub const TAG: u32 = u32::from_le_bytes(*b"Ovrn");
const SIZE: usize = 32;

/// The fault, in .text.
#[inline(never)]
fn fill(block: *mut u8) {
    for offset in 0..=SIZE {
        // SAFETY: none for offset == SIZE: that is the fault.
        unsafe { block.add(offset).write_volatile(offset as u8) };
    }
}

/// # Safety
/// Called by the I/O manager with a valid driver object.
#[unsafe(no_mangle)]
#[unsafe(link_section = "INIT")]
pub unsafe extern "system" fn DriverEntry(driver: *mut u8, _registry_path: *const u8) -> NtStatus {
    // SAFETY: PASSIVE_LEVEL, a valid pool type and tag.
    let block = unsafe { ExAllocatePool2(POOL_FLAG_NON_PAGED, SIZE, TAG) };
    if block.is_null() {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    fill(block);
    // SAFETY: allocated above with this tag; the driver object DriverEntry received.
    unsafe {
        ExFreePoolWithTag(block, TAG);
        set_unload(driver, unload);
    }
    STATUS_SUCCESS
}

unsafe extern "system" fn unload(_driver: *mut u8) {}
