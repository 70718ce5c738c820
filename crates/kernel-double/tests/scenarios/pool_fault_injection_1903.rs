//! Pool fault injection in DriverEntry (tests/scenarios/common/pool_faults.rs) on Windows 10 1903 (build 18362),
//! where the driver allocates with ExAllocatePoolWithTag: its failures unwind as cleanly.

use crate::common;

use kernel_double::control::pool;
use kernel_double::kernel_build::{self, WINDOWS_10_1903};

#[test]
fn every_allocation_failure_in_driver_entry_fails_cleanly_on_1903() {
    kernel_build::set(WINDOWS_10_1903);
    common::pool_faults::every_allocation_failure_in_driver_entry_fails_cleanly();
    assert_eq!(pool::allocation_count_by("ExAllocatePool2"), 0);
    assert_eq!(pool::allocation_count_by("ExAllocatePoolWithTag"), pool::allocation_count());
}
