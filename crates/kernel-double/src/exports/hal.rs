//! HalAllocateHardwareCounters / HalFreeHardwareCounters (one owner at a time, resource list
//! validation), KeQueryPerformanceCounter (10 MHz, monotonic) and, in [`pci`], HalGetBusDataByOffset.
//!
//! HalAllocateHardwareCounters behaves as decompiled Windows 10/11 HAL builds do: the PMU arbiter's
//! STATUS_DEVICE_BUSY ([`set_arbiter_busy`](control::set_arbiter_busy)), success without counters in a
//! Hyper-V guest, resource lists and Overflow descriptors taken by the Intel interface alone, counters
//! held per processor of the allocation's group affinity (so another client may hold what the driver
//! leaves, [`allocate_for_another_client`](control::allocate_for_another_client)), each list checked
//! against the counter table of the caller's processor or of processor 0 by Windows build
//! (`hal/table.rs`), and a chosen call failed on demand ([`fail_allocation`](control::fail_allocation)).
//! The observations, their sources and what each means for a driver: `docs/kernel-double.md`, "The
//! fake HAL's counter allocation".

use super::call::enter;
use super::faults::FaultPlan;
use crate::cpu::cpuid;
use crate::cpu::{HIGH_LEVEL, PASSIVE_LEVEL, msr, pmu, topology};
use crate::poison::IgnorePoison;
use crate::status::*;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What tests and tools use to steer and inspect this part of the double; the driver never calls it.
pub mod control;
/// HalGetBusDataByOffset.
pub mod pci;
/// The counters a resource list may name, per Windows build.
mod table;

const RESOURCE_TYPE_SINGLE: u32 = 0;
const RESOURCE_TYPE_RANGE: u32 = 1;
const RESOURCE_TYPE_EXTENDED_COUNTER_CONFIGURATION: u32 = 2;
const RESOURCE_TYPE_OVERFLOW: u32 = 3;
const RESOURCE_TYPE_EVENT_BUFFER: u32 = 4;
const RESOURCE_TYPE_IDENTIFICATION_TAG: u32 = 5;
/// Highest counter index a descriptor may name: IA32_PERF_GLOBAL_CTRL's layout, fixed counters at 32+.
const MAX_COUNTER_INDEX: u32 = 63;

/// PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR (24 bytes on x64, 8-byte aligned: its union holds a pointer,
/// so the list's descriptors start at offset 8).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct Descriptor {
    kind: u32,
    flags: u32,
    /// CounterIndex, Range.Begin/End, or the OverflowHandler pointer.
    u: [u32; 4],
}
const _: () = assert!(std::mem::size_of::<Descriptor>() == 24 && std::mem::align_of::<Descriptor>() == 8);

/// One granted allocation: who, on which processors (`None`: all), which counters (IA32_PERF_GLOBAL_CTRL
/// bits; `None`: the whole PMU).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub owner: Owner,
    pub processors: Option<BTreeSet<u32>>,
    pub counters: Option<u64>,
}

impl Allocation {
    /// Whether this allocation and one on `processors` of `counters` would hold a counter twice.
    fn conflicts(&self, processors: &Option<BTreeSet<u32>>, counters: Option<u64>) -> bool {
        let shared_processor = match (&self.processors, processors) {
            (Some(held), Some(asked)) => !held.is_disjoint(asked),
            _ => true,
        };
        let shared_counter = match (self.counters, counters) {
            (Some(held), Some(asked)) => held & asked != 0,
            _ => true,
        };
        shared_processor && shared_counter
    }
}

/// Who owns the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The driver, through this handle, with this overflow handler (if any).
    Driver { handle: usize, overflow_handler: Option<usize> },
    /// Another client (WPR, VTune) owning the whole PMU, set by a test.
    OtherClient,
    /// Another client's resource list ([`control::allocate_for_another_client`]), by its handle.
    AnotherList { handle: usize },
}

/// How a HAL without resource-list support answers a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListRefusal {
    /// STATUS_INSUFFICIENT_RESOURCES and a NULL handle (current builds).
    InsufficientResources,
    /// STATUS_SUCCESS with the handle left NULL (an older build).
    NullHandle,
}

