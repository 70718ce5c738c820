use super::*;
use crate::pmu::model::PmuModel;
use crate::pmu::model::tests::Detect;
use crate::pmu::placement::plan;
use std::collections::BTreeMap;

/// An MSR file that records every access.
#[derive(Default)]
struct MsrFile {
    values: BTreeMap<u32, u64>,
    writes: Vec<(u32, u64)>,
}

impl Msrs for MsrFile {
    fn read(&self, msr: u32) -> u64 {
        self.values.get(&msr).copied().unwrap_or(0)
    }
    fn write(&mut self, msr: u32, value: u64) {
        self.values.insert(msr, value);
        self.writes.push((msr, value));
    }
}

fn skylake() -> PmuModel {
    crate::pmu::model::tests::SKYLAKE_I7_6700K.model()
}

fn zen2() -> PmuModel {
    crate::pmu::model::tests::ZEN2_RYZEN9_3950X.model()
}

#[test]
fn start_enables_exactly_the_planned_counters_and_keeps_foreign_bits() {
    let model = skylake();
    let plan = plan(&model);
    let mut msrs = MsrFile::default();
    // Another client owns fixed counter 3 (global bit 35), which the plan does not use.
    let foreign = 1u64 << 35;
    assert_eq!(plan.global_ctrl() & foreign, 0);
    msrs.values.insert(msr::IA32_PERF_GLOBAL_CTRL, foreign);
    msrs.values.insert(msr::IA32_PMC0, 12345);
    start(model.vendor, &plan, &mut msrs);
    let global = msrs.values[&msr::IA32_PERF_GLOBAL_CTRL];
    assert_eq!(global, plan.global_ctrl() | foreign);
    assert_eq!(msrs.values[&msr::IA32_FIXED_CTR_CTRL], plan.fixed_ctrl());
    for assignment in plan.iter() {
        assert_eq!(msrs.values[&assignment.counter_msr], 0, "{:?} starts from 0", assignment.event);
        if let Slot::General(_) = assignment.slot {
            assert_eq!(msrs.values[&assignment.control_msr], assignment.control);
        }
    }
    // The global enable comes last, after every counter is programmed.
    assert_eq!(msrs.writes.last().unwrap().0, msr::IA32_PERF_GLOBAL_CTRL);
}

#[test]
fn counters_are_disabled_before_they_are_written() {
    let model = skylake();
    let plan = plan(&model);
    let mut msrs = MsrFile::default();
    stop_and_clear(model.vendor, &plan, &mut msrs);
    for assignment in plan.iter().filter(|a| matches!(a.slot, Slot::General(_))) {
        let control_zeroed = msrs.writes.iter().position(|&w| w == (assignment.control_msr, 0)).unwrap();
        let counter_zeroed = msrs.writes.iter().position(|&w| w == (assignment.counter_msr, 0)).unwrap();
        assert!(control_zeroed < counter_zeroed);
    }
}

#[test]
fn stop_clears_everything_start_set_and_only_that() {
    let model = skylake();
    let plan = plan(&model);
    let mut msrs = MsrFile::default();
    let foreign = 1u64 << 35; // fixed counter 3, not in the plan
    msrs.values.insert(msr::IA32_PERF_GLOBAL_CTRL, foreign);
    msrs.values.insert(msr::IA32_FIXED_CTR_CTRL, 0xB << 12); // fixed counter 3's field
    start(model.vendor, &plan, &mut msrs);
    stop_and_clear(model.vendor, &plan, &mut msrs);
    assert_eq!(msrs.values[&msr::IA32_PERF_GLOBAL_CTRL], foreign);
    assert_eq!(msrs.values[&msr::IA32_FIXED_CTR_CTRL], 0xB << 12);
    assert_eq!(msrs.writes.last().unwrap(), &(msr::IA32_PERF_GLOBAL_OVF_CTRL, plan.global_ctrl()));
    for assignment in plan.iter() {
        assert_eq!(msrs.values[&assignment.counter_msr], 0);
    }
}

#[test]
fn amd_without_perfmon_v2_uses_no_global_register() {
    let model = zen2();
    assert!(!model.amd_perfmon_v2);
    let plan = plan(&model);
    let mut msrs = MsrFile::default();
    start(model.vendor, &plan, &mut msrs);
    stop_and_clear(model.vendor, &plan, &mut msrs);
    let touched: Vec<u32> = msrs.writes.iter().map(|&(msr, _)| msr).collect();
    assert!(!touched.contains(&msr::AMD_PERF_CNTR_GLOBAL_CTL));
    assert!(!touched.contains(&msr::IA32_PERF_GLOBAL_CTRL));
    assert!(plan.iter().all(|assignment| assignment.control & crate::pmu::encoding::EVTSEL_EN != 0));
}

#[test]
fn the_status_register_is_the_vendors_or_none_without_global_registers() {
    let skylake = skylake();
    assert_eq!(global_status_register(skylake.vendor, &plan(&skylake)), Some(msr::IA32_PERF_GLOBAL_STATUS));
    let zen4 = crate::pmu::model::tests::ZEN4_RYZEN9_7950X.model();
    assert_eq!(global_status_register(zen4.vendor, &plan(&zen4)), Some(msr::AMD_PERF_CNTR_GLOBAL_STATUS));
    let zen2 = zen2();
    assert_eq!(global_status_register(zen2.vendor, &plan(&zen2)), None);
}

