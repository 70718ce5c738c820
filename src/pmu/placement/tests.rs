//! The plan for every processor of the detection table (`model/tests.rs`), as exact register values.

use super::*;
use crate::pmu::encoding::{EVTSEL_EDGE, EVTSEL_INT, EVTSEL_INV, FIXED_CTRL_PMI, evtsel};
use crate::pmu::events::intel_encoding;
use crate::pmu::model::tests::{self as cpus, Detect, TABLE};
use crate::pmu::model::{Detection, PmuModel};
use Event::*;

#[allow(clippy::too_many_arguments)]
const fn a(
    event: Event,
    hardware: HardwareCounter,
    counter_msr: u32,
    control_msr: u32,
    control: u64,
    global_bit: Option<u8>,
    hal_index: u8,
    width: u8,
) -> Assignment {
    // RDPMC: Intel fixed j is 2^30 + j and GP i is i; AMD core counters only below 6.
    let rdpmc = match hardware {
        HardwareCounter::Fixed(j) => Some(RDPMC_FIXED | j as u32),
        HardwareCounter::General(i) if counter_msr >= 0xC001_0000 && i >= 6 => None,
        HardwareCounter::General(i) => Some(i as u32),
    };
    Assignment { event, hardware, counter_msr, rdpmc, control_msr, control, global_bit, hal_index, width }
}

fn set(events: &[Event]) -> EventSet {
    events.iter().fold(EventSet::EMPTY, |set, &event| set.with(event))
}

fn assignments(plan: &CounterPlan) -> Vec<Assignment> {
    plan.iter().copied().collect()
}

/// Intel plan with the three fixed counters and architectural events on the first GP counters.
fn intel_fixed_three(width: u8) -> [Assignment; 3] {
    [
        a(Instructions, HardwareCounter::Fixed(0), 0x309, 0x38D, 0x00B, Some(32), 32, width),
        a(CoreCycles, HardwareCounter::Fixed(1), 0x30A, 0x38D, 0x0B0, Some(33), 33, width),
        a(ReferenceCycles, HardwareCounter::Fixed(2), 0x30B, 0x38D, 0xB00, Some(34), 34, width),
    ]
}

#[test]
fn skylake_plan() {
    let plan = plan(&cpus::SKYLAKE_I7_6700K.model());
    // General-purpose counters first, then the fixed ones: counters in status bit order.
    let mut expected = vec![
        a(LlcMisses, HardwareCounter::General(0), 0xC1, 0x186, 0x0053_412E, Some(0), 0, 48),
        a(LlcReferences, HardwareCounter::General(1), 0xC2, 0x187, 0x0053_4F2E, Some(1), 1, 48),
        a(BranchMispredicts, HardwareCounter::General(2), 0xC3, 0x188, 0x0053_00C5, Some(2), 2, 48),
        a(Branches, HardwareCounter::General(3), 0xC4, 0x189, 0x0053_00C4, Some(3), 3, 48),
    ];
    expected.extend(intel_fixed_three(48));
    assert_eq!(assignments(&plan), expected);
    assert_eq!(plan.len(), 7);
    assert_eq!(plan.counted(), EventSet::DEFAULT);
    assert!(plan.unavailable().is_empty() && plan.dropped().is_empty());
    assert_eq!(plan.global_ctrl(), 0x7_0000_000F);
    assert_eq!(plan.fixed_ctrl(), 0xBBB);
}

#[test]
fn skylake_plan_without_pmi_has_no_interrupt_bits() {
    let plan = plan_with_pmi(&cpus::SKYLAKE_I7_6700K.model(), false);
    assert_eq!(plan.fixed_ctrl(), 0x333);
    assert_eq!(plan.get(LlcMisses).map(|a| a.control), Some(0x0043_412E));
    for a in plan.iter() {
        let interrupt_bits = match a.hardware {
            HardwareCounter::Fixed(j) => FIXED_CTRL_PMI << (4 * j),
            HardwareCounter::General(_) => EVTSEL_INT,
        };
        assert_eq!(a.control & interrupt_bits, 0, "{:?}", a.event);
    }
}