static HELD: Mutex<Vec<Allocation>> = Mutex::new(Vec::new());
static LOG: Mutex<Vec<Allocation>> = Mutex::new(Vec::new());
static ARBITER_BUSY: AtomicBool = AtomicBool::new(false);
static LIST_REFUSAL: Mutex<ListRefusal> = Mutex::new(ListRefusal::InsufficientResources);

static NEXT_HANDLE: Mutex<usize> = Mutex::new(0x4841_4c00);
static ALLOCATIONS: FaultPlan = FaultPlan::new();

/// What a valid resource list asks for: the overflow handler it names and its counters (as global
/// control bits; `None` for no list, the whole PMU).
type Request = (Option<usize>, Option<u64>);

/// Validates a resource list; returns what it asks for, or the status to fail with.
///
/// # Safety
/// `list` must be null or point to a PHYSICAL_COUNTER_RESOURCE_LIST with Count descriptors.
unsafe fn validate(list: *const u32, call: &super::call::Call) -> Result<Request, i32> {
    if list.is_null() {
        return Ok((None, None));
    }
    // SAFETY: a valid list by the contract: Count, 4 bytes of padding, then the descriptors.
    let count = unsafe { *list } as usize;
    if count == 0 || count > 64 {
        call.violation(format!("resource list with {count} descriptors"));
        return Err(STATUS_INVALID_PARAMETER);
    }
    // SAFETY: as above; descriptors start at offset 8.
    let descriptors = unsafe { std::slice::from_raw_parts(list.add(2).cast::<Descriptor>(), count) };
    let mut overflow = None;
    let mut counters = 0u64;
    for (index, descriptor) in descriptors.iter().enumerate() {
        if descriptor.flags != 0 {
            call.violation(format!("descriptor {index} has Flags {:#x}", descriptor.flags));
            return Err(STATUS_INVALID_PARAMETER);
        }
        match descriptor.kind {
            RESOURCE_TYPE_SINGLE if descriptor.u[0] <= MAX_COUNTER_INDEX => counters |= 1 << descriptor.u[0],
            RESOURCE_TYPE_RANGE
                if descriptor.u[0] <= descriptor.u[1] && descriptor.u[1] <= MAX_COUNTER_INDEX =>
            {
                for bit in descriptor.u[0]..=descriptor.u[1] {
                    counters |= 1 << bit;
                }
            }
            RESOURCE_TYPE_OVERFLOW => {
                let handler = (u64::from(descriptor.u[1]) << 32 | u64::from(descriptor.u[0])) as usize;
                if handler == 0 || overflow.is_some() {
                    call.violation(format!("descriptor {index}: NULL or second overflow handler"));
                    return Err(STATUS_INVALID_PARAMETER);
                }
                overflow = Some(handler);
            }
            RESOURCE_TYPE_EXTENDED_COUNTER_CONFIGURATION | RESOURCE_TYPE_EVENT_BUFFER => {
                return Err(STATUS_NOT_SUPPORTED);
            }
            RESOURCE_TYPE_IDENTIFICATION_TAG => {}
            kind => {
                call.violation(format!("descriptor {index}: bad type {kind} or counter index"));
                return Err(STATUS_INVALID_PARAMETER);
            }
        }
    }
    Ok((overflow, Some(counters)))
}

/// The processors a GROUP_AFFINITY array names (`None` for NULL: every processor), or the status to
/// fail with: a group or processor that does not exist is an invalid parameter.
///
/// # Safety
/// `affinity` must be null or point to `count` GROUP_AFFINITY structures (16 bytes each: the 8-byte
/// KAFFINITY mask, the 2-byte group, 6 reserved bytes).
unsafe fn affinity_processors(
    affinity: usize,
    count: u32,
    call: &super::call::Call,
) -> Result<Option<BTreeSet<u32>>, i32> {
    if affinity == 0 {
        return Ok(None);
    }
    let mut processors = BTreeSet::new();
    for entry in 0..count as usize {
        // SAFETY: within the array the caller passed.
        let (mask, group) = unsafe {
            let at = (affinity + 16 * entry) as *const u8;
            (at.cast::<u64>().read_unaligned(), at.add(8).cast::<u16>().read_unaligned())
        };
        for number in (0..64u8).filter(|&number| mask & (1 << number) != 0) {
            match topology::index_from_number(group, number) {
                Some(index) => {
                    processors.insert(index);
                }
                None => {
                    call.violation(format!(
                        "GroupAffinity names processor {number} of group {group}, which does not exist"
                    ));
                    return Err(STATUS_INVALID_PARAMETER);
                }
            }
        }
    }
    if processors.is_empty() {
        call.violation("GroupAffinity names no processor".into());
        return Err(STATUS_INVALID_PARAMETER);
    }
    Ok(Some(processors))
}

