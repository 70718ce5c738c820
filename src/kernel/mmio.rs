//! The memory controller's registers: device 00:00.0's configuration DWORDs through
//! HalGetBusDataByOffset, and one controller's counter page mapped read-only and uncached through
//! MmMapIoSpaceEx, read only at the offsets the model table lists (`crate::imc::models`), with
//! volatile loads of each counter's width; MmUnmapIoSpace when the mapping drops.
//!
//! A driver without a PnP stack has no BUS_INTERFACE_STANDARD, so configuration space is read with
//! HalGetBusDataByOffset, as Intel PCM's Windows driver does (`msrmain.c` in intel/pcm).

use crate::imc::detect::{HostBridge, MCHBAR_OFFSET, PCI_ID_OFFSET};
use crate::imc::models::{MAX_COUNTERS, PAGE_SIZE, PageCounter};
use core::ptr::NonNull;
use windows_sys::Wdk::System::SystemServices::{
    HalGetBusDataByOffset, MmMapIoSpaceEx, MmUnmapIoSpace, PAGE_NOCACHE, PAGE_READONLY, PCIConfiguration,
};

/// One configuration DWORD of bus 0, device 0, function 0 at `offset`, or all ones (what PCI returns
/// for a missing function) if the read returned fewer than 4 bytes. HalGetBusDataByOffset: IRQL <=
/// DISPATCH_LEVEL; BusNumber 0 is segment 0 bus 0; SlotNumber is a PCI_SLOT_NUMBER, device 0
/// function 0 being 0 (Learn, "HalGetBusDataByOffset function (ntddk.h)").
fn config_dword(offset: u32) -> u32 {
    let mut value = u32::MAX;
    // SAFETY: the buffer is a local of exactly the 4 bytes asked for; PCIConfiguration is the one
    // BusDataType the routine supports.
    let read = unsafe {
        HalGetBusDataByOffset(
            PCIConfiguration,
            0,
            0,
            (&raw mut value).cast(),
            offset,
            size_of::<u32>() as u32,
        )
    };
    if read as usize == size_of::<u32>() { value } else { u32::MAX }
}

/// The host bridge's DWORDs detection needs: its IDs and MCHBAR's two halves.
pub fn read_host_bridge() -> HostBridge {
    HostBridge {
        id: config_dword(PCI_ID_OFFSET),
        mchbar_low: config_dword(MCHBAR_OFFSET),
        mchbar_high: config_dword(MCHBAR_OFFSET + 4),
    }
}

/// One controller's counter page, mapped read-only and uncached. Only the counters it was mapped
/// for can be read, each with a volatile load of its width; nothing is ever stored to it.
pub struct MappedPage {
    base: NonNull<u8>,
    counters: [Option<PageCounter>; MAX_COUNTERS],
}

// SAFETY: the mapping is system address space, valid on every processor until dropped; reads are
// volatile loads of device registers, which any processor may make at once.
unsafe impl Send for MappedPage {}
// SAFETY: as above: `&MappedPage` only loads.
unsafe impl Sync for MappedPage {}

/// Whether `counter` is a load this page can make: a 4- or 8-byte register, aligned to its size and
/// within the page.
fn in_page(counter: &PageCounter) -> bool {
    let bytes = match counter.width {
        32 => 4,
        64 => 8,
        _ => return false,
    };
    let offset = u64::from(counter.offset_in_page);
    offset.is_multiple_of(bytes) && offset + bytes <= PAGE_SIZE
}

impl MappedPage {
    /// Maps the page at `physical` (page-aligned) for `counters`, with MmMapIoSpaceEx(PAGE_READONLY |
    /// PAGE_NOCACHE) (Learn, "MmMapIoSpaceEx function (wdm.h)": IRQL <= DISPATCH_LEVEL, NULL on
    /// failure). `None` if the page is misaligned, a counter is not a load within it, or the mapping
    /// failed.
    pub fn map(physical: u64, counters: &[Option<PageCounter>; MAX_COUNTERS]) -> Option<Self> {
        if !physical.is_multiple_of(PAGE_SIZE) || !counters.iter().flatten().all(in_page) {
            return None;
        }
        // SAFETY: maps device memory read-only and uncached; the address comes from MCHBAR as
        // detection accepted it (enabled, non-zero, page-aligned, below 2^52).
        let base =
            unsafe { MmMapIoSpaceEx(physical as i64, PAGE_SIZE as usize, PAGE_READONLY | PAGE_NOCACHE) };
        Some(MappedPage { base: NonNull::new(base.cast())?, counters: *counters })
    }

    /// Counter `index` of the page's list: a volatile load of its width at its offset. `None` for an
    /// index the list does not fill.
    #[inline(always)]
    pub fn load(&self, index: usize) -> Option<u64> {
        let counter = self.counters.get(index).copied().flatten()?;
        // SAFETY: `map` checked the offset lies within the mapped page.
        let address = unsafe { self.base.as_ptr().add(usize::from(counter.offset_in_page)) };
        // A load of the register's own width, never a store (Linux `snb_uncore_imc_read_counter`
        // reads the back-to-back 32-bit counters with 32-bit loads).
        let value = if counter.width == 64 {
            // SAFETY: `map` checked the register is 8 bytes, aligned, within the page, which stays
            // mapped until drop.
            unsafe { address.cast::<u64>().read_volatile() }
        } else {
            // SAFETY: as above, for a 4-byte register.
            u64::from(unsafe { address.cast::<u32>().read_volatile() })
        };
        Some(value)
    }
}

impl Drop for MappedPage {
    fn drop(&mut self) {
        // SAFETY: the address and size MmMapIoSpaceEx mapped; nothing reads the page after this (the
        // page is dropped only by its owner, which no reader borrows any more).
        unsafe { MmUnmapIoSpace(self.base.as_ptr().cast_const().cast(), PAGE_SIZE as usize) };
    }
}
