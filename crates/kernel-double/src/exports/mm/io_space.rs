//! MmMapIoSpaceEx and MmUnmapIoSpace: device memory mapped for the driver, which here is the memory
//! controller's registers behind MCHBAR and nothing else (`crate::platform::mmio` serves the page).

use super::super::call::enter;
use crate::cpu::DISPATCH_LEVEL;
use crate::platform;

/// Protect's flags (winnt.h).
pub const PAGE_READONLY: u32 = 0x02;
pub const PAGE_READWRITE: u32 = 0x04;
pub const PAGE_EXECUTE: u32 = 0x10;
pub const PAGE_EXECUTE_READ: u32 = 0x20;
pub const PAGE_EXECUTE_READWRITE: u32 = 0x40;
pub const PAGE_NOCACHE: u32 = 0x200;
pub const PAGE_WRITECOMBINE: u32 = 0x400;

/// `PVOID MmMapIoSpaceEx(PHYSICAL_ADDRESS PhysicalAddress, SIZE_T NumberOfBytes, ULONG Protect)`:
/// IRQL <= DISPATCH_LEVEL. NumberOfBytes greater than zero; Protect exactly one of PAGE_READONLY,
/// PAGE_READWRITE, PAGE_EXECUTE, PAGE_EXECUTE_READ, PAGE_EXECUTE_READWRITE, with at most one of
/// PAGE_NOCACHE and PAGE_WRITECOMBINE; returns the virtual address of PhysicalAddress, or NULL
/// (Learn, <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-mmmapiospaceex>).
/// The double has device memory only where the platform has a memory controller: a range outside it,
/// or any range while MCHBAR is disabled or the bridge's device ID is unknown, is a violation and
/// NULL. A mapping without PAGE_NOCACHE is a violation (a cached view of registers reads stale
/// counts) but is made, as Windows makes it.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn mm_map_io_space_ex(physical: i64, bytes: usize, protect: u32) -> *mut u8 {
    let call = enter("MmMapIoSpaceEx", DISPATCH_LEVEL);
    if bytes == 0 {
        call.violation("NumberOfBytes 0".into());
        return std::ptr::null_mut();
    }
    let access = protect & !(PAGE_NOCACHE | PAGE_WRITECOMBINE);
    let valid = [PAGE_READONLY, PAGE_READWRITE, PAGE_EXECUTE, PAGE_EXECUTE_READ, PAGE_EXECUTE_READWRITE];
    if !valid.contains(&access)
        || protect & (PAGE_NOCACHE | PAGE_WRITECOMBINE) == PAGE_NOCACHE | PAGE_WRITECOMBINE
    {
        call.violation(format!("Protect {protect:#x} is not one access flag with at most one cache flag"));
        return std::ptr::null_mut();
    }
    if let Err(why) = platform::mmio::locate(platform::current(), physical as u64, bytes as u64) {
        call.violation(why);
        return std::ptr::null_mut();
    }
    if protect & PAGE_NOCACHE == 0 {
        call.violation(format!(
            "Protect {protect:#x} maps device registers without PAGE_NOCACHE: the processor may cache them"
        ));
    }
    platform::mmio::map(physical as u64, bytes, protect)
}

/// `VOID MmUnmapIoSpace(PVOID BaseAddress, SIZE_T NumberOfBytes)`: IRQL <= DISPATCH_LEVEL.
/// BaseAddress is what MmMapIoSpaceEx returned and NumberOfBytes what was mapped (Learn,
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-mmunmapiospace>); anything
/// else is a violation and unmaps nothing.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn mm_unmap_io_space(base: *mut u8, bytes: usize) {
    let call = enter("MmUnmapIoSpace", DISPATCH_LEVEL);
    if let Err(why) = platform::mmio::unmap(base as usize, bytes) {
        call.violation(why);
    }
}
