//! Top-down under the Microsoft hypervisor: an Alder Lake P-core partition (the Hyper-V root, as with
//! memory integrity on, or a guest given the PMU) whose IA32_PERF_CAPABILITIES reports PERF_METRICS,
//! as the hardware does, while the hypervisor intercepts IA32_PERF_METRICS (0x329): any rdmsr, wrmsr
//! or rdpmc of it, and IA32_PERF_GLOBAL_CTRL's EN_PERF_METRICS bit, is a #GP, a bug check in kernel
//! mode. The driver must count everything else exactly, touch none of it, and say in Top-down Source
//! why there is no top-down (5: not used under this hypervisor).

use crate::common;

use common::cpu_models::ACTIVE;
use common::*;
use kernel_double::control::pcw;
use kernel_double::cpu::cpuid::{self, CpuModel};
use kernel_double::cpu::pmu;
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

/// The status counterset's Top-down Source (manifest id 9), and its value "not used under this
/// hypervisor".
const TOPDOWN_SOURCE: usize = 9;
const NOT_UNDER_THIS_HYPERVISOR: u64 = 5;
const PROCESSORS: u32 = 4;

fn run(model: &'static CpuModel) {
    cpuid::set_model(model);
    assert!(cpuid::perf_metrics_intercepted(0), "the model runs under the Microsoft hypervisor");
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert_eq!(driver_status()[0], ACTIVE, "PMU State: the PMU is passed through");
    for round in 1..=3 {
        for vp in 0..PROCESSORS {
            pmu::step(vp, 1000 * u64::from(vp + round));
        }
        let totals: Vec<[u64; 7]> = collect_totals().into_iter().map(|(totals, _)| totals).collect();
        assert_eq!(totals, true_totals(PROCESSORS), "round {round}: every other event is counted exactly");
    }
    let topdown_source = driver_status()[TOPDOWN_SOURCE];
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    let faults = violations::take();
    let gp = faults.iter().filter(|violation| violation.message.contains("#GP")).count();
    let first: Vec<String> = faults.iter().take(3).map(ToString::to_string).collect();
    assert!(
        faults.is_empty(),
        "{gp} #GPs (each a bug check on the real machine) in {} violations, first:\n{}",
        faults.len(),
        first.join("\n")
    );
    assert_eq!(topdown_source, NOT_UNDER_THIS_HYPERVISOR, "Top-down Source says why there is no top-down");
    assert_clean();
}

#[test]
fn hyperv_root_reporting_perf_metrics_takes_no_gp() {
    run(&cpuid::HYPERV_ROOT_ALDER_LAKE);
}

#[test]
fn hyperv_guest_with_pmu_reporting_perf_metrics_takes_no_gp() {
    run(&cpuid::HYPERV_GUEST_ALDER_LAKE_PMU);
}
