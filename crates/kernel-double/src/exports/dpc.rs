//! Deferred procedure calls: KeInitializeDpc, KeSetTargetProcessorDpcEx, KeInsertQueueDpc,
//! KeRemoveQueueDpc and KeFlushQueuedDpcs.
//!
//! Every virtual processor has a DPC queue, drained by its own host thread (started with the first DPC
//! queued to it), which runs each routine on that processor at DISPATCH_LEVEL, as the processor does
//! when its IRQL drops below DISPATCH_LEVEL. A DPC goes to the processor KeSetTargetProcessorDpcEx
//! named, else to the one that queued it. A DPC object is queued at most once at a time (a second
//! KeInsertQueueDpc returns FALSE); its DpcData is non-NULL while it is queued and cleared before its
//! routine runs, so the routine may queue it again.
//!
//! Driver Verifier's checks: a DPC must be initialised before use and its routine must return at
//! DISPATCH_LEVEL; DriverUnload must not return while a DPC of the driver is queued or running (bug
//! check 0xCE, DRIVER_UNLOADED_WITHOUT_CANCELLING_PENDING_OPERATIONS), see [`pending_in`]. The DPC
//! threads do not occupy their processor (see [`crate::cpu::pmu`]): overflow interrupts on it are
//! delivered by whoever steps its workload.
//!
//! [`pending_in`]: control::pending_in

use super::call::enter;
use super::ke::ProcessorNumber;
use crate::cpu::{self, DISPATCH_LEVEL, HIGH_LEVEL, PASSIVE_LEVEL, topology};
use crate::poison::IgnorePoison;
use crate::status::*;
use std::collections::{HashSet, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};

/// What tests and tools use to steer and inspect this part of the double; the driver never calls it.
pub mod control;

/// KDPC (x64, 0x40 bytes): the fields a DPC object has on Windows. The target processor is kept in
/// Number as its system index + 1 (0: the processor that queues it); the layout is opaque to drivers.
#[repr(C)]
pub struct Kdpc {
    pub kind: u8,
    pub importance: u8,
    pub number: u16,
    _pad: u32,
    pub dpc_list_entry: usize,
    pub processor_history: u64,
    pub deferred_routine: usize,
    pub deferred_context: usize,
    pub system_argument1: usize,
    pub system_argument2: usize,
    pub dpc_data: usize,
}

const _: () = assert!(std::mem::size_of::<Kdpc>() == 0x40);

/// KOBJECTS' DpcObject.
const DPC_OBJECT: u8 = 0x13;
/// KDPC_IMPORTANCE's MediumImportance, KeInitializeDpc's default.
const MEDIUM_IMPORTANCE: u8 = 1;

/// `VOID (*)(PKDPC Dpc, PVOID DeferredContext, PVOID SystemArgument1, PVOID SystemArgument2)`.
type DeferredRoutine = extern "win64" fn(*mut Kdpc, usize, usize, usize);

#[derive(Default)]
struct Queues {
    /// Per processor, the queued DPC objects (addresses), in order.
    queued: Vec<VecDeque<usize>>,
    /// Processors whose DPC thread is running.
    started: HashSet<u32>,
    /// DPCs running now: (DPC object, routine) addresses.
    running: Vec<(usize, usize)>,
    /// Image ranges whose DPCs are no longer run (the driver unloaded with DPCs pending: on Windows
    /// the machine would have stopped with bug check 0xCE).
    halted: Vec<(usize, usize)>,
    /// The first [`EXECUTIONS_KEPT`] DPC runs, in order.
    executed: Vec<Execution>,
}

/// One DPC run: where and at which IRQL its routine started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Execution {
    pub processor: u32,
    pub irql: u8,
    pub routine: usize,
}

/// How many DPC runs [`executions`] keeps (a DPC that queues itself again runs without end).
///
/// [`executions`]: control::executions
pub const EXECUTIONS_KEPT: usize = 4096;

impl Queues {
    /// DPCs queued or running.
    fn outstanding(&self) -> usize {
        self.queued.iter().map(VecDeque::len).sum::<usize>() + self.running.len()
    }

    fn halted(&self, routine: usize) -> bool {
        self.halted.iter().any(|&(start, length)| lies_in(routine, start, length))
    }
}

fn lies_in(address: usize, start: usize, length: usize) -> bool {
    address >= start && address < start + length
}

