//! Fault: a spin lock taken in the overflow handler. DriverEntry owns the PMU through
//! HalAllocateHardwareCounters with an Overflow descriptor, programs fixed counter 0 (instructions
//! retired) with its PMI bit on the current processor, and the handler, which the HAL calls at
//! PROFILE_LEVEL, takes and releases an ordinary spin lock (allowed only up to DISPATCH_LEVEL; at
//! PROFILE_LEVEL it can deadlock against a holder this interrupt interrupted).
#![no_std]

#[path = "../../kernel.rs"]
mod kernel;

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use kernel::*;

const IA32_FIXED_CTR0: u32 = 0x309;
const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;
const RESOURCE_TYPE_SINGLE: u32 = 0;
const RESOURCE_TYPE_OVERFLOW: u32 = 3;

/// PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR: Type, Flags, then a union of 16 bytes holding a pointer.
#[repr(C)]
struct Descriptor {
    kind: u32,
    flags: u32,
    u: [u64; 2],
}

/// PHYSICAL_COUNTER_RESOURCE_LIST with two descriptors.
#[repr(C)]
struct ResourceList {
    count: u32,
    descriptors: [Descriptor; 2],
}

static HANDLE: AtomicUsize = AtomicUsize::new(0);
static mut LOCK: KSpinLock = 0;
static OVERFLOWS: AtomicU64 = AtomicU64::new(0);

/// The PHYSICAL_COUNTER_OVERFLOW_HANDLER: runs at PROFILE_LEVEL.
extern "system" fn overflow_handler(_bits: u64, _handle: usize) {
    // The fault: an ordinary spin lock at PROFILE_LEVEL.
    // SAFETY: a KSPIN_LOCK initialised to 0 that lives as long as the driver.
    unsafe {
        let old = KeAcquireSpinLockRaiseToDpc(&raw mut LOCK);
        KeReleaseSpinLock(&raw mut LOCK, old);
    }
    // After the release, so that it is a call (with a return address in the driver), not a tail jump.
    OVERFLOWS.fetch_add(1, Ordering::Relaxed);
}

/// # Safety
/// Called by the I/O manager with a valid driver object.
#[unsafe(no_mangle)]
#[unsafe(link_section = "INIT")]
pub unsafe extern "system" fn DriverEntry(driver: *mut u8, _registry_path: *const u8) -> NtStatus {
    let list = ResourceList {
        count: 2,
        descriptors: [
            Descriptor { kind: RESOURCE_TYPE_SINGLE, flags: 0, u: [32, 0] },
            Descriptor {
                kind: RESOURCE_TYPE_OVERFLOW,
                flags: 0,
                u: [overflow_handler as *const () as u64, 0],
            },
        ],
    };
    let mut handle = 0usize;
    // SAFETY: PASSIVE_LEVEL; a valid resource list and handle output.
    let status =
        unsafe { HalAllocateHardwareCounters(core::ptr::null(), 0, (&raw const list).cast(), &mut handle) };
    if status != STATUS_SUCCESS {
        return status;
    }
    HANDLE.store(handle, Ordering::Relaxed);
    // Fixed counter 0: OS and USR counting, PMI on overflow; globally enabled.
    // SAFETY: the driver owns the PMU; architectural perfmon MSRs.
    unsafe {
        wrmsr(IA32_FIXED_CTR0, 0);
        wrmsr(IA32_FIXED_CTR_CTRL, 0xB);
        // Read-modify-write: the general-purpose enables stay at their power-on 1, as the HAL expects.
        wrmsr(IA32_PERF_GLOBAL_CTRL, rdmsr(IA32_PERF_GLOBAL_CTRL) | 1 << 32);
        set_unload(driver, unload);
    }
    STATUS_SUCCESS
}

unsafe extern "system" fn unload(_driver: *mut u8) {
    // SAFETY: still the owner; then the counters go back to the HAL.
    unsafe {
        wrmsr(IA32_PERF_GLOBAL_CTRL, rdmsr(IA32_PERF_GLOBAL_CTRL) & !(1 << 32));
        wrmsr(IA32_FIXED_CTR_CTRL, 0);
        wrmsr(IA32_FIXED_CTR0, 0);
        HalFreeHardwareCounters(HANDLE.load(Ordering::Relaxed));
    }
}
