//! Not faulty: a well-behaved probe of the kernel services pmupcw does not use but a driver of its kind
//! may (DPCs, thread affinity, KeGetCurrentThread), so that the double's models of them are tested on a
//! real image. DriverEntry checks each result itself and fails with 0xE00000nn (nn: the step) on the
//! first wrong one:
//! 1. KeGetCurrentThread (`gs:[0x188]`) is a thread object;
//! 2. one DPC per processor, each targeted with KeSetTargetProcessorDpcEx and queued with
//!    KeInsertQueueDpc (TRUE), runs on its processor at DISPATCH_LEVEL with its arguments, by the time
//!    KeFlushQueuedDpcs returns; a processor that does not exist is STATUS_INVALID_PARAMETER;
//! 3. KeSetSystemGroupAffinityThread to the last processor moves the thread there (`gs:[0x1a4]` and
//!    KeGetCurrentProcessorNumberEx agree), and KeRevertToUserGroupAffinityThread brings it back;
//! 4. in a system thread, KeGetCurrentThread is the object its handle refers to.
//!
//! It then prints one summary line with DbgPrintEx and returns STATUS_SUCCESS.
#![no_std]

#[path = "../../kernel.rs"]
mod kernel;

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use kernel::*;

/// Most processors probed (the double's largest topology).
const MAX_PROCESSORS: usize = 128;
const TAG: u32 = u32::from_le_bytes(*b"Prob");
const ARGUMENT: usize = 0x5EED;
const DPC_SIZE: usize = core::mem::size_of::<Kdpc>();
const SYNCHRONIZE: u32 = 0x0010_0000;
const THREAD_ALL_ACCESS: u32 = 0x001F_FFFF;
const DPFLTR_IHVDRIVER_ID: u32 = 77;
const DPFLTR_ERROR_LEVEL: u32 = 0;

/// Per processor index: (IRQL << 16) | (processor the DPC ran on + 1), 0 until it ran.
static SEEN: [AtomicU32; MAX_PROCESSORS] = [const { AtomicU32::new(0) }; MAX_PROCESSORS];
static THREAD_SEEN: AtomicUsize = AtomicUsize::new(0);

fn failed(step: u32) -> NtStatus {
    // SAFETY: a NUL-terminated format whose one %u is the u32 passed.
    unsafe {
        DbgPrintEx(DPFLTR_IHVDRIVER_ID, DPFLTR_ERROR_LEVEL, c"probe: step %u failed\n".as_ptr().cast(), step)
    };
    (0xE000_0000u32 | step) as NtStatus
}

/// The DPC routine: records where and at which IRQL it ran, if queued with [`ARGUMENT`].
unsafe extern "system" fn record_processor(
    _dpc: *mut Kdpc,
    context: usize,
    argument1: usize,
    _argument2: usize,
) {
    if argument1 == ARGUMENT && context < MAX_PROCESSORS {
        let seen = ((current_irql() as u32) << 16) | (current_processor_index() + 1);
        SEEN[context].store(seen, Ordering::SeqCst);
    }
}

unsafe extern "system" fn thread_start(_context: usize) {
    THREAD_SEEN.store(current_thread(), Ordering::SeqCst);
    // SAFETY: a system thread at PASSIVE_LEVEL ends itself.
    unsafe { PsTerminateSystemThread(STATUS_SUCCESS) };
}

/// Step 2: one DPC per processor.
fn dpcs_run_on_their_processors(count: u32) -> Result<(), u32> {
    // SAFETY: PASSIVE_LEVEL; non-paged pool for `count` KDPCs.
    let dpcs = unsafe { ExAllocatePool2(POOL_FLAG_NON_PAGED, count as usize * DPC_SIZE, TAG) }.cast::<Kdpc>();
    if dpcs.is_null() {
        return Err(20);
    }
    let mut result = Ok(());
    for index in 0..count {
        // SAFETY: `dpcs` holds `count` KDPCs, resident until freed below after KeFlushQueuedDpcs.
        let dpc = unsafe { dpcs.add(index as usize) };
        let mut number = ProcessorNumber::default();
        // SAFETY: valid outputs and objects; any IRQL.
        unsafe {
            if KeGetProcessorNumberFromIndex(index, &mut number) != STATUS_SUCCESS {
                result = Err(21);
                break;
            }
            KeInitializeDpc(dpc, record_processor, index as usize);
            if KeSetTargetProcessorDpcEx(dpc, &number) != STATUS_SUCCESS {
                result = Err(22);
                break;
            }
            if KeInsertQueueDpc(dpc, ARGUMENT, 0) != 1 {
                result = Err(23);
                break;
            }
        }
    }
    // SAFETY: PASSIVE_LEVEL.
    unsafe { KeFlushQueuedDpcs() };
    if result.is_ok() {
        let missing = ProcessorNumber { group: 0x7FFF, number: 0, reserved: 0 };
        // SAFETY: an initialised KDPC (no longer queued) and a valid PROCESSOR_NUMBER.
        if unsafe { KeSetTargetProcessorDpcEx(dpcs, &missing) } != STATUS_INVALID_PARAMETER {
            result = Err(24);
        }
    }
    for index in 0..count {
        if result.is_ok()
            && SEEN[index as usize].load(Ordering::SeqCst) != ((DISPATCH_LEVEL as u32) << 16) | (index + 1)
        {
            result = Err(25);
        }
    }
    // SAFETY: allocated above with this tag; no DPC is queued or running any more (flushed).
    unsafe { ExFreePoolWithTag(dpcs.cast(), TAG) };
    result
}

