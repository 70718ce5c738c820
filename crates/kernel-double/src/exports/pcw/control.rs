//! Test control of the fake pcw exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;

/// PcwRegister calls made so far: the sequence numbers [`fail_register`] takes.
pub fn register_calls() -> u64 {
    REGISTER_FAULTS.calls()
}

/// Makes PcwRegister call number `index` (0-based, see [`register_calls`]) fail with `status`.
pub fn fail_register(index: u64, status: i32) {
    REGISTER_FAULTS.fail(index, status);
}

/// PcwCreateInstance calls made so far: the sequence numbers [`fail_create_instance`] takes.
pub fn create_instance_calls() -> u64 {
    CREATE_INSTANCE_FAULTS.calls()
}

/// Makes PcwCreateInstance call number `index` (0-based, see [`create_instance_calls`]) fail with
/// `status`.
pub fn fail_create_instance(index: u64, status: i32) {
    CREATE_INSTANCE_FAULTS.fail(index, status);
}

/// Forgets the PcwRegister and PcwCreateInstance failures not yet injected.
pub fn clear_failures() {
    REGISTER_FAULTS.clear();
    CREATE_INSTANCE_FAULTS.clear();
}

/// Runs later callbacks at `irql` (PASSIVE_LEVEL, as perflib, by default; a test may raise it to show
/// that the exports' IRQL checks catch the driver's calls).
pub fn set_callback_irql(irql: u8) {
    CALLBACK_IRQL.store(irql, Ordering::SeqCst);
}

/// Every registered counterset, by name.
pub fn registrations() -> Vec<CountersetInfo> {
    let mut list: Vec<_> = with_tables(|tables| {
        tables
            .registrations
            .iter()
            .map(|(&handle, registration)| CountersetInfo {
                name: registration.name.clone(),
                counter_count: registration.descriptors.len(),
                has_callback: registration.callback != 0,
                created_instances: tables.instances.values().filter(|i| i.registration == handle).count(),
            })
            .collect()
    });
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list
}

/// The descriptors `counterset` registered, in registration order (the order of
/// [`InstanceRecord::values`]); a consumer maps counter ids and CounterMask bits through them.
pub fn descriptors(counterset: &str) -> Option<Vec<Descriptor>> {
    find(counterset).map(|(_, registration)| registration.descriptors.clone())
}

/// PcwCallbackAddCounter: a query starts using the counters in `counter_mask`.
pub fn add_counter(counterset: &str, counter_mask: u64) -> Option<i32> {
    notify(counterset, CALLBACK_ADD_COUNTER, counter_mask)
}

/// PcwCallbackRemoveCounter: a query stops using the counters in `counter_mask`.
pub fn remove_counter(counterset: &str, counter_mask: u64) -> Option<i32> {
    notify(counterset, CALLBACK_REMOVE_COUNTER, counter_mask)
}

/// PcwCallbackEnumerateInstances: the instances' names and ids (data optional).
pub fn enumerate(counterset: &str, query: &Query) -> Option<(i32, Vec<InstanceRecord>)> {
    request(counterset, query, CALLBACK_ENUMERATE_INSTANCES)
}

/// PcwCallbackCollectData (or, for a counterset without callback, its created instances' data).
pub fn collect(counterset: &str, query: &Query) -> Option<(i32, Vec<InstanceRecord>)> {
    request(counterset, query, CALLBACK_COLLECT_DATA)
}
