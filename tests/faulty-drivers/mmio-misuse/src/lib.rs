//! Fault: every misuse of the memory controller's registers the double watches for. DriverEntry reads
//! MCHBAR from device 00:00.0 (HalGetBusDataByOffset, as pmupcw does) without checking its enable bit
//! or the device ID, and maps the page of the 32-bit DRAM counters (MCHBAR + 0x5000) without
//! PAGE_NOCACHE (a cached view of registers). Where the mapping is made it loads DATA_READS (+ 0x50,
//! allowed), then + 0x000 (no listed counter), stores to DATA_READS, and DriverUnload never unmaps
//! the page. On a platform whose MCHBAR is disabled, or whose host bridge ID is unknown, the mapping
//! itself is the fault.
#![no_std]

#[path = "../../kernel.rs"]
mod kernel;

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::*;

/// BUS_DATA_TYPE's PCIConfiguration (wdm.h).
const PCI_CONFIGURATION: u32 = 4;
/// winnt.h.
const PAGE_READONLY: u32 = 0x02;

#[link(name = "HAL.dll", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "system" {
    fn HalGetBusDataByOffset(
        bus_data_type: u32,
        bus: u32,
        slot: u32,
        buffer: *mut u8,
        offset: u32,
        length: u32,
    ) -> u32;
}

#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "system" {
    fn MmMapIoSpaceEx(physical: i64, bytes: usize, protect: u32) -> *mut u8;
}

/// What the loads read, so that the optimiser keeps them.
static SEEN: AtomicU64 = AtomicU64::new(0);

/// # Safety
/// Called by the I/O manager with a valid driver object.
#[unsafe(no_mangle)]
#[unsafe(link_section = "INIT")]
pub unsafe extern "system" fn DriverEntry(driver: *mut u8, _registry_path: *const u8) -> NtStatus {
    let mut mchbar = 0u64;
    // SAFETY: an 8-byte local for 8 bytes of configuration space at 0x48.
    unsafe { HalGetBusDataByOffset(PCI_CONFIGURATION, 0, 0, (&raw mut mchbar).cast(), 0x48, 8) };
    // The fault: no check of the device ID or the enable bit, and no PAGE_NOCACHE.
    // SAFETY: the kernel validates the range; a refusal is NULL.
    let page = unsafe { MmMapIoSpaceEx(((mchbar & !1) + 0x5000) as i64, 0x1000, PAGE_READONLY) };
    if !page.is_null() {
        // SAFETY: the mapped page; the loads and the store are the faults (but the first).
        unsafe {
            let reads = core::ptr::read_volatile(page.add(0x50).cast::<u32>());
            let nothing = core::ptr::read_volatile(page.cast::<u32>());
            core::ptr::write_volatile(page.add(0x50).cast::<u32>(), 0);
            SEEN.store(u64::from(reads) + u64::from(nothing), Ordering::Relaxed);
        }
    }
    // SAFETY: the driver object DriverEntry received.
    unsafe { set_unload(driver, unload) };
    STATUS_SUCCESS
}

/// The fault: never unmaps the page.
unsafe extern "system" fn unload(_driver: *mut u8) {}