#[test]
fn alder_lake_plans_are_the_same_on_both_core_types_and_without_e_cores() {
    let skylake = plan(&cpus::SKYLAKE_I7_6700K.model());
    for cpu in
        [&cpus::ALDER_LAKE_I9_12900K_P, &cpus::ALDER_LAKE_I9_12900K_E, &cpus::ALDER_LAKE_I9_12900K_P_ONLY]
    {
        // 6 or 8 GP counters and 3 or 4 fixed ones: the plan needs 4 and 3.
        assert_eq!(plan(&cpu.model()), skylake, "{}", cpu.name);
    }
}

#[test]
fn lynnfield_plan_skips_the_events_cpuid_marks_unavailable() {
    let plan = plan(&cpus::LYNNFIELD_I7_860.model());
    assert_eq!(
        assignments(&plan),
        [
            a(LlcMisses, HardwareCounter::General(0), 0xC1, 0x186, 0x0053_412E, Some(0), 0, 48),
            a(LlcReferences, HardwareCounter::General(1), 0xC2, 0x187, 0x0053_4F2E, Some(1), 1, 48),
            a(Branches, HardwareCounter::General(2), 0xC3, 0x188, 0x0053_00C4, Some(2), 2, 48),
            a(Instructions, HardwareCounter::Fixed(0), 0x309, 0x38D, 0x00B, Some(32), 32, 48),
            a(CoreCycles, HardwareCounter::Fixed(1), 0x30A, 0x38D, 0x0B0, Some(33), 33, 48),
        ]
    );
    assert_eq!(plan.unavailable(), set(&[ReferenceCycles, BranchMispredicts]));
    assert!(plan.dropped().is_empty());
    assert_eq!(plan.fixed_ctrl(), 0x0BB);
    assert_eq!(plan.global_ctrl(), 0x3_0000_0007);
}

#[test]
fn conroe_plan_uses_the_assumed_fixed_counters_and_drops_the_branch_pair() {
    let plan = plan(&cpus::CONROE_X6800.model());
    let mut expected = vec![
        a(LlcMisses, HardwareCounter::General(0), 0xC1, 0x186, 0x0053_412E, Some(0), 0, 40),
        a(LlcReferences, HardwareCounter::General(1), 0xC2, 0x187, 0x0053_4F2E, Some(1), 1, 40),
    ];
    expected.extend(intel_fixed_three(40));
    assert_eq!(assignments(&plan), expected);
    assert_eq!(plan.dropped(), set(&[BranchMispredicts, Branches]));
    assert!(plan.unavailable().is_empty());
}

#[test]
fn intel_without_fixed_counters_puts_everything_on_general_purpose_counters_by_priority() {
    let model = PmuModel { fixed_counters: 0, fixed_width: 0, ..cpus::CONROE_MODEL };
    let plan = plan(&model);
    assert_eq!(
        assignments(&plan),
        [
            a(Instructions, HardwareCounter::General(0), 0xC1, 0x186, 0x0053_00C0, Some(0), 0, 40),
            a(CoreCycles, HardwareCounter::General(1), 0xC2, 0x187, 0x0053_003C, Some(1), 1, 40),
        ]
    );
    assert_eq!(
        plan.dropped(),
        set(&[ReferenceCycles, LlcReferences, LlcMisses, Branches, BranchMispredicts])
    );
    assert_eq!(plan.fixed_ctrl(), 0);
}

fn zen_core_plan(pmi: bool, global: bool) -> Vec<Assignment> {
    let int = if pmi { EVTSEL_INT } else { 0 };
    let bit = |i: u8| global.then_some(i);
    vec![
        a(
            Instructions,
            HardwareCounter::General(0),
            0xC001_0201,
            0xC001_0200,
            0x0043_00C0 | int,
            bit(0),
            0,
            48,
        ),
        a(
            CoreCycles,
            HardwareCounter::General(1),
            0xC001_0203,
            0xC001_0202,
            0x0043_0076 | int,
            bit(1),
            1,
            48,
        ),
        a(LlcMisses, HardwareCounter::General(2), 0xC001_0205, 0xC001_0204, 0x0043_0964 | int, bit(2), 2, 48),
        a(
            LlcReferences,
            HardwareCounter::General(3),
            0xC001_0207,
            0xC001_0206,
            0x0043_FF60 | int,
            bit(3),
            3,
            48,
        ),
        a(
            BranchMispredicts,
            HardwareCounter::General(4),
            0xC001_0209,
            0xC001_0208,
            0x0043_00C3 | int,
            bit(4),
            4,
            48,
        ),
        a(Branches, HardwareCounter::General(5), 0xC001_020B, 0xC001_020A, 0x0043_00C2 | int, bit(5), 5, 48),
    ]
}

