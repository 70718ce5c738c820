//! The PMU given back as the HAL expects it: after the driver's idle release, the HAL's own profiling
//! (WPR/xperf PMC sampling through its profile interface) programs an event select, relies on the
//! global control's power-on enables, and counts. A release that leaves an enable bit of
//! IA32_PERF_GLOBAL_CTRL (AMD PerfCntrGlobalCtl) clear stops it on that counter until a reboot, and
//! HalFreeHardwareCounters reports the foreign modification the HAL would see.

use crate::common;

use common::cpu_models::{ACTIVE, IDLE};
use common::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::cpuid::{self, CpuModel, PmuKind};
use kernel_double::cpu::pmu;
use kernel_double::status::STATUS_SUCCESS;
use std::time::Duration;

const PROCESSORS: u32 = 4;
const UNITS: u64 = 1000;

/// The general-purpose counters of processor `vp`.
fn gp_counters(vp: u32) -> u32 {
    match cpuid::model_of(vp).pmu {
        PmuKind::Intel { gp, .. } => u32::from(gp),
        PmuKind::Amd { counters, .. } => u32::from(counters),
        PmuKind::None => 0,
    }
}

/// Whether the HAL's profiling counts the workload's core cycles on every counter of every processor;
/// the failures, described.
fn hal_profiling_failures() -> Vec<String> {
    let mut failures = Vec::new();
    for vp in 0..PROCESSORS {
        for counter in 0..gp_counters(vp) {
            let counted = hal::hal_profile(vp, counter, UNITS);
            let expected = pmu::RATES[pmu::CORE_CYCLES] * UNITS;
            if counted != expected {
                failures.push(format!(
                    "processor {vp} counter {counter}: the HAL's profiling counted {counted}, not {expected} \
                     (global control enables {:#x} cleared)",
                    pmu::power_on_enables_cleared(vp)
                ));
            }
        }
    }
    failures
}

fn run(model: &'static CpuModel) {
    cpuid::set_model(model);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert_eq!(hal_profiling_failures(), Vec::<String>::new(), "before the driver owned anything");
    // The HAL's counting is in the virtual PMU's totals too; the driver counts from its programming on.
    let hal_counted = true_totals(PROCESSORS);

    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert_eq!(driver_status()[0], ACTIVE);
    for vp in 0..PROCESSORS {
        pmu::step(vp, 10_000);
    }
    let driver_counted: Vec<[u64; 7]> = true_totals(PROCESSORS)
        .iter()
        .zip(&hal_counted)
        .map(|(now, before)| std::array::from_fn(|event| now[event] - before[event]))
        .collect();
    assert_eq!(
        collect_totals().into_iter().map(|(totals, _)| totals).collect::<Vec<_>>(),
        driver_counted,
        "the driver's own counts"
    );
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    until_released(|| hal::owner().is_none(), Duration::from_secs(6));
    assert_eq!(driver_status()[0], IDLE);
    let released = kernel_double::violations::all();
    assert_eq!(
        hal_profiling_failures(),
        Vec::<String>::new(),
        "after the driver's idle release: {released:#?}"
    );
    for vp in 0..PROCESSORS {
        assert!(pmu::at_power_on(vp), "processor {vp}'s PMU not given back at its power-on values");
    }

    assert!(driver.unload());
    assert_eq!(hal_profiling_failures(), Vec::<String>::new(), "after unload");
    assert_clean();
}

#[test]
fn skylake_idle_release_leaves_the_hal_profiling() {
    run(&cpuid::SKYLAKE);
}

#[test]
fn zen4_perfmon_v2_idle_release_leaves_the_hal_profiling() {
    run(&cpuid::ZEN4);
}
