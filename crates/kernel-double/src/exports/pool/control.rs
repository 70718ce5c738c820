//! Test control of the fake pool exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;

/// The live allocation whose guard page holds `address`, if any: what the trap handler asks about a
/// fault it cannot emulate. Takes the pool lock (the faulting thread runs driver code, which never
/// holds it).
pub fn guard_fault(address: u64) -> Option<Allocation> {
    let address = address as usize;
    let pool = POOL.lock().ignore_poison();
    pool.as_ref()?
        .live
        .values()
        .find(|allocation| {
            let guard = allocation.guard_page();
            address >= guard && address < guard + PAGE
        })
        .copied()
}

/// The description of a special pool guard page fault at `address`, if it is one, for the fault report.
pub fn describe_guard_fault(address: u64) -> Option<String> {
    guard_fault(address).map(|allocation| {
        format!(
            "special pool: access past the end of a {}-byte allocation tagged {:?} at {:#x} ({} bytes \
             past its end, in the guard page)",
            allocation.size,
            allocation.tag_text(),
            allocation.address,
            address as usize - (allocation.address + allocation.size)
        )
    })
}

/// Every allocation not yet freed (the leak report at unload).
pub fn outstanding() -> Vec<Allocation> {
    let mut live: Vec<_> = with_pool(|pool| pool.live.values().copied().collect());
    live.sort_by_key(|allocation| allocation.address);
    live
}

/// Allocations made so far.
pub fn allocation_count() -> u64 {
    ALLOCATIONS.calls()
}

/// Allocations made so far through `routine` (ExAllocatePool2 or ExAllocatePoolWithTag) with valid
/// arguments, those failed by fault injection included.
pub fn allocation_count_by(routine: &str) -> u64 {
    with_pool(|pool| pool.made_by.get(routine).copied().unwrap_or(0))
}

/// Makes the allocation with 0-based sequence number `index` (see [`allocation_count`]) fail (NULL),
/// for fault injection, replacing any failure not yet taken; `None` injects none.
pub fn fail_allocation(index: Option<u64>) {
    ALLOCATIONS.clear();
    if let Some(index) = index {
        // The allocation returns NULL; callers report a failed allocation as this status.
        ALLOCATIONS.fail(index, STATUS_INSUFFICIENT_RESOURCES);
    }
}