#[test]
fn zen2_and_zen3_plans_count_six_events_and_reference_cycles_where_mperf_is() {
    // Zen 2's dump keeps no leaf 6: reference cycles cannot be counted. Zen 3's reports MPERF.
    for (cpu, mperf) in [(&cpus::ZEN2_RYZEN9_3950X, false), (&cpus::ZEN3_RYZEN9_5900X, true)] {
        let plan = plan(&cpu.model());
        assert_eq!(assignments(&plan), zen_core_plan(false, false), "{}", cpu.name);
        assert_eq!(plan.reference_from_mperf(), mperf, "{}", cpu.name);
        assert_eq!(
            plan.unavailable(),
            if mperf { set(&[]) } else { set(&[ReferenceCycles]) },
            "{}",
            cpu.name
        );
        assert_eq!(plan.counted().contains(ReferenceCycles), mperf, "{}", cpu.name);
        assert!(plan.dropped().is_empty());
        assert_eq!(plan.global_ctrl(), 0);
        assert_eq!(plan.fixed_ctrl(), 0);
    }
}

#[test]
fn zen4_and_zen5_plans_use_perfmon_v2_and_count_reference_cycles_from_mperf() {
    for cpu in [&cpus::ZEN4_RYZEN9_7950X, &cpus::ZEN5_RYZEN9_9950X] {
        let plan = plan(&cpu.model());
        // Global control, but no INT bit: the AMD HAL calls no client overflow handler. The six core
        // counters count the other six events; no counter counts reference cycles.
        assert_eq!(assignments(&plan), zen_core_plan(false, true), "{}", cpu.name);
        assert!(plan.reference_from_mperf(), "{}", cpu.name);
        assert!(plan.unavailable().is_empty() && plan.dropped().is_empty(), "{}", cpu.name);
        assert_eq!(plan.global_ctrl(), 0x3F);
    }
}

#[test]
fn zen4_without_mperf_counts_reference_cycles_on_event_120h_only_with_a_seventh_counter() {
    // A virtual machine whose CPUID leaf 6 reports no MPERF.
    let model = PmuModel { aperf_mperf: false, ..cpus::ZEN4_MODEL };
    let six = plan(&model);
    assert!(!six.reference_from_mperf());
    assert_eq!(six.dropped(), set(&[ReferenceCycles]));
    let model = PmuModel { gp_counters: 7, ..model };
    let plan = plan(&model);
    assert_eq!(
        plan.get(ReferenceCycles),
        Some(&a(
            ReferenceCycles,
            HardwareCounter::General(6),
            0xC001_020D,
            0xC001_020C,
            0x0001_0043_0020,
            Some(6),
            6,
            48
        ))
    );
    assert!(plan.dropped().is_empty() && plan.unavailable().is_empty());
}

#[test]
fn amd_legacy_counters_before_perfctr_core() {
    // *Synthetic*: a family 10h (K10) model, 4 legacy counters.
    let model =
        PmuModel { family: 0x10, model: 0x04, gp_counters: 4, amd_core_extended: false, ..cpus::ZEN2_MODEL };
    let plan = plan(&model);
    assert_eq!(
        assignments(&plan),
        [
            a(Instructions, HardwareCounter::General(0), 0xC001_0004, 0xC001_0000, 0x0043_00C0, None, 0, 48),
            a(CoreCycles, HardwareCounter::General(1), 0xC001_0005, 0xC001_0001, 0x0043_0076, None, 1, 48),
            a(LlcMisses, HardwareCounter::General(2), 0xC001_0006, 0xC001_0002, 0x0043_077E, None, 2, 48),
            a(LlcReferences, HardwareCounter::General(3), 0xC001_0007, 0xC001_0003, 0x0043_077D, None, 3, 48),
        ]
    );
    assert_eq!(plan.unavailable(), set(&[ReferenceCycles]));
    assert_eq!(plan.dropped(), set(&[BranchMispredicts, Branches]));
}

