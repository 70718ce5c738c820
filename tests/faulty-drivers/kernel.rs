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

/// `rdmsr`.
///
/// # Safety
/// Kernel mode; the MSR must exist.
#[inline(always)]
pub unsafe fn rdmsr(msr: u32) -> u64 {
    let (low, high): (u32, u32);
    // SAFETY: by the contract.
    unsafe {
        core::arch::asm!("rdmsr", in("ecx") msr, out("eax") low, out("edx") high,
            options(nostack, preserves_flags))
    };
    u64::from(high) << 32 | u64::from(low)
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

/// PROCESSOR_NUMBER.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessorNumber {
    pub group: u16,
    pub number: u8,
    pub reserved: u8,
}

/// GROUP_AFFINITY.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct GroupAffinity {
    pub mask: u64,
    pub group: u16,
    pub reserved: [u16; 3],
}

/// KDPC: opaque, 0x40 bytes, pointer-aligned.
#[repr(C, align(8))]
pub struct Kdpc(pub [u8; 0x40]);

impl Kdpc {
    pub const fn new() -> Kdpc {
        Kdpc([0; 0x40])
    }
}

/// PKDEFERRED_ROUTINE.
pub type DeferredRoutine = unsafe extern "system" fn(*mut Kdpc, usize, usize, usize);
/// PKSTART_ROUTINE.
pub type StartRoutine = unsafe extern "system" fn(usize);

pub const ALL_PROCESSOR_GROUPS: u16 = 0xFFFF;
pub const STATUS_INVALID_PARAMETER: NtStatus = 0xC000_000D_u32 as i32;

#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "system" {
    pub fn KeQueryActiveProcessorCountEx(group: u16) -> u32;
    pub fn KeGetProcessorNumberFromIndex(index: u32, number: *mut ProcessorNumber) -> NtStatus;
    pub fn KeGetCurrentProcessorNumberEx(number: *mut ProcessorNumber) -> u32;
    pub fn KeInitializeDpc(dpc: *mut Kdpc, routine: DeferredRoutine, context: usize);
    pub fn KeSetTargetProcessorDpcEx(dpc: *mut Kdpc, number: *const ProcessorNumber) -> NtStatus;
    pub fn KeInsertQueueDpc(dpc: *mut Kdpc, argument1: usize, argument2: usize) -> u8;
    pub fn KeRemoveQueueDpc(dpc: *mut Kdpc) -> u8;
    pub fn KeFlushQueuedDpcs();
    pub fn KeSetSystemGroupAffinityThread(affinity: *const GroupAffinity, previous: *mut GroupAffinity);
    pub fn KeRevertToUserGroupAffinityThread(previous: *const GroupAffinity);
    pub fn PsCreateSystemThread(
        handle: *mut usize,
        access: u32,
        attributes: *const u8,
        process: usize,
        client_id: *mut u8,
        start: StartRoutine,
        context: usize,
    ) -> NtStatus;
    pub fn PsTerminateSystemThread(status: NtStatus) -> NtStatus;
    pub fn ObReferenceObjectByHandle(
        handle: usize,
        access: u32,
        object_type: *const u8,
        mode: i8,
        object: *mut usize,
        information: *mut u8,
    ) -> NtStatus;
    pub fn ObfDereferenceObject(object: usize) -> isize;
    pub fn ZwClose(handle: usize) -> NtStatus;
    pub fn KeWaitForSingleObject(
        object: usize,
        reason: u32,
        mode: i8,
        alertable: u8,
        timeout: *const i64,
    ) -> NtStatus;
}

#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "C" {
    pub fn DbgPrintEx(component: u32, level: u32, format: *const u8, ...) -> u32;
}

/// KeGetCurrentProcessorIndex (wdm.h): the KPRCB's Number at `gs:[0x1a4]`.
#[inline(always)]
pub fn current_processor_index() -> u32 {
    let index: u32;
    // SAFETY: in kernel mode GS is the KPCR, and 0x1a4 is the KPRCB's Number.
    unsafe {
        core::arch::asm!("mov {0:e}, gs:[0x1a4]", out(reg) index, options(nostack, readonly, preserves_flags))
    };
    index
}

/// KeGetCurrentThread (wdm.h): the KPRCB's CurrentThread at `gs:[0x188]`.
#[inline(always)]
pub fn current_thread() -> usize {
    let thread: usize;
    // SAFETY: in kernel mode GS is the KPCR, and 0x188 is the KPRCB's CurrentThread.
    unsafe {
        core::arch::asm!("mov {0}, gs:[0x188]", out(reg) thread, options(nostack, readonly, preserves_flags))
    };
    thread
}

/// KeGetCurrentIrql (wdm.h on x64): `mov cr8`.
#[inline(always)]
pub fn current_irql() -> u64 {
    let irql: u64;
    // SAFETY: reading cr8 in kernel mode has no side effects.
    unsafe { core::arch::asm!("mov {0}, cr8", out(reg) irql, options(nostack, nomem, preserves_flags)) };
    irql
}