/// What `start` programs reads back as intact; a power-on reset (Intel: counters and controls 0,
/// IA32_PERF_GLOBAL_CTRL with the GP enables set) or a cleared event select does not.
#[test]
fn intact_until_a_reset_or_a_foreign_write() {
    for model in [skylake(), zen2(), crate::pmu::model::tests::ZEN4_RYZEN9_7950X.model()] {
        let plan = plan(&model);
        let mut msrs = MsrFile::default();
        start(model.vendor, &plan, &mut msrs);
        assert!(Programming::of(model.vendor, &plan).intact(&msrs), "{:?}: as started", model.vendor);
        let writes = msrs.writes.len();

        let mut reset = MsrFile::default();
        reset.values.insert(msr::IA32_PERF_GLOBAL_CTRL, 0xF);
        assert!(
            !Programming::of(model.vendor, &plan).intact(&reset),
            "{:?}: after a power-on reset",
            model.vendor
        );

        let general = plan.iter().find(|a| matches!(a.slot, Slot::General(_))).unwrap();
        msrs.values.insert(general.control_msr, 0);
        assert!(
            !Programming::of(model.vendor, &plan).intact(&msrs),
            "{:?}: event select cleared",
            model.vendor
        );
        assert_eq!(msrs.writes.len(), writes, "the check writes nothing");
    }
}

/// Fixed counters and the global enable are checked too (Intel): a tool that clears only
/// IA32_FIXED_CTR_CTRL or IA32_PERF_GLOBAL_CTRL is caught, and bits of other owners do not matter.
#[test]
fn intact_checks_the_shared_registers_by_the_plans_bits_only() {
    let model = skylake();
    let plan = plan(&model);
    let mut msrs = MsrFile::default();
    start(model.vendor, &plan, &mut msrs);
    msrs.values.insert(msr::IA32_PERF_GLOBAL_CTRL, plan.global_ctrl() | 1 << 35);
    assert!(Programming::of(model.vendor, &plan).intact(&msrs), "a foreign owner's bit");
    msrs.values.insert(msr::IA32_FIXED_CTR_CTRL, 0);
    assert!(!Programming::of(model.vendor, &plan).intact(&msrs), "fixed counters disabled");
    start(model.vendor, &plan, &mut msrs);
    msrs.values.insert(msr::IA32_PERF_GLOBAL_CTRL, 0);
    assert!(!Programming::of(model.vendor, &plan).intact(&msrs), "global enables cleared");
}

#[test]
fn check_turns_cover_every_check_in_each_cycle_and_catch_a_change_in_one() {
    let model = skylake();
    let plan = plan(&model);
    let programming = Programming::of(model.vendor, &plan);
    let mut msrs = MsrFile::default();
    start(model.vendor, &plan, &mut msrs);
    assert!((0..3 * TURNS).all(|turn| programming.intact_in_turn(turn, &msrs)));
    // Each register the checks read, cleared alone, is caught by some turn of every cycle.
    let registers: Vec<u32> = programming.checks[..programming.len].iter().map(|check| check.0).collect();
    assert!(registers.len() >= 2);
    for register in registers {
        let kept = msrs.read(register);
        msrs.write(register, 0);
        for cycle in 0..3 {
            let turns = cycle * TURNS..(cycle + 1) * TURNS;
            assert!(turns.clone().any(|turn| !programming.intact_in_turn(turn, &msrs)), "{register:#x}");
        }
        msrs.write(register, kept);
    }
    let nothing = Programming { checks: [(0, 0, 0); MAX_CHECKS], len: 0, turns: None };
    assert!(nothing.intact_in_turn(5, &msrs), "no checks: every turn holds");
}

#[test]
fn release_gives_back_the_power_on_enables_and_only_the_plans() {
    let model = skylake();
    let plan = plan(&model);
    let mut msrs = MsrFile::default();
    let power_on = (1u64 << model.gp_counters) - 1;
    let foreign = 1u64 << 35; // fixed counter 3, another client's
    msrs.values.insert(msr::IA32_PERF_GLOBAL_CTRL, power_on | foreign);
    start(model.vendor, &plan, &mut msrs);
    release(model.vendor, &plan, &mut msrs);
    // The plan's general-purpose enables back at 1, its fixed counters' at 0, the foreign bit kept.
    let plan_gp = plan.global_ctrl() & 0xFFFF_FFFF;
    assert_ne!(plan_gp, 0);
    assert_eq!(msrs.values[&msr::IA32_PERF_GLOBAL_CTRL], power_on | foreign);
    assert_eq!(msrs.values[&msr::IA32_FIXED_CTR_CTRL], 0);
    for assignment in plan.iter() {
        assert_eq!(msrs.values[&assignment.counter_msr], 0);
        if let Slot::General(_) = assignment.slot {
            assert_eq!(msrs.values[&assignment.control_msr], 0, "{:?} stopped", assignment.event);
        }
    }
    // Even where the enables were found clear: the HAL relies on their power-on values.
    msrs.values.insert(msr::IA32_PERF_GLOBAL_CTRL, 0);
    start(model.vendor, &plan, &mut msrs);
    release(model.vendor, &plan, &mut msrs);
    assert_eq!(msrs.values[&msr::IA32_PERF_GLOBAL_CTRL], plan_gp);
}

#[test]
fn amd_perfmon_v2_release_gives_back_every_planned_enable() {
    let model = crate::pmu::model::tests::ZEN4_RYZEN9_7950X.model();
    assert!(model.amd_perfmon_v2);
    let plan = plan(&model);
    let mut msrs = MsrFile::default();
    let power_on = (1u64 << model.gp_counters) - 1;
    msrs.values.insert(msr::AMD_PERF_CNTR_GLOBAL_CTL, power_on);
    start(model.vendor, &plan, &mut msrs);
    release(model.vendor, &plan, &mut msrs);
    assert_eq!(msrs.values[&msr::AMD_PERF_CNTR_GLOBAL_CTL], power_on);
    assert!(plan.iter().all(|assignment| msrs.values[&assignment.control_msr] == 0));
}
