//! Thread affinity: KeSetSystemGroupAffinityThread and KeRevertToUserGroupAffinityThread, and
//! KeGetCurrentProcessorNumberEx.
//!
//! A host thread is one kernel thread, so its affinity lives in its KPCR ([`crate::cpu::Kpcr`]). A new
//! affinity that excludes the current processor moves the thread to the lowest processor it allows:
//! at once below DISPATCH_LEVEL ("when the call returns, the calling thread is already running on a
//! processor that is specified in the new affinity mask"), or, at DISPATCH_LEVEL, when the thread lowers
//! its IRQL below DISPATCH_LEVEL, as the routines' documentation says. Without a system affinity a
//! thread may run on any processor of its group and the double never moves it.

use super::call::enter;
use super::ke::ProcessorNumber;
use crate::cpu::{DISPATCH_LEVEL, HIGH_LEVEL, topology};

/// GROUP_AFFINITY: Mask, Group, Reserved\[3\] (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupAffinity {
    pub mask: u64,
    pub group: u16,
    pub reserved: [u16; 3],
}

/// The processors of `affinity`, if it is one KeSetSystemGroupAffinityThread accepts: a valid group,
/// a mask naming only processors of that group, and at least one of them (all present are active).
fn processors_of(affinity: GroupAffinity) -> Option<Vec<u32>> {
    let count = topology::active_count(affinity.group);
    if affinity.group == 0xFFFF || count == 0 || affinity.mask == 0 {
        return None;
    }
    if count < 64 && affinity.mask >> count != 0 {
        return None;
    }
    let indexes = (0..count as u8)
        .filter(|number| affinity.mask & (1 << number) != 0)
        .filter_map(|number| topology::index_from_number(affinity.group, number))
        .collect();
    Some(indexes)
}

/// Applies `affinity` (already validated into `processors`) to the calling thread.
fn apply(call: &super::call::Call, affinity: GroupAffinity, processors: &[u32]) {
    let current = call.kpcr.processor_index();
    let target = (!processors.contains(&current)).then(|| processors[0]);
    call.kpcr.set_system_affinity(affinity.group, affinity.mask, target);
}

/// `VOID KeSetSystemGroupAffinityThread(PGROUP_AFFINITY Affinity, PGROUP_AFFINITY PreviousAffinity)`:
/// IRQL <= DISPATCH_LEVEL. Changes the affinity only if the group is valid, the mask names only that
/// group's processors and at least one active one; otherwise leaves it as it was. PreviousAffinity
/// (optional) receives the affinity in effect before the call, or a zero mask, the special value that
/// makes KeRevertToUserGroupAffinityThread restore the thread's original (user) affinity.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_set_system_group_affinity_thread(
    affinity: *const GroupAffinity,
    previous: *mut GroupAffinity,
) {
    let call = enter("KeSetSystemGroupAffinityThread", DISPATCH_LEVEL);
    // SAFETY: null or the driver's GROUP_AFFINITY.
    let Some(affinity) = (unsafe { affinity.as_ref() }).copied() else {
        call.violation("NULL Affinity".into());
        return;
    };
    let (group, mask) = call.kpcr.system_affinity();
    // SAFETY: null or the driver's GROUP_AFFINITY output.
    if let Some(previous) = unsafe { previous.as_mut() } {
        *previous = GroupAffinity { mask, group: if mask == 0 { 0 } else { group }, reserved: [0; 3] };
    }
    if let Some(processors) = processors_of(affinity) {
        apply(&call, affinity, &processors);
    }
}

/// `VOID KeRevertToUserGroupAffinityThread(PGROUP_AFFINITY PreviousAffinity)`: IRQL <= DISPATCH_LEVEL.
/// A zero mask restores the thread's original affinity (no system affinity; the thread goes back to the
/// processor it ran on before its first system affinity); a non-zero one is set as by
/// KeSetSystemGroupAffinityThread.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_revert_to_user_group_affinity_thread(previous: *const GroupAffinity) {
    let call = enter("KeRevertToUserGroupAffinityThread", DISPATCH_LEVEL);
    // SAFETY: null or the driver's GROUP_AFFINITY.
    let Some(previous) = (unsafe { previous.as_ref() }).copied() else {
        call.violation("NULL PreviousAffinity".into());
        return;
    };
    if previous.mask == 0 {
        let (_, mask) = call.kpcr.system_affinity();
        let home = (mask != 0).then(|| call.kpcr.home_processor());
        call.kpcr.set_system_affinity(0, 0, home.filter(|&home| home != call.kpcr.processor_index()));
    } else if let Some(processors) = processors_of(previous) {
        apply(&call, previous, &processors);
    } else {
        call.violation(format!("{previous:?} is neither a saved affinity nor a valid one"));
    }
}

