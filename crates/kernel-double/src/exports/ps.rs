//! System threads as host threads, kernel handles and object reference counts.
//!
//! PsCreateSystemThread starts a host thread that runs the start routine on its own virtual processor
//! (round robin over the topology) at PASSIVE_LEVEL with its own KPCR. PsTerminateSystemThread ends it
//! by returning to the host frame that called the start routine (the driver's frames are abandoned, as
//! on Windows). The thread object is signalled when the thread ends, so KeWaitForSingleObject on it
//! waits for the end. Handles (ZwClose) and references (ObReferenceObjectByHandle, ObfDereferenceObject)
//! are counted, and the object is freed when the last one goes. The thread object is also the thread's
//! KTHREAD: `gs:[0x188]` (KeGetCurrentThread) gives it inside the thread.

use super::call::enter;
use super::faults::FaultPlan;
use super::ke::{DispatcherHeader, THREAD_OBJECT, signal_and};
use crate::cpu::{self, DISPATCH_LEVEL, PASSIVE_LEVEL, topology};
use crate::poison::IgnorePoison;
use crate::status::*;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// What tests and tools use to steer and inspect this part of the double; the driver never calls it.
pub mod control;

/// A thread object: a dispatcher header first, so waits see it as one.
#[repr(C)]
struct ThreadObject {
    header: DispatcherHeader,
    id: u32,
}

impl ThreadObject {
    fn new(id: u32) -> ThreadObject {
        let header = DispatcherHeader {
            kind: THREAD_OBJECT,
            signalling: 0,
            size: 0,
            reserved: 0,
            signal_state: 0,
            wait_list: [0; 2],
        };
        ThreadObject { header, id }
    }
}

/// The KTHREAD of a host thread that is not a system thread of the driver's (a test's thread, standing
/// for the I/O manager's or perflib's): a thread object that is never signalled and never freed, and
/// holds no reference the driver could drop.
pub(crate) fn host_thread_object() -> usize {
    Box::into_raw(Box::new(ThreadObject::new(u32::MAX))) as usize
}

#[derive(Default)]
struct Objects {
    /// Thread object address → references (handles included).
    references: HashMap<usize, usize>,
    /// Kernel handle → thread object address.
    handles: HashMap<usize, usize>,
    next_handle: usize,
}

static OBJECTS: Mutex<Option<Objects>> = Mutex::new(None);
static LIVE_THREADS: AtomicUsize = AtomicUsize::new(0);

/// The host name of every system thread's thread starts with this (the ke exports tell a driver
/// thread's waits from a test's by it).
pub(crate) const SYSTEM_THREAD_NAME: &str = "system-thread-";

/// System threads started and not yet ended.
pub(crate) fn live_threads() -> usize {
    LIVE_THREADS.load(Ordering::SeqCst)
}
static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);
static CREATE_FAULTS: FaultPlan = FaultPlan::new();

static REFERENCE_FAULTS: FaultPlan = FaultPlan::new();

fn with_objects<R>(f: impl FnOnce(&mut Objects) -> R) -> R {
    f(OBJECTS.lock().ignore_poison().get_or_insert_with(Objects::default))
}

/// Drops one reference to `object`, freeing it with the last.
fn release(object: usize) {
    let free = with_objects(|objects| {
        let references = objects.references.get_mut(&object).expect("release of an unknown object");
        *references -= 1;
        if *references == 0 {
            objects.references.remove(&object);
            true
        } else {
            false
        }
    });
    if free {
        // SAFETY: the object was Box-leaked by ps_create_system_thread and this was its last reference.
        drop(unsafe { Box::from_raw(object as *mut ThreadObject) });
    }
}

thread_local! {
    /// Where PsTerminateSystemThread resumes: the stack pointer saved by kd_run_system_thread.
    static EXIT_STACK: Cell<usize> = const { Cell::new(0) };
}

