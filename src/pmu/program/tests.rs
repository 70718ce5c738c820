use super::*;
use crate::pmu::model::PmuModel;
use crate::pmu::model::tests::Detect;
use crate::pmu::placement::plan;
use core::sync::atomic::AtomicU32;
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
        if let HardwareCounter::General(_) = assignment.hardware {
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
    for assignment in plan.iter().filter(|a| matches!(a.hardware, HardwareCounter::General(_))) {
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

        let general = plan.iter().find(|a| matches!(a.hardware, HardwareCounter::General(_))).unwrap();
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

/// Skylake, Zen 2 (no global registers), Zen 4 (PerfMonV2) and Alder Lake with IA32_PERF_METRICS
/// (fixed counter 3 and EN_PERF_METRICS among the checked bits).
fn models() -> [PmuModel; 4] {
    use crate::pmu::model::tests::{ALDER_LAKE_I9_12900K_P_ONLY, ZEN4_RYZEN9_7950X};
    let alder_lake = ALDER_LAKE_I9_12900K_P_ONLY
        .model()
        .with_perf_capabilities(|| crate::pmu::model::PERF_CAPABILITIES_PERF_METRICS);
    assert!(alder_lake.topdown_metrics());
    [skylake(), zen2(), ZEN4_RYZEN9_7950X.model(), alder_lake]
}

/// Calls of `intact_in_turn` from turn `phase` until one fails, at most `limit`: how many it took.
fn reads_to_detect(programming: &Programming, phase: u32, msrs: &MsrFile, limit: usize) -> Option<usize> {
    let turn = AtomicU32::new(phase);
    (1..=limit).find(|_| !programming.intact_in_turn(&turn, msrs))
}

/// The README's bound: a change to any bit a check compares, in any checked register, made at any
/// phase of the rotation (any value of the turn), is found within [`Programming::rotation`] reads;
/// Skylake's rotation is its 6 registers (4 event selects, IA32_FIXED_CTR_CTRL,
/// IA32_PERF_GLOBAL_CTRL). A rotation of 16 turns over 6 checks found IA32_PERF_GLOBAL_CTRL only at
/// turns 5 and 11: 10 reads after a change made at turn 12.
#[test]
fn any_checked_change_at_any_phase_is_found_within_the_rotation() {
    assert_eq!(Programming::of(skylake().vendor, &plan(&skylake())).rotation(), 6);
    for model in models() {
        for pmi in [false, true] {
            let plan = crate::pmu::placement::plan_with_pmi(&model, pmi && model.overflow_interrupt);
            let programming = Programming::of(model.vendor, &plan);
            let rotation = programming.rotation();
            assert!((1..=MAX_CHECKS).contains(&rotation), "{:?}", model.vendor);
            let mut msrs = MsrFile::default();
            start(model.vendor, &plan, &mut msrs);
            for phase in (0..TURNS as u32).chain([u32::MAX - 1, u32::MAX]) {
                assert_eq!(reads_to_detect(&programming, phase, &msrs, 2 * TURNS), None, "intact as started");
                for (&register, &(mask, _)) in
                    programming.registers.iter().zip(&programming.expected).take(rotation)
                {
                    let programmed = msrs.read(register);
                    for bit in (0..64).filter(|bit| mask & (1 << bit) != 0) {
                        msrs.values.insert(register, programmed ^ (1 << bit));
                        let found = reads_to_detect(&programming, phase, &msrs, rotation);
                        assert!(
                            found.is_some(),
                            "{:?}: bit {bit} of {register:#x} changed at phase {phase} not found within {rotation} reads",
                            model.vendor
                        );
                    }
                    msrs.values.insert(register, programmed);
                }
            }
        }
    }
}

/// A co-writer's INT and PC bits, fixed-counter PMI bits and other owners' bits change nothing the
/// plan counts: no check fails, in any turn, and the whole-programming check holds.
#[test]
fn bits_that_do_not_change_what_is_counted_are_not_lost_programming() {
    for model in models() {
        let plan = plan(&model);
        let programming = Programming::of(model.vendor, &plan);
        let mut msrs = MsrFile::default();
        start(model.vendor, &plan, &mut msrs);
        for assignment in plan.iter().filter(|a| matches!(a.hardware, HardwareCounter::General(_))) {
            let select = msrs.read(assignment.control_msr);
            msrs.values.insert(assignment.control_msr, select ^ EVTSEL_INT ^ EVTSEL_PC);
        }
        if model.vendor == Vendor::Intel {
            let fixed = msrs.read(msr::IA32_FIXED_CTR_CTRL);
            // Every field's PMI bit, and the whole field of fixed counters the plan does not use.
            let unused = !fixed_fields(&plan) & 0xFFFF_FFFF;
            msrs.values.insert(msr::IA32_FIXED_CTR_CTRL, (fixed ^ 0x8888_8888) | unused);
            let global = msrs.read(msr::IA32_PERF_GLOBAL_CTRL);
            msrs.values.insert(msr::IA32_PERF_GLOBAL_CTRL, global | !plan.global_ctrl());
        }
        assert!(programming.intact(&msrs), "{:?}", model.vendor);
        assert_eq!(reads_to_detect(&programming, 0, &msrs, 3 * TURNS), None, "{:?}", model.vendor);
        for assignment in plan.iter() {
            assert!(counts_as_planned(model.vendor, &plan, assignment, &msrs), "{:?}", assignment.event);
        }
    }
}

/// A repair's primitives: `stop` holds the counters without touching their values, `program_controls`
/// writes control registers only, and `counts_as_planned` tells the counter whose select another
/// tool rewrote from the others.
#[test]
fn a_repair_writes_control_registers_only_and_tells_which_counters_kept_counting() {
    for model in models() {
        let plan = plan(&model);
        let mut msrs = MsrFile::default();
        start(model.vendor, &plan, &mut msrs);
        for (n, assignment) in plan.iter().enumerate() {
            msrs.values.insert(assignment.counter_msr, 1000 + n as u64);
        }
        let first = plan.iter().find(|a| matches!(a.hardware, HardwareCounter::General(_))).unwrap();
        msrs.values.insert(first.control_msr, 0x43_01D1);
        for assignment in plan.iter() {
            let kept = counts_as_planned(model.vendor, &plan, assignment, &msrs);
            assert_eq!(kept, assignment != first, "{:?}: {:?}", model.vendor, assignment.event);
        }
        msrs.writes.clear();
        stop(model.vendor, &plan, &mut msrs);
        for assignment in plan.iter() {
            assert!(
                !counts_as_planned(model.vendor, &plan, assignment, &msrs),
                "{:?} stopped",
                assignment.event
            );
        }
        clear_status(model.vendor, &plan, &mut msrs);
        program_controls(model.vendor, &plan, &mut msrs);
        assert!(Programming::of(model.vendor, &plan).intact(&msrs), "{:?}: repaired", model.vendor);
        for (n, assignment) in plan.iter().enumerate() {
            assert_eq!(msrs.values[&assignment.counter_msr], 1000 + n as u64, "{:?} kept", assignment.event);
            assert!(msrs.writes.iter().all(|&(msr, _)| msr != assignment.counter_msr));
        }
    }
}

#[test]
fn without_checks_every_turn_holds() {
    let nothing = Programming { registers: [0; TURNS], expected: [(0, 0); TURNS], next: [0; TURNS], len: 0 };
    assert!(nothing.intact_in_turn(&AtomicU32::new(5), &MsrFile::default()));
    assert_eq!(nothing.rotation(), 0);
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
        if let HardwareCounter::General(_) = assignment.hardware {
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