/// `ULONG KeGetCurrentProcessorNumberEx(PPROCESSOR_NUMBER ProcNumber)`: any IRQL. Returns the current
/// processor's system index and, if ProcNumber is not NULL, its group and number.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_get_current_processor_number_ex(number: *mut ProcessorNumber) -> u32 {
    let call = enter("KeGetCurrentProcessorNumberEx", HIGH_LEVEL);
    let (group, processor) = call.kpcr.processor_number();
    // SAFETY: null or the driver's PROCESSOR_NUMBER output.
    if let Some(number) = unsafe { number.as_mut() } {
        *number = ProcessorNumber { group, number: processor, reserved: 0 };
    }
    call.kpcr.processor_index()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{self, PASSIVE_LEVEL};

    fn affinity(group: u16, mask: u64) -> GroupAffinity {
        GroupAffinity { mask, group, reserved: [0; 3] }
    }

    #[test]
    fn system_affinity_moves_the_thread_and_revert_brings_it_back() {
        // The default topology: 4 processors in group 0.
        let kpcr = cpu::enter(1);
        let mut saved = affinity(7, 7);
        // SAFETY: valid GROUP_AFFINITY structures on this stack.
        unsafe { ke_set_system_group_affinity_thread(&affinity(0, 0b1000), &mut saved) };
        assert_eq!(saved.mask, 0, "no system affinity before: the special 'revert to user' value");
        assert_eq!(kpcr.processor_index(), 3);
        let mut number = ProcessorNumber { group: 9, number: 9, reserved: 0 };
        // SAFETY: a valid PROCESSOR_NUMBER output.
        assert_eq!(unsafe { ke_get_current_processor_number_ex(&mut number) }, 3);
        assert_eq!((number.group, number.number), (0, 3));

        // Already on an allowed processor: it stays.
        let mut inner = affinity(0, 0);
        // SAFETY: as above.
        unsafe { ke_set_system_group_affinity_thread(&affinity(0, 0b1100), &mut inner) };
        assert_eq!((inner.group, inner.mask), (0, 0b1000));
        assert_eq!(kpcr.processor_index(), 3);

        // Invalid: a processor the group lacks, an empty mask, a missing group. Nothing changes.
        for bad in [affinity(0, 0b1_0000), affinity(0, 0), affinity(1, 1)] {
            // SAFETY: as above.
            unsafe { ke_set_system_group_affinity_thread(&bad, std::ptr::null_mut()) };
            assert_eq!((kpcr.processor_index(), kpcr.system_affinity()), (3, (0, 0b1100)), "{bad:?}");
        }

        // SAFETY: as above.
        unsafe { ke_revert_to_user_group_affinity_thread(&inner) };
        assert_eq!(kpcr.system_affinity(), (0, 0b1000));
        // SAFETY: as above.
        unsafe { ke_revert_to_user_group_affinity_thread(&saved) };
        assert_eq!((kpcr.processor_index(), kpcr.system_affinity()), (1, (0, 0)));
        assert!(crate::violations::take().is_empty());
    }

    #[test]
    fn at_dispatch_level_the_move_waits_for_the_irql_to_drop() {
        let kpcr = cpu::enter(0);
        kpcr.set_irql(DISPATCH_LEVEL);
        // SAFETY: a valid GROUP_AFFINITY.
        unsafe { ke_set_system_group_affinity_thread(&affinity(0, 0b100), std::ptr::null_mut()) };
        assert_eq!(kpcr.processor_index(), 0, "deferred while at DISPATCH_LEVEL");
        kpcr.set_irql(PASSIVE_LEVEL);
        assert_eq!(kpcr.processor_index(), 2);
        // Changed and changed back at DISPATCH_LEVEL: the thread never moves.
        kpcr.set_irql(DISPATCH_LEVEL);
        let mut saved = affinity(9, 9);
        // SAFETY: valid GROUP_AFFINITY structures on this stack.
        unsafe {
            ke_set_system_group_affinity_thread(&affinity(0, 0b1000), &mut saved);
            ke_revert_to_user_group_affinity_thread(&saved);
        }
        kpcr.set_irql(PASSIVE_LEVEL);
        assert_eq!((kpcr.processor_index(), kpcr.system_affinity()), (2, (0, 0b100)));
        kpcr.set_irql(DISPATCH_LEVEL);
        // SAFETY: a valid GROUP_AFFINITY.
        unsafe { ke_set_system_group_affinity_thread(std::ptr::null(), std::ptr::null_mut()) };
        kpcr.set_irql(PASSIVE_LEVEL);
        let found = crate::violations::take();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("NULL Affinity"));
    }
}