#[test]
fn amd_family_15h_puts_its_constrained_events_on_counters_0_to_2() {
    // *Synthetic*: a family 15h (Piledriver) model with PerfCtrExtCore.
    let model = PmuModel { family: 0x15, model: 0x02, ..cpus::ZEN2_MODEL };
    let plan = plan(&model);
    let placed: Vec<(Event, HardwareCounter, u64)> =
        plan.iter().map(|a| (a.event, a.hardware, a.control)).collect();
    assert_eq!(
        placed,
        [
            (CoreCycles, HardwareCounter::General(0), 0x0043_0076),
            (LlcMisses, HardwareCounter::General(1), 0x0043_077E),
            (LlcReferences, HardwareCounter::General(2), 0x0043_077D),
            (Instructions, HardwareCounter::General(3), 0x0043_00C0),
            (BranchMispredicts, HardwareCounter::General(4), 0x0043_00C3),
            (Branches, HardwareCounter::General(5), 0x0043_00C2),
        ]
    );
}

#[test]
fn counters_are_matched_to_what_each_event_allows() {
    let candidate = |mask| (Instructions, intel_encoding(Instructions, 6, 0x5E).unwrap(), mask);
    let assigned = |masks: &[u8]| {
        let candidates: Vec<_> = masks.iter().map(|&mask| candidate(mask)).collect();
        assign_counters(&candidates).map(|counters| counters[..masks.len()].to_vec())
    };
    assert_eq!(assigned(&[]), Some(vec![]));
    assert_eq!(assigned(&[0b11, 0b01]), Some(vec![1, 0]), "the first moves over for the second");
    assert_eq!(assigned(&[0b11, 0b11, 0b01]), None, "three events limited to counters 0-1");
    assert_eq!(assigned(&[0b110, 0b011, 0b101]), Some(vec![1, 0, 2]));
    assert_eq!(assigned(&[0]), None, "an event allowed nowhere");
    assert_eq!(assigned(&[0xFF; 8]), Some((0..8).collect()));
}

#[test]
fn a_custom_event_restricted_to_some_counters_is_placed_there_or_dropped() {
    use crate::pmu::profile::{Profile, Selection};
    let model = cpus::SKYLAKE_I7_6700K.model();
    let mut selection = Selection { profile: Profile::Custom, ..Selection::default() };
    selection.custom[0] = Some(Encoding::new(0xA3, 0x04));
    selection.custom[1] = Some(Encoding { counters: 0b0100, ..Encoding::new(0x48, 0x01) });
    selection.custom[2] = Some(Encoding { counters: 0b0100, ..Encoding::new(0x48, 0x02) });
    let plan = plan_for(&model, &Wanted::of(&selection), true);
    assert_eq!(plan.get(Custom1).map(|a| a.hardware), Some(HardwareCounter::General(2)));
    assert_eq!(plan.get(Custom0).map(|a| a.hardware), Some(HardwareCounter::General(0)));
    assert!(plan.dropped().contains(Custom2), "counter 2 is taken");
}

#[test]
fn an_eight_counter_core_counts_eight_custom_events_beside_its_fixed_counters() {
    // An i9-12900K without E-cores (and Sapphire Rapids) has 8 general-purpose counters and 4 fixed:
    // instructions and both cycle counts take fixed counters 0-2, and all 8 custom events a
    // general-purpose counter each, in order.
    use crate::pmu::fold::OwnedMask;
    use crate::pmu::model::PERF_CAPABILITIES_PERF_METRICS;
    use crate::pmu::profile::{Profile, Selection};
    for cpu in [&cpus::ALDER_LAKE_I9_12900K_P_ONLY, &cpus::SAPPHIRE_RAPIDS_W9_3475X] {
        let model = cpu.model().with_perf_capabilities(|| PERF_CAPABILITIES_PERF_METRICS);
        assert_eq!((model.gp_counters, model.fixed_counters), (8, 4), "{}", cpu.name);
        let mut selection = Selection { profile: Profile::Custom, ..Selection::default() };
        for (n, place) in selection.custom.iter_mut().enumerate() {
            *place = Some(Encoding::new(0x10 + n as u16, 0x01));
        }
        let plan = plan_for(&model, &Wanted::of(&selection), true);
        assert_eq!(plan.len(), MAX_ASSIGNMENTS, "{}", cpu.name);
        for (n, &event) in Event::CUSTOM.iter().enumerate() {
            assert_eq!(
                plan.get(event).map(|a| a.hardware),
                Some(HardwareCounter::General(n as u8)),
                "{}",
                cpu.name
            );
        }
        assert_eq!(plan.dropped(), EventSet::EMPTY, "{}", cpu.name);
        // The overflow handler's bits: the 11 assignments' and fixed counter 3's, its rank the 12th.
        let owned = OwnedMask::new(plan.overflow_bits()).expect("within the counters");
        assert_eq!(owned.rank_of(35), Some(MAX_ASSIGNMENTS), "{}", cpu.name);
    }
}