/// Step 3: the thread moves to the last processor and back.
fn affinity_moves_the_thread(count: u32) -> Result<u32, u32> {
    let home = current_processor_index();
    let last = count - 1;
    let mut number = ProcessorNumber::default();
    // SAFETY: a valid output.
    if unsafe { KeGetProcessorNumberFromIndex(last, &mut number) } != STATUS_SUCCESS {
        return Err(30);
    }
    let affinity = GroupAffinity { mask: 1 << number.number, group: number.group, reserved: [0; 3] };
    let mut previous = GroupAffinity::default();
    // SAFETY: PASSIVE_LEVEL; valid GROUP_AFFINITY input and output.
    unsafe { KeSetSystemGroupAffinityThread(&affinity, &mut previous) };
    let mut now = ProcessorNumber::default();
    // SAFETY: a valid output.
    let index = unsafe { KeGetCurrentProcessorNumberEx(&mut now) };
    let moved = current_processor_index() == last && index == last && now == number;
    // SAFETY: `previous` as KeSetSystemGroupAffinityThread wrote it.
    unsafe { KeRevertToUserGroupAffinityThread(&previous) };
    if !moved {
        return Err(31);
    }
    if current_processor_index() != home {
        return Err(32);
    }
    Ok(last)
}

/// Step 4: KeGetCurrentThread in a system thread is its thread object.
fn system_thread_is_its_kthread(entry_thread: usize) -> Result<(), u32> {
    let mut handle = 0usize;
    // SAFETY: PASSIVE_LEVEL; a valid handle output and start routine.
    let status = unsafe {
        PsCreateSystemThread(
            &mut handle,
            THREAD_ALL_ACCESS,
            core::ptr::null(),
            0,
            core::ptr::null_mut(),
            thread_start,
            0,
        )
    };
    if status != STATUS_SUCCESS {
        return Err(40);
    }
    let mut object = 0usize;
    // SAFETY: the handle just created; a valid output.
    let status = unsafe {
        ObReferenceObjectByHandle(
            handle,
            SYNCHRONIZE,
            core::ptr::null(),
            0,
            &mut object,
            core::ptr::null_mut(),
        )
    };
    // SAFETY: the handle is ours to close.
    unsafe { ZwClose(handle) };
    if status != STATUS_SUCCESS {
        return Err(41);
    }
    // SAFETY: a referenced thread object; PASSIVE_LEVEL, no timeout.
    let waited = unsafe { KeWaitForSingleObject(object, 0, 0, 0, core::ptr::null()) };
    let seen = THREAD_SEEN.load(Ordering::SeqCst);
    // SAFETY: the reference taken above.
    unsafe { ObfDereferenceObject(object) };
    if waited != STATUS_SUCCESS || seen != object || seen == entry_thread {
        return Err(42);
    }
    Ok(())
}

/// # Safety
/// Called by the I/O manager with a valid driver object.
#[unsafe(no_mangle)]
#[unsafe(link_section = "INIT")]
pub unsafe extern "system" fn DriverEntry(driver: *mut u8, _registry_path: *const u8) -> NtStatus {
    let entry_thread = current_thread();
    if entry_thread == 0 {
        return failed(1);
    }
    // SAFETY: any IRQL.
    let count = unsafe { KeQueryActiveProcessorCountEx(ALL_PROCESSOR_GROUPS) };
    if count == 0 || count as usize > MAX_PROCESSORS {
        return failed(2);
    }
    if let Err(step) = dpcs_run_on_their_processors(count) {
        return failed(step);
    }
    let last = match affinity_moves_the_thread(count) {
        Ok(last) => last,
        Err(step) => return failed(step),
    };
    if let Err(step) = system_thread_is_its_kthread(entry_thread) {
        return failed(step);
    }
    // SAFETY: a NUL-terminated format whose two %u are the u32s passed.
    unsafe {
        DbgPrintEx(
            DPFLTR_IHVDRIVER_ID,
            DPFLTR_ERROR_LEVEL,
            c"probe: %u DPCs ran on their processors at DISPATCH_LEVEL; affinity reached processor %u; KeGetCurrentThread is the system thread's object\n"
                .as_ptr()
                .cast(),
            count,
            last,
        );
        set_unload(driver, unload);
    }
    STATUS_SUCCESS
}

unsafe extern "system" fn unload(_driver: *mut u8) {}