/// `NTSTATUS HalAllocateHardwareCounters(PGROUP_AFFINITY GroupAffinity, ULONG GroupCount,
/// PPHYSICAL_COUNTER_RESOURCE_LIST ResourceList, PHANDLE CounterSetHandle)`: PASSIVE_LEVEL. One owner
/// at a time: STATUS_INSUFFICIENT_RESOURCES and a NULL handle while another client owns the counters;
/// STATUS_DEVICE_BUSY while the arbiter has another actor; a resource list only where the vendor's
/// profile interface takes one (see the module docs). Succeeds even when the CPU model has no
/// counters, as Hyper-V does in a guest without PMU passthrough. An injected failure
/// ([`fail_allocation`]) is returned after the arguments are checked.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
///
/// [`fail_allocation`]: control::fail_allocation
pub unsafe extern "win64" fn hal_allocate_hardware_counters(
    affinity: usize,
    group_count: u32,
    list: *const u32,
    handle_out: *mut usize,
) -> i32 {
    let call = enter("HalAllocateHardwareCounters", PASSIVE_LEVEL);
    let injected = ALLOCATIONS.next();
    if handle_out.is_null() {
        call.violation("NULL CounterSetHandle".into());
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: checked non-null.
    unsafe { handle_out.write(0) };
    if (affinity == 0) != (group_count == 0) {
        call.violation(format!("GroupAffinity {affinity:#x} with GroupCount {group_count}"));
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: the driver passes NULL or a valid list.
    let (overflow_handler, counters) = match unsafe { validate(list, &call) } {
        Ok(request) => request,
        Err(status) => return status,
    };
    // SAFETY: the driver passes NULL or GroupCount valid GROUP_AFFINITY structures.
    let processors = match unsafe { affinity_processors(affinity, group_count, &call) } {
        Ok(processors) => processors,
        Err(status) => return status,
    };
    if let Some(status) = injected {
        return status;
    }
    if ARBITER_BUSY.load(Ordering::SeqCst) {
        return STATUS_DEVICE_BUSY;
    }
    if (!list.is_null() || affinity != 0) && !takes_resource_lists() {
        return match *LIST_REFUSAL.lock().ignore_poison() {
            ListRefusal::InsufficientResources => STATUS_INSUFFICIENT_RESOURCES,
            ListRefusal::NullHandle => STATUS_SUCCESS,
        };
    }
    let caller = call.kpcr.processor_index();
    let mut held = HELD.lock().ignore_poison();
    let owner = |handle| Owner::Driver { handle, overflow_handler };
    let allocation = match reserve(&mut held, caller, processors, counters, owner) {
        Ok(allocation) => allocation,
        Err(status) => return status,
    };
    let Owner::Driver { handle, .. } = allocation.owner else { unreachable!("the driver's allocation") };
    LOG.lock().ignore_poison().push(allocation.clone());
    if let Some(handler) = overflow_handler {
        pmu::set_overflow_handler(|vp| holds(&allocation, vp), Some((handler, handle)));
    }
    msr::set_pmu_owned(driver_processors(&held));
    // SAFETY: checked non-null.
    unsafe { handle_out.write(handle) };
    STATUS_SUCCESS
}

/// The Intel profile interface's part of an allocation made on processor `caller`, once the arbiter
/// let it through: a resource list may name only counters of the HAL's table ([`table::allowed`]:
/// STATUS_INVALID_PARAMETER otherwise, `EmonReserveProfileResourcesEnhanced` and
/// `EmonReserveProfileResources`), then each processor of the affinity reserves them
/// (`EmonMarkCountersReserved`, run on each: STATUS_INSUFFICIENT_RESOURCES where one is held). Holds
/// the allocation, with the handle `owner` is given.
fn reserve(
    held: &mut Vec<Allocation>,
    caller: u32,
    processors: Option<BTreeSet<u32>>,
    counters: Option<u64>,
    owner: impl FnOnce(usize) -> Owner,
) -> Result<Allocation, i32> {
    if let Some(asked) = counters
        && asked & !table::allowed(caller) != 0
    {
        return Err(STATUS_INVALID_PARAMETER);
    }
    if held.iter().any(|allocation| allocation.conflicts(&processors, counters)) {
        return Err(STATUS_INSUFFICIENT_RESOURCES);
    }
    let handle = {
        let mut next = NEXT_HANDLE.lock().ignore_poison();
        *next += 8;
        *next
    };
    let allocation = Allocation { owner: owner(handle), processors, counters };
    held.push(allocation.clone());
    Ok(allocation)
}

/// `NTSTATUS HalFreeHardwareCounters(HANDLE CounterSetHandle)`: PASSIVE_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn hal_free_hardware_counters(handle: usize) -> i32 {
    let call = enter("HalFreeHardwareCounters", PASSIVE_LEVEL);
    let mut held = HELD.lock().ignore_poison();
    let position = held.iter().position(
        |allocation| matches!(allocation.owner, Owner::Driver { handle: owned, .. } if owned == handle),
    );
    match position {
        Some(position) => {
            let allocation = held.remove(position);
            // No overflow handler runs after the free returns.
            pmu::set_overflow_handler(|vp| holds(&allocation, vp), None);
            msr::set_pmu_owned(driver_processors(&held));
            check_enables_given_back(&call, &allocation);
            STATUS_SUCCESS
        }
        _ => {
            call.violation(format!("free of {handle:#x}, which does not own the counters"));
            STATUS_INVALID_HANDLE
        }
    }
}

/// The HAL's view of the PMU a client gives back: it never sets the global control's power-on
/// enable bits (IA32_PERF_GLOBAL_CTRL's general-purpose enables, AMD PerfCntrGlobalCtl's), programs
/// its own counters through their event selects alone, and takes a cleared enable bit for a foreign
/// modification (observed in decompiled Windows 10/11 HAL builds, `EmonIsModifiedByBadActorInternal`):
/// a client that leaves one clear stops every later HAL user (WPR/xperf PMC sampling) on that counter
/// until the processor is reset. Each processor whose enables the client left clear is a violation.
fn check_enables_given_back(call: &super::call::Call, allocation: &Allocation) {
    for vp in (0..topology::processor_count()).filter(|&vp| holds(allocation, vp)) {
        let cleared = pmu::power_on_enables_cleared(vp);
        if cleared != 0 {
            call.violation(format!(
                "processor {vp}: the counters were given back with global control enable bits {cleared:#x} \
                 cleared, which are set at power-on and which the HAL never sets: it takes them for a \
                 foreign modification and its own profiling counts nothing on those counters"
            ));
        }
    }
}

/// Whether `allocation` holds counters on processor `vp`.
fn holds(allocation: &Allocation, vp: u32) -> bool {
    allocation.processors.as_ref().is_none_or(|processors| processors.contains(&vp))
}

/// The processors on which the driver holds counters, for the MSR checks: `None` when it holds none,
/// `Some(None)` when some allocation of its covers every processor.
fn driver_processors(held: &[Allocation]) -> Option<Option<std::collections::HashSet<u32>>> {
    let mine: Vec<_> =
        held.iter().filter(|allocation| matches!(allocation.owner, Owner::Driver { .. })).collect();
    if mine.is_empty() {
        return None;
    }
    if mine.iter().any(|allocation| allocation.processors.is_none()) {
        return Some(None);
    }
    Some(Some(mine.iter().flat_map(|allocation| allocation.processors.iter().flatten().copied()).collect()))
}

/// The performance counter's frequency: 10 MHz, as on current Windows.
pub const PERFORMANCE_FREQUENCY: i64 = 10_000_000;

/// `LARGE_INTEGER KeQueryPerformanceCounter(PLARGE_INTEGER PerformanceFrequency)`: any IRQL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_query_performance_counter(frequency: *mut i64) -> i64 {
    enter("KeQueryPerformanceCounter", HIGH_LEVEL);
    if !frequency.is_null() {
        // SAFETY: the driver's LARGE_INTEGER output, checked non-null.
        unsafe { frequency.write(PERFORMANCE_FREQUENCY) };
    }
    // The kernel's clock in 100 ns units, which is the counter's 10 MHz (super::ke::interrupt_time).
    super::ke::interrupt_time()
}

