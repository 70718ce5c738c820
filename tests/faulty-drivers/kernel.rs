//! What every faulty driver shares (each includes this file with `#[path]`): the kernel imports, bound by
//! raw-dylib to ntoskrnl.exe and HAL.dll as pmupcw's are, the runtime symbols the WDK would supply, a
//! panic handler that bug-checks, and the DRIVER_OBJECT field they set.
#![allow(dead_code)]

use core::ffi::c_void;

pub type NtStatus = i32;
pub const STATUS_SUCCESS: NtStatus = 0;
pub const STATUS_INSUFFICIENT_RESOURCES: NtStatus = 0xC000_009A_u32 as i32;

pub const POOL_FLAG_NON_PAGED: u64 = 0x40;
pub const DISPATCH_LEVEL: u64 = 2;

/// A KSPIN_LOCK.
pub type KSpinLock = usize;

#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "system" {
    pub fn ExAllocatePool2(flags: u64, size: usize, tag: u32) -> *mut u8;
    pub fn ExFreePoolWithTag(pointer: *mut u8, tag: u32);
    pub fn KeBugCheckEx(code: u32, p1: usize, p2: usize, p3: usize, p4: usize) -> !;
    pub fn KeAcquireSpinLockRaiseToDpc(lock: *mut KSpinLock) -> u8;
    pub fn KeReleaseSpinLock(lock: *mut KSpinLock, new_irql: u8);
}

#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "C" {
    // core's code may call these.
    pub fn memcpy(dest: *mut c_void, src: *const c_void, count: usize) -> *mut c_void;
    pub fn memset(dest: *mut c_void, value: i32, count: usize) -> *mut c_void;
}

#[link(name = "HAL.dll", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "system" {
    pub fn HalAllocateHardwareCounters(
        affinity: *const c_void,
        group_count: u32,
        resources: *const c_void,
        handle: *mut usize,
    ) -> NtStatus;
    pub fn HalFreeHardwareCounters(handle: usize) -> NtStatus;
}

/// Marks the image as using floating point; MSVC-targeted code generation may reference it.
#[unsafe(no_mangle)]
#[used]
pub static _fltused: i32 = 0;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: bug-checking is always allowed; "FLTY" says which kind of driver it was.
    unsafe { KeBugCheckEx(u32::from_be_bytes(*b"FLTY"), 0, 0, 0, 0) }
}

/// Offset of DRIVER_OBJECT.DriverUnload on x64.
const DRIVER_UNLOAD_OFFSET: usize = 0x68;

/// Sets the driver object's DriverUnload.
///
/// # Safety
/// `driver` is the DRIVER_OBJECT DriverEntry received.
pub unsafe fn set_unload(driver: *mut u8, unload: unsafe extern "system" fn(*mut u8)) {
    // SAFETY: DriverUnload is a pointer-sized field of the driver object, at this offset on x64.
    unsafe { driver.add(DRIVER_UNLOAD_OFFSET).cast::<usize>().write(unload as usize) };
}

/// `wrmsr`.
///
/// # Safety
/// Kernel mode; the MSR must exist and accept the value.
#[inline(always)]
pub unsafe fn wrmsr(msr: u32, value: u64) {
    // SAFETY: by the contract.
    unsafe {
        core::arch::asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
            options(nostack, preserves_flags))
    };
}

/// Sets the IRQL with `mov cr8` (KeRaiseIrql / KeLowerIrql inline on x64), returning the previous one.
///
/// # Safety
/// Kernel mode, with the IRQL rules of the code that follows.
#[inline(always)]
pub unsafe fn set_irql(irql: u64) -> u64 {
    let previous: u64;
    // SAFETY: by the contract.
    unsafe {
        core::arch::asm!("mov {previous}, cr8", "mov cr8, {irql}", previous = out(reg) previous,
            irql = in(reg) irql, options(nostack, preserves_flags))
    };
    previous
}
