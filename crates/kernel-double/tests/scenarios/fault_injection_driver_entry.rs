//! Fault injection at every registration and thread-creation call DriverEntry makes (pool allocations
//! are covered by pool_fault_injection.rs): the n-th PcwRegister, PcwCreateInstance and
//! PsCreateSystemThread fail, each with every failure status it documents or that PCW returns for a
//! refused argument. Each failure must make DriverEntry return that status and leave nothing behind: no
//! DriverUnload set, zero leaked pool, no registration, no thread, no handle, no HAL ownership, no
//! violation. Each attempt loads a fresh copy of the image, as a new load of the driver would. Every
//! call DriverEntry makes is failed once: the loop stops only when DriverEntry made no call with the
//! index being failed (and then succeeded).

use crate::common;

use kernel_double::control::{hal, pcw, ps};
use kernel_double::cpu::{cpuid, msr};
use kernel_double::report::Report;
use kernel_double::status::{
    NtStatus, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER, STATUS_INVALID_PARAMETER_2,
    STATUS_SUCCESS,
};

/// One kind of call to fail: its name, how many calls were made so far, how to fail call n.
struct Site {
    name: &'static str,
    calls: fn() -> u64,
    fail: fn(u64, NtStatus),
    clear: fn(),
    statuses: &'static [NtStatus],
}

const SITES: [Site; 3] = [
    Site {
        name: "PcwRegister",
        calls: pcw::register_calls,
        fail: pcw::fail_register,
        clear: pcw::clear_failures,
        statuses: &[STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER_2],
    },
    Site {
        name: "PcwCreateInstance",
        calls: pcw::create_instance_calls,
        fail: pcw::fail_create_instance,
        clear: pcw::clear_failures,
        statuses: &[STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER_2],
    },
    Site {
        name: "PsCreateSystemThread",
        calls: ps::create_system_thread_calls,
        fail: ps::fail_create_system_thread,
        clear: ps::clear_create_system_thread_failures,
        statuses: &[STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER],
    },
];

#[test]
fn fault_injection_driver_entry() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut failures = 0;
    for site in &SITES {
        let mut failed_here = 0;
        for &status in site.statuses {
            for index in 0.. {
                assert!(index < 10, "{}: DriverEntry never stopped calling it", site.name);
                let mut driver = common::load();
                let first = (site.calls)();
                (site.fail)(first + index, status);
                let returned = driver.driver_entry();
                let made = (site.calls)() - first;
                (site.clear)();
                if made <= index {
                    // No call number `index`: nothing was failed, so DriverEntry succeeded.
                    assert_eq!(returned, STATUS_SUCCESS, "{} call {index} was never made", site.name);
                    assert!(driver.unload());
                    common::assert_clean();
                    break;
                }
                let what = format!("{} call {index} failed with {status:#x}", site.name);
                assert_eq!(returned, status, "{what}: DriverEntry returned {returned:#x}");
                assert!(driver.unload_routine().is_none(), "{what}: a failed DriverEntry set DriverUnload");
                let report = Report::now();
                assert!(report.is_clean(), "{what}:\n{report}");
                assert!(pcw::registrations().is_empty() && ps::live_system_threads() == 0, "{what}");
                failures += 1;
                failed_here += 1;
            }
        }
        assert!(failed_here >= site.statuses.len(), "{}: never called by DriverEntry", site.name);
        eprintln!("{}: {failed_here} injected failures handled cleanly", site.name);
    }
    // DriverEntry registers four countersets, creates one instance and one thread.
    assert_eq!(failures, 4 * 2 + 2 + 2, "injected failures");
    assert_eq!(hal::allocation_calls(), 0, "DriverEntry asked the HAL for counters");
    assert_eq!(msr::writes(), [], "DriverEntry wrote an MSR");
    common::assert_clean();
}
