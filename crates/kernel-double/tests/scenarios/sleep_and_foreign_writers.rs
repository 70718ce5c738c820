//! The PMU loses the driver's programming behind its back: resume from sleep resets every processor's
//! PMU MSRs to their power-on values and the HAL reprograms no client's counters (observed in
//! decompiled Windows 10/11 HAL builds), and tools that write MSRs without HAL arbitration (readers
//! built on WinRing0) clear event selects. Counts must keep rising afterwards, exact against the
//! virtual PMU and never backwards, on the interrupt path (Skylake) and the polling path (Zen 4, where
//! a counter reset to 0 must not read as a wrap, a 2^48 jump), and the driver must say how often it
//! reprogrammed ("PMU Reprograms"). Its power callback must be gone at unload (the report's check).

use crate::common;

use common::counting::*;
use common::*;
use kernel_double::control::{callback, pcw};
use kernel_double::cpu::cpuid::{self, CpuModel};
use kernel_double::cpu::pmu;
use kernel_double::status::STATUS_SUCCESS;

const PROCESSORS: u32 = 4;

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
    // so one of the next collects, at most one per register the plan programs, sees it and repairs
    // that processor.
    let control = pmu::programmed_counters(2)
        .into_iter()
        .find_map(|(counter, _)| control_of(model, counter))
        .expect("a general-purpose counter is programmed");
    let registers = programmed_registers(model, 2); // the event selects, fixed control, global control
    pmu::foreign_write(2, control, 0);
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

#[test]
fn skylake_counts_keep_rising_after_resume_and_a_foreign_write() {
    scenario(&cpuid::SKYLAKE);
}

#[test]
fn zen4_polled_counts_keep_rising_after_resume_and_a_foreign_write() {
    scenario(&cpuid::ZEN4);
}