/// The routine of a queued DPC object.
fn routine_of(dpc: usize) -> usize {
    // SAFETY: queued DPC objects are live (freeing one while queued is the driver's bug); the double
    // reads only the routine address, under the queue lock.
    unsafe { (*(dpc as *const Kdpc)).deferred_routine }
}

static QUEUES: Mutex<Option<Queues>> = Mutex::new(None);
static CHANGED: Condvar = Condvar::new();

fn queues() -> MutexGuard<'static, Option<Queues>> {
    QUEUES.lock().ignore_poison()
}

fn with_queues<R>(f: impl FnOnce(&mut Queues) -> R) -> R {
    f(queues().get_or_insert_with(Queues::default))
}

fn check_initialised(call: &super::call::Call, dpc: *mut Kdpc) -> bool {
    // SAFETY: read only if non-null; the driver passes its KDPC.
    match unsafe { dpc.as_ref() } {
        Some(object) if object.kind == DPC_OBJECT && object.deferred_routine != 0 => true,
        _ => {
            call.violation(format!("{dpc:?} is not a DPC initialised by KeInitializeDpc"));
            false
        }
    }
}

/// `VOID KeInitializeDpc(PRKDPC Dpc, PKDEFERRED_ROUTINE DeferredRoutine, PVOID DeferredContext)`: any
/// IRQL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_initialize_dpc(dpc: *mut Kdpc, routine: usize, context: usize) {
    let call = enter("KeInitializeDpc", HIGH_LEVEL);
    if dpc.is_null() || routine == 0 {
        call.violation(format!("NULL Dpc ({dpc:?}) or DeferredRoutine ({routine:#x})"));
        return;
    }
    let object = Kdpc {
        kind: DPC_OBJECT,
        importance: MEDIUM_IMPORTANCE,
        number: 0,
        _pad: 0,
        dpc_list_entry: 0,
        processor_history: 0,
        deferred_routine: routine,
        deferred_context: context,
        system_argument1: 0,
        system_argument2: 0,
        dpc_data: 0,
    };
    // SAFETY: the driver's KDPC storage (0x40 bytes), checked non-null.
    unsafe { dpc.write(object) };
}

/// `NTSTATUS KeSetTargetProcessorDpcEx(PKDPC Dpc, PPROCESSOR_NUMBER ProcNumber)`: any IRQL.
/// STATUS_INVALID_PARAMETER for a processor that does not exist. Affects only later insertions.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_set_target_processor_dpc_ex(
    dpc: *mut Kdpc,
    number: *const ProcessorNumber,
) -> i32 {
    let call = enter("KeSetTargetProcessorDpcEx", HIGH_LEVEL);
    if !check_initialised(&call, dpc) {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: null or the driver's PROCESSOR_NUMBER.
    let Some(number) = (unsafe { number.as_ref() }) else {
        call.violation("NULL ProcNumber".into());
        return STATUS_INVALID_PARAMETER;
    };
    match topology::index_from_number(number.group, number.number) {
        Some(index) => {
            let _guard = queues();
            // SAFETY: an initialised KDPC (checked); DPC fields change under the queue lock.
            unsafe { (*dpc).number = (index + 1) as u16 };
            STATUS_SUCCESS
        }
        None => STATUS_INVALID_PARAMETER,
    }
}

/// `BOOLEAN KeInsertQueueDpc(PRKDPC Dpc, PVOID SystemArgument1, PVOID SystemArgument2)`: any IRQL.
/// TRUE if the DPC was queued, FALSE (and nothing else) if it already was.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_insert_queue_dpc(dpc: *mut Kdpc, argument1: usize, argument2: usize) -> u8 {
    let call = enter("KeInsertQueueDpc", HIGH_LEVEL);
    if !check_initialised(&call, dpc) {
        return 0;
    }
    let current = call.kpcr.processor_index();
    let mut guard = queues();
    let queues = guard.get_or_insert_with(Queues::default);
    // SAFETY: an initialised KDPC (checked), changed only under the queue lock.
    let object = unsafe { &mut *dpc };
    if object.dpc_data != 0 {
        return 0;
    }
    let routine = object.deferred_routine;
    if queues.halted(routine) {
        return 1;
    }
    let processor = if object.number == 0 { current } else { u32::from(object.number) - 1 };
    object.system_argument1 = argument1;
    object.system_argument2 = argument2;
    object.dpc_data = processor as usize + 1;
    let count = topology::processor_count() as usize;
    if queues.queued.len() < count {
        queues.queued.resize_with(count, VecDeque::new);
    }
    queues.queued[processor as usize].push_back(dpc as usize);
    if queues.started.insert(processor) {
        std::thread::Builder::new()
            .name(format!("dpc-{processor}"))
            .spawn(move || drain(processor))
            .expect("starting a DPC thread");
    }
    CHANGED.notify_all();
    1
}

