//! Test control of the fake ps exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;

/// PsCreateSystemThread calls made so far: the sequence numbers [`fail_create_system_thread`] takes.
pub fn create_system_thread_calls() -> u64 {
    CREATE_FAULTS.calls()
}

/// Makes PsCreateSystemThread call number `index` (0-based, see [`create_system_thread_calls`]) fail
/// with `status` (STATUS_INSUFFICIENT_RESOURCES is what the kernel returns when it cannot create a
/// thread), creating no thread and no handle.
pub fn fail_create_system_thread(index: u64, status: i32) {
    CREATE_FAULTS.fail(index, status);
}

/// Forgets the PsCreateSystemThread failures not yet injected.
pub fn clear_create_system_thread_failures() {
    CREATE_FAULTS.clear();
}

/// ObReferenceObjectByHandle calls made so far: the sequence numbers [`fail_reference`] takes.
pub fn reference_calls() -> u64 {
    REFERENCE_FAULTS.calls()
}

/// Makes ObReferenceObjectByHandle call number `index` (0-based, see [`reference_calls`]) fail with
/// `status`, taking no reference.
pub fn fail_reference(index: u64, status: i32) {
    REFERENCE_FAULTS.fail(index, status);
}

/// System threads started and not yet ended.
pub fn live_system_threads() -> usize {
    live_threads()
}

/// Open kernel handles.
pub fn open_handles() -> usize {
    with_objects(|objects| objects.handles.len())
}

/// Objects still referenced.
pub fn live_objects() -> usize {
    with_objects(|objects| objects.references.len())
}
