//! A driver-owned system thread that does periodic housekeeping at PASSIVE_LEVEL: releasing the PMU
//! after the last query has gone (HalFreeHardwareCounters needs PASSIVE_LEVEL, which a timer DPC is
//! not) and, where counters have no overflow interrupt, polling them often enough that no wrap is
//! missed. One thread, one event, one wait with a timeout: no timer, DPC or work item to tear down.

use super::pool::PoolBox;
use core::ffi::c_void;
use windows_sys::Wdk::Foundation::{KEVENT, OBJECT_ATTRIBUTES};
use windows_sys::Wdk::System::SystemServices::{
    Executive, KeInitializeEvent, KeSetEvent, KeWaitForSingleObject, ObReferenceObjectByHandle,
    ObfDereferenceObject, PsCreateSystemThread, PsTerminateSystemThread,
};
use windows_sys::Win32::Foundation::{HANDLE, NTSTATUS, STATUS_SUCCESS, STATUS_TIMEOUT};
use windows_sys::Win32::System::Kernel::NotificationEvent;

/// OBJ_KERNEL_HANDLE: the thread handle lives in the kernel handle table, out of any process's reach.
const OBJ_KERNEL_HANDLE: u32 = 0x200;
/// SYNCHRONIZE access: enough to wait for the thread to end.
const SYNCHRONIZE: u32 = 0x0010_0000;
/// KernelMode for waits and object references.
const KERNEL_MODE: i8 = 0;

/// Work the thread does.
pub trait Periodic: Sync {
    /// How long to sleep before the next [`Periodic::tick`], in 100 ns units; `None` sleeps until
    /// stopped or woken (see [`Periodic::attach`]).
    fn next_tick(&self) -> Option<u64>;
    /// Runs at PASSIVE_LEVEL on the housekeeping thread.
    fn tick(&self);
    /// Receives the [`Waker`] that makes the thread re-read [`Periodic::next_tick`] at once, when the
    /// thread starts, and `None` before it ends: after `attach(None)` returns, the work must not use
    /// the waker any more.
    fn attach(&self, waker: Option<Waker>);
}

/// Wakes the housekeeping thread so that it re-reads its schedule. Valid until detached (see
/// [`Periodic::attach`]). KeSetEvent: callable at IRQL <= DISPATCH_LEVEL.
pub struct Waker(*const KEVENT);

// SAFETY: a pointer to a kernel event in pool memory, which KeSetEvent may signal from any thread; the
// owner detaches it before the memory is freed.
unsafe impl Send for Waker {}
// SAFETY: as above; `wake` only signals.
unsafe impl Sync for Waker {}

impl Waker {
    pub fn wake(&self) {
        // SAFETY: the event is initialised and alive while the waker is attached (Periodic::attach).
        unsafe { KeSetEvent(self.0.cast_mut(), 0, false) };
    }
}

/// State shared with the thread, in non-paged pool at a fixed address.
struct Shared<W> {
    /// Signalled to stop the thread (notification event: stays signalled).
    stop: KEVENT,
    /// Signalled to make the thread re-read `next_tick` at once.
    wake: KEVENT,
    work: W,
}

/// The running thread. Dropping it stops the thread and waits until it has ended, so the driver image
/// and `W` outlive every instruction the thread runs.
pub struct SystemThread<W: Periodic + 'static> {
    thread: *mut c_void,
    shared: PoolBox<Shared<W>>,
}

// SAFETY: the thread object pointer is a referenced kernel object usable from any thread; W is Sync.
unsafe impl<W: Periodic + Send> Send for SystemThread<W> {}
// SAFETY: as above.
unsafe impl<W: Periodic> Sync for SystemThread<W> {}

