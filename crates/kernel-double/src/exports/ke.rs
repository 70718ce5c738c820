//! Dispatcher objects (events, and thread objects for waits), KeWaitForSingleObject with timeouts,
//! the processor topology queries and KeIpiGenericCall.
//!
//! Every dispatcher object's state lives in the driver's own memory (DISPATCHER_HEADER.SignalState), as
//! on Windows; one host mutex serialises all of them and one condition variable wakes waiters.

use super::call::enter;
use super::ps;
use crate::cpu::{APC_LEVEL, DISPATCH_LEVEL, HIGH_LEVEL, IPI_LEVEL, pmu, topology};
use crate::poison::IgnorePoison;
use crate::status::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What tests and tools use to steer and inspect this part of the double; the driver never calls it.
pub mod control;

/// DISPATCHER_HEADER's leading fields (x64): Type at 0, SignalState at 4; 0x18 bytes in all.
#[repr(C)]
pub struct DispatcherHeader {
    pub kind: u8,
    pub signalling: u8,
    pub size: u8,
    pub reserved: u8,
    pub signal_state: i32,
    pub wait_list: [usize; 2],
}

pub(crate) const EVENT_NOTIFICATION_OBJECT: u8 = 0;
pub(crate) const EVENT_SYNCHRONIZATION_OBJECT: u8 = 1;
pub(crate) const THREAD_OBJECT: u8 = 6;

static DISPATCHER: Mutex<()> = Mutex::new(());
static SIGNALLED: Condvar = Condvar::new();

pub(crate) fn dispatcher_lock() -> MutexGuard<'static, ()> {
    DISPATCHER.lock().ignore_poison()
}

/// Sets `header`'s SignalState (under the dispatcher lock) and wakes waiters; returns the previous one.
///
/// # Safety
/// `header` must point to a live dispatcher object.
pub(crate) unsafe fn signal(header: *mut DispatcherHeader, state: i32) -> i32 {
    let _guard = dispatcher_lock();
    // SAFETY: live object by the contract; the dispatcher lock serialises state changes.
    let previous = unsafe { std::ptr::replace(&raw mut (*header).signal_state, state) };
    SIGNALLED.notify_all();
    previous
}

/// Signals `header` for good and runs `after` under the dispatcher lock, so that a waiter that returns
/// sees everything `after` did (a thread's end: its last reference dropped).
///
/// # Safety
/// `header` must point to a live dispatcher object; `after` may free it.
pub(crate) unsafe fn signal_and(header: *mut DispatcherHeader, after: impl FnOnce()) {
    let _guard = dispatcher_lock();
    // SAFETY: live object by the contract, serialised by the dispatcher lock.
    unsafe { (*header).signal_state = 1 };
    SIGNALLED.notify_all();
    after();
}

/// `VOID KeInitializeEvent(PRKEVENT Event, EVENT_TYPE Type, BOOLEAN State)`: any IRQL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_initialize_event(event: *mut DispatcherHeader, kind: u32, state: u8) {
    let call = enter("KeInitializeEvent", HIGH_LEVEL);
    if event.is_null() || kind > 1 {
        call.violation(format!("bad event {event:?} or type {kind}"));
        return;
    }
    let _guard = dispatcher_lock();
    // SAFETY: the driver passes a KEVENT (0x18 bytes) it owns.
    unsafe {
        event.write(DispatcherHeader {
            kind: kind as u8,
            signalling: 0,
            size: 6,
            reserved: 0,
            signal_state: i32::from(state != 0),
            wait_list: [0; 2],
        })
    };
}

fn check_event(call: &super::call::Call, event: *mut DispatcherHeader) -> bool {
    // SAFETY: only read if non-null; the driver passes a KEVENT it initialised.
    let kind = unsafe { event.as_ref() }.map(|header| header.kind);
    match kind {
        Some(EVENT_NOTIFICATION_OBJECT | EVENT_SYNCHRONIZATION_OBJECT) => true,
        _ => {
            call.violation(format!("{event:?} is not an initialised event"));
            false
        }
    }
}

