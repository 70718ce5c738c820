//! The PMU loses the driver's programming behind its back: resume from sleep resets every processor's
//! PMU MSRs to their power-on values and the HAL reprograms no client's counters (observed in
//! decompiled Windows 10/11 HAL builds), and tools that write MSRs without HAL arbitration (readers
//! built on WinRing0) clear event selects. Counts must keep rising afterwards, exact against the
//! virtual PMU and never backwards, on the interrupt path (Skylake) and the polling path (Zen 4, where
//! a counter reset to 0 must not read as a wrap, a 2^48 jump), and the driver must say how often it
//! reprogrammed ("PMU Reprograms"). Its power callback must be gone at unload (the report's check).

use crate::common;

use common::*;
use kernel_double::control::{callback, pcw};
use kernel_double::cpu::cpuid::{self, CpuModel};
use kernel_double::cpu::pmu;
use kernel_double::status::STATUS_SUCCESS;

const PROCESSORS: u32 = 4;
/// Index of PMU Reprograms in the status counterset's values.
const PMU_REPROGRAMS: usize = 8;

/// One collect's seven totals per processor.
fn totals() -> Vec<[u64; 7]> {
    collect_totals().into_iter().map(|(totals, _)| totals).collect()
}

/// Runs `units` of work on every processor, collects, and checks that the counts of the events the
/// plan counts (`counted`) rose by exactly the workload's events (so a PMU that stopped counting
/// fails too) and that every count matches the virtual PMU.
fn step_and_check(previous: &mut Vec<[u64; 7]>, counted: &[bool; 7], units: u64, when: &str) {
    for vp in 0..PROCESSORS {
        pmu::step(vp, units);
    }
    let now = totals();
    for (vp, (now, before)) in now.iter().zip(previous.iter()).enumerate() {
        for event in 0..7 {
            let expected = before[event] + pmu::RATES[event] * units;
            if counted[event] {
                assert_eq!(now[event], expected, "{when}: processor {vp} event {event}");
            }
        }
    }
    assert_eq!(now, true_totals(PROCESSORS), "{when}: not the virtual PMU's counts");
    *previous = now;
}

fn scenario(model: &'static CpuModel) {
    cpuid::set_model(model);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let counted: [bool; 7] = std::array::from_fn(|event| pmu::counter_of(0, event).is_some());
    let mut previous = totals();
    step_and_check(&mut previous, &counted, 1_000, "before the sleep");

    callback::suspend_resume();
    step_and_check(&mut previous, &counted, 2_000, "after a resume");
    let after_resume = driver_status()[PMU_REPROGRAMS];
    assert_eq!(after_resume, u64::from(PROCESSORS), "every processor reprogrammed once");

    // A foreign tool clears the control of the first general-purpose counter on processor 2 right
    // after a collect. A collect checks one programmed register per processor, in turn (one rdmsr),
    // so one of the next collects, at most one per register the plan programs, sees it and
    // reprograms that processor.
    let control = pmu::programmed_counters(2)
        .into_iter()
        .find_map(|(counter, _)| control_of(model, counter))
        .expect("a general-purpose counter is programmed");
    pmu::foreign_write(2, control, 0);
    let registers = pmu::programmed_counters(2).len() + 2; // the controls, fixed control, global control
    let collects = (1..=registers)
        .find(|_| {
            let _ = totals();
            driver_status()[PMU_REPROGRAMS] == after_resume + 1
        })
        .unwrap_or_else(|| panic!("the foreign write was not repaired within {registers} collects"));
    println!("{}: the foreign write was repaired at collect {collects} of at most {registers}", model.name);
    step_and_check(&mut previous, &counted, 3_000, "after a foreign write");

    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_clean();
}

/// The control MSR of `counter` if it is a general-purpose counter: IA32_PERFEVTSELx for IA32_PMCx
/// (0xC1+x) or IA32_A_PMCx (0x4C1+x); AMD PerfCtl for PerfCtr (the MSR before it).
fn control_of(model: &CpuModel, counter: u32) -> Option<u32> {
    match model.pmu {
        cpuid::PmuKind::Intel { gp, .. } => [0xC1, 0x4C1]
            .into_iter()
            .find(|base| (*base..*base + u32::from(gp)).contains(&counter))
            .map(|base| 0x186 + counter - base),
        cpuid::PmuKind::Amd { .. } => Some(counter - 1),
        cpuid::PmuKind::None => None,
    }
}

#[test]
fn skylake_counts_keep_rising_after_resume_and_a_foreign_write() {
    scenario(&cpuid::SKYLAKE);
}

#[test]
fn zen4_polled_counts_keep_rising_after_resume_and_a_foreign_write() {
    scenario(&cpuid::ZEN4);
}