impl<W: Periodic + 'static> SystemThread<W> {
    /// Starts a system thread running `work`. PASSIVE_LEVEL.
    pub fn spawn(work: W) -> Result<Self, NTSTATUS> {
        // SAFETY: KEVENT is plain data that KeInitializeEvent initialises below before any use.
        let zeroed_event = || unsafe { core::mem::zeroed::<KEVENT>() };
        let shared = PoolBox::new(Shared { stop: zeroed_event(), wake: zeroed_event(), work })
            .map_err(|_| windows_sys::Win32::Foundation::STATUS_INSUFFICIENT_RESOURCES)?;
        let events = [&shared.stop, &shared.wake];
        for event in events {
            // SAFETY: the events live in pool memory that outlives the thread; initialised once here,
            // before the thread that waits on them exists.
            unsafe { KeInitializeEvent((event as *const KEVENT).cast_mut(), NotificationEvent, false) };
        }
        // SAFETY: a zeroed OBJECT_ATTRIBUTES is valid once Length and Attributes are set
        // (InitializeObjectAttributes with no name, root or security descriptor).
        let mut attributes: OBJECT_ATTRIBUTES = unsafe { core::mem::zeroed() };
        attributes.Length = core::mem::size_of::<OBJECT_ATTRIBUTES>() as u32;
        attributes.Attributes = OBJ_KERNEL_HANDLE;
        shared.work.attach(Some(Waker(&shared.wake)));
        let mut handle: HANDLE = core::ptr::null_mut();
        let context = (&*shared as *const Shared<W>).cast::<c_void>();
        let start: unsafe extern "system" fn(*const c_void) = thread_main::<W>;
        // SAFETY: windows-sys declares PKSTART_ROUTINE without its `PVOID StartContext` parameter; the
        // transmute restores the documented signature (same ABI, one pointer argument).
        let start = unsafe {
            core::mem::transmute::<unsafe extern "system" fn(*const c_void), unsafe extern "system" fn()>(
                start,
            )
        };
        // SAFETY: valid out-pointer and attributes; the start routine and its context (pool memory owned
        // by the returned value, which waits for the thread before freeing it) stay valid.
        let status = unsafe {
            PsCreateSystemThread(
                &mut handle,
                0x001F_FFFF, // THREAD_ALL_ACCESS
                &attributes,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                Some(start),
                context,
            )
        };
        if status < 0 {
            shared.work.attach(None);
            return Err(status);
        }
        let mut thread: *mut c_void = core::ptr::null_mut();
        // SAFETY: `handle` is the kernel handle just created; a NULL object type is allowed for kernel-mode
        // references.
        let status = unsafe {
            ObReferenceObjectByHandle(handle, SYNCHRONIZE, 0, KERNEL_MODE, &mut thread, core::ptr::null_mut())
        };
        if status < 0 {
            // Without a reference the thread cannot be waited for later: stop it now and wait for it
            // through its handle, so it has ended before `shared` (and what its work holds) is freed
            // and before a failed DriverEntry lets the image be unmapped.
            shared.work.attach(None);
            stop(&shared);
            // SAFETY: the kernel handle just created; no timeout: the thread ends once it sees stop.
            unsafe { ntoskrnl_imports::ZwWaitForSingleObject(handle, 0, core::ptr::null()) };
            // SAFETY: the handle is ours and closed once.
            unsafe { ntoskrnl_imports::ZwClose(handle) };
            return Err(status);
        }
        // SAFETY: the handle is ours and closed once; the referenced thread object keeps the thread
        // waitable.
        unsafe { ntoskrnl_imports::ZwClose(handle) };
        Ok(SystemThread { thread, shared })
    }
}

impl<W: Periodic + 'static> Drop for SystemThread<W> {
    fn drop(&mut self) {
        // The work may outlive the thread (it can be shared): it stops using the waker first.
        self.shared.work.attach(None);
        stop(&self.shared);
        // SAFETY: the referenced thread object is signalled when the thread has terminated. After this
        // no code of the thread runs, so `shared` may be freed.
        unsafe { KeWaitForSingleObject(self.thread, Executive, KERNEL_MODE, false, core::ptr::null()) };
        // SAFETY: the reference ObReferenceObjectByHandle took, dropped once.
        unsafe { ObfDereferenceObject(self.thread) };
    }
}

/// Signals stop, then wake, so a thread sleeping on the wake event sees the stop at once.
fn stop<W>(shared: &Shared<W>) {
    // SAFETY: the stop event is initialised and lives as long as `shared`.
    unsafe { KeSetEvent((&shared.stop as *const KEVENT).cast_mut(), 0, false) };
    // SAFETY: as above, the wake event.
    unsafe { KeSetEvent((&shared.wake as *const KEVENT).cast_mut(), 0, false) };
}

/// KSTART_ROUTINE: waits for stop, wake or the next tick, runs ticks, and ends the thread on stop.
unsafe extern "system" fn thread_main<W: Periodic>(context: *const c_void) {
    // SAFETY: the context is the Shared<W> that SystemThread keeps alive until this thread has ended.
    let shared = unsafe { &*context.cast::<Shared<W>>() };
    loop {
        // Relative timeouts are negative, in 100 ns units.
        let timeout = shared.work.next_tick().map(|ticks| -(ticks.min(i64::MAX as u64) as i64));
        let timeout_pointer = timeout.as_ref().map_or(core::ptr::null(), |timeout| timeout as *const i64);
        // SAFETY: both events are initialised; waiting on the stop event first keeps stop responsive.
        let stopped = unsafe {
            KeWaitForSingleObject((&shared.stop as *const KEVENT).cast(), Executive, KERNEL_MODE, false, &0)
        } == STATUS_SUCCESS;
        if stopped {
            break;
        }
        // SAFETY: as above; waking resets the wake event so the next wait blocks again.
        let status: NTSTATUS = unsafe {
            KeWaitForSingleObject(
                (&shared.wake as *const KEVENT).cast(),
                Executive,
                KERNEL_MODE,
                false,
                timeout_pointer,
            )
        };
        if status == STATUS_TIMEOUT {
            shared.work.tick();
        } else {
            // SAFETY: the wake event is initialised; clearing it rearms it.
            unsafe {
                windows_sys::Wdk::System::SystemServices::KeClearEvent(
                    (&shared.wake as *const KEVENT).cast_mut(),
                )
            };
        }
    }
    // SAFETY: ends this system thread; nothing after it runs.
    unsafe { PsTerminateSystemThread(STATUS_SUCCESS) };
}

/// Shared work: the housekeeping thread holds one reference.
impl<W: Periodic + Send> Periodic for super::pool::PoolArc<W> {
    fn next_tick(&self) -> Option<u64> {
        (**self).next_tick()
    }
    fn tick(&self) {
        (**self).tick();
    }
    fn attach(&self, waker: Option<Waker>) {
        (**self).attach(waker);
    }
}
