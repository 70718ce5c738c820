//! No boot loop: a bug check during the driver's first programming of the PMU (a #GP on a register an
//! uncovered processor or hypervisor refuses) must not repeat at the next start. The crash runs in a
//! child process (the double aborts at a bug check) that keeps the registry's hive on disk in a file;
//! the parent "reboots" from that hive: the next start registers its countersets, touches no PMU
//! register and owns nothing, and says why in its status; the administrator's re-enable (deleting
//! Parameters\HardwareGuard) and a restart count exactly again. A clean run leaves no marker behind.

use crate::common;

use common::cpu_models::ACTIVE;
use common::death::{is_child, run_child_with};
use common::*;
use kernel_double::control::dbg;
use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_DWORD};
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, msr, pmu};
use kernel_double::status::STATUS_SUCCESS;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

const TEST: &str =
    concat!(module_path!(), "::", "a_bug_check_in_the_first_programming_holds_the_next_start_off");
/// The child's hive file, from the parent.
const HIVE_FILE: &str = "PMUPCW_SCENARIO_HIVE_FILE";
/// The marker value (docs/internals.md, "No boot loop").
const MARKER: &str = "HardwareGuard";
/// PMU State 8: held off by the guard (src/pcw/driver_status.rs).
const HELD_OFF: u64 = 8;
/// Hardware Guard's counter id, and its values.
const HARDWARE_GUARD: usize = 31;
const GUARD_CLEAR: u64 = 0;
const GUARD_PENDING: u64 = 1;
const GUARD_HELD_OFF: u64 = 2;

/// PMU State and Hardware Guard, as a consumer reads them by counter id.
fn state_and_guard() -> (u64, u64) {
    let status = &collect_by_id(DRIVER_STATUS)[0].2;
    (status[0], status[HARDWARE_GUARD])
}

fn marker_in_memory() -> Option<(u32, Vec<u8>)> {
    registry::value(PARAMETERS_KEY, MARKER)
}

fn marker_on_disk() -> Option<(u32, Vec<u8>)> {
    registry::value_on_disk(PARAMETERS_KEY, MARKER)
}

/// Loads the driver on Skylake (4 processors) and runs DriverEntry.
fn start() -> kernel_double::driver::Driver {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    driver
}

#[test]
fn a_bug_check_in_the_first_programming_holds_the_next_start_off() {
    if is_child() {
        registry::persist_hive(&PathBuf::from(std::env::var_os(HIVE_FILE).expect("the parent's hive file")));
        let _driver = start();
        msr::fault_next_pmu_write(1);
        // The first query: the first programming, which bug-checks on processor 1.
        let _ = pcw::add_counter(HARDWARE_COUNTERS, u64::MAX);
        panic!("the first programming survived the #GP");
    }
    let hive = std::env::temp_dir().join(format!("pmupcw-scenario-hive-{}", std::process::id()));
    let _ = std::fs::remove_file(&hive);
    let (output, stderr) = run_child_with(TEST, &[(HIVE_FILE, hive.display().to_string())]);
    assert_eq!(output.status.signal(), Some(libc::SIGABRT), "the child did not bug-check:\n{stderr}");
    assert!(
        stderr.contains("BUG CHECK 0x0000001e (0xc0000005,") && stderr.contains("on processor 1"),
        "not the #GP's KMODE_EXCEPTION_NOT_HANDLED on processor 1:\n{stderr}"
    );

    // The reboot: the registry as the hive on disk held it at the crash.
    registry::reboot(Some(&hive));
    let _ = std::fs::remove_file(&hive);
    let mut driver = start();
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    for vp in 0..4 {
        pmu::step(vp, 5_000);
    }
    let collected = totals();
    assert_eq!(hal::owner(), None, "the start after a crash in the first programming owned the PMU again");
    assert!(msr::writes().is_empty(), "the held-off start wrote MSRs: {:?}", msr::writes());
    assert_eq!(msr::reads(), 0, "the held-off start read MSRs (IA32_PERF_CAPABILITIES at load, or a read)");
    assert_eq!(collected, vec![[0u64; 7]; 4], "the held-off start's four instances count nothing");
    assert_eq!(state_and_guard(), (HELD_OFF, GUARD_HELD_OFF), "PMU State, Hardware Guard");
    assert!(
        dbg::lines().iter().any(|line| line.text.contains("HardwareGuard")),
        "the debug output does not say why: {:?}",
        dbg::lines()
    );
    assert!(marker_on_disk().is_some(), "the held-off start cleared the marker: the next boot would loop");
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());

    // The administrator's re-enable: `reg delete ...\Parameters /v HardwareGuard /f`, then a restart.
    registry::delete_value(PARAMETERS_KEY, MARKER);
    let mut driver = start();
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(matches!(hal::owner(), Some(hal::Owner::Driver { .. })), "the re-enabled start owns nothing");
    for vp in 0..4 {
        pmu::step(vp, 7_000 + u64::from(vp));
    }
    assert_eq!(totals(), true_totals(4), "the re-enabled start's totals are not the workload's");
    assert_eq!(state_and_guard(), (ACTIVE, GUARD_CLEAR), "PMU State, Hardware Guard");
    assert_eq!(marker_on_disk(), None, "the clean read after the re-enable left the marker");
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_clean();
}

#[test]
fn a_clean_first_programming_leaves_no_trace() {
    let mut driver = start();
    assert_eq!(marker_in_memory(), None, "DriverEntry wrote the marker before any programming");
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(matches!(hal::owner(), Some(hal::Owner::Driver { .. })));
    // Set and flushed before the first programming, until a read of every processor.
    let marker = Some((REG_DWORD, 1u32.to_le_bytes().to_vec()));
    assert_eq!(
        (marker_in_memory(), marker_on_disk()),
        (marker.clone(), marker),
        "the marker before the read"
    );
    assert_eq!(state_and_guard(), (ACTIVE, GUARD_PENDING));
    for vp in 0..4 {
        pmu::step(vp, 9_000);
    }
    assert_eq!(totals(), true_totals(4));
    assert_eq!((marker_in_memory(), marker_on_disk()), (None, None), "a clean read left the marker");
    assert_eq!(state_and_guard(), (ACTIVE, GUARD_CLEAR));
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());

    // The next boot finds nothing and counts.
    registry::reboot(None);
    let mut driver = start();
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(
        matches!(hal::owner(), Some(hal::Owner::Driver { .. })),
        "the start after a clean run owns nothing"
    );
    assert_eq!(state_and_guard(), (ACTIVE, GUARD_PENDING));
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_clean();
}