#[test]
fn every_plan_of_the_table_is_consistent() {
    for (cpu, detection) in TABLE {
        let Detection::Usable(model) = detection else { continue };
        for pmi in [false, true] {
            let plan = plan_with_pmi(&model, pmi);
            let all: Vec<Assignment> = assignments(&plan);
            assert!(!plan.is_empty() && plan.len() == all.len(), "{}", cpu.name);
            for (i, x) in all.iter().enumerate() {
                for y in &all[i + 1..] {
                    assert_ne!(x.hardware, y.hardware, "{}: shared counter", cpu.name);
                    assert_ne!(x.event, y.event, "{}: event counted twice", cpu.name);
                    assert_ne!(x.counter_msr, y.counter_msr, "{}: shared counter", cpu.name);
                    assert_ne!(x.hal_index, y.hal_index, "{}: shared HAL index", cpu.name);
                    if x.global_bit.is_some() {
                        assert_ne!(x.global_bit, y.global_bit, "{}: shared global bit", cpu.name);
                    }
                    if !matches!(
                        (x.hardware, y.hardware),
                        (HardwareCounter::Fixed(_), HardwareCounter::Fixed(_))
                    ) {
                        assert_ne!(x.control_msr, y.control_msr, "{}: shared event select", cpu.name);
                    }
                }
                match x.hardware {
                    HardwareCounter::Fixed(j) => assert!(j < model.fixed_counters, "{}", cpu.name),
                    HardwareCounter::General(i) => assert!(i < model.gp_counters, "{}", cpu.name),
                }
                let interrupt = match x.hardware {
                    HardwareCounter::Fixed(j) => x.control & FIXED_CTRL_PMI << (4 * j) != 0,
                    HardwareCounter::General(_) => x.control & EVTSEL_INT != 0,
                };
                assert_eq!(interrupt, pmi, "{}", cpu.name);
            }
            // Every event is counted, unavailable or dropped, and only one of these.
            let counted = plan.counted();
            for event in EventSet::DEFAULT.iter() {
                let states = [counted, plan.unavailable(), plan.dropped()]
                    .iter()
                    .filter(|s| s.contains(event))
                    .count();
                assert_eq!(states, 1, "{}: {event:?}", cpu.name);
            }
            // Instructions and core cycles are always counted on a usable model.
            assert!(counted.contains(Instructions) && counted.contains(CoreCycles), "{}", cpu.name);
            // Counters follow their status bits, so that each is its own overflow rank.
            let bits: Vec<u8> = all.iter().filter_map(|x| x.global_bit).collect();
            assert!(
                bits.windows(2).all(|pair| pair[0] < pair[1]),
                "{}: counters not in status bit order",
                cpu.name
            );
        }
    }
}

#[test]
fn topdown_profile_on_skylake_takes_every_general_purpose_counter() {
    let model = cpus::SKYLAKE_I7_6700K.model();
    let plan = plan_for(&model, &topdown(), true);
    assert_eq!(plan.topdown_width(), Some(4));
    let general: Vec<Event> = plan
        .iter()
        .filter(|assignment| matches!(assignment.hardware, HardwareCounter::General(_)))
        .map(|assignment| assignment.event)
        .collect();
    assert_eq!(general, [SlotsNotDelivered, SlotsIssued, SlotsRetired, RecoveryCycles]);
    assert_eq!(
        plan.dropped(),
        set(&[LlcMisses, LlcReferences, BranchMispredicts, Branches]),
        "4 counters: the inputs come first"
    );
    // The default profile counts no input.
    assert_eq!(plan_with_pmi(&model, true).topdown_width(), None);
}

#[test]
fn topdown_profile_on_zen4_uses_three_inputs_and_keeps_a_counter() {
    let model = cpus::ZEN4_RYZEN9_7950X.model();
    let plan = plan_for(&model, &topdown(), false);
    assert_eq!(plan.topdown_width(), Some(6));
    let counted = plan.counted();
    assert!(
        counted.contains(SlotsNotDelivered)
            && counted.contains(SlotsIssued)
            && counted.contains(SlotsRetired)
    );
    assert!(!counted.contains(RecoveryCycles), "AMD has no recovery-cycles event");
    assert!(counted.contains(LlcMisses), "six counters: instructions, cycles, three inputs, LLC misses");
    assert_eq!(plan.len(), 6);
}

