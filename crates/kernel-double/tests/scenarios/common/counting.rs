//! Counting checks shared by the scenarios that take the driver's programming away (a resume's reset,
//! another tool's MSR writes): every processor's seven totals, exact against the virtual PMU and never
//! backwards.

use super::*;
use kernel_double::cpu::cpuid::{self, CpuModel};
use kernel_double::cpu::pmu;

/// Index of PMU Reprograms in the status counterset's values.
pub const PMU_REPROGRAMS: usize = 8;

/// Collects and checks that every count is the virtual PMU's (nothing lost, nothing invented) and
/// that none went below `previous`, which becomes the new totals.
#[track_caller]
pub fn collect_exact(previous: &mut Vec<[u64; 7]>, when: &str) {
    let now = totals();
    let processors = now.len() as u32;
    for (vp, (now, before)) in now.iter().zip(previous.iter()).enumerate() {
        assert!(
            now.iter().zip(before).all(|(now, before)| now >= before),
            "{when}: processor {vp} went backwards"
        );
    }
    assert_eq!(now, true_totals(processors), "{when}: not the virtual PMU's counts");
    *previous = now;
}

/// Runs `units` of work on each of `processors` processors, collects, and checks that the counts of
/// the events the plan counts (`counted`) rose by exactly the workload's events (so a PMU that
/// stopped counting fails too) and that every count is the virtual PMU's.
#[track_caller]
pub fn step_and_check(previous: &mut Vec<[u64; 7]>, counted: &[bool; 7], units: u64, when: &str) {
    let before = previous.clone();
    for vp in 0..before.len() as u32 {
        pmu::step(vp, units);
    }
    collect_exact(previous, when);
    for (vp, (now, before)) in previous.iter().zip(&before).enumerate() {
        for event in (0..7).filter(|&event| counted[event]) {
            assert_eq!(
                now[event],
                before[event] + pmu::RATES[event] * units,
                "{when}: processor {vp} event {event}"
            );
        }
    }
}

/// Which of the seven events processor 0's PMU is programmed to count right now.
pub fn counted_events() -> [bool; 7] {
    std::array::from_fn(|event| pmu::counter_of(0, event).is_some())
}

/// The control MSR of `counter` if it is a general-purpose counter: IA32_PERFEVTSELx for IA32_PMCx
/// (0xC1+x) or IA32_A_PMCx (0x4C1+x); AMD PerfCtl for PerfCtr (the MSR before it).
pub fn control_of(model: &CpuModel, counter: u32) -> Option<u32> {
    match model.pmu {
        cpuid::PmuKind::Intel { gp, .. } => [0xC1, 0x4C1]
            .into_iter()
            .find(|base| (*base..*base + u32::from(gp)).contains(&counter))
            .map(|base| 0x186 + counter - base),
        cpuid::PmuKind::Amd { .. } => Some(counter - 1),
        cpuid::PmuKind::None => None,
    }
}

/// The registers the driver programs on `vp` that say what its counters count: each general-purpose
/// counter's event select, IA32_FIXED_CTR_CTRL where fixed counters count, and the global enables
/// (Intel, AMD PerfMonV2).
pub fn programmed_registers(model: &CpuModel, vp: u32) -> usize {
    let counters = pmu::programmed_counters(vp);
    let selects = counters.iter().filter(|(counter, _)| control_of(model, *counter).is_some()).count();
    let fixed = usize::from(counters.len() > selects);
    let global = usize::from(!matches!(model.pmu, cpuid::PmuKind::Amd { perfmon_v2: false, .. }));
    selects + fixed + global
}
