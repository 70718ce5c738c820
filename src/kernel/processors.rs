//! The machine's logical processors, across processor groups.

use super::pool::{PoolSlice, Zeroable};
use crate::pcw::processor_instances::ProcessorInstance;
use windows_sys::Wdk::System::SystemServices::{
    KeGetProcessorNumberFromIndex, KeQueryActiveProcessorCountEx, KeRevertToUserGroupAffinityThread,
    KeSetSystemGroupAffinityThread,
};
use windows_sys::Win32::System::Kernel::PROCESSOR_NUMBER;
use windows_sys::Win32::System::SystemInformation::GROUP_AFFINITY;

/// ALL_PROCESSOR_GROUPS: count the processors of every group.
const ALL_PROCESSOR_GROUPS: u16 = 0xFFFF;

// SAFETY: ProcessorInstance is integers and an integer array; all zeros is processor 0,0 with an
// empty name, a valid (if meaningless) value that is overwritten before use.
unsafe impl Zeroable for ProcessorInstance {}

/// One instance per active logical processor, in system index order, in non-paged pool. Called at
/// PASSIVE_LEVEL from DriverEntry; `None` if the pool is exhausted.
pub fn active_processors() -> Option<PoolSlice<ProcessorInstance>> {
    // SAFETY: a query with no pointer arguments.
    let count = unsafe { KeQueryActiveProcessorCountEx(ALL_PROCESSOR_GROUPS) };
    let mut instances = PoolSlice::<ProcessorInstance>::zeroed(count as usize)?;
    for (index, instance) in (0..count).zip(instances.iter_mut()) {
        let mut number = PROCESSOR_NUMBER { Group: 0, Number: 0, Reserved: 0 };
        // SAFETY: `number` is a valid output buffer; every index below the active count is valid.
        let status = unsafe { KeGetProcessorNumberFromIndex(index, &mut number) };
        debug_assert!(status >= 0, "processor index {index} below the active count must exist");
        *instance = ProcessorInstance::new(index, number.Group, number.Number);
    }
    Some(instances)
}

/// The most processor groups a group affinity names (Windows has at most 32 groups of 64).
pub const MAX_GROUPS: usize = 32;

/// The GROUP_AFFINITY entries naming the processors whose system index `wanted` selects, among the
/// `count` active ones, into `entries` (one per group that has one); returns how many. PASSIVE_LEVEL
/// or below DISPATCH_LEVEL (KeGetProcessorNumberFromIndex has no IRQL limit).
pub fn group_affinity(
    count: u32,
    wanted: impl Fn(u32) -> bool,
    entries: &mut [GROUP_AFFINITY; MAX_GROUPS],
) -> usize {
    let mut used = 0;
    for index in (0..count).filter(|&index| wanted(index)) {
        let mut number = PROCESSOR_NUMBER { Group: 0, Number: 0, Reserved: 0 };
        // SAFETY: `number` is a valid output buffer; an index the caller counted as active is valid.
        if unsafe { KeGetProcessorNumberFromIndex(index, &mut number) } < 0 || number.Number >= 64 {
            continue;
        }
        let at = match entries[..used].iter().position(|entry| entry.Group == number.Group) {
            Some(at) => at,
            None if used < MAX_GROUPS => {
                entries[used] = GROUP_AFFINITY { Mask: 0, Group: number.Group, Reserved: [0; 3] };
                used += 1;
                used - 1
            }
            None => continue,
        };
        entries[at].Mask |= 1usize << number.Number;
    }
    used
}

/// Runs `work` on processor `number` of group `group`, at PASSIVE_LEVEL, by giving this thread that
/// one processor as its system affinity (KeSetSystemGroupAffinityThread: "when the call returns, the
/// calling thread is already running on a processor that is specified in the new affinity mask") and
/// restoring the previous affinity afterwards. Reads that describe one processor (CPUID, its
/// IA32_PERF_CAPABILITIES) run this way, since a hybrid processor's cores describe themselves
/// differently. Call at PASSIVE_LEVEL, for an active processor.
pub fn on_processor<R>(group: u16, number: u8, work: impl FnOnce() -> R) -> R {
    let affinity = GROUP_AFFINITY { Mask: 1usize << number, Group: group, Reserved: [0; 3] };
    let mut previous = GROUP_AFFINITY { Mask: 0, Group: 0, Reserved: [0; 3] };
    // SAFETY: both arguments are valid GROUP_AFFINITY structures that outlive the call.
    unsafe { KeSetSystemGroupAffinityThread(&affinity, &mut previous) };
    let result = work();
    // SAFETY: `previous` is what KeSetSystemGroupAffinityThread returned, as the routine requires.
    unsafe { KeRevertToUserGroupAffinityThread(&previous) };
    result
}