/// Whether the HAL's profile interface for the presented CPU takes resource lists and the Overflow
/// descriptor: the HAL chooses it from CPUID, so a "GenuineIntel" vendor (leaf 0) with architectural
/// perfmon version 2 or later (CPUID.0AH:EAX\[7:0\]), whatever counters really exist behind it.
pub fn takes_resource_lists() -> bool {
    const GENU: u32 = u32::from_le_bytes(*b"Genu");
    const INEI: u32 = u32::from_le_bytes(*b"ineI");
    let vendor = cpuid::cpuid(0, 0);
    vendor[1] == GENU && vendor[3] == INEI && cpuid::cpuid(0xA, 0)[0] & 0xff >= 2
}

#[cfg(test)]
mod tests {
    use super::control::*;
    use super::*;

    /// A resource list with room for 4 descriptors.
    #[repr(C)]
    struct List {
        count: u32,
        descriptors: [Descriptor; 4],
    }

    fn single(index: u32) -> Descriptor {
        Descriptor { kind: RESOURCE_TYPE_SINGLE, flags: 0, u: [index, 0, 0, 0] }
    }

    #[test]
    fn one_owner_at_a_time_and_lists_are_validated() {
        cpuid::set_model(&cpuid::SKYLAKE);
        crate::cpu::enter(0);
        let mut handle = 0usize;
        let handler = 0x1234_5678_9abc_usize;
        let overflow = Descriptor {
            kind: RESOURCE_TYPE_OVERFLOW,
            flags: 0,
            u: [handler as u32, (handler >> 32) as u32, 0, 0],
        };
        let good = List { count: 3, descriptors: [single(0), single(33), overflow, single(0)] };
        let extended = List {
            count: 1,
            descriptors: [Descriptor {
                kind: RESOURCE_TYPE_EXTENDED_COUNTER_CONFIGURATION,
                flags: 0,
                u: [0; 4],
            }; 4],
        };
        let bad_index = List { count: 1, descriptors: [single(64); 4] };
        let list = |list: &List| (list as *const List).cast::<u32>();
        // SAFETY: the lists are valid PHYSICAL_COUNTER_RESOURCE_LISTs and the handle a valid output.
        unsafe {
            set_other_client_owns(true);
            assert_eq!(
                hal_allocate_hardware_counters(0, 0, std::ptr::null(), &mut handle),
                STATUS_INSUFFICIENT_RESOURCES
            );
            assert_eq!(handle, 0, "a failed allocation returns a NULL handle");
            set_other_client_owns(false);

            assert_eq!(
                hal_allocate_hardware_counters(0, 0, list(&extended), &mut handle),
                STATUS_NOT_SUPPORTED
            );
            assert_eq!(
                hal_allocate_hardware_counters(0, 0, list(&bad_index), &mut handle),
                STATUS_INVALID_PARAMETER
            );
            assert_eq!(hal_allocate_hardware_counters(0, 0, list(&good), &mut handle), STATUS_SUCCESS);
            assert_eq!(owner(), Some(Owner::Driver { handle, overflow_handler: Some(handler) }));
            assert_eq!(allocations()[0].counters, Some(1 | 1 << 33));
            assert!(msr::pmu_owned());
            let mut second = 0usize;
            assert_eq!(
                hal_allocate_hardware_counters(0, 0, std::ptr::null(), &mut second),
                STATUS_INSUFFICIENT_RESOURCES
            );
            assert_eq!(hal_free_hardware_counters(handle), STATUS_SUCCESS);
            assert!(!msr::pmu_owned() && owner().is_none());
        }
        let found: Vec<_> = crate::violations::take()
            .into_iter()
            .filter(|violation| violation.at.starts_with("Hal"))
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("bad type 0 or counter index"));
    }
}