// kd_run_system_thread(start, context, &exit_stack) (System V): saves the System V callee-saved
// registers, stores the stack pointer in *exit_stack and calls the Windows x64 start routine with the
// context in rcx and a 32-byte home area; returns 0 when the routine returns. kd_exit_system_thread(sp)
// restores that stack pointer and returns 1 from kd_run_system_thread, abandoning the frames above.
core::arch::global_asm!(
    ".pushsection .text.kernel_double_threads,\"ax\",@progbits",
    ".p2align 4",
    ".globl kd_run_system_thread",
    "kd_run_system_thread:",
    "push rbp",
    "push rbx",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "mov [rdx], rsp",
    "sub rsp, 40",
    "mov rcx, rsi",
    "call rdi",
    "add rsp, 40",
    "xor eax, eax",
    "jmp 2f",
    ".globl kd_exit_system_thread",
    "kd_exit_system_thread:",
    "mov rsp, rdi",
    "mov eax, 1",
    "2:",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "ret",
    ".popsection",
);

unsafe extern "sysv64" {
    fn kd_run_system_thread(start: usize, context: usize, exit_stack: *mut usize) -> u32;
    fn kd_exit_system_thread(stack: usize) -> !;
}

/// `NTSTATUS PsCreateSystemThread(PHANDLE ThreadHandle, ULONG DesiredAccess, POBJECT_ATTRIBUTES,
/// HANDLE ProcessHandle, PCLIENT_ID, PKSTART_ROUTINE StartRoutine, PVOID StartContext)`: PASSIVE_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "win64" fn ps_create_system_thread(
    handle_out: *mut usize,
    _access: u32,
    _attributes: usize,
    process: usize,
    _client_id: usize,
    start: usize,
    context: usize,
) -> i32 {
    let call = enter("PsCreateSystemThread", PASSIVE_LEVEL);
    let injected = CREATE_FAULTS.next();
    if handle_out.is_null() || start == 0 {
        call.violation("NULL ThreadHandle or StartRoutine".into());
        return STATUS_INVALID_PARAMETER;
    }
    if process != 0 {
        call.violation("a driver's system thread must be created with a NULL ProcessHandle".into());
    }
    if let Some(status) = injected {
        return status;
    }
    let id = NEXT_THREAD.fetch_add(1, Ordering::SeqCst);
    let object = Box::into_raw(Box::new(ThreadObject::new(id))) as usize;
    let handle = with_objects(|objects| {
        objects.next_handle += 4;
        let handle = 0xFFFF_FFFF_8000_0000usize | objects.next_handle;
        objects.handles.insert(handle, object);
        // One reference for the handle, one for the running thread.
        objects.references.insert(object, 2);
        handle
    });
    LIVE_THREADS.fetch_add(1, Ordering::SeqCst);
    let processor = id % topology::processor_count();
    let spawned = std::thread::Builder::new().name(format!("{SYSTEM_THREAD_NAME}{id}")).spawn(move || {
        let kpcr = cpu::enter(processor);
        // KeGetCurrentThread in the thread is the object its handle refers to; it lives while the thread
        // runs (the running thread's reference).
        kpcr.set_current_thread(object);
        // SAFETY: the start routine is the driver's KSTART_ROUTINE, called with its context on a thread
        // with a KPCR at PASSIVE_LEVEL; the exit slot is this thread's own. Returns whether the routine
        // ended with PsTerminateSystemThread (1) or by returning (0); both end the thread.
        EXIT_STACK.with(|slot| unsafe { kd_run_system_thread(start, context, slot.as_ptr()) });
        if kpcr.irql() != PASSIVE_LEVEL {
            crate::violations::record(
                "PsCreateSystemThread",
                None,
                format!("system thread {id} ended at IRQL {}", kpcr.irql()),
            );
        }
        LIVE_THREADS.fetch_sub(1, Ordering::SeqCst);
        // SAFETY: the thread object is alive: the running thread holds a reference, dropped only here,
        // under the dispatcher lock, so a waiter wakes to a consistent reference count.
        unsafe { signal_and(object as *mut DispatcherHeader, || release(object)) };
    });
    if spawned.is_err() {
        LIVE_THREADS.fetch_sub(1, Ordering::SeqCst);
        with_objects(|objects| objects.handles.remove(&handle));
        release(object);
        release(object);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    // SAFETY: checked non-null; the driver's HANDLE output.
    unsafe { handle_out.write(handle) };
    STATUS_SUCCESS
}

/// `NTSTATUS PsTerminateSystemThread(NTSTATUS ExitStatus)`: PASSIVE_LEVEL, from a system thread; does
/// not return.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ps_terminate_system_thread(_status: i32) -> i32 {
    let call = enter("PsTerminateSystemThread", PASSIVE_LEVEL);
    let stack = EXIT_STACK.with(Cell::get);
    if stack == 0 {
        call.violation("called on a thread PsCreateSystemThread did not create".into());
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: `stack` was saved by kd_run_system_thread on this thread, whose frame is still live below
    // the driver's; the frames in between (the driver's and this function's, which owns nothing that
    // needs dropping) are abandoned.
    unsafe { kd_exit_system_thread(stack) }
}

/// `NTSTATUS ObReferenceObjectByHandle(HANDLE, ACCESS_MASK, POBJECT_TYPE, KPROCESSOR_MODE, PVOID *Object,
/// POBJECT_HANDLE_INFORMATION)`: PASSIVE_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ob_reference_object_by_handle(
    handle: usize,
    _access: u32,
    _object_type: usize,
    _mode: i8,
    object_out: *mut usize,
    _information: usize,
) -> i32 {
    let call = enter("ObReferenceObjectByHandle", PASSIVE_LEVEL);
    let injected = REFERENCE_FAULTS.next();
    if object_out.is_null() {
        call.violation("NULL Object".into());
        return STATUS_INVALID_PARAMETER;
    }
    if let Some(status) = injected {
        return status;
    }
    let object = with_objects(|objects| {
        let object = *objects.handles.get(&handle)?;
        *objects.references.get_mut(&object)? += 1;
        Some(object)
    });
    match object {
        Some(object) => {
            // SAFETY: checked non-null; the driver's PVOID output.
            unsafe { object_out.write(object) };
            STATUS_SUCCESS
        }
        None => STATUS_INVALID_HANDLE,
    }
}

