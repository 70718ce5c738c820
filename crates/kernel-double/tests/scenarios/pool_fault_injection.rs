//! Pool fault injection in DriverEntry (tests/scenarios/common/pool_faults.rs) on the default kernel build, where
//! the driver allocates with ExAllocatePool2.

use crate::common;

#[test]
fn every_allocation_failure_in_driver_entry_fails_cleanly() {
    common::pool_faults::every_allocation_failure_in_driver_entry_fails_cleanly();
    assert_eq!(kernel_double::control::pool::allocation_count_by("ExAllocatePoolWithTag"), 0);
}
