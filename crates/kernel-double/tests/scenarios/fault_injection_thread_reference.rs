//! Fault injection at the one DriverEntry call not covered by fault_injection_driver_entry.rs:
//! ObReferenceObjectByHandle on the housekeeping thread's handle. Without the thread object the
//! driver cannot wait for the thread later, so it stops it and waits through the handle
//! (ZwWaitForSingleObject) before freeing the thread's state: DriverEntry fails with the injected status
//! and leaves nothing behind, no thread still running, no pool, no handle, no registration.

use crate::common;

use kernel_double::control::{pcw, pool, ps};
use kernel_double::cpu::cpuid;
use kernel_double::report::Report;
use kernel_double::status::STATUS_INVALID_HANDLE;

#[test]
fn fault_injection_thread_reference() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = common::load();
    ps::fail_reference(ps::reference_calls(), STATUS_INVALID_HANDLE);
    let returned = driver.driver_entry();
    assert_eq!(returned, STATUS_INVALID_HANDLE, "DriverEntry returned {returned:#x}");
    assert!(driver.unload_routine().is_none());
    // The thread has ended before DriverEntry returned: nothing may still run in an image that is about
    // to be unmapped.
    assert_eq!(ps::live_system_threads(), 0, "the housekeeping thread outlived the failed DriverEntry");
    let report = Report::now();
    assert!(report.registrations.is_empty() && pcw::registrations().is_empty(), "{report}");
    assert_eq!((report.open_handles, report.live_objects), (0, 0), "{report}");
    assert!(report.violations.is_empty(), "{report}");
    let leaked = pool::outstanding();
    assert!(leaked.is_empty(), "a failed DriverEntry leaked {} allocations: {report}", leaked.len());
}