#[test]
fn no_topdown_inputs_where_the_core_has_none() {
    for cpu in [&cpus::ZEN3_RYZEN9_5900X, &cpus::ALDER_LAKE_I9_12900K_P_ONLY, &cpus::CONROE_X6800] {
        let plan = plan_for(&cpu.model(), &topdown(), true);
        assert_eq!(plan.topdown_width(), None, "{}", cpu.name);
        let default = plan_with_pmi(&cpu.model(), true);
        assert_eq!(
            assignments(&plan),
            assignments(&default),
            "{}: the topdown profile adds nothing",
            cpu.name
        );
    }
}

fn topdown() -> Wanted {
    Wanted { events: EventSet::TOPDOWN, ..Wanted::DEFAULT }
}

#[test]
fn the_custom_profile_counts_its_events_after_instructions_and_cycles() {
    use crate::pmu::profile::{Profile, Selection};
    let raw = Encoding { cmask: 1, inv: true, ..Encoding::new(0xD1, 0x08) };
    let mut selection = Selection { profile: Profile::Custom, ..Selection::default() };
    selection.custom[0] = Some(raw);
    selection.custom[1] = Some(Encoding { edge: true, ..Encoding::new(0xC4, 0) });
    for cpu in [&cpus::SKYLAKE_I7_6700K, &cpus::ZEN4_RYZEN9_7950X] {
        let model = cpu.model();
        let plan = plan_for(&model, &Wanted::of(&selection), true);
        let custom = plan.get(Custom0).expect("custom event 0 is counted");
        assert_eq!(custom.control, evtsel_for(model.vendor, raw, true), "{}", cpu.name);
        assert_eq!(custom.control & (0xFF << 24), 1 << 24, "cmask");
        assert_ne!(custom.control & EVTSEL_INV, 0);
        assert!(plan.get(Custom1).is_some_and(|a| a.control & EVTSEL_EDGE != 0));
        assert!(plan.get(Custom2).is_none());
        assert!(plan.counted().contains(Instructions) && plan.counted().contains(CoreCycles));
        assert!(
            !plan.counted().contains(LlcMisses),
            "{}: the custom profile counts no default event",
            cpu.name
        );
    }
}

/// With fixed counter 3 and IA32_PERF_METRICS, the global control enables fixed counter 3 (bit 35)
/// and EN_PERF_METRICS (bit 48), without which the hardware does not split the slots.
#[test]
fn a_perf_metrics_plan_enables_fixed_counter_3_and_perf_metrics() {
    let model = cpus::ALDER_LAKE_I9_12900K_P_ONLY
        .model()
        .with_perf_capabilities(|| crate::pmu::model::PERF_CAPABILITIES_PERF_METRICS);
    let plan = plan(&model);
    assert!(plan.topdown_metrics());
    assert_eq!(plan.global_ctrl() & !plan.assigned_global_bits(), (1 << 35) | GLOBAL_CTRL_EN_PERF_METRICS);
    assert_eq!(GLOBAL_CTRL_EN_PERF_METRICS, 1 << 48);
}

#[test]
fn each_core_type_plans_only_the_custom_events_that_run_on_it() {
    use crate::pmu::profile::{Profile, Selection};
    let mut selection = Selection { profile: Profile::Custom, ..Selection::default() };
    selection.custom[0] = Some(Encoding::new(0xC4, 0x00));
    selection.custom[1] = Some(Encoding { core_types: 1 << 2, ..Encoding::new(0x71, 0x00) });
    let wanted = Wanted::of(&selection);
    let model = cpus::SKYLAKE_I7_6700K.model();
    let counted = |core_type: usize| plan_for(&model, &wanted.for_core_type(core_type), true).counted();
    // Performance (1): the efficient cores' event is left out, and is unavailable there.
    assert!(counted(1).contains(Event::Custom0) && !counted(1).contains(Event::Custom1));
    assert!(plan_for(&model, &wanted.for_core_type(1), true).unavailable().contains(Event::Custom1));
    // Efficient (2) and a processor that is not hybrid (0): both.
    for core_type in [0, 2] {
        assert!(counted(core_type).contains(Event::Custom0) && counted(core_type).contains(Event::Custom1));
    }
}
