use super::*;
use crate::pmu::model::tests::{
    ALDER_LAKE_HYBRID_MODEL, ALDER_LAKE_I9_12900K_E, ALDER_LAKE_I9_12900K_P, ALDER_LAKE_I9_12900K_P_ONLY,
    ALDER_LAKE_P_ONLY_MODEL, CpuIdTable, Detect, SKYLAKE_I7_6700K, ZEN4_RYZEN9_7950X,
};
use crate::pmu::model::{ArchEvents, PERF_CAPABILITIES_PERF_METRICS, Unusable};

fn described(core_type: CoreType, model: PmuModel) -> ProcessorDescription {
    ProcessorDescription { core_type, detection: Detection::Usable(model) }
}

#[test]
fn core_types_come_from_leaf_1ah_on_hybrid_processors_only() {
    assert_eq!(CoreType::detect(CpuIdTable(ALDER_LAKE_I9_12900K_P.leaves)), CoreType::Performance);
    assert_eq!(CoreType::detect(CpuIdTable(ALDER_LAKE_I9_12900K_E.leaves)), CoreType::Efficient);
    // No hybrid flag (leaf 7 absent from these tables): uniform, whatever leaf 1AH would say.
    for cpu in [&ALDER_LAKE_I9_12900K_P_ONLY, &SKYLAKE_I7_6700K, &ZEN4_RYZEN9_7950X] {
        assert_eq!(CoreType::detect(CpuIdTable(cpu.leaves)), CoreType::Uniform, "{}", cpu.name);
    }
}

#[test]
fn core_type_values_are_those_the_counters_publish() {
    let values: Vec<u8> = CoreType::ALL.iter().map(|&core_type| core_type as u8).collect();
    assert_eq!(values, [0, 1, 2]);
}

#[test]
fn a_uniform_machine_is_its_processors_model() {
    let model = SKYLAKE_I7_6700K.model();
    let machine = Machine::of([described(CoreType::Uniform, model); 4]);
    assert_eq!(machine, Machine::from(Detection::Usable(model)));
    assert!(!machine.hybrid());
    assert_eq!(machine.models().collect::<Vec<_>>(), [(0, model)]);
}

#[test]
fn a_hybrid_machine_keeps_each_core_type_and_what_every_core_type_has() {
    // Performance cores with their own 8 GP / 4 fixed and PERF_METRICS (IA32_PERF_CAPABILITIES read on
    // them), efficient cores with 6 GP / 3 fixed and one more event unavailable.
    let performance =
        ALDER_LAKE_I9_12900K_P_ONLY.model().with_perf_capabilities(|| PERF_CAPABILITIES_PERF_METRICS);
    assert!(performance.topdown_metrics());
    let efficient = PmuModel {
        gp_width: 40,
        unavailable: ArchEvents::BRANCH_MISPREDICTS,
        aperf_mperf: false,
        ..ALDER_LAKE_I9_12900K_E.model()
    };
    let machine = Machine::of([
        described(CoreType::Performance, performance),
        described(CoreType::Efficient, efficient),
        described(CoreType::Performance, performance),
    ]);
    let expected = PmuModel {
        gp_counters: 6,
        gp_width: 40,
        fixed_counters: 3,
        unavailable: ArchEvents::BRANCH_MISPREDICTS,
        topdown_slots: false,
        perf_metrics: false,
        aperf_mperf: false,
        ..ALDER_LAKE_P_ONLY_MODEL
    };
    assert_eq!(machine.detection, Detection::Usable(expected));
    assert!(machine.hybrid());
    assert_eq!(machine.models().collect::<Vec<_>>(), [(1, performance), (2, efficient)]);
}

#[test]
fn the_real_alder_lake_reports_the_same_counters_on_both_core_types() {
    let machine = Machine::of([
        described(CoreType::Performance, ALDER_LAKE_I9_12900K_P.model()),
        described(CoreType::Efficient, ALDER_LAKE_I9_12900K_E.model()),
    ]);
    assert_eq!(machine.detection, Detection::Usable(ALDER_LAKE_HYBRID_MODEL));
    assert_eq!(machine.model_of(1), Some(ALDER_LAKE_HYBRID_MODEL), "before own_counters");
}

#[test]
fn one_unusable_processor_makes_the_machine_unusable() {
    let unusable = ProcessorDescription {
        core_type: CoreType::Uniform,
        detection: Detection::Unusable(Unusable::TooFewCounters),
    };
    let machine = Machine::of([described(CoreType::Uniform, SKYLAKE_I7_6700K.model()), unusable]);
    assert_eq!(machine.detection, Detection::Unusable(Unusable::TooFewCounters));
    assert_eq!(Machine::of([]).detection, Detection::Unusable(Unusable::UnknownVendor));
}