/// `LONG KeSetEvent(PRKEVENT Event, KPRIORITY Increment, BOOLEAN Wait)`: IRQL <= DISPATCH_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_set_event(event: *mut DispatcherHeader, _increment: i32, _wait: u8) -> i32 {
    let call = enter("KeSetEvent", DISPATCH_LEVEL);
    if !check_event(&call, event) {
        return 0;
    }
    // SAFETY: checked to be an initialised event.
    unsafe { signal(event, 1) }
}

/// `VOID KeClearEvent(PRKEVENT Event)`: IRQL <= DISPATCH_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_clear_event(event: *mut DispatcherHeader) {
    let call = enter("KeClearEvent", DISPATCH_LEVEL);
    if check_event(&call, event) {
        let _guard = dispatcher_lock();
        // SAFETY: checked to be an initialised event; serialised by the dispatcher lock.
        unsafe { (*event).signal_state = 0 };
    }
}

/// Waits with a non-zero timeout that expired: how often a driver thread woke up on a timer.
static TIMED_OUT_WAITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// 100 ns units from 1601-01-01, where the system time counts from, to 1970-01-01.
const UNIX_EPOCH_100NS: i64 = 116_444_736_000_000_000;

/// 100 ns units since 1601-01-01, the kernel's system time.
fn system_time() -> i64 {
    let since_unix = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let host = HOST_TIME_STOPPED.get().map_or((since_unix.as_nanos() / 100) as i64, |stop| stop.unix);
    UNIX_EPOCH_100NS + host + TIME_ADVANCE.load(Ordering::SeqCst) as i64
}

/// Where the host's part of both clocks stood when [`stop_host_time`] was called.
struct HostTimeStop {
    /// 100 ns units since the first reading of the kernel's clock.
    elapsed: i64,
    /// 100 ns units since 1970.
    unix: i64,
}

static HOST_TIME_STOPPED: OnceLock<HostTimeStop> = OnceLock::new();

/// From now on, for the rest of the process, the kernel's clocks move only by [`advance_time`]: no
/// host time passes between two readings, however loaded the machine, so what a driver thread does on
/// a timer happens at the moments a test chooses. Process-wide, as the scenarios run one per process.
pub(crate) fn stop_host_time() {
    let since_unix = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let elapsed = host_elapsed();
    let _ = HOST_TIME_STOPPED.set(HostTimeStop { elapsed, unix: (since_unix.as_nanos() / 100) as i64 });
}

/// The host's time since the first reading of the kernel's clock (100 ns units), or where it stood
/// when it was stopped.
fn host_elapsed() -> i64 {
    static START: OnceLock<Instant> = OnceLock::new();
    match HOST_TIME_STOPPED.get() {
        Some(stop) => stop.elapsed,
        None => (START.get_or_init(Instant::now).elapsed().as_nanos() / 100) as i64,
    }
}

/// The kernel's clock, in 100 ns units (what KeQueryPerformanceCounter reports at its 10 MHz, and what
/// relative timeouts count): the host's time since the first reading, from one second on so that no
/// reading is 0, plus what tests moved it forward by ([`advance_time`]). A virtual clock: a test can
/// let minutes pass in milliseconds, and every timed wait sees them; after [`stop_host_time`] only
/// those moves count.
pub(crate) fn interrupt_time() -> i64 {
    host_elapsed() + 10_000_000 + TIME_ADVANCE.load(Ordering::SeqCst) as i64
}

/// 100 ns units the clock was moved forward by tests, on top of the host's time.
static TIME_ADVANCE: AtomicU64 = AtomicU64::new(0);

/// Moves the kernel's clock forward by `units` of 100 ns at once (never back), and wakes every timed
/// wait so that those whose timeout has now passed return STATUS_TIMEOUT.
pub(crate) fn advance_time(units: u64) {
    TIME_ADVANCE.fetch_add(units, Ordering::SeqCst);
    let _guard = dispatcher_lock();
    SIGNALLED.notify_all();
}