/// `BOOLEAN KeRemoveQueueDpc(PRKDPC Dpc)`: any IRQL. TRUE if the DPC was queued (it no longer is),
/// FALSE if it was not (it may be running).
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_remove_queue_dpc(dpc: *mut Kdpc) -> u8 {
    let call = enter("KeRemoveQueueDpc", HIGH_LEVEL);
    if !check_initialised(&call, dpc) {
        return 0;
    }
    with_queues(|queues| {
        // SAFETY: an initialised KDPC (checked), changed only under the queue lock.
        let object = unsafe { &mut *dpc };
        if object.dpc_data == 0 {
            return 0;
        }
        let processor = object.dpc_data - 1;
        queues.queued[processor].retain(|&queued| queued != dpc as usize);
        object.dpc_data = 0;
        CHANGED.notify_all();
        1
    })
}

/// `VOID KeFlushQueuedDpcs(void)`: PASSIVE_LEVEL. Returns once every DPC queued on any processor when it
/// was called has run (here: once no DPC is queued or running).
///
/// # Safety
/// Called by driver code through its import table.
pub unsafe extern "win64" fn ke_flush_queued_dpcs() {
    enter("KeFlushQueuedDpcs", PASSIVE_LEVEL);
    let mut guard = queues();
    while guard.as_ref().is_some_and(|queues| queues.outstanding() > 0) {
        guard = CHANGED.wait(guard).ignore_poison();
    }
}