/// `LONG_PTR ObfDereferenceObject(PVOID Object)`: IRQL <= DISPATCH_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn obf_dereference_object(object: usize) -> isize {
    let call = enter("ObfDereferenceObject", DISPATCH_LEVEL);
    match super::callback::dereference(object) {
        Some(Ok(left)) => return left as isize,
        Some(Err(())) => {
            call.violation(format!("dereference of callback object {object:#x}, which has no references"));
            return 0;
        }
        None => {}
    }
    let known = with_objects(|objects| objects.references.get(&object).copied());
    match known {
        Some(references) => {
            release(object);
            references as isize - 1
        }
        None => {
            call.violation(format!("dereference of {object:#x}, which has no references"));
            0
        }
    }
}

/// `NTSTATUS ZwClose(HANDLE Handle)`: PASSIVE_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn zw_close(handle: usize) -> i32 {
    let call = enter("ZwClose", PASSIVE_LEVEL);
    if super::registry::close_key(handle) {
        return STATUS_SUCCESS;
    }
    match with_objects(|objects| objects.handles.remove(&handle)) {
        Some(object) => {
            release(object);
            STATUS_SUCCESS
        }
        None => {
            call.violation(format!("close of {handle:#x}, which is not an open handle"));
            STATUS_INVALID_HANDLE
        }
    }
}

/// `NTSTATUS ZwWaitForSingleObject(HANDLE Handle, BOOLEAN Alertable, PLARGE_INTEGER Timeout)`:
/// PASSIVE_LEVEL. Waits on the object behind a kernel handle (here: a system thread, signalled when it
/// ends), with KeWaitForSingleObject's semantics.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn zw_wait_for_single_object(
    handle: usize,
    alertable: u8,
    timeout: *const i64,
) -> i32 {
    let call = enter("ZwWaitForSingleObject", PASSIVE_LEVEL);
    let Some(object) = with_objects(|objects| objects.handles.get(&handle).copied()) else {
        call.violation(format!("wait on {handle:#x}, which is not an open handle"));
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the handle names a live dispatcher object (a thread object this double created); the
    // timeout pointer is the driver's, as KeWaitForSingleObject documents it.
    unsafe { super::ke::ke_wait_for_single_object(object as *mut DispatcherHeader, 0, 0, alertable, timeout) }
}
