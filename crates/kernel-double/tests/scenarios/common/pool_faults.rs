//! Fault injection at every pool allocation DriverEntry makes, on the kernel build in effect: each
//! failure must make DriverEntry fail cleanly (an error status, no DriverUnload set, zero leaked pool,
//! no registration, no thread, no handle left behind); with no failure injected it succeeds and unloads
//! clean. Each attempt loads a fresh copy of the image, as a new load of the driver would.

use super::*;
use kernel_double::control::{pcw, pool, ps};
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

pub fn every_allocation_failure_in_driver_entry_fails_cleanly() {
    let mut failed_loads = 0;
    for index in 0.. {
        assert!(index < 100, "DriverEntry never succeeded");
        let mut driver = load();
        let first = pool::allocation_count();
        pool::fail_allocation(Some(first + index));
        let status = driver.driver_entry();
        pool::fail_allocation(None);
        if status == STATUS_SUCCESS {
            assert!(
                pool::allocation_count() - first <= index,
                "succeeded although allocation {index} failed"
            );
            assert!(driver.unload());
            break;
        }
        failed_loads += 1;
        assert!(status < 0, "allocation {index} failed: status {status:#x}");
        assert!(driver.unload_routine().is_none(), "a failed DriverEntry set DriverUnload");
        let report = Report::now();
        assert!(report.is_clean(), "allocation {index} failed, DriverEntry returned {status:#x}:\n{report}");
        assert!(pcw::registrations().is_empty() && ps::live_system_threads() == 0);
    }
    assert!(failed_loads >= 3, "only {failed_loads} allocations in DriverEntry");
    eprintln!("{failed_loads} allocation failures in DriverEntry handled cleanly");
    assert_eq!(violations::all(), []);
    assert_clean();
}