/// The DPC thread of `processor`: runs its queued DPCs at DISPATCH_LEVEL, forever (the process ends
/// with the test).
fn drain(processor: u32) {
    let kpcr = cpu::enter(processor);
    loop {
        let mut guard = queues();
        let (dpc, routine, context, argument1, argument2) = loop {
            let queues = guard.as_mut().expect("queues exist once a DPC was queued");
            if let Some(dpc) = queues.queued[processor as usize].pop_front() {
                // SAFETY: a queued, initialised KDPC, changed only under the queue lock.
                let object = unsafe { &mut *(dpc as *mut Kdpc) };
                object.dpc_data = 0;
                queues.running.push((dpc, object.deferred_routine));
                break (
                    dpc,
                    object.deferred_routine,
                    object.deferred_context,
                    object.system_argument1,
                    object.system_argument2,
                );
            }
            guard = CHANGED.wait(guard).ignore_poison();
        };
        drop(guard);
        kpcr.set_irql(DISPATCH_LEVEL);
        with_queues(|queues| {
            if queues.executed.len() < EXECUTIONS_KEPT {
                queues.executed.push(Execution { processor, irql: kpcr.irql(), routine });
            }
        });
        // SAFETY: KeInitializeDpc stored the driver's PKDEFERRED_ROUTINE, called with the documented
        // arguments on this processor at DISPATCH_LEVEL.
        let run: DeferredRoutine = unsafe { std::mem::transmute(routine) };
        run(dpc as *mut Kdpc, context, argument1, argument2);
        if kpcr.irql() != DISPATCH_LEVEL {
            crate::violations::record(
                "KeInsertQueueDpc",
                crate::image_map::rva_of(routine as u64),
                format!("DPC routine returned at IRQL {} on processor {processor}", kpcr.irql()),
            );
        }
        kpcr.set_irql(PASSIVE_LEVEL);
        with_queues(|queues| {
            let at = queues.running.iter().position(|&running| running == (dpc, routine)).expect("running");
            queues.running.swap_remove(at);
        });
        CHANGED.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::control::*;
    use super::*;
    use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
    use std::time::Duration;

    fn blank() -> Box<Kdpc> {
        // SAFETY: Kdpc is plain integers; all-zero is a valid (uninitialised-object) value.
        Box::new(unsafe { std::mem::zeroed() })
    }

    static RAN_ON: AtomicU32 = AtomicU32::new(u32::MAX);
    static SUM: AtomicUsize = AtomicUsize::new(0);
    static GATE: Mutex<()> = Mutex::new(());

    extern "win64" fn record(_dpc: *mut Kdpc, context: usize, argument1: usize, argument2: usize) {
        let _wait = GATE.lock().unwrap();
        // The IRQL is in `executions` (a panic here would end the DPC thread, not the test).
        let kpcr = cpu::current();
        RAN_ON.store(kpcr.processor_index(), Ordering::SeqCst);
        SUM.fetch_add(context + argument1 + argument2, Ordering::SeqCst);
    }

    #[test]
    fn a_dpc_runs_once_per_insertion_on_its_target_at_dispatch_level() {
        cpu::enter(0);
        let mut dpc = blank();
        let gate = GATE.lock().unwrap();
        // SAFETY: a live KDPC box and a DPC routine of the right signature; PROCESSOR_NUMBER on the stack.
        unsafe {
            ke_initialize_dpc(&mut *dpc, record as *const () as usize, 100);
            let target = ProcessorNumber { group: 0, number: 2, reserved: 0 };
            assert_eq!(ke_set_target_processor_dpc_ex(&mut *dpc, &target), STATUS_SUCCESS);
            let missing = ProcessorNumber { group: 0, number: 9, reserved: 0 };
            assert_eq!(ke_set_target_processor_dpc_ex(&mut *dpc, &missing), STATUS_INVALID_PARAMETER);
            assert_eq!(ke_insert_queue_dpc(&mut *dpc, 10, 1), 1);
            // The DPC thread is held at the gate inside the routine or has not taken the DPC yet.
            std::thread::sleep(Duration::from_millis(20));
            let queued_again = ke_insert_queue_dpc(&mut *dpc, 20, 2);
            drop(gate);
            ke_flush_queued_dpcs();
            assert_eq!(RAN_ON.load(Ordering::SeqCst), 2);
            // Either the first run had begun (DpcData cleared: queued again, runs twice) or not (FALSE).
            let expected = if queued_again == 1 { 111 + 122 } else { 111 };
            assert_eq!(SUM.load(Ordering::SeqCst), expected);
            assert_eq!(outstanding(), 0);
            assert_eq!(ke_remove_queue_dpc(&mut *dpc), 0, "not queued any more");
        }
        assert!(executions().iter().all(|run| run.processor == 2 && run.irql == DISPATCH_LEVEL));
        assert!(crate::violations::take().is_empty());
    }

    #[test]
    fn a_queued_dpc_is_inserted_once_and_can_be_removed() {
        let kpcr = cpu::enter(1);
        let mut dpc = blank();
        let gate = GATE.lock().unwrap();
        let mut blocker = blank();
        // SAFETY: live KDPC boxes and a DPC routine of the right signature.
        unsafe {
            // The blocker holds processor 1's DPC thread at the gate, so `dpc` stays queued behind it.
            ke_initialize_dpc(&mut *blocker, record as *const () as usize, 0);
            ke_initialize_dpc(&mut *dpc, record as *const () as usize, 1000);
            assert_eq!(ke_insert_queue_dpc(&mut *blocker, 0, 0), 1);
            kpcr.set_irql(HIGH_LEVEL);
            assert_eq!(ke_insert_queue_dpc(&mut *dpc, 0, 0), 1, "any IRQL");
            assert_eq!(ke_insert_queue_dpc(&mut *dpc, 5, 5), 0, "already queued");
            assert_eq!(ke_remove_queue_dpc(&mut *dpc), 1);
            assert_eq!(ke_remove_queue_dpc(&mut *dpc), 0);
            kpcr.set_irql(PASSIVE_LEVEL);
            drop(gate);
            ke_flush_queued_dpcs();
        }
        assert_eq!(SUM.load(Ordering::SeqCst), 0, "only the blocker ran");
        assert_eq!(RAN_ON.load(Ordering::SeqCst), 1, "the queueing processor by default");
        assert!(crate::violations::take().is_empty());
    }

    #[test]
    fn misuse_is_a_violation() {
        let kpcr = cpu::enter(0);
        let mut dpc = blank();
        // SAFETY: a live, zeroed (not initialised) KDPC box.
        unsafe {
            assert_eq!(ke_insert_queue_dpc(&mut *dpc, 0, 0), 0);
            kpcr.set_irql(DISPATCH_LEVEL);
            ke_flush_queued_dpcs();
            kpcr.set_irql(PASSIVE_LEVEL);
        }
        let found = crate::violations::take();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].message.contains("not a DPC initialised by KeInitializeDpc"), "{}", found[0]);
        assert_eq!(found[1].at, "KeFlushQueuedDpcs");
        assert!(found[1].message.contains("above its maximum 0"), "{}", found[1]);
    }
}