#[test]
fn own_counters_complete_what_leaf_a_leaves_out() {
    use crate::pmu::model::tests::{METEOR_LAKE_E, METEOR_LAKE_P};
    // Alder Lake, no leaf 0x23: Linux's rule gives the performance core 1 fixed counter more (and 2
    // GP counters, which the Windows HAL's table lacks, so the driver leaves them out).
    let reader = CpuIdTable(ALDER_LAKE_I9_12900K_P.leaves);
    let common = ALDER_LAKE_I9_12900K_P.model();
    let own = own_counters(&reader, CoreType::Performance, common);
    assert_eq!((own.gp_counters, own.fixed_counters, own.topdown_slots), (6, 4, true));
    let reader = CpuIdTable(ALDER_LAKE_I9_12900K_E.leaves);
    let efficient = PmuModel { atom: true, ..ALDER_LAKE_I9_12900K_E.model() };
    assert_eq!(own_counters(&reader, CoreType::Efficient, ALDER_LAKE_I9_12900K_E.model()), efficient);
    // Not hybrid: leaf 0xA is the core's own.
    let reader = CpuIdTable(ALDER_LAKE_I9_12900K_P_ONLY.leaves);
    let model = ALDER_LAKE_I9_12900K_P_ONLY.model();
    assert_eq!(own_counters(&reader, CoreType::Uniform, model), model);
    // Meteor Lake: leaf 0x23 on each core type.
    for (cpu, core_type, expected) in [
        (&METEOR_LAKE_P, CoreType::Performance, (8, 4, true)),
        (&METEOR_LAKE_E, CoreType::Efficient, (8, 3, false)),
    ] {
        assert_eq!(CoreType::detect(CpuIdTable(cpu.leaves)), core_type, "{}", cpu.name);
        let own = own_counters(&CpuIdTable(cpu.leaves), core_type, cpu.model());
        assert_eq!((own.gp_counters, own.fixed_counters, own.topdown_slots), expected, "{}", cpu.name);
    }
}

#[test]
fn a_per_core_type_table_finds_each_present_core_type_and_only_those() {
    let performance = ALDER_LAKE_I9_12900K_P.model();
    let efficient = ALDER_LAKE_I9_12900K_E.model();
    let hybrid = Machine::of([
        described(CoreType::Efficient, efficient),
        described(CoreType::Performance, performance),
    ]);
    // One entry per core type present, in core type order: performance (1), then efficient (2).
    let mut table = PerCoreType::new(&hybrid, vec!["performance", "efficient"]);
    assert_eq!(table.get(1), Some(&"performance"));
    assert_eq!(table.get(2), Some(&"efficient"));
    assert_eq!(table.get(0), None, "no uniform processor here");
    assert_eq!(table.get(3), None, "masked into range, and absent");
    assert_eq!(table.get(255), None);
    assert_eq!(table.uniform(), None, "two core types: each processor looks its own up");
    assert_eq!(table.iter().collect::<Vec<_>>(), [(1, &"performance"), (2, &"efficient")]);
    *table.get_mut(2).unwrap() = "changed";
    let mut seen = Vec::new();
    table.for_each_mut(|entry| seen.push(*entry));
    assert_eq!(seen, ["performance", "changed"]);

    let uniform = Machine::from(Detection::Usable(SKYLAKE_I7_6700K.model()));
    let table = PerCoreType::new(&uniform, vec![10]);
    assert_eq!(table.uniform(), Some(&10), "the one core type's entry, without a lookup");
    assert_eq!((table.get(0), table.get(1), table.get(2)), (Some(&10), None, None));
    assert_eq!(table.iter().count(), 1, "only the core types present");

    let unusable = Machine::from(Detection::Unusable(Unusable::UnknownVendor));
    let table = PerCoreType::new(&unusable, vec![0u8]);
    assert_eq!((table.uniform(), table.get(0), table.iter().count()), (None, None, 0), "nothing usable");
}

#[test]
fn an_inline_table_keeps_each_core_type_at_its_own_place() {
    let performance_only = Machine::of([described(CoreType::Performance, ALDER_LAKE_I9_12900K_P.model())]);
    let table = PerCoreType::inline(&performance_only, [10, 11, 12, 13]);
    assert_eq!(table.uniform(), Some(&11), "one core type, at its own place");
    assert_eq!((table.get(0), table.get(1), table.get(2)), (None, Some(&11), None));
    // The overflow handler's lookup: every value of a core type byte lands on a place, the machine's
    // types on their own, the others on places nothing writes.
    assert_eq!([0, 1, 2, 3, 4, 255].map(|core_type| *table.place(core_type)), [10, 11, 12, 13, 10, 13]);
    let hybrid = Machine::of([
        described(CoreType::Performance, ALDER_LAKE_I9_12900K_P.model()),
        described(CoreType::Efficient, ALDER_LAKE_I9_12900K_E.model()),
    ]);
    let table = PerCoreType::inline(&hybrid, [10, 11, 12, 13]);
    assert_eq!(table.uniform(), None);
    assert_eq!(table.iter().collect::<Vec<_>>(), [(1, &11), (2, &12)]);
}
