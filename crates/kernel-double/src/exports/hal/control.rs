//! Test control of the fake hal exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

pub use super::takes_resource_lists;
use super::*;

/// Makes the PMU arbiter report another actor (`true`: STATUS_DEVICE_BUSY for every allocation) or
/// none.
pub fn set_arbiter_busy(busy: bool) {
    ARBITER_BUSY.store(busy, Ordering::SeqCst);
}

/// Chooses how a HAL without resource lists refuses one.
pub fn set_list_refusal(refusal: ListRefusal) {
    *LIST_REFUSAL.lock().ignore_poison() = refusal;
}

/// HalAllocateHardwareCounters calls made so far (valid or not): the sequence numbers
/// [`fail_allocation`] takes.
pub fn allocation_calls() -> u64 {
    ALLOCATIONS.calls()
}

/// Makes HalAllocateHardwareCounters call number `index` (0-based, see [`allocation_calls`]) fail with
/// `status` and a NULL handle. Several calls may be set to fail; each failure is used once.
pub fn fail_allocation(index: u64, status: i32) {
    ALLOCATIONS.fail(index, status);
}

/// Forgets the HalAllocateHardwareCounters failures not yet injected.
pub fn clear_allocation_failures() {
    ALLOCATIONS.clear();
}

/// The current owner.
pub fn owner() -> Option<Owner> {
    *OWNER.lock().ignore_poison()
}

/// Makes another client own the counters (`true`) or releases them (`false`).
pub fn set_other_client_owns(owns: bool) {
    let mut owner = OWNER.lock().ignore_poison();
    match (owns, *owner) {
        (true, None) => *owner = Some(Owner::OtherClient),
        (false, Some(Owner::OtherClient)) => *owner = None,
        (_, current) => panic!("cannot change ownership from {current:?}"),
    }
}