/// `NTSTATUS KeWaitForSingleObject(PVOID Object, KWAIT_REASON, KPROCESSOR_MODE, BOOLEAN Alertable,
/// PLARGE_INTEGER Timeout)`: IRQL <= APC_LEVEL, or DISPATCH_LEVEL with a zero timeout. Waits on an event
/// (a synchronization event is reset by the satisfied wait) or a thread (signalled when it ends).
/// Returns STATUS_SUCCESS or STATUS_TIMEOUT.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_wait_for_single_object(
    object: *mut DispatcherHeader,
    _reason: u32,
    _mode: i8,
    _alertable: u8,
    timeout: *const i64,
) -> i32 {
    // SAFETY: null or a LARGE_INTEGER the driver passes for the call.
    let timeout = unsafe { timeout.as_ref() }.copied();
    let call = enter("KeWaitForSingleObject", if timeout == Some(0) { DISPATCH_LEVEL } else { APC_LEVEL });
    // SAFETY: read only if non-null; the driver passes a dispatcher object.
    let kind = unsafe { object.as_ref() }.map(|header| header.kind);
    if !matches!(kind, Some(EVENT_NOTIFICATION_OBJECT | EVENT_SYNCHRONIZATION_OBJECT | THREAD_OBJECT)) {
        call.violation(format!("{object:?} is not a dispatcher object this kernel knows"));
        return STATUS_INVALID_PARAMETER;
    }
    // The deadline on the kernel's clock (100 ns units), which tests may move forward.
    let deadline = timeout.map(|timeout| {
        let units =
            if timeout < 0 { timeout.unsigned_abs() } else { (timeout - system_time()).max(0) as u64 };
        (interrupt_time() as u64).saturating_add(units)
    });
    let mut guard = dispatcher_lock();
    let _parked = SystemThreadWait::enter(object, deadline);
    loop {
        // SAFETY: a live dispatcher object (checked above); serialised by the dispatcher lock.
        let header = unsafe { &mut *object };
        if header.signal_state > 0 {
            if header.kind == EVENT_SYNCHRONIZATION_OBJECT {
                header.signal_state = 0;
            }
            return STATUS_SUCCESS;
        }
        match deadline {
            None => guard = SIGNALLED.wait(guard).ignore_poison(),
            Some(deadline) => {
                let now = interrupt_time() as u64;
                if now >= deadline {
                    if timeout != Some(0) {
                        TIMED_OUT_WAITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    return STATUS_TIMEOUT;
                }
                let left = Duration::from_nanos((deadline - now).saturating_mul(100));
                guard = SIGNALLED.wait_timeout(guard, left).ignore_poison().0;
            }
        }
    }
}

/// The waits system threads are in now, by host thread: the object and the deadline on the kernel's
/// clock. Changed only under the dispatcher lock, which [`settle_system_threads`] takes to read it.
static SYSTEM_THREAD_WAITS: Mutex<Vec<(std::thread::ThreadId, usize, Option<u64>)>> = Mutex::new(Vec::new());

/// A system thread's entry in [`SYSTEM_THREAD_WAITS`] for the length of one KeWaitForSingleObject.
struct SystemThreadWait(Option<std::thread::ThreadId>);

impl SystemThreadWait {
    /// Called with the dispatcher lock held.
    fn enter(object: *mut DispatcherHeader, deadline: Option<u64>) -> Self {
        let system =
            std::thread::current().name().is_some_and(|name| name.starts_with(ps::SYSTEM_THREAD_NAME));
        if !system {
            return SystemThreadWait(None);
        }
        let id = std::thread::current().id();
        SYSTEM_THREAD_WAITS.lock().ignore_poison().push((id, object as usize, deadline));
        SystemThreadWait(Some(id))
    }
}

impl Drop for SystemThreadWait {
    /// Runs as the wait returns, with the dispatcher lock still held (the guard is declared first).
    fn drop(&mut self) {
        if let Some(id) = self.0 {
            SYSTEM_THREAD_WAITS.lock().ignore_poison().retain(|(waiter, _, _)| *waiter != id);
        }
    }
}

/// Returns once every live system thread is parked: in a wait whose object is not signalled and whose
/// deadline (if any) is still ahead of the kernel's clock, so that it has done all it does for the
/// clock's current reading. With the host's time stopped ([`stop_host_time`]), what a driver thread
/// does after the clock moves is then done before the test goes on, however loaded the machine.
/// Panics after `limit` of host time.
pub(crate) fn settle_system_threads(limit: Duration) {
    let started = Instant::now();
    loop {
        let parked = {
            let _guard = dispatcher_lock();
            let now = interrupt_time() as u64;
            SYSTEM_THREAD_WAITS
                .lock()
                .ignore_poison()
                .iter()
                .filter(|(_, object, deadline)| {
                    // SAFETY: a waited-on object is live while its waiter is registered; the
                    // dispatcher lock serialises its signal state.
                    let signalled = unsafe { (*(*object as *const DispatcherHeader)).signal_state } > 0;
                    !signalled && deadline.is_none_or(|deadline| deadline > now)
                })
                .count()
        };
        if parked >= ps::live_threads() {
            return;
        }
        assert!(started.elapsed() < limit, "system threads still running after {limit:?}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// `ULONG KeQueryActiveProcessorCountEx(USHORT GroupNumber)`: any IRQL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_query_active_processor_count_ex(group: u16) -> u32 {
    enter("KeQueryActiveProcessorCountEx", HIGH_LEVEL);
    topology::active_count(group)
}

/// PROCESSOR_NUMBER.
#[repr(C)]
pub struct ProcessorNumber {
    pub group: u16,
    pub number: u8,
    pub reserved: u8,
}

/// `NTSTATUS KeGetProcessorNumberFromIndex(ULONG ProcIndex, PPROCESSOR_NUMBER ProcNumber)`: any IRQL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_get_processor_number_from_index(
    index: u32,
    number: *mut ProcessorNumber,
) -> i32 {
    let call = enter("KeGetProcessorNumberFromIndex", HIGH_LEVEL);
    if number.is_null() {
        call.violation("NULL ProcNumber".into());
        return STATUS_INVALID_PARAMETER;
    }
    match topology::number_from_index(index) {
        Some((group, processor)) => {
            // SAFETY: a valid PROCESSOR_NUMBER output, checked non-null.
            unsafe { number.write(ProcessorNumber { group, number: processor, reserved: 0 }) };
            STATUS_SUCCESS
        }
        None => STATUS_INVALID_PARAMETER,
    }
}

static IPI_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// KeIpiGenericCall calls that have returned.
static IPI_CALLS_RETURNED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static TRACE_WORKERS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `ULONG_PTR KeIpiGenericCall(PKIPI_BROADCAST_WORKER BroadcastFunction, ULONG_PTR Context)`: IRQL <=
/// DISPATCH_LEVEL. Runs the worker on every virtual processor at IPI_LEVEL, one after the other on the
/// calling host thread (switching its current virtual processor and occupying it, see
/// [`crate::cpu::pmu`]), and returns the last result.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_ipi_generic_call(worker: usize, context: usize) -> usize {
    let call = enter("KeIpiGenericCall", DISPATCH_LEVEL);
    IPI_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if worker == 0 {
        call.violation("NULL BroadcastFunction".into());
        return 0;
    }
    // SAFETY: the driver passes a PKIPI_BROADCAST_WORKER, `ULONG_PTR (*)(ULONG_PTR)`.
    let worker: extern "win64" fn(usize) -> usize = unsafe { std::mem::transmute(worker) };
    let kpcr = call.kpcr;
    let home = kpcr.processor_index();
    let mut result = 0;
    for index in 0..topology::processor_count() {
        kpcr.set_processor(index);
        // The processor runs one broadcast worker at a time, and takes its pending overflow interrupt
        // between the worker's instructions (IPI_LEVEL is below PROFILE_LEVEL on x64).
        let occupied = pmu::occupy(index, kpcr);
        let previous = kpcr.raise_irql(IPI_LEVEL);
        pmu::interruptible_point(kpcr);
        let traced = TRACE_WORKERS.load(std::sync::atomic::Ordering::SeqCst);
        if traced {
            crate::cpu::set_trap_flag(true);
        }
        result = worker(context);
        if traced {
            crate::cpu::set_trap_flag(false);
        }
        let after = kpcr.irql();
        if after != IPI_LEVEL {
            call.violation(format!("broadcast worker returned at IRQL {after} on processor {index}"));
        }
        pmu::interruptible_point(kpcr);
        kpcr.set_irql(previous);
        drop(occupied);
    }
    kpcr.set_processor(home);
    IPI_CALLS_RETURNED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu;

    fn event() -> Box<DispatcherHeader> {
        Box::new(DispatcherHeader {
            kind: 9,
            signalling: 0,
            size: 0,
            reserved: 0,
            signal_state: 0,
            wait_list: [0; 2],
        })
    }

    #[test]
    fn events_wait_and_time_out() {
        cpu::enter(0);
        let mut notification = event();
        let mut synchronization = event();
        let relative_10ms = -100_000i64;
        // SAFETY: the events are live boxes, initialised before use; timeouts point to live integers.
        unsafe {
            ke_initialize_event(&mut *notification, 0, 0);
            ke_initialize_event(&mut *synchronization, 1, 1);
            let started = Instant::now();
            assert_eq!(
                ke_wait_for_single_object(&mut *notification, 0, 0, 0, &relative_10ms),
                STATUS_TIMEOUT
            );
            assert!(started.elapsed() >= Duration::from_millis(10));
            assert_eq!(ke_wait_for_single_object(&mut *synchronization, 0, 0, 0, &0), STATUS_SUCCESS);
            assert_eq!(
                ke_wait_for_single_object(&mut *synchronization, 0, 0, 0, &0),
                STATUS_TIMEOUT,
                "a satisfied wait resets a synchronization event"
            );
            let address = &mut *notification as *mut DispatcherHeader as usize;
            let setter = std::thread::spawn(move || {
                cpu::enter(1);
                std::thread::sleep(Duration::from_millis(5));
                ke_set_event(address as *mut DispatcherHeader, 0, 0)
            });
            assert_eq!(
                ke_wait_for_single_object(&mut *notification, 0, 0, 0, std::ptr::null()),
                STATUS_SUCCESS
            );
            assert_eq!(setter.join().unwrap(), 0);
            assert_eq!(
                ke_wait_for_single_object(&mut *notification, 0, 0, 0, &0),
                STATUS_SUCCESS,
                "stays set"
            );
            ke_clear_event(&mut *notification);
            assert_eq!(ke_wait_for_single_object(&mut *notification, 0, 0, 0, &0), STATUS_TIMEOUT);
        }
    }

    static SEEN: Mutex<Vec<(u16, u8)>> = Mutex::new(Vec::new());

    extern "win64" fn worker(context: usize) -> usize {
        let index: u32;
        // SAFETY: the calling thread's GS points at its KPCR (cpu::enter), as the driver's would.
        unsafe { std::arch::asm!("mov {0:e}, gs:[0x1a4]", out(reg) index, options(nostack, readonly)) };
        let number = index as u16;
        SEEN.lock().unwrap().push((number, cpu::current().irql()));
        context + usize::from(number)
    }

    #[test]
    fn ipi_generic_call_runs_on_every_processor_at_ipi_level() {
        let kpcr = cpu::enter(3);
        kpcr.set_irql(DISPATCH_LEVEL);
        // SAFETY: a valid broadcast worker and context.
        let last = unsafe { ke_ipi_generic_call(worker as *const () as usize, 100) };
        let count = topology::processor_count() as u16;
        assert_eq!(last, 100 + usize::from(count - 1));
        let expected: Vec<_> = (0..count).map(|index| (index, IPI_LEVEL)).collect();
        assert_eq!(*SEEN.lock().unwrap(), expected);
        assert_eq!((kpcr.processor_index(), kpcr.irql()), (3, DISPATCH_LEVEL));
        kpcr.set_irql(0);
    }
}
